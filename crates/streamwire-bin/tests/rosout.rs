//! `/rosout` of a distributed run: the demo over its four workers (a closed run), whose
//! planner warns, in the coordinator, that the detector receives lossy pixels. That
//! warning reaches the relay's worker and `/rosout`, as roslib 2.1.0 (rosbridge) and
//! Foxglove's own client (`@foxglove/ws-protocol`) read it, and the relay's row of the
//! report counts the run's log records.
//!
//! The clients are the web relay's test clients, which `.ci/run` installs
//! (`crates/streamwire-web/tests/clients` and `tests/foxglove`, npm ci); where they are
//! absent the test skips, saying why (and fails under `STREAMWIRE_REQUIRE=all`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_streamwire");
const NODE: &str = "/usr/bin/node";

fn web_tests() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../streamwire-web/tests")
}

/// The clients' folders when node and both clients are installed.
fn clients() -> Option<(PathBuf, PathBuf)> {
    let roslib = web_tests().join("clients");
    let foxglove = web_tests().join("foxglove");
    let present = Path::new(NODE).exists()
        && roslib.join("node_modules/roslib/package.json").exists()
        && foxglove
            .join("node_modules/@foxglove/ws-protocol/package.json")
            .exists();
    if present {
        return Some((roslib, foxglove));
    }
    streamwire_testdata::skip(format!(
        "node or the web relay's test clients are absent (npm ci in {} and {})",
        roslib.display(),
        foxglove.display()
    ));
    None
}

/// The run, killed if the test ends before it does.
struct Run(Child);

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The next line of `lines` that contains `marker`, within `limit`; the lines seen.
fn line_with(lines: &Receiver<String>, marker: &str, limit: Duration) -> (Option<String>, String) {
    let deadline = Instant::now() + limit;
    let mut seen = String::new();
    while let Ok(line) = lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        if line.contains(marker) {
            return (Some(line), seen);
        }
        seen.push_str(&line);
        seen.push('\n');
    }
    (None, seen)
}

/// Runs a node client in `dir` (each waits at most 30 s); its one JSON answer.
fn client(dir: &Path, script: &str, url: &str) -> serde_json::Value {
    let mut command = Command::new(NODE);
    command.args([script, url, "lossy pixels"]).current_dir(dir);
    let out = streamwire_testdata::process::output_bounded(command, &[], Duration::from_secs(45));
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "{script}: {e}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The record a client got, checked as `rcl_interfaces/msg/Log` of the planner's warning.
fn check_record(answer: &serde_json::Value, named: &str) {
    let record = &answer["record"];
    assert_eq!(record["level"], 30, "{answer}");
    let name = record["name"].as_str().unwrap_or_default();
    assert!(name.starts_with(named), "{answer}");
    let text = record["msg"].as_str().unwrap_or_default();
    assert!(
        text.contains("receives lossy pixels of `color_image`"),
        "{answer}"
    );
    assert!(
        record["file"].as_str().is_some_and(|f| f.ends_with(".rs")),
        "{answer}"
    );
    assert!(record["line"].as_u64().is_some_and(|l| l > 0), "{answer}");
    assert!(
        record["stamp"]["sec"].as_u64().is_some_and(|s| s > 0),
        "{answer}"
    );
}

#[test]
fn a_planner_warning_reaches_rosout_of_a_distributed_run_through_both_protocols() {
    planner_warning_on_rosout(&[], "coordinator/streamwire_graph::planner");
}

/// The same in one process (`--in-process`): no forwarding, the relay reads its own
/// process's records.
#[test]
fn a_planner_warning_reaches_rosout_of_a_run_in_one_process() {
    planner_warning_on_rosout(&["--in-process"], "streamwire_graph::planner");
}

/// Runs the demo with `extra` and reads `/rosout` with both clients: the planner's
/// warning, its name starting with `named`.
fn planner_warning_on_rosout(extra: &[&str], named: &str) {
    let Some((roslib, foxglove)) = clients() else {
        return;
    };
    let report = tempfile::NamedTempFile::new().expect("a report file");
    let mut child = Command::new(BIN)
        .args(["run", "demo", "--duration", "40"])
        .args(extra)
        .args(["-o", "web.port=0", "-o", "foxglove.enabled=true"])
        .args(["-o", "camera.width=320", "-o", "camera.height=240"])
        .arg("--report")
        .arg(report.path())
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("streamwire starts");
    let stderr = child.stderr.take().expect("stderr");
    let stdout = child.stdout.take().expect("stdout");
    let mut run = Run(child);
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let (line, seen) = line_with(&lines, "connection to ws://", Duration::from_secs(90));
    let line = line.unwrap_or_else(|| panic!("no Foxglove URL printed:\n{seen}"));
    let url = line
        .split("connection to ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .expect("a URL");
    // The rosbridge endpoint is the relay's root, with the same token.
    let rosbridge = url.replacen("/foxglove?", "/?", 1);

    // Both at once: whichever subscribes second joins the relay's running `/rosout` feed,
    // and must still get the warning, logged long before either came (before, it got
    // only what came after it, and a burst of history reached a client cut to the last
    // few of its keep-last queue).
    let (from_roslib, from_foxglove) = std::thread::scope(|s| {
        let roslib = s.spawn(|| client(&roslib, "rosout_roslib.mjs", &rosbridge));
        let foxglove = s.spawn(|| client(&foxglove, "rosout_foxglove.js", url));
        (roslib.join(), foxglove.join())
    });
    let (from_roslib, from_foxglove) = (
        from_roslib.expect("the roslib client's thread"),
        from_foxglove.expect("the Foxglove client's thread"),
    );
    eprintln!("roslib: {from_roslib}\nfoxglove: {from_foxglove}");
    check_record(&from_roslib, named);
    check_record(&from_foxglove, named);
    assert_eq!(from_foxglove["schemaName"], "rcl_interfaces/msg/Log");

    // The run ends by itself; the relay's row counts the records it had.
    let status = run.0.wait().expect("the run ends");
    let mut printed = String::new();
    let _ = std::io::Read::read_to_string(&mut BufReader::new(stdout), &mut printed);
    assert!(status.success(), "{printed}");
    let text = std::fs::read_to_string(report.path()).expect("the report");
    let report: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let relay = report["stats"]["instances"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == "web"))
        .unwrap_or_else(|| panic!("no relay row: {text}"));
    let counter = |name: &str| {
        relay["counters"]
            .as_array()
            .and_then(|c| c.iter().find(|pair| pair[0] == name))
            .and_then(|pair| pair[1].as_u64())
    };
    assert!(counter("log_records").is_some_and(|n| n >= 3), "{relay}");
}
