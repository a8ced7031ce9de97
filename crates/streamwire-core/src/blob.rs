//! Large byte fields that travel beside a message instead of inside it.
//!
//! A camera frame is one 2.76 MB byte field and a few numbers. Inside a wire frame
//! (RFC.md, "The wire frame", version 2) such a field is a *blob*: the message's CBOR holds
//! only the blob's index, and the bytes follow the frame as their own slice, which zenoh
//! sends without copying and a receiver reads where zenoh put them (in shared memory, on
//! one host). Everywhere else (the web relay's JSON and CBOR, blueprint files, recordings)
//! the field is the plain byte string it always was.
//!
//! A message marks such a field with `#[serde(with = "streamwire::blob")]` on a
//! [`Bytes`] field; `#[derive(Message)]` refuses a `Bytes` field without it (or without
//! another `with` the author chose), so no large field travels inline by accident:
//!
//! ```
//! use bytes::Bytes;
//! use serde::{Deserialize, Serialize};
//! use streamwire::prelude::*;
//!
//! #[derive(Clone, Debug, Serialize, Deserialize, Message)]
//! #[message(name = "lab/Scan")]
//! struct Scan {
//!     #[serde(with = "streamwire::blob")]
//!     ranges: Bytes,
//!     angle_step: f32,
//! }
//!
//! // Outside a wire frame the field is a plain byte string.
//! let scan = Scan { ranges: Bytes::from_static(&[1, 2, 3]), angle_step: 0.5 };
//! assert_eq!(serde_json::to_string(&scan)?, r#"{"ranges":[1,2,3],"angle_step":0.5}"#);
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! Why a context and not a wrapper serializer: messages are serialized through
//! `erased_serde` and read back through typetag's registry, which leave no place to wrap the
//! CBOR serializer; the wire frame's encoder and reader instead install a context for the
//! duration of one message, on their own thread ([`write_with`], [`read_with`]), and a
//! blob field looks for it. Nothing else installs one, so every other format is unchanged.
//! Fields shorter than [`MIN_LEN`] stay inline even in a frame: a blob costs a table entry
//! and a slice of its own, which pays only for large buffers.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use bytes::Bytes;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Fields from this length up travel as blobs in a wire frame: zenoh's threshold for
/// shared memory (3 KiB), so every blob is one that shared memory can carry.
pub const MIN_LEN: usize = 3 * 1024;

/// Where a wire frame's reader finds the blobs a message refers to.
pub trait BlobSource {
    /// The bytes of blob `index`, once: a second take of the same index, or an index past
    /// the frame's table, is an error (the reader refuses the frame).
    fn take(&mut self, index: u64) -> Result<Bytes, String>;
}

thread_local! {
    static WRITING: RefCell<Option<Vec<Bytes>>> = const { RefCell::new(None) };
    static READING: RefCell<Option<Rc<RefCell<dyn BlobSource>>>> = const { RefCell::new(None) };
}

/// Runs `serialize` with blob fields of at least [`MIN_LEN`] bytes written as indexes;
/// returns its result and the blobs, in index order (the caller puts them in the frame).
pub fn write_with<R>(serialize: impl FnOnce() -> R) -> (R, Vec<Bytes>) {
    let outer = WRITING.with(|w| w.borrow_mut().replace(Vec::new()));
    let _restore = Restore(Some(|| {
        WRITING.with(|w| *w.borrow_mut() = outer);
    }));
    let result = serialize();
    let blobs = WRITING
        .with(|w| w.borrow_mut().take())
        // infallible: the context installed above is still there (only `_restore` removes it)
        .unwrap_or_default();
    (result, blobs)
}

/// Runs `deserialize` with blob indexes read from `source`.
pub fn read_with<R>(source: Rc<RefCell<dyn BlobSource>>, deserialize: impl FnOnce() -> R) -> R {
    let outer = READING.with(|r| r.borrow_mut().replace(source));
    let _restore = Restore(Some(|| {
        READING.with(|r| *r.borrow_mut() = outer);
    }));
    deserialize()
}

/// Puts the previous context back, even when the closure panicked.
struct Restore<F: FnOnce()>(Option<F>);

