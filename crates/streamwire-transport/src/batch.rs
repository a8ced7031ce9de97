//! Batches: several small frames of one stream in one transport message.
//!
//! A keep-all stream's sender that finds several small messages waiting puts them in one
//! batch: one engine message, one wake-up of the receiving side, instead of one each
//! (RFC.md, "The wire frame"). Each frame inside is a whole version 1 frame with its own
//! link sequence, consecutive within the batch, so loss and order are read per message
//! as for frames sent alone.
//!
//! ```text
//! offset  size  field
//! 0       4     magic, the ASCII bytes "SWFB"
//! 4       2     batch format version, u16 little-endian: 1
//! 6       2     frame count N, u16 little-endian, 1 to MAX_BATCH_FRAMES
//! 8       ...   N times: frame length L, u32 little-endian, then the L bytes of a frame
//! ```
//!
//! Reading checks the count and every length against the bytes received before anything
//! is split; the frames are slices of the batch's buffer (no copy).

use byteorder::{ByteOrder, LittleEndian};
use bytes::{BufMut, Bytes, BytesMut};

use crate::frame::FrameError;
use crate::parts::FrameBytes;

/// The first four bytes of a batch.
pub const BATCH_MAGIC: [u8; 4] = *b"SWFB";

/// The batch format this build writes and reads.
pub const BATCH_VERSION: u16 = 1;

/// The most frames one batch holds.
pub const MAX_BATCH_FRAMES: usize = 256;

/// The most bytes of frames a sender puts in one batch: a few network packets, so that
/// a batch adds no more than a few tens of microseconds to its first message's latency.
pub const MAX_BATCH_BYTES: usize = 64 * 1024;

/// Bytes before the first frame.
const BATCH_FIXED_LEN: usize = 8;

/// A publisher's link sequence numbers: one per frame put, several per batch (taken once
/// the batch knows how many frames it holds, so that no number is skipped).
///
/// ```
/// use streamwire_transport::{WireFrame, batch::{self, LinkNumbers}};
/// let numbers = LinkNumbers::default();
/// assert_eq!(numbers.next(), 0);
/// let (_, frames) = numbers.batch(&mut |first| {
///     let frames = vec![WireFrame::stop(first)?, WireFrame::stop(first + 1)?];
///     Ok((batch::encode(&frames)?, 2))
/// })?;
/// assert_eq!((frames, numbers.next()), (2, 3));
/// # Ok::<(), streamwire_transport::FrameError>(())
/// ```
#[derive(Debug, Default)]
pub struct LinkNumbers {
    next: parking_lot::Mutex<u64>,
}

impl LinkNumbers {
    /// The number of the next frame put alone.
    pub fn next(&self) -> u64 {
        let mut next = self.next.lock();
        let seq = *next;
        *next += 1;
        seq
    }

    /// Builds a batch with `build`, given the number of its first frame, and takes as many
    /// numbers as the batch says it holds.
    pub fn batch(
        &self,
        build: &mut dyn FnMut(u64) -> Result<(FrameBytes, u64), FrameError>,
    ) -> Result<(FrameBytes, u64), FrameError> {
        let mut next = self.next.lock();
        let (batch, frames) = build(*next)?;
        *next += frames;
        Ok((batch, frames))
    }
}

/// The batch of `frames`, in order. Each frame is written whole (a frame in several
/// parts is joined).
///
/// ```
/// use streamwire_transport::{WireFrame, batch};
/// let frames = vec![WireFrame::stop(1)?, WireFrame::stop(2)?];
/// let split = batch::split(batch::encode(&frames)?)?.expect("a batch");
/// assert_eq!(split, frames);
/// # Ok::<(), streamwire_transport::FrameError>(())
/// ```
pub fn encode(frames: &[FrameBytes]) -> Result<FrameBytes, FrameError> {
    if frames.is_empty() || frames.len() > MAX_BATCH_FRAMES {
        return Err(FrameError::Batch(format!(
            "a batch holds 1 to {MAX_BATCH_FRAMES} frames, not {}",
            frames.len()
        )));
    }
    let total: usize = frames.iter().map(|f| 4 + f.len()).sum();
    let mut buffer = BytesMut::with_capacity(BATCH_FIXED_LEN + total);
    buffer.put_slice(&BATCH_MAGIC);
    buffer.put_u16_le(BATCH_VERSION);
    buffer.put_u16_le(u16::try_from(frames.len()).unwrap_or(u16::MAX));
    for frame in frames {
        let len = u32::try_from(frame.len()).map_err(|_| FrameError::TooLarge(frame.len()))?;
        buffer.put_u32_le(len);
        for part in frame.parts() {
            buffer.put_slice(part);
        }
    }
    Ok(FrameBytes::from_parts(vec![buffer.freeze()]))
}

/// How many frames `bytes` holds if it is a batch (read from its fixed part only), or
/// `None` when it is not one.
pub fn frame_count(bytes: &FrameBytes) -> Option<usize> {
    let fixed = bytes.prefix(BATCH_FIXED_LEN)?;
    (fixed[..4] == BATCH_MAGIC).then(|| usize::from(LittleEndian::read_u16(&fixed[6..8])))
}

