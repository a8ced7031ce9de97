//! The messages: validation, accessors, serde (JSON, CBOR, type-erased) and hostile input.

use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;
use streamwire_core::{AnyMessage, Message, Timestamp};
use streamwire_msgs::{
    CompressedFormat, CompressedImage, DepthEncoding, DepthImage, FormatError, Image,
    ImageCompression, ImageEncoding, LayoutError, LogLevel, LogRecord, Odometry, OdometryError,
    PointCloud, PointCloudError, PointDatatype, PointField, Pose, Quaternion, RawEncoding,
    TransformError, TransformStamped, Transforms, Twist, Vector3,
};

fn padded_image() -> Image {
    // 3x2 rgb8, rows padded from 9 to 12 bytes.
    let mut data = Vec::new();
    for y in 0..2u8 {
        for x in 0..9u8 {
            data.push(y * 100 + x);
        }
        data.extend([0xEE; 3]);
    }
    Image::new(3, 2, ImageEncoding::Rgb8, 12, data)
        .expect("valid")
        .with_stamp(Timestamp::from_nanos(1_234_567_890))
        .with_frame_id("camera_optical")
}

fn depth_16() -> DepthImage {
    DepthImage::from_mm(3, 2, &[0, 1, 1000, 2500, 65535, 7])
        .expect("valid")
        .with_stamp(Timestamp::from_nanos(5))
        .with_frame_id("depth")
}

fn cloud() -> PointCloud {
    let fields = vec![
        PointField::new("x", 0, PointDatatype::Float32, 1),
        PointField::new("y", 4, PointDatatype::Float32, 1),
        PointField::new("z", 8, PointDatatype::Float32, 1),
        PointField::new("intensity", 12, PointDatatype::Uint16, 1),
    ];
    // 2x2 organized, point_step 16 (2 bytes of padding), row_step 36 (4 bytes of padding).
    let mut data = Vec::new();
    for v in 0..2u16 {
        for u in 0..2 {
            let i = f32::from(v * 2 + u);
            for value in [i, i + 0.5, if i == 3.0 { f32::NAN } else { i * 2.0 }] {
                data.extend(value.to_le_bytes());
            }
            data.extend((v * 2 + u + 100u16).to_le_bytes());
            data.extend([0, 0]);
        }
        data.extend([0xAA; 4]);
    }
    PointCloud::new(fields, 2, 2, 16, 36, data)
        .expect("valid")
        .with_stamp(Timestamp::from_nanos(77))
        .with_frame_id("lidar")
}

fn odometry() -> Odometry {
    let pose = Pose {
        position: Vector3::new(1.0, -2.0, 0.25),
        orientation: Quaternion::from_yaw(0.3),
    };
    let twist = Twist {
        linear: Vector3::new(0.5, 0.0, 0.0),
        angular: Vector3::new(0.0, 0.0, 0.1),
    };
    let mut covariance = [[0.0; 6]; 6];
    for (i, row) in covariance.iter_mut().enumerate() {
        row[i] = 0.01 * (i + 1) as f64;
    }
    covariance[0][1] = 0.002;
    covariance[1][0] = 0.002;
    Odometry::new("odom", "base_link", pose, twist)
        .expect("valid")
        .with_stamp(Timestamp::from_nanos(99))
        .with_pose_covariance(covariance)
        .expect("finite")
        .with_twist_covariance([[-1.0; 6]; 6])
        .expect("finite")
}

fn compressed() -> CompressedImage {
    CompressedImage::new(
        "rgb8; jpeg compressed bgr8",
        vec![0xFF, 0xD8, 1, 2, 3],
        640,
        480,
    )
    .expect("valid")
    .with_stamp(Timestamp::from_nanos(3))
    .with_frame_id("camera")
}

fn json_round_trip<M: Serialize + DeserializeOwned + PartialEq + Debug>(message: &M) {
    let json = serde_json::to_string(message).expect("to JSON");
    let back: M = serde_json::from_str(&json).expect("from JSON");
    assert_eq!(&back, message);
}

fn cbor(message: &impl Serialize) -> Vec<u8> {
    let mut bytes = Vec::new();
    ciborium::into_writer(message, &mut bytes).expect("to CBOR");
    bytes
}

