//! The mapping rules of RFC.md section 13: what a ROS message holds that a built-in message
//! cannot is refused with the rule, never dropped unsaid; the stated conversions hold.

use streamwire::Codec;
use streamwire::Timestamp;
use streamwire::msgs::{
    CompressedImage, DepthEncoding, DepthImage, Detections, Image, ImageEncoding, LogRecord,
    OccupancyGrid, Zstd,
};
use streamwire_ros2::cdr::CdrWriter;
use streamwire_ros2::{DecodeError, EncodeError, RosMessage, SensorImage};

fn header(w: &mut CdrWriter, sec: i32, nanosec: u32, frame_id: &str) {
    w.i32(sec);
    w.u32(nanosec);
    w.string(frame_id, "frame_id").expect("short");
}

/// A `sensor_msgs/msg/Image` as ROS writes it.
fn ros_image(encoding: &str, is_bigendian: u8, width: u32, height: u32, step: u32) -> Vec<u8> {
    let mut w = CdrWriter::new();
    header(&mut w, 1, 2, "cam");
    w.u32(height);
    w.u32(width);
    w.string(encoding, "encoding").expect("short");
    w.u8(is_bigendian);
    w.u32(step);
    let len = usize::try_from(step * height).expect("small");
    w.bytes(&vec![7u8; len], "data").expect("short");
    w.finish()
}

fn unmapped_field(result: Result<impl std::fmt::Debug, DecodeError>) -> &'static str {
    match result {
        Err(DecodeError::Unmapped { field, .. }) => field,
        other => panic!("expected a refusal by rule, got {other:?}"),
    }
}

#[test]
fn the_encoding_picks_the_image_type() {
    let depth = ros_image("16UC1", 0, 2, 1, 4);
    assert!(matches!(
        SensorImage::from_cdr(depth.clone()),
        Ok(SensorImage::Depth(d)) if d.encoding() == DepthEncoding::Mm16
    ));
    assert_eq!(unmapped_field(Image::from_cdr(depth)), "encoding");
    let colour = ros_image("bgr8", 1, 2, 1, 6);
    // One byte per channel: is_bigendian does not matter.
    assert!(matches!(
        SensorImage::from_cdr(colour.clone()),
        Ok(SensorImage::Color(i)) if i.encoding() == ImageEncoding::Bgr8
    ));
    assert_eq!(unmapped_field(DepthImage::from_cdr(colour)), "encoding");
    assert_eq!(
        unmapped_field(SensorImage::from_cdr(ros_image("yuv422", 0, 2, 1, 4))),
        "encoding"
    );
    assert_eq!(
        unmapped_field(SensorImage::from_cdr(ros_image("32FC1", 1, 1, 1, 4))),
        "is_bigendian"
    );
    // ROS allows a 0x0 image; a built-in image has a pixel.
    assert!(matches!(
        SensorImage::from_cdr(ros_image("rgb8", 0, 0, 0, 0)),
        Err(DecodeError::Invalid { .. })
    ));
}

#[test]
fn stamps_fit_builtin_interfaces_time() {
    let mut w = CdrWriter::new();
    header(&mut w, -1, 0, "cam");
    assert_eq!(
        unmapped_field(Detections::read_cdr(
            &mut streamwire_ros2::cdr::CdrReader::new(w.finish().into()).expect("header")
        )),
        "header.stamp"
    );
    let late = Image::from_packed(1, 1, ImageEncoding::Mono8, vec![0])
        .expect("valid")
        .with_stamp(Timestamp::from_nanos((i32::MAX as u64 + 1) * 1_000_000_000));
    assert!(matches!(
        late.to_cdr(),
        Err(EncodeError::StampOutOfRange { .. })
    ));
}

#[test]
fn compressed_images_take_their_size_from_the_data() {
    // Streamwire's own zstd depth has no size in its data: refused.
    let depth = DepthImage::from_mm(4, 2, &[1; 8]).expect("valid");
    let zstd: CompressedImage = Zstd::default().encode(&depth).expect("encodes");
    let cdr = zstd.to_cdr().expect("encodes");
    assert_eq!(unmapped_field(CompressedImage::from_cdr(cdr)), "data");
    // A PNG's IHDR gives it.
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend(640u32.to_be_bytes());
    png.extend(480u32.to_be_bytes());
    png.extend([8, 2, 0, 0, 0]);
    let frame = CompressedImage::new("rgb8; png compressed bgr8", png, 1, 1).expect("valid");
    let back = CompressedImage::from_cdr(frame.to_cdr().expect("encodes")).expect("decodes");
    assert_eq!((back.original_width(), back.original_height()), (640, 480));
}

