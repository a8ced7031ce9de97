//! The typed codecs on synthetic images: every encoding, odd sizes, padding, parameters,
//! and the errors a consumer sees.

use std::error::Error as _;

use streamwire_codec::jpeg::{JpegError, psnr};
use streamwire_codec::lossless::LosslessError;
use streamwire_core::{Codec, CodecError, CodecInfo, CodecParams, Fidelity, Timestamp};
use streamwire_msgs::codecs::{ChromaDownsampling, DataError, Subsampling};
use streamwire_msgs::{
    CompressedImage, DepthEncoding, DepthImage, FormatError, Image, ImageEncoding, Jpeg, Zstd,
};

const STAMP: Timestamp = Timestamp::from_nanos(1_700_000_000_123_456_789);

/// A smooth test pattern (JPEG-friendly) of `width x height` in `encoding`, each row
/// followed by `padding` bytes of 0xEE.
fn pattern(width: u32, height: u32, encoding: ImageEncoding, padding: u32) -> Image {
    let bpp = encoding.bytes_per_pixel();
    let step = width * bpp + padding;
    let mut data = Vec::new();
    for y in 0..height {
        for x in 0..width {
            for c in 0..bpp {
                let value = match c {
                    3 => 255, // opaque alpha
                    _ => 40 + (x * 150 / width.max(1)) + (y * 50 / height.max(1)) + c * 5,
                };
                data.push(value as u8);
            }
        }
        data.extend(std::iter::repeat_n(0xEE, padding as usize));
    }
    Image::new(width, height, encoding, step, data)
        .expect("valid pattern")
        .with_stamp(STAMP)
        .with_frame_id("camera")
}

fn depth(width: u32, height: u32, encoding: DepthEncoding, padding: u32) -> DepthImage {
    let bpp = encoding.bytes_per_pixel();
    let step = width * bpp + padding;
    let mut data = Vec::new();
    for y in 0..height {
        for x in 0..width {
            match encoding {
                DepthEncoding::Mm16 => {
                    let mm = if (x + y) % 7 == 0 {
                        0
                    } else {
                        500 + x * 13 + y * 7
                    };
                    data.extend((mm as u16).to_le_bytes());
                }
                DepthEncoding::M32F => {
                    let m = if (x + y) % 5 == 0 {
                        f32::NAN
                    } else {
                        0.5 + x as f32 * 0.01
                    };
                    data.extend(m.to_le_bytes());
                }
            }
        }
        data.extend(std::iter::repeat_n(0xEE, padding as usize));
    }
    DepthImage::new(width, height, encoding, step, data)
        .expect("valid depth")
        .with_stamp(STAMP)
        .with_frame_id("depth")
}

fn decode_source<E: std::error::Error + 'static>(err: &CodecError) -> Option<&E> {
    err.source()?.downcast_ref::<E>()
}

#[test]
fn jpeg_carries_each_8bit_encoding_at_odd_sizes_and_with_padding() {
    let jpeg = Jpeg::default();
    let sizes = [(1, 1), (7, 5), (17, 9), (33, 1), (1, 31), (64, 48)];
    for encoding in [
        ImageEncoding::Rgb8,
        ImageEncoding::Bgr8,
        ImageEncoding::Mono8,
    ] {
        for (width, height) in sizes {
            for padding in [0, 3] {
                let image = pattern(width, height, encoding, padding);
                let compressed = jpeg.encode(&image).expect("encode");
                let expected = match encoding {
                    ImageEncoding::Mono8 => "mono8; jpeg compressed ".to_owned(),
                    other => format!("{other}; jpeg compressed bgr8"),
                };
                assert_eq!(compressed.format(), expected);
                assert_eq!(
                    (compressed.original_width(), compressed.original_height()),
                    (width, height)
                );
                assert_eq!(
                    (compressed.stamp(), compressed.frame_id()),
                    (STAMP, "camera")
                );
                let back: Image = jpeg.decode(&compressed).expect("decode");
                let what = format!("{encoding} {width}x{height} +{padding}");
                assert_eq!((back.width(), back.height()), (width, height), "{what}");
                assert_eq!(back.encoding(), encoding, "{what}");
                assert!(back.is_packed());
                assert_eq!((back.stamp(), back.frame_id()), (STAMP, "camera"), "{what}");
                let db = psnr(&image.packed(), back.data()).expect("same size");
                // A smooth gradient survives q75 well; 30 dB catches a wrong channel order.
                assert!(db > 30.0, "{what}: {db:.1} dB");
            }
        }
    }
}

