//! Property round trips: any valid message written as CDR here reads back equal, its
//! pixels and points as slices of the buffer read (no copy).

use bytes::Bytes;
use proptest::prelude::*;
use streamwire::Timestamp;
use streamwire::msgs::{
    DepthEncoding, DepthImage, DetectionBox, Detections, Image, ImageEncoding, LogLevel, LogRecord,
    Odometry, PointCloud, PointDatatype, PointField, Pose, Quaternion, TransformStamped,
    Transforms, Twist, Vector3,
};
use streamwire_ros2::{RosMessage, SensorImage};

/// Stamps `builtin_interfaces/Time` can hold (int32 seconds).
fn stamp() -> impl Strategy<Value = Timestamp> {
    (0u64..=i32::MAX as u64 * 1_000_000_000 + 999_999_999).prop_map(Timestamp::from_nanos)
}

fn text() -> impl Strategy<Value = String> {
    "\\PC{0,12}"
}

fn finite() -> impl Strategy<Value = f64> {
    -1e6f64..1e6
}

fn vector() -> impl Strategy<Value = Vector3> {
    (finite(), finite(), finite()).prop_map(|(x, y, z)| Vector3::new(x, y, z))
}

fn round_trip<M: RosMessage + PartialEq + std::fmt::Debug>(message: &M) -> M {
    let cdr = message.to_cdr().expect("encodes");
    M::from_cdr(cdr).expect("decodes")
}

proptest! {
    #[test]
    fn images_round_trip_without_copying_pixels(
        width in 1u32..20, height in 1u32..20, padding in 0u32..9,
        encoding in prop::sample::select(ImageEncoding::ALL.to_vec()),
        stamp in stamp(), frame in text(),
    ) {
        let step = width * encoding.bytes_per_pixel() + padding;
        let data: Vec<u8> = (0..step * height).map(|i| (i % 253) as u8).collect();
        let image = Image::new(width, height, encoding, step, data).unwrap()
            .with_stamp(stamp).with_frame_id(frame);
        let cdr = Bytes::from(image.to_cdr().unwrap());
        let back = Image::from_cdr(cdr.clone()).unwrap();
        prop_assert_eq!(&back, &image);
        let pixels = back.data().as_ptr() as usize;
        let buffer = cdr.as_ptr() as usize;
        prop_assert!(pixels >= buffer && pixels + back.data().len() <= buffer + cdr.len());
    }

    #[test]
    fn depth_round_trips_and_is_told_from_colour(
        width in 1u32..20, height in 1u32..20, padding in 0u32..9,
        encoding in prop::sample::select(DepthEncoding::ALL.to_vec()), stamp in stamp(),
    ) {
        let step = width * encoding.bytes_per_pixel() + padding;
        let data: Vec<u8> = (0..step * height).map(|i| (i % 251) as u8).collect();
        let depth = DepthImage::new(width, height, encoding, step, data).unwrap().with_stamp(stamp);
        prop_assert_eq!(&round_trip(&depth), &depth);
        let cdr = depth.to_cdr().unwrap();
        prop_assert_eq!(SensorImage::from_cdr(cdr.clone()).unwrap(), SensorImage::Depth(depth));
        prop_assert!(Image::from_cdr(cdr).is_err());
    }

    #[test]
    fn clouds_round_trip(
        width in 0u32..50, height in 0u32..4, extra in 0u32..8, dense: bool, big: bool,
        stamp in stamp(),
    ) {
        let fields = vec![
            PointField::new("x", 0, PointDatatype::Float32, 1),
            PointField::new("rgb", 4, PointDatatype::Uint8, 3),
        ];
        let row_step = width * 8 + extra;
        let data: Vec<u8> = (0..row_step * height).map(|i| (i % 7) as u8).collect();
        let cloud = PointCloud::new(fields, width, height, 8, row_step, data).unwrap()
            .with_dense(dense).with_bigendian(big).with_stamp(stamp);
        prop_assert_eq!(&round_trip(&cloud), &cloud);
    }

    #[test]
    fn odometry_and_twist_round_trip(
        position in vector(), yaw in -3.2f64..3.2, linear in vector(), angular in vector(),
        covariance in prop::array::uniform6(prop::array::uniform6(finite())),
        frame in text(), child in text(), stamp in stamp(),
    ) {
        let pose = Pose { position, orientation: Quaternion::from_yaw(yaw) };
        let twist = Twist { linear, angular };
        let odometry = Odometry::new(frame, child, pose, twist).unwrap().with_stamp(stamp)
            .with_pose_covariance(covariance).unwrap();
        prop_assert_eq!(&round_trip(&odometry), &odometry);
        prop_assert_eq!(round_trip(&twist), twist);
    }

    #[test]
    fn transforms_and_logs_round_trip(
        frames in prop::collection::vec((text(), text(), vector(), -3.2f64..3.2, stamp()), 0..6),
        level in prop::sample::select(LogLevel::ALL.to_vec()),
        name in text(), msg in text(), line: u32, stamp in stamp(),
    ) {
        let transforms: Vec<TransformStamped> = frames.into_iter()
            .map(|(parent, child, translation, yaw, stamp)| TransformStamped {
                stamp, parent_frame_id: parent.into(), child_frame_id: child.into(),
                translation, rotation: Quaternion::from_yaw(yaw),
            })
            .collect();
        let tf = Transforms::new(transforms).unwrap();
        prop_assert_eq!(&round_trip(&tf), &tf);
        let log = LogRecord::new(level, name, msg).with_stamp(stamp).with_location("f.rs", "g", line);
        prop_assert_eq!(&round_trip(&log), &log);
    }

    /// Boxes of integer and half-pixel coordinates come back exactly through the
    /// centre-and-size form of `vision_msgs/BoundingBox2D`.
    #[test]
    fn detections_round_trip(
        boxes in prop::collection::vec((0u16..4000, 0u16..4000, 0u16..500, 0u16..500, text(), 0u16..=1000), 0..8),
        stamp in stamp(),
    ) {
        let boxes = boxes.into_iter()
            .map(|(x, y, w, h, label, score)| DetectionBox::new(
                f32::from(x) / 2.0, f32::from(y) / 2.0, f32::from(w), f32::from(h), label,
                f32::from(score) / 1000.0,
            ).unwrap())
            .collect();
        let detections = Detections { stamp, frame_id: "camera".into(), boxes };
        prop_assert_eq!(&round_trip(&detections), &detections);
    }
}
