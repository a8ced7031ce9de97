//! Every encoder backend of this build under the same checks (issue 40): files that zune-jpeg
//! and libjpeg-turbo's `djpeg` decode; odd sizes, padded rows and every pixel format; strip
//! files pixel-identical to the unsplit encode and independent of the thread count; the same
//! refusals with the same errors; the output bound; and, on the real frames, decoded pixels
//! within a stated PSNR of jpeg-encoder's.
//!
//! Run with every backend: `cargo test -p streamwire-codec --features
//! turbo,libjpeg-turbo-rs,rusty_jpeg --test backends` (CI does). `djpeg` comes from
//! libjpeg-turbo-progs; without it the djpeg checks skip, saying so, unless
//! `STREAMWIRE_REQUIRE=all`, where its absence fails.

mod common;

use std::num::NonZeroUsize;
use streamwire_testdata::djpeg;

use common::{Rng, smooth_image};
use streamwire_codec::jpeg::{
    Backend, ChromaDownsampling, DecodeLimits, EncodeOptions, JpegDecoder, JpegError, PixelFormat,
    PixelsRef, Subsampling, Threads, encode, max_encoded_len, psnr,
};
use streamwire_testdata as data;

/// The backends this build has.
fn backends() -> Vec<Backend> {
    Backend::ALL
        .into_iter()
        .filter(|backend| backend.is_available())
        .collect()
}

fn fixed(count: usize) -> Threads {
    Threads::Fixed(NonZeroUsize::new(count).unwrap_or(NonZeroUsize::MIN))
}

/// A smooth image with noise on top, so entropy data has 0xFF bytes and real content.
fn noisy_image(width: u32, height: u32, format: PixelFormat, step: usize) -> Vec<u8> {
    let bpp = format.bytes_per_pixel();
    let mut data = smooth_image(width, height, bpp, step);
    let mut rng = Rng::new(u64::from(width * 31 + height));
    for y in 0..height as usize {
        for byte in &mut data[y * step..y * step + width as usize * bpp] {
            *byte = byte.wrapping_add((rng.next_u64() % 48) as u8);
        }
    }
    data
}

/// 1x1, 17x9, heights that are no multiple of 8 or 16, one and several MCU rows.
const SIZES: [(u32, u32); 7] = [
    (1, 1),
    (17, 9),
    (8, 8),
    (33, 17),
    (16, 31),
    (57, 50),
    (130, 65),
];

const SUBSAMPLINGS: [Subsampling; 3] = [Subsampling::S420, Subsampling::S422, Subsampling::S444];

fn options(backend: Backend, subsampling: Subsampling, threads: Threads) -> EncodeOptions {
    EncodeOptions {
        subsampling,
        threads,
        backend,
        drop_alpha: true,
        ..EncodeOptions::default()
    }
}

/// The format a file decodes to for comparison: greyscale stays greyscale.
fn out_format(format: PixelFormat) -> PixelFormat {
    if format == PixelFormat::Mono8 {
        PixelFormat::Mono8
    } else {
        PixelFormat::Rgb8
    }
}

/// Every backend, every pixel format and subsampling, odd sizes, packed and padded rows,
/// unsplit and in strips: zune-jpeg decodes each file to its size, djpeg decodes it to the
/// same number of samples within a few levels of zune-jpeg (their IDCT and chroma upsampling
/// differ), and the file stays within `max_encoded_len`.
#[test]
fn every_backend_decodes_with_zune_jpeg_and_djpeg() {
    let decoder = JpegDecoder::default().with_threads(Threads::Unsplit);
    let mut djpeg_checked = 0;
    for backend in backends() {
        for format in PixelFormat::ALL {
            for subsampling in SUBSAMPLINGS {
                for (index, (width, height)) in SIZES.into_iter().enumerate() {
                    let bpp = format.bytes_per_pixel();
                    let step = width as usize * bpp + if index % 2 == 0 { 0 } else { 7 };
                    let data = noisy_image(width, height, format, step);
                    let pixels = PixelsRef::new(width, height, step, format, &data).unwrap();
                    for threads in [Threads::Unsplit, fixed(2)] {
                        let label =
                            format!("{backend} {format} {subsampling} {width}x{height} {threads}");
                        let opts = options(backend, subsampling, threads);
                        let jpeg =
                            encode(&pixels, &opts).unwrap_or_else(|e| panic!("{label}: {e}"));
                        assert_eq!((jpeg.width, jpeg.height), (width, height), "{label}");
                        assert_eq!(jpeg.greyscale, format == PixelFormat::Mono8, "{label}");
                        assert!(
                            jpeg.data.len() <= max_encoded_len(width, height, format, &opts),
                            "{label}: over the output bound"
                        );
                        let decoded = decoder
                            .decode(&jpeg.data, out_format(format))
                            .unwrap_or_else(|e| panic!("{label}: zune-jpeg: {e}"));
                        assert_eq!((decoded.width, decoded.height), (width, height), "{label}");
                        // djpeg on a subset: one process per file is slow.
                        if threads == Threads::Unsplit && index % 3 == 0 {
                            let Some(samples) = djpeg::decode(&jpeg.data, &label) else {
                                continue;
                            };
                            assert_eq!(samples.len(), decoded.data.len(), "{label}");
                            let worst = samples
                                .iter()
                                .zip(&decoded.data)
                                .map(|(a, b)| a.abs_diff(*b))
                                .max()
                                .unwrap_or(0);
                            assert!(worst <= 24, "{label}: djpeg and zune differ by {worst}");
                            djpeg_checked += 1;
                        }
                    }
                }
            }
        }
    }
    println!("djpeg checked {djpeg_checked} files");
}

