//! A message's payload in a frame: the message's own serde form in CBOR (RFC 8949).
//!
//! Why CBOR and not CDR for the payload: messages keep their large buffers in
//! `bytes::Bytes`, which serializes as a serde byte string; cdr-encoding writes a byte
//! string without its length (so it cannot be read back) and reads one element by element.
//! CBOR carries byte strings with their length, and cbor4ii reads them borrowed from the
//! frame. A message's blob fields ([`streamwire_core::blob`]: an image's pixels) are not
//! in the payload at all in a version 2 frame: the payload holds their indexes, and the
//! frame carries the bytes as parts of their own, so a 2.76 MB image is copied neither in
//! nor out. The frame's head, which tools of other ecosystems parse first, is CDR.

use std::fmt;

use bytes::Bytes;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use streamwire_core::{AnyMessage, blob};

/// Appends `message`'s serde form, in CBOR, to `out` (its type name is not included: the
/// frame's head carries it). Blob fields are byte strings here.
pub fn encode_into(message: &dyn AnyMessage, mut out: Vec<u8>) -> Result<Vec<u8>, PayloadError> {
    // A first pass only counts (no byte is copied), so the buffer is allocated once, at
    // its final size: growing it by doubling would copy a 2.76 MB image again and again.
    out.reserve_exact(measure(message)?);
    write(message, out)
}

/// The length of `message`'s CBOR with its blob fields ([`streamwire_core::blob`]) as
/// indexes, and the blobs in index order: what the wire frame's encoder (version 2) lays
/// out before it writes anything.
pub fn measure_with_blobs(message: &dyn AnyMessage) -> Result<(usize, Vec<Bytes>), PayloadError> {
    let (len, blobs) = blob::write_with(|| measure(message));
    Ok((len?, blobs))
}

/// Appends `message`'s CBOR with its blob fields as indexes to `out`: the buffer and the
/// blobs, in index order.
pub fn write_with_blobs(
    message: &dyn AnyMessage,
    out: Vec<u8>,
) -> Result<(Vec<u8>, Vec<Bytes>), PayloadError> {
    let (written, blobs) = blob::write_with(|| write(message, out));
    Ok((written?, blobs))
}

/// Counts the bytes of `message`'s CBOR without writing them.
fn measure(message: &dyn AnyMessage) -> Result<usize, PayloadError> {
    let serialize: &dyn erased_serde::Serialize = message;
    let mut counter = cbor4ii::serde::Serializer::new(Counter(0));
    erased_serde::serialize(serialize, &mut counter).map_err(|error| {
        PayloadError(format!("cannot serialize {}: {error}", message.type_name()))
    })?;
    Ok(counter.into_inner().0)
}

fn write(message: &dyn AnyMessage, out: Vec<u8>) -> Result<Vec<u8>, PayloadError> {
    let serialize: &dyn erased_serde::Serialize = message;
    let writer = cbor4ii::core::utils::BufWriter::new(out);
    let mut serializer = cbor4ii::serde::Serializer::new(writer);
    erased_serde::serialize(serialize, &mut serializer).map_err(|error| {
        PayloadError(format!("cannot serialize {}: {error}", message.type_name()))
    })?;
    Ok(serializer.into_inner().into_inner())
}

/// Reads a message of type `wire_name` from its CBOR `payload`. Unknown type names,
/// malformed CBOR and values the type's own validation refuses (an image whose buffer does
/// not match its dimensions) are errors; nothing is allocated beyond what `payload` holds.
pub fn decode(wire_name: &str, payload: &[u8]) -> Result<Box<dyn AnyMessage>, PayloadError> {
    check_lengths(payload)
        .map_err(|why| PayloadError(format!("cannot read a {wire_name}: {why}")))?;
    let reader = cbor4ii::core::utils::SliceReader::new(payload);
    let mut deserializer = cbor4ii::serde::Deserializer::new(reader);
    let message: Box<dyn AnyMessage> = serde::Deserialize::deserialize(Tagged {
        name: wire_name,
        value: &mut deserializer,
    })
    .map_err(
        |error: cbor4ii::serde::DecodeError<std::convert::Infallible>| {
            PayloadError(format!("cannot read a {wire_name}: {error}"))
        },
    )?;
    Ok(message)
}