#[test]
fn jpeg_refuses_alpha_unless_asked_to_drop_it() {
    let image = pattern(16, 8, ImageEncoding::Rgba8, 0);
    let err = Jpeg::default().encode(&image).expect_err("alpha refused");
    let CodecError::Unsupported(reason) = &err else {
        panic!("wrong error {err:?}")
    };
    assert!(
        reason.contains("rgba8 has an alpha channel") && reason.contains("drop_alpha"),
        "{reason}"
    );

    let jpeg = Jpeg::from_params(&CodecParams::new().with("drop_alpha", true)).expect("params");
    for encoding in [ImageEncoding::Rgba8, ImageEncoding::Bgra8] {
        let image = pattern(16, 8, encoding, 4);
        let compressed = jpeg.encode(&image).expect("alpha dropped");
        assert_eq!(
            compressed.format(),
            format!("{encoding}; jpeg compressed bgr8")
        );
        let back: Image = jpeg.decode(&compressed).expect("decode");
        assert_eq!(
            back.encoding(),
            encoding,
            "decoded as the original encoding"
        );
        assert!(
            back.data().chunks_exact(4).all(|p| p[3] == 255),
            "opaque alpha"
        );
        assert!(psnr(&image.packed(), back.data()).expect("same size") > 30.0);
    }
}

#[test]
fn jpeg_decodes_legacy_format_by_component_count() {
    let jpeg = Jpeg::default();
    for (encoding, expected) in [
        (ImageEncoding::Bgr8, ImageEncoding::Rgb8),
        (ImageEncoding::Mono8, ImageEncoding::Mono8),
    ] {
        let compressed = jpeg.encode(&pattern(9, 7, encoding, 0)).expect("encode");
        let legacy = CompressedImage::new("jpeg", compressed.data().clone(), 9, 7).expect("valid");
        let back: Image = jpeg.decode(&legacy).expect("decode legacy");
        assert_eq!(back.encoding(), expected);
        assert_eq!((back.width(), back.height()), (9, 7));
    }
}

#[test]
fn jpeg_max_width_downscales_and_keeps_the_original_size() {
    let jpeg = Jpeg::from_params(&CodecParams::new().with("max_width", 32)).expect("params");
    assert_eq!(
        jpeg.fidelity(),
        Fidelity {
            lossy: true,
            downscaled: true
        }
    );
    let image = pattern(100, 50, ImageEncoding::Rgb8, 0);
    let compressed = jpeg.encode(&image).expect("encode");
    assert_eq!(
        (compressed.original_width(), compressed.original_height()),
        (100, 50)
    );
    let back: Image = jpeg.decode(&compressed).expect("decode");
    assert_eq!(
        (back.width(), back.height()),
        (32, 16),
        "the real, decoded size"
    );
    assert_eq!(back.stamp(), STAMP);
}

#[test]
fn jpeg_decode_errors_name_the_problem_and_keep_the_engine_error() {
    let jpeg = Jpeg::default();
    let garbage = CompressedImage::new("rgb8; jpeg compressed bgr8", vec![1, 2, 3], 4, 4)
        .expect("valid message");
    let err = <Jpeg as Codec<Image>>::decode(&jpeg, &garbage).expect_err("not a JPEG");
    assert!(matches!(err, CodecError::Decode(_)));
    assert!(
        matches!(decode_source::<JpegError>(&err), Some(JpegError::NotAJpeg)),
        "{err:?}"
    );

    // Zstd data, PNG and depth through the JPEG decoder.
    let depth = Zstd::default()
        .encode(&depth(4, 4, DepthEncoding::Mm16, 0))
        .expect("encode");
    let err = <Jpeg as Codec<Image>>::decode(&jpeg, &depth).expect_err("depth");
    assert!(matches!(
        decode_source::<DataError>(&err),
        Some(DataError::WrongFormat { .. })
    ));
    assert!(
        err.source()
            .expect("source")
            .to_string()
            .contains("16UC1; zstd")
    );
    let png = CompressedImage::new("png", vec![0x89, b'P'], 4, 4).expect("valid message");
    let err = <Jpeg as Codec<Image>>::decode(&jpeg, &png).expect_err("png");
    assert!(matches!(
        decode_source::<FormatError>(&err),
        Some(FormatError::Unsupported { .. })
    ));
}

