//! The mapping checked against implementations nobody here wrote: rosbags (Python, its ROS 2
//! Jazzy type store) for CDR both ways, the `.msg` texts and the RIHS01 hashes; Foxglove's
//! `@foxglove/rosmsg` and `@foxglove/rosmsg2-serialization` (Node) for parsing the texts
//! and decoding bytes written here. Each test skips, saying why, when its tool is not
//! installed (see tests/interop/README.md), and fails instead under `STREAMWIRE_REQUIRE=all`.

mod common;

use bytes::Bytes;
use serde_json::{Value, json};
use streamwire::Timestamp;
use streamwire::msgs::{
    DepthEncoding, DepthImage, Image, ImageEncoding, LogLevel, LogRecord, Quaternion,
    TransformStamped, Transforms, Vector3,
};
use streamwire_ros2::schema::{RosSchema, STANDARD};
use streamwire_ros2::{RosMessage, SensorImage};

use common::{
    Case, all_cases, foxglove, foxglove_node_modules, hex, rosbags, rosbags_python, unhex,
};

fn answer<'a>(answer: &'a Value, what: &str) -> &'a Value {
    assert!(answer.get("error").is_none(), "{what}: {}", answer["error"]);
    answer
}

/// Every sample written here is read by rosbags, which writes the same bytes back, and
/// its bytes decode here to the sample.
#[test]
fn cdr_round_trips_through_rosbags() {
    let Some(python) = rosbags_python() else {
        return;
    };
    let cases = all_cases();
    let ops = cases
        .iter()
        .map(|c| json!({"op": "roundtrip", "type": c.ros_type, "cdr": hex(&c.cdr)}))
        .collect();
    let answers = rosbags(&python, ops);
    assert_eq!(answers.len(), cases.len());
    for (case, answer_) in cases.iter().zip(&answers) {
        let answer_ = answer(answer_, &case.name);
        let theirs = unhex(answer_["cdr"].as_str().expect("cdr"));
        assert!(
            theirs == case.cdr,
            "{}: rosbags writes what it read from us differently ({} bytes, we wrote {})",
            case.name,
            theirs.len(),
            case.cdr.len()
        );
        (case.check)(Bytes::from(theirs)).unwrap_or_else(|e| panic!("{}: {e}", case.name));
    }
}

/// Messages built in Python by rosbags (padded rows, both depth encodings, tf, a log line)
/// decode here to the values it was given.
#[test]
fn messages_built_by_rosbags_decode_here() {
    let Some(python) = rosbags_python() else {
        return;
    };
    let names = ["image_padded", "depth_16uc1", "depth_32fc1", "tf", "log"];
    let ops = names
        .iter()
        .map(|name| json!({"op": "make", "case": name}))
        .collect();
    let answers = rosbags(&python, ops);
    let bytes = |i: usize| -> Bytes {
        let a = answer(&answers[i], names[i]);
        Bytes::from(unhex(a["cdr"].as_str().expect("cdr")))
    };
    let stamp = Timestamp::from_nanos(12_000_000_345);

    let image = Image::new(1, 2, ImageEncoding::Rgb8, 4, vec![1, 2, 3, 0, 4, 5, 6, 0])
        .unwrap()
        .with_stamp(stamp)
        .with_frame_id("cam");
    assert_eq!(
        SensorImage::from_cdr(bytes(0)).unwrap(),
        SensorImage::Color(image)
    );

    let mm = DepthImage::from_mm(2, 2, &[1000, 0, 65535, 7])
        .unwrap()
        .with_stamp(stamp)
        .with_frame_id("cam");
    assert_eq!(
        SensorImage::from_cdr(bytes(1)).unwrap(),
        SensorImage::Depth(mm)
    );

    let metres = DepthImage::from_m(3, 1, &[1.5, f32::NAN, 0.25])
        .unwrap()
        .with_stamp(stamp)
        .with_frame_id("cam");
    let read = DepthImage::from_cdr(bytes(2)).unwrap();
    assert_eq!(read.encoding(), DepthEncoding::M32F);
    // NaN != NaN: compare the stored bits.
    assert_eq!(read.data(), metres.data());
    assert_eq!(read.raw_m(2, 0), Some(0.25));
    assert_eq!((read.stamp(), read.frame_id()), (stamp, "cam"));

    let tf = Transforms::new(vec![TransformStamped {
        stamp,
        parent_frame_id: "cam".into(),
        child_frame_id: "arm".into(),
        translation: Vector3::new(1.0, 2.0, 3.0),
        rotation: Quaternion::IDENTITY,
    }])
    .unwrap();
    assert_eq!(Transforms::from_cdr(bytes(3)).unwrap(), tf);

    let log = LogRecord::new(LogLevel::Error, "node", "broken")
        .with_stamp(stamp)
        .with_location("a.py", "f", 7);
    assert_eq!(LogRecord::from_cdr(bytes(4)).unwrap(), log);
}

