//! Criterion benchmarks of the codec engines.
//!
//! ```text
//! cargo bench -p streamwire-codec -- --warm-up-time 1 --measurement-time 3
//! cargo bench -p streamwire-codec --features turbo -- strips_ --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Uses the real cockatoo frame and depth PNG when the shared data directory exists, else a
//! synthetic 1280x720 gradient with noise and a synthetic depth ramp (it prints which).

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::num::NonZeroUsize;

use criterion::{Criterion, criterion_group, criterion_main};
use streamwire_codec::jpeg::{
    Backend, ChromaDownsampling, EncodeOptions, JpegDecoder, PixelFormat, PixelsRef, Threads,
    encode,
};
use streamwire_codec::lossless::{compress_rows, decompress_exact};
use streamwire_testdata as data;

const WIDTH: u32 = 1280;
const HEIGHT: u32 = 720;

/// Packed RGB pixels of a 1280x720 frame.
fn frame() -> Vec<u8> {
    let dir = data::dir();
    let path = dir.join(data::cockatoo_frame(0));
    match std::fs::read(&path) {
        Ok(file) => {
            println!("bench input: real frame {}", path.display());
            let decoded = JpegDecoder::default()
                .decode(&file, PixelFormat::Rgb8)
                .expect("decode real frame");
            assert_eq!((decoded.width, decoded.height), (WIDTH, HEIGHT));
            decoded.data
        }
        Err(_) => {
            println!(
                "bench input: synthetic gradient + noise (no data at {})",
                dir.display()
            );
            common::synthetic_frame()
        }
    }
}

/// (width, height, little-endian u16 rows) of a depth frame.
fn depth() -> (u32, u32, Vec<u8>) {
    let dir = data::dir();
    match dir.is_dir() {
        true => {
            let capture = data::RGBD_CAPTURES[0];
            println!("bench input: real depth {}", data::depth_png(capture));
            let (width, height, mm) = data::read_depth_mm(capture);
            (
                width,
                height,
                mm.iter().flat_map(|v| v.to_le_bytes()).collect(),
            )
        }
        false => {
            println!(
                "bench input: synthetic depth ramp (no data at {})",
                dir.display()
            );
            let mut rng = common::Rng::new(3);
            let data = (0..640 * 480u32)
                .flat_map(|i| (800 + (i % 640) as u16 + (rng.next_u64() % 4) as u16).to_le_bytes())
                .collect();
            (640, 480, data)
        }
    }
}

fn options(chroma: ChromaDownsampling) -> EncodeOptions {
    EncodeOptions {
        chroma_downsampling: chroma,
        ..EncodeOptions::default()
    }
}

