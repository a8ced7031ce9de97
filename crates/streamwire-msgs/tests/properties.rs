//! Property tests: valid messages round-trip, and no input (dimensions, bytes, files)
//! makes a constructor, a decoder or the PCD reader panic.

use proptest::prelude::*;
use streamwire_core::{Codec, CodecParams, Timestamp};
use streamwire_msgs::{
    CompressedImage, DepthEncoding, DepthImage, Image, ImageEncoding, Jpeg, PointCloud,
    PointDatatype, PointField, QUATERNION_TOLERANCE, Quaternion, TransformStamped, Transforms,
    Vector3, Zstd,
};

fn image_encoding() -> impl Strategy<Value = ImageEncoding> {
    prop::sample::select(ImageEncoding::ALL.to_vec())
}

fn depth_encoding() -> impl Strategy<Value = DepthEncoding> {
    prop::sample::select(DepthEncoding::ALL.to_vec())
}

/// A valid image of up to 24x24 pixels with 0..6 bytes of row padding and random pixels.
fn image() -> impl Strategy<Value = Image> {
    (
        1u32..=24,
        1u32..=24,
        image_encoding(),
        0u32..6,
        any::<u64>(),
    )
        .prop_flat_map(|(width, height, encoding, padding, stamp)| {
            let step = width * encoding.bytes_per_pixel() + padding;
            prop::collection::vec(any::<u8>(), (step * height) as usize).prop_map(move |data| {
                Image::new(width, height, encoding, step, data)
                    .expect("valid by construction")
                    .with_stamp(Timestamp::from_nanos(stamp))
                    .with_frame_id("cam")
            })
        })
}

fn depth() -> impl Strategy<Value = DepthImage> {
    (1u32..=24, 1u32..=24, depth_encoding(), 0u32..6).prop_flat_map(
        |(width, height, encoding, padding)| {
            let step = width * encoding.bytes_per_pixel() + padding;
            prop::collection::vec(any::<u8>(), (step * height) as usize).prop_map(move |data| {
                DepthImage::new(width, height, encoding, step, data)
                    .expect("valid by construction")
                    .with_stamp(Timestamp::from_nanos(11))
                    .with_frame_id("depth")
            })
        },
    )
}

/// Format strings a decoder may meet: valid, legacy, unsupported and garbage.
fn format_string() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "rgb8; jpeg compressed bgr8",
            "bgr8; jpeg compressed bgr8",
            "mono8; jpeg compressed ",
            "rgba8; jpeg compressed bgr8",
            "jpeg",
            "16UC1; zstd",
            "32FC1; zstd",
            "rgb8; zstd",
            "mono8; zstd",
            "png",
            "16UC1; compressedDepth png",
            "",
        ])
        .prop_map(str::to_owned),
        ".{0,40}",
    ]
}

