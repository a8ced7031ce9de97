//! The point-cloud engines: cloudini round trips within the stated bound (integer fields and
//! unquantized floats exact, NaN kept), the same bytes as the crate's own decoder reads, and
//! hostile streams refused by kind, before allocating, without a panic.

use ::cloudini::PointcloudDecoder;
use proptest::prelude::*;
use streamwire_codec::cloud::cloudini::{self, error_bound};
use streamwire_codec::cloud::{CloudError, CloudField, CloudLayout, CloudLimits, fields};
use streamwire_testdata::alloc::{CountingAlloc, peak_during};

const FLOAT32: u8 = 7;
const UINT16: u8 = 4;
const UINT8: u8 = 2;

/// x, y, z (float32 at `resolution`), intensity (float32, exact), ring (uint16), 2 bytes pad,
/// tag (uint8): 20 bytes a point.
fn lidar_layout(width: u32, height: u32, resolution: f32) -> CloudLayout {
    let field = |name: &str, offset, datatype, resolution| CloudField {
        name: name.to_owned(),
        offset,
        datatype,
        resolution,
    };
    CloudLayout {
        width,
        height,
        point_step: 20,
        fields: vec![
            field("x", 0, FLOAT32, Some(resolution)),
            field("y", 4, FLOAT32, Some(resolution)),
            field("z", 8, FLOAT32, Some(resolution)),
            field("intensity", 12, FLOAT32, None),
            field("ring", 16, UINT16, None),
            field("tag", 19, UINT8, None),
        ],
    }
}

fn point(x: f32, y: f32, z: f32, intensity: f32, ring: u16, tag: u8) -> [u8; 20] {
    let mut p = [0u8; 20];
    p[0..4].copy_from_slice(&x.to_le_bytes());
    p[4..8].copy_from_slice(&y.to_le_bytes());
    p[8..12].copy_from_slice(&z.to_le_bytes());
    p[12..16].copy_from_slice(&intensity.to_le_bytes());
    p[16..18].copy_from_slice(&ring.to_le_bytes());
    p[19] = tag;
    p
}

/// A 1024x40 scan of a room (40,960 points: two chunks), every 7th point NaN.
fn scan() -> (CloudLayout, Vec<u8>) {
    let (width, height) = (1024u32, 40u32);
    let mut data = Vec::new();
    for row in 0..height {
        for col in 0..width {
            let azimuth = col as f32 / width as f32 * std::f32::consts::TAU;
            let range = 3.0 + 2.0 * (azimuth * 3.0).sin().abs() + row as f32 * 0.01;
            let nan = (row * width + col) % 7 == 0;
            let x = if nan { f32::NAN } else { range * azimuth.cos() };
            let p = point(
                x,
                range * azimuth.sin(),
                row as f32 * 0.05 - 1.0,
                range * 17.3,
                row as u16,
                (col % 251) as u8,
            );
            data.extend_from_slice(&p);
        }
    }
    (lidar_layout(width, height, 0.001), data)
}

fn f32_at(data: &[u8], index: usize, offset: usize, step: usize) -> f32 {
    let at = index * step + offset;
    f32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]])
}

/// Checks `decoded` against `original` field by field: quantized fields within the bound,
/// everything else bit for bit, NaN as NaN.
fn assert_within_bound(layout: &CloudLayout, original: &[u8], decoded: &[u8]) {
    assert_eq!(original.len(), decoded.len());
    let step = layout.point_step as usize;
    for index in 0..original.len() / step {
        for field in &layout.fields {
            let offset = field.offset as usize;
            let size = field.size() as usize;
            let at = index * step + offset;
            match field.resolution {
                Some(resolution) => {
                    let (a, b) = (
                        f32_at(original, index, offset, step),
                        f32_at(decoded, index, offset, step),
                    );
                    if a.is_nan() {
                        assert!(b.is_nan(), "point {index} {}: NaN became {b}", field.name);
                    } else {
                        let error = (f64::from(a) - f64::from(b)).abs();
                        assert!(
                            error <= error_bound(resolution, f64::from(a)),
                            "point {index} {}: {a} became {b}",
                            field.name
                        );
                    }
                }
                None => assert_eq!(
                    original[at..at + size],
                    decoded[at..at + size],
                    "point {index} {}",
                    field.name
                ),
            }
        }
    }
}