fn jpeg_benches(c: &mut Criterion) {
    let rgb = frame();
    let step = WIDTH as usize * 3;
    let pixels = PixelsRef::new(WIDTH, HEIGHT, step, PixelFormat::Rgb8, &rgb).expect("layout");

    let mut group = c.benchmark_group("encode_720p_q75_420");
    for chroma in [ChromaDownsampling::Average, ChromaDownsampling::TopLeft] {
        group.bench_function(chroma.to_string(), |b| {
            b.iter(|| encode(black_box(&pixels), &options(chroma)).expect("encode"));
        });
    }
    group.finish();

    // Rows with 64 bytes of padding: the engine feeds them row by row to jpeg-encoder
    // (`ImageBuffer`, our scalar colour conversion) versus packing them into a new buffer and
    // encoding that (jpeg-encoder's AVX2 colour conversion plus a 2.7 MB copy).
    let padded_step = step + 64;
    let padded: Vec<u8> = rgb
        .chunks_exact(step)
        .flat_map(|row| row.iter().copied().chain(std::iter::repeat_n(0, 64)))
        .collect();
    let padded_pixels =
        PixelsRef::new(WIDTH, HEIGHT, padded_step, PixelFormat::Rgb8, &padded).expect("layout");
    let default_options = EncodeOptions::default();
    let mut group = c.benchmark_group("encode_720p_padded_rows");
    group.bench_function("packed_input_for_reference", |b| {
        b.iter(|| encode(black_box(&pixels), &default_options).expect("encode"));
    });
    group.bench_function("engine", |b| {
        b.iter(|| encode(black_box(&padded_pixels), &default_options).expect("encode"));
    });
    group.bench_function("pack_then_encode", |b| {
        b.iter(|| {
            let packed: Vec<u8> = padded_pixels.rows().flatten().copied().collect();
            let pixels =
                PixelsRef::new(WIDTH, HEIGHT, step, PixelFormat::Rgb8, &packed).expect("layout");
            encode(black_box(&pixels), &default_options).expect("encode")
        });
    });
    group.finish();

    let mut group = c.benchmark_group("encode_720p_downscale_to_640");
    let downscale = EncodeOptions {
        max_width: Some(640),
        ..EncodeOptions::default()
    };
    group.bench_function("bilinear_then_encode", |b| {
        b.iter(|| encode(black_box(&pixels), &downscale).expect("encode"));
    });
    group.finish();

    let jpeg = encode(&pixels, &EncodeOptions::default()).expect("encode");
    let decoder = JpegDecoder::default();
    let mut group = c.benchmark_group("decode_720p_rgb8");
    group.bench_function("fresh_vec", |b| {
        b.iter(|| {
            decoder
                .decode(black_box(&jpeg.data), PixelFormat::Rgb8)
                .expect("decode")
        });
    });
    let mut buffer = Vec::new();
    group.bench_function("decode_into_reused", |b| {
        b.iter(|| {
            decoder
                .decode_into(black_box(&jpeg.data), PixelFormat::Rgb8, &mut buffer)
                .expect("decode")
        });
    });
    group.finish();

    let many_scans = common::craft::many_scans(1200);
    let huge = common::craft::huge_header(60000, 60000, 118);
    let tiny_16k = common::craft::huge_header(16000, 16000, 118);
    let mut group = c.benchmark_group("refuse");
    group.bench_function("1200_scans_38kb", |b| {
        b.iter(|| {
            decoder
                .decode(black_box(&many_scans), PixelFormat::Rgb8)
                .expect_err("refuse")
        });
    });
    group.bench_function("header_60000x60000", |b| {
        b.iter(|| {
            decoder
                .decode(black_box(&huge), PixelFormat::Rgb8)
                .expect_err("refuse")
        });
    });
    group.bench_function("258_bytes_16000x16000_mono", |b| {
        b.iter(|| {
            decoder
                .decode(black_box(&tiny_16k), PixelFormat::Mono8)
                .expect_err("refuse")
        });
    });
    group.finish();
}

fn zstd_benches(c: &mut Criterion) {
    let (width, _height, data) = depth();
    let row = width as usize * 2;
    let mut group = c.benchmark_group("zstd_depth");
    for level in [1, 3] {
        let frame = compress_rows(data.chunks_exact(row), data.len(), level).expect("compress");
        group.bench_function(format!("compress_level_{level}"), |b| {
            b.iter(|| {
                compress_rows(black_box(&data).chunks_exact(row), data.len(), level)
                    .expect("compress")
            });
        });
        group.bench_function(format!("decompress_level_{level}"), |b| {
            b.iter(|| decompress_exact(black_box(&frame), data.len()).expect("decompress"));
        });
    }
    group.finish();
}

