//! CDR as ROS 2 writes it: XCDR1 (plain CDR), little-endian, after a 4-byte encapsulation
//! header `00 01 00 00`. Every primitive is aligned to its own size (8 at most), counted
//! from the end of the header; a string is a `u32` length (its NUL included), its bytes
//! and a NUL; a sequence is a `u32` count and its elements; a fixed array only its elements.
//!
//! [`CdrReader`] reads from [`Bytes`]: a `uint8[]` (pixels, points) comes back as a slice
//! of the input, never a copy. Every length read from the input is checked against the
//! bytes that remain before anything is allocated for it, so a truncated buffer or a
//! lying length is a [`CdrError`], never a large allocation or a panic.
//!
//! Why not `cdr-encoding` (the workspace's CDR crate, used for the wire frame's head) with
//! serde: the built-in messages are not ROS-shaped, so each mapping reads and writes
//! fields by hand anyway (mirror structs would add a copy of every field); serde's
//! deserializer can at best borrow `&[u8]`, not hand out slices of a shared `Bytes`, and
//! reads a `uint8[]` element by element; its sequences pre-allocate from the declared
//! length (capped, but up to a megabyte per sequence). What remains, alignment and
//! little-endian primitives, is the few lines below, checked byte for byte against rosbags.

use std::sync::Arc;

use bytes::Bytes;

/// The encapsulation header of little-endian plain CDR (`CDR_LE`).
pub const CDR_LE_HEADER: [u8; 4] = [0x00, 0x01, 0x00, 0x00];

/// Why a CDR buffer could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CdrError {
    /// The buffer is shorter than the 4-byte encapsulation header.
    #[error("a CDR buffer starts with a 4-byte header; this one has {len} bytes")]
    NoHeader {
        /// The buffer's length.
        len: usize,
    },
    /// The encapsulation is not little-endian plain CDR (`00 01`).
    #[error(
        "unsupported CDR encapsulation {found:02x?}: only little-endian plain CDR (00 01) is read"
    )]
    Encapsulation {
        /// The first two header bytes.
        found: [u8; 2],
    },
    /// The buffer ends inside a value.
    #[error(
        "the CDR buffer ends inside {what}: {needed} bytes needed at offset {offset}, {remaining} left"
    )]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Offset in the buffer (header included).
        offset: usize,
        /// Bytes the value needs.
        needed: u64,
        /// Bytes left in the buffer.
        remaining: usize,
    },
    /// A string or sequence declares more elements than the bytes left could hold.
    #[error(
        "{what} declares {declared} elements of at least {min_bytes} bytes at offset {offset}, but {remaining} bytes are left"
    )]
    LengthTooLong {
        /// What was being read.
        what: &'static str,
        /// Offset of the length (header included).
        offset: usize,
        /// The declared element count.
        declared: u32,
        /// The fewest bytes one element takes.
        min_bytes: usize,
        /// Bytes left in the buffer.
        remaining: usize,
    },
    /// A string without its terminating NUL, or with a length of 0.
    #[error("{what} at offset {offset} is not NUL-terminated")]
    NotTerminated {
        /// Which string.
        what: &'static str,
        /// Offset of its length (header included).
        offset: usize,
    },
    /// A string whose bytes are not UTF-8.
    #[error("{what} at offset {offset} is not UTF-8")]
    NotUtf8 {
        /// Which string.
        what: &'static str,
        /// Offset of its length (header included).
        offset: usize,
    },
    /// A `bool` other than 0 or 1.
    #[error("{what} at offset {offset} holds {value}: a bool is 0 or 1")]
    NotBool {
        /// Which field.
        what: &'static str,
        /// Its offset (header included).
        offset: usize,
        /// The byte found.
        value: u8,
    },
}

/// Why a value could not be written as CDR.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CdrWriteError {
    /// A string or sequence longer than CDR's `u32` length can say.
    #[error("{what} holds {len} elements, more than a CDR length (u32) can hold")]
    TooLong {
        /// Which field.
        what: &'static str,
        /// Its length.
        len: usize,
    },
}

/// Writes little-endian plain CDR into a growing buffer that starts with the
/// encapsulation header.
///
/// ```
/// use streamwire_ros2::cdr::{CdrReader, CdrWriter};
///
/// let mut w = CdrWriter::new();
/// w.u8(7);
/// w.f64(1.5); // aligned to 8 after the header
/// w.string("odom", "frame_id")?;
/// let bytes = w.finish();
/// assert_eq!(bytes.len(), 4 + 8 + 8 + 4 + 5);
/// let mut r = CdrReader::new(bytes.into())?;
/// assert_eq!((r.u8("a")?, r.f64("b")?), (7, 1.5));
/// assert_eq!(&*r.string("frame_id")?, "odom");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct CdrWriter {
    buf: Vec<u8>,
}