/// Checks every length the CBOR in `payload` declares against the bytes after it, before
/// serde reads anything: serde sizes a sequence's buffer from the declared length (up to
/// 1 MiB of elements), so a payload of a few bytes declaring an array of four billion
/// elements would otherwise allocate a megabyte. An array of `n` items needs at least `n`
/// more bytes, a map of `n` entries `2n`, a byte or text string its `n` bytes. One pass over
/// the item heads, in order (CBOR writes a container's head before its items), no
/// allocation, no recursion; everything else about the CBOR is for the reader to judge.
fn check_lengths(payload: &[u8]) -> Result<(), String> {
    let mut at = 0usize;
    while let Some(&initial) = payload.get(at) {
        let major = initial >> 5;
        let info = initial & 0x1f;
        let argument_len = match info {
            0..=23 => 0,
            24 => 1,
            25 => 2,
            26 => 4,
            27 => 8,
            // Indefinite lengths (and the break): their items follow, each checked.
            31 => {
                at += 1;
                continue;
            }
            _ => return Err(format!("reserved CBOR head {initial:#04x} at byte {at}")),
        };
        let Some(bytes) = payload.get(at + 1..at + 1 + argument_len) else {
            return Err(format!("CBOR head at byte {at} cut short"));
        };
        let argument = if argument_len == 0 {
            u64::from(info)
        } else {
            bytes.iter().fold(0u64, |n, &b| n << 8 | u64::from(b))
        };
        at += 1 + argument_len;
        let left = (payload.len() - at) as u64;
        let (needed, skip) = match major {
            2 | 3 => (argument, true),
            4 => (argument, false),
            5 => (argument.saturating_mul(2), false),
            _ => (0, false),
        };
        if needed > left {
            return Err(format!(
                "CBOR item at byte {} declares {argument} {}, {left} bytes are left",
                at - 1 - argument_len,
                match major {
                    2 | 3 => "bytes",
                    4 => "items",
                    _ => "entries",
                }
            ));
        }
        if skip {
            // Fits in usize: at most the bytes left.
            at += needed as usize;
        }
    }
    Ok(())
}

/// A CBOR writer that only counts what would be written.
struct Counter(usize);

impl cbor4ii::core::enc::Write for Counter {
    type Error = std::convert::Infallible;

    fn push(&mut self, input: &[u8]) -> Result<(), Self::Error> {
        self.0 += input.len();
        Ok(())
    }
}

/// Why a payload could not be written or read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PayloadError(String);

impl PayloadError {
    pub(crate) fn new(why: String) -> PayloadError {
        PayloadError(why)
    }
}

/// Shows typetag (which registers every message by its wire name) the one-entry map
/// `{ wire_name: value }` it reads a `Box<dyn AnyMessage>` from, with the value read from
/// the CBOR payload: the frame keeps the name in its head and the value alone in its
/// payload, as a ROS 2 sample does.
struct Tagged<'n, D> {
    name: &'n str,
    value: D,
}

impl<'de, D: de::Deserializer<'de>> de::Deserializer<'de> for Tagged<'_, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_map(OneEntry {
            name: Some(self.name),
            value: Some(self.value),
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

struct OneEntry<'n, D> {
    name: Option<&'n str>,
    value: Option<D>,
}

impl<'de, D: de::Deserializer<'de>> MapAccess<'de> for OneEntry<'_, D> {
    type Error = D::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        match self.name.take() {
            Some(name) => {
                let key: de::value::StrDeserializer<'_, D::Error> = name.into_deserializer();
                seed.deserialize(key).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(value),
            None => Err(de::Error::custom(Unexpected)),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(1)
    }
}

struct Unexpected;

impl fmt::Display for Unexpected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message payload was read twice")
    }
}

#[cfg(test)]
mod tests {
    use super::check_lengths;

    #[test]
    fn declared_lengths_past_the_payload_are_refused_before_reading() {
        // An array of 2^32 - 1 items in 6 bytes (serde would size a buffer from it).
        let error = check_lengths(&[0x9a, 0xff, 0xff, 0xff, 0xff, 0x00]).unwrap_err();
        assert_eq!(
            error,
            "CBOR item at byte 0 declares 4294967295 items, 1 bytes are left"
        );
        // A map of 2 entries needs 4 bytes; a byte string of 3, its 3.
        assert!(check_lengths(&[0xa2, 1, 2, 3]).is_err());
        assert!(check_lengths(&[0xa2, 1, 2, 3, 4]).is_ok());
        assert!(check_lengths(&[0x43, 1, 2, 3]).is_ok());
        assert!(check_lengths(&[0x44, 1, 2, 3]).is_err());
        // Nested: the inner array's length counts from where it is (that the outer one
        // then lacks an item is for the reader to find).
        assert!(check_lengths(&[0x82, 0x84, 1, 2, 3, 4]).is_ok());
        assert!(check_lengths(&[0x82, 0x85, 1, 2, 3, 4]).is_err());
        // Indefinite lengths, a float, a cut head, a reserved head.
        assert!(check_lengths(&[0x9f, 1, 2, 0xff]).is_ok());
        assert!(check_lengths(&[0xfa, 0, 0, 0x80, 0x3f]).is_ok());
        assert!(check_lengths(&[0x19, 1]).is_err());
        assert!(check_lengths(&[0x1c]).is_err());
    }
}