/// Per backend: the strip encoder's files decode (zune-jpeg sequential and parallel, and
/// djpeg) to exactly the pixels of that backend's unsplit encode, and their bytes do not
/// depend on the thread count.
#[test]
fn strip_files_are_pixel_identical_to_unsplit_per_backend() {
    let sequential = JpegDecoder::default().with_threads(Threads::Unsplit);
    let parallel = JpegDecoder::default().with_threads(fixed(3));
    for backend in backends() {
        for format in [PixelFormat::Rgb8, PixelFormat::Bgra8, PixelFormat::Mono8] {
            for subsampling in SUBSAMPLINGS {
                for (width, height) in [(17, 9), (33, 17), (57, 131), (320, 241)] {
                    let bpp = format.bytes_per_pixel();
                    let step = width as usize * bpp + if height % 2 == 0 { 3 } else { 0 };
                    let data = noisy_image(width, height, format, step);
                    let pixels = PixelsRef::new(width, height, step, format, &data).unwrap();
                    let label = format!("{backend} {format} {subsampling} {width}x{height}");
                    let with = |threads| {
                        encode(&pixels, &options(backend, subsampling, threads))
                            .unwrap_or_else(|e| panic!("{label}: {e}"))
                    };
                    let unsplit = with(Threads::Unsplit);
                    let split = with(fixed(1));
                    for threads in [fixed(2), fixed(5), Threads::Auto] {
                        assert!(with(threads) == split, "{label} {threads}: bytes differ");
                    }
                    let expected = sequential
                        .decode(&unsplit.data, out_format(format))
                        .unwrap();
                    let decoded = sequential.decode(&split.data, out_format(format)).unwrap();
                    assert!(decoded == expected, "{label}: zune pixels differ");
                    let decoded = parallel.decode(&split.data, out_format(format)).unwrap();
                    assert!(decoded == expected, "{label}: parallel decode differs");
                    if let (Some(a), Some(b)) = (
                        djpeg::decode(&unsplit.data, &format!("{label} unsplit")),
                        djpeg::decode(&split.data, &format!("{label} split")),
                    ) {
                        assert!(a == b, "{label}: djpeg pixels differ");
                    }
                }
            }
        }
    }
}

