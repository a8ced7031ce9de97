//! Recordings read back with the mcap crate: rosbag2's conventions, every message as it
//! was published (CDR decoded here), the recorder's accounting, a file cut short.

mod common;

use std::collections::BTreeMap;

use streamwire::msgs::{CompressedImage, DepthImage, Odometry};
use streamwire_mcap::{ChunkCompression, McapRecorder, RecordCounts};
use streamwire_ros2::{RosMessage, SensorImage};

use common::{COUNT, counter, published, read_back, record_run};

/// Recorded plus dropped is what was published, per stream; every recorded message is
/// one of those published, in order, with its bytes and stamp.
#[test]
fn recording_holds_what_was_published_and_counts_the_rest() {
    for compression in [
        ChunkCompression::Zstd,
        ChunkCompression::Lz4,
        ChunkCompression::None,
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("run.mcap");
        let report = record_run(
            &path,
            McapRecorder {
                compression,
                // Small chunks: several per recording.
                chunk_bytes: 4096,
                ..McapRecorder::default()
            },
        );
        assert!(report.failure.is_none(), "{:?}", report.failure);
        let back = read_back(&path);
        assert_eq!(back.profile, "ros2");
        let expected_topics = [
            ("/color_image/compressed", "sensor_msgs/msg/CompressedImage"),
            ("/depth", "sensor_msgs/msg/Image"),
            ("/odometry", "nav_msgs/msg/Odometry"),
        ];
        let topics: Vec<(&str, &str)> = back
            .topics
            .iter()
            .map(|(t, b)| (t.as_str(), b.schema_name.as_str()))
            .collect();
        assert_eq!(topics, expected_topics, "{compression:?}");
        for topic in back.topics.values() {
            assert_eq!(topic.schema_encoding, "ros2msg");
            assert_eq!(topic.message_encoding, "cdr");
        }
        for (stream, topic) in [
            ("color_image", "/color_image/compressed"),
            ("depth", "/depth"),
            ("odometry", "/odometry"),
        ] {
            let recorded = back.topics[topic].messages.len() as u64;
            assert_eq!(
                counter(&report, "recorder", &format!("recorded:{stream}")),
                recorded
            );
            let dropped = counter(&report, "recorder", &format!("dropped:{stream}"));
            assert_eq!(recorded + dropped, published(&report, stream), "{stream}");
            assert_eq!(published(&report, stream), COUNT);
            assert!(recorded > 0, "{stream}: nothing recorded");
        }
        check_messages(&back);
        let counts: RecordCounts = serde_json::from_str(
            back.metadata["streamwire"]
                .iter()
                .find_map(|m| m.get("counts"))
                .expect("counts"),
        )
        .expect("counts json");
        assert_eq!(
            counts.recorded["odometry"],
            back.topics["/odometry"].messages.len() as u64
        );
        let rosbag2 = &back.metadata["rosbag2"][0];
        assert!(rosbag2["serialized_metadata"].contains("\"storage_identifier\":\"mcap\""));
    }
}

/// Every message decodes to the i-th message its source published, i rising.
fn check_messages(back: &common::ReadBack) {
    let index_of = |stamp: streamwire::Timestamp| {
        (stamp.as_nanos() - common::stamp(0).as_nanos()) / 50_000_000
    };
    let mut last = None;
    for cdr in &back.topics["/color_image/compressed"].messages {
        let frame = CompressedImage::from_cdr(cdr.clone()).expect("frame");
        let i = index_of(frame.stamp());
        assert_eq!(
            frame.data(),
            &common::jpeg_bytes(i),
            "frame {i}: bytes differ"
        );
        assert!(last < Some(i));
        last = Some(i);
    }
    let mut last = None;
    for cdr in &back.topics["/depth"].messages {
        let SensorImage::Depth(depth) = SensorImage::from_cdr(cdr.clone()).expect("depth") else {
            panic!("depth recorded as a colour image");
        };
        let i = index_of(depth.stamp());
        assert_eq!(depth, common::depth(i));
        assert!(last < Some(i));
        last = Some(i);
    }
    let mut last = None;
    for cdr in &back.topics["/odometry"].messages {
        let odometry = Odometry::from_cdr(cdr.clone()).expect("odometry");
        let i = index_of(odometry.stamp());
        assert_eq!(odometry, common::odometry(i));
        assert!(last < Some(i));
        last = Some(i);
    }
    let _: Option<DepthImage> = None;
}

/// `streams` limits the recording; a stream that does not exist fails the start, naming
/// the streams that do.
#[test]
fn only_the_streams_asked_for_are_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("odometry.mcap");
    let report = record_run(
        &path,
        McapRecorder {
            streams: vec!["odometry".into()],
            metadata: BTreeMap::from([("plan".to_owned(), "the plan".to_owned())]),
            ..McapRecorder::default()
        },
    );
    assert!(report.failure.is_none(), "{:?}", report.failure);
    let back = read_back(&path);
    assert_eq!(back.topics.keys().collect::<Vec<_>>(), ["/odometry"]);
    assert_eq!(back.metadata["streamwire"][0]["plan"], "the plan");

    let report = record_run(
        &dir.path().join("none.mcap"),
        McapRecorder {
            streams: vec!["lidar".into()],
            ..McapRecorder::default()
        },
    );
    let failure = report.failure.expect("a failure");
    assert!(failure.contains("no stream `lidar`"), "{failure}");
    assert!(failure.contains("odometry"), "{failure}");
}
