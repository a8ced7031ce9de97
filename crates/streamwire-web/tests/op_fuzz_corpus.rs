//! Replays the op fuzz corpus (`fuzz/corpus/op`) through the fuzz target's own check
//! (`fuzz/check.rs`) with its counting allocator: no rosbridge op, JSON or CBOR, panics
//! the relay's parser or takes more heap than the limit.
//!
//! The seeds are the ops the relay's tests send (tests/protocol.rs and the parser's own
//! cases), each as a text frame (JSON, first byte 0) and the accepted ones as a binary
//! frame too (CBOR, first byte 1). `cargo test -p streamwire-web --test op_fuzz_corpus --
//! --ignored` writes them again (names `seed-*`; inputs the fuzzer found keep theirs).

#[path = "../fuzz/check.rs"]
mod check;

use std::path::PathBuf;

use serde_json::json;
use streamwire_testdata::alloc::CountingAlloc;

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/op")
}

#[test]
fn op_fuzz_corpus_replays_cleanly() {
    let (mut inputs, mut accepted) = (0, 0);
    for entry in std::fs::read_dir(corpus()).expect("corpus directory") {
        let path = entry.expect("corpus entry").path();
        let input = std::fs::read(&path).expect("corpus file");
        accepted += usize::from(check::op(&input));
        inputs += 1;
    }
    println!("replayed {inputs} inputs, {accepted} accepted");
    assert!(inputs >= 20, "corpus has only {inputs} inputs");
    assert!(accepted >= 10, "only {accepted} inputs accepted");
}

/// Writes the seeds (see the module's documentation).
#[test]
#[ignore = "writes the seed corpus: run by hand after a protocol change"]
fn write_op_seeds() {
    let ops = [
        (
            "subscribe",
            json!({"op": "subscribe", "topic": "/odom", "type": "nav_msgs/Odometry"}),
        ),
        (
            "subscribe-cbor",
            json!({"op": "subscribe", "topic": "/color_image/compressed", "compression": "cbor"}),
        ),
        (
            "subscribe-all",
            json!({"op": "subscribe", "id": "s1", "topic": "/odom", "queue_length": 100000, "throttle_rate": 50, "compression": "png", "fragment_size": 100}),
        ),
        (
            "subscribe-raw",
            json!({"op": "subscribe", "topic": "/odom", "compression": "cbor-raw"}),
        ),
        (
            "subscribe-zip",
            json!({"op": "subscribe", "topic": "/odom", "compression": "zip"}),
        ),
        (
            "unsubscribe",
            json!({"op": "unsubscribe", "topic": "/odom", "id": "a"}),
        ),
        (
            "advertise",
            json!({"op": "advertise", "topic": "/cmd_vel", "type": "geometry_msgs/Twist"}),
        ),
        (
            "unadvertise",
            json!({"op": "unadvertise", "topic": "/cmd_vel"}),
        ),
        (
            "publish-twist",
            json!({"op": "publish", "topic": "/cmd_vel", "msg": {"linear": {"x": 0.5}, "angular": {"z": -0.25}}}),
        ),
        (
            "publish-bad-twist",
            json!({"op": "publish", "topic": "/cmd_vel", "msg": {"linear": {"x": "fast"}}}),
        ),
        (
            "publish-text",
            json!({"op": "publish", "topic": "/cmd_vel", "msg": "hello"}),
        ),
        (
            "call-service",
            json!({"op": "call_service", "service": "/rosapi/topic_type", "args": {"topic": "/odom"}, "id": 7}),
        ),
        (
            "call-service-list",
            json!({"op": "call_service", "service": "/rosapi/topic_type", "args": ["/odom"]}),
        ),
        ("set-level", json!({"op": "set_level", "level": "warning"})),
        (
            "set-level-loud",
            json!({"op": "set_level", "level": "loud", "id": "l"}),
        ),
        ("unknown-op", json!({"op": "fly", "id": "f"})),
        ("no-op", json!({"topic": "/odom"})),
        ("array", json!([1, 2])),
    ];
    let dir = corpus();
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, input: Vec<u8>| std::fs::write(dir.join(name), input).unwrap();
    for (name, op) in ops {
        let mut text = vec![0u8];
        text.extend_from_slice(op.to_string().as_bytes());
        let accepted = check::op(&text);
        write(&format!("seed-{name}.json"), text);
        if accepted {
            let mut cbor = vec![1u8];
            ciborium::into_writer(&op, &mut cbor).unwrap();
            assert!(check::op(&cbor), "{name} as CBOR");
            write(&format!("seed-{name}.cbor"), cbor);
        }
    }
    write("seed-malformed.json", b"\0{not json".to_vec());
}
