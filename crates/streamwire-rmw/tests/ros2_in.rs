//! ROS 2 topics into a run, from a ROS 2 implementation nobody here wrote:
//! zenoh-ros2-sdk 0.1.8's publishers (`tests/interop/sdk_publisher.py`) put a
//! CompressedImage (a JPEG made by Pillow), a raw rgb8 Image and an Odometry; the run's
//! `Ros2ImageIn` and `Ros2OdometryIn` publish them, and its consumers receive what the
//! SDK sent: the JPEG's bytes unchanged (`In<Compressed<Image>>`), its pixels through the
//! decode node the planner inserts (`In<Image>`, close to the raw image of the same
//! stamp), the raw pixels exactly, the odometry's values exactly.
//!
//! On loopback: a zenoh router opened by the test on a free port of 127.0.0.1 (scouting
//! off), the run and the SDK connected to it only. Skips where `.ci/run`'s ros2-rmw step
//! has not installed the SDK (fails instead under `STREAMWIRE_REQUIRE=all`).

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test failing"
)]

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;
use sha2::{Digest, Sha256};
use streamwire::msgs::{CompressedImage, Image, Odometry};
use streamwire::prelude::*;
use streamwire::runtime::Harness;
use streamwire_rmw::liveliness::{Entity, EntityKind, NodeInfo, TopicInfo};
use streamwire_rmw::qos::RosQos;
use streamwire_rmw::{Attachment, Ros2ImageIn, Ros2OdometryIn, topic_key, topics};
use streamwire_ros2::RosMessage as _;
use streamwire_ros2::cdr::CdrWriter;
use zenoh::Wait as _;

use common::{Killed, free_port, interop_dir, router, sdk_python};

/// Messages of each kind every consumer must receive.
const COUNT: usize = 3;
/// The longest the test waits for them.
const LIMIT: Duration = Duration::from_secs(40);

/// Keeps every message of its input, for the test to read.
macro_rules! collector {
    ($name:ident, $port:literal, $payload:ty, $message:ty) => {
        #[derive(Module)]
        struct $name {
            #[port(name = $port, depth = 64)]
            input: In<$payload>,
            #[state]
            seen: Arc<Mutex<Vec<$message>>>,
        }

        impl Node for $name {
            fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
                while let Some(delivered) = self.input.recv()? {
                    self.seen.lock().push(delivered.message);
                }
                Ok(())
            }
        }
    };
}

collector!(Pixels, "camera_image", Image, Image);
collector!(
    JpegBytes,
    "camera_image",
    Compressed<Image>,
    CompressedImage
);
collector!(RemotePixels, "camera_image", Image, Image);
collector!(RawPixels, "raw_image", Image, Image);
collector!(Odometries, "odometry", Odometry, Odometry);

type Seen<M> = Arc<Mutex<Vec<M>>>;

struct Seens {
    pixels: Seen<Image>,
    remote_pixels: Seen<Image>,
    bytes: Seen<CompressedImage>,
    raw: Seen<Image>,
    odometry: Seen<Odometry>,
}

impl Seens {
    fn enough(&self) -> bool {
        self.pixels.lock().len() >= COUNT
            && self.remote_pixels.lock().len() >= COUNT
            && self.bytes.lock().len() >= COUNT
            && self.raw.lock().len() >= COUNT
            && self.odometry.lock().len() >= COUNT
    }
}

