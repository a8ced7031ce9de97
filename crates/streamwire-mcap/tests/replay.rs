//! A recording replayed through a blueprint: every message, in order, with its stamps; a
//! file cut mid-chunk replays up to the cut and says so; a file damaged inside fails the
//! replay saying where; a bad header is named; `start_s`, `duration_s`.

mod common;

use std::collections::BTreeMap;

use streamwire_mcap::{McapRecorder, McapSource, Output, map_topics, scan};

use common::{COUNT, counter, record_run, replay_run};

/// A recording of the three sources, with small chunks, and what it holds per stream.
fn recording(dir: &std::path::Path) -> (std::path::PathBuf, BTreeMap<String, u64>) {
    let path = dir.join("run.mcap");
    let report = record_run(
        &path,
        McapRecorder {
            chunk_bytes: 4096,
            ..McapRecorder::default()
        },
    );
    assert!(report.failure.is_none(), "{:?}", report.failure);
    let inventory = scan(&path).expect("scan");
    assert!(inventory.cut_short.is_none());
    let counts = inventory
        .topics
        .iter()
        .map(|t| (t.topic.clone(), t.count))
        .collect();
    (path, counts)
}

/// The stamps of `stream` among `arrivals`, as message indexes.
fn indexes(arrivals: &[(&str, u64)], stream: &str) -> Vec<u64> {
    arrivals
        .iter()
        .filter(|(s, _)| *s == stream)
        .map(|(_, stamp)| (stamp - common::stamp(0).as_nanos()) / 50_000_000)
        .collect()
}

/// Replayed, a recording delivers every message it holds, in order, stamps kept.
#[test]
fn a_recording_replays_every_message_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, counts) = recording(dir.path());
    let (report, arrivals) = replay_run(McapSource {
        path: path.clone(),
        rate: 4.0,
        ..McapSource::default()
    });
    assert!(report.failure.is_none(), "{:?}", report.failure);
    for (stream, topic) in [
        ("color_image", "/color_image/compressed"),
        ("depth", "/depth"),
        ("odometry", "/odometry"),
    ] {
        let got = indexes(&arrivals, stream);
        assert_eq!(
            got.len() as u64,
            counts[topic],
            "{stream}: {got:?}\n{report}"
        );
        assert!(got.windows(2).all(|w| w[0] < w[1]), "{stream}: {got:?}");
        assert!(got.iter().all(|i| *i < COUNT));
    }
    let total: u64 = counts.values().sum();
    assert_eq!(counter(&report, "replay", "played"), total);
    assert_eq!(counter(&report, "replay", "cut_short"), 0);
}

/// A file cut in the middle of a chunk replays up to its last complete chunk: a prefix
/// of each stream, and the counter `cut_short` says so.
#[test]
fn a_file_cut_mid_chunk_replays_up_to_the_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, counts) = recording(dir.path());
    let bytes = std::fs::read(&path).expect("read");
    let cut = dir.path().join("cut.mcap");
    std::fs::write(&cut, &bytes[..bytes.len() * 6 / 10]).expect("write");
    let inventory = scan(&cut).expect("scan");
    assert!(inventory.cut_short.is_some(), "{inventory:?}");
    let total: u64 = counts.values().sum();
    assert!(inventory.messages > 0 && inventory.messages < total);

    let (report, arrivals) = replay_run(McapSource {
        path: cut,
        rate: 4.0,
        ..McapSource::default()
    });
    assert!(report.failure.is_none(), "{:?}", report.failure);
    assert_eq!(counter(&report, "replay", "cut_short"), 1);
    assert_eq!(counter(&report, "replay", "played"), inventory.messages);
    let (_, full) = replay_run(McapSource {
        path,
        rate: 4.0,
        ..McapSource::default()
    });
    for stream in ["color_image", "depth", "odometry"] {
        let got = indexes(&arrivals, stream);
        let all = indexes(&full, stream);
        assert_eq!(got, all[..got.len()], "{stream}: not a prefix");
    }
}