fn cbor_round_trip<M: Serialize + DeserializeOwned + PartialEq + Debug>(message: &M) {
    let bytes = cbor(message);
    let back: M = ciborium::from_reader(&bytes[..]).expect("from CBOR");
    assert_eq!(&back, message);
    // Every strict prefix is an error, never a panic or a partial message.
    for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
        assert!(
            ciborium::from_reader::<M, _>(&bytes[..cut]).is_err(),
            "truncated at {cut} of {} bytes should fail",
            bytes.len()
        );
    }
}

fn any_round_trip<M: Message + PartialEq>(message: &M) {
    let boxed: Box<dyn AnyMessage> = Box::new(message.clone());
    assert_eq!(boxed.type_name(), M::TYPE_NAME);
    let json = serde_json::to_string(&boxed).expect("to JSON");
    assert!(
        json.starts_with(&format!("{{\"{}\":", M::TYPE_NAME)),
        "{json}"
    );
    let back: Box<dyn AnyMessage> = serde_json::from_str(&json).expect("from JSON");
    assert_eq!(back.downcast_ref::<M>(), Some(message));
    let bytes = cbor(&boxed);
    let back: Box<dyn AnyMessage> = ciborium::from_reader(&bytes[..]).expect("from CBOR");
    assert_eq!(back.downcast_ref::<M>(), Some(message));
}

#[test]
fn type_names_are_stable() {
    assert_eq!(Image::TYPE_NAME, "streamwire/Image");
    assert_eq!(DepthImage::TYPE_NAME, "streamwire/DepthImage");
    assert_eq!(CompressedImage::TYPE_NAME, "streamwire/CompressedImage");
    assert_eq!(PointCloud::TYPE_NAME, "streamwire/PointCloud");
    assert_eq!(Odometry::TYPE_NAME, "streamwire/Odometry");
    assert_eq!(Twist::TYPE_NAME, "streamwire/Twist");
}

#[test]
fn every_message_round_trips_through_json_cbor_and_any_message() {
    json_round_trip(&padded_image());
    cbor_round_trip(&padded_image());
    any_round_trip(&padded_image());
    json_round_trip(&depth_16());
    cbor_round_trip(&depth_16());
    any_round_trip(&depth_16());
    let depth_m = DepthImage::from_m(2, 1, &[1.25, f32::NAN]).expect("valid");
    cbor_round_trip(&depth_m);
    json_round_trip(&compressed());
    cbor_round_trip(&compressed());
    any_round_trip(&compressed());
    // The NaN in the cloud lives in `Bytes`, so equality is bitwise and JSON keeps it.
    json_round_trip(&cloud());
    cbor_round_trip(&cloud());
    any_round_trip(&cloud());
    json_round_trip(&odometry());
    cbor_round_trip(&odometry());
    any_round_trip(&odometry());
    let twist = Twist {
        linear: Vector3::new(0.5, 0.0, 0.0),
        angular: Vector3::new(0.0, 0.0, -0.25),
    };
    json_round_trip(&twist);
    cbor_round_trip(&twist);
    any_round_trip(&twist);
}

#[test]
fn cbor_carries_pixels_as_one_byte_string() {
    // 1000 pixel bytes cost ~1000 bytes in CBOR, not an array of numbers.
    let image =
        Image::from_packed(10, 100, ImageEncoding::Mono8, vec![200u8; 1000]).expect("valid");
    let size = cbor(&image).len();
    assert!((1000..1100).contains(&size), "CBOR size {size}");
}

