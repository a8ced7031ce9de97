//! Strip-parallel encoding: the stitched file decodes to the pixels of the unsplit encode, in
//! zune-jpeg and in libjpeg-turbo's `djpeg`; its bytes do not depend on the thread count.

mod common;

use std::num::NonZeroUsize;
use streamwire_testdata::djpeg;

use common::{Rng, smooth_image};
use streamwire_codec::jpeg::{
    EncodeOptions, JpegDecoder, PixelFormat, PixelsRef, Subsampling, Threads, encode,
};

fn fixed(count: usize) -> Threads {
    Threads::Fixed(NonZeroUsize::new(count).unwrap_or(NonZeroUsize::MIN))
}

/// A smooth image with noise on top, so entropy data has some 0xFF bytes and real content.
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

/// (width, height): one-strip images, heights not a multiple of 16 (or 8), odd widths.
const SIZES: [(u32, u32); 9] = [
    (1, 1),
    (7, 5),
    (16, 16),
    (33, 17),
    (64, 48),
    (100, 100),
    (130, 8),
    (57, 131),
    (320, 241),
];

struct Case {
    format: PixelFormat,
    subsampling: Subsampling,
}

const CASES: [Case; 5] = [
    Case {
        format: PixelFormat::Rgb8,
        subsampling: Subsampling::S420,
    },
    Case {
        format: PixelFormat::Bgr8,
        subsampling: Subsampling::S444,
    },
    Case {
        format: PixelFormat::Rgb8,
        subsampling: Subsampling::S422,
    },
    Case {
        format: PixelFormat::Mono8,
        subsampling: Subsampling::S420,
    },
    Case {
        format: PixelFormat::Bgra8,
        subsampling: Subsampling::S420,
    },
];

fn options(case: &Case, threads: Threads) -> EncodeOptions {
    EncodeOptions {
        subsampling: case.subsampling,
        threads,
        drop_alpha: true,
        ..EncodeOptions::default()
    }
}

/// Restart markers (`FF D0..=D7`) in a file, in order.
fn restart_markers(file: &[u8]) -> Vec<u8> {
    file.windows(2)
        .filter(|w| w[0] == 0xFF && (0xD0..=0xD7).contains(&w[1]))
        .map(|w| w[1] - 0xD0)
        .collect()
}

#[test]
fn strips_decode_to_the_pixels_of_the_unsplit_encode() {
    let decoder = JpegDecoder::default().with_threads(Threads::Unsplit);
    for case in &CASES {
        for (width, height) in SIZES {
            // Padded rows for half of the sizes, packed for the rest.
            let bpp = case.format.bytes_per_pixel();
            let step = width as usize * bpp + if height % 2 == 0 { 5 } else { 0 };
            let data = noisy_image(width, height, case.format, step);
            let pixels = PixelsRef::new(width, height, step, case.format, &data).unwrap();
            let label = format!("{}x{height} {} {}", width, case.format, case.subsampling);

            let unsplit = encode(&pixels, &options(case, Threads::Unsplit)).unwrap();
            assert!(restart_markers(&unsplit.data).is_empty(), "{label}");
            let out_format = if case.format == PixelFormat::Mono8 {
                PixelFormat::Mono8
            } else {
                PixelFormat::Rgb8
            };
            let expected = decoder.decode(&unsplit.data, out_format).unwrap();

            let split = encode(&pixels, &options(case, fixed(1))).unwrap();
            let (_, mcu_height) = match (case.format, case.subsampling) {
                (PixelFormat::Mono8, _) | (_, Subsampling::S444 | Subsampling::S422) => (8, 8),
                _ => (16, 16),
            };
            let strips = height.div_ceil(mcu_height) as usize;
            let markers: Vec<u8> = (0..strips - 1).map(|i| (i % 8) as u8).collect();
            assert_eq!(restart_markers(&split.data), markers, "{label}");
            let decoded = decoder.decode(&split.data, out_format).unwrap();
            assert_eq!(
                decoded, expected,
                "{label}: pixels differ from the unsplit encode"
            );

            for threads in [fixed(2), fixed(3), fixed(64), Threads::Auto] {
                let again = encode(&pixels, &options(case, threads)).unwrap();
                assert_eq!(again, split, "{label} at {threads} threads: bytes differ");
            }
        }
    }
}