/// Bytes for a decoder: random, or a real encoded frame damaged by truncation and flips.
fn encoded_bytes() -> impl Strategy<Value = Vec<u8>> {
    let jpeg = Jpeg::default()
        .encode(
            &Image::from_packed(13, 7, ImageEncoding::Rgb8, vec![90u8; 13 * 7 * 3]).expect("ok"),
        )
        .expect("encode")
        .data()
        .to_vec();
    let zstd = Zstd::default()
        .encode(&DepthImage::from_mm(13, 7, &[1234u16; 13 * 7]).expect("ok"))
        .expect("encode")
        .data()
        .to_vec();
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300),
        (
            prop::sample::select(vec![jpeg, zstd]),
            any::<prop::sample::Index>(),
            prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8)
        )
            .prop_map(|(mut bytes, cut, flips)| {
                for (at, value) in flips {
                    let i = at.index(bytes.len());
                    bytes[i] ^= value;
                }
                let keep = cut.index(bytes.len() + 1).max(bytes.len() / 2);
                bytes.truncate(keep);
                bytes
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn zstd_round_trips_images_exactly(image in image()) {
        let zstd = Zstd::default();
        let back: Image = zstd.decode(&zstd.encode(&image)?)?;
        prop_assert_eq!(back.data(), &image.packed());
        prop_assert_eq!((back.width(), back.height(), back.encoding()), (image.width(), image.height(), image.encoding()));
        prop_assert_eq!((back.stamp(), back.frame_id()), (image.stamp(), image.frame_id()));
    }

    #[test]
    fn zstd_round_trips_depth_exactly(depth in depth()) {
        let zstd = Zstd::from_params(&CodecParams::new().with("level", 1))?;
        let back: DepthImage = zstd.decode(&zstd.encode(&depth)?)?;
        prop_assert_eq!(back.data(), &depth.packed());
        prop_assert_eq!((back.width(), back.height(), back.encoding()), (depth.width(), depth.height(), depth.encoding()));
        prop_assert_eq!((back.stamp(), back.frame_id()), (depth.stamp(), depth.frame_id()));
    }

    #[test]
    fn jpeg_round_trips_keep_size_encoding_and_stamp(image in image()) {
        // Alpha only travels when dropping it is allowed.
        let jpeg = Jpeg::from_params(&CodecParams::new().with("drop_alpha", image.encoding().has_alpha()))?;
        let back: Image = jpeg.decode(&jpeg.encode(&image)?)?;
        prop_assert_eq!((back.width(), back.height(), back.encoding()), (image.width(), image.height(), image.encoding()));
        prop_assert_eq!((back.stamp(), back.frame_id()), (image.stamp(), image.frame_id()));
        prop_assert_eq!(back.data().len(), image.row_bytes() * image.height() as usize);
    }

    #[test]
    fn decoders_never_panic_on_arbitrary_input(
        format in format_string(),
        data in encoded_bytes(),
        width in prop_oneof![1u32..40, Just(u32::MAX), any::<u32>()],
        height in prop_oneof![1u32..40, Just(u32::MAX), any::<u32>()],
    ) {
        let Ok(compressed) = CompressedImage::new(format, data, width, height) else {
            return Ok(()); // zero size: refused by the constructor
        };
        let jpeg = Jpeg::default();
        let zstd = Zstd::default();
        if let Ok(image) = <Jpeg as Codec<Image>>::decode(&jpeg, &compressed) {
            prop_assert_eq!(image.data().len(), image.row_bytes() * image.height() as usize);
        }
        if let Ok(image) = <Zstd as Codec<Image>>::decode(&zstd, &compressed) {
            prop_assert_eq!((image.width(), image.height()), (width, height));
        }
        if let Ok(depth) = <Zstd as Codec<DepthImage>>::decode(&zstd, &compressed) {
            prop_assert_eq!((depth.width(), depth.height()), (width, height));
        }
    }

    #[test]
    fn constructors_never_panic_and_uphold_the_layout(
        width in prop_oneof![0u32..8, Just(u32::MAX), any::<u32>()],
        height in prop_oneof![0u32..8, Just(u32::MAX), any::<u32>()],
        step in prop_oneof![0u32..40, Just(u32::MAX), any::<u32>()],
        len in 0usize..200,
        encoding in image_encoding(),
        depth_encoding in depth_encoding(),
    ) {
        if let Ok(image) = Image::new(width, height, encoding, step, vec![7u8; len]) {
            prop_assert_eq!(image.data().len() as u64, u64::from(height) * u64::from(step));
            prop_assert_eq!(image.rows().len(), height as usize);
            prop_assert!(image.rows().all(|r| r.len() == image.row_bytes()));
            prop_assert_eq!(image.packed().len(), image.row_bytes() * height as usize);
        }
        let _ = Image::from_packed(width, height, encoding, vec![7u8; len]);
        if let Ok(depth) = DepthImage::new(width, height, depth_encoding, step, vec![0u8; len]) {
            prop_assert_eq!(depth.rows().len(), height as usize);
            prop_assert_eq!(depth.depth_m(width - 1, height - 1), None);
        }
        let _ = DepthImage::from_packed(width, height, depth_encoding, vec![0u8; len]);
        let _ = CompressedImage::new("jpeg", vec![0u8; len], width, height);
    }

    #[test]
    fn point_cloud_constructor_never_panics(
        fields in prop::collection::vec(
            (prop_oneof![Just("x"), Just("y"), Just("z"), Just("i")],
             prop_oneof![0u32..24, any::<u32>()],
             prop::sample::select(PointDatatype::ALL.to_vec()),
             prop_oneof![0u32..4, any::<u32>()]),
            0..5),
        width in prop_oneof![0u32..6, any::<u32>()],
        height in prop_oneof![0u32..6, any::<u32>()],
        point_step in prop_oneof![0u32..32, any::<u32>()],
        row_step in prop_oneof![0u32..200, any::<u32>()],
        len in 0usize..400,
    ) {
        let fields: Vec<PointField> = fields
            .into_iter()
            .map(|(name, offset, datatype, count)| PointField::new(name, offset, datatype, count))
            .collect();
        if let Ok(cloud) = PointCloud::new(fields, width, height, point_step, row_step, vec![1u8; len]) {
            prop_assert_eq!(cloud.points().count(), cloud.len());
            for field in cloud.fields() {
                prop_assert!(field.end() <= u64::from(point_step));
            }
            let _ = cloud.xyz().map(Iterator::count);
        }
    }

    #[test]
    fn pcd_reader_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = PointCloud::from_pcd(&bytes);
    }

    #[test]
    fn pcd_reader_never_panics_on_damaged_files(
        data in prop::sample::select(vec!["ascii", "binary", "binary_compressed"]),
        width in prop_oneof![0u32..5, any::<u32>()],
        height in prop_oneof![0u32..5, any::<u32>()],
        body in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        let mut pcd = format!(
            "VERSION 0.7\nFIELDS x y z rgb\nSIZE 4 4 4 4\nTYPE F F F U\nCOUNT 1 1 1 1\nWIDTH {width}\nHEIGHT {height}\nDATA {data}\n"
        ).into_bytes();
        pcd.extend(body);
        if let Ok(cloud) = PointCloud::from_pcd(&pcd) {
            prop_assert_eq!((cloud.width(), cloud.height()), (width, height));
            prop_assert_eq!(cloud.points().count(), cloud.len());
        }
    }

    /// `Transforms::new` accepts exactly the finite transforms with unit rotations, and
    /// what it accepts round-trips through JSON.
    #[test]
    fn transforms_accept_exactly_finite_unit_rotations(
        values in prop::collection::vec(prop::array::uniform7(prop_oneof![
            -2.0f64..2.0, Just(f64::NAN), Just(f64::INFINITY), Just(0.0), Just(1.0),
        ]), 0..4),
    ) {
        let transforms: Vec<TransformStamped> = values.iter().map(|v| TransformStamped {
            stamp: Timestamp::from_nanos(1),
            parent_frame_id: "a".into(),
            child_frame_id: "b".into(),
            translation: Vector3::new(v[0], v[1], v[2]),
            rotation: Quaternion::new(v[3], v[4], v[5], v[6]),
        }).collect();
        let valid = transforms.iter().all(|t| {
            let (v, q) = (t.translation, t.rotation);
            [v.x, v.y, v.z, q.x, q.y, q.z, q.w].iter().all(|c| c.is_finite())
                && (q.norm() - 1.0).abs() <= QUATERNION_TOLERANCE
        });
        match Transforms::new(transforms) {
            Ok(tf) => {
                prop_assert!(valid);
                let json = serde_json::to_string(&tf).expect("valid");
                prop_assert_eq!(serde_json::from_str::<Transforms>(&json).expect("valid"), tf);
            }
            Err(_) => prop_assert!(!valid),
        }
    }
}

