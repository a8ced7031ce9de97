//! What the tests share: one sample message or more of every mapped type, and the
//! reference tools (rosbags in a Python venv, Foxglove's libraries in node_modules).
#![allow(dead_code, unreachable_pub, reason = "each test binary uses a part")]
#![expect(
    clippy::unwrap_used,
    reason = "test samples: a failure is the test failing"
)]

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use bytes::Bytes;
use streamwire::Codec;
use streamwire::Timestamp;
use streamwire::msgs::{
    CompressedImage, DepthImage, DetectionBox, Detections, Image, ImageEncoding, Jpeg, LogLevel,
    LogRecord, OccupancyGrid, Odometry, PointCloud, PointDatatype, PointField, Pose, Quaternion,
    TransformStamped, Transforms, Twist, Vector3,
};
use streamwire_ros2::RosMessage;
use streamwire_ros2::schema::RosSchema;

/// One sample: a message written as CDR here, and how to check bytes decode back to it.
pub struct Case {
    pub name: String,
    pub ros_type: &'static str,
    pub cdr: Vec<u8>,
    pub schema: RosSchema,
    /// Decodes `bytes` as the sample's type and says how it differs from the sample.
    pub check: Box<dyn Fn(Bytes) -> Result<(), String>>,
}

pub fn case<M: RosMessage + PartialEq + Debug + 'static>(name: &str, message: M) -> Case {
    let cdr = message.to_cdr().expect("encodes");
    Case {
        name: name.to_owned(),
        ros_type: M::ROS_TYPE,
        cdr,
        schema: M::ros_schema().expect("schema"),
        check: Box::new(move |bytes| match M::from_cdr(bytes) {
            Ok(back) if back == message => Ok(()),
            Ok(back) => Err(format!("decoded {back:?}\n  expected {message:?}")),
            Err(e) => Err(format!("decode failed: {e}")),
        }),
    }
}

