//! The demo's streams as ROS 2 topics, read by a ROS 2 implementation nobody here wrote:
//! zenoh-ros2-sdk 0.1.8 (with eclipse-zenoh 1.10.2), whose subscribers interoperate with
//! rmw_zenoh nodes. `.ci/run` installs it into `tests/interop/.venv` (requirements.txt,
//! exact versions); where it is absent the test skips, saying why (and fails under
//! `STREAMWIRE_REQUIRE=all`).
//!
//! On loopback: a zenoh router opened by the test on a free port of 127.0.0.1 (scouting
//! off), the run's `Ros2Out` and the SDK's session both connected to it only.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;
use streamwire::msgs::Odometry;
use streamwire::prelude::*;
use streamwire_modules::demo::{DemoConfig, demo_blueprint};
use streamwire_rmw::Ros2Out;

mod common;

use common::{Killed, free_port, interop_dir, router, sdk_python};

/// Messages of each topic the SDK must receive.
const COUNT: usize = 3;
/// The longest the SDK's subscriber waits for them.
const LIMIT: Duration = Duration::from_secs(40);

/// The SDK subscriber's JSON lines until its `end` line or `LIMIT` and 20 s more.
fn sdk_lines(python: &Path, port: u16) -> Vec<Value> {
    let messages = Path::new(env!("CARGO_MANIFEST_DIR")).join("../streamwire-ros2/msg");
    let mut child = Command::new(python)
        .arg(interop_dir().join("sdk_subscriber.py"))
        .args([
            port.to_string(),
            messages.display().to_string(),
            "/camera/compressed".into(),
            "/odom".into(),
            COUNT.to_string(),
            LIMIT.as_secs().to_string(),
            "/camera".into(),
        ])
        .env("GIT_PYTHON_REFRESH", "quiet")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the SDK's subscriber starts");
    let stdout = child.stdout.take().expect("piped");
    let _child = Killed(child);
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let until = Instant::now() + LIMIT + Duration::from_secs(20);
    let mut out = Vec::new();
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        let Ok(line) = lines.recv_timeout(left) else {
            break;
        };
        // A line that is not JSON is kept (and fails the counts visibly), never skipped.
        let value = serde_json::from_str::<Value>(&line)
            .unwrap_or_else(|_| serde_json::json!({ "kind": "unparsed", "line": line }));
        let end = value["kind"] == "end";
        out.push(value);
        if end {
            break;
        }
    }
    out
}