#[test]
fn deserialization_validates() {
    // A JSON image whose buffer is one byte short.
    let mut value = serde_json::to_value(padded_image()).expect("to JSON");
    value["data"].as_array_mut().expect("array").pop();
    let err = serde_json::from_value::<Image>(value).expect_err("short buffer");
    assert!(err.to_string().contains("buffer holds 23 bytes"), "{err}");
    // Zero width.
    let mut value = serde_json::to_value(depth_16()).expect("to JSON");
    value["width"] = 0.into();
    assert!(serde_json::from_value::<DepthImage>(value).is_err());
    // An unknown encoding.
    let mut value = serde_json::to_value(padded_image()).expect("to JSON");
    value["encoding"] = "yuv422".into();
    assert!(serde_json::from_value::<Image>(value).is_err());
    // Huge dimensions claiming a tiny buffer.
    let mut value = serde_json::to_value(padded_image()).expect("to JSON");
    value["width"] = u32::MAX.into();
    value["height"] = u32::MAX.into();
    value["step"] = u32::MAX.into();
    assert!(serde_json::from_value::<Image>(value).is_err());
    // A cloud field outside its point.
    let mut value = serde_json::to_value(cloud()).expect("to JSON");
    value["fields"][3]["offset"] = 15.into();
    let err = serde_json::from_value::<PointCloud>(value).expect_err("field outside");
    assert!(err.to_string().contains("intensity"), "{err}");
    // Odometry with a NaN and with a non-unit quaternion.
    let mut value = serde_json::to_value(odometry()).expect("to JSON");
    value["pose"]["orientation"]["w"] = 3.0.into();
    assert!(serde_json::from_value::<Odometry>(value).is_err());
    // A compressed image of zero original size.
    let mut value = serde_json::to_value(compressed()).expect("to JSON");
    value["original_height"] = 0.into();
    assert!(serde_json::from_value::<CompressedImage>(value).is_err());
    // A CBOR image whose pixel byte string claims 4 GiB in a message of ~100 bytes.
    let bytes = cbor(&padded_image());
    let at = bytes
        .windows(2)
        .position(|w| w == [0x58, 24])
        .expect("24-byte string header");
    let mut hostile = bytes[..at].to_vec();
    hostile.extend([0x5B, 0, 0, 0, 1, 0, 0, 0, 0]);
    hostile.extend(&bytes[at + 2..]);
    assert!(ciborium::from_reader::<Image, _>(&hostile[..]).is_err());
    // An unknown type name behind `dyn AnyMessage`.
    assert!(serde_json::from_str::<Box<dyn AnyMessage>>(r#"{"streamwire/Nope":{}}"#).is_err());
}

#[test]
fn image_constructors_check_the_layout() {
    use ImageEncoding::*;
    assert!(matches!(
        Image::new(0, 1, Rgb8, 0, Vec::new()),
        Err(LayoutError::Empty {
            width: 0,
            height: 1
        })
    ));
    assert!(matches!(
        Image::new(4, 0, Mono8, 4, Vec::new()),
        Err(LayoutError::Empty { .. })
    ));
    assert!(matches!(
        Image::new(4, 2, Rgb8, 11, vec![0; 22]),
        Err(LayoutError::StepTooShort { row_bytes: 12, .. })
    ));
    assert!(matches!(
        Image::new(4, 2, Rgb8, 12, vec![0; 25]),
        Err(LayoutError::WrongLength {
            expected: 24,
            actual: 25,
            ..
        })
    ));
    // Products that overflow u32 (and would overflow usize on 32-bit targets).
    assert!(matches!(
        Image::from_packed(u32::MAX, 1, Rgba8, Vec::new()),
        Err(LayoutError::Overflow { .. })
    ));
    assert!(matches!(
        Image::new(u32::MAX, u32::MAX, Bgra8, u32::MAX, Vec::new()),
        Err(LayoutError::StepTooShort { .. })
    ));
    assert!(matches!(
        Image::new(u32::MAX, u32::MAX, Mono8, u32::MAX, vec![0; 7]),
        Err(LayoutError::WrongLength { .. } | LayoutError::Overflow { .. })
    ));
    assert!(matches!(
        DepthImage::from_packed(u32::MAX / 2 + 1, 1, DepthEncoding::M32F, Vec::new()),
        Err(LayoutError::Overflow { .. })
    ));
    // The error reads well.
    let err = Image::new(4, 2, Rgb8, 10, vec![0; 20]).expect_err("short step");
    assert_eq!(
        err.to_string(),
        "step 10 is shorter than a row of 4 pixels x 3 bytes = 12 bytes"
    );
}

#[test]
fn image_accessors_skip_padding_and_share_the_buffer() {
    let image = padded_image();
    assert_eq!((image.width(), image.height(), image.step()), (3, 2, 12));
    assert_eq!(image.row_bytes(), 9);
    assert!(!image.is_packed());
    assert_eq!(
        image.row(1),
        Some(&[100, 101, 102, 103, 104, 105, 106, 107, 108][..])
    );
    assert_eq!(image.row(2), None);
    assert_eq!(image.pixel(2, 1), Some(&[106, 107, 108][..]));
    assert_eq!(image.pixel(3, 0), None);
    assert_eq!(image.pixel(0, 2), None);
    assert_eq!(image.rows().len(), 2);
    let packed = image.packed();
    assert_eq!(packed.len(), 18);
    assert!(!packed.contains(&0xEE));
    assert_eq!(image.stamp(), Timestamp::from_nanos(1_234_567_890));
    assert_eq!(image.frame_id(), "camera_optical");

    // Clones and packed views of packed images share the pixels.
    let packed_image = Image::from_packed(3, 2, ImageEncoding::Rgb8, packed).expect("valid");
    let clone = packed_image.clone();
    assert_eq!(clone.data().as_ptr(), packed_image.data().as_ptr());
    assert_eq!(packed_image.packed().as_ptr(), packed_image.data().as_ptr());
}

#[test]
fn encodings_parse_and_print_ros_names() {
    for encoding in ImageEncoding::ALL {
        assert_eq!(encoding.to_string().parse::<ImageEncoding>(), Ok(encoding));
    }
    for encoding in DepthEncoding::ALL {
        assert_eq!(encoding.to_string().parse::<DepthEncoding>(), Ok(encoding));
    }
    let err = "RGB8"
        .parse::<ImageEncoding>()
        .expect_err("case matters, as in ROS");
    assert_eq!(err.name(), "RGB8");
    assert!(err.to_string().contains("rgb8, bgr8"), "{err}");
    // serde uses the same names.
    assert_eq!(
        serde_json::to_string(&ImageEncoding::Bgra8).expect("json"),
        "\"bgra8\""
    );
    assert_eq!(
        serde_json::to_string(&DepthEncoding::Mm16).expect("json"),
        "\"16UC1\""
    );
}

#[test]
fn depth_accessors_convert_units_and_report_missing_values() {
    let depth = depth_16();
    assert_eq!(depth.depth_mm(0, 0), None, "0 = no measurement");
    assert_eq!(depth.raw_mm(0, 0), Some(0));
    assert_eq!(depth.depth_mm(2, 0), Some(1000));
    assert_eq!(depth.depth_m(1, 1), Some(65.535));
    assert_eq!(depth.depth_m(3, 0), None);
    assert_eq!(depth.raw_m(1, 0), None, "wrong encoding");

    let metres = DepthImage::from_m(5, 1, &[1.5, f32::NAN, -1.0, f32::INFINITY, 70.0]).expect("ok");
    assert_eq!(metres.depth_m(0, 0), Some(1.5));
    assert_eq!(metres.depth_mm(0, 0), Some(1500));
    assert_eq!(metres.depth_m(1, 0), None);
    assert!(metres.raw_m(1, 0).is_some_and(f32::is_nan));
    assert_eq!(metres.depth_m(2, 0), None);
    assert_eq!(metres.depth_m(3, 0), None);
    assert_eq!(metres.depth_m(4, 0), Some(70.0));
    assert_eq!(
        metres.depth_mm(4, 0),
        None,
        "70 m does not fit u16 millimetres"
    );
    assert!(DepthImage::from_mm(2, 2, &[1, 2, 3]).is_err());
}

#[test]
fn format_strings_parse_in_the_ros_convention() {
    let parse = |s: &str| s.parse::<CompressedFormat>();
    let jpeg = |e| {
        Ok(CompressedFormat::new(
            RawEncoding::Image(e),
            ImageCompression::Jpeg,
        ))
    };
    assert_eq!(
        parse("rgb8; jpeg compressed bgr8"),
        jpeg(ImageEncoding::Rgb8)
    );
    assert_eq!(
        parse("bgr8; jpeg compressed bgr8"),
        jpeg(ImageEncoding::Bgr8)
    );
    assert_eq!(parse("mono8; jpeg compressed "), jpeg(ImageEncoding::Mono8));
    assert_eq!(
        parse("bgra8; jpeg compressed bgr8"),
        jpeg(ImageEncoding::Bgra8)
    );
    assert_eq!(parse("rgb8;jpeg"), jpeg(ImageEncoding::Rgb8));
    assert_eq!(
        parse("jpeg"),
        Ok(CompressedFormat {
            encoding: None,
            compression: ImageCompression::Jpeg
        })
    );
    assert_eq!(
        parse("16UC1; zstd"),
        Ok(CompressedFormat::new(
            RawEncoding::Depth(DepthEncoding::Mm16),
            ImageCompression::Zstd
        ))
    );
    assert_eq!(
        parse("32FC1; zstd"),
        Ok(CompressedFormat::new(
            RawEncoding::Depth(DepthEncoding::M32F),
            ImageCompression::Zstd
        ))
    );
    assert_eq!(
        parse("rgb8; zstd"),
        Ok(CompressedFormat::new(
            RawEncoding::Image(ImageEncoding::Rgb8),
            ImageCompression::Zstd
        ))
    );
    assert!(matches!(parse("png"), Err(FormatError::Unsupported { .. })));
    assert!(matches!(
        parse("rgb8; png compressed rgb8"),
        Err(FormatError::Unsupported { .. })
    ));
    let err = parse("16UC1; compressedDepth png").expect_err("ROS compressedDepth");
    assert!(err.to_string().contains("compressedDepth"), "{err}");
    assert!(matches!(parse(""), Err(FormatError::Empty)));
    assert!(matches!(
        parse("zstd"),
        Err(FormatError::MissingEncoding { .. })
    ));
    assert!(matches!(
        parse("yuv; jpeg"),
        Err(FormatError::UnknownEncoding { .. })
    ));
    assert!(matches!(
        parse("rgb8; lz4"),
        Err(FormatError::UnknownCompression { .. })
    ));
    assert!(matches!(
        parse("rgb8; zstd 3"),
        Err(FormatError::UnknownCompression { .. })
    ));
    // Untrusted text is clipped in errors.
    let long = "x".repeat(10_000);
    assert!(parse(&long).expect_err("unknown").to_string().len() < 200);

    // Display writes the canonical forms, which parse back.
    for s in [
        "rgb8; jpeg compressed bgr8",
        "mono8; jpeg compressed ",
        "jpeg",
        "32FC1; zstd",
    ] {
        assert_eq!(parse(s).expect("valid").to_string(), s);
    }
}

#[test]
fn point_cloud_validates_and_reads_typed_fields() {
    let cloud = cloud();
    assert_eq!(cloud.len(), 4);
    assert_eq!(
        cloud.field("intensity").map(|f| f.datatype),
        Some(PointDatatype::Uint16)
    );
    let xyz: Vec<[f32; 3]> = cloud.xyz().expect("xyz").collect();
    assert_eq!(xyz.len(), 4);
    assert_eq!(xyz[2], [2.0, 2.5, 4.0]);
    assert!(xyz[3][2].is_nan());
    let intensity: Vec<u16> = cloud.values("intensity").expect("u16").collect();
    assert_eq!(intensity, [100, 101, 102, 103]);
    assert_eq!(cloud.point(1, 1).map(<[u8]>::len), Some(16));
    assert_eq!(cloud.point(2, 0), None);
    assert!(matches!(
        cloud.values::<f32>("intensity"),
        Err(PointCloudError::WrongDatatype {
            found: PointDatatype::Uint16,
            ..
        })
    ));
    let err = cloud.values::<f32>("rgb").err().expect("no such field");
    assert_eq!(
        err.to_string(),
        "the point cloud has no field `rgb` (it has: x, y, z, intensity)"
    );

    // Big-endian clouds are read as such.
    let be = PointCloud::new(
        vec![PointField::new("v", 0, PointDatatype::Int32, 1)],
        1,
        1,
        4,
        4,
        (-5i32).to_be_bytes().to_vec(),
    )
    .expect("valid")
    .with_bigendian(true);
    assert_eq!(
        be.values::<i32>("v").expect("i32").collect::<Vec<_>>(),
        [-5]
    );

    let x = |offset, count| vec![PointField::new("x", offset, PointDatatype::Float64, count)];
    assert!(matches!(
        PointCloud::new(x(4, 1), 1, 1, 8, 8, vec![0; 8]),
        Err(PointCloudError::FieldOutsidePoint { end: 12, .. })
    ));
    assert!(matches!(
        PointCloud::new(x(0, 0), 1, 1, 8, 8, vec![0; 8]),
        Err(PointCloudError::ZeroCount { .. })
    ));
    assert!(matches!(
        PointCloud::new(x(0, u32::MAX), 1, 1, u32::MAX, u32::MAX, Vec::new()),
        Err(PointCloudError::FieldOutsidePoint { .. })
    ));
    let twice = [x(0, 1), x(0, 1)].concat();
    assert!(matches!(
        PointCloud::new(twice, 1, 1, 8, 8, vec![0; 8]),
        Err(PointCloudError::DuplicateField { .. })
    ));
    assert!(matches!(
        PointCloud::new(x(0, 1), 2, 1, 8, 15, vec![0; 15]),
        Err(PointCloudError::RowStepTooShort { .. })
    ));
    assert!(matches!(
        PointCloud::new(x(0, 1), 2, 2, 8, 16, vec![0; 31]),
        Err(PointCloudError::WrongLength { expected: 32, .. })
    ));
    assert!(matches!(
        PointCloud::new(Vec::new(), u32::MAX, u32::MAX, 0, 0, Vec::new()),
        Err(PointCloudError::ZeroPointStep { .. })
    ));
    assert!(matches!(
        PointCloud::new(x(0, 1), u32::MAX, u32::MAX, 8, u32::MAX, Vec::new()),
        Err(PointCloudError::RowStepTooShort { .. })
    ));
    // An empty cloud is fine.
    let empty = PointCloud::new(x(0, 1), 0, 1, 8, 0, Vec::new()).expect("empty");
    assert!(empty.is_empty());
    assert!(empty.xyz().is_err(), "no y and z fields");
    assert_eq!(empty.values::<f64>("x").expect("x").count(), 0);
}

#[test]
fn odometry_validates_and_exposes_its_fields() {
    let odom = odometry();
    assert_eq!(odom.frame_id(), "odom");
    assert_eq!(odom.child_frame_id(), "base_link");
    assert_eq!(odom.stamp(), Timestamp::from_nanos(99));
    assert_eq!(odom.pose().position, Vector3::new(1.0, -2.0, 0.25));
    assert!((odom.pose().orientation.norm() - 1.0).abs() < 1e-12);
    assert_eq!(odom.twist().angular.z, 0.1);
    assert_eq!(odom.pose_covariance()[5][5], 0.06);
    assert_eq!(odom.twist_covariance()[0][0], -1.0);

    let pose = |w| Pose {
        position: Vector3::default(),
        orientation: Quaternion::new(0.0, 0.0, 0.0, w),
    };
    assert!(matches!(
        Odometry::new("a", "b", pose(0.0), Twist::default()),
        Err(OdometryError::NotUnitQuaternion { .. })
    ));
    assert!(matches!(
        Odometry::new("a", "b", pose(f64::NAN), Twist::default()),
        Err(OdometryError::NotFinite { what: "pose" })
    ));
    let fast = Twist {
        linear: Vector3::new(f64::INFINITY, 0.0, 0.0),
        ..Twist::default()
    };
    assert!(matches!(
        Odometry::new("a", "b", Pose::default(), fast),
        Err(OdometryError::NotFinite { what: "twist" })
    ));
    let mut covariance = [[0.0; 6]; 6];
    covariance[2][3] = f64::NAN;
    assert!(odometry().with_pose_covariance(covariance).is_err());
}

#[test]
fn detections_and_grids_round_trip_and_validate() {
    use streamwire_msgs::{DetectionBox, Detections, OccupancyGrid, PerceptionError};
    assert_eq!(Detections::TYPE_NAME, "streamwire/Detections");
    assert_eq!(OccupancyGrid::TYPE_NAME, "streamwire/OccupancyGrid");
    let detections = Detections {
        stamp: Timestamp::from_nanos(9),
        frame_id: "camera".into(),
        boxes: vec![DetectionBox::new(1.0, 2.0, 3.0, 4.0, "ball", 0.5).unwrap()],
    };
    json_round_trip(&detections);
    cbor_round_trip(&detections);
    let grid = OccupancyGrid::new("odom", 0.5, (-1.0, -1.0), 3, 2, vec![-1, 0, 100, 50, 1, -1])
        .unwrap()
        .with_stamp(Timestamp::from_nanos(3));
    json_round_trip(&grid);
    cbor_round_trip(&grid);
    assert_eq!(grid.cell(2, 0), Some(100));
    assert_eq!(grid.cell_at(-0.75, -0.25), Some(50));
    assert_eq!(grid.cells().len(), 6);

    // Constructors and deserialization refuse what is not valid.
    assert_eq!(
        DetectionBox::new(f32::NAN, 0.0, 1.0, 1.0, "x", 1.0),
        Err(PerceptionError::NotFinite)
    );
    assert!(matches!(
        OccupancyGrid::new("odom", 0.5, (0.0, 0.0), 2, 2, vec![0; 3]),
        Err(PerceptionError::GridSize { .. })
    ));
    assert!(matches!(
        OccupancyGrid::new("odom", 0.0, (0.0, 0.0), 1, 1, vec![0]),
        Err(PerceptionError::BadGeometry { .. })
    ));
    let mut json = serde_json::to_value(&grid).unwrap();
    json["width"] = 1000.into();
    assert!(serde_json::from_value::<OccupancyGrid>(json).is_err());
    let mut json = serde_json::to_value(&detections).unwrap();
    json["boxes"][0]["width"] = (-5.0).into();
    assert!(serde_json::from_value::<Detections>(json).is_err());
    let mut bytes = cbor(&grid);
    // A cell of 101 (0x65) in place of 100 (0x64): refused.
    let at = bytes.windows(2).position(|w| w == [0x00, 0x64]).unwrap();
    bytes[at + 1] = 0x65;
    assert!(ciborium::from_reader::<OccupancyGrid, _>(&bytes[..]).is_err());
}

fn transforms() -> Transforms {
    Transforms::new(vec![TransformStamped {
        stamp: Timestamp::from_nanos(77),
        parent_frame_id: "base_link".into(),
        child_frame_id: "camera".into(),
        translation: Vector3::new(0.1, -0.2, 0.3),
        rotation: Quaternion::from_yaw(1.0),
    }])
    .expect("valid")
}

#[test]
fn transforms_validate_and_round_trip() {
    assert_eq!(Transforms::TYPE_NAME, "streamwire/Transforms");
    json_round_trip(&transforms());
    cbor_round_trip(&transforms());
    any_round_trip(&transforms());
    any_round_trip(&Transforms::default());
    let mut bad = transforms().transforms().to_vec();
    bad.push(bad[0].clone());
    bad[1].rotation = Quaternion::new(0.0, 0.0, 0.0, 2.0);
    assert_eq!(
        Transforms::new(bad.clone()),
        Err(TransformError::NotUnitQuaternion {
            index: 1,
            norm: 2.0
        })
    );
    bad[1].rotation = Quaternion::IDENTITY;
    bad[1].translation.x = f64::INFINITY;
    assert_eq!(
        Transforms::new(bad),
        Err(TransformError::NotFinite { index: 1 })
    );
    // Deserializing runs the same checks.
    let mut value = serde_json::to_value(transforms()).expect("to JSON");
    value["transforms"][0]["rotation"]["w"] = 5.0.into();
    assert!(serde_json::from_value::<Transforms>(value).is_err());
}

#[test]
fn log_records_round_trip_and_levels_are_ros_numbers() {
    assert_eq!(LogRecord::TYPE_NAME, "streamwire/LogRecord");
    let record = LogRecord::new(LogLevel::Fatal, "planner", "no path")
        .with_stamp(Timestamp::from_nanos(3))
        .with_location("planner.rs", "plan", 120);
    json_round_trip(&record);
    cbor_round_trip(&record);
    any_round_trip(&record);
    let numbers: Vec<u8> = LogLevel::ALL.iter().map(|l| l.ros_level()).collect();
    assert_eq!(numbers, [10, 20, 30, 40, 50]);
    for level in LogLevel::ALL {
        assert_eq!(LogLevel::from_ros_level(level.ros_level()), Some(level));
    }
    assert_eq!(LogLevel::from_ros_level(0), None);
    assert!(LogLevel::Debug < LogLevel::Fatal);
    // An unknown level is refused when deserializing.
    let mut value = serde_json::to_value(&record).expect("to JSON");
    value["level"] = "Loud".into();
    assert!(serde_json::from_value::<LogRecord>(value).is_err());
}
