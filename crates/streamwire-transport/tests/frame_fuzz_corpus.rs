//! Replays the wire frame fuzz corpus (`fuzz/corpus/frame`) through the fuzz target's own
//! check (`fuzz/check.rs`) with its counting allocator: no input panics, takes more heap
//! than the limit, or reads a message that does not write and read back the same.
//!
//! The seeds are real frames from the encoder, every message type of streamwire-msgs, in
//! both versions (a version 2 frame as the parts the encoder writes, and joined), control
//! frames, a frame marked unsent, and frames cut into other parts. `cargo test -p
//! streamwire-transport --test frame_fuzz_corpus -- --ignored` writes them again (names
//! `seed-*`; inputs the fuzzer found are kept by their hash names).

#![expect(
    clippy::unwrap_used,
    reason = "seed writers: a failure is the test failing"
)]

#[path = "../fuzz/check.rs"]
mod check;

use std::path::PathBuf;

use streamwire::Codec;
use streamwire_core::{AnyMessage, Header, Timestamp};
use streamwire_msgs::{
    CompressedImage, DepthImage, DetectionBox, Detections, Image, ImageEncoding, Jpeg, LogLevel,
    LogRecord, OccupancyGrid, Odometry, PointCloud, PointDatatype, PointField, Pose, Quaternion,
    TransformStamped, Transforms, Twist, Vector3,
};
use streamwire_testdata::alloc::CountingAlloc;
use streamwire_transport::{FrameBytes, WireFrame};

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/frame")
}

