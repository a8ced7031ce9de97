//! Measures the JPEG engine on the 280 real 1280x720 cockatoo frames: q75 4:2:0 with each
//! chroma downsampling method, encode and decode time, size and PSNR.
//!
//! ```text
//! cargo run --release -p streamwire-codec --example measure_jpeg [-- RUNS]
//! ```
//!
//! Then the same comparison on the two 640x480 RGB PNGs of `rgbd_pointcloud`, which were never
//! JPEG-compressed (the cockatoo frames were, which smooths their chroma in advance).
//!
//! The source frames are JPEGs already: they are decoded once and their pixels are the
//! reference. The two methods are interleaved frame by frame (alternating which goes first)
//! so drift in a shared machine's load hits both alike; each run prints medians and means.

use std::time::Instant;

use streamwire_codec::jpeg::{
    ChromaDownsampling, EncodeOptions, JpegDecoder, PixelFormat, PixelsRef, Subsampling, encode,
    psnr,
};
use streamwire_testdata as data;

#[derive(Default)]
struct Stats {
    encode_ms: Vec<f64>,
    decode_ms: Vec<f64>,
    bytes: Vec<usize>,
    psnr: Vec<f64>,
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(3);
    let decoder = JpegDecoder::default();

    let files: Vec<Vec<u8>> = (0..data::COCKATOO_FRAMES)
        .map(|index| data::read(&data::cockatoo_frame(index)))
        .collect();
    let mut source_decode_ms = Vec::new();
    let mut sources = Vec::new();
    for file in &files {
        let start = Instant::now();
        let decoded = decoder
            .decode(file, PixelFormat::Rgb8)
            .expect("decode source");
        source_decode_ms.push(start.elapsed().as_secs_f64() * 1e3);
        sources.push(decoded);
    }
    let (width, height) = (sources[0].width, sources[0].height);
    let raw = width as usize * height as usize * 3;
    let source_bytes: Vec<f64> = files.iter().map(|f| f.len() as f64).collect();
    println!(
        "{} frames {width}x{height}, source JPEG {:.0} bytes/frame mean, decode (fresh Vec) \
         {:.2} ms median, {:.2} ms mean",
        files.len(),
        mean(&source_bytes),
        median(&source_decode_ms),
        mean(&source_decode_ms)
    );

    let methods = [ChromaDownsampling::Average, ChromaDownsampling::TopLeft];
    for run in 1..=runs {
        let mut stats = [Stats::default(), Stats::default()];
        let mut ratios = Vec::new();
        let mut buffer = Vec::new();
        for (index, source) in sources.iter().enumerate() {
            let pixels = PixelsRef::new(
                width,
                height,
                width as usize * 3,
                PixelFormat::Rgb8,
                &source.data,
            )
            .expect("layout");
            let order = if index % 2 == 0 { [0, 1] } else { [1, 0] };
            let mut times = [0.0; 2];
            for m in order {
                let options = EncodeOptions {
                    quality: 75,
                    subsampling: Subsampling::S420,
                    chroma_downsampling: methods[m],
                    ..EncodeOptions::default()
                };
                let start = Instant::now();
                let jpeg = encode(&pixels, &options).expect("encode");
                let encode_ms = start.elapsed().as_secs_f64() * 1e3;
                let start = Instant::now();
                decoder
                    .decode_into(&jpeg.data, PixelFormat::Rgb8, &mut buffer)
                    .expect("decode");
                let decode_ms = start.elapsed().as_secs_f64() * 1e3;
                times[m] = encode_ms;
                stats[m].encode_ms.push(encode_ms);
                stats[m].decode_ms.push(decode_ms);
                stats[m].bytes.push(jpeg.data.len());
                stats[m]
                    .psnr
                    .push(psnr(&source.data, &buffer).expect("same size"));
            }
            ratios.push(times[0] / times[1]);
        }
        for (method, stats) in methods.iter().zip(&stats) {
            let bytes: Vec<f64> = stats.bytes.iter().map(|&b| b as f64).collect();
            let min_psnr = stats.psnr.iter().copied().fold(f64::INFINITY, f64::min);
            println!(
                "run {run} q75 4:2:0 {method:>8}: encode {:.2} ms median {:.2} mean | decode \
                 (reused buffer) {:.2} ms median {:.2} mean | {:.0} bytes/frame mean {:.0} median \
                 | PSNR {:.2} dB mean {:.2} min | raw {raw} bytes, ratio {:.1}:1",
                median(&stats.encode_ms),
                mean(&stats.encode_ms),
                median(&stats.decode_ms),
                mean(&stats.decode_ms),
                mean(&bytes),
                median(&bytes),
                mean(&stats.psnr),
                min_psnr,
                raw as f64 / mean(&bytes),
            );
        }
        let size_ratio = mean(
            &stats[0]
                .bytes
                .iter()
                .zip(&stats[1].bytes)
                .map(|(&a, &t)| a as f64 / t as f64)
                .collect::<Vec<_>>(),
        );
        let psnr_gain = mean(
            &stats[0]
                .psnr
                .iter()
                .zip(&stats[1].psnr)
                .map(|(a, t)| a - t)
                .collect::<Vec<_>>(),
        );
        println!(
            "run {run} average vs top_left: encode time ratio {:.3} (median of per-frame ratios), \
             size ratio {size_ratio:.4} (mean), PSNR {psnr_gain:+.3} dB (mean per-frame difference)",
            median(&ratios)
        );
    }

    // Never-compressed content: the PNGs, 25 repeats each for the times.
    for capture in data::RGBD_CAPTURES {
        let (width, height, rgb) = data::read_rgb(capture);
        let pixels = PixelsRef::new(width, height, width as usize * 3, PixelFormat::Rgb8, &rgb)
            .expect("layout");
        let mut line = format!("{} {width}x{height} q75 4:2:0:", data::rgb_png(capture));
        let mut times = [Vec::new(), Vec::new()];
        for repeat in 0..25 {
            let order = if repeat % 2 == 0 { [0, 1] } else { [1, 0] };
            for m in order {
                let options = EncodeOptions {
                    chroma_downsampling: methods[m],
                    ..EncodeOptions::default()
                };
                let start = Instant::now();
                let jpeg = encode(&pixels, &options).expect("encode");
                times[m].push(start.elapsed().as_secs_f64() * 1e3);
                if repeat == 0 {
                    let decoded = decoder
                        .decode(&jpeg.data, PixelFormat::Rgb8)
                        .expect("decode");
                    let db = psnr(&rgb, &decoded.data).expect("same size");
                    line += &format!(
                        " {}: {} bytes, PSNR {db:.2} dB;",
                        methods[m],
                        jpeg.data.len()
                    );
                }
            }
        }
        line += &format!(
            " encode median {:.2} ms (average) vs {:.2} ms (top_left)",
            median(&times[0]),
            median(&times[1])
        );
        println!("{line}");
    }
}