fn ros_grid(origin: [f64; 7], resolution: f32) -> Vec<u8> {
    let mut w = CdrWriter::new();
    header(&mut w, 3, 0, "map");
    w.i32(99);
    w.u32(0);
    w.f32(resolution);
    w.u32(2);
    w.u32(1);
    for value in origin {
        w.f64(value);
    }
    w.bytes(&[0, 100], "data").expect("short");
    w.finish()
}

#[test]
fn grids_are_axis_aligned_and_resolutions_float32() {
    let grid = OccupancyGrid::from_cdr(ros_grid([1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0], 0.05))
        .expect("decodes");
    assert_eq!(grid.origin(), (1.0, 2.0));
    assert_eq!(grid.resolution(), f64::from(0.05f32));
    assert_eq!(grid.stamp(), Timestamp::from_nanos(3_000_000_000)); // not map_load_time
    let rotated = ros_grid([1.0, 2.0, 0.0, 0.0, 0.0, 0.6, 0.8], 0.05);
    assert_eq!(
        unmapped_field(OccupancyGrid::from_cdr(rotated)),
        "info.origin"
    );
    let raised = ros_grid([1.0, 2.0, 0.5, 0.0, 0.0, 0.0, 1.0], 0.05);
    assert_eq!(
        unmapped_field(OccupancyGrid::from_cdr(raised)),
        "info.origin"
    );
}

/// One `Detection2D` with the given hypotheses and box.
fn ros_detections(hypotheses: &[(&str, f64)], bbox: [f64; 5]) -> Vec<u8> {
    let mut w = CdrWriter::new();
    header(&mut w, 0, 5, "cam");
    w.sequence_len(1, "detections").expect("short");
    header(&mut w, 9, 9, "other");
    w.sequence_len(hypotheses.len(), "results").expect("short");
    for (class_id, score) in hypotheses {
        w.string(class_id, "class_id").expect("short");
        w.f64(*score);
        for value in [0.5, 0.5, 0.5, 0.0, 0.0, 0.0, 1.0] {
            w.f64(value);
        }
        w.f64_array(&[0.25; 36]);
    }
    for value in bbox {
        w.f64(value);
    }
    w.string("track-7", "id").expect("short");
    w.finish()
}

#[test]
fn detections_keep_the_best_hypothesis_of_axis_aligned_boxes() {
    let cdr = ros_detections(
        &[("cat", 0.25), ("dog", 0.75), ("cow", 0.75)],
        [50.0, 40.0, 0.0, 20.0, 10.0],
    );
    let detections = Detections::from_cdr(cdr).expect("decodes");
    assert_eq!(detections.frame_id.as_ref(), "cam");
    let b = &detections.boxes[0];
    assert_eq!((b.label(), b.score()), ("dog", 0.75));
    assert_eq!(
        (b.x(), b.y(), b.width(), b.height()),
        (40.0, 35.0, 20.0, 10.0)
    );
    let none =
        Detections::from_cdr(ros_detections(&[], [1.0, 1.0, 0.0, 2.0, 2.0])).expect("decodes");
    assert_eq!((none.boxes[0].label(), none.boxes[0].score()), ("", 0.0));
    let rotated = ros_detections(&[("cat", 1.0)], [1.0, 1.0, 0.3, 2.0, 2.0]);
    assert_eq!(
        unmapped_field(Detections::from_cdr(rotated)),
        "detections.bbox.center.theta"
    );
}

#[test]
fn log_levels_are_ros_levels() {
    let mut w = CdrWriter::new();
    w.i32(1);
    w.u32(0);
    w.u8(25);
    for text in ["n", "m", "f", "g"] {
        w.string(text, "text").expect("short");
    }
    w.u32(1);
    assert_eq!(unmapped_field(LogRecord::from_cdr(w.finish())), "level");
}
