//! Strip-parallel JPEG side by side on the 280 real 1280x720 cockatoo frames: encode with
//! jpeg-encoder unsplit, in strips at 1, 2 and `auto` threads, libjpeg-turbo (the `turbojpeg`
//! crate) single-threaded, and with the `turbo` feature our libjpeg-turbo backend in strips;
//! then decode of the same bytes (our default strip file) by zune-jpeg sequential, parallel at
//! 2 and `auto` threads, and libjpeg-turbo.
//!
//! ```text
//! cargo run --release -p streamwire-codec --features turbo --example measure_strips [-- RUNS [QUALITY]]
//! ```
//!
//! The contenders run interleaved frame by frame, their order rotating each frame, so drift
//! in a shared machine's load hits all alike. Per contender: wall ms per frame (median),
//! CPU ms per frame over all threads (mean of the process CPU clock, which includes rayon's
//! workers spinning before they sleep),
//! megapixels/s at the median, bytes per frame and PSNR against the source pixels; and the
//! median over frames of the per-frame wall-time ratio to libjpeg-turbo single-threaded.

use std::num::NonZeroUsize;
use std::time::Instant;

use streamwire_codec::jpeg::{
    Backend, EncodeOptions, JpegDecoder, PixelFormat, PixelsRef, Threads, encode, psnr,
};
use streamwire_testdata as data;

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// CPU time of every thread of this process so far, in ns (`CLOCK_PROCESS_CPUTIME_ID`).
fn cpu_ns() -> u64 {
    u64::try_from(cpu_time::ProcessTime::now().as_duration().as_nanos()).unwrap_or(u64::MAX)
}

#[derive(Default)]
struct Stats {
    wall_ms: Vec<f64>,
    cpu_ms: Vec<f64>,
    bytes: Vec<f64>,
    psnr: Vec<f64>,
    ratio_to_turbo: Vec<f64>,
}

/// Times `f` (wall and all-thread CPU).
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let cpu = cpu_ns();
    let start = Instant::now();
    let value = f();
    let wall = start.elapsed().as_secs_f64() * 1e3;
    let cpu = cpu_ns().saturating_sub(cpu) as f64 / 1e6;
    (value, wall, cpu)
}

fn threads(count: usize) -> Threads {
    Threads::Fixed(NonZeroUsize::new(count).expect("nonzero"))
}

