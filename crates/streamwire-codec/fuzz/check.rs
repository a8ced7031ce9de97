//! The check every fuzz input gets, shared by the fuzz targets and the corpus replay test
//! (`tests/fuzz_corpus.rs`): decode with small limits into the format the first byte picks;
//! the decoder must return (never panic, never report a caught panic), and the heap the
//! caller's counting allocator saw at its peak must stay within the decoded-bytes limit.

use streamwire_codec::jpeg::{DecodeLimits, JpegDecoder, JpegError, PixelFormat, Threads};

/// The limits of the fuzzed decoder: 4 MiB of decode memory, 2048x2048, 20 scans.
pub(crate) const LIMITS: DecodeLimits = DecodeLimits {
    max_width: 2048,
    max_height: 2048,
    max_scans: 20,
    max_decoded_bytes: 4 << 20,
};

/// Decodes `input` (first byte: output format; rest: the file) with `threads`, and returns
/// the peak heap bytes `peak` measured around the decode. Panics (a fuzz finding) if the
/// decoder reports a caught panic or the peak exceeds [`LIMITS`]'s decoded bytes.
pub(crate) fn check(input: &[u8], threads: Threads, peak: impl FnOnce(&mut dyn FnMut()) -> usize) {
    let Some((&selector, data)) = input.split_first() else {
        return;
    };
    let format = PixelFormat::ALL[usize::from(selector) % PixelFormat::ALL.len()];
    let decoder = JpegDecoder::new(LIMITS).with_threads(threads);
    let mut result = None;
    let bytes = peak(&mut || result = Some(decoder.decode(data, format)));
    if let Some(Err(JpegError::DecoderPanicked)) = result {
        panic!("the decoder panicked inside (caught) on this input");
    }
    if let Some(Ok(image)) = &result {
        assert_eq!(
            image.data.len(),
            image.width as usize * image.height as usize * format.bytes_per_pixel()
        );
    }
    assert!(
        bytes <= LIMITS.max_decoded_bytes,
        "decode took {bytes} bytes of heap, over the limit of {}",
        LIMITS.max_decoded_bytes
    );
}
