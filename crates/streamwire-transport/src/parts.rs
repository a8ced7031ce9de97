//! A frame's bytes as they travel: one buffer, or several parts that together are the
//! frame (a version 2 frame's blobs follow its first part as parts of their own, and a
//! receiver gets the parts as the engine delivered them).

use bytes::Bytes;

/// The bytes of one frame, in one part or several; cloning copies no byte.
///
/// ```
/// use bytes::Bytes;
/// use streamwire_transport::FrameBytes;
/// let frame = FrameBytes::from_parts(vec![Bytes::from_static(b"ab"), Bytes::from_static(b"cde")]);
/// assert_eq!(frame.len(), 5);
/// assert_eq!(frame.prefix(3), Some(Bytes::from_static(b"abc")));
/// assert_eq!(frame.to_bytes(), Bytes::from_static(b"abcde"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameBytes {
    parts: Vec<Bytes>,
}

impl FrameBytes {
    /// A frame of these parts, in order (empty parts are left out).
    pub fn from_parts(parts: Vec<Bytes>) -> FrameBytes {
        let mut parts = parts;
        parts.retain(|part| !part.is_empty());
        FrameBytes { parts }
    }

    /// The parts, in order.
    pub fn parts(&self) -> &[Bytes] {
        &self.parts
    }

    /// The frame's length in bytes.
    pub fn len(&self) -> usize {
        self.parts.iter().map(Bytes::len).sum()
    }

    /// True for a frame of no bytes.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The frame in one buffer: the one part itself, or a copy of the parts joined.
    pub fn to_bytes(&self) -> Bytes {
        match self.parts.as_slice() {
            [] => Bytes::new(),
            [one] => one.clone(),
            many => Bytes::from(many.concat()),
        }
    }

    /// The first `len` bytes in one buffer (a slice of the first part when it holds them,
    /// a copy of at most `len` bytes otherwise), or `None` when the frame is shorter.
    pub fn prefix(&self, len: usize) -> Option<Bytes> {
        let first = self.parts.first().map_or(0, Bytes::len);
        if len <= first {
            return Some(
                self.parts
                    .first()
                    .map_or_else(Bytes::new, |p| p.slice(..len)),
            );
        }
        if len > self.len() {
            return None;
        }
        // A blob's bytes come from the process's pool of received blobs (recycled when
        // the message drops); a few bytes of a head are not worth a pooled buffer.
        let mut pooled = (len >= streamwire_core::blob::MIN_LEN)
            .then(|| streamwire_core::buffer::pools::received().take_empty(len));
        let mut plain = Vec::new();
        let joined = match pooled.as_mut() {
            Some(buf) => buf.vec_mut(),
            None => {
                plain.reserve(len);
                &mut plain
            }
        };
        for part in &self.parts {
            let take = (len - joined.len()).min(part.len());
            joined.extend_from_slice(&part[..take]);
            if joined.len() == len {
                break;
            }
        }
        Some(match pooled {
            Some(buf) => buf.freeze(),
            None => Bytes::from(plain),
        })
    }

    /// The bytes from `start` to the end, as parts (slices of these, no copy).
    pub fn suffix(&self, start: usize) -> FrameBytes {
        let mut skip = start;
        let mut parts = Vec::new();
        for part in &self.parts {
            if skip >= part.len() {
                skip -= part.len();
                continue;
            }
            parts.push(part.slice(skip..));
            skip = 0;
        }
        FrameBytes { parts }
    }

    /// True when the bytes of `start..start + len` lie in one part (reading them with
    /// [`range`](FrameBytes::range) copies nothing).
    pub fn lies_in_one_part(&self, start: usize, len: usize) -> bool {
        self.range_part(start, len).is_some()
    }

    /// The part holding all of `start..start + len`, and where they start in it.
    fn range_part(&self, start: usize, len: usize) -> Option<(&Bytes, usize)> {
        let end = start.checked_add(len)?;
        let mut offset = 0;
        for part in &self.parts {
            let part_end = offset + part.len();
            if start < part_end || (len == 0 && start == part_end) {
                return (end <= part_end).then_some((part, start - offset));
            }
            offset = part_end;
        }
        None
    }

    /// The bytes of `start..start + len`: a slice of one part when they lie in one (no
    /// copy, `false`), else a copy of them (`true`). `None` past the end.
    pub fn range(&self, start: usize, len: usize) -> Option<(Bytes, bool)> {
        if len == 0 {
            return (start <= self.len()).then(|| (Bytes::new(), false));
        }
        if let Some((part, at)) = self.range_part(start, len) {
            return Some((part.slice(at..at + len), false));
        }
        let end = start.checked_add(len)?;
        (end <= self.len())
            .then(|| self.suffix(start).prefix(len))
            .flatten()
            .map(|joined| (joined, true))
    }
}

impl From<Bytes> for FrameBytes {
    fn from(bytes: Bytes) -> FrameBytes {
        FrameBytes::from_parts(vec![bytes])
    }
}

impl From<Vec<u8>> for FrameBytes {
    fn from(bytes: Vec<u8>) -> FrameBytes {
        FrameBytes::from(Bytes::from(bytes))
    }
}

impl From<&'static [u8]> for FrameBytes {
    fn from(bytes: &'static [u8]) -> FrameBytes {
        FrameBytes::from(Bytes::from_static(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn abc_de_f() -> FrameBytes {
        FrameBytes::from_parts(vec![
            Bytes::from_static(b"abc"),
            Bytes::new(),
            Bytes::from_static(b"de"),
            Bytes::from_static(b"f"),
        ])
    }

    #[test]
    fn a_range_in_one_part_is_a_slice_and_across_parts_a_copy() {
        let frame = abc_de_f();
        assert_eq!(frame.parts().len(), 3);
        let (bytes, copied) = frame.range(3, 2).unwrap();
        assert_eq!((&bytes[..], copied), (&b"de"[..], false));
        assert_eq!(bytes.as_ptr(), frame.parts()[1].as_ptr());
        let (bytes, copied) = frame.range(1, 4).unwrap();
        assert_eq!((&bytes[..], copied), (&b"bcde"[..], true));
        assert_eq!(frame.range(5, 1).unwrap().0, Bytes::from_static(b"f"));
        assert_eq!(frame.range(6, 0).unwrap(), (Bytes::new(), false));
        assert_eq!(frame.range(5, 2), None);
        assert_eq!(frame.range(usize::MAX, 2), None);
    }

    #[test]
    fn prefix_and_suffix_split_the_frame() {
        let frame = abc_de_f();
        assert_eq!(frame.prefix(2).unwrap(), Bytes::from_static(b"ab"));
        assert_eq!(frame.prefix(4).unwrap(), Bytes::from_static(b"abcd"));
        assert_eq!(frame.prefix(7), None);
        assert_eq!(frame.suffix(4).to_bytes(), Bytes::from_static(b"ef"));
        assert_eq!(frame.suffix(6).len(), 0);
        assert_eq!(frame.to_bytes(), Bytes::from_static(b"abcdef"));
    }
}
