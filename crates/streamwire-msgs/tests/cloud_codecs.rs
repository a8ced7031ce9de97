//! The point-cloud codecs on real clouds (organized, NaN points, packed `rgb`/`rgba`) and on
//! edge cases: cloudini within its bound with exact colour, zstd exact in both formats,
//! parameters checked, hostile messages refused by kind.

use std::error::Error as _;

use streamwire_codec::cloud::CloudError;
use streamwire_codec::cloud::cloudini::error_bound;
use streamwire_core::{Codec, CodecError, CodecParams, Timestamp};
use streamwire_msgs::codecs::DataError;
use streamwire_msgs::{
    CloudZstd, Cloudini, CompressedPointCloud, PointCloud, PointDatatype, PointField,
};
use streamwire_testdata as data;

fn read_cloud(file: &str) -> PointCloud {
    let bytes = data::read(&format!("rgbd_pointcloud/{file}"));
    PointCloud::from_pcd(&bytes).unwrap_or_else(|e| panic!("{file}: {e}"))
}

const REAL: [&str; 2] = [
    "milk_cartoon_all_small_clorox.pcd",
    "table_scene_mug_stereo_textured.pcd",
];

fn f32_at(point: &[u8], offset: u32) -> f32 {
    let o = offset as usize;
    f32::from_le_bytes([point[o], point[o + 1], point[o + 2], point[o + 3]])
}

/// xyz within the bound (NaN as NaN), every other field bit for bit.
fn assert_within_bound(original: &PointCloud, decoded: &PointCloud, resolution: f32) {
    assert_eq!(original.fields(), decoded.fields());
    assert_eq!(
        (original.width(), original.height()),
        (decoded.width(), decoded.height())
    );
    for (i, (a, b)) in original.points().zip(decoded.points()).enumerate() {
        for field in original.fields() {
            let (o, end) = (field.offset as usize, field.end() as usize);
            if matches!(field.name.as_str(), "x" | "y" | "z") {
                let (va, vb) = (f32_at(a, field.offset), f32_at(b, field.offset));
                if va.is_nan() {
                    assert!(vb.is_nan(), "point {i} {}: NaN became {vb}", field.name);
                } else {
                    let error = (f64::from(va) - f64::from(vb)).abs();
                    let bound = error_bound(resolution, f64::from(va));
                    assert!(error <= bound, "point {i} {}: {va} -> {vb}", field.name);
                }
            } else {
                assert_eq!(a[o..end], b[o..end], "point {i} {}", field.name);
            }
        }
    }
}

#[test]
fn real_clouds_survive_cloudini_at_1mm_and_zstd_exactly() {
    if !data::data_or_skip() {
        return;
    }
    for file in REAL {
        let cloud = read_cloud(file)
            .with_stamp(Timestamp::from_nanos(1_700_000_000_123_456_789))
            .with_frame_id("camera");
        let nan = cloud
            .values::<f32>("x")
            .expect("x")
            .filter(|x| x.is_nan())
            .count();
        assert!(nan > 0, "{file} has NaN points");
        let cloudini = Cloudini::default();
        let encoded = cloudini.encode(&cloud).expect("encode");
        assert_eq!(encoded.format(), "cloudini");
        let decoded = cloudini.decode(&encoded).expect("decode");
        assert_within_bound(&cloud, &decoded, 0.001);
        assert_eq!(
            (decoded.stamp(), decoded.frame_id()),
            (cloud.stamp(), "camera")
        );
        for shuffle in [false, true] {
            let zstd = CloudZstd {
                shuffle,
                ..CloudZstd::default()
            };
            let lossless = zstd.encode(&cloud).expect("zstd");
            assert_eq!(
                zstd.decode(&lossless).expect("unzstd"),
                cloud,
                "{file} shuffle={shuffle}"
            );
            eprintln!(
                "{file}: raw {} B, cloudini 1 mm {} B, {} {} B ({nan} NaN points)",
                cloud.data().len(),
                encoded.compressed_data().len(),
                lossless.format(),
                lossless.compressed_data().len()
            );
        }
    }
}

/// 3 points a row, 2 rows, rows padded by 8 bytes; x y z float32, rgb packed float32,
/// intensity uint16.
fn padded_cloud() -> PointCloud {
    let fields = vec![
        PointField::new("x", 0, PointDatatype::Float32, 1),
        PointField::new("y", 4, PointDatatype::Float32, 1),
        PointField::new("z", 8, PointDatatype::Float32, 1),
        PointField::new("rgb", 12, PointDatatype::Float32, 1),
        PointField::new("intensity", 16, PointDatatype::Uint16, 1),
    ];
    let mut data = Vec::new();
    for row in 0..2 {
        for col in 0..3 {
            let v = (row * 3 + col) as f32;
            let rgb = f32::from_bits(0x00ff_8040 + col as u32);
            let nan_or = |x: f32| if row == 1 && col == 1 { f32::NAN } else { x };
            for value in [nan_or(v * 1.2345), v * -0.5, 10.0 + v, rgb] {
                data.extend_from_slice(&value.to_le_bytes());
            }
            data.extend_from_slice(&(65000 - col as u16).to_le_bytes());
            data.extend_from_slice(&[0, 0]);
        }
        data.extend_from_slice(&[0xEE; 8]);
    }
    PointCloud::new(fields, 3, 2, 20, 68, data).expect("cloud")
}