#[test]
fn zstd_is_exact_for_depth_and_images_at_odd_sizes_and_with_padding() {
    let zstd = Zstd::default();
    for (width, height) in [(1, 1), (7, 5), (17, 9), (33, 1), (1, 31), (640, 3)] {
        for padding in [0, 2, 6] {
            for encoding in DepthEncoding::ALL {
                let original = depth(width, height, encoding, padding);
                let compressed = zstd.encode(&original).expect("encode");
                assert_eq!(compressed.format(), format!("{encoding}; zstd"));
                let back: DepthImage = zstd.decode(&compressed).expect("decode");
                assert_eq!(
                    back.data(),
                    &original.packed(),
                    "{encoding} {width}x{height}"
                );
                assert_eq!(
                    (back.width(), back.height(), back.encoding()),
                    (width, height, encoding)
                );
                assert_eq!((back.stamp(), back.frame_id()), (STAMP, "depth"));
            }
            for encoding in ImageEncoding::ALL {
                let original = pattern(width, height, encoding, padding);
                let compressed = zstd.encode(&original).expect("encode");
                assert_eq!(compressed.format(), format!("{encoding}; zstd"));
                let back: Image = zstd.decode(&compressed).expect("decode");
                assert_eq!(
                    back.data(),
                    &original.packed(),
                    "{encoding} {width}x{height}"
                );
                assert_eq!(back.encoding(), encoding);
                assert_eq!((back.stamp(), back.frame_id()), (STAMP, "camera"));
            }
        }
    }
}

#[test]
fn zstd_decoders_check_the_format_and_the_size() {
    let zstd = Zstd::default();
    let original = depth(8, 4, DepthEncoding::Mm16, 0);
    let compressed = zstd.encode(&original).expect("encode");

    // A JPEG given to the depth decoder.
    let jpeg = Jpeg::default()
        .encode(&pattern(8, 4, ImageEncoding::Rgb8, 0))
        .expect("jpeg");
    let err = <Zstd as Codec<DepthImage>>::decode(&zstd, &jpeg).expect_err("jpeg to depth");
    let source = decode_source::<DataError>(&err).expect("DataError");
    assert_eq!(
        source.to_string(),
        "the zstd decoder of `DepthImage` cannot read `rgb8; jpeg compressed bgr8` data"
    );
    // Depth given to the image decoder, and image zstd given to the depth decoder.
    assert!(<Zstd as Codec<Image>>::decode(&zstd, &compressed).is_err());
    let rgb = zstd
        .encode(&pattern(8, 4, ImageEncoding::Rgb8, 0))
        .expect("encode");
    assert!(<Zstd as Codec<DepthImage>>::decode(&zstd, &rgb).is_err());

    // The frame must hold exactly original_width x original_height values.
    let resized = CompressedImage::new("16UC1; zstd", compressed.data().clone(), 8, 5).expect("ok");
    let err = <Zstd as Codec<DepthImage>>::decode(&zstd, &resized).expect_err("size");
    assert!(matches!(
        decode_source::<LosslessError>(&err),
        Some(LosslessError::ContentSizeMismatch { .. })
    ));
    // Relabelled as 32FC1: twice the bytes expected.
    let relabelled =
        CompressedImage::new("32FC1; zstd", compressed.data().clone(), 8, 4).expect("ok");
    assert!(<Zstd as Codec<DepthImage>>::decode(&zstd, &relabelled).is_err());
    // A hostile original size is refused before anything is allocated.
    let huge = CompressedImage::new("32FC1; zstd", compressed.data().clone(), u32::MAX, u32::MAX)
        .expect("ok");
    let err = <Zstd as Codec<DepthImage>>::decode(&zstd, &huge).expect_err("huge");
    assert!(matches!(
        decode_source::<DataError>(&err),
        Some(DataError::TooLarge { .. })
    ));
    // Truncated data.
    let cut = compressed.data().slice(..compressed.data().len() - 3);
    let truncated = CompressedImage::new("16UC1; zstd", cut, 8, 4).expect("ok");
    assert!(matches!(
        <Zstd as Codec<DepthImage>>::decode(&zstd, &truncated),
        Err(CodecError::Decode(_))
    ));
}