/// Every backend refuses the same inputs with the same errors; the candidates, which always
/// average chroma, refuse `TopLeft`; a backend missing from the build is refused with its own
/// error naming its feature.
#[test]
fn every_backend_refuses_the_same_inputs_alike() {
    let data = noisy_image(16, 16, PixelFormat::Rgba8, 64);
    let pixels = PixelsRef::new(16, 16, 64, PixelFormat::Rgba8, &data).unwrap();
    for backend in Backend::ALL {
        let base = EncodeOptions {
            backend,
            drop_alpha: true,
            ..EncodeOptions::default()
        };
        if !backend.is_available() {
            let error = encode(&pixels, &base).unwrap_err();
            assert!(matches!(error, JpegError::BackendUnavailable { backend: b } if b == backend));
            let feature = backend.feature().unwrap_or_default();
            assert!(error.to_string().contains(feature), "{error}");
            continue;
        }
        for quality in [0, 101, 255] {
            assert!(
                matches!(
                    encode(&pixels, &EncodeOptions { quality, ..base }),
                    Err(JpegError::InvalidQuality { quality: q }) if q == quality
                ),
                "{backend} quality {quality}"
            );
        }
        assert!(matches!(
            encode(
                &pixels,
                &EncodeOptions {
                    max_width: Some(0),
                    ..base
                }
            ),
            Err(JpegError::InvalidMaxWidth)
        ));
        assert!(matches!(
            encode(
                &pixels,
                &EncodeOptions {
                    drop_alpha: false,
                    ..base
                }
            ),
            Err(JpegError::AlphaNotAllowed {
                format: PixelFormat::Rgba8
            })
        ));
        let top_left = EncodeOptions {
            chroma_downsampling: ChromaDownsampling::TopLeft,
            ..base
        };
        if backend.can_keep_top_left_chroma() {
            assert!(encode(&pixels, &top_left).is_ok(), "{backend}");
        } else {
            assert!(
                matches!(
                    encode(&pixels, &top_left),
                    Err(JpegError::BackendUnsupported { backend: b, .. }) if b == backend
                ),
                "{backend}"
            );
        }
        // Quality 1 and 100 and a downscale all encode.
        for quality in [1, 100] {
            let jpeg = encode(&pixels, &EncodeOptions { quality, ..base }).unwrap();
            assert_eq!((jpeg.width, jpeg.height), (16, 16), "{backend} q{quality}");
        }
        let small = encode(
            &pixels,
            &EncodeOptions {
                max_width: Some(5),
                ..base
            },
        )
        .unwrap();
        assert_eq!((small.width, small.height), (5, 5), "{backend}");
    }
}

/// The worst content for size (uniform noise at quality 100, 4:4:4, strips) stays within
/// `max_encoded_len` for every backend.
#[test]
fn noise_at_quality_100_stays_within_the_output_bound() {
    let mut rng = Rng::new(40);
    let (width, height) = (67u32, 45u32);
    let data: Vec<u8> = (0..width * height * 3)
        .map(|_| rng.next_u64() as u8)
        .collect();
    let pixels =
        PixelsRef::new(width, height, width as usize * 3, PixelFormat::Rgb8, &data).unwrap();
    for backend in backends() {
        for threads in [Threads::Unsplit, fixed(2)] {
            let opts = EncodeOptions {
                quality: 100,
                subsampling: Subsampling::S444,
                threads,
                backend,
                ..EncodeOptions::default()
            };
            let jpeg = encode(&pixels, &opts).unwrap();
            let bound = max_encoded_len(width, height, PixelFormat::Rgb8, &opts);
            assert!(
                jpeg.data.len() <= bound,
                "{backend}: {} > {bound}",
                jpeg.data.len()
            );
            // Noise at q100 is larger than the raw pixels: the bound is not vacuous here.
            assert!(
                jpeg.data.len() > data.len(),
                "{backend}: {}",
                jpeg.data.len()
            );
        }
    }
}

/// How far under jpeg-encoder's PSNR (against the source pixels) a backend's decoded output
/// may be, frame by frame, on the real frames at the default options (q75 4:2:0, averaged
/// chroma, strips). Measured on the 280 frames unsplit (`examples/measure_backends.rs time`),
/// mean PSNR: jpeg-encoder 49.738 dB, libjpeg-turbo 49.739, libjpeg-turbo-rs 49.739 (the same
/// bytes as libjpeg-turbo), rusty_jpeg 49.565 (0.17 dB under). 0.5 dB is room for rounding
/// differences in the DCT and colour conversion, not for a broken quantiser, colour
/// conversion or chroma placement (those cost whole dBs).
const PSNR_TOLERANCE_DB: f64 = 0.5;

