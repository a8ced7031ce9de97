//! The parallel decoder allocates on the threads of rayon's pool, so its memory is counted
//! process-wide here: a counting global allocator with one total and one peak, in a test
//! binary without a harness (`harness = false`: nothing else runs beside it, not even
//! libtest's reporting thread). Decodes of restart-marked
//! files, intact and with their restart markers mangled, never take more heap than the
//! decoder's `max_decoded_bytes`, whatever the thread count.

mod common;

use std::num::NonZeroUsize;

use common::Rng;
use streamwire_codec::jpeg::{
    DecodeLimits, EncodeOptions, JpegDecoder, JpegError, PixelFormat, PixelsRef, Subsampling,
    Threads, encode,
};

use streamwire_testdata::alloc::{CountingAlloc, process_peak_during};

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    process_peak_during(f)
}

fn restart_marked(format: PixelFormat, subsampling: Subsampling) -> Vec<u8> {
    let (width, height) = (320, 240);
    let step = width as usize * format.bytes_per_pixel();
    let mut rng = Rng::new(11);
    let data: Vec<u8> = common::smooth_image(width, height, format.bytes_per_pixel(), step)
        .into_iter()
        .map(|v| v.wrapping_add((rng.next_u64() % 40) as u8))
        .collect();
    let pixels = PixelsRef::new(width, height, step, format, &data).expect("layout");
    let options = EncodeOptions {
        subsampling,
        ..EncodeOptions::default()
    };
    encode(&pixels, &options).expect("encode").data
}

/// Damages the restart markers (or the data) of `file` in one of several ways.
fn mangle(file: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut data = file.to_vec();
    let markers: Vec<usize> = data
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0] == 0xFF && (0xD0..=0xD7).contains(&w[1]))
        .map(|(at, _)| at)
        .collect();
    let marker = markers[rng.below(markers.len())];
    match rng.below(5) {
        0 => data[marker + 1] = 0xD0 + rng.below(8) as u8,
        1 => {
            data.drain(marker..marker + 2);
        }
        2 => {
            data.splice(marker..marker, [0xFF, 0xD0 + rng.below(8) as u8]);
        }
        3 => {
            if let Some(at) = data.windows(2).position(|w| w == [0xFF, 0xDD]) {
                let interval = rng.next_u64() as u16;
                data[at + 4..at + 6].copy_from_slice(&interval.to_be_bytes());
            }
        }
        _ => {
            let at = rng.below(data.len());
            data[at] = rng.next_u64() as u8;
        }
    }
    data
}

fn main() {
    parallel_decodes_stay_within_the_decoded_bytes_limit();
    println!("parallel_decodes_stay_within_the_decoded_bytes_limit: ok");
}

fn parallel_decodes_stay_within_the_decoded_bytes_limit() {
    // The peak is process-wide: rayon's pool threads, started by the first parallel
    // decode, allocate as they start (their names, thread-locals), and that must not
    // land in a measured decode's peak. Every pool thread has run once after this.
    rayon::broadcast(|_| ());
    let mut rng = Rng::new(5);
    for (format, subsampling) in [
        (PixelFormat::Rgb8, Subsampling::S420),
        (PixelFormat::Rgb8, Subsampling::S444),
        (PixelFormat::Mono8, Subsampling::S420),
    ] {
        let file = restart_marked(format, subsampling);
        // The smallest limit the pre-scan accepts for a decode into `format`: the parallel
        // decode's own buffers do not fit in it, so it must fall back to one piece.
        let mut tight = 1;
        while matches!(
            JpegDecoder::new(DecodeLimits {
                max_decoded_bytes: tight,
                ..DecodeLimits::default()
            })
            .decode(&file, format),
            Err(JpegError::DecodedBytesOverLimit { .. })
        ) {
            tight += 4096;
        }
        for limit in [tight, 4 * tight] {
            let limits = DecodeLimits {
                max_decoded_bytes: limit,
                ..DecodeLimits::default()
            };
            for threads in [1, 2, 3, 8] {
                let threads = Threads::Fixed(NonZeroUsize::new(threads).expect("nonzero"));
                let decoder = JpegDecoder::new(limits).with_threads(threads);
                let (result, peak) = peak_during(|| decoder.decode(&file, format));
                result.expect("intact file decodes");
                assert!(
                    peak <= limit,
                    "{format} {subsampling} at {threads} threads, limit {limit}: peak {peak}"
                );
                for _ in 0..50 {
                    let damaged = mangle(&file, &mut rng);
                    let (result, peak) = peak_during(|| decoder.decode(&damaged, format));
                    assert!(!matches!(result, Err(JpegError::DecoderPanicked)));
                    assert!(
                        peak <= limit,
                        "{format} {subsampling} at {threads} threads, damaged, limit {limit}: \
                         peak {peak}"
                    );
                }
            }
            println!("{format} {subsampling}: limit {limit} held");
        }
    }
}