/// Strip-parallel encode and parallel decode side by side with libjpeg-turbo (`turbojpeg`,
/// single-threaded). Criterion runs contenders one after the other, so on a shared machine
/// prefer `examples/measure_strips.rs`, which interleaves them frame by frame.
fn strip_benches(c: &mut Criterion) {
    let rgb = frame();
    let pixels =
        PixelsRef::new(WIDTH, HEIGHT, WIDTH as usize * 3, PixelFormat::Rgb8, &rgb).expect("layout");
    let fixed = |n: usize| Threads::Fixed(NonZeroUsize::new(n).expect("nonzero"));
    for quality in [75u8, 80] {
        let mut group = c.benchmark_group(format!("strips_encode_720p_q{quality}_420"));
        let mut contenders = vec![
            (
                "jpeg_encoder_unsplit",
                Threads::Unsplit,
                Backend::JpegEncoder,
            ),
            ("jpeg_encoder_strips_1", fixed(1), Backend::JpegEncoder),
            ("jpeg_encoder_strips_2", fixed(2), Backend::JpegEncoder),
            (
                "jpeg_encoder_strips_auto",
                Threads::Auto,
                Backend::JpegEncoder,
            ),
        ];
        if Backend::Turbo.is_available() {
            contenders.push(("turbo_backend_strips_1", fixed(1), Backend::Turbo));
            contenders.push(("turbo_backend_strips_2", fixed(2), Backend::Turbo));
        }
        for (name, threads, backend) in contenders {
            let options = EncodeOptions {
                quality,
                threads,
                backend,
                ..EncodeOptions::default()
            };
            group.bench_function(name, |b| {
                b.iter(|| encode(black_box(&pixels), &options).expect("encode"));
            });
        }
        libjpeg_turbo_encode(&mut group, quality, &rgb);
        group.finish();

        let strips = encode(
            &pixels,
            &EncodeOptions {
                quality,
                ..EncodeOptions::default()
            },
        )
        .expect("encode")
        .data;
        let mut group = c.benchmark_group(format!("strips_decode_720p_q{quality}_rgb8"));
        let mut buffer = Vec::new();
        for (name, threads) in [
            ("zune_sequential", Threads::Unsplit),
            ("zune_parallel_2", fixed(2)),
            ("zune_parallel_auto", Threads::Auto),
        ] {
            let decoder = JpegDecoder::default().with_threads(threads);
            group.bench_function(name, |b| {
                b.iter(|| {
                    decoder
                        .decode_into(black_box(&strips), PixelFormat::Rgb8, &mut buffer)
                        .expect("decode")
                });
            });
        }
        libjpeg_turbo_decode(&mut group, &strips, rgb.len());
        group.finish();
    }
}

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// libjpeg-turbo's encode beside ours (only with the `turbo` feature, which needs cmake and
/// nasm: a plain `cargo bench` builds with cargo and gcc alone).
#[cfg(feature = "turbo")]
fn libjpeg_turbo_encode(group: &mut Group<'_>, quality: u8, rgb: &[u8]) {
    let mut compressor = turbojpeg::Compressor::new().expect("turbojpeg");
    compressor.set_quality(i32::from(quality)).expect("quality");
    compressor
        .set_subsamp(turbojpeg::Subsamp::Sub2x2)
        .expect("subsampling");
    group.bench_function("libjpeg_turbo", |b| {
        b.iter(|| {
            let image = turbojpeg::Image {
                pixels: black_box(rgb),
                width: WIDTH as usize,
                pitch: WIDTH as usize * 3,
                height: HEIGHT as usize,
                format: turbojpeg::PixelFormat::RGB,
            };
            compressor.compress_to_vec(image).expect("turbo encode")
        });
    });
}

#[cfg(not(feature = "turbo"))]
fn libjpeg_turbo_encode(_: &mut Group<'_>, _: u8, _: &[u8]) {}

/// libjpeg-turbo's decode beside ours (only with the `turbo` feature).
#[cfg(feature = "turbo")]
fn libjpeg_turbo_decode(group: &mut Group<'_>, strips: &[u8], len: usize) {
    let mut decompressor = turbojpeg::Decompressor::new().expect("turbojpeg");
    let mut output = vec![0u8; len];
    group.bench_function("libjpeg_turbo", |b| {
        b.iter(|| {
            let image = turbojpeg::Image {
                pixels: output.as_mut_slice(),
                width: WIDTH as usize,
                pitch: WIDTH as usize * 3,
                height: HEIGHT as usize,
                format: turbojpeg::PixelFormat::RGB,
            };
            decompressor
                .decompress(black_box(strips), image)
                .expect("turbo decode");
        });
    });
}

#[cfg(not(feature = "turbo"))]
fn libjpeg_turbo_decode(_: &mut Group<'_>, _: &[u8], _: usize) {}

criterion_group!(benches, jpeg_benches, strip_benches, zstd_benches);
criterion_main!(benches);
