//! A replay into a type changed since it was recorded is refused, naming both: this
//! binary's `acme/StereoPair` has a field more than the one tests/data/stereo_v1.mcap was
//! recorded from (tests/app_messages.rs checks that file against that older type).

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use streamwire::prelude::*;
use streamwire_mcap::{AppReplay, AppSchema};

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

/// tests/app_messages.rs's `StereoPair` with a `baseline_m` more.
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
    baseline_m: f64,
}

#[test]
fn a_replay_into_a_changed_type_is_refused_naming_both() {
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/stereo_v1.mcap");
    let Err(error) = AppReplay::<StereoPair>::open(&fixture, "/stereo") else {
        panic!("replayed into a changed type");
    };
    let now = AppSchema::of::<StereoPair>().expect("schema");
    let text = streamwire::log::chain(&error).to_string();
    assert!(text.contains(&now.hash), "{text}");
    insta::assert_snapshot!(text);
}
