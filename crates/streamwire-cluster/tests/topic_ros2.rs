//! `topic bench --ros2` on a topic of a ROS 2 implementation nobody here wrote:
//! zenoh-ros2-sdk 0.1.8's Odometry publisher (streamwire-rmw's
//! `tests/interop/sdk_publisher.py`, installed by `.ci/run`'s ros2-rmw step; skipped
//! without it, failing under `STREAMWIRE_REQUIRE=all`), through a zenoh router of the
//! test on loopback. The report gives the topic tool's items: rate, bandwidth, size,
//! latency from `header.stamp`, the subscriber's CPU.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test failing"
)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::Value;
use streamwire_cli::Cli;
use streamwire_cluster::cli::Distributed;
use zenoh::Wait as _;

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../streamwire-rmw/tests/interop")
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn router(port: u16) -> zenoh::Session {
    let mut config = zenoh::Config::default();
    for (key, value) in [
        ("mode", "\"router\"".to_owned()),
        ("listen/endpoints", format!("[\"tcp/127.0.0.1:{port}\"]")),
        ("connect/endpoints", "[]".to_owned()),
        ("scouting/multicast/enabled", "false".to_owned()),
        ("scouting/gossip/enabled", "false".to_owned()),
    ] {
        config.insert_json5(key, &value).unwrap();
    }
    zenoh::open(config).wait().unwrap()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What a person reads, without this run's figures: every number of the lines that hold
/// measurements as `#`, the router's port as `<port>`.
fn without_figures(text: &str, port: u16) -> String {
    const MEASURED: [&str; 10] = [
        "QoS",
        "stopped",
        "duration",
        "messages",
        "frequency",
        "size  ",
        "bandwidth",
        "latency",
        "total data",
        "CPU",
    ];
    let mut out = String::new();
    for line in text.lines() {
        let label = line.trim_start();
        if MEASURED.iter().any(|m| label.starts_with(m)) {
            out.push_str(&mask_numbers(line));
        } else {
            out.push_str(&line.replace(&format!(":{port}"), ":<port>"));
        }
        out.push('\n');
    }
    out
}

fn mask_numbers(line: &str) -> String {
    let mut out = String::new();
    let mut in_number = false;
    for c in line.chars() {
        let digit = c.is_ascii_digit() || (in_number && c == '.');
        if digit && !in_number {
            out.push('#');
        } else if !digit {
            out.push(c);
        }
        in_number = digit;
    }
    out
}

#[test]
fn topic_bench_ros2_measures_the_sdks_odometry_from_its_header_stamps() {
    let python = interop_dir().join(".venv/bin/python");
    if !python.is_file() {
        streamwire_testdata::skip(format!(
            "zenoh-ros2-sdk is not installed at {} (run .ci/run's ros2-rmw step)",
            python.display()
        ));
        return;
    }
    let port = free_port();
    let _router = router(port);
    let messages = Path::new(env!("CARGO_MANIFEST_DIR")).join("../streamwire-ros2/msg");
    let child = Command::new(&python)
        .arg(interop_dir().join("sdk_publisher.py"))
        .args([
            port.to_string(),
            messages.display().to_string(),
            "/camera".into(),
            "0.05".into(),
            "60".into(),
        ])
        .env("GIT_PYTHON_REFRESH", "quiet")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let _child = Killed(child);
    let dir = std::env::temp_dir().join(format!("sw-topic-ros2-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cli = Cli::new("ros2-topic-test", "topic --ros2").add_plugin(Distributed);
    let connect = format!("tcp/127.0.0.1:{port}");
    let stop = Arc::new(AtomicBool::new(false));
    let mut reports = Vec::new();
    for name in ["report.json", "report.txt"] {
        let path = dir.join(name);
        let args = [
            "ros2-topic-test",
            "topic",
            "bench",
            "/odom",
            "--ros2",
            "--connect",
            &connect,
            "--count",
            "20",
            "--wait",
            "20",
            "--report",
            path.to_str().unwrap(),
        ];
        let code = cli.run_args(args, Vec::<(String, String)>::new(), &stop);
        assert!(code.is_ok(), "{code:?}");
        reports.push(std::fs::read_to_string(&path).unwrap());
    }
    let _ = std::fs::remove_dir_all(&dir);
    let json: Value = serde_json::from_str(&reports[0]).unwrap();
    assert_eq!(json["message_type"], "nav_msgs/msg/Odometry", "{json}");
    assert_eq!(json["summary"]["count"], 20, "{json}");
    let text = &reports[1];
    assert!(text.contains("latency from header.stamp"), "{text}");
    insta::assert_snapshot!("topic_bench_ros2_odom", without_figures(text, port));
}
