//! The JPEG encoder backends side by side on the real 1280x720 cockatoo frames at q75 4:2:0,
//! averaging chroma, each unsplit on one thread: jpeg-encoder, libjpeg-turbo-rs and rusty_jpeg
//! (each only with its feature) and libjpeg-turbo (the `turbojpeg` crate, accurate integer
//! DCT, the reference). Two modes:
//!
//! ```text
//! cargo build --release -p streamwire-codec --features libjpeg-turbo-rs,rusty_jpeg \
//!     --example measure_backends
//! # CPU per frame, size and PSNR: all 280 frames, contenders interleaved frame by frame
//! # (order rotating), ROUNDS rounds, medians.
//! target/release/examples/measure_backends time [ROUNDS]
//! # Instructions: encode FRAMES frames (spread over the 280) with one contender; run it under
//! # callgrind and subtract the count of the contender `none` (which only loads the frames).
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/measure_backends count CONTENDER [FRAMES]
//! ```
//!
//! CONTENDER is `none`, `jpeg-encoder`, `libjpeg-turbo-rs`, `rusty_jpeg` or `turbo`.

use streamwire_codec::jpeg::{
    Backend, EncodeOptions, JpegDecoder, PixelFormat, PixelsRef, Threads, encode, psnr,
};
use streamwire_testdata as data;

const WIDTH: u32 = 1280;
const HEIGHT: u32 = 720;
const QUALITY: u8 = 75;

/// The frames at `count` indices spread evenly over the 280, decoded to RGB.
fn sources(count: usize) -> Vec<Vec<u8>> {
    let decoder = JpegDecoder::default().with_threads(Threads::Unsplit);
    (0..count)
        .map(|i| {
            let file = data::read(&data::cockatoo_frame(i * data::COCKATOO_FRAMES / count));
            decoder
                .decode(&file, PixelFormat::Rgb8)
                .expect("decode source")
                .data
        })
        .collect()
}

/// Encodes `source` with `contender` (a backend's name, or `turbo` for the turbojpeg crate).
fn encode_with(contender: &str, source: &[u8], compressor: &mut turbojpeg::Compressor) -> Vec<u8> {
    if contender == "turbo" {
        let image = turbojpeg::Image {
            pixels: source,
            width: WIDTH as usize,
            pitch: WIDTH as usize * 3,
            height: HEIGHT as usize,
            format: turbojpeg::PixelFormat::RGB,
        };
        return compressor.compress_to_vec(image).expect("turbo encode");
    }
    let backend: Backend = contender.parse().expect("contender");
    let pixels = PixelsRef::new(WIDTH, HEIGHT, WIDTH as usize * 3, PixelFormat::Rgb8, source)
        .expect("layout");
    let options = EncodeOptions {
        quality: QUALITY,
        threads: Threads::Unsplit,
        backend,
        ..EncodeOptions::default()
    };
    encode(&pixels, &options).expect("encode").data
}

fn compressor() -> turbojpeg::Compressor {
    let mut compressor = turbojpeg::Compressor::new().expect("turbojpeg");
    compressor.set_quality(i32::from(QUALITY)).expect("quality");
    compressor
        .set_subsamp(turbojpeg::Subsamp::Sub2x2)
        .expect("subsampling");
    compressor
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn thread_cpu_ms() -> f64 {
    cpu_time::ThreadTime::now().as_duration().as_secs_f64() * 1e3
}

#[derive(Default, Clone)]
struct Stats {
    cpu_ms: Vec<f64>,
    bytes: Vec<f64>,
    psnr: Vec<f64>,
    /// Frames whose file is byte for byte libjpeg-turbo's.
    same_as_turbo: usize,
}

fn time(rounds: usize) {
    let mut contenders: Vec<String> = [
        Backend::JpegEncoder,
        Backend::LibjpegTurboRs,
        Backend::RustyJpeg,
    ]
    .into_iter()
    .filter(|backend| backend.is_available())
    .map(|backend| backend.to_string())
    .collect();
    contenders.push("turbo".to_owned());
    let turbo = contenders.len() - 1;
    let sources = sources(data::COCKATOO_FRAMES);
    let decoder = JpegDecoder::default().with_threads(Threads::Unsplit);
    let mut compressor = compressor();
    let mut buffer = Vec::new();
    let mut round_medians: Vec<Vec<f64>> = vec![Vec::new(); contenders.len()];
    let mut last = vec![Stats::default(); contenders.len()];
    for round in 1..=rounds {
        let mut stats = vec![Stats::default(); contenders.len()];
        for (index, source) in sources.iter().enumerate() {
            let mut files = vec![Vec::new(); contenders.len()];
            for k in 0..contenders.len() {
                let c = (k + index + round) % contenders.len();
                let start = thread_cpu_ms();
                let file = encode_with(&contenders[c], source, &mut compressor);
                stats[c].cpu_ms.push(thread_cpu_ms() - start);
                decoder
                    .decode_into(&file, PixelFormat::Rgb8, &mut buffer)
                    .expect("decode");
                stats[c].bytes.push(file.len() as f64);
                stats[c]
                    .psnr
                    .push(psnr(source, &buffer).expect("same size"));
                files[c] = file;
            }
            for (c, file) in files.iter().enumerate() {
                stats[c].same_as_turbo += usize::from(*file == files[turbo]);
            }
        }
        print!("round {round}: CPU ms/frame median");
        for (c, name) in contenders.iter().enumerate() {
            let cpu = median(&stats[c].cpu_ms);
            round_medians[c].push(cpu);
            print!(" | {name} {cpu:.3}");
        }
        println!();
        last = stats;
    }
    println!(
        "\n| contender | CPU ms/frame (median of round medians) | x turbo | bytes/frame | vs turbo | PSNR dB mean | vs turbo | files identical to turbo's |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let turbo_cpu = median(&round_medians[turbo]);
    let turbo_bytes = mean(&last[turbo].bytes);
    let turbo_psnr = mean(&last[turbo].psnr);
    for (c, name) in contenders.iter().enumerate() {
        let cpu = median(&round_medians[c]);
        let bytes = mean(&last[c].bytes);
        let db = mean(&last[c].psnr);
        println!(
            "| {name} | {cpu:.3} | {:.2} | {bytes:.0} | {:+.2}% | {db:.3} | {:+.3} dB | {} of {} |",
            cpu / turbo_cpu,
            (bytes / turbo_bytes - 1.0) * 100.0,
            db - turbo_psnr,
            last[c].same_as_turbo,
            last[c].bytes.len()
        );
    }
}

fn count(contender: &str, frames: usize) {
    let sources = sources(frames);
    let mut compressor = compressor();
    let mut bytes = 0;
    if contender != "none" {
        for source in &sources {
            bytes += encode_with(contender, source, &mut compressor).len();
        }
    }
    println!("{contender}: {frames} frames, {bytes} bytes");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("time") => time(args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3)),
        Some("count") => count(
            args.get(1).map_or("none", String::as_str),
            args.get(2).and_then(|a| a.parse().ok()).unwrap_or(8),
        ),
        _ => eprintln!("usage: measure_backends time [ROUNDS] | count CONTENDER [FRAMES]"),
    }
}
