//! What `Threads` costs in CPU per frame, to choose the rule behind [`Threads::Auto`]: the
//! shipped encoder (jpeg-encoder, q75 4:2:0 average, the default options but `threads`) and
//! the shipped decoder, on the real 1280x720 cockatoo frames, cropped (320x240, 640x360),
//! whole, and tiled 2x2 (2560x1440) and 3x3 (3840x2160; at least 3 frames each).
//!
//! ```text
//! cargo run --release -p streamwire-codec --example measure_threads [-- ROUNDS [FRAMES [GAP_MS]]]
//! ```
//!
//! Contenders: `unsplit`, `auto` and fixed counts 1, 2 and 4. Per round, per size, each
//! contender encodes (then decodes) the same `FRAMES` frames (default 60) one at a time with
//! a pause of `GAP_MS` (default 2) between frames, as a camera's frames arrive: rayon's
//! workers spin for a while after a job before they sleep, and that CPU counts. The process
//! CPU clock (every thread, `CLOCK_PROCESS_CPUTIME_ID`) is read before and after the
//! contender's batch, pauses included (sleeping costs no CPU), and divided by the frames; the
//! wall time is the sum of the encode calls alone. The contenders' order rotates each
//! round, so a shared machine's load drifts over all of them alike. The table gives, per
//! size and contender, the median over rounds of CPU ms and wall ms per frame, and the CPU
//! against `unsplit` in the same round (median of the per-round ratios). Decoding reads the
//! restart-marked file (what a split encode writes), and `unsplit*` the unmarked one.
//!
//! The rule it chose: [`streamwire_codec::jpeg::AUTO_ENCODE_MIN_PIXELS_PER_PIECE`] and
//! [`streamwire_codec::jpeg::AUTO_DECODE_MIN_PIXELS_PER_PIECE`].

use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

use streamwire_codec::jpeg::{
    AUTO_DECODE_MIN_PIXELS_PER_PIECE, AUTO_ENCODE_MIN_PIXELS_PER_PIECE, EncodeOptions, JpegDecoder,
    PixelFormat, PixelsRef, Threads, encode,
};
use streamwire_testdata as data;