#[test]
fn a_scan_round_trips_within_the_bound_and_as_the_crates_decoder_reads_it() {
    let (layout, data) = scan();
    let encoded = cloudini::encode(&layout, &data).expect("encode");
    assert!(
        encoded.len() * 3 < data.len(),
        "{} of {} bytes",
        encoded.len(),
        data.len()
    );
    let (read, points) = cloudini::decode(&encoded, &CloudLimits::DEFAULT).expect("decode");
    assert_eq!(read, layout);
    assert_within_bound(&layout, &data, &points);
    // The crate's own decoder (the C++ library's port) reads the same points.
    let (_, theirs) = PointcloudDecoder::new()
        .decode(&encoded)
        .expect("crate decode");
    assert_eq!(points, theirs);
    let max_error = (0..points.len() / 20)
        .map(|i| (f32_at(&data, i, 4, 20) - f32_at(&points, i, 4, 20)).abs())
        .fold(0.0f32, f32::max);
    assert!(max_error <= 0.0005 + 1e-5, "max error {max_error}");
}

#[test]
fn the_header_is_the_yaml_the_cpp_library_writes() {
    let (layout, data) = scan();
    let encoded = cloudini::encode(&layout, &data).expect("encode");
    let end = encoded.iter().position(|&b| b == 0).expect("NUL");
    let header = std::str::from_utf8(&encoded[..end]).expect("text");
    assert!(header.starts_with("CLOUDINI_V03\nversion: 3\nwidth: 1024\nheight: 40\npoint_step: 20\nencoding_opt: LOSSY\ncompression_opt: ZSTD\nfields:\n  - name: x\n    offset: 0\n    type: FLOAT32\n    resolution: 0.001\n"), "{header}");
    assert!(
        header.contains(
            "  - name: intensity\n    offset: 12\n    type: FLOAT32\n    resolution: null\n"
        ),
        "{header}"
    );
}

fn refuse(stream: &[u8], limits: &CloudLimits) -> CloudError {
    match cloudini::decode(stream, limits) {
        Ok(_) => panic!("a hostile stream was decoded"),
        Err(e) => e,
    }
}

/// Replaces the first `from` in the header with `to`.
fn edit_header(stream: &[u8], from: &str, to: &str) -> Vec<u8> {
    let end = stream.iter().position(|&b| b == 0).expect("NUL");
    let header = std::str::from_utf8(&stream[..end])
        .expect("text")
        .replacen(from, to, 1);
    let mut edited = header.into_bytes();
    edited.extend_from_slice(&stream[end..]);
    edited
}

#[test]
fn hostile_headers_are_refused_by_kind_before_allocating() {
    let (layout, data) = scan();
    let stream = cloudini::encode(&layout, &data).expect("encode");
    let limits = CloudLimits::DEFAULT;
    // Over the limit: 100000 x 100000 points.
    let huge = edit_header(
        &edit_header(&stream, "width: 1024", "width: 100000"),
        "height: 40",
        "height: 100000",
    );
    assert!(matches!(
        refuse(&huge, &limits),
        CloudError::TooManyPoints {
            declared: 10_000_000_000,
            ..
        }
    ));
    // Under the limit, but more than the chunks hold (4,096,000 points in two chunks).
    let more = edit_header(&stream, "height: 40", "height: 4000");
    let (before, allocated) = peak_during(|| refuse(&more, &limits));
    assert!(
        matches!(before, CloudError::PointsExceedData { .. }),
        "{before}"
    );
    assert!(
        allocated < 1 << 20,
        "{allocated} bytes allocated for a refused header"
    );
    // The crate's own decoder sizes its output from the header first (80 MB here).
    let (_, theirs) = peak_during(|| PointcloudDecoder::new().decode(&more).is_err());
    assert!(
        theirs >= 4_000 * 1024 * 20,
        "the crate's decoder allocated {theirs}"
    );
    // A stream's own declared maximum.
    let small = CloudLimits {
        max_points: 10_000,
        ..limits
    };
    assert!(matches!(
        refuse(&stream, &small),
        CloudError::TooManyPoints { limit: 10_000, .. }
    ));
    for bad in ["0", "-0.001", "NaN", "inf"] {
        let edited = edit_header(&stream, "resolution: 0.001", &format!("resolution: {bad}"));
        assert!(
            matches!(refuse(&edited, &limits), CloudError::BadResolution { .. }),
            "resolution {bad}"
        );
    }
    let outside = edit_header(&stream, "offset: 19", "offset: 20");
    assert!(matches!(refuse(&outside, &limits), CloudError::Layout(_)));
    assert!(matches!(
        refuse(b"CLOUDINI_V02\n", &limits),
        CloudError::NotCloudini(_)
    ));
    assert!(matches!(
        refuse(b"CLOUDINI_V\x01\x02\n", &limits),
        CloudError::NotCloudini(_)
    ));
    assert!(matches!(
        refuse(b"PCD", &limits),
        CloudError::NotCloudini(_)
    ));
}