fn floats(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// The SDK's odometry equals one the run published (the same stamp, the same values).
fn assert_odometry_is_the_runs(received: &Value, run: &[Odometry]) {
    let stamp = received["stamp"].as_array().expect("a stamp");
    let nanos = stamp[0].as_u64().expect("sec") * 1_000_000_000 + stamp[1].as_u64().expect("ns");
    let ours = run
        .iter()
        .find(|o| o.stamp().as_nanos() == nanos)
        .unwrap_or_else(|| panic!("no odometry of the run has stamp {nanos}: {received}"));
    let pose = ours.pose();
    let twist = ours.twist();
    let expected = [
        (
            "position",
            vec![pose.position.x, pose.position.y, pose.position.z],
        ),
        (
            "orientation",
            vec![
                pose.orientation.x,
                pose.orientation.y,
                pose.orientation.z,
                pose.orientation.w,
            ],
        ),
        (
            "linear",
            vec![twist.linear.x, twist.linear.y, twist.linear.z],
        ),
        (
            "angular",
            vec![twist.angular.x, twist.angular.y, twist.angular.z],
        ),
    ];
    for (field, values) in expected {
        let got = floats(&received[field]);
        assert_eq!(got.len(), values.len(), "{field}: {received}");
        for (g, e) in got.iter().zip(&values) {
            assert!(
                (g - e).abs() <= 1e-12 * e.abs().max(1.0),
                "{field}: {g} != {e}"
            );
        }
    }
    assert_eq!(received["frame_id"], ours.frame_id());
    assert_eq!(received["child_frame_id"], ours.child_frame_id());
}

#[test]
fn the_sdk_receives_the_demo_camera_and_odometry() {
    let Some(python) = sdk_python() else { return };
    let port = free_port();
    let router = router(port);

    let mut config = DemoConfig::default();
    config.camera.width = 320;
    config.camera.height = 240;
    config.camera.fps = 10.0;
    let mut blueprint = demo_blueprint(&config).expect("the demo blueprint");
    let ros2 = blueprint.add(
        "ros2",
        Ros2Out {
            topics: vec!["color_image=/camera".into(), "odometry=/odom".into()],
            connect: format!("tcp/127.0.0.1:{port}"),
            ..Ros2Out::default()
        },
    );
    // On the laptop, as a relay: the camera's frames reach it compressed.
    blueprint.place(&ros2, Placement::process("ros").on_host("laptop"));
    blueprint.autoconnect();
    let run = blueprint.run(RunOptions::default()).expect("the demo runs");
    let odometry_tap = run.tap::<Odometry>("odometry").expect("a tap on odometry");
    let collecting = Arc::new(AtomicBool::new(true));
    let (odometry_out, odometry_in) = mpsc::channel();
    let collector = std::thread::spawn({
        let collecting = collecting.clone();
        move || {
            while collecting.load(Ordering::SeqCst) {
                if let Some(delivered) = odometry_tap.recv_timeout(Duration::from_millis(100)) {
                    let _ = odometry_out.send(delivered.message);
                }
            }
        }
    });

    // Nobody subscribes to the raw frames yet: none are published.
    std::thread::sleep(Duration::from_secs(1));
    let before = run.stats();
    let lines = sdk_lines(&python, port);
    collecting.store(false, Ordering::SeqCst);
    let stats = run.stats();
    run.stop();
    let _report = run.wait_timeout(Duration::from_secs(10));
    let _ = collector.join();
    let run_odometry: Vec<Odometry> = odometry_in.try_iter().collect();
    drop(router);

    let of = |kind: &str| -> Vec<&Value> { lines.iter().filter(|l| l["kind"] == kind).collect() };
    let images = of("image");
    let odometry = of("odom");
    assert!(
        images.len() >= COUNT,
        "{} images; the SDK said: {lines:?}",
        images.len()
    );
    assert!(
        odometry.len() >= COUNT,
        "{} odometry; the SDK said: {lines:?}",
        odometry.len()
    );
    for image in &images {
        assert_eq!(image["decoded"], "JPEG", "{image}");
        assert_eq!(image["size"], serde_json::json!([320, 240]), "{image}");
        assert!(
            image["format"].as_str().is_some_and(|f| f.contains("jpeg")),
            "{image}"
        );
    }
    let raw = of("raw");
    assert!(
        raw.len() >= COUNT,
        "{} raw images; the SDK said: {lines:?}",
        raw.len()
    );
    for image in &raw {
        assert_eq!(image["size"], serde_json::json!([320, 240]), "{image}");
        assert_eq!(image["bytes"], 320 * 240 * 3, "{image}");
    }
    let raw_before = before
        .instances
        .iter()
        .find(|i| i.name.ends_with("ros2"))
        .and_then(|row| {
            row.counters
                .iter()
                .find(|(n, _)| n == "published:color_image/raw")
        })
        .map_or(0, |(_, v)| *v);
    assert_eq!(
        raw_before, 0,
        "raw frames published before anybody subscribed"
    );
    for received in &odometry {
        assert_odometry_is_the_runs(received, &run_odometry);
    }
    // The SDK's graph view lists our topics with their types.
    let topics = &of("topics")[0]["topics"];
    for (topic, ros_type) in [
        ("/camera/compressed", "sensor_msgs/msg/CompressedImage"),
        ("/odom", "nav_msgs/msg/Odometry"),
    ] {
        let listed = topics
            .as_array()
            .is_some_and(|t| t.iter().any(|e| e[0] == topic && e[1][0] == ros_type));
        assert!(listed, "{topic} not in the SDK's topics: {topics}");
    }
    let row = stats
        .instances
        .iter()
        .find(|i| i.name.ends_with("ros2"))
        .expect("the ros2 row");
    let counter = |name: &str| {
        row.counters
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v)
    };
    assert!(
        counter("published:color_image") >= COUNT as u64,
        "{:?}",
        row.counters
    );
    assert!(
        counter("published:color_image/raw") >= COUNT as u64,
        "{:?}",
        row.counters
    );
    assert!(
        counter("published:odometry") >= COUNT as u64,
        "{:?}",
        row.counters
    );
}