/// The case the property test above found (issue 52): without serde_json's
/// `float_roundtrip` this translation came back from JSON as `-1.1283377609032157`. Every
/// JSON path of the workspace (blueprint files, the relay, recordings) reads floats through
/// the same serde_json, so this is their regression test too.
#[test]
fn a_float_comes_back_from_json_bit_for_bit() {
    let x = -1.128_337_760_903_215_5_f64;
    let tf = Transforms::new(vec![TransformStamped {
        stamp: Timestamp::from_nanos(1),
        parent_frame_id: "a".into(),
        child_frame_id: "b".into(),
        translation: Vector3::new(x, 0.0, 0.0),
        rotation: Quaternion::new(0.0, 0.0, 0.0, 1.0),
    }])
    .expect("a finite transform with a unit rotation");
    let json = serde_json::to_string(&tf).expect("serializes");
    let back: Transforms = serde_json::from_str(&json).expect("parses");
    assert_eq!(back, tf);
    let through_value: serde_json::Value = serde_json::from_str(&json).expect("parses");
    let back: Transforms = serde_json::from_value(through_value).expect("reads");
    assert_eq!(back, tf);
    let value: f64 = serde_json::from_str("-1.1283377609032155").expect("parses");
    assert_eq!(value.to_bits(), x.to_bits());
}
