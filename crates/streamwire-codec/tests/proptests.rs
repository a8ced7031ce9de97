//! (e) Property tests: hostile bytes never panic the decoders; every valid image encodes and
//! decodes to the same size and format; the lossless engine round-trips exactly.

mod common;

use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use streamwire_codec::jpeg::{
    ChromaDownsampling, EncodeOptions, JpegDecoder, JpegError, PixelFormat, PixelsRef, Subsampling,
    encode,
};
use streamwire_codec::lossless::{LosslessError, compress_rows, decompress_exact};

fn format_strategy() -> impl Strategy<Value = PixelFormat> {
    prop::sample::select(PixelFormat::ALL.to_vec())
}

/// A small valid colour JPEG (24x16, 4:2:0) to mutate.
fn seed_jpeg() -> &'static [u8] {
    static SEED: OnceLock<Vec<u8>> = OnceLock::new();
    SEED.get_or_init(|| {
        let data = common::smooth_image(24, 16, 3, 72);
        let pixels = PixelsRef::new(24, 16, 72, PixelFormat::Rgb8, &data).expect("layout");
        encode(&pixels, &EncodeOptions::default())
            .expect("encode")
            .data
    })
}

/// Decodes `data` every way there is and checks only that nothing panics.
fn decode_all_ways(data: &[u8], format: PixelFormat) -> Result<(), TestCaseError> {
    let decoder = JpegDecoder::default();
    let _ = decoder.read_header(data);
    let mut buffer = Vec::new();
    for result in [
        decoder.decode(data, format).map(|_| ()),
        decoder.decode_into(data, format, &mut buffer).map(|_| ()),
    ] {
        prop_assert!(!matches!(result, Err(JpegError::DecoderPanicked)));
    }
    Ok(())
}

/// Failing cases are saved beside this file (`proptests.regressions`) and replayed first.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn arbitrary_bytes_never_panic(
        data in prop::collection::vec(any::<u8>(), 0..2048),
        with_soi in any::<bool>(),
        format in format_strategy(),
    ) {
        // Without a start-of-image marker almost every input stops at the first check;
        // prefixing one sends the rest into the marker scanner.
        let data = if with_soi { [&[0xFF, 0xD8][..], &data].concat() } else { data };
        decode_all_ways(&data, format)?;
    }

    #[test]
    fn mutated_jpegs_never_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
        format in format_strategy(),
    ) {
        let mut data = seed_jpeg().to_vec();
        for (at, value) in edits {
            let at = at.index(data.len());
            data[at] = value;
        }
        if truncate {
            data.truncate(cut.index(data.len()));
        }
        decode_all_ways(&data, format)?;
    }
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn any_valid_image_round_trips_size_and_format(
        width in 1u32..=64,
        height in 1u32..=64,
        padding in 0usize..=8,
        format in format_strategy(),
        decode_as in format_strategy(),
        quality in 1u8..=100,
        subsampling in prop::sample::select(vec![Subsampling::S444, Subsampling::S422, Subsampling::S420]),
        average in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let step = width as usize * format.bytes_per_pixel() + padding;
        let mut rng = common::Rng::new(seed);
        let data: Vec<u8> = (0..step * height as usize).map(|_| rng.next_u64() as u8).collect();
        let pixels = PixelsRef::new(width, height, step, format, &data).unwrap();
        let options = EncodeOptions {
            quality,
            subsampling,
            chroma_downsampling: if average { ChromaDownsampling::Average } else { ChromaDownsampling::TopLeft },
            drop_alpha: true,
            ..EncodeOptions::default()
        };
        let jpeg = encode(&pixels, &options).unwrap();
        prop_assert_eq!((jpeg.width, jpeg.height), (width, height));
        let decoded = JpegDecoder::default().decode(&jpeg.data, decode_as).unwrap();
        prop_assert_eq!((decoded.width, decoded.height, decoded.format), (width, height, decode_as));
        prop_assert_eq!(decoded.data.len(), (width * height) as usize * decode_as.bytes_per_pixel());
    }

    #[test]
    fn lossless_round_trips_exactly(
        rows in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..40),
        level in 1i32..=9,
    ) {
        let total: usize = rows.iter().map(Vec::len).sum();
        let frame = compress_rows(rows.iter().map(Vec::as_slice), total, level).unwrap();
        prop_assert_eq!(decompress_exact(&frame, total).unwrap(), rows.concat());
        // Any other length is refused.
        let longer = decompress_exact(&frame, total + 1);
        prop_assert!(
            matches!(longer, Err(LosslessError::ContentSizeMismatch { .. })),
            "{:?}",
            longer
        );
        if total > 0 {
            prop_assert!(decompress_exact(&frame, total - 1).is_err());
        }
        // So are a truncated frame and trailing bytes.
        prop_assert!(decompress_exact(&frame[..frame.len() - 1], total).is_err());
        let mut trailing = frame.clone();
        trailing.push(0);
        let result = decompress_exact(&trailing, total);
        prop_assert!(
            matches!(result, Err(LosslessError::TrailingData { trailing: 1 })),
            "{:?}",
            result
        );
    }

    #[test]
    fn decompress_exact_on_arbitrary_bytes_never_panics(
        data in prop::collection::vec(any::<u8>(), 0..512),
        with_magic in any::<bool>(),
        expected in 0usize..(1 << 20),
    ) {
        let data = if with_magic { [&[0x28, 0xB5, 0x2F, 0xFD][..], &data].concat() } else { data };
        if let Ok(out) = decompress_exact(&data, expected) {
            prop_assert_eq!(out.len(), expected);
        }
    }
}