#[test]
fn padded_rows_decode_packed_and_packed_rgb_is_exact() {
    let cloud = padded_cloud();
    let codec = Cloudini::default();
    let encoded = codec.encode(&cloud).expect("encode");
    assert_eq!(encoded.row_step(), 60);
    let decoded = codec.decode(&encoded).expect("decode");
    assert_eq!(decoded.row_step(), 60);
    assert_within_bound(&cloud, &decoded, 0.001);
    // zstd keeps the rows as they were, padding included: it is the serialized message.
    let zstd = CloudZstd::default();
    assert_eq!(
        zstd.decode(&zstd.encode(&cloud).expect("zstd"))
            .expect("unzstd"),
        cloud
    );
}

#[test]
fn field_resolutions_quantize_only_the_named_fields() {
    let codec = Cloudini::from_params(
        &CodecParams::new()
            .with("resolution", "0.01")
            .with("field_resolutions", "rgb:0.5"),
    )
    .expect("params");
    assert_eq!(codec.field_resolutions, vec![("rgb".to_owned(), 0.5)]);
    assert_eq!(
        Cloudini::from_params(&codec.params()).expect("again"),
        codec
    );
    let cloud = padded_cloud();
    let decoded = codec
        .decode(&codec.encode(&cloud).expect("encode"))
        .expect("decode");
    let x: Vec<f32> = decoded.values::<f32>("x").expect("x").collect();
    assert!((x[2] - 2.0 * 1.2345).abs() <= 0.005 + 1e-6, "{x:?}");
    assert_eq!(
        decoded
            .values::<u16>("intensity")
            .expect("i")
            .collect::<Vec<_>>(),
        cloud
            .values::<u16>("intensity")
            .expect("i")
            .collect::<Vec<_>>()
    );
}

#[test]
fn bad_parameters_are_refused() {
    for (key, value) in [
        ("resolution", "0"),
        ("resolution", "NaN"),
        ("resolution", "-1"),
        ("resolution", "inf"),
        ("field_resolutions", "intensity"),
        ("field_resolutions", "intensity:0"),
        ("max_points", "0"),
    ] {
        let params = CodecParams::new().with(key, value);
        assert!(
            matches!(
                Cloudini::from_params(&params),
                Err(CodecError::InvalidParam { .. })
            ),
            "{key}={value}"
        );
    }
    assert!(matches!(
        Cloudini::from_params(&CodecParams::new().with("jpeg_quality", "50")),
        Err(CodecError::UnknownParam { .. })
    ));
    assert!(matches!(
        CloudZstd::from_params(&CodecParams::new().with("level", "30")),
        Err(CodecError::InvalidParam { .. })
    ));
}

fn cloud_error(result: Result<PointCloud, CodecError>) -> CloudError {
    let error = result.expect_err("refused");
    let source = error.source().expect("a source");
    match source.downcast_ref::<CloudError>() {
        Some(CloudError::TooManyPoints { declared, limit }) => CloudError::TooManyPoints {
            declared: *declared,
            limit: *limit,
        },
        Some(CloudError::Layout(text)) => CloudError::Layout(text.clone()),
        Some(CloudError::PointsExceedData { declared, bytes }) => CloudError::PointsExceedData {
            declared: *declared,
            bytes: *bytes,
        },
        Some(CloudError::Truncated(text)) => CloudError::Truncated(text.clone()),
        _ => panic!("not a cloud error by kind: {error:#?}"),
    }
}

/// A message as a hostile peer could send it, through serde (the wire's path).
fn edited(
    message: &CompressedPointCloud,
    edit: impl FnOnce(&mut serde_json::Value),
) -> CompressedPointCloud {
    let mut value = serde_json::to_value(message).expect("to json");
    edit(&mut value);
    serde_json::from_value(value).expect("from json")
}

#[test]
fn hostile_messages_are_refused_by_kind() {
    let cloud = padded_cloud();
    let codec = Cloudini::default();
    let encoded = codec.encode(&cloud).expect("encode");
    // The stream's declared maximum.
    let small = Cloudini {
        max_points: 4,
        ..Cloudini::default()
    };
    assert!(matches!(
        cloud_error(small.decode(&encoded)),
        CloudError::TooManyPoints { limit: 4, .. }
    ));
    // The message's shape differs from the stream's header.
    let wider = edited(&encoded, |v| v["width"] = 4.into());
    assert!(matches!(
        cloud_error(codec.decode(&wider)),
        CloudError::Layout(_)
    ));
    // zstd: a message declaring more points than its frame holds.
    let zstd = CloudZstd::default();
    let lossless = zstd.encode(&cloud).expect("zstd");
    let taller = edited(&lossless, |v| v["height"] = 200.into());
    assert!(matches!(
        cloud_error(zstd.decode(&taller)),
        CloudError::PointsExceedData { .. }
    ));
    // A format the decoder does not read.
    let error = codec.decode(&lossless).expect_err("zstd to cloudini");
    assert!(
        error
            .source()
            .and_then(|s| s.downcast_ref::<DataError>())
            .is_some(),
        "{error}"
    );
}

#[test]
fn big_endian_and_multi_value_fields_are_unsupported_by_cloudini() {
    let cloud = padded_cloud().with_bigendian(true);
    assert!(matches!(
        Cloudini::default().encode(&cloud),
        Err(CodecError::Unsupported(_))
    ));
    let fields = vec![PointField::new("xyz", 0, PointDatatype::Float32, 3)];
    let cloud = PointCloud::new(fields, 1, 1, 12, 12, vec![0u8; 12]).expect("cloud");
    assert!(matches!(
        Cloudini::default().encode(&cloud),
        Err(CodecError::Unsupported(_))
    ));
    let zstd = CloudZstd::default();
    assert_eq!(
        zstd.decode(&zstd.encode(&cloud).expect("zstd"))
            .expect("unzstd"),
        cloud
    );
}
