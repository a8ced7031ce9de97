//! `topic bench` against a synthetic publisher run in this process: it stops itself at
//! the count, writes its report, publishes `<stream>_stats` into the run, warns about
//! invalid QoS, and says plainly when nothing arrived.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use streamwire::prelude::*;
use streamwire_cli::{Cli, TopicStats};

/// What the synthetic publisher sends: a counter and 1000 bytes.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "test/Tick")]
struct Tick {
    n: u64,
    data: Vec<u8>,
}

/// Publishes a tick every 4 ms for ever (`silent`: never): the tool must stop itself.
#[derive(Module)]
struct Synthetic {
    ticks: Out<Tick>,
    #[config]
    silent: bool,
    #[state]
    sent: u64,
}

impl Node for Synthetic {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(4))
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        if !self.silent {
            self.ticks.publish(Tick {
                n: self.sent,
                data: vec![7; 1000],
            })?;
            self.sent += 1;
        }
        Ok(())
    }
}

/// Reads what `topic bench` publishes on `ticks_stats` (fed only while the tool runs).
#[derive(Module)]
struct StatsWatcher {
    #[port(name = "ticks_stats", optional)]
    stats: In<TopicStats>,
    #[state]
    seen: Arc<AtomicU64>,
}

impl Node for StatsWatcher {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while let Some(stats) = self.stats.recv()? {
            if stats.message.stream == "ticks" && stats.message.count > 0 {
                self.seen.fetch_add(1, Ordering::SeqCst);
            }
        }
        Ok(())
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct NoConfig {}

fn cli(seen: &Arc<AtomicU64>) -> Cli {
    let build = |silent: bool, seen: Arc<AtomicU64>| {
        move |_: NoConfig| {
            let mut bp = Blueprint::new();
            bp.add(
                "synthetic",
                Synthetic {
                    ticks: Out::new(),
                    silent,
                    sent: 0,
                },
            );
            bp.add(
                "watcher",
                StatsWatcher {
                    stats: In::new(),
                    seen: seen.clone(),
                },
            );
            bp.autoconnect();
            bp
        }
    };
    Cli::new("topic-test", "topic bench against a synthetic publisher")
        .blueprint("synthetic", "ticks every 4 ms", build(false, seen.clone()))
        .blueprint("silent", "never publishes", build(true, seen.clone()))
}

fn run(cli: &Cli, args: &[&str]) -> ExitCode {
    let stop = Arc::new(AtomicBool::new(false));
    let mut argv = vec!["topic-test", "topic", "bench"];
    argv.extend_from_slice(args);
    cli.run_args(argv, Vec::<(String, String)>::new(), &stop)
        .unwrap_or_else(|e| panic!("topic bench {args:?}: {e:#}"))
}

#[test]
fn stops_at_the_count_and_writes_the_report() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let text_path = dir.path().join("report.txt");
    let json_path = dir.path().join("report.json");
    let seen = Arc::new(AtomicU64::new(0));
    let cli = cli(&seen);
    let count = "400";
    for (path, extra) in [
        (&text_path, ["--reliability", "relaible"]),
        (&json_path, ["--depth", "0"]),
    ] {
        let code = run(
            &cli,
            &[
                "ticks",
                "--blueprint",
                "synthetic",
                "--count",
                count,
                // Bounds the test if the count were never reached.
                "--wait",
                "30",
                "--report",
                &path.display().to_string(),
                extra[0],
                extra[1],
            ],
        );
        assert_eq!(code, ExitCode::SUCCESS);
    }
    let text = std::fs::read_to_string(&text_path).unwrap_or_default();
    for expected in [
        "topic bench: ticks",
        "type          test/Tick",
        "stopped       --count reached (400 messages)",
        "messages      400 received",
        "size means    serialized bytes",
        "QoS requested reliability=best_effort durability=volatile history=keep_last depth=1",
        "frequency     mean ",
        "(1/mean(dt))",
        "latency       mean ",
        "warning       --reliability relaible: not a reliability",
        "published as `ticks_stats`",
    ] {
        assert!(text.contains(expected), "`{expected}` missing:\n{text}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap_or_default())
            .unwrap_or_else(|e| panic!("report.json: {e}"));
    assert_eq!(json["summary"]["count"], 400);
    assert_eq!(json["stop_reason"]["count"], 400);
    assert_eq!(json["message_type"], "test/Tick");
    // A message of 1000 bytes and a counter is a little over 1000 bytes of CBOR.
    let size = json["summary"]["size"]["min"].as_f64().unwrap_or(0.0);
    assert!((1000.0..1100.0).contains(&size), "{size}");
    assert!(json["summary"]["mean_hz"].as_f64().unwrap_or(0.0) > 0.0);
    let warnings = json["warnings"].to_string();
    assert!(warnings.contains("--depth 0: not a depth"), "{warnings}");
    // 400 ticks at 4 ms last longer than a second: the statistics stream was published
    // into the run and reached a module there.
    assert!(
        seen.load(Ordering::SeqCst) > 0,
        "no `ticks_stats` message arrived"
    );
}

#[test]
fn says_plainly_that_no_message_arrived() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("report.txt");
    let cli = cli(&Arc::new(AtomicU64::new(0)));
    let code = run(
        &cli,
        &[
            "ticks",
            "--blueprint",
            "silent",
            "--wait",
            "0.5",
            "--report",
            &path.display().to_string(),
        ],
    );
    assert_eq!(code, ExitCode::from(2));
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(text.contains("no message received"), "{text}");
    assert!(
        text.contains("stopped       no message for 0.5 s"),
        "{text}"
    );
    assert!(!text.contains("frequency"), "{text}");
}

/// The stock binary with `args`, its output once it ended (killed after 60 s).
fn tool(args: &[&str]) -> std::process::Output {
    use std::process::{Command, Stdio};
    use std::time::Instant;

    let mut child = Command::new(env!("CARGO_BIN_EXE_streamwire"))
        .args(args)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap_or_else(|e| panic!("{e}"))
}

/// `topic echo` of a closed run: with the tool's secret file a message arrives; without a
/// credential its session reaches nobody, and nothing arrives.
fn check_echoes(
    with_file: &std::process::Output,
    without: &std::process::Output,
    secret_file: &str,
) {
    let with_out = String::from_utf8_lossy(&with_file.stdout);
    assert!(
        with_file.status.success() && with_out.contains("#1 seq "),
        "topic echo --secret-file {secret_file}: {with_out}\n{}",
        String::from_utf8_lossy(&with_file.stderr)
    );
    let (without_out, without_err) = (
        String::from_utf8_lossy(&without.stdout),
        String::from_utf8_lossy(&without.stderr),
    );
    assert!(
        without_out.is_empty()
            && without_err.contains("INSECURE: joining without a credential")
            && without_err.contains("no message for 5 s"),
        "{without_out}\n{without_err}"
    );
}

/// The stock binary's `demo-split` as a distributed run (closed: TLS, a certificate per
/// member), joined over zenoh by `topic list` and `topic bench` at the coordinator's
/// endpoint with the run's tool credential (found by the run id), and by `topic echo`
/// with `--secret-file`; without a credential (`--insecure`) `topic echo` receives
/// nothing.
#[test]
fn joins_a_distributed_run_over_zenoh() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::Instant;

