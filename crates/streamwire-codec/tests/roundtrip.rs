//! Encode/decode round trips on synthetic images: every format, odd sizes, row padding,
//! greyscale, cross-format decodes, downscaling, and the encoder's refusals.

mod common;

use common::{pack, smooth_image};
use streamwire_codec::jpeg::{
    ChromaDownsampling, EncodeOptions, JpegDecoder, JpegError, LayoutError, PixelFormat, PixelsRef,
    Subsampling, encode,
};

/// Sizes that exercise partial 8x8 blocks and 16x16 MCUs in both directions.
const SIZES: [(u32, u32); 9] = [
    (1, 1),
    (2, 2),
    (7, 3),
    (8, 8),
    (17, 9),
    (33, 17),
    (64, 48),
    (100, 75),
    (127, 129),
];

/// Bytes of padding per row: none, less than a pixel, and more than one pixel.
const PADDINGS: [usize; 3] = [0, 1, 7];

/// (max, mean) absolute difference per sample.
fn error(a: &[u8], b: &[u8]) -> (u8, f64) {
    assert_eq!(a.len(), b.len());
    let max = a
        .iter()
        .zip(b)
        .map(|(x, y)| x.abs_diff(*y))
        .max()
        .unwrap_or(0);
    let sum: u64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| u64::from(x.abs_diff(*y)))
        .sum();
    (max, sum as f64 / a.len() as f64)
}

fn options(quality: u8, subsampling: Subsampling) -> EncodeOptions {
    EncodeOptions {
        quality,
        subsampling,
        drop_alpha: true,
        ..EncodeOptions::default()
    }
}

/// Encodes a smooth image in `format` with `padding`, decodes it as `format`, returns the
/// packed source and the decoded pixels.
fn round_trip(
    width: u32,
    height: u32,
    format: PixelFormat,
    padding: usize,
    options: &EncodeOptions,
) -> (Vec<u8>, Vec<u8>) {
    let bpp = format.bytes_per_pixel();
    let row_len = width as usize * bpp;
    let step = row_len + padding;
    let data = smooth_image(width, height, bpp, step);
    let pixels = PixelsRef::new(width, height, step, format, &data).expect("valid layout");
    let jpeg = encode(&pixels, options).expect("encode");
    assert_eq!((jpeg.width, jpeg.height), (width, height));
    assert_eq!(jpeg.greyscale, format == PixelFormat::Mono8);

    let decoder = JpegDecoder::default();
    let header = decoder.read_header(&jpeg.data).expect("read header");
    assert_eq!((header.width, header.height), (width, height));
    assert_eq!(header.components, if jpeg.greyscale { 1 } else { 3 });
    assert!(!header.progressive);
    assert_eq!(header.scans, 1);

    let decoded = decoder.decode(&jpeg.data, format).expect("decode");
    assert_eq!(
        (decoded.width, decoded.height, decoded.format),
        (width, height, format)
    );
    assert_eq!(decoded.data.len(), width as usize * height as usize * bpp);
    (pack(&data, height as usize, step, row_len), decoded.data)
}

/// At q90 4:4:4 a smooth ramp (at most 3 levels per pixel) comes back within a few levels
/// everywhere. Measured worst over all 135 cases: max 6, mean 1.42 levels per sample. The
/// bound (max 10, mean 2.5) leaves room for encoder/decoder rounding changes while still
/// catching a channel swap, an off-by-one row, padding leaking into pixels, or a wrong colour
/// conversion (errors of tens to hundreds of levels).
#[test]
fn all_formats_sizes_and_paddings_round_trip_closely_at_high_quality() {
    let mut worst = (0u8, 0f64);
    for format in PixelFormat::ALL {
        for (width, height) in SIZES {
            for padding in PADDINGS {
                let (source, decoded) = round_trip(
                    width,
                    height,
                    format,
                    padding,
                    &options(90, Subsampling::S444),
                );
                let (max, mean) = error(&source, &decoded);
                worst = (worst.0.max(max), worst.1.max(mean));
                assert!(
                    max <= 10 && mean <= 2.5,
                    "{format} {width}x{height} +{padding}: max {max}, mean {mean:.2}"
                );
            }
        }
    }
    println!("q90 4:4:4 worst: max {} mean {:.3}", worst.0, worst.1);
}