/// `start_s` and `duration_s` pick a window of the file.
#[test]
fn start_and_duration_pick_a_window() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _) = recording(dir.path());
    let inventory = scan(&path).expect("scan");
    let first = inventory
        .topics
        .iter()
        .map(|t| t.span.0)
        .min()
        .expect("first");
    let last = inventory
        .topics
        .iter()
        .map(|t| t.span.1)
        .max()
        .expect("last");
    let third = (last - first) as f64 / 3.0 / 1e9;
    let (report, _) = replay_run(McapSource {
        path: path.clone(),
        rate: 4.0,
        start_s: third,
        duration_s: Some(third),
        ..McapSource::default()
    });
    assert!(report.failure.is_none(), "{:?}", report.failure);
    let played = counter(&report, "replay", "played");
    assert!(played > 0 && played < inventory.messages, "{played}");
    assert!(
        McapSource {
            path,
            rate: 0.0,
            ..McapSource::default()
        }
        .prepare()
        .is_err()
    );
}

/// The remap table: explicit entries first, then names, then a type only one topic has;
/// a mistake names what exists.
#[test]
fn topics_map_to_outputs() {
    let topics: Vec<(String, String)> = [
        (
            "/camera/color/image_raw/compressed",
            "sensor_msgs/msg/CompressedImage",
        ),
        ("/camera/depth/image_rect_raw", "sensor_msgs/msg/Image"),
        ("/camera/infra/image_raw", "sensor_msgs/msg/Image"),
        ("/tf", "tf2_msgs/msg/TFMessage"),
        ("/tf_static", "tf2_msgs/msg/TFMessage"),
        ("/odometry", "nav_msgs/msg/Odometry"),
        ("/chatter", "std_msgs/msg/String"),
    ]
    .iter()
    .map(|(t, r)| (t.to_string(), r.to_string()))
    .collect();
    let explicit = BTreeMap::from([(
        "/camera/depth/image_rect_raw".to_owned(),
        "depth".to_owned(),
    )]);
    let map = map_topics(&topics, &explicit).expect("map");
    assert_eq!(
        map.mapped["/camera/color/image_raw/compressed"],
        Output::ColorImage
    );
    assert_eq!(map.mapped["/camera/depth/image_rect_raw"], Output::Depth);
    assert_eq!(map.mapped["/tf"], Output::Transforms);
    assert_eq!(map.mapped["/tf_static"], Output::Transforms);
    assert_eq!(map.mapped["/odometry"], Output::Odometry);
    assert!(map.skipped["/chatter"].contains("no built-in message"));
    assert!(map.skipped.contains_key("/camera/infra/image_raw"));

    let wrong = BTreeMap::from([("/odometry".to_owned(), "depth".to_owned())]);
    let error = map_topics(&topics, &wrong).expect_err("a type mismatch");
    assert!(error.to_string().contains("does not take"), "{error}");
    let wrong = BTreeMap::from([("/nope".to_owned(), "depth".to_owned())]);
    let error = map_topics(&topics, &wrong).expect_err("an unknown topic");
    assert!(error.to_string().contains("/odometry"), "{error}");
}

/// What is not MCAP, or is broken inside, is a clear error or a replay cut short at the
/// break: never a panic.
#[test]
fn broken_files_are_errors_or_cut_short_never_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, bytes) in [
        ("empty.mcap", Vec::new()),
        ("text.mcap", b"this is not an MCAP file at all".to_vec()),
        ("magic.mcap", mcap::MAGIC.to_vec()),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).expect("write");
        match scan(&path) {
            Err(error) => {
                let text = streamwire::log::chain(&error).to_string();
                assert!(text.contains(name), "{name}: {text}");
            }
            Ok(inventory) => {
                assert_eq!(inventory.messages, 0, "{name}");
                assert!(inventory.cut_short.is_some(), "{name}: {inventory:?}");
            }
        }
        assert!(
            McapSource {
                path: path.clone(),
                ..McapSource::default()
            }
            .prepare()
            .map_or(true, |(inventory, _)| inventory.messages == 0),
            "{name}"
        );
    }
    let missing = scan(&dir.path().join("missing.mcap")).expect_err("a missing file");
    assert!(missing.to_string().contains("missing.mcap"), "{missing}");

    // Bytes flipped inside compressed chunks: read up to the damage, which is reported.
    let (path, counts) = recording(dir.path());
    let total: u64 = counts.values().sum();
    let damaged = damage(dir.path(), &path);
    let inventory = scan(&damaged).expect("scan");
    assert!(inventory.cut_short.is_some(), "{inventory:?}");
    assert!(inventory.messages < total, "{inventory:?}");
}