/// The frames of `bytes` if it is a batch (`None` when it is not one), each a slice of
/// its buffer; a batch whose version, count or lengths do not hold is an error, and none
/// of its frames is read.
pub fn split(bytes: FrameBytes) -> Result<Option<Vec<FrameBytes>>, FrameError> {
    let Some(count) = frame_count(&bytes) else {
        return Ok(None);
    };
    let buffer: Bytes = bytes.to_bytes();
    let version = LittleEndian::read_u16(&buffer[4..6]);
    if version != BATCH_VERSION {
        return Err(FrameError::Version {
            theirs: version,
            ours: BATCH_VERSION,
        });
    }
    if count == 0 || count > MAX_BATCH_FRAMES {
        return Err(FrameError::Batch(format!(
            "{count} frames declared (1 to {MAX_BATCH_FRAMES})"
        )));
    }
    let mut frames = Vec::with_capacity(count);
    let mut at = BATCH_FIXED_LEN;
    for _ in 0..count {
        let Some(len_bytes) = buffer.get(at..at + 4) else {
            return Err(truncated(at + 4, buffer.len()));
        };
        let len = usize::try_from(LittleEndian::read_u32(len_bytes)).unwrap_or(usize::MAX);
        let start = at + 4;
        let end = start.checked_add(len).filter(|end| *end <= buffer.len());
        let Some(end) = end else {
            return Err(truncated(start.saturating_add(len), buffer.len()));
        };
        frames.push(FrameBytes::from_parts(vec![buffer.slice(start..end)]));
        at = end;
    }
    if at != buffer.len() {
        return Err(FrameError::Trailing {
            declared: at as u64,
            got: buffer.len() as u64,
        });
    }
    Ok(Some(frames))
}

fn truncated(needed: usize, got: usize) -> FrameError {
    FrameError::Truncated {
        needed: needed as u64,
        got: got as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WireFrame;

    fn frames(n: u64) -> Vec<FrameBytes> {
        (0..n).map(|seq| WireFrame::stop(seq).unwrap()).collect()
    }

    #[test]
    fn a_batch_splits_into_its_frames_in_order() {
        let sent = frames(5);
        let batch = encode(&sent).unwrap();
        assert_eq!(frame_count(&batch), Some(5));
        let got = split(batch).unwrap().unwrap();
        assert_eq!(got, sent);
        for (seq, frame) in got.into_iter().enumerate() {
            assert_eq!(WireFrame::parse(frame).unwrap().head.link_seq, seq as u64);
        }
    }

    #[test]
    fn a_frame_is_not_a_batch() {
        let frame = WireFrame::stop(3).unwrap();
        assert_eq!(frame_count(&frame), None);
        assert_eq!(split(frame).unwrap(), None);
    }

    #[test]
    fn a_damaged_batch_is_refused_whole() {
        let batch = encode(&frames(3)).unwrap().to_bytes().to_vec();
        // Cut inside the last frame.
        let cut = FrameBytes::from_parts(vec![Bytes::from(batch[..batch.len() - 3].to_vec())]);
        assert!(matches!(split(cut), Err(FrameError::Truncated { .. })));
        // A count larger than the frames there.
        let mut more = batch.clone();
        LittleEndian::write_u16(&mut more[6..8], 4);
        assert!(split(FrameBytes::from_parts(vec![Bytes::from(more)])).is_err());
        // A count of 0, and one past the limit.
        for count in [0, MAX_BATCH_FRAMES as u16 + 1] {
            let mut bad = batch.clone();
            LittleEndian::write_u16(&mut bad[6..8], count);
            assert!(matches!(
                split(FrameBytes::from_parts(vec![Bytes::from(bad)])),
                Err(FrameError::Batch(_))
            ));
        }
        // A length past the end.
        let mut long = batch.clone();
        LittleEndian::write_u32(&mut long[8..12], u32::MAX);
        assert!(matches!(
            split(FrameBytes::from_parts(vec![Bytes::from(long)])),
            Err(FrameError::Truncated { .. })
        ));
        // Bytes after the last frame.
        let mut trailing = batch;
        trailing.push(0);
        assert!(matches!(
            split(FrameBytes::from_parts(vec![Bytes::from(trailing)])),
            Err(FrameError::Trailing { .. })
        ));
    }

    #[test]
    fn a_batch_of_another_version_is_incompatible() {
        let mut batch = encode(&frames(1)).unwrap().to_bytes().to_vec();
        LittleEndian::write_u16(&mut batch[4..6], 9);
        assert!(matches!(
            split(FrameBytes::from_parts(vec![Bytes::from(batch)])),
            Err(FrameError::Version { theirs: 9, .. })
        ));
    }

    #[test]
    fn empty_and_oversized_batches_are_not_written() {
        assert!(encode(&[]).is_err());
        assert!(encode(&frames(MAX_BATCH_FRAMES as u64 + 1)).is_err());
    }
}
