//! Measures the lossless engine (plain zstd of little-endian u16 rows) on the real 640x480
//! depth PNGs at levels 1, 3 and 6, and what a byte-plane split (all high bytes, then all low
//! bytes) would change. The split is only measured: the wire format stays plain zstd so generic
//! tools can read it.
//!
//! ```text
//! cargo run --release -p streamwire-codec --example measure_depth [-- REPEATS]
//! ```

use std::time::Instant;

use streamwire_codec::lossless::{compress_rows, decompress_exact};
use streamwire_testdata as data;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Median milliseconds of `repeats` calls of `f`.
fn time_ms<T>(repeats: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut times = Vec::with_capacity(repeats);
    let mut last = None;
    for _ in 0..repeats {
        let start = Instant::now();
        let value = f();
        times.push(start.elapsed().as_secs_f64() * 1e3);
        last = Some(value);
    }
    (median(&mut times), last.expect("repeats >= 1"))
}

fn main() {
    let repeats: usize = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(21);
    let dir = data::require_dir();
    for capture in data::RGBD_CAPTURES {
        let relative = data::depth_png(capture);
        let path = dir.join(&relative);
        let (width, height, mm) = data::read_depth_mm(capture);
        let le: Vec<u8> = mm.iter().flat_map(|v| v.to_le_bytes()).collect();
        let row = width as usize * 2;
        let valid = le.chunks_exact(2).filter(|p| p != &[0, 0]).count();
        let (png_ms, _) = time_ms(repeats, || data::read_depth_mm(capture));
        println!(
            "{}: {width}x{height}, raw {} bytes, PNG file {} bytes (ratio {:.2}:1, decode {png_ms:.2} ms \
             incl. file read), {:.1}% valid pixels",
            relative,
            le.len(),
            std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
            le.len() as f64 / std::fs::metadata(&path).map(|m| m.len()).unwrap_or(1) as f64,
            100.0 * valid as f64 / (le.len() / 2) as f64
        );
        // Byte planes: high bytes of every sample, then low bytes.
        let planes: Vec<u8> = le
            .chunks_exact(2)
            .map(|p| p[1])
            .chain(le.chunks_exact(2).map(|p| p[0]))
            .collect();
        for level in [1, 3, 6] {
            let (compress_ms, frame) = time_ms(repeats, || {
                compress_rows(le.chunks_exact(row), le.len(), level).expect("compress")
            });
            let (decompress_ms, back) = time_ms(repeats, || {
                decompress_exact(&frame, le.len()).expect("decompress")
            });
            assert_eq!(back, le);
            let (split_ms, split) = time_ms(repeats, || {
                compress_rows(std::iter::once(planes.as_slice()), planes.len(), level)
                    .expect("compress planes")
            });
            let mb = le.len() as f64 / 1e6;
            println!(
                "  level {level}: plain {} bytes ratio {:.2}:1, compress {compress_ms:.2} ms \
                 ({:.0} MB/s), decompress {decompress_ms:.2} ms ({:.0} MB/s) | byte planes {} \
                 bytes ratio {:.2}:1 ({:+.1}% size vs plain), compress {split_ms:.2} ms",
                frame.len(),
                le.len() as f64 / frame.len() as f64,
                mb / (compress_ms / 1e3),
                mb / (decompress_ms / 1e3),
                split.len(),
                le.len() as f64 / split.len() as f64,
                100.0 * (split.len() as f64 / frame.len() as f64 - 1.0),
            );
        }
    }
}