/// q75 with each subsampling and chroma method also round trips every case; subsampling and
/// coarser quantisation allow larger errors. Measured worst over the 270 cases: max 13,
/// mean 1.75; bound: max 24, mean 3.5.
#[test]
fn all_formats_and_subsamplings_round_trip_at_default_quality() {
    let mut worst = (0u8, 0f64);
    for format in PixelFormat::ALL {
        for subsampling in [Subsampling::S420, Subsampling::S422, Subsampling::S444] {
            for chroma in [ChromaDownsampling::Average, ChromaDownsampling::TopLeft] {
                for (width, height) in SIZES {
                    let options = EncodeOptions {
                        subsampling,
                        chroma_downsampling: chroma,
                        drop_alpha: true,
                        ..EncodeOptions::default()
                    };
                    let (source, decoded) = round_trip(width, height, format, 3, &options);
                    let (max, mean) = error(&source, &decoded);
                    worst = (worst.0.max(max), worst.1.max(mean));
                    assert!(
                        max <= 24 && mean <= 3.5,
                        "{format} {subsampling} {chroma} {width}x{height}: max {max}, mean {mean:.2}"
                    );
                }
            }
        }
    }
    println!("q75 worst: max {} mean {:.3}", worst.0, worst.1);
}

#[test]
fn alpha_comes_back_opaque() {
    for format in [PixelFormat::Rgba8, PixelFormat::Bgra8] {
        let (_, decoded) = round_trip(17, 9, format, 0, &options(75, Subsampling::S420));
        assert!(
            decoded.chunks_exact(4).all(|pixel| pixel[3] == 255),
            "{format}"
        );
    }
}

/// Encodes a 33x17 smooth image once per source format and decodes it as every format.
#[test]
fn decodes_into_every_format() {
    let decoder = JpegDecoder::default();
    for source_format in PixelFormat::ALL {
        let bpp = source_format.bytes_per_pixel();
        let data = smooth_image(33, 17, bpp, 33 * bpp);
        let pixels = PixelsRef::new(33, 17, 33 * bpp, source_format, &data).unwrap();
        let jpeg = encode(&pixels, &options(90, Subsampling::S444)).unwrap();
        let rgb = decoder.decode(&jpeg.data, PixelFormat::Rgb8).unwrap().data;
        for format in PixelFormat::ALL {
            let decoded = decoder.decode(&jpeg.data, format).unwrap();
            assert_eq!(decoded.format, format);
            assert_eq!(decoded.data.len(), 33 * 17 * format.bytes_per_pixel());
            let pixels = decoded.data.chunks_exact(format.bytes_per_pixel());
            for (out, rgb) in pixels.zip(rgb.chunks_exact(3)) {
                let context = format!("{source_format} as {format}: {out:?} vs rgb {rgb:?}");
                match format {
                    PixelFormat::Rgb8 => {}
                    PixelFormat::Bgr8 => assert_eq!(out, [rgb[2], rgb[1], rgb[0]], "{context}"),
                    PixelFormat::Rgba8 => {
                        assert_eq!(out, [rgb[0], rgb[1], rgb[2], 255], "{context}")
                    }
                    PixelFormat::Bgra8 => {
                        assert_eq!(out, [rgb[2], rgb[1], rgb[0], 255], "{context}")
                    }
                    PixelFormat::Mono8 => {
                        // The decoder's luma comes from Y directly, RGB from YCbCr; they agree
                        // to within rounding of the colour conversion.
                        let luma = (0.299 * f64::from(rgb[0])
                            + 0.587 * f64::from(rgb[1])
                            + 0.114 * f64::from(rgb[2]))
                        .round() as i32;
                        assert!((i32::from(out[0]) - luma).abs() <= 2, "{context}");
                    }
                }
                if source_format == PixelFormat::Mono8 {
                    // A greyscale JPEG asked as colour gets its grey replicated.
                    assert!(rgb[0] == rgb[1] && rgb[1] == rgb[2], "{context}");
                }
            }
        }
    }
}