#[test]
fn strips_cost_little_size_on_a_large_image() {
    let (width, height) = (1280, 720);
    let data = noisy_image(width, height, PixelFormat::Rgb8, width as usize * 3);
    let pixels =
        PixelsRef::new(width, height, width as usize * 3, PixelFormat::Rgb8, &data).unwrap();
    let unsplit = encode(
        &pixels,
        &EncodeOptions {
            threads: Threads::Unsplit,
            ..EncodeOptions::default()
        },
    )
    .unwrap();
    let split = encode(&pixels, &EncodeOptions::default()).unwrap();
    let ratio = split.data.len() as f64 / unsplit.data.len() as f64;
    println!(
        "{} -> {} bytes ({ratio:.4})",
        unsplit.data.len(),
        split.data.len()
    );
    assert!(ratio <= 1.01, "strips add {ratio}");
}

#[test]
fn djpeg_decodes_strips_to_the_pixels_of_the_unsplit_encode() {
    for case in &CASES {
        for (width, height) in [(1, 1), (33, 17), (57, 131), (320, 241)] {
            let step = width as usize * case.format.bytes_per_pixel();
            let data = noisy_image(width, height, case.format, step);
            let pixels = PixelsRef::new(width, height, step, case.format, &data).unwrap();
            let label =
                format!("{width}x{height}-{}-{}", case.format, case.subsampling).replace(':', "");
            let unsplit = encode(&pixels, &options(case, Threads::Unsplit)).unwrap();
            let split = encode(&pixels, &options(case, fixed(2))).unwrap();
            let Some(expected) = djpeg::decode(&unsplit.data, &format!("{label}-unsplit")) else {
                return;
            };
            let Some(decoded) = djpeg::decode(&split.data, &format!("{label}-split")) else {
                return;
            };
            assert_eq!(decoded.len(), expected.len(), "{label}");
            assert!(decoded == expected, "{label}: djpeg pixels differ");

            // zune-jpeg and libjpeg-turbo implement the IDCT and chroma upsampling
            // differently; they agree within a few levels.
            let out_format = if case.format == PixelFormat::Mono8 {
                PixelFormat::Mono8
            } else {
                PixelFormat::Rgb8
            };
            let zune = JpegDecoder::default()
                .decode(&split.data, out_format)
                .unwrap();
            let worst = zune
                .data
                .iter()
                .zip(&decoded)
                .map(|(a, b)| a.abs_diff(*b))
                .max()
                .unwrap_or(0);
            assert!(worst <= 8, "{label}: zune-jpeg and djpeg differ by {worst}");
        }
    }
}

const OUT_FORMATS: [PixelFormat; 5] = PixelFormat::ALL;

#[test]
fn parallel_decode_equals_sequential_decode() {
    let sequential = JpegDecoder::default().with_threads(Threads::Unsplit);
    for case in &CASES {
        for (width, height) in SIZES {
            let step = width as usize * case.format.bytes_per_pixel();
            let data = noisy_image(width, height, case.format, step);
            let pixels = PixelsRef::new(width, height, step, case.format, &data).unwrap();
            let label = format!("{width}x{height} {} {}", case.format, case.subsampling);
            let file = encode(&pixels, &options(case, fixed(1))).unwrap().data;
            let strips = sequential.restart_strips(&file).unwrap();
            let (_, mcu_height) = match (case.format, case.subsampling) {
                (PixelFormat::Mono8, _) | (_, Subsampling::S444 | Subsampling::S422) => (8, 8),
                _ => (16, 16),
            };
            let expected_strips = height.div_ceil(mcu_height) as usize;
            assert_eq!(
                strips,
                (expected_strips > 1).then_some(expected_strips),
                "{label}"
            );
            for format in OUT_FORMATS {
                let expected = sequential.decode(&file, format).unwrap();
                for threads in [fixed(2), fixed(3), fixed(64), Threads::Auto] {
                    let decoder = JpegDecoder::default().with_threads(threads);
                    let decoded = decoder.decode(&file, format).unwrap();
                    assert!(
                        decoded == expected,
                        "{label} as {format} at {threads} threads: differs from sequential"
                    );
                }
            }
        }
    }
}

