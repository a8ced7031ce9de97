//! The check every wire-frame fuzz input gets, shared by the fuzz target and the corpus
//! replay test (`tests/frame_fuzz_corpus.rs`).
//!
//! An input is a frame and how it arrived: its first byte says into how many parts the
//! frame was cut (`byte % 4` cuts), the next two bytes per cut are a part's length (u16
//! little-endian), and the rest is the frame's bytes (a version 2 frame's blobs are parts
//! of their own as the encoder writes them; a receiver gets whatever slices the engine
//! delivered). Reading it, parse then the message through the registry of
//! streamwire-msgs, must return (never panic), and the heap the counting allocator saw at
//! its peak must stay within [`heap_limit`] of the frame's length: nothing is allocated
//! of a size the frame only declares. A message that reads is written again and must read
//! back to the same frame bytes (one rewrite normalises the encoding).

use bytes::Bytes;
use streamwire_testdata::alloc::peak_during;
use streamwire_transport::{FrameBytes, WireFrame};

/// Heap any read may take, whatever the frame (the parse's and CBOR reader's own).
pub(crate) const HEAP_BASE: usize = 64 * 1024;

/// Heap per byte of frame a read may take on top of [`HEAP_BASE`]: serde sizes a
/// sequence's buffer from its declared length, which the payload reader checks against
/// the bytes left (one at least per element), so a declared sequence may take up to the
/// frame's length times its element's size in memory (the largest: a `TransformStamped`,
/// checked by the replay test).
pub(crate) const HEAP_PER_BYTE: usize = 128;

/// The most heap reading a frame of `len` bytes may take.
pub(crate) fn heap_limit(len: usize) -> usize {
    HEAP_BASE + HEAP_PER_BYTE * len
}

/// What reading one input came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The frame was refused by the parse.
    Refused,
    /// The frame parsed; its message was refused (or it has none: a control frame).
    Unread,
    /// The frame parsed and its message read.
    Read,
}

/// The frame an input describes, in its parts (see the module's documentation; the
/// replay test's seed writer writes the inverse).
pub(crate) fn frame_of(input: &[u8]) -> FrameBytes {
    let Some((&selector, mut rest)) = input.split_first() else {
        return FrameBytes::default();
    };
    let cuts = usize::from(selector % 4);
    let mut lengths = Vec::with_capacity(cuts);
    for _ in 0..cuts {
        let Some((len, tail)) = rest.split_first_chunk::<2>() else {
            break;
        };
        lengths.push(usize::from(u16::from_le_bytes(*len)));
        rest = tail;
    }
    let mut parts = Vec::with_capacity(cuts + 1);
    for len in lengths {
        let (part, tail) = rest.split_at(len.min(rest.len()));
        parts.push(Bytes::copy_from_slice(part));
        rest = tail;
    }
    parts.push(Bytes::copy_from_slice(rest));
    FrameBytes::from_parts(parts)
}

/// Reads the frame `input` describes; panics (a fuzz finding) if the heap peak passes the
/// limit or a message that read does not write and read back the same.
pub(crate) fn check(input: &[u8]) -> Outcome {
    let frame = frame_of(input);
    let len = frame.len();
    let (result, peak) = peak_during(|| match WireFrame::parse(frame) {
        Err(error) => {
            let _ = (error.rejection(), error.to_string());
            Err(Outcome::Refused)
        }
        Ok(read) => {
            let _ = read.copies();
            match read.read_message() {
                Ok(message) => Ok((read, message)),
                Err(error) => {
                    let _ = (error.rejection(), error.to_string());
                    Err(Outcome::Unread)
                }
            }
        }
    });
    assert!(
        peak <= heap_limit(len),
        "reading a frame of {len} bytes took {peak} bytes of heap, over the limit of {}",
        heap_limit(len)
    );
    let (read, message) = match result {
        Ok(read) => read,
        Err(outcome) => return outcome,
    };
    let head = &read.head;
    let write = |message: &dyn streamwire_core::AnyMessage| {
        WireFrame::encode(message, head.header(), head.link_seq, &head.codec)
            .unwrap_or_else(|error| panic!("a message that read does not write: {error}"))
    };
    let once = write(&*message);
    let again = WireFrame::parse(once.clone())
        .and_then(|frame| frame.read_message())
        .unwrap_or_else(|error| panic!("a message written again does not read: {error}"));
    assert_eq!(
        write(&*again).to_bytes(),
        once.to_bytes(),
        "a message written twice differs"
    );
    Outcome::Read
}