#[test]
fn frame_fuzz_corpus_replays_cleanly() {
    let mut outcomes = Vec::new();
    for entry in std::fs::read_dir(corpus()).expect("corpus directory") {
        let path = entry.expect("corpus entry").path();
        let input = std::fs::read(&path).expect("corpus file");
        outcomes.push(check::check(&input));
    }
    // The limit's reasoning (see `check::HEAP_PER_BYTE`): the largest element of a
    // message's sequence fits in it.
    let largest = [
        size_of::<TransformStamped>(),
        size_of::<DetectionBox>(),
        size_of::<PointField>(),
    ];
    assert!(
        largest.iter().all(|&size| size <= check::HEAP_PER_BYTE),
        "{largest:?}"
    );
    let read = outcomes
        .iter()
        .filter(|o| **o == check::Outcome::Read)
        .count();
    println!(
        "replayed {} inputs, {read} read as messages",
        outcomes.len()
    );
    assert!(
        outcomes.len() >= 20,
        "corpus has only {} inputs",
        outcomes.len()
    );
    // The registry is linked (every message seed reads): else the target fuzzes refusals.
    assert!(read >= 15, "only {read} inputs read as messages");
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

/// One message of every type of streamwire-msgs, small (version 1) and, for the types
/// with a blob field, large enough for a blob (version 2).
fn messages() -> Vec<(&'static str, Box<dyn AnyMessage>)> {
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
    let small = Image::from_packed(3, 2, ImageEncoding::Rgb8, pattern(18)).unwrap();
    let large = Image::from_packed(32, 32, ImageEncoding::Rgb8, pattern(3072)).unwrap();
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
    vec![
        (
            "image-small",
            Box::new(small.with_stamp(stamp).with_frame_id("camera")),
        ),
        ("image-blob", Box::new(large.with_frame_id("camera"))),
        (
            "image-padded",
            Box::new(Image::new(3, 3, ImageEncoding::Mono8, 8, pattern(24)).unwrap()),
        ),
        ("jpeg", Box::new(jpeg.with_stamp(stamp))),
        (
            "jpeg-blob",
            Box::new(CompressedImage::new("jpeg", pattern(4000), 64, 48).unwrap()),
        ),
        (
            "depth-mm",
            Box::new(
                DepthImage::from_mm(4, 2, &[0, 1, 500, 1000, 1500, 2000, 65534, 65535]).unwrap(),
            ),
        ),
        (
            "depth-m-blob",
            Box::new(DepthImage::from_m(32, 24, &[0.5; 768]).unwrap()),
        ),
        (
            "cloud-small",
            Box::new(PointCloud::new(fields.clone(), 3, 1, 16, 48, pattern(48)).unwrap()),
        ),
        (
            "cloud-blob",
            Box::new(PointCloud::new(fields, 200, 1, 16, 3200, pattern(3200)).unwrap()),
        ),
        ("twist", Box::new(twist)),
        (
            "odometry",
            Box::new(
                Odometry::new("odom", "base_link", pose, twist)
                    .unwrap()
                    .with_stamp(stamp),
            ),
        ),
        (
            "grid",
            Box::new(OccupancyGrid::new("map", 0.25, (-1.5, 2.0), 4, 3, cells).unwrap()),
        ),
        (
            "detections",
            Box::new(Detections {
                stamp,
                frame_id: "camera".into(),
                boxes: vec![
                    DetectionBox::new(10.0, 20.0, 30.5, 40.25, "person", 0.875).unwrap(),
                    DetectionBox::new(100.5, 7.0, 3.0, 9.0, "ball", 0.5).unwrap(),
                ],
            }),
        ),
        ("transforms", Box::new(Transforms::new(vec![arm]).unwrap())),
        (
            "log",
            Box::new(
                LogRecord::new(LogLevel::Warn, "camera_driver", "frame dropped: ünïcode ✓")
                    .with_location("src/camera.rs", "step", 42),
            ),
        ),
    ]
}

/// The input of `frame` cut as its parts are (at most 4 parts; more are joined into the
/// last): what a seed stores.
fn input_of(frame: &FrameBytes) -> Vec<u8> {
    let parts = frame.parts();
    let cuts = parts.len().saturating_sub(1).min(3);
    let mut input = vec![u8::try_from(cuts).expect("at most 3")];
    for part in &parts[..cuts] {
        let len = u16::try_from(part.len()).expect("a seed's part fits in u16");
        input.extend_from_slice(&len.to_le_bytes());
    }
    for part in parts {
        input.extend_from_slice(part);
    }
    input
}

/// Writes the seeds (see the module's documentation).
#[test]
#[ignore = "writes the seed corpus: run by hand after a frame or message change"]
fn write_frame_seeds() {
    let dir = corpus();
    std::fs::create_dir_all(&dir).unwrap();
    let header = Header {
        seq: 9,
        publish_time: Timestamp::from_nanos(1_700_000_000_000_000_123),
    };
    let mut seeds: Vec<(String, FrameBytes)> = Vec::new();
    for (name, message) in messages() {
        let frame = WireFrame::encode(&*message, header, 3, "").unwrap();
        if frame.parts().len() > 1 {
            seeds.push((format!("{name}-v2-joined"), frame.to_bytes().into()));
        }
        seeds.push((
            format!(
                "{name}-v{}",
                WireFrame::parse(frame.clone()).unwrap().version
            ),
            frame,
        ));
    }
    let jpeg = &messages()[3].1;
    let coded = WireFrame::encode(&**jpeg, header, 4, "jpeg").unwrap();
    seeds.push(("jpeg-codec-v1".into(), coded));
    seeds.push((
        "end-of-stream".into(),
        WireFrame::end_of_stream(12).unwrap(),
    ));
    seeds.push(("stop".into(), WireFrame::stop(13).unwrap()));
    let twist = WireFrame::encode(&*messages()[9].1, header, 5, "").unwrap();
    seeds.push(("twist-unsent".into(), WireFrame::marked_unsent(&twist)));
    // A version 1 frame in three slices; a version 2 frame whose front is cut too.
    let bytes = twist.to_bytes();
    seeds.push((
        "twist-three-parts".into(),
        FrameBytes::from_parts(vec![
            bytes.slice(..10),
            bytes.slice(10..40),
            bytes.slice(40..),
        ]),
    ));
    let blob = WireFrame::encode(&*messages()[1].1, header, 6, "")
        .unwrap()
        .to_bytes();
    seeds.push((
        "image-blob-v2-cut".into(),
        FrameBytes::from_parts(vec![
            blob.slice(..20),
            blob.slice(20..200),
            blob.slice(200..),
        ]),
    ));
    for (name, frame) in &seeds {
        let input = input_of(frame);
        assert_eq!(
            check::frame_of(&input).to_bytes(),
            frame.to_bytes(),
            "{name}"
        );
        std::fs::write(dir.join(format!("seed-{name}")), input).unwrap();
    }
}
