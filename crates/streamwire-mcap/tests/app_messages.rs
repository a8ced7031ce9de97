//! An application's own message (no ROS 2 type, a blob field) recorded as JSON under a
//! JSON Schema, read back by Foxglove's `mcap` reader (Python, tests/interop) and
//! replayed into its type; a stream that cannot be recorded, named in `streams`, is an
//! error.

mod common;
#[path = "interop/tool.rs"]
mod tool;

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::json;
use streamwire::prelude::*;
use streamwire::runtime::{RunOptions, Runtime};
use streamwire_mcap::{AppReplay, AppSchema, McapRecorder, McapWriter, plan_recording};

const COUNT: u64 = 12;

/// A joint's state, nested in the pair (a struct inside a struct).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Joint {
    name: String,
    position: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Exposure {
    Auto,
    Fixed { micros: u32 },
}

/// A stereo camera's pair, as an application declares it: a blob field (4 KiB and more
/// travel beside the message), a small byte field, an option, a list, an enum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Message)]
#[message(name = "acme/StereoPair", kind = sensor)]
struct StereoPair {
    frame: u64,
    #[serde(with = "streamwire::blob")]
    left: Bytes,
    #[serde(with = "streamwire::blob")]
    right: Bytes,
    gain: Option<f32>,
    joints: Vec<Joint>,
    exposure: Exposure,
}

/// A message serde cannot trace: an untagged enum needs `deserialize_any`.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "acme/Loose")]
struct Loose {
    value: Either,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum Either {
    Number(u32),
    Text(String),
}

/// The i-th pair: its bytes depend on i, the left image is a blob.
fn pair(i: u64) -> StereoPair {
    let left: Vec<u8> = (0..5000u64).map(|k| ((k * 7 + i) % 251) as u8).collect();
    StereoPair {
        frame: i,
        left: Bytes::from(left),
        right: Bytes::from(vec![i as u8, 0, 255]),
        gain: i.is_multiple_of(2).then_some(0.25 * i as f32),
        joints: vec![Joint {
            name: format!("j{i}"),
            position: i as f64 / 8.0,
        }],
        exposure: if i.is_multiple_of(3) {
            Exposure::Auto
        } else {
            Exposure::Fixed {
                micros: 100 * i as u32,
            }
        },
    }
}

/// Publishes `COUNT` pairs on `stereo`, reliably (every one recorded), then finishes.
#[derive(Module, Default)]
struct StereoSource {
    #[port(reliable, keep_all)]
    stereo: Out<StereoPair>,
    #[state]
    sent: u64,
}

impl Node for StereoSource {
    fn trigger(&self) -> Trigger {
        Trigger::rate(200.0)
    }
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.sent == COUNT {
            cx.finish();
            return Ok(());
        }
        self.stereo.publish(pair(self.sent))?;
        self.sent += 1;
        Ok(())
    }
}

fn record(path: &Path, streams: Vec<String>) -> streamwire::runtime::RunReport {
    let mut bp = Blueprint::new();
    bp.add("stereo_camera", StereoSource::default());
    bp.add(
        "recorder",
        McapRecorder {
            path: path.to_owned(),
            streams,
            chunk_bytes: 16 * 1024,
            ..McapRecorder::default()
        },
    );
    let runnable = bp.into_runnable().expect("plan");
    let handle = Runtime::start(runnable, RunOptions::default()).expect("start");
    handle.wait_timeout(Duration::from_secs(30))
}