// The workspace's counting allocator: a refused stream allocates nothing near what its
// header declares (counts per thread, so other tests do not disturb it).
#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

#[test]
fn every_truncation_is_refused() {
    let (layout, data) = scan();
    let stream = cloudini::encode(&layout, &data).expect("encode");
    let header_end = stream.iter().position(|&b| b == 0).expect("NUL") + 1;
    let cuts = (0..header_end + 64).chain((header_end + 64..stream.len()).step_by(97));
    for cut in cuts {
        let error = refuse(&stream[..cut], &CloudLimits::DEFAULT);
        assert!(
            matches!(
                error,
                CloudError::Truncated(_)
                    | CloudError::PointsExceedData { .. }
                    | CloudError::NotCloudini(_)
                    | CloudError::Header(_)
                    | CloudError::Zstd(_)
            ),
            "cut at {cut}: {error}"
        );
    }
}

#[test]
fn quantization_that_would_wrap_is_refused_at_encode() {
    let layout = lidar_layout(2, 1, 0.001);
    let mut data = point(1.0, 2.0, 3.0, 0.0, 0, 0).to_vec();
    data.extend_from_slice(&point(2.0e6, 0.0, 0.0, 0.0, 0, 0));
    assert!(matches!(
        cloudini::encode(&layout, &data),
        Err(CloudError::OutOfRange { .. })
    ));
    let mut inf = point(1.0, 2.0, 3.0, 0.0, 0, 0).to_vec();
    inf.extend_from_slice(&point(f32::INFINITY, 0.0, 0.0, 0.0, 0, 0));
    assert!(matches!(
        cloudini::encode(&layout, &inf),
        Err(CloudError::OutOfRange { .. })
    ));
    let mut zero = lidar_layout(2, 1, 0.0);
    assert!(matches!(
        cloudini::encode(&zero, &data),
        Err(CloudError::BadResolution { .. })
    ));
    zero.fields[0].resolution = Some(f32::NAN);
    assert!(matches!(
        cloudini::encode(&zero, &data),
        Err(CloudError::BadResolution { .. })
    ));
}

#[test]
fn shuffled_zstd_round_trips_exactly() {
    let (_, data) = scan();
    for layout in [fields::Layout::Plain, fields::Layout::Shuffled] {
        let frame = fields::compress(&data, 20, layout, 3).expect("compress");
        assert_eq!(
            fields::decompress(&frame, data.len(), 20, layout).expect("decompress"),
            data
        );
        assert!(fields::decompress(&frame, data.len() + 20, 20, layout).is_err());
    }
}

/// One point's values: x, y, z, intensity, ring, tag.
type Point = (f32, f32, f32, f32, u16, u8);

fn cloud_strategy() -> impl Strategy<Value = (u32, Vec<Point>, f32)> {
    let coordinate = prop_oneof![9 => -500.0f32..500.0, 1 => Just(f32::NAN)];
    let point = (
        coordinate.clone(),
        coordinate.clone(),
        coordinate,
        any::<f32>(),
        any::<u16>(),
        any::<u8>(),
    );
    (
        1u32..5,
        proptest::collection::vec(point, 0..200),
        prop_oneof![Just(0.001f32), Just(0.01), 0.0001f32..0.1],
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_clouds_round_trip_within_the_bound((rows, points, resolution) in cloud_strategy()) {
        let width = points.len() as u32 / rows;
        let used = (width * rows) as usize;
        let layout = lidar_layout(width, rows, resolution);
        let data: Vec<u8> = points[..used].iter().flat_map(|&(x, y, z, i, r, t)| point(x, y, z, i, r, t)).collect();
        let encoded = cloudini::encode(&layout, &data).expect("encode");
        let (_, decoded) = cloudini::decode(&encoded, &CloudLimits::DEFAULT).expect("decode");
        assert_within_bound(&layout, &data, &decoded);
    }

    /// Fuzz-style: flipped, replaced and cut bytes of a valid stream never panic, and what
    /// decodes has the declared size.
    #[test]
    fn mutated_streams_never_panic(edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8), cut in any::<prop::sample::Index>()) {
        let (layout, data) = scan();
        let data = &data[..20 * 2000];
        let layout = CloudLayout { width: 2000, height: 1, ..layout };
        let mut stream = cloudini::encode(&layout, data).expect("encode");
        for (at, byte) in edits {
            let i = at.index(stream.len());
            stream[i] = byte;
        }
        let end = cut.index(stream.len() + 1).max(stream.len() / 2);
        if let Ok((read, points)) = cloudini::decode(&stream[..end], &CloudLimits::DEFAULT) {
            prop_assert_eq!(points.len() as u64, read.points() * u64::from(read.point_step));
        }
    }
}