#[test]
fn decode_into_reuses_the_buffer() {
    let data = smooth_image(64, 48, 3, 64 * 3);
    let pixels = PixelsRef::new(64, 48, 64 * 3, PixelFormat::Rgb8, &data).unwrap();
    let jpeg = encode(&pixels, &EncodeOptions::default()).unwrap();
    let decoder = JpegDecoder::default();
    let fresh = decoder.decode(&jpeg.data, PixelFormat::Bgra8).unwrap();

    let mut buffer = Vec::with_capacity(64 * 48 * 4);
    let pointer = buffer.as_ptr();
    for format in [PixelFormat::Bgra8, PixelFormat::Mono8, PixelFormat::Bgra8] {
        let header = decoder
            .decode_into(&jpeg.data, format, &mut buffer)
            .unwrap();
        assert_eq!((header.width, header.height), (64, 48));
        assert_eq!(buffer.len(), 64 * 48 * format.bytes_per_pixel());
        assert_eq!(buffer.as_ptr(), pointer, "the buffer was reallocated");
    }
    assert_eq!(buffer, fresh.data);
}

#[test]
fn progressive_files_decode() {
    let data = smooth_image(100, 75, 3, 300);
    let mut jpeg = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut jpeg, 80);
    encoder.set_progressive(true);
    encoder
        .encode(&data, 100, 75, jpeg_encoder::ColorType::Rgb)
        .unwrap();
    let decoder = JpegDecoder::default();
    let header = decoder.read_header(&jpeg).unwrap();
    assert!(header.progressive);
    assert!(header.scans > 1, "{header:?}");
    let decoded = decoder.decode(&jpeg, PixelFormat::Rgb8).unwrap();
    let (max, mean) = error(&data, &decoded.data);
    assert!(max <= 24 && mean <= 4.0, "max {max}, mean {mean:.2}");
}

#[test]
fn downscales_wide_images_keeping_aspect() {
    for format in PixelFormat::ALL {
        for padding in [0, 1, 4] {
            let bpp = format.bytes_per_pixel();
            let step = 1280 * bpp + padding;
            let data = smooth_image(1280, 720, bpp, step);
            let pixels = PixelsRef::new(1280, 720, step, format, &data).unwrap();
            let options = EncodeOptions {
                max_width: Some(640),
                drop_alpha: true,
                ..EncodeOptions::default()
            };
            let jpeg = encode(&pixels, &options).unwrap();
            assert_eq!((jpeg.width, jpeg.height), (640, 360), "{format} +{padding}");
            let decoded = JpegDecoder::default().decode(&jpeg.data, format).unwrap();
            assert_eq!((decoded.width, decoded.height), (640, 360));
            // The downscaled gradient matches the source sampled at the same place.
            let source = &data[(360 * step + 640 * bpp)..][..bpp.min(3)];
            let out = &decoded.data[(180 * 640 + 320) * bpp..][..bpp.min(3)];
            let (max, _) = error(source, out);
            assert!(max <= 8, "{format} +{padding}: {source:?} vs {out:?}");
        }
    }
    // Narrower images are left alone.
    let data = smooth_image(100, 50, 3, 300);
    let pixels = PixelsRef::new(100, 50, 300, PixelFormat::Rgb8, &data).unwrap();
    let options = EncodeOptions {
        max_width: Some(100),
        ..EncodeOptions::default()
    };
    let jpeg = encode(&pixels, &options).unwrap();
    assert_eq!((jpeg.width, jpeg.height), (100, 50));
}

