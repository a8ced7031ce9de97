//! Replays the shape fuzz corpus (`fuzz/corpus/shape`) through the fuzz target's own check
//! (`fuzz/check.rs`) with its counting allocator: no ROS 2 CDR, read as one of the relay's
//! types into its rosbridge shape with typed arrays, panics, takes more heap than the
//! limit, or writes JSON or CBOR that does not parse or a typed array of a part element.
//!
//! The seeds are the CDR of real messages of every type the relay shapes (first byte: the
//! type's index in `streamwire_web::fuzzing::ROS_TYPES`). `cargo test -p streamwire-web
//! --test shape_fuzz_corpus -- --ignored` writes them again (names `seed-*`).

#![expect(
    clippy::unwrap_used,
    reason = "seed writers: a failure is the test failing"
)]

#[path = "../fuzz/check.rs"]
mod check;

use std::path::PathBuf;

use streamwire::Codec;
use streamwire::Timestamp;
use streamwire::msgs::{
    CompressedImage, DepthImage, DetectionBox, Detections, Image, ImageEncoding, Jpeg, LogLevel,
    LogRecord, OccupancyGrid, Odometry, PointCloud, PointDatatype, PointField, Pose, Quaternion,
    TransformStamped, Transforms, Twist, Vector3,
};
use streamwire_ros2::RosMessage;
use streamwire_testdata::alloc::CountingAlloc;
use streamwire_web::fuzzing::ROS_TYPES;

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/shape")
}

#[test]
fn shape_fuzz_corpus_replays_cleanly() {
    let (mut inputs, mut read) = (0, 0);
    for entry in std::fs::read_dir(corpus()).expect("corpus directory") {
        let path = entry.expect("corpus entry").path();
        let input = std::fs::read(&path).expect("corpus file");
        read += usize::from(check::shape(&input));
        inputs += 1;
    }
    println!("replayed {inputs} inputs, {read} read");
    assert!(inputs >= 12, "corpus has only {inputs} inputs");
    assert!(read >= 12, "only {read} inputs read");
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

fn seed<M: RosMessage>(name: &str, message: &M) -> (String, Vec<u8>) {
    let index = ROS_TYPES.iter().position(|t| *t == M::ROS_TYPE).unwrap();
    let mut input = vec![u8::try_from(index).unwrap()];
    input.extend(message.to_cdr().unwrap());
    (format!("seed-{name}"), input)
}

/// Writes the seeds (see the module's documentation).
#[test]
#[ignore = "writes the seed corpus: run by hand after a message or schema change"]
fn write_shape_seeds() {
    let stamp = Timestamp::from_nanos(1_733_000_000_123_456_789);
    let fields = vec![
        PointField::new("x", 0, PointDatatype::Float32, 1),
        PointField::new("y", 4, PointDatatype::Float32, 1),
        PointField::new("z", 8, PointDatatype::Float32, 1),
        PointField::new("intensity", 12, PointDatatype::Uint16, 1),
        PointField::new("ring", 14, PointDatatype::Uint8, 2),
    ];
    let twist = Twist {
        linear: Vector3::new(0.5, -0.25, 0.0),
        angular: Vector3::new(0.0, 0.0, 1.125),
    };
    let pose = Pose {
        position: Vector3::new(1.0, -2.5, 0.125),
        orientation: Quaternion::from_yaw(0.75),
    };
    let image = Image::from_packed(3, 2, ImageEncoding::Rgb8, pattern(18)).unwrap();
    let jpeg: CompressedImage = Jpeg::default()
        .encode(&Image::from_packed(16, 8, ImageEncoding::Rgb8, pattern(384)).unwrap())
        .unwrap();
    let arm = TransformStamped {
        stamp,
        parent_frame_id: "base_link".into(),
        child_frame_id: "arm".into(),
        translation: Vector3::new(0.25, 0.0, 1.5),
        rotation: Quaternion::from_yaw(-1.0),
    };
    let cells: Vec<i8> = (0..12)
        .map(|i| if i % 5 == 0 { -1 } else { i * 9 })
        .collect();
    let seeds = [
        seed("image", &image.with_stamp(stamp).with_frame_id("camera")),
        seed(
            "depth-mm",
            &DepthImage::from_mm(4, 2, &[0, 1, 500, 1000, 1500, 2000, 65534, 65535]).unwrap(),
        ),
        seed(
            "depth-m",
            &DepthImage::from_m(3, 1, &[0.5, f32::NAN, 12.25]).unwrap(),
        ),
        seed("jpeg", &jpeg.with_frame_id("camera")),
        seed(
            "cloud",
            &PointCloud::new(fields.clone(), 3, 1, 16, 48, pattern(48))
                .unwrap()
                .with_dense(true),
        ),
        seed(
            "cloud-empty",
            &PointCloud::new(fields, 0, 0, 16, 0, Vec::new()).unwrap(),
        ),
        seed("twist", &twist),
        seed(
            "odometry",
            &Odometry::new("odom", "base_link", pose, twist)
                .unwrap()
                .with_stamp(stamp),
        ),
        seed(
            "grid",
            &OccupancyGrid::new("map", 0.25, (-1.5, 2.0), 4, 3, cells).unwrap(),
        ),
        seed(
            "detections",
            &Detections {
                stamp,
                frame_id: "camera".into(),
                boxes: vec![
                    DetectionBox::new(10.0, 20.0, 30.5, 40.25, "person", 0.875).unwrap(),
                    DetectionBox::new(100.5, 7.0, 3.0, 9.0, "ball", 0.5).unwrap(),
                ],
            },
        ),
        seed("transforms", &Transforms::new(vec![arm]).unwrap()),
        seed(
            "log",
            &LogRecord::new(LogLevel::Warn, "camera_driver", "frame dropped: ünïcode ✓")
                .with_stamp(stamp)
                .with_location("src/camera.rs", "step", 42),
        ),
    ];
    let dir = corpus();
    std::fs::create_dir_all(&dir).unwrap();
    for (name, input) in seeds {
        assert!(check::shape(&input), "{name} reads");
        std::fs::write(dir.join(name), input).unwrap();
    }
}