/// CPU time of every thread of this process so far, in ns.
fn cpu_ns() -> u64 {
    u64::try_from(cpu_time::ProcessTime::now().as_duration().as_nanos()).unwrap_or(u64::MAX)
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

fn fixed(count: usize) -> Threads {
    Threads::Fixed(NonZeroUsize::new(count).unwrap_or(NonZeroUsize::MIN))
}

/// One image size: its frames (rgb8, packed rows).
struct Size {
    name: String,
    width: u32,
    height: u32,
    frames: Vec<Vec<u8>>,
}

/// The `width x height` top-left crop of a packed 1280-wide rgb frame.
fn crop(frame: &[u8], width: u32, height: u32) -> Vec<u8> {
    let row = width as usize * 3;
    frame
        .chunks_exact(1280 * 3)
        .take(height as usize)
        .flat_map(|source| &source[..row])
        .copied()
        .collect()
}

/// `n x n` 1280x720 frames tiled, row by row.
fn tile(frames: &[&[u8]], n: usize) -> Vec<u8> {
    let row = 1280 * 3;
    let mut out = Vec::with_capacity(frames.len() * frames[0].len());
    for band in frames.chunks_exact(n) {
        for y in 0..720 {
            for frame in band {
                out.extend_from_slice(&frame[y * row..(y + 1) * row]);
            }
        }
    }
    out
}

/// Per contender, per round: (CPU ms per frame, wall ms per frame).
type Samples = Vec<Vec<(f64, f64)>>;

/// Runs `work` on every frame with `gap` between frames; (CPU ms, wall ms) per frame.
fn batch(count: usize, gap: Duration, mut work: impl FnMut(usize)) -> (f64, f64) {
    let cpu = cpu_ns();
    let mut wall = Duration::ZERO;
    for index in 0..count {
        let start = Instant::now();
        work(index);
        wall += start.elapsed();
        if !gap.is_zero() {
            std::thread::sleep(gap);
        }
    }
    let cpu_ms = cpu_ns().saturating_sub(cpu) as f64 / 1e6 / count as f64;
    (cpu_ms, wall.as_secs_f64() * 1e3 / count as f64)
}

fn print_table(title: &str, size: &Size, names: &[String], samples: &Samples) {
    let pixels = f64::from(size.width) * f64::from(size.height);
    println!(
        "{title} {} ({:.0} kpixels, {} frames; medians over {} rounds)",
        size.name,
        pixels / 1e3,
        size.frames.len(),
        samples[0].len()
    );
    for (index, name) in names.iter().enumerate() {
        let cpu: Vec<f64> = samples[index].iter().map(|s| s.0).collect();
        let wall: Vec<f64> = samples[index].iter().map(|s| s.1).collect();
        let ratio: Vec<f64> = samples[index]
            .iter()
            .zip(&samples[0])
            .map(|(s, base)| s.0 / base.0)
            .collect();
        let rounds: Vec<String> = cpu.iter().map(|c| format!("{c:.2}")).collect();
        println!(
            "  {name:<9} CPU {:6.2} ms/frame (x{:.2} of unsplit) | wall {:6.2} ms | rounds {}",
            median(&cpu),
            median(&ratio),
            median(&wall),
            rounds.join(" ")
        );
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let count: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(60);
    let gap = Duration::from_millis(args.next().and_then(|a| a.parse().ok()).unwrap_or(2));
    println!(
        "rayon pool: {} threads; {} CPUs; rule: auto splits with at least \
         {AUTO_ENCODE_MIN_PIXELS_PER_PIECE} (encode) / {AUTO_DECODE_MIN_PIXELS_PER_PIECE} \
         (decode) pixels per piece; gap {} ms",
        rayon::current_num_threads(),
        std::thread::available_parallelism().map_or(0, NonZeroUsize::get),
        gap.as_millis()
    );
    let sequential = JpegDecoder::default().with_threads(Threads::Unsplit);
    let whole: Vec<Vec<u8>> = (0..count.max(4))
        .map(|index| {
            let file = data::read(&data::cockatoo_frame(index % data::COCKATOO_FRAMES));
            sequential
                .decode(&file, PixelFormat::Rgb8)
                .expect("decode source")
                .data
        })
        .collect();
    let cropped = |width, height| Size {
        name: format!("{width}x{height}"),
        width,
        height,
        frames: whole[..count]
            .iter()
            .map(|f| crop(f, width, height))
            .collect(),
    };
    let tiled = |n: usize| {
        let frames: Vec<Vec<u8>> = (0..(count / (n * n)).max(3))
            .map(|k| {
                let parts: Vec<&[u8]> = (0..n * n)
                    .map(|i| whole[(k * n * n + i) % whole.len()].as_slice())
                    .collect();
                tile(&parts, n)
            })
            .collect();
        Size {
            name: format!("{}x{}", 1280 * n, 720 * n),
            width: 1280 * n as u32,
            height: 720 * n as u32,
            frames,
        }
    };
    let sizes = [
        cropped(320, 240),
        cropped(640, 360),
        cropped(1280, 720),
        tiled(2),
        tiled(3),
    ];
    let contenders = [
        Threads::Unsplit,
        Threads::Auto,
        fixed(1),
        fixed(2),
        fixed(4),
    ];
    let names: Vec<String> = contenders.iter().map(ToString::to_string).collect();
    let mut decode_names = names.clone();
    decode_names.insert(0, "unsplit*".into());
    for size in &sizes {
        let marked: Vec<Vec<u8>> = size
            .frames
            .iter()
            .map(|frame| {
                let pixels = PixelsRef::new(
                    size.width,
                    size.height,
                    size.width as usize * 3,
                    PixelFormat::Rgb8,
                    frame,
                )
                .expect("layout");
                let options = EncodeOptions {
                    threads: fixed(1),
                    ..EncodeOptions::default()
                };
                encode(&pixels, &options).expect("encode").data
            })
            .collect();
        let unmarked: Vec<Vec<u8>> = size
            .frames
            .iter()
            .map(|frame| {
                let pixels = PixelsRef::new(
                    size.width,
                    size.height,
                    size.width as usize * 3,
                    PixelFormat::Rgb8,
                    frame,
                )
                .expect("layout");
                let options = EncodeOptions {
                    threads: Threads::Unsplit,
                    ..EncodeOptions::default()
                };
                encode(&pixels, &options).expect("encode").data
            })
            .collect();
        let mut encodes: Samples = vec![Vec::new(); contenders.len()];
        let mut decodes: Samples = vec![Vec::new(); decode_names.len()];
        for round in 0..rounds {
            for turn in 0..contenders.len() {
                let index = (turn + round) % contenders.len();
                let options = EncodeOptions {
                    threads: contenders[index],
                    ..EncodeOptions::default()
                };
                encodes[index].push(batch(size.frames.len(), gap, |frame| {
                    let pixels = PixelsRef::new(
                        size.width,
                        size.height,
                        size.width as usize * 3,
                        PixelFormat::Rgb8,
                        &size.frames[frame],
                    )
                    .expect("layout");
                    std::hint::black_box(encode(&pixels, &options).expect("encode"));
                }));
            }
            for turn in 0..decode_names.len() {
                let index = (turn + round) % decode_names.len();
                let (threads, files) = if index == 0 {
                    (Threads::Unsplit, &unmarked)
                } else {
                    (contenders[index - 1], &marked)
                };
                let decoder = JpegDecoder::default().with_threads(threads);
                decodes[index].push(batch(files.len(), gap, |frame| {
                    std::hint::black_box(
                        decoder
                            .decode(&files[frame], PixelFormat::Rgb8)
                            .expect("decode"),
                    );
                }));
            }
        }
        print_table("encode", size, &names, &encodes);
        print_table("decode", size, &decode_names, &decodes);
    }
}