impl Default for CdrWriter {
    fn default() -> Self {
        CdrWriter::new()
    }
}

macro_rules! write_primitive {
    ($($name:ident: $ty:ty),*) => {
        $(
            #[doc = concat!("Writes a `", stringify!($ty), "`, aligned to its size.")]
            pub fn $name(&mut self, value: $ty) {
                self.align(std::mem::size_of::<$ty>());
                self.buf.extend_from_slice(&value.to_le_bytes());
            }
        )*
    };
}

impl CdrWriter {
    /// An empty message: the header only.
    pub fn new() -> CdrWriter {
        CdrWriter::with_capacity(0)
    }

    /// An empty message with room for `capacity` bytes after the header.
    pub fn with_capacity(capacity: usize) -> CdrWriter {
        let mut buf = Vec::with_capacity(capacity.saturating_add(CDR_LE_HEADER.len()));
        buf.extend_from_slice(&CDR_LE_HEADER);
        CdrWriter { buf }
    }

    /// The bytes written, header included.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }

    /// Pads with zeros to a multiple of `alignment` (counted from the end of the header).
    fn align(&mut self, alignment: usize) {
        let offset = self.buf.len() - CDR_LE_HEADER.len();
        let padding = (alignment - offset % alignment) % alignment;
        self.buf.resize(self.buf.len() + padding, 0);
    }

    write_primitive!(u8: u8, i8: i8, u16: u16, i16: i16, u32: u32, i32: i32, u64: u64, i64: i64, f32: f32, f64: f64);

    /// Writes a `bool` as one byte, 0 or 1.
    pub fn bool(&mut self, value: bool) {
        self.u8(u8::from(value));
    }

    /// Writes the `u32` length of a sequence of `len` elements (the elements follow).
    pub fn sequence_len(&mut self, len: usize, what: &'static str) -> Result<(), CdrWriteError> {
        let len = u32::try_from(len).map_err(|_| CdrWriteError::TooLong { what, len })?;
        self.u32(len);
        Ok(())
    }

    /// Writes a string: its length with the NUL, its bytes, the NUL.
    pub fn string(&mut self, value: &str, what: &'static str) -> Result<(), CdrWriteError> {
        self.sequence_len(value.len().saturating_add(1), what)?;
        self.buf.extend_from_slice(value.as_bytes());
        self.buf.push(0);
        Ok(())
    }

    /// Writes a `uint8[]` (or `int8[]`): its length and its bytes.
    pub fn bytes(&mut self, value: &[u8], what: &'static str) -> Result<(), CdrWriteError> {
        self.sequence_len(value.len(), what)?;
        self.buf.extend_from_slice(value);
        Ok(())
    }

    /// Writes a fixed array of `float64` (a covariance): the values only.
    pub fn f64_array(&mut self, values: &[f64]) {
        for &value in values {
            self.f64(value);
        }
    }
}

/// Reads little-endian plain CDR from shared bytes; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct CdrReader {
    buf: Bytes,
    pos: usize,
}

macro_rules! read_primitive {
    ($($name:ident: $ty:ty),*) => {
        $(
            #[doc = concat!("Reads a `", stringify!($ty), "`, aligned to its size; `what` names it in errors.")]
            pub fn $name(&mut self, what: &'static str) -> Result<$ty, CdrError> {
                const SIZE: usize = std::mem::size_of::<$ty>();
                self.align(SIZE, what)?;
                let mut bytes = [0u8; SIZE];
                bytes.copy_from_slice(self.take(SIZE, what)?);
                Ok(<$ty>::from_le_bytes(bytes))
            }
        )*
    };
}

impl CdrReader {
    /// A reader of `buf`, which must start with the little-endian CDR header (`00 01`;
    /// the two option bytes after it are ignored, as ROS 2 does).
    pub fn new(buf: Bytes) -> Result<CdrReader, CdrError> {
        let Some(header) = buf.get(..CDR_LE_HEADER.len()) else {
            return Err(CdrError::NoHeader { len: buf.len() });
        };
        if header[..2] != CDR_LE_HEADER[..2] {
            return Err(CdrError::Encapsulation {
                found: [header[0], header[1]],
            });
        }
        Ok(CdrReader {
            buf,
            pos: CDR_LE_HEADER.len(),
        })
    }

    /// Bytes not read yet (trailing padding included).
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    fn truncated(&self, what: &'static str, needed: usize) -> CdrError {
        CdrError::Truncated {
            what,
            offset: self.pos,
            needed: needed as u64,
            remaining: self.remaining(),
        }
    }

    fn align(&mut self, alignment: usize, what: &'static str) -> Result<(), CdrError> {
        let offset = self.pos - CDR_LE_HEADER.len();
        let padding = (alignment - offset % alignment) % alignment;
        self.take(padding, what).map(drop)
    }