/// `path`'s bytes with 64 flipped in its middle (inside a chunk), as `damaged.mcap`.
fn damage(dir: &std::path::Path, path: &std::path::Path) -> std::path::PathBuf {
    let mut bytes = std::fs::read(path).expect("read");
    let middle = bytes.len() / 2;
    for byte in &mut bytes[middle..middle + 64] {
        *byte ^= 0x5a;
    }
    let damaged = dir.join("damaged.mcap");
    std::fs::write(&damaged, &bytes).expect("write");
    damaged
}

/// `text` with each number (decimal, or a CRC's 8 upper-case hex digits) as `N` and `dir`
/// as `DIR`: what a snapshot keeps of a message naming sizes, counts and checksums that
/// vary from run to run.
fn stable(text: &str, dir: &std::path::Path) -> String {
    let text = text.replace(&dir.display().to_string(), "DIR");
    let mut out = String::new();
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.chars().any(|c| c.is_ascii_digit()) || run.len() == 8 {
            out.push('N');
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_digit() || ('A'..='F').contains(&c) {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// A file damaged inside (written to its end, so not cut short) replays up to the
/// damage, then fails the run saying where and how many messages were played; a file
/// cut short still ends as its end would (`a_file_cut_mid_chunk_replays_up_to_the_cut`).
#[test]
fn a_corrupt_file_fails_the_replay_saying_where() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, counts) = recording(dir.path());
    let total: u64 = counts.values().sum();
    let damaged = damage(dir.path(), &path);
    let length = std::fs::metadata(&damaged).expect("metadata").len();
    let (report, _) = replay_run(McapSource {
        path: damaged,
        rate: 4.0,
        ..McapSource::default()
    });
    let failure = report.failure.clone().expect("the replay fails");
    let played = counter(&report, "replay", "played");
    assert!(played > 0 && played < total, "{played} of {total}");
    assert!(
        failure.contains(&format!("replayed {played} messages")),
        "{failure}"
    );
    assert!(failure.contains(&format!(" of {length};")), "{failure}");
    assert_eq!(counter(&report, "replay", "cut_short"), 0);
    // What the reader found depends on where the flipped bytes fell (a chunk's CRC, its
    // compressed data): the snapshot keeps the message's form, the reason said apart.
    let (head, rest) = failure.split_once(" is corrupt: ").expect("says corrupt");
    let (reason, tail) = rest.split_once(", found at byte ").expect("says where");
    assert!(!reason.is_empty(), "{failure}");
    let form = format!("{head} is corrupt: <reason>, found at byte {tail}");
    insta::assert_snapshot!(stable(&form, dir.path()));
}

/// A file that is not MCAP, or ends inside its header, says which, before any run.
#[test]
fn a_bad_header_says_what_is_wrong() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = Vec::new();
    for (name, bytes) in [
        ("empty.mcap", Vec::new()),
        ("text.mcap", b"this is not an MCAP file at all".to_vec()),
        ("half_magic.mcap", mcap::MAGIC[..5].to_vec()),
        ("magic_only.mcap", mcap::MAGIC.to_vec()),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).expect("write");
        let source = McapSource {
            path,
            ..McapSource::default()
        };
        let error = source.prepare().expect_err(name);
        let said = streamwire::log::chain(&error).to_string();
        text.push(said.replace(&dir.path().display().to_string(), "DIR"));
    }
    insta::assert_snapshot!(text.join("\n"));
}