fn blueprint(port: u16, seens: &Seens) -> Blueprint {
    let connect = format!("tcp/127.0.0.1:{port}");
    let mut blueprint = Blueprint::new();
    let camera = blueprint.add(
        "camera",
        Ros2ImageIn {
            topic: "/camera/compressed".into(),
            connect: connect.clone(),
            ..Ros2ImageIn::default()
        },
    );
    blueprint.remap(camera.ports().image, "camera_image");
    let raw = blueprint.add(
        "camera_raw",
        Ros2ImageIn {
            topic: "/camera/image_raw".into(),
            ros_type: "sensor_msgs/msg/Image".into(),
            connect: connect.clone(),
            ..Ros2ImageIn::default()
        },
    );
    blueprint.remap(raw.ports().image, "raw_image");
    blueprint.add(
        "odom",
        Ros2OdometryIn {
            topic: "/odom".into(),
            connect,
            ..Ros2OdometryIn::default()
        },
    );
    blueprint.add(
        "pixels",
        Pixels {
            input: In::default(),
            seen: seens.pixels.clone(),
        },
    );
    // On another host the stream travels compressed: the planner inserts the decode
    // node there, as for any `Out<Compressed<Image>>`.
    let remote = blueprint.add(
        "remote_pixels",
        RemotePixels {
            input: In::default(),
            seen: seens.remote_pixels.clone(),
        },
    );
    blueprint.place(&remote, Placement::process("viewer").on_host("laptop"));
    blueprint.add(
        "bytes",
        JpegBytes {
            input: In::default(),
            seen: seens.bytes.clone(),
        },
    );
    blueprint.add(
        "raw_pixels",
        RawPixels {
            input: In::default(),
            seen: seens.raw.clone(),
        },
    );
    blueprint.add(
        "odometries",
        Odometries {
            input: In::default(),
            seen: seens.odometry.clone(),
        },
    );
    blueprint.autoconnect();
    blueprint
}

/// The SDK publisher's JSON lines, read on a thread of their own.
fn read_lines(stdout: std::process::ChildStdout) -> mpsc::Receiver<Value> {
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let value = serde_json::from_str::<Value>(&line)
                .unwrap_or_else(|_| serde_json::json!({ "kind": "unparsed", "line": line }));
            if sender.send(value).is_err() {
                break;
            }
        }
    });
    lines
}

fn stamp_of(value: &Value) -> u64 {
    let stamp = value["stamp"].as_array().unwrap();
    stamp[0].as_u64().unwrap() * 1_000_000_000 + stamp[1].as_u64().unwrap()
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What the SDK said it published, by kind and stamp.
fn published(lines: &[Value]) -> HashMap<(String, u64), Value> {
    lines
        .iter()
        .filter(|l| l.get("stamp").is_some())
        .map(|l| {
            (
                (l["kind"].as_str().unwrap().to_owned(), stamp_of(l)),
                l.clone(),
            )
        })
        .collect()
}

fn sent<'a>(published: &'a HashMap<(String, u64), Value>, kind: &str, stamp: u64) -> &'a Value {
    published
        .get(&(kind.to_owned(), stamp))
        .unwrap_or_else(|| panic!("the SDK published no {kind} with stamp {stamp}"))
}

