//! Recordings and replays checked with tools nobody here wrote: Foxglove's `mcap` reader and
//! rosbags (Python, from PyPI at the versions of tests/interop/requirements.txt). Each test
//! skips, saying why, when they are not installed, and fails instead under
//! `STREAMWIRE_REQUIRE=all`.

mod common;
#[path = "interop/tool.rs"]
mod tool;

use serde_json::json;
use streamwire_mcap::McapRecorder;

use common::{COUNT, counter, published, record_run};
use tool::hex;

/// A recording read by mcap and rosbags: topics, schemas, counts equal to the run's
/// report (with the recorder's drops), CDR decoded by rosbags equal to what was
/// published, the JPEG bytes those that travelled; and rosbags opens it as a rosbag2 bag.
#[test]
fn a_recording_reads_in_mcap_and_rosbags() {
    let Some(python) = tool::python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("run.mcap");
    let report = record_run(
        &path,
        McapRecorder {
            chunk_bytes: 8192,
            ..McapRecorder::default()
        },
    );
    assert!(report.failure.is_none(), "{:?}", report.failure);
    let answer = tool::ask(&python, json!({"op": "read", "path": path}));
    assert_eq!(answer["profile"], "ros2");
    let topics = answer["topics"].as_object().expect("topics");
    let expected = [
        (
            "color_image",
            "/color_image/compressed",
            "sensor_msgs/msg/CompressedImage",
        ),
        ("depth", "/depth", "sensor_msgs/msg/Image"),
        ("odometry", "/odometry", "nav_msgs/msg/Odometry"),
    ];
    assert_eq!(
        topics.keys().collect::<Vec<_>>(),
        expected.iter().map(|e| e.1).collect::<Vec<_>>()
    );
    for (stream, topic, schema) in expected {
        let theirs = &topics[topic];
        assert_eq!(theirs["schema"], schema);
        assert_eq!(theirs["schema_encoding"], "ros2msg");
        assert_eq!(theirs["encoding"], "cdr");
        let messages = theirs["messages"].as_array().expect("messages");
        let recorded = messages.len() as u64;
        let dropped = counter(&report, "recorder", &format!("dropped:{stream}"));
        assert_eq!(recorded + dropped, published(&report, stream), "{stream}");
        assert_eq!(published(&report, stream), COUNT);
        assert_eq!(answer["rosbag2_counts"][topic], recorded, "{topic}");
        assert_eq!(answer["rosbag2_read"][topic], recorded, "{topic}");
        let mut last = None;
        for message in messages {
            let stamp = message["stamp"].as_u64().expect("stamp");
            let i = (stamp - common::stamp(0).as_nanos()) / 50_000_000;
            assert!(last < Some(i), "{topic}: out of order");
            last = Some(i);
            check(stream, i, message);
        }
    }
}

/// rosbags' reading of message `i` of `stream` is what the source published.
fn check(stream: &str, i: u64, theirs: &serde_json::Value) {
    match stream {
        "color_image" => {
            assert_eq!(theirs["format"], "jpeg");
            assert_eq!(theirs["frame_id"], "camera");
            assert_eq!(theirs["data"], hex(&common::jpeg_bytes(i)), "frame {i}");
        }
        "depth" => {
            let depth = common::depth(i);
            assert_eq!(theirs["encoding"], "16UC1");
            assert_eq!(theirs["width"], depth.width());
            assert_eq!(theirs["height"], depth.height());
            assert_eq!(theirs["data"], hex(depth.data()), "depth {i}");
        }
        "odometry" => {
            let ours = common::odometry(i);
            assert_eq!(theirs["frame_id"], "odom");
            assert_eq!(theirs["child_frame_id"], "base_link");
            let (pose, twist) = (ours.pose(), ours.twist());
            let values = [
                pose.position.x,
                pose.position.y,
                pose.position.z,
                pose.orientation.x,
                pose.orientation.y,
                pose.orientation.z,
                pose.orientation.w,
                twist.linear.x,
                twist.linear.y,
                twist.linear.z,
                twist.angular.x,
                twist.angular.y,
                twist.angular.z,
            ];
            let bits: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
            assert_eq!(theirs["bits"], json!(bits), "odometry {i}");
        }
        other => panic!("unexpected stream {other}"),
    }
}

/// A rosbag2 bag written by rosbags with its MCAP storage plugin (CompressedImage, Image,
/// PointCloud2, Odometry, TFMessage, and a String nobody maps) replayed through a
/// blueprint: every mapped message delivered, in order per stream, stamps kept; the
/// unmapped topic skipped and counted.
#[test]
fn a_rosbag2_bag_written_by_rosbags_replays_through_a_blueprint() {
    let Some(python) = tool::python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let bag = dir.path().join("bag");
    let count = 12;
    let jpegs: Vec<String> = (0..count as u64)
        .map(|i| hex(&common::jpeg_bytes(i)))
        .collect();
    let answer = tool::ask(
        &python,
        json!({"op": "write_bag", "dir": bag, "jpegs": jpegs}),
    );
    let path = std::path::PathBuf::from(answer["path"].as_str().expect("path"));
    let order: Vec<(String, u64)> = answer["order"]
        .as_array()
        .expect("order")
        .iter()
        .map(|e| {
            (
                e[0].as_str().expect("topic").to_owned(),
                e[1].as_u64().expect("stamp"),
            )
        })
        .collect();
    let (report, arrivals) = common::replay_run(streamwire_mcap::McapSource {
        path,
        rate: 10.0,
        ..streamwire_mcap::McapSource::default()
    });
    assert!(report.failure.is_none(), "{:?}", report.failure);
    assert_eq!(counter(&report, "replay", "undecodable"), 0, "{report}");
    for (topic, stream) in [
        ("/camera/color/image_raw/compressed", "color_image"),
        ("/camera/depth/image_rect_raw", "depth"),
        ("/points", "cloud"),
        ("/odom", "odometry"),
        ("/tf", "transforms"),
    ] {
        let sent: Vec<u64> = order
            .iter()
            .filter(|(t, _)| t == topic)
            .map(|(_, s)| *s)
            .collect();
        let got: Vec<u64> = arrivals
            .iter()
            .filter(|(s, _)| *s == stream)
            .map(|(_, stamp)| *stamp)
            .collect();
        assert_eq!(sent.len(), count);
        assert_eq!(got, sent, "{topic} -> {stream}\n{report}");
    }
    assert_eq!(counter(&report, "replay", "skipped"), count as u64);
    assert_eq!(counter(&report, "replay", "played"), 5 * count as u64);
    assert_eq!(counter(&report, "replay", "undecodable"), 0);
}