/// The type of every shipped definition: the RIHS01 hash and the `.msg` text with its
/// dependencies equal rosbags' (its Jazzy store; vision_msgs registered from our files,
/// so for those the hash is checked for self-consistency only).
#[test]
fn hashes_and_texts_equal_rosbags() {
    let Some(python) = rosbags_python() else {
        return;
    };
    let mut ops = Vec::new();
    for source in STANDARD {
        ops.push(json!({"op": "hash", "type": source.name}));
        ops.push(json!({"op": "msgdef", "type": source.name}));
    }
    let answers = rosbags(&python, ops);
    for (source, pair) in STANDARD.iter().zip(answers.chunks(2)) {
        let schema = RosSchema::standard(source.name).unwrap();
        let hash = answer(&pair[0], source.name)["hash"].as_str().unwrap();
        assert_eq!(schema.rihs01(), hash, "{}", source.name);
        // rosbags writes no default values (geometry_msgs/Quaternion's `w 1`); we keep them.
        let ours: String = schema
            .full_text()
            .lines()
            .map(|line| {
                let words: Vec<&str> = line.split(' ').collect();
                let without_default = if words.len() == 3 && !line.contains('=') {
                    words[..2].join(" ")
                } else {
                    line.to_owned()
                };
                without_default + "\n"
            })
            .collect();
        let theirs = answer(&pair[1], source.name)["text"].as_str().unwrap();
        assert_eq!(ours, theirs, "{}", source.name);
    }
}

/// Numbers compared as f64 (JSON writers differ on `1` against `1.0`).
fn normalized(value: &Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), normalized(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn clipped(value: &Value) -> String {
    value.to_string().chars().take(600).collect()
}

/// Every text parses with `@foxglove/rosmsg` into the types and fields we resolved, and
/// every sample written here decodes with `@foxglove/rosmsg2-serialization` to the values
/// rosbags reads from the same bytes.
#[test]
fn foxglove_parses_texts_and_decodes_our_bytes() {
    let Some(modules) = foxglove_node_modules() else {
        return;
    };
    let Some(python) = rosbags_python() else {
        return;
    };
    // NaN has no JSON form; the 32FC1 sample's NaN is inside uint8 data, so it travels.
    let cases: Vec<Case> = all_cases();
    let items = cases
        .iter()
        .map(|c| json!({"text": c.schema.full_text(), "cdr": hex(&c.cdr)}))
        .collect();
    let decoded = foxglove(&modules, items);
    let ops = cases
        .iter()
        .map(|c| json!({"op": "roundtrip", "type": c.ros_type, "cdr": hex(&c.cdr)}))
        .collect();
    let reference = rosbags(&python, ops);
    for ((case, fox), bags) in cases.iter().zip(&decoded).zip(&reference) {
        let fox = answer(fox, &case.name);
        let definitions = fox["definitions"].as_array().unwrap();
        let ours = case.schema.in_order();
        assert_eq!(definitions.len(), ours.len(), "{}", case.name);
        for (index, (theirs, def)) in definitions.iter().zip(&ours).enumerate() {
            if index > 0 {
                let short = def.name.replace("/msg/", "/");
                assert_eq!(theirs["name"], json!(short), "{}", case.name);
            }
            let names: Vec<&str> = def.fields.iter().map(|f| f.name.as_str()).collect();
            assert_eq!(
                theirs["fields"],
                json!(names),
                "{}: {}",
                case.name,
                def.name
            );
        }
        let bags = answer(bags, &case.name);
        let (fox, bags) = (normalized(&fox["value"]), normalized(&bags["value"]));
        assert!(
            fox == bags,
            "{}: Foxglove and rosbags read different values:\n{}\n{}",
            case.name,
            clipped(&fox),
            clipped(&bags)
        );
    }
}
