//! (e) Property tests: hostile bytes never panic the decoders; every valid image encodes and
//! decodes to the same size and format; the lossless engine round-trips exactly.

mod common;

use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use streamwire_codec::jpeg::{
    ChromaDownsampling, EncodeOptions, JpegDecoder, JpegError, PixelFormat, PixelsRef, Subsampling,
    Threads, encode,
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

/// Strip-encoded seeds with several restart markers: 4:2:0 colour (5 strips), 4:4:4 colour and
/// greyscale (9 strips each), all 40x72 with noise.
fn restart_seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut rng = common::Rng::new(3);
        [
            (PixelFormat::Rgb8, Subsampling::S420),
            (PixelFormat::Rgb8, Subsampling::S444),
            (PixelFormat::Mono8, Subsampling::S420),
        ]
        .into_iter()
        .map(|(format, subsampling)| {
            let step = 40 * format.bytes_per_pixel();
            let data: Vec<u8> = common::smooth_image(40, 72, format.bytes_per_pixel(), step)
                .into_iter()
                .map(|v| v.wrapping_add((rng.next_u64() % 32) as u8))
                .collect();
            let pixels = PixelsRef::new(40, 72, step, format, &data).expect("layout");
            let options = EncodeOptions {
                subsampling,
                ..EncodeOptions::default()
            };
            encode(&pixels, &options).expect("encode").data
        })
        .collect()
    })
}

/// Offsets of the restart markers (`FF D0..=D7`) in a file we encoded.
fn restart_offsets(data: &[u8]) -> Vec<usize> {
    data.windows(2)
        .enumerate()
        .filter(|(_, w)| w[0] == 0xFF && (0xD0..=0xD7).contains(&w[1]))
        .map(|(at, _)| at)
        .collect()
}

/// One damage to a restart-marked file.
#[derive(Debug, Clone)]
enum Mangle {
    /// Give the `n`th restart marker another number.
    Renumber(prop::sample::Index, u8),
    /// Delete the `n`th restart marker.
    Remove(prop::sample::Index),
    /// Write the `n`th restart marker twice.
    Duplicate(prop::sample::Index),
    /// Insert a restart marker with this number at an offset.
    Insert(prop::sample::Index, u8),
    /// Declare another restart interval.
    Interval(u16),
    /// Swap the data of two strips (markers stay in order: they lie about what follows).
    Swap(prop::sample::Index, prop::sample::Index),
    /// Overwrite a byte.
    Byte(prop::sample::Index, u8),
}

fn mangle_strategy() -> impl Strategy<Value = Mangle> {
    prop_oneof![
        (any::<prop::sample::Index>(), 0u8..8).prop_map(|(i, v)| Mangle::Renumber(i, v)),
        any::<prop::sample::Index>().prop_map(Mangle::Remove),
        any::<prop::sample::Index>().prop_map(Mangle::Duplicate),
        (any::<prop::sample::Index>(), 0u8..8).prop_map(|(i, v)| Mangle::Insert(i, v)),
        any::<u16>().prop_map(Mangle::Interval),
        (any::<prop::sample::Index>(), any::<prop::sample::Index>())
            .prop_map(|(a, b)| Mangle::Swap(a, b)),
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, v)| Mangle::Byte(i, v)),
    ]
}

fn apply(data: &mut Vec<u8>, mangle: &Mangle) {
    let markers = restart_offsets(data);
    let nth = |index: &prop::sample::Index| markers.get(index.index(markers.len().max(1))).copied();
    match mangle {
        Mangle::Renumber(index, value) => {
            if let Some(at) = nth(index) {
                data[at + 1] = 0xD0 + value;
            }
        }
        Mangle::Remove(index) => {
            if let Some(at) = nth(index) {
                data.drain(at..at + 2);
            }
        }
        Mangle::Duplicate(index) => {
            if let Some(at) = nth(index) {
                let marker = [data[at], data[at + 1]];
                data.splice(at..at, marker);
            }
        }
        Mangle::Insert(index, value) => {
            let at = index.index(data.len());
            data.splice(at..at, [0xFF, 0xD0 + value]);
        }
        Mangle::Interval(interval) => {
            if let Some(at) = data.windows(2).position(|w| w == [0xFF, 0xDD]) {
                data[at + 4..at + 6].copy_from_slice(&interval.to_be_bytes());
            }
        }
        Mangle::Swap(a, b) => {
            // Strip k is the data between marker k - 1 (or the file's first marker) and k.
            if markers.len() >= 3 {
                let (a, b) = (a.index(markers.len() - 1), b.index(markers.len() - 1));
                let (a, b) = (a.min(b), a.max(b));
                if a < b {
                    let strip_a = markers[a] + 2..markers[a + 1];
                    let strip_b = markers[b] + 2..markers[b + 1];
                    let mut swapped = data[..strip_a.start].to_vec();
                    swapped.extend_from_slice(&data[strip_b.clone()]);
                    swapped.extend_from_slice(&data[strip_a.end..strip_b.start]);
                    swapped.extend_from_slice(&data[strip_a.clone()]);
                    swapped.extend_from_slice(&data[strip_b.end..]);
                    *data = swapped;
                }
            }
        }
        Mangle::Byte(index, value) => {
            let at = index.index(data.len());
            data[at] = *value;
        }
    }
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
    #![proptest_config(config(256))]

    /// Restart markers missing, extra, out of order, lying about the interval or about the
    /// data: the parallel decoder never panics, and whenever it and the sequential decoder
    /// both succeed they give the same pixels (a file that does not fit strips falls back).
    #[test]
    fn mangled_restart_markers_never_panic_and_match_sequential(
        seed in 0usize..3,
        mangles in prop::collection::vec(mangle_strategy(), 1..4),
        format in format_strategy(),
        threads in 2usize..=4,
    ) {
        let mut data = restart_seeds()[seed].clone();
        for mangle in &mangles {
            apply(&mut data, mangle);
        }
        let sequential = JpegDecoder::default().with_threads(Threads::Unsplit);
        let parallel = JpegDecoder::default()
            .with_threads(Threads::Fixed(threads.try_into().expect("nonzero")));
        let _ = parallel.restart_strips(&data);
        let expected = sequential.decode(&data, format);
        let decoded = parallel.decode(&data, format);
        for result in [&expected, &decoded] {
            prop_assert!(!matches!(result, Err(JpegError::DecoderPanicked)), "{result:?}");
        }
        if let (Ok(expected), Ok(decoded)) = (&expected, &decoded) {
            prop_assert!(expected == decoded, "parallel and sequential differ");
        }
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