impl<F: FnOnce()> Drop for Restore<F> {
    fn drop(&mut self) {
        if let Some(restore) = self.0.take() {
            restore();
        }
    }
}

/// Serializes a blob field: its index inside a wire frame's encoder, the byte string
/// everywhere else.
pub fn serialize<S: Serializer>(bytes: &Bytes, serializer: S) -> Result<S::Ok, S::Error> {
    if bytes.len() >= MIN_LEN {
        let index = WRITING.with(|w| {
            w.borrow_mut().as_mut().map(|blobs| {
                blobs.push(bytes.clone());
                blobs.len() as u64 - 1
            })
        });
        if let Some(index) = index {
            return serializer.serialize_u64(index);
        }
    }
    bytes.serialize(serializer)
}

/// Deserializes a blob field: inside a wire frame's reader an index (the blob, without a
/// copy) or an inline byte string; everywhere else the byte string.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Bytes, D::Error> {
    match READING.with(|r| r.borrow().clone()) {
        Some(source) => deserializer.deserialize_any(BlobVisitor { source }),
        None => Bytes::deserialize(deserializer),
    }
}

struct BlobVisitor {
    source: Rc<RefCell<dyn BlobSource>>,
}

impl<'de> Visitor<'de> for BlobVisitor {
    type Value = Bytes;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a blob index or a byte string")
    }

    fn visit_u64<E: de::Error>(self, index: u64) -> Result<Bytes, E> {
        self.source.borrow_mut().take(index).map_err(E::custom)
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<Bytes, E> {
        Ok(Bytes::copy_from_slice(bytes))
    }

    fn visit_byte_buf<E: de::Error>(self, bytes: Vec<u8>) -> Result<Bytes, E> {
        Ok(Bytes::from(bytes))
    }

    // A self-describing format without byte strings (JSON) writes them as arrays.
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Bytes, A::Error> {
        let mut bytes = Vec::new();
        while let Some(byte) = seq.next_element::<u8>()? {
            bytes.push(byte);
        }
        Ok(Bytes::from(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Two {
        #[serde(with = "super")]
        small: Bytes,
        #[serde(with = "super")]
        large: Bytes,
    }

    fn two() -> Two {
        Two {
            small: Bytes::from_static(b"abc"),
            large: Bytes::from(vec![7u8; MIN_LEN]),
        }
    }

    struct Table(Vec<Option<Bytes>>);

    impl BlobSource for Table {
        fn take(&mut self, index: u64) -> Result<Bytes, String> {
            usize::try_from(index)
                .ok()
                .and_then(|i| self.0.get_mut(i))
                .and_then(Option::take)
                .ok_or_else(|| format!("no blob {index}"))
        }
    }

    #[test]
    fn outside_a_frame_a_blob_is_a_byte_string_both_ways() {
        let json = serde_json::to_string(&two()).unwrap();
        assert!(json.starts_with(r#"{"small":[97,98,99],"large":[7,7,"#));
        assert_eq!(serde_json::from_str::<Two>(&json).unwrap(), two());
    }

    #[test]
    fn inside_a_frame_a_large_field_is_an_index_and_its_bytes_are_not_copied() {
        let sent = two();
        let (json, blobs) = write_with(|| serde_json::to_string(&sent).unwrap());
        assert_eq!(json, r#"{"small":[97,98,99],"large":0}"#);
        assert_eq!(blobs.len(), 1);
        assert_eq!(blobs[0].as_ptr(), sent.large.as_ptr());
        let source = Rc::new(RefCell::new(Table(vec![Some(blobs[0].clone())])));
        let read: Two = read_with(source.clone(), || serde_json::from_str(&json).unwrap());
        assert_eq!(read, sent);
        assert_eq!(read.large.as_ptr(), sent.large.as_ptr());
        // Taken once: a second reference to the same blob is refused.
        let error = read_with(source, || serde_json::from_str::<Two>(&json).unwrap_err());
        assert!(error.to_string().contains("no blob 0"), "{error}");
    }

    #[test]
    fn the_context_ends_with_its_closure() {
        let (_, _) = write_with(|| ());
        assert!(WRITING.with(|w| w.borrow().is_none()));
        let json = serde_json::to_string(&two()).unwrap();
        assert!(!json.contains(r#""large":0"#));
    }
}