/// Recorded by default (every stream), read by Foxglove's `mcap` reader with its JSON
/// Schema and the schema's hash, each message's values (blob bytes included) what was
/// published.
#[test]
fn an_app_message_reads_in_the_mcap_reader_with_its_schema() {
    let Some(python) = tool::python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("stereo.mcap");
    let report = record(&path, Vec::new());
    assert!(report.failure.is_none(), "{:?}", report.failure);
    // Those published before the recorder's tap attached are counted as dropped.
    let recorded = common::counter(&report, "recorder", "recorded:stereo");
    let dropped = common::counter(&report, "recorder", "dropped:stereo");
    assert_eq!(recorded + dropped, COUNT);
    assert!(recorded > 0);
    let answer = tool::ask(&python, json!({"op": "read_json", "path": path}));
    let topic = &answer["topics"]["/stereo"];
    assert_eq!(topic["schema"], "acme/StereoPair");
    assert_eq!(topic["schema_encoding"], "jsonschema");
    let schema = AppSchema::of::<StereoPair>().expect("schema");
    assert_eq!(
        topic["metadata"]["streamwire_type_hash"],
        schema.hash.as_str()
    );
    let theirs = &topic["schema_data"];
    assert_eq!(theirs["type"], "object");
    assert_eq!(
        theirs["properties"]["left"],
        json!({"type": "string", "contentEncoding": "base64"})
    );
    assert_eq!(
        theirs["properties"]["joints"]["items"]["properties"]["position"]["type"],
        "number"
    );
    let messages = topic["messages"].as_array().expect("messages");
    assert_eq!(messages.len() as u64, recorded);
    for theirs in messages {
        let i = theirs["frame"].as_u64().expect("frame");
        let ours = pair(i);
        assert_eq!(theirs["frame"], i);
        assert_eq!(theirs["left"], tool::hex(&ours.left), "frame {i}");
        assert_eq!(theirs["right"], tool::hex(&ours.right));
        assert_eq!(theirs["gain"], json!(ours.gain));
        assert_eq!(theirs["joints"][0]["name"], format!("j{i}"));
        assert_eq!(theirs["joints"][0]["position"], i as f64 / 8.0);
        let exposure = match ours.exposure {
            Exposure::Auto => json!("Auto"),
            Exposure::Fixed { micros } => json!({"Fixed": {"micros": micros}}),
        };
        assert_eq!(theirs["exposure"], exposure);
    }
}

/// Recorded, then replayed into the same type: every message equal to what was published,
/// in order; into another type: refused, naming both.
#[test]
fn an_app_message_replays_into_its_type() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("stereo.mcap");
    let report = record(&path, vec!["stereo".into()]);
    assert!(report.failure.is_none(), "{:?}", report.failure);
    let back: Vec<StereoPair> = AppReplay::<StereoPair>::open(&path, "/stereo")
        .expect("open")
        .map(|m| m.expect("message").1)
        .collect();
    // Those published before the recorder's tap attached are counted as dropped; the
    // rest come back equal, in order.
    let dropped = common::counter(&report, "recorder", "dropped:stereo");
    assert_eq!(back.len() as u64 + dropped, COUNT);
    assert_eq!(back, (dropped..COUNT).map(pair).collect::<Vec<_>>());
    let Err(error) = AppReplay::<Loud>::open(&path, "/stereo") else {
        panic!("replayed into another type");
    };
    let text = error.to_string();
    assert!(
        text.contains("acme/StereoPair") && text.contains("acme/Loud"),
        "{text}"
    );
}

/// Another message type, to replay into.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "acme/Loud")]
struct Loud {
    decibels: f32,
}

/// `streams` naming a stream that cannot be recorded is an error naming it and why; left
/// to "every stream", it is skipped.
#[test]
fn an_unrecordable_stream_named_is_an_error() {
    let streams = vec![
        ("stereo".to_owned(), StereoPair::TYPE_NAME),
        ("loose".to_owned(), Loose::TYPE_NAME),
    ];
    let (plan, skipped) = plan_recording(&streams, &[]).expect("every stream");
    assert_eq!(plan.len(), 1);
    assert_eq!(skipped, ["loose"]);
    let error = plan_recording(&streams, &["stereo".into(), "loose".into()])
        .expect_err("loose cannot be recorded");
    insta::assert_snapshot!(streamwire::log::chain(&error).to_string());
}

/// The file of the refused-replay test (tests/app_changed.rs): `acme/StereoPair` as this
/// file declares it, three pairs. Written when `STREAMWIRE_BLESS` is set; checked
/// otherwise, so that it stays a recording of this type.
#[test]
fn the_recording_of_the_old_type_is_this_type() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/stereo_v1.mcap");
    let schema = AppSchema::of::<StereoPair>().expect("schema");
    if std::env::var_os("STREAMWIRE_BLESS").is_some() {
        let mut file = McapWriter::create(&fixture, Default::default(), 1 << 20).expect("create");
        for i in 0..3 {
            let json = schema.encode(&pair(i)).expect("encode");
            file.write_app("/stereo", &schema, i, i, &json)
                .expect("write");
        }
        file.finish().expect("finish");
    }
    let back: Vec<StereoPair> = AppReplay::<StereoPair>::open(&fixture, "/stereo")
        .expect("the fixture is a recording of this StereoPair")
        .map(|m| m.expect("message").1)
        .collect();
    assert_eq!(back, (0..3).map(pair).collect::<Vec<_>>());
}