    const BIN: &str = env!("CARGO_BIN_EXE_streamwire");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("{e}"));
    let endpoint = format!("tcp/127.0.0.1:{port}");
    let run_id = format!("topic{}", std::process::id());
    let mut coordinator = Command::new(BIN)
        .args([
            "run",
            "demo-split",
            // Only a bound: the test stops the run once its tools are done. Under a loaded
            // test run the tools took long enough for a 30 s run to end (and remove the
            // run's secret files) before `topic list` read them.
            "--duration",
            "120",
            "--listen",
            &endpoint,
            "--run-id",
            &run_id,
            "-o",
            "web.enabled=false",
        ])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    // Wait until the workers are ready and the sources run.
    let stderr = coordinator.stderr.take();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (file_tx, file_rx) = std::sync::mpsc::channel();
    // Everything the coordinator said, for the failure messages below.
    let (said_tx, said_rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in stderr
            .map(BufReader::new)
            .into_iter()
            .flat_map(|r| r.lines())
        {
            let Ok(line) = line else { break };
            let _ = said_tx.send(line.clone());
            if line.contains("the sources start") {
                let _ = ready_tx.send(());
            }
            // "... (their secret file, found by the run id, is PATH)"
            if let Some(path) = line
                .split_once("found by the run id, is ")
                .and_then(|(_, rest)| rest.strip_suffix(')'))
            {
                let _ = file_tx.send(path.to_owned());
            }
        }
    });
    let ready = ready_rx.recv_timeout(Duration::from_secs(60)).is_ok();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let report = dir.path().join("bench.json");
    let secret_file = file_rx
        .recv_timeout(Duration::from_secs(1))
        .unwrap_or_default();
    let echo = |membership: &[&str]| {
        let mut args = vec![
            "topic",
            "echo",
            "color_image/compressed",
            "--connect",
            &endpoint,
            "--count",
            "1",
            "--wait",
            "5",
        ];
        args.extend_from_slice(membership);
        tool(&args)
    };
    let (with_file, without) = if ready {
        (
            Some(echo(&["--secret-file", &secret_file])),
            Some(echo(&["--run-id", &run_id, "--insecure"])),
        )
    } else {
        (None, None)
    };
    let (list, bench) = if ready {
        let list = tool(&["topic", "list", "--connect", &endpoint, "--run-id", &run_id]);
        let bench = tool(&[
            "topic",
            "bench",
            "color_image/compressed",
            "--connect",
            &endpoint,
            "--run-id",
            &run_id,
            "--count",
            "5",
            "--wait",
            "20",
            "--report",
            &report.display().to_string(),
        ]);
        (Some(list), Some(bench))
    } else {
        (None, None)
    };
    // The tools are done: stop the run as Ctrl+C would (its --duration is only the bound
    // if this fails), then kill the coordinator if it has not ended.
    let _ = Command::new("kill")
        .args(["-INT", &coordinator.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(60);
    while coordinator.try_wait().ok().flatten().is_none() {
        if Instant::now() > deadline {
            let _ = coordinator.kill();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = coordinator.wait();
    assert!(ready, "the distributed run never started its sources");
    let (Some(list), Some(bench), Some(with_file), Some(without)) =
        (list, bench, with_file, without)
    else {
        unreachable!("ready")
    };
    check_echoes(&with_file, &without, &secret_file);
    let said = said_rx.try_iter().collect::<Vec<_>>().join("\n");
    check_list(&list, &run_id, &said);
    let bench_out = String::from_utf8_lossy(&bench.stdout);
    assert!(
        bench.status.success(),
        "{bench_out}\n{}",
        String::from_utf8_lossy(&bench.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap_or_default())
            .unwrap_or_else(|e| panic!("bench.json: {e}\n{bench_out}"));
    assert_eq!(json["summary"]["count"], 5, "{bench_out}");
    assert_eq!(json["message_type"], "streamwire/CompressedImage");
    check_jpeg_quality(&json, &bench_out);
    assert!(
        json["size_meaning"]
            .as_str()
            .is_some_and(|s| s.starts_with("wire bytes")),
        "{json}"
    );
    assert!(
        json["subscription"]
            .as_str()
            .is_some_and(|s| s.contains(&format!("streamwire/{run_id}/color_image/compressed"))),
        "{json}"
    );
}

/// Each JPEG's quality, read back from its tables by `topic bench`: the demo's default,
/// 75, unchanged.
fn check_jpeg_quality(json: &serde_json::Value, bench_out: &str) {
    let jpeg = &json["summary"]["jpeg"];
    assert_eq!(jpeg["last"]["quality"], 75, "{json}");
    assert_eq!(
        (jpeg["quality"]["min"].as_f64(), jpeg["changes"].as_u64()),
        (Some(75.0), Some(0))
    );
    assert!(bench_out.contains("JPEG quality  now 75"), "{bench_out}");
}

/// `topic list --connect` of demo-split: every stream published, received or not.
fn check_list(list: &std::process::Output, run_id: &str, coordinator: &str) {
    let list_out = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.status.success(),
        "{list_out}\n{}\nthe coordinator said:\n{coordinator}",
        String::from_utf8_lossy(&list.stderr)
    );
    // Every stream published, received or not: the detector's detections have no
    // consumer in demo-split, yet a tool reaches them, and the list says who sends them.
    let row = |stream: &str| {
        list_out
            .lines()
            .find(|line| line.split_whitespace().next() == Some(stream))
            .unwrap_or_else(|| panic!("no row for `{stream}`:\n{list_out}"))
            .to_owned()
    };
    assert!(
        row("color_image/compressed").contains("published by"),
        "{list_out}"
    );
    assert!(
        row("detections").ends_with("received by nobody"),
        "{list_out}"
    );
    assert!(!list_out.contains("stay inside one process"), "{list_out}");
    insta::assert_snapshot!(
        "topic_list_connect_demo_split",
        list_out.replace(run_id, "RUN")
    );
}