#[test]
fn parameters_keep_their_keys_defaults_and_validation() {
    let jpeg = Jpeg::default();
    assert_eq!(
        jpeg.params().to_string(),
        "chroma_downsampling=average, drop_alpha=false, jpeg_quality=75, max_width=none, subsampling=4:2:0"
    );
    assert_eq!(Jpeg::from_params(&jpeg.params()).expect("rebuild"), jpeg);
    let custom = Jpeg::from_params(
        &CodecParams::new()
            .with("jpeg_quality", 90)
            .with("subsampling", "444")
            .with("chroma_downsampling", "top_left"),
    )
    .expect("params");
    assert_eq!(custom.quality, 90);
    assert_eq!(custom.subsampling, Subsampling::S444);
    assert_eq!(custom.chroma_downsampling, ChromaDownsampling::TopLeft);
    assert_eq!(
        Jpeg::from_params(&custom.params()).expect("rebuild"),
        custom
    );
    for (key, value) in [
        ("jpeg_quality", "0"),
        ("jpeg_quality", "101"),
        ("subsampling", "4:1:1"),
        ("max_width", "0"),
        ("drop_alpha", "maybe"),
    ] {
        let err = Jpeg::from_params(&CodecParams::new().with(key, value)).expect_err(value);
        assert!(
            matches!(err, CodecError::InvalidParam { .. }),
            "{key}={value}: {err}"
        );
    }
    assert!(matches!(
        Jpeg::from_params(&CodecParams::new().with("quality", 80)),
        Err(CodecError::UnknownParam { .. })
    ));

    let zstd = Zstd::default();
    assert_eq!(zstd.params().to_string(), "level=3");
    assert_eq!(
        <Zstd as Codec<DepthImage>>::fidelity(&zstd),
        Fidelity::LOSSLESS
    );
    assert!(Zstd::from_params(&CodecParams::new().with("level", 20)).is_err());
    assert_eq!(
        Zstd::from_params(&CodecParams::new().with("level", 19))
            .expect("ok")
            .level,
        19
    );

    // What the graph planner sees.
    let info = CodecInfo::of::<DepthImage, Zstd>();
    assert_eq!(
        (info.name(), info.stream_suffix()),
        ("zstd", "compressedDepth")
    );
    let info = CodecInfo::of::<Image, Jpeg>();
    assert_eq!((info.name(), info.stream_suffix()), ("jpeg", "compressed"));
    assert_eq!(info.encoded().name(), "streamwire/CompressedImage");
}

#[test]
fn type_erased_codecs_encode_and_decode() {
    let codec = CodecInfo::of::<DepthImage, Zstd>()
        .instantiate(&CodecParams::new().with("level", 1))
        .expect("codec");
    let original = depth(5, 3, DepthEncoding::M32F, 0);
    let encoded = codec.encode_any(&original).expect("encode");
    let back = codec.decode_any(encoded.as_ref()).expect("decode");
    assert_eq!(back.downcast_ref::<DepthImage>(), Some(&original));
    // An Image given to the depth codec.
    assert!(matches!(
        codec.encode_any(&pattern(2, 2, ImageEncoding::Rgb8, 0)),
        Err(CodecError::WrongMessage { .. })
    ));
}