/// On 28 real frames spread over the 280: every backend's decoded output is within
/// [`PSNR_TOLERANCE_DB`] of jpeg-encoder's, and its size within 10% of jpeg-encoder's.
#[test]
fn real_frames_decode_within_the_stated_psnr_of_jpeg_encoder() {
    if !streamwire_testdata::data_or_skip() {
        return;
    }
    let decoder = JpegDecoder::default();
    let mut source = Vec::new();
    let mut decoded = Vec::new();
    for index in (0..data::COCKATOO_FRAMES).step_by(10) {
        let file = data::read(&data::cockatoo_frame(index));
        decoder
            .decode_into(&file, PixelFormat::Rgb8, &mut source)
            .unwrap();
        let pixels = PixelsRef::new(1280, 720, 1280 * 3, PixelFormat::Rgb8, &source).unwrap();
        let mut measure = |backend| {
            let opts = EncodeOptions {
                backend,
                ..EncodeOptions::default()
            };
            let jpeg = encode(&pixels, &opts).unwrap();
            decoder
                .decode_into(&jpeg.data, PixelFormat::Rgb8, &mut decoded)
                .unwrap();
            (psnr(&source, &decoded).unwrap(), jpeg.data.len() as f64)
        };
        let (reference_db, reference_bytes) = measure(Backend::JpegEncoder);
        for backend in backends() {
            let (db, bytes) = measure(backend);
            assert!(
                db >= reference_db - PSNR_TOLERANCE_DB,
                "frame {index} {backend}: {db:.3} dB against jpeg-encoder's {reference_db:.3}"
            );
            assert!(
                (bytes / reference_bytes - 1.0).abs() < 0.10,
                "frame {index} {backend}: {bytes} bytes against jpeg-encoder's {reference_bytes}"
            );
        }
    }
}

/// The sizes the decoder's fuzz corpus (`fuzz/corpus/decode`) declares, used as encoder input
/// sizes for every backend, format and subsampling, unsplit and in strips: each encodes and
/// decodes back to its size. Declared sizes over 4 megapixels (the hostile 16000x16000 and
/// 60000x60000 headers) are encoded as their first 16 rows, RGB 4:2:0 only (time).
#[test]
fn decoder_fuzz_corpus_sizes_encode_with_every_backend() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/decode");
    let mut sizes = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("corpus directory") {
        let input = std::fs::read(entry.expect("corpus entry").path()).expect("corpus file");
        // A corpus input is a selector byte (the output format) and then the file. Its frame
        // header is read directly: the decoder refuses the hostile ones before their size.
        if let Some((width, height)) = declared_size(input.get(1..).unwrap_or_default()) {
            let height = if u64::from(width) * u64::from(height) > 4 << 20 {
                height.min(16)
            } else {
                height
            };
            sizes.insert((width, height));
        }
    }
    println!("sizes: {sizes:?}");
    assert!(sizes.len() >= 6, "only {sizes:?}");
    // Wider than the default limits allow: the hostile headers' widths.
    let decoder = JpegDecoder::new(DecodeLimits {
        max_width: 65535,
        max_height: 65535,
        max_decoded_bytes: 1 << 30,
        ..DecodeLimits::default()
    })
    .with_threads(Threads::Unsplit);
    for (width, height) in sizes {
        let wide = width > 4096;
        let formats: &[PixelFormat] = if wide {
            &[PixelFormat::Rgb8]
        } else {
            &PixelFormat::ALL
        };
        let subsamplings: &[Subsampling] = if wide {
            &[Subsampling::S420]
        } else {
            &SUBSAMPLINGS
        };
        for backend in backends() {
            for &format in formats {
                for &subsampling in subsamplings {
                    let step = width as usize * format.bytes_per_pixel();
                    let data = noisy_image(width, height, format, step);
                    let pixels = PixelsRef::new(width, height, step, format, &data).unwrap();
                    for threads in [Threads::Unsplit, Threads::Auto] {
                        let label =
                            format!("{backend} {format} {subsampling} {width}x{height} {threads}");
                        let opts = options(backend, subsampling, threads);
                        let jpeg =
                            encode(&pixels, &opts).unwrap_or_else(|e| panic!("{label}: {e}"));
                        let decoded = decoder.decode(&jpeg.data, out_format(format)).unwrap();
                        assert_eq!((decoded.width, decoded.height), (width, height), "{label}");
                    }
                }
            }
        }
    }
}

/// The (width, height) of the first SOF0/SOF1/SOF2 frame header in `file`, if any and not 0.
fn declared_size(file: &[u8]) -> Option<(u32, u32)> {
    let at = file
        .windows(2)
        .position(|w| w[0] == 0xFF && (0xC0..=0xC2).contains(&w[1]))?;
    let field = |offset: usize| -> Option<u32> {
        let bytes = file.get(at + offset..at + offset + 2)?;
        Some(u32::from(u16::from_be_bytes([bytes[0], bytes[1]])))
    };
    let (height, width) = (field(5)?, field(7)?);
    (width > 0 && height > 0).then_some((width, height))
}