fn report(title: &str, names: &[String], stats: &[Stats], megapixels: f64) {
    println!("{title}");
    for (name, stats) in names.iter().zip(stats) {
        let wall = median(&stats.wall_ms);
        let bytes = if stats.bytes.is_empty() {
            String::new()
        } else {
            format!(
                " | {:.0} bytes/frame | PSNR {:.2} dB mean",
                mean(&stats.bytes),
                mean(&stats.psnr)
            )
        };
        println!(
            "  {name:<28} wall {wall:6.2} ms median | CPU {:6.2} ms mean | {:6.1} MP/s | \
             x{:.2} of turbo (median per-frame ratio){bytes}",
            mean(&stats.cpu_ms),
            megapixels / wall * 1e3,
            median(&stats.ratio_to_turbo),
        );
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "a measurement read top to bottom: its setup, interleaved rounds and table"
)]
fn main() {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let quality: u8 = args.next().and_then(|a| a.parse().ok()).unwrap_or(75);
    println!(
        "rayon pool: {} threads; {} CPUs available",
        rayon::current_num_threads(),
        std::thread::available_parallelism().map_or(0, NonZeroUsize::get)
    );
    let sequential = JpegDecoder::default().with_threads(Threads::Unsplit);
    let sources: Vec<Vec<u8>> = (0..data::COCKATOO_FRAMES)
        .map(|index| {
            let file = data::read(&data::cockatoo_frame(index));
            sequential
                .decode(&file, PixelFormat::Rgb8)
                .expect("decode source")
                .data
        })
        .collect();
    let (width, height) = (1280u32, 720u32);
    let megapixels = f64::from(width * height) / 1e6;

    let mut encoders: Vec<(String, EncodeOptions)> = [
        ("jpeg-encoder unsplit", Threads::Unsplit),
        ("jpeg-encoder strips x1", threads(1)),
        ("jpeg-encoder strips x2", threads(2)),
        ("jpeg-encoder strips auto", Threads::Auto),
    ]
    .into_iter()
    .map(|(name, threads)| {
        let options = EncodeOptions {
            quality,
            threads,
            ..EncodeOptions::default()
        };
        (name.to_owned(), options)
    })
    .collect();
    if Backend::Turbo.is_available() {
        for (name, threads) in [
            ("turbo backend strips x1", threads(1)),
            ("turbo backend strips x2", threads(2)),
        ] {
            let options = EncodeOptions {
                quality,
                threads,
                backend: Backend::Turbo,
                ..EncodeOptions::default()
            };
            encoders.push((name.to_owned(), options));
        }
    }
    let mut names: Vec<String> = encoders.iter().map(|(name, _)| name.clone()).collect();
    names.push("libjpeg-turbo (turbojpeg)".to_owned());
    let decoder_names: Vec<String> = [
        "zune-jpeg sequential",
        "zune-jpeg parallel x2",
        "zune-jpeg parallel auto",
        "libjpeg-turbo (turbojpeg)",
    ]
    .map(str::to_owned)
    .to_vec();
    let decoders = [
        sequential,
        JpegDecoder::default().with_threads(threads(2)),
        JpegDecoder::default(),
    ];

    let mut compressor = turbojpeg::Compressor::new().expect("turbojpeg");
    compressor.set_quality(i32::from(quality)).expect("quality");
    compressor
        .set_subsamp(turbojpeg::Subsamp::Sub2x2)
        .expect("subsampling");
    let mut decompressor = turbojpeg::Decompressor::new().expect("turbojpeg");

    for run in 1..=runs {
        let mut encode_stats: Vec<Stats> = names.iter().map(|_| Stats::default()).collect();
        let mut decode_stats: Vec<Stats> = decoder_names.iter().map(|_| Stats::default()).collect();
        let mut buffer = Vec::new();
        let mut turbo_buffer = vec![0u8; sources[0].len()];
        for (index, source) in sources.iter().enumerate() {
            let pixels =
                PixelsRef::new(width, height, width as usize * 3, PixelFormat::Rgb8, source)
                    .expect("layout");
            let contenders = names.len();
            let mut walls = vec![0.0; contenders];
            let mut default_file = Vec::new();
            for k in 0..contenders {
                let c = (k + index) % contenders;
                let (file, wall, cpu) = if c < encoders.len() {
                    timed(|| encode(&pixels, &encoders[c].1).expect("encode").data)
                } else {
                    let image = turbojpeg::Image {
                        pixels: source.as_slice(),
                        width: width as usize,
                        pitch: width as usize * 3,
                        height: height as usize,
                        format: turbojpeg::PixelFormat::RGB,
                    };
                    timed(|| compressor.compress_to_vec(image).expect("turbo encode"))
                };
                sequential
                    .decode_into(&file, PixelFormat::Rgb8, &mut buffer)
                    .expect("decode");
                walls[c] = wall;
                let stats = &mut encode_stats[c];
                stats.wall_ms.push(wall);
                stats.cpu_ms.push(cpu);
                stats.bytes.push(file.len() as f64);
                stats.psnr.push(psnr(source, &buffer).expect("same size"));
                if encoders
                    .get(c)
                    .is_some_and(|(_, o)| o.threads == Threads::Auto)
                {
                    default_file = file;
                }
            }
            let turbo_wall = walls[contenders - 1];
            for (c, wall) in walls.iter().enumerate() {
                encode_stats[c].ratio_to_turbo.push(wall / turbo_wall);
            }

            let contenders = decoder_names.len();
            let mut walls = vec![0.0; contenders];
            for k in 0..contenders {
                let c = (k + index) % contenders;
                let ((), wall, cpu) = if c < decoders.len() {
                    timed(|| {
                        decoders[c]
                            .decode_into(&default_file, PixelFormat::Rgb8, &mut buffer)
                            .map(|_| ())
                            .expect("decode");
                    })
                } else {
                    timed(|| {
                        let image = turbojpeg::Image {
                            pixels: turbo_buffer.as_mut_slice(),
                            width: width as usize,
                            pitch: width as usize * 3,
                            height: height as usize,
                            format: turbojpeg::PixelFormat::RGB,
                        };
                        decompressor
                            .decompress(&default_file, image)
                            .expect("turbo decode");
                    })
                };
                walls[c] = wall;
                decode_stats[c].wall_ms.push(wall);
                decode_stats[c].cpu_ms.push(cpu);
            }
            let turbo_wall = walls[contenders - 1];
            for (c, wall) in walls.iter().enumerate() {
                decode_stats[c].ratio_to_turbo.push(wall / turbo_wall);
            }
        }
        report(
            &format!(
                "run {run}: encode q{quality} 4:2:0 (average), {} frames {width}x{height}",
                sources.len()
            ),
            &names,
            &encode_stats,
            megapixels,
        );
        report(
            &format!("run {run}: decode of the default (strips, auto) file into rgb8"),
            &decoder_names,
            &decode_stats,
            megapixels,
        );
    }
}