#[test]
fn refuses_what_jpeg_cannot_carry() {
    let data = vec![0u8; 65536];
    let wide = PixelsRef::new(65536, 1, 65536, PixelFormat::Mono8, &data).unwrap();
    assert!(matches!(
        encode(&wide, &EncodeOptions::default()),
        Err(JpegError::TooLargeToEncode {
            width: 65536,
            height: 1
        })
    ));
    // ... unless max_width brings it within range.
    let options = EncodeOptions {
        max_width: Some(1000),
        ..EncodeOptions::default()
    };
    let jpeg = encode(&wide, &options).unwrap();
    assert_eq!((jpeg.width, jpeg.height), (1000, 1));

    let tall = PixelsRef::new(1, 65536, 1, PixelFormat::Mono8, &data).unwrap();
    assert!(matches!(
        encode(&tall, &options),
        Err(JpegError::TooLargeToEncode {
            width: 1,
            height: 65536
        })
    ));

    let rgba = vec![0u8; 16];
    let pixels = PixelsRef::new(2, 2, 8, PixelFormat::Bgra8, &rgba).unwrap();
    assert!(matches!(
        encode(&pixels, &EncodeOptions::default()),
        Err(JpegError::AlphaNotAllowed {
            format: PixelFormat::Bgra8
        })
    ));

    let rgb = vec![0u8; 12];
    let pixels = PixelsRef::new(2, 2, 6, PixelFormat::Rgb8, &rgb).unwrap();
    for quality in [0, 101, 255] {
        let options = EncodeOptions {
            quality,
            ..EncodeOptions::default()
        };
        assert!(matches!(
            encode(&pixels, &options),
            Err(JpegError::InvalidQuality { quality: q }) if q == quality
        ));
    }
    for quality in [1, 100] {
        let options = EncodeOptions {
            quality,
            ..EncodeOptions::default()
        };
        assert!(encode(&pixels, &options).is_ok(), "quality {quality}");
    }
    let options = EncodeOptions {
        max_width: Some(0),
        ..EncodeOptions::default()
    };
    assert!(matches!(
        encode(&pixels, &options),
        Err(JpegError::InvalidMaxWidth)
    ));
}

#[test]
fn layout_is_checked() {
    let data = [0u8; 12];
    let new = |w, h, step, format, len: usize| PixelsRef::new(w, h, step, format, &data[..len]);
    assert!(matches!(
        new(0, 2, 6, PixelFormat::Rgb8, 12),
        Err(LayoutError::ZeroDimension {
            width: 0,
            height: 2
        })
    ));
    assert!(matches!(
        new(2, 2, 5, PixelFormat::Rgb8, 10),
        Err(LayoutError::StepTooSmall {
            step: 5,
            min_step: 6
        })
    ));
    assert!(matches!(
        new(2, 2, 6, PixelFormat::Rgb8, 11),
        Err(LayoutError::BufferSize {
            expected: 12,
            actual: 11
        })
    ));
    assert!(matches!(
        PixelsRef::new(u32::MAX, u32::MAX, usize::MAX, PixelFormat::Rgba8, &data),
        Err(LayoutError::Overflow)
    ));
    let pixels = new(2, 2, 6, PixelFormat::Rgb8, 12).unwrap();
    assert_eq!(
        (
            pixels.width(),
            pixels.height(),
            pixels.step(),
            pixels.format()
        ),
        (2, 2, 6, PixelFormat::Rgb8)
    );
    assert_eq!(pixels.data().len(), 12);
    assert_eq!(pixels.row(1).map(<[u8]>::len), Some(6));
    assert_eq!(pixels.row(2), None);
}

#[test]
fn option_names_parse_and_print() {
    for (text, value) in [
        ("4:4:4", Subsampling::S444),
        ("4:2:2", Subsampling::S422),
        ("4:2:0", Subsampling::S420),
    ] {
        assert_eq!(value.to_string(), text);
        assert_eq!(text.parse::<Subsampling>(), Ok(value));
        assert_eq!(text.replace(':', "").parse::<Subsampling>(), Ok(value));
    }
    assert!(
        "4:1:1"
            .parse::<Subsampling>()
            .unwrap_err()
            .contains("4:1:1")
    );
    for (text, value) in [
        ("average", ChromaDownsampling::Average),
        ("top_left", ChromaDownsampling::TopLeft),
    ] {
        assert_eq!(value.to_string(), text);
        assert_eq!(text.parse::<ChromaDownsampling>(), Ok(value));
    }
    assert!("nearest".parse::<ChromaDownsampling>().is_err());
    let defaults = EncodeOptions::default();
    assert_eq!(
        (
            defaults.quality,
            defaults.subsampling,
            defaults.max_width,
            defaults.drop_alpha
        ),
        (75, Subsampling::S420, None, false)
    );
}