fn stamp() -> Timestamp {
    Timestamp::from_nanos(1_733_000_000_123_456_789)
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

pub fn images() -> Vec<Case> {
    let mut cases = Vec::new();
    for encoding in ImageEncoding::ALL {
        let bpp = encoding.bytes_per_pixel() as usize;
        let image = Image::from_packed(3, 2, encoding, pattern(3 * 2 * bpp))
            .unwrap()
            .with_stamp(stamp())
            .with_frame_id("camera");
        cases.push(case(&format!("image_{encoding}"), image));
    }
    // Rows padded to 8 bytes (3 mono8 pixels each).
    let padded = Image::new(3, 3, ImageEncoding::Mono8, 8, pattern(24)).unwrap();
    cases.push(case("image_padded_rows", padded.with_frame_id("cam")));
    let large = Image::from_packed(640, 480, ImageEncoding::Rgb8, pattern(640 * 480 * 3)).unwrap();
    cases.push(case("image_large_640x480", large.with_stamp(stamp())));
    let mm = DepthImage::from_mm(4, 2, &[0, 1, 500, 1000, 1500, 2000, 65534, 65535]).unwrap();
    cases.push(case(
        "depth_16uc1",
        mm.with_stamp(stamp()).with_frame_id("depth"),
    ));
    let metres = DepthImage::from_m(3, 1, &[0.5, f32::NAN, 12.25]).unwrap();
    cases.push(case("depth_32fc1", metres.with_frame_id("depth")));
    // 32FC1 rows of 2 values padded to 12 bytes.
    let padded =
        DepthImage::new(2, 2, streamwire::msgs::DepthEncoding::M32F, 12, pattern(24)).unwrap();
    cases.push(case("depth_32fc1_padded_rows", padded));
    cases
}

pub fn compressed() -> Vec<Case> {
    let image = Image::from_packed(16, 8, ImageEncoding::Rgb8, pattern(16 * 8 * 3)).unwrap();
    let jpeg: CompressedImage = Jpeg::default().encode(&image).unwrap();
    let jpeg = jpeg.with_stamp(stamp()).with_frame_id("camera");
    vec![case("compressed_jpeg", jpeg)]
}

fn fields() -> Vec<PointField> {
    vec![
        PointField::new("x", 0, PointDatatype::Float32, 1),
        PointField::new("y", 4, PointDatatype::Float32, 1),
        PointField::new("z", 8, PointDatatype::Float32, 1),
        PointField::new("intensity", 12, PointDatatype::Uint16, 1),
        PointField::new("ring", 14, PointDatatype::Uint8, 2),
    ]
}

pub fn clouds() -> Vec<Case> {
    let small = PointCloud::new(fields(), 3, 1, 16, 48, pattern(48))
        .unwrap()
        .with_dense(true)
        .with_stamp(stamp())
        .with_frame_id("lidar");
    let empty = PointCloud::new(fields(), 0, 0, 16, 0, Vec::new()).unwrap();
    let organized = PointCloud::new(fields(), 2, 2, 16, 40, pattern(80)).unwrap();
    let large = PointCloud::new(fields(), 100_000, 1, 16, 1_600_000, pattern(1_600_000)).unwrap();
    vec![
        case("cloud_small", small),
        case("cloud_empty", empty),
        case("cloud_organized_padded_rows", organized),
        case("cloud_large_100k", large),
    ]
}

pub fn geometry() -> Vec<Case> {
    let twist = Twist {
        linear: Vector3::new(0.5, -0.25, 0.0),
        angular: Vector3::new(0.0, 0.0, 1.125),
    };
    let pose = Pose {
        position: Vector3::new(1.0, -2.5, 0.125),
        orientation: Quaternion::from_yaw(0.75),
    };
    let mut covariance = [[0.0; 6]; 6];
    for (i, row) in covariance.iter_mut().enumerate() {
        for (j, value) in row.iter_mut().enumerate() {
            *value = (i * 6 + j) as f64 / 64.0;
        }
    }
    let odometry = Odometry::new("odom", "base_link", pose, twist)
        .unwrap()
        .with_stamp(stamp())
        .with_pose_covariance(covariance)
        .unwrap()
        .with_twist_covariance(covariance)
        .unwrap();
    vec![case("twist", twist), case("odometry", odometry)]
}

pub fn grids() -> Vec<Case> {
    let cells: Vec<i8> = (0..12)
        .map(|i| if i % 5 == 0 { -1 } else { (i * 9) as i8 })
        .collect();
    let grid = OccupancyGrid::new("map", 0.25, (-1.5, 2.0), 4, 3, cells)
        .unwrap()
        .with_stamp(stamp());
    let empty = OccupancyGrid::new("map", 0.5, (0.0, 0.0), 0, 0, Vec::new()).unwrap();
    vec![case("grid", grid), case("grid_empty", empty)]
}

pub fn detections() -> Vec<Case> {
    let boxes = vec![
        DetectionBox::new(10.0, 20.0, 30.5, 40.25, "person", 0.875).unwrap(),
        DetectionBox::new(0.0, 0.0, 0.0, 0.0, "", 0.0).unwrap(),
        DetectionBox::new(100.5, 7.0, 3.0, 9.0, "ball", 0.5).unwrap(),
    ];
    let some = Detections {
        stamp: stamp(),
        frame_id: "camera".into(),
        boxes,
    };
    let none = Detections {
        stamp: Timestamp::ZERO,
        frame_id: "".into(),
        boxes: Vec::new(),
    };
    vec![case("detections", some), case("detections_empty", none)]
}

pub fn transforms() -> Vec<Case> {
    let arm = TransformStamped {
        stamp: stamp(),
        parent_frame_id: "base_link".into(),
        child_frame_id: "arm".into(),
        translation: Vector3::new(0.25, 0.0, 1.5),
        rotation: Quaternion::from_yaw(-1.0),
    };
    let camera = TransformStamped {
        stamp: Timestamp::from_nanos(5),
        parent_frame_id: "arm".into(),
        child_frame_id: "camera".into(),
        translation: Vector3::new(0.0, 0.0, 0.0),
        rotation: Quaternion::IDENTITY,
    };
    vec![
        case("transforms", Transforms::new(vec![arm, camera]).unwrap()),
        case("transforms_empty", Transforms::default()),
    ]
}

pub fn logs() -> Vec<Case> {
    LogLevel::ALL
        .into_iter()
        .map(|level| {
            let record = LogRecord::new(level, "camera_driver", "frame dropped: ünïcode ✓")
                .with_stamp(stamp())
                .with_location("src/camera.rs", "step", 42);
            case(&format!("log_{}", level.ros_level()), record)
        })
        .collect()
}

/// Every sample of every mapped type.
pub fn all_cases() -> Vec<Case> {
    [
        images(),
        compressed(),
        clouds(),
        geometry(),
        grids(),
        detections(),
        transforms(),
        logs(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

// ---- the reference tools ------------------------------------------------------------

pub fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop")
}

pub fn msg_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("msg")
}

/// Prints why a test skips, or fails it under `STREAMWIRE_REQUIRE=all`
/// ([`streamwire_testdata::skip`]).
fn missing(reason: String) -> Option<PathBuf> {
    streamwire_testdata::skip(reason);
    None
}

/// The venv's Python with rosbags: `STREAMWIRE_ROS2_PYTHON`, by default the venv `.ci/run`
/// makes in tests/interop/.venv.
pub fn rosbags_python() -> Option<PathBuf> {
    let python = std::env::var_os("STREAMWIRE_ROS2_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| interop_dir().join(".venv/bin/python"));
    if python.exists() {
        Some(python)
    } else {
        missing(format!(
            "{} is absent (python3 -m venv tests/interop/.venv && tests/interop/.venv/bin/pip install -r tests/interop/requirements.txt, or set STREAMWIRE_ROS2_PYTHON)",
            python.display()
        ))
    }
}

/// Foxglove's libraries: `STREAMWIRE_ROS2_NODE_MODULES`, by default tests/interop/node_modules
/// (`npm ci` there).
pub fn foxglove_node_modules() -> Option<PathBuf> {
    let modules = std::env::var_os("STREAMWIRE_ROS2_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| interop_dir().join("node_modules"));
    if !modules.join("@foxglove/rosmsg2-serialization").exists() {
        return missing(format!(
            "{}/@foxglove/rosmsg2-serialization is absent (npm ci in tests/interop, or set STREAMWIRE_ROS2_NODE_MODULES)",
            modules.display()
        ));
    }
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        return missing("node is not on PATH".to_owned());
    }
    Some(modules)
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// Asks rosbags: `ops` in, one answer per op out.
pub fn rosbags(python: &Path, ops: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    let request = serde_json::json!({ "msg_dir": msg_dir(), "ops": ops });
    let mut command = Command::new(python);
    command.arg(interop_dir().join("rosbags_tool.py"));
    let out = streamwire_testdata::process::run_bounded(
        command,
        request.to_string().as_bytes(),
        Duration::from_secs(300),
    );
    serde_json::from_slice(&out).expect("rosbags answers JSON")
}

/// Asks Foxglove's libraries to parse each text and decode each CDR buffer.
pub fn foxglove(modules: &Path, items: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    let request = serde_json::json!({ "items": items });
    let mut command = Command::new("node");
    command
        .arg(interop_dir().join("foxglove_tool.js"))
        .env("NODE_PATH", modules);
    let out = streamwire_testdata::process::run_bounded(
        command,
        request.to_string().as_bytes(),
        Duration::from_secs(300),
    );
    serde_json::from_slice(&out).expect("node answers JSON")
}