    fn take(&mut self, len: usize, what: &'static str) -> Result<&[u8], CdrError> {
        if len > self.remaining() {
            return Err(self.truncated(what, len));
        }
        let start = self.pos;
        self.pos += len;
        Ok(&self.buf[start..self.pos])
    }

    read_primitive!(u8: u8, i8: i8, u16: u16, i16: i16, u32: u32, i32: i32, u64: u64, i64: i64, f32: f32, f64: f64);

    /// Reads a `bool`, refusing a byte other than 0 or 1.
    pub fn bool(&mut self, what: &'static str) -> Result<bool, CdrError> {
        let offset = self.pos;
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            value => Err(CdrError::NotBool {
                what,
                offset,
                value,
            }),
        }
    }

    /// Reads a sequence's element count, checking that `count * min_element_bytes` bytes
    /// remain, so that a caller may reserve `count` elements without trusting the input.
    pub fn sequence_len(
        &mut self,
        min_element_bytes: usize,
        what: &'static str,
    ) -> Result<usize, CdrError> {
        let offset = self.pos;
        let declared = self.u32(what)?;
        let count = declared as usize;
        if count.saturating_mul(min_element_bytes.max(1)) > self.remaining() {
            return Err(CdrError::LengthTooLong {
                what,
                offset,
                declared,
                min_bytes: min_element_bytes.max(1),
                remaining: self.remaining(),
            });
        }
        Ok(count)
    }

    /// Reads a string (UTF-8, NUL-terminated).
    pub fn string(&mut self, what: &'static str) -> Result<Arc<str>, CdrError> {
        let offset = self.pos;
        let len = self.sequence_len(1, what)?;
        let bytes = self.take(len, what)?;
        let Some((&0, text)) = bytes.split_last() else {
            return Err(CdrError::NotTerminated { what, offset });
        };
        std::str::from_utf8(text)
            .map(Arc::from)
            .map_err(|_| CdrError::NotUtf8 { what, offset })
    }

    /// Reads a `uint8[]` (or `int8[]`) as a slice of the input: no copy.
    pub fn bytes(&mut self, what: &'static str) -> Result<Bytes, CdrError> {
        let len = self.sequence_len(1, what)?;
        let start = self.pos;
        self.take(len, what)?;
        Ok(self.buf.slice(start..start + len))
    }

    /// Reads a fixed array of `N` `float64`s.
    pub fn f64_array<const N: usize>(&mut self, what: &'static str) -> Result<[f64; N], CdrError> {
        let mut values = [0.0; N];
        for value in &mut values {
            *value = self.f64(what)?;
        }
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_from_the_end_of_the_header() {
        let mut w = CdrWriter::new();
        w.u8(1);
        w.u16(2);
        w.u8(3);
        w.u32(4);
        w.u8(5);
        w.f64(6.0);
        let bytes = w.finish();
        assert_eq!(
            &bytes[4..],
            &[
                1, 0, 2, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x18, 0x40
            ]
        );
        let mut r = CdrReader::new(Bytes::from(bytes)).unwrap();
        assert_eq!(r.u8("a").unwrap(), 1);
        assert_eq!(r.u16("b").unwrap(), 2);
        assert_eq!(r.u8("c").unwrap(), 3);
        assert_eq!(r.u32("d").unwrap(), 4);
        assert_eq!(r.u8("e").unwrap(), 5);
        assert_eq!(r.f64("f").unwrap(), 6.0);
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn strings_and_bytes() {
        let mut w = CdrWriter::new();
        w.string("", "empty").unwrap();
        w.bytes(&[9, 8, 7], "data").unwrap();
        let bytes = Bytes::from(w.finish());
        assert_eq!(&bytes[4..], &[1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 9, 8, 7]);
        let mut r = CdrReader::new(bytes.clone()).unwrap();
        assert_eq!(&*r.string("empty").unwrap(), "");
        let data = r.bytes("data").unwrap();
        assert_eq!(&data[..], &[9, 8, 7]);
        // A slice of the input, not a copy.
        assert_eq!(data.as_ptr(), bytes[16..].as_ptr());
    }

    #[test]
    fn a_zero_length_string_has_no_nul() {
        let bytes = Bytes::from(vec![0, 1, 0, 0, 0, 0, 0, 0]);
        let mut r = CdrReader::new(bytes).unwrap();
        assert!(matches!(
            r.string("name"),
            Err(CdrError::NotTerminated { offset: 4, .. })
        ));
    }

    #[test]
    fn invalid_utf8_is_refused() {
        let bytes = Bytes::from(vec![0, 1, 0, 0, 2, 0, 0, 0, 0xFF, 0]);
        let mut r = CdrReader::new(bytes).unwrap();
        assert!(matches!(r.string("name"), Err(CdrError::NotUtf8 { .. })));
    }
}