#[test]
fn parallel_decode_of_real_frames_equals_sequential_decode() {
    if !streamwire_testdata::data_or_skip() {
        return;
    }
    use streamwire_testdata as testdata;
    let sequential = JpegDecoder::default().with_threads(Threads::Unsplit);
    let parallel = JpegDecoder::default().with_threads(fixed(2));
    for index in [0, 140, testdata::COCKATOO_FRAMES - 1] {
        let source = testdata::read(&testdata::cockatoo_frame(index));
        let rgb = sequential.decode(&source, PixelFormat::Rgb8).unwrap();
        let pixels = PixelsRef::new(
            rgb.width,
            rgb.height,
            rgb.width as usize * 3,
            PixelFormat::Rgb8,
            &rgb.data,
        )
        .unwrap();
        for subsampling in [Subsampling::S420, Subsampling::S444] {
            let options = EncodeOptions {
                subsampling,
                ..EncodeOptions::default()
            };
            let file = encode(&pixels, &options).unwrap().data;
            assert_eq!(
                sequential.restart_strips(&file).unwrap(),
                Some(
                    720 / if subsampling == Subsampling::S420 {
                        16
                    } else {
                        8
                    }
                )
            );
            for format in [PixelFormat::Rgb8, PixelFormat::Bgra8, PixelFormat::Mono8] {
                let expected = sequential.decode(&file, format).unwrap();
                let decoded = parallel.decode(&file, format).unwrap();
                assert!(decoded == expected, "frame {index} {subsampling} {format}");
            }
        }
    }
}

/// Without the `turbo` feature the backend is refused with its own error.
#[cfg(not(feature = "turbo"))]
#[test]
fn turbo_backend_is_refused_without_the_feature() {
    use streamwire_codec::jpeg::{Backend, JpegError};
    let data = noisy_image(16, 16, PixelFormat::Rgb8, 48);
    let pixels = PixelsRef::new(16, 16, 48, PixelFormat::Rgb8, &data).unwrap();
    let options = EncodeOptions {
        backend: Backend::Turbo,
        ..EncodeOptions::default()
    };
    assert!(!Backend::Turbo.is_available());
    assert!(matches!(
        encode(&pixels, &options),
        Err(JpegError::BackendUnavailable {
            backend: Backend::Turbo
        })
    ));
}

/// libjpeg-turbo strips decode to the pixels of its unsplit encode, in zune-jpeg (sequential
/// and parallel) and djpeg, and their bytes do not depend on the thread count.
#[cfg(feature = "turbo")]
#[test]
fn turbo_strips_decode_to_the_pixels_of_its_unsplit_encode() {
    use streamwire_codec::jpeg::{Backend, ChromaDownsampling, JpegError};
    let sequential = JpegDecoder::default().with_threads(Threads::Unsplit);
    for case in &CASES {
        for (width, height) in SIZES {
            let bpp = case.format.bytes_per_pixel();
            let step = width as usize * bpp + if height % 2 == 0 { 3 } else { 0 };
            let data = noisy_image(width, height, case.format, step);
            let pixels = PixelsRef::new(width, height, step, case.format, &data).unwrap();
            let label = format!(
                "turbo {width}x{height} {} {}",
                case.format, case.subsampling
            );
            let turbo = |threads| EncodeOptions {
                backend: Backend::Turbo,
                ..options(case, threads)
            };
            let unsplit = encode(&pixels, &turbo(Threads::Unsplit)).unwrap();
            let split = encode(&pixels, &turbo(fixed(1))).unwrap();
            for threads in [fixed(2), fixed(5), Threads::Auto] {
                assert_eq!(encode(&pixels, &turbo(threads)).unwrap(), split, "{label}");
            }
            let out_format = if case.format == PixelFormat::Mono8 {
                PixelFormat::Mono8
            } else {
                PixelFormat::Rgb8
            };
            let expected = sequential.decode(&unsplit.data, out_format).unwrap();
            let decoded = sequential.decode(&split.data, out_format).unwrap();
            assert!(decoded == expected, "{label}: zune pixels differ");
            let parallel = JpegDecoder::default().with_threads(fixed(3));
            assert!(
                parallel.decode(&split.data, out_format).unwrap() == expected,
                "{label}: parallel decode differs"
            );
            let tag = label.replace([' ', ':'], "-");
            if let (Some(a), Some(b)) = (
                djpeg::decode(&unsplit.data, &format!("{tag}-unsplit")),
                djpeg::decode(&split.data, &format!("{tag}-split")),
            ) {
                assert!(a == b, "{label}: djpeg pixels differ");
            }
        }
    }
    let data = noisy_image(16, 16, PixelFormat::Rgb8, 48);
    let pixels = PixelsRef::new(16, 16, 48, PixelFormat::Rgb8, &data).unwrap();
    let top_left = EncodeOptions {
        backend: Backend::Turbo,
        chroma_downsampling: ChromaDownsampling::TopLeft,
        ..EncodeOptions::default()
    };
    assert!(matches!(
        encode(&pixels, &top_left),
        Err(JpegError::BackendUnsupported { .. })
    ));
}