fn assert_odometry(sent: &Value, received: &Odometry) {
    let floats = |field: &str| -> Vec<f64> {
        sent[field]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let pose = received.pose();
    let twist = received.twist();
    let p = pose.position;
    let o = pose.orientation;
    let (l, a) = (twist.linear, twist.angular);
    assert_eq!(floats("position"), [p.x, p.y, p.z]);
    assert_eq!(floats("orientation"), [o.x, o.y, o.z, o.w]);
    assert_eq!(floats("linear"), [l.x, l.y, l.z]);
    assert_eq!(floats("angular"), [a.x, a.y, a.z]);
    assert_eq!(received.frame_id(), "odom");
    assert_eq!(received.child_frame_id(), "base_link");
}

/// Mean absolute difference of two images' bytes (JPEG is lossy: close, not equal).
fn mean_difference(a: &Image, b: &Image) -> f64 {
    let (a, b) = (a.packed(), b.packed());
    assert_eq!(a.len(), b.len());
    let total: u64 = a
        .iter()
        .zip(b.iter())
        .map(|(x, y)| u64::from(x.abs_diff(*y)))
        .sum();
    total as f64 / a.len() as f64
}

#[test]
fn the_sdk_publishers_feed_the_runs_inputs_with_a_decode_node_planned() {
    let _one_at_a_time = ONE_AT_A_TIME.lock();
    let Some(python) = sdk_python() else { return };
    let port = free_port();
    let router = router(port);
    let seens = Seens {
        pixels: Seen::default(),
        remote_pixels: Seen::default(),
        bytes: Seen::default(),
        raw: Seen::default(),
        odometry: Seen::default(),
    };
    let blueprint = blueprint(port, &seens);
    let plan = blueprint.build().expect("the blueprint builds");
    insta::assert_snapshot!("ros2_in_plan", plan.to_string());

    let run = blueprint
        .run(RunOptions::default())
        .expect("the run starts");
    let (child, stdin, lines_in) = sdk_publisher(&python, port, LIMIT);
    let until = Instant::now() + LIMIT;
    while !seens.enough() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Closing its stdin ends the SDK's loop; its last lines follow.
    drop(stdin);
    let mut lines = Vec::new();
    let drain_until = Instant::now() + Duration::from_secs(10);
    while let Some(left) = drain_until.checked_duration_since(Instant::now()) {
        let Ok(line) = lines_in.recv_timeout(left) else {
            break;
        };
        let end = line["kind"] == "end";
        lines.push(line);
        if end {
            break;
        }
    }
    drop(child);
    let stats = run.stats();
    run.stop();
    let _report = run.wait_timeout(Duration::from_secs(10));
    drop(router);

    let published = published(&lines);
    let mut pixels = seens.pixels.lock().clone();
    pixels.extend(seens.remote_pixels.lock().iter().cloned());
    let bytes = seens.bytes.lock().clone();
    let raw = seens.raw.lock().clone();
    let odometry = seens.odometry.lock().clone();
    let counts = [
        pixels.len(),
        seens.remote_pixels.lock().len(),
        bytes.len(),
        raw.len(),
        odometry.len(),
    ];
    assert!(
        counts.iter().all(|&n| n >= COUNT),
        "received {counts:?}; the SDK said: {lines:?}; {stats:?}"
    );
    for image in &bytes {
        let sent = sent(&published, "compressed", image.stamp().as_nanos());
        assert_eq!(sha256(image.data()), sent["sha256"], "the JPEG's bytes");
        assert_eq!(image.frame_id(), "sdk_camera");
    }
    let raw_by_stamp: HashMap<u64, &Image> =
        raw.iter().map(|i| (i.stamp().as_nanos(), i)).collect();
    for image in &raw {
        let sent = sent(&published, "raw", image.stamp().as_nanos());
        assert_eq!((image.width(), image.height()), (64, 48));
        assert_eq!(sha256(&image.packed()), sent["sha256"], "the raw pixels");
    }
    let mut compared = 0;
    for image in &pixels {
        assert_eq!((image.width(), image.height()), (64, 48), "decoded");
        if let Some(original) = raw_by_stamp.get(&image.stamp().as_nanos()) {
            let difference = mean_difference(image, original);
            assert!(
                difference < 6.0,
                "JPEG q90 differs by {difference} on average"
            );
            compared += 1;
        }
    }
    assert!(compared > 0, "no decoded image had its raw twin");
    for received in &odometry {
        assert_odometry(
            sent(&published, "odom", received.stamp().as_nanos()),
            received,
        );
    }
    let row = |name: &str| {
        stats
            .instances
            .iter()
            .find(|i| i.name == name)
            .unwrap_or_else(|| panic!("no row {name}"))
            .counters
            .clone()
    };
    for name in ["camera", "camera_raw", "odom"] {
        let counters = row(name);
        let counter = |c: &str| counters.iter().find(|(n, _)| n == c).map_or(0, |(_, v)| *v);
        assert!(counter("published") >= COUNT as u64, "{name}: {counters:?}");
        for refused in ["refused:size", "refused:attachment", "refused:cdr"] {
            assert_eq!(counter(refused), 0, "{name}: {counters:?}");
        }
        assert_eq!(
            counter("incompatible_publishers"),
            0,
            "{name}: {counters:?}"
        );
    }
}

/// A valid `nav_msgs/msg/Odometry` in CDR, written field by field.
fn odometry_cdr(x: f64) -> Vec<u8> {
    let mut w = CdrWriter::new();
    w.i32(1_700_000_000);
    w.u32(5);
    w.string("odom", "frame_id").unwrap();
    w.string("base_link", "child_frame_id").unwrap();
    w.f64_array(&[x, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
    w.f64_array(&[0.0; 36]);
    w.f64_array(&[0.5, 0.0, 0.0, 0.0, 0.0, 0.25]);
    w.f64_array(&[0.0; 36]);
    w.finish()
}

/// A publisher putting what the test says on a topic's key, attachments as it says.
struct Hostile {
    session: zenoh::Session,
    key: String,
}

impl Hostile {
    fn new(port: u16, topic: &str, ros_type: &str, hash: &str) -> Hostile {
        let mut config = zenoh::Config::default();
        for (key, value) in [
            ("mode", "\"client\"".to_owned()),
            ("connect/endpoints", format!("[\"tcp/127.0.0.1:{port}\"]")),
            ("scouting/multicast/enabled", "false".to_owned()),
        ] {
            config.insert_json5(key, &value).unwrap();
        }
        Hostile {
            session: zenoh::open(config).wait().unwrap(),
            key: topic_key(0, topic, ros_type, hash).unwrap(),
        }
    }

    fn put(&self, payload: Vec<u8>, attachment: Option<Vec<u8>>) {
        let put = self.session.put(&self.key, payload);
        match attachment {
            Some(attachment) => put.attachment(attachment).wait().unwrap(),
            None => put.wait().unwrap(),
        }
    }
}

fn attachment(seq: i64) -> Vec<u8> {
    Attachment {
        sequence_number: seq,
        source_timestamp: 1,
        gid: [9; 16],
    }
    .encode()
    .to_vec()
}

/// Steps `harness` until `done` says so or 20 s pass.
fn step_until<M: Module + Node>(
    harness: &mut Harness<M>,
    mut done: impl FnMut(&Harness<M>) -> bool,
) {
    let until = Instant::now() + Duration::from_secs(20);
    while !done(harness) && Instant::now() < until {
        harness.step().unwrap();
    }
}

/// The tests of this file run one at a time: run side by side (each with its router, its
/// SDK processes and its zenoh sessions), the hostile-sample test saw none of its refused
/// samples in about half the runs of this binary, and alone it never did (not yet
/// understood: say so before removing this).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const MAX_BYTES: u64 = 64 * 1024;

#[test]
fn hostile_samples_are_counted_and_refused_and_a_valid_one_still_passes() {
    let _one_at_a_time = ONE_AT_A_TIME.lock();
    let port = free_port();
    let _router = router(port);
    let mut harness = Harness::new(Ros2OdometryIn {
        topic: "/odom".into(),
        domain: Some(0),
        connect: format!("tcp/127.0.0.1:{port}"),
        max_bytes: MAX_BYTES,
        queue: 64,
        ..Ros2OdometryIn::default()
    });
    harness.start().unwrap();
    let hash = Odometry::ros_schema().unwrap().rihs01();
    let hostile = Hostile::new(port, "/odom", "nav_msgs/msg/Odometry", &hash);
    // The subscription is in place once a valid sample passes.
    let mut seq = 0;
    step_until(&mut harness, |h| {
        h.counter("published") > 0 || {
            seq += 1;
            hostile.put(odometry_cdr(1.0), Some(attachment(seq)));
            false
        }
    });
    assert!(harness.counter("published") > 0, "no valid sample passed");
    let published = harness.counter("published");
    let lost_before = harness.counter("lost");

    // rmw_zenoh drops a sample without its 33-byte attachment; so do we, counted.
    hostile.put(odometry_cdr(2.0), None);
    hostile.put(odometry_cdr(2.0), Some(attachment(seq + 1)[..32].to_vec()));
    let mut bad_gid_length = attachment(seq + 1);
    bad_gid_length[16] = 15;
    hostile.put(odometry_cdr(2.0), Some(bad_gid_length));
    // Larger than max_bytes: refused before its bytes are read.
    hostile.put(vec![0; MAX_BYTES as usize + 1], Some(attachment(seq + 1)));
    // CDR that lies: a frame_id of 4 GiB, a message cut in half, another encapsulation.
    let mut lying = odometry_cdr(2.0);
    lying[12..16].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
    hostile.put(lying, Some(attachment(seq + 2)));
    let mut cut = odometry_cdr(2.0);
    cut.truncate(cut.len() / 2);
    hostile.put(cut, Some(attachment(seq + 3)));
    hostile.put(vec![0xFF; 64], Some(attachment(seq + 4)));
    // Past zenoh's own limit (max_bytes and 1 MiB): never reassembled, so never counted
    // as refused, but the next sample's sequence number shows it lost.
    hostile.put(vec![0; 3 << 20], Some(attachment(seq + 5)));
    hostile.put(odometry_cdr(3.0), Some(attachment(seq + 6)));

    // Until the last valid sample (x = 3) is out: it was put after every hostile one, so
    // each of those has been judged by then. (Waiting for `published` to grow was not
    // enough: a valid sample of the warm-up above, still on its way, grew it first, and the
    // counts were read before the hostile samples arrived.)
    let odometry = harness.ports().odometry;
    let mut out = Vec::new();
    let until = Instant::now() + Duration::from_secs(20);
    while !out
        .iter()
        .any(|d: &Delivered<Odometry>| d.message.pose().position.x == 3.0)
        && Instant::now() < until
    {
        harness.step().unwrap();
        out.extend(harness.take(odometry));
    }
    let counter = |name: &str| harness.counter(name);
    assert_eq!(counter("refused:attachment"), 3);
    assert_eq!(counter("refused:cdr"), 3);
    // The 3 MiB sample is refused by size where it reaches us (through shared memory on
    // one host it does), or lost inside zenoh past its limit: counted either way.
    let lost = counter("lost") - lost_before;
    assert_eq!(counter("refused:size") + lost, 2, "lost {lost}");
    assert!(counter("published") > published);
    let last = out.last().expect("the valid odometry");
    assert_eq!(last.message.pose().position.x, 3.0);
    harness.stop().unwrap();
}

#[test]
fn an_image_topic_refuses_what_no_decode_node_reads_and_flags_another_type() {
    let _one_at_a_time = ONE_AT_A_TIME.lock();
    let port = free_port();
    let _router = router(port);
    let mut harness = Harness::new(Ros2ImageIn {
        topic: "/camera/compressed".into(),
        domain: Some(0),
        connect: format!("tcp/127.0.0.1:{port}"),
        ..Ros2ImageIn::default()
    });
    harness.start().unwrap();
    let hash = CompressedImage::ros_schema().unwrap().rihs01();
    let hostile = Hostile::new(
        port,
        "/camera/compressed",
        "sensor_msgs/msg/CompressedImage",
        &hash,
    );
    // A PNG: a valid CompressedImage that the JPEG decode node could not read.
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend_from_slice(&[0, 0, 0, 8, 0, 0, 0, 4]);
    let mut w = CdrWriter::new();
    w.i32(1);
    w.u32(0);
    w.string("camera", "frame_id").unwrap();
    w.string("png", "format").unwrap();
    w.bytes(&png, "data").unwrap();
    let cdr = w.finish();
    let mut seq = 0;
    step_until(&mut harness, |h| {
        h.counter("refused:content") > 0 || {
            seq += 1;
            hostile.put(cdr.clone(), Some(attachment(seq)));
            false
        }
    });
    assert!(harness.counter("refused:content") > 0);
    assert_eq!(harness.counter("published"), 0);
    // A ROS publisher of the same topic with another type is named and counted.
    let node = NodeInfo {
        domain: 0,
        zid: hostile.session.zid().to_string(),
        node_id: 0,
        enclave: "/".into(),
        namespace: "/".into(),
        name: "other".into(),
    };
    let other = Entity {
        node,
        entity_id: 1,
        kind: EntityKind::Publisher,
        topic: Some(TopicInfo {
            name: "/camera/compressed".into(),
            ros_type: "sensor_msgs/msg/Image".into(),
            type_hash: Image::ros_schema().unwrap().rihs01(),
            qos: RosQos::default(),
        }),
    };
    let _token = hostile
        .session
        .liveliness()
        .declare_token(other.to_keyexpr().unwrap())
        .wait()
        .unwrap();
    step_until(&mut harness, |h| h.counter("incompatible_publishers") > 0);
    assert_eq!(harness.counter("incompatible_publishers"), 1);
    harness.stop().unwrap();
}

/// The SDK's publisher started for `limit`, its JSON lines on a channel.
fn sdk_publisher(
    python: &Path,
    port: u16,
    limit: Duration,
) -> (
    Killed,
    Option<std::process::ChildStdin>,
    mpsc::Receiver<Value>,
) {
    let messages = Path::new(env!("CARGO_MANIFEST_DIR")).join("../streamwire-ros2/msg");
    let mut child = Command::new(python)
        .arg(interop_dir().join("sdk_publisher.py"))
        .args([
            port.to_string(),
            messages.display().to_string(),
            "/camera".into(),
            "0.1".into(),
            limit.as_secs().to_string(),
        ])
        .env("GIT_PYTHON_REFRESH", "quiet")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the SDK's publisher starts");
    let lines = read_lines(child.stdout.take().unwrap());
    let stdin = child.stdin.take();
    (Killed(child), stdin, lines)
}

#[test]
fn the_topic_tools_list_and_read_the_sdks_topics_with_their_header_stamps() {
    let _one_at_a_time = ONE_AT_A_TIME.lock();
    let Some(python) = sdk_python() else { return };
    let port = free_port();
    let _router = router(port);
    let (child, stdin, lines) = sdk_publisher(&python, port, LIMIT);
    let session = topics::tool_session(&format!("tcp/127.0.0.1:{port}")).unwrap();
    let until = Instant::now() + LIMIT;
    let graph = loop {
        let graph = topics::graph(&session, 0, Duration::from_secs(2)).unwrap();
        if graph.len() >= 3 || Instant::now() > until {
            break graph;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    insta::assert_snapshot!("ros2_topic_list", topics::graph_table(&graph));
    let odom = graph.iter().find(|t| t.name == "/odom").unwrap();
    assert!(topics::starts_with_header(&odom.ros_type));
    let reader = topics::TopicReader::open(
        &session,
        0,
        &odom.name,
        &odom.ros_type,
        &odom.type_hash,
        16,
        1 << 20,
    )
    .unwrap();
    let mut samples = Vec::new();
    while samples.len() < COUNT && Instant::now() < until {
        samples.extend(reader.recv(Duration::from_millis(200)));
    }
    drop(stdin);
    let mut said = Vec::new();
    let drain_until = Instant::now() + Duration::from_secs(10);
    while let Some(left) = drain_until.checked_duration_since(Instant::now()) {
        let Ok(line) = lines.recv_timeout(left) else {
            break;
        };
        let end = line["kind"] == "end";
        said.push(line);
        if end {
            break;
        }
    }
    drop(child);
    assert!(samples.len() >= COUNT, "{} samples", samples.len());
    let published = published(&said);
    for sample in &samples {
        let stamp = topics::header_stamp(&sample.cdr).expect("a header stamp");
        let sent = sent(&published, "odom", stamp);
        let odometry = Odometry::from_cdr(sample.cdr.clone()).unwrap();
        assert_odometry(sent, &odometry);
        assert!(
            sample.arrived_wall >= stamp,
            "arrived before it was stamped"
        );
    }
    let sequence: Vec<i64> = samples
        .iter()
        .map(|s| s.attachment.sequence_number)
        .collect();
    assert!(sequence.windows(2).all(|w| w[1] > w[0]), "{sequence:?}");
    assert_eq!(reader.refused(), 0);
}
