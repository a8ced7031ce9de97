//! The stock `streamwire` binary: what it registers, and the demo run through it.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use streamwire::Module;

const BIN: &str = env!("CARGO_BIN_EXE_streamwire");

fn streamwire(args: &[&str]) -> Output {
    let mut command = Command::new(BIN);
    command.args(args).env_remove("RUST_LOG");
    streamwire_testdata::process::output_bounded(command, &[], Duration::from_secs(60))
}

/// Reads the JSON report a run wrote to `path`, checks its accounting equation (RFC.md
/// section 9) and that the CLI printed that it balances, and prints how many reports
/// this test binary has checked.
fn balanced_report(path: &std::path::Path, stdout: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let report: streamwire::runtime::RunReport =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    if let Err(error) = streamwire::runtime::check_balance(&report) {
        panic!("{error}\n{report}");
    }
    assert!(stdout.contains("accounting: balanced"), "{stdout}");
    eprintln!(
        "balance: {} reports checked in this test binary so far",
        streamwire::runtime::balance_checks()
    );
    serde_json::from_str(&text).unwrap_or_default()
}

/// Every stream of the demo's plan, encoded forms included, with who produces and who
/// consumes it (`nobody` for a stream only a tap would read).
#[test]
fn topic_list_of_a_blueprint_names_every_stream_its_producers_and_consumers() {
    let out = streamwire(&["topic", "list", "--blueprint", "demo"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    insta::assert_snapshot!("topic_list_demo", stdout);
}

/// The commands `streamwire --help` lists, one name a line. `tests/docs.rs` holds the
/// guide's command table (docs/guide/src/cli.md) to this snapshot, so a command added to
/// the binary changes the snapshot here and then needs its row in the guide.
#[test]
fn the_stock_binary_has_these_commands() {
    let out = streamwire(&["--help"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let section = stdout
        .split("Commands:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_else(|| panic!("no `Commands:` section in `--help`:\n{stdout}"));
    // A command's line is indented by two spaces; a wrapped summary's lines by more.
    let names: Vec<&str> = section
        .lines()
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    insta::assert_snapshot!("commands", names.join("\n"));
}

/// The README's quick start, as written: each `streamwire` command of its first shell
/// block runs here on the binary under test (the block's other command, `cargo test`,
/// is this very suite). The demo's report balances.
#[test]
fn the_readme_quick_start_runs_as_written() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .unwrap_or_else(|e| panic!("README.md: {e}"));
    let quick_start = readme
        .split("## Quick start")
        .nth(1)
        .and_then(|rest| rest.split("```sh\n").nth(1))
        .and_then(|rest| rest.split("```").next())
        .unwrap_or_else(|| panic!("README.md has no quick start shell block"));
    let commands: Vec<Vec<&str>> = quick_start
        .lines()
        .filter_map(|line| line.split('#').next())
        .filter_map(|line| {
            line.trim()
                .strip_prefix("cargo run --release --bin streamwire --")
        })
        .map(|args| args.split_whitespace().collect())
        .collect();
    assert!(
        !commands.is_empty(),
        "no streamwire command in:\n{quick_start}"
    );
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for (n, args) in commands.iter().enumerate() {
        let report = dir.path().join(format!("report{n}.json"));
        let report_arg = report.display().to_string();
        let mut args = args.clone();
        // The viewer on a free port (the README's 9090 may be taken here), and the report.
        args.extend(["-o", "web.port=0", "--report", &report_arg]);
        let out = streamwire(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "streamwire {args:?}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        balanced_report(&report, &stdout);
    }
}

#[test]
fn list_shows_every_built_in_tag() {
    let out = streamwire(&["list"]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Every module type the stock binary links, though nothing in its `main` names them.
    use streamwire_modules::{
        detector::Detector, mapper::Mapper, replay::ReplaySource, sinks, world,
    };
    for tag in [
        ReplaySource::TYPE_NAME,
        world::SimCamera::TYPE_NAME,
        world::SimDepth::TYPE_NAME,
        world::SimLidar::TYPE_NAME,
        world::SimOdometry::TYPE_NAME,
        Detector::TYPE_NAME,
        Mapper::TYPE_NAME,
        sinks::BusySink::TYPE_NAME,
        sinks::ByteConsumer::TYPE_NAME,
        sinks::RecordingSink::TYPE_NAME,
        streamwire_web::WebRelay::TYPE_NAME,
        streamwire_mcap::McapRecorder::TYPE_NAME,
        streamwire_mcap::McapSource::TYPE_NAME,
    ] {
        assert!(
            stdout.lines().any(|l| l.trim_start().starts_with(tag)),
            "{tag} missing:\n{stdout}"
        );
    }
    assert!(stdout.contains("  demo  "), "{stdout}");
}

#[test]
fn run_demo_for_a_second() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let report_path = dir.path().join("report.json");
    let report_arg = report_path.display().to_string();
    let out = streamwire(&[
        "run",
        "demo",
        "--duration",
        "1",
        "-o",
        "jpeg_quality=60",
        "-o",
        "web.port=0",
        "--report",
        &report_arg,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("run stopped after"), "{stdout}");
    assert!(stdout.contains("detector.frames"), "{stdout}");
    balanced_report(&report_path, &stdout);
    // The viewer's URL carries this run's token (48 hex digits).
    let stderr = String::from_utf8_lossy(&out.stderr);
    let token = stderr
        .split("viewer: open http://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split("/?token=").nth(1))
        .map(|rest| rest.chars().take_while(char::is_ascii_hexdigit).count());
    assert_eq!(token, Some(48), "{stderr}");
    // A distributed run (the demo's four workers, closed) ends without zenoh's warnings:
    // nothing a user must act on is left for them to read past.
    let zenoh_warnings: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("WARN zenoh") || line.contains("ERROR zenoh"))
        .collect();
    assert!(zenoh_warnings.is_empty(), "{stderr}");
}

#[test]
fn the_demo_relay_takes_its_token_and_origins_from_web_keys() {
    let out = streamwire(&[
        "config",
        "demo",
        "-o",
        "web.token=none",
        "-o",
        "web.allowed_origins=https://app.foxglove.dev",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("web.token"), "{stdout}");
    assert!(stdout.contains("https://app.foxglove.dev"), "{stdout}");
    // A token that cannot go into a URL is refused, saying what a token is.
    let out = streamwire(&["config", "demo", "-o", "web.token=a&b"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("letters, digits"), "{stderr}");
}

/// `-o foxglove.enabled=true`: the run prints the Foxglove URL with its token, and the
/// relay (in its worker process) serves the protocol there; off by default.
#[test]
fn the_demo_serves_foxglove_when_asked() {
    use std::io::{BufRead, BufReader, Read, Write};

    let out = streamwire(&["config", "demo"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find(|l| l.contains("foxglove.enabled"));
    assert!(line.is_some_and(|l| l.contains("false")), "{stdout}");

    let mut child = Command::new(BIN)
        .args([
            "run",
            "demo",
            "--duration",
            "5",
            "-o",
            "web.port=0",
            "-o",
            "foxglove.enabled=true",
        ])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("streamwire starts");
    let stderr = child.stderr.take().expect("stderr");
    let (lines, said) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    let url = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match said.recv_timeout(left) {
            Ok(line) => {
                if let Some(rest) = line.split("connection to ws://").nth(1) {
                    break rest.split(' ').next().unwrap_or("").to_owned();
                }
                seen.push(line);
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no Foxglove URL printed:\n{}", seen.join("\n"));
            }
        }
    };
    // 127.0.0.1:PORT/foxglove?token=<48 hex digits>
    let (host, path) = url.split_once('/').expect("a path");
    // Loopback only: nothing asked for another interface.
    assert!(host.starts_with("127.0.0.1:"), "{url}");
    let token = path.strip_prefix("foxglove?token=").unwrap_or("");
    assert_eq!(token.len(), 48, "{url}");
    let get = |path: &str| {
        let mut stream = std::net::TcpStream::connect(host).expect("the relay listens");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout set");
        write!(stream, "GET /{path} HTTP/1.0\r\nHost: {host}\r\n\r\n").expect("sent");
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response.split(' ').nth(1).unwrap_or("").to_owned()
    };
    // Served, asking for a websocket; without the token, refused.
    assert_eq!(get(path), "426");
    assert_eq!(get("foxglove"), "401");
    // A Foxglove client with the token: `foxglove.sdk.v1`, `serverInfo`, the demo's topics
    // as channels with their ROS 2 schemas, and the run's configuration as parameters,
    // the token left out.
    let stream = std::net::TcpStream::connect(host).expect("the relay listens");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout set");
    let mut writer = stream.try_clone().expect("a second handle");
    write!(
        writer,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Protocol: foxglove.sdk.v1\r\n\r\n"
    )
    .expect("sent");
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("the relay answers");
        if line.trim().is_empty() {
            break;
        }
        head.push_str(&line);
    }
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("sec-websocket-protocol: foxglove.sdk.v1"),
        "{head}"
    );
    let mut next_text = || -> serde_json::Value {
        let mut start = [0u8; 2];
        reader.read_exact(&mut start).expect("a frame");
        assert_eq!(start[0], 0x81, "a whole text frame");
        let len = match start[1] & 0x7f {
            126 => {
                let mut len = [0u8; 2];
                reader.read_exact(&mut len).expect("its length");
                usize::from(u16::from_be_bytes(len))
            }
            127 => {
                let mut len = [0u8; 8];
                reader.read_exact(&mut len).expect("its length");
                usize::try_from(u64::from_be_bytes(len)).expect("a length")
            }
            n => usize::from(n),
        };
        let mut payload = vec![0u8; len];
        reader.read_exact(&mut payload).expect("its payload");
        serde_json::from_slice(&payload).expect("JSON")
    };
    let info = next_text();
    assert_eq!(info["op"], "serverInfo", "{info}");
    let advertise = next_text();
    assert_eq!(advertise["op"], "advertise", "{advertise}");
    let channels: Vec<String> = advertise["channels"]
        .as_array()
        .expect("channels")
        .iter()
        .map(|c| format!("{} {} {}", c["topic"], c["schemaName"], c["schemaEncoding"]))
        .collect();
    for expected in [
        "\"/color_image/compressed\" \"sensor_msgs/msg/CompressedImage\" \"ros2msg\"",
        "\"/tf\" \"tf2_msgs/msg/TFMessage\" \"ros2msg\"",
    ] {
        assert!(
            channels.iter().any(|c| c == expected),
            "{expected} in {channels:?}"
        );
    }
    // A client's frame is masked (RFC 6455 5.3).
    let request = br#"{"op":"getParameters","parameterNames":["camera.fps","web.token"],"id":"p"}"#;
    let mask = [0x12u8, 0x34, 0x56, 0x78];
    let mut frame = vec![0x81, 0x80 | u8::try_from(request.len()).expect("short")];
    frame.extend_from_slice(&mask);
    frame.extend(request.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    writer.write_all(&frame).expect("sent");
    let values = next_text();
    assert_eq!(
        values,
        serde_json::json!({"op": "parameterValues", "id": "p", "parameters": [{"name": "camera.fps", "value": 20.0}]})
    );
    drop(writer);
    drop(reader);
    let status = child.wait().expect("the run ends");
    assert!(status.success(), "{}", seen.join("\n"));
}

#[test]
fn demo_graph_shows_the_global_quality() {
    let out = streamwire(&["graph", "demo", "-o", "jpeg_quality=60"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("jpeg_quality=60 (blueprint-wide)"),
        "{stdout}"
    );
    // Per stream beats global, and says so.
    let out = streamwire(&[
        "graph",
        "demo",
        "-o",
        "jpeg_quality=60",
        "-o",
        "streams.color_image.jpeg_quality=40",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("jpeg_quality=40 (set)"), "{stdout}");
    assert!(!stdout.contains("jpeg_quality=60"), "{stdout}");
}

#[test]
fn a_bit_rate_budget_through_o_and_through_a_blueprint_file() {
    let out = streamwire(&[
        "graph",
        "demo",
        "-o",
        "max_bitrate=6.4M",
        "-o",
        "min_quality=30",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("max_bitrate=6.4Mbit/s, min_quality=30 (blueprint-wide)"),
        "{stdout}"
    );
    let out = streamwire(&["graph", "demo", "-o", "max_bitrate=lots"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("invalid max_bitrate"), "{stderr}");
    // In a file: blueprint-wide, and per stream.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("budget.yaml");
    std::fs::write(
        &file,
        "max_bitrate: 6400000\nmin_quality: 25\ninstances:\n  camera: { type: SimCamera }\n  \
         detector: { type: Detector }\nplacement:\n  detector: laptop/perception\n",
    )
    .unwrap();
    let out = streamwire(&["graph", file.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("max_bitrate=6.4Mbit/s, min_quality=25 (blueprint-wide)"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_run_under_a_bit_rate_budget_reports_the_quality_it_chose() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let args = [
        "run",
        "demo",
        "--in-process",
        "--duration",
        "5",
        "-o",
        "web.port=0",
        "-o",
        "max_bitrate=1M",
        "--report",
        report.to_str().unwrap(),
    ];
    let out = streamwire(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("bit-rate budgets"), "{stdout}");
    let json = balanced_report(&report, &stdout);
    let codecs = json["stats"]["codecs"].as_array().unwrap();
    let encoders: Vec<&serde_json::Value> = codecs
        .iter()
        .filter(|c| c["adaptation"].is_object())
        .collect();
    assert_eq!(encoders.len(), 1, "one encoder adapts: {codecs:?}");
    let (encoder, adaptation) = (encoders[0], &encoders[0]["adaptation"]);
    assert_eq!(
        (encoder["role"].as_str(), encoder["stream"].as_str()),
        (Some("Encode"), Some("color_image"))
    );
    assert_eq!(adaptation["budget_bitrate"], 1_000_000);
    // The demo's 1280x720 frames at q75 are over 1 Mbit/s at its rate: the encoder came
    // down from q75, counting each change, and held the budget after the first window.
    let history = adaptation["history"].as_array().unwrap();
    assert_eq!(history[0]["quality"], 75);
    let changes = adaptation["changes"].as_u64().unwrap();
    assert!(changes >= 1);
    assert_eq!(history.len() as u64, changes + 1);
    let quality = adaptation["quality"].as_u64().unwrap();
    assert!((20..=75).contains(&quality), "{adaptation}");
    let worst = adaptation["worst_window_bitrate"].as_u64().unwrap();
    assert!(worst <= 1_000_000, "{adaptation}");
}

#[test]
fn demo_split_places_five_processes_with_one_encode() {
    let out = streamwire(&["graph", "demo-split", "--format", "json"]);
    assert!(out.status.success());
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let placements: std::collections::BTreeSet<String> = summary["instances"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["placement"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        placements.into_iter().collect::<Vec<_>>(),
        [
            "base_station/base",
            "laptop/ui",
            "robot/camera",
            "robot/mapping",
            "robot/perception",
            "robot/sensors"
        ]
    );
    let codecs: Vec<(String, String)> = summary["codec_nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["stream"] == "color_image")
        .map(|c| {
            (
                c["kind"].as_str().unwrap_or_default().to_owned(),
                c["placement"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        codecs,
        [
            ("encode".to_owned(), "robot/camera".to_owned()),
            ("decode".to_owned(), "robot/perception".to_owned()),
            ("decode".to_owned(), "base_station/base".to_owned()),
        ],
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// `run demo-split`: six workers (one per process), ready before the sources start,
/// reports merged, every child gone at the end.
#[test]
fn demo_split_runs_as_workers() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let report_path = dir.path().join("report.json");
    let report_arg = report_path.display().to_string();
    let out = streamwire(&[
        "run",
        "demo-split",
        "--duration",
        "3",
        "-o",
        "web.port=0",
        "--report",
        &report_arg,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("every worker is ready (6): the sources start"),
        "{stderr}"
    );
    assert!(stdout.starts_with("run stopped after"), "{stdout}");
    // Closed by default: said when it starts and in the report; no worker is insecure.
    let closed = "closed: a certificate per process, mutual TLS, access control from the plan";
    assert!(
        stderr.contains(&format!("coordinator: access {closed}")),
        "{stderr}"
    );
    assert!(stdout.contains(&format!("access: {closed}")), "{stdout}");
    assert!(!stderr.contains("INSECURE"), "{stderr}");
    let report = balanced_report(&report_path, &stdout);
    assert_eq!(report["access"], closed, "the JSON report says it too");
    let codecs: Vec<(String, String)> = report["stats"]["codecs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["stream"] == "color_image" && c["done"].as_u64().unwrap_or(0) > 0)
        .map(|c| {
            (
                c["role"].as_str().unwrap_or_default().to_owned(),
                c["placement"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert!(
        codecs.contains(&("Encode".to_owned(), "robot/camera".to_owned()))
            && codecs.contains(&("Decode".to_owned(), "robot/perception".to_owned()))
            && codecs.contains(&("Decode".to_owned(), "base_station/base".to_owned())),
        "{codecs:?}\n{stdout}"
    );
    // Every worker's pid, as the coordinator announced them, is gone.
    for line in stderr.lines() {
        if let Some(pid) = line
            .split("started (pid ")
            .nth(1)
            .and_then(|rest| rest.strip_suffix(')'))
        {
            assert!(
                !std::path::Path::new(&format!("/proc/{pid}")).exists(),
                "worker pid {pid} outlived the run"
            );
        }
    }
}

/// `run demo-split --insecure`: the coordinator says the run is open when it starts, each
/// of its six workers says so, and so does the report.
#[test]
fn an_insecure_run_says_so_on_every_screen_and_in_the_report() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let report_path = dir.path().join("report.json");
    let report_arg = report_path.display().to_string();
    let out = streamwire(&[
        "run",
        "demo-split",
        "--insecure",
        "--duration",
        "1",
        "-o",
        "web.port=0",
        "--report",
        &report_arg,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let open = "INSECURE: open to every process that reaches an endpoint (--insecure)";
    assert!(
        stderr.contains(&format!("coordinator: access {open}")),
        "{stderr}"
    );
    assert_eq!(
        stderr
            .matches("] INSECURE: this worker joins without a credential (--insecure)")
            .count(),
        6,
        "{stderr}"
    );
    assert!(stdout.contains(&format!("access: {open}")), "{stdout}");
    assert_eq!(
        read_report(&report_path)["access"],
        open,
        "the JSON report says it too"
    );
}

/// `run demo --replay DIR --fps N`: the folder's frames, each published once (no loop),
/// through the demo's workers, ending with the report.
#[test]
fn run_demo_replays_a_folder() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let frames = dir.path().join("frames");
    std::fs::create_dir(&frames).unwrap_or_else(|e| panic!("{e}"));
    let (width, height) = (160u32, 120u32);
    for n in 0..10u8 {
        let pixels: Vec<u8> = (0..width * height)
            .flat_map(|i| [(i % width) as u8, n.wrapping_mul(20), 128])
            .collect();
        let image = streamwire::engines::jpeg::PixelsRef::new(
            width,
            height,
            width as usize * 3,
            streamwire::engines::jpeg::PixelFormat::Rgb8,
            &pixels,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let jpeg = streamwire::engines::jpeg::encode(&image, &Default::default())
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(frames.join(format!("{n:04}.jpg")), &jpeg.data)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let report_path = dir.path().join("report.json");
    let (frames_arg, report_arg) = (
        frames.display().to_string(),
        report_path.display().to_string(),
    );
    let out = streamwire(&[
        "run",
        "demo",
        "--replay",
        &frames_arg,
        "--fps",
        "20",
        "-o",
        "replay.looping=false",
        "-o",
        "web.port=0",
        "--duration",
        "3",
        "--report",
        &report_arg,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("run stopped after"), "{stdout}");
    let report = balanced_report(&report_path, &stdout);
    let published = report["stats"]["outputs"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|o| o["port"] == "camera.color_image")
        .and_then(|o| o["published"].as_u64());
    // Every frame of the folder was published, or skipped as late (the replay keeps to
    // the folder's clock: a frame it could not send in time on a loaded machine is
    // skipped and counted, not sent late).
    let skipped_late = report["stats"]["instances"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|i| i["name"] == "camera")
        .and_then(|i| i["counters"].as_array())
        .into_iter()
        .flatten()
        .find(|c| c[0] == "skipped_late")
        .and_then(|c| c[1].as_u64())
        .unwrap_or(0);
    assert_eq!(published.map(|p| p + skipped_late), Some(10), "{stdout}");
    assert!(published >= Some(1), "{stdout}");
    let detector = report["stats"]["inputs"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|i| i["port"] == "detector.frames")
        .and_then(|i| i["delivered"].as_u64())
        .unwrap_or(0);
    assert!((1..=10).contains(&detector), "{detector}: {stdout}");
}

/// A counter of `instance` in a report written by `--report`.
/// The recorder's accounting of `stream` (recorded + dropped = published, up to what
/// never left its sender), and what it recorded (at least one message).
///
/// What the recorder never saw at all is still on a counter: a message of a stream
/// produced in another process that was in its sender's queue when the run stopped (or
/// dropped there, or sent while no one listened) never reached the recorder's process,
/// and is on the sender's wire row instead.
fn recorder_accounts_for(report: &serde_json::Value, stream: &str) -> u64 {
    let recorded = report_counter(report, "mcap_recorder", &format!("recorded:{stream}"))
        .unwrap_or_else(|| panic!("no recorded:{stream} in the report"));
    let dropped = report_counter(report, "mcap_recorder", &format!("dropped:{stream}"))
        .unwrap_or_else(|| panic!("no dropped:{stream} in the report"));
    let published = report_published(report, stream);
    let unseen = published.checked_sub(recorded + dropped);
    let tail = report_sender_tail(report, stream);
    assert!(
        unseen.is_some_and(|unseen| unseen <= tail),
        "{stream}: published {published}, recorded {recorded}, dropped {dropped}, \
         left at the sender {tail}"
    );
    assert!(recorded > 0, "{stream}: nothing recorded");
    recorded
}

fn report_counter(report: &serde_json::Value, instance: &str, name: &str) -> Option<u64> {
    report["stats"]["instances"]
        .as_array()?
        .iter()
        .find(|i| i["name"] == instance)?["counters"]
        .as_array()?
        .iter()
        .find(|c| c[0] == name)?[1]
        .as_u64()
}

/// Messages published on `stream`, from a report written by `--report`.
fn report_published(report: &serde_json::Value, stream: &str) -> u64 {
    report["stats"]["outputs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| o["stream"] == stream)
        .filter_map(|o| o["published"].as_u64())
        .sum()
}

/// Messages of `stream` its sender in another process never sent: in its queue at the
/// stop, dropped by its queue, or published while nobody listened (wire rows, sending).
fn report_sender_tail(report: &serde_json::Value, stream: &str) -> u64 {
    report["stats"]["wire"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|w| w["key"] == stream && w["direction"] == "Out")
        .map(|w| {
            ["unprocessed_at_stop", "sender_dropped", "unmatched"]
                .iter()
                .filter_map(|field| w[*field].as_u64())
                .sum::<u64>()
        })
        .sum()
}

fn read_report(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"))
}

/// `run --record` of a closed run of several processes (the demo over its workers: a
/// certificate each, mutual TLS, access control from the plan). The recorder, a process
/// of its own, declares that it taps every stream, so the plan's access control lets its
/// process subscribe to the other processes' streams: the file holds each of them, as
/// many messages as the report says were recorded, and recorded plus dropped is what was
/// published (less what its sender never sent, on the sender's wire row).
#[test]
fn record_a_closed_run_of_several_processes() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = dir.path().join("closed.mcap");
    let report_path = dir.path().join("closed.json");
    let (file_arg, report_arg) = (
        file.display().to_string(),
        report_path.display().to_string(),
    );
    let out = streamwire(&[
        "run",
        "demo",
        "--duration",
        "3",
        "-o",
        "web.enabled=false",
        "-o",
        "camera.width=320",
        "-o",
        "camera.height=240",
        "--record",
        &file_arg,
        "--report",
        &report_arg,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let closed = "closed: a certificate per process, mutual TLS, access control from the plan";
    assert!(
        stderr.contains(&format!("coordinator: access {closed}")),
        "{stderr}"
    );
    assert!(!stderr.contains("INSECURE"), "{stderr}");
    let report = read_report(&report_path);
    assert_eq!(report["access"], closed, "{stdout}");
    let instances = report["stats"]["instances"].as_array().cloned();
    let process_of = |instance: &str| {
        instances
            .iter()
            .flatten()
            .find(|i| i["name"] == instance)
            .map(|i| {
                format!(
                    "{}/{}",
                    i["host"].as_str().unwrap_or("?"),
                    i["process"].as_str().unwrap_or("?")
                )
            })
            .unwrap_or_else(|| panic!("no instance {instance} in the report"))
    };
    let recorder = process_of("mcap_recorder");
    let inventory = streamwire_mcap::scan(&file).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(inventory.cut_short, None);
    let mut recorded_total = 0;
    for stream in [
        "color_image",
        "depth",
        "cloud",
        "odometry",
        "detections",
        "map",
    ] {
        // Produced in another process than the recorder's.
        let producer = report["stats"]["outputs"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|o| o["stream"] == stream)
            .and_then(|o| o["port"].as_str())
            .and_then(|port| port.split('.').next())
            .unwrap_or_else(|| panic!("no producer of {stream} in the report"));
        assert_ne!(process_of(producer), recorder, "{stream}");
        let recorded = recorder_accounts_for(&report, stream);
        // The file holds what the report says was recorded (a stream that travels
        // compressed as its bytes: `/color_image/compressed`).
        let in_file: u64 = inventory
            .topics
            .iter()
            .filter(|t| {
                t.topic == format!("/{stream}") || t.topic == format!("/{stream}/compressed")
            })
            .map(|t| t.count)
            .sum();
        assert_eq!(in_file, recorded, "{stream}: {inventory:?}");
        recorded_total += recorded;
    }
    assert_eq!(inventory.messages, recorded_total, "{inventory:?}");
}

/// `run --record` (the demo over its workers, an insecure run), `info`, then
/// `run --replay FILE.mcap`: the recording holds what the report says was recorded,
/// recorded plus dropped is what was published, and the replay plays every message of the
/// file.
#[test]
fn record_inspect_and_replay_an_mcap_file() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = dir.path().join("demo.mcap");
    let report_path = dir.path().join("record.json");
    let (file_arg, report_arg) = (
        file.display().to_string(),
        report_path.display().to_string(),
    );
    let out = streamwire(&[
        "run",
        "demo",
        "--duration",
        "3",
        "-o",
        "web.enabled=false",
        "-o",
        "camera.width=320",
        "-o",
        "camera.height=240",
        "--insecure",
        "--record",
        &file_arg,
        "--report",
        &report_arg,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{}\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    let report = read_report(&report_path);
    let streams = [
        "color_image",
        "depth",
        "cloud",
        "odometry",
        "detections",
        "map",
    ];
    let mut recorded_total = 0;
    for stream in streams {
        let recorded = recorder_accounts_for(&report, stream);
        recorded_total += recorded;
    }

    let out = streamwire(&["info", &file_arg]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("{recorded_total} messages")),
        "{stdout}"
    );
    for row in [
        "/color_image/compressed  sensor_msgs/msg/CompressedImage",
        "/depth                   sensor_msgs/msg/Image",
        "/cloud                   sensor_msgs/msg/PointCloud2",
        "/odometry                nav_msgs/msg/Odometry",
    ] {
        assert!(stdout.contains(row), "{row} missing:\n{stdout}");
    }

    let replay_path = dir.path().join("replay.json");
    let replay_arg = replay_path.display().to_string();
    let out = streamwire(&[
        "run",
        "demo",
        "--replay",
        &file_arg,
        "--rate",
        "2",
        "-o",
        "replay.looping=false",
        "-o",
        "web.enabled=false",
        "--duration",
        "8",
        "--report",
        &replay_arg,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replay = read_report(&replay_path);
    // The file's colour, depth, cloud and odometry play; its detections and map (the
    // demo makes its own) are skipped.
    let played = report_counter(&replay, "camera", "played").unwrap_or(0);
    let skipped = report_counter(&replay, "camera", "skipped").unwrap_or(0);
    assert_eq!(played + skipped, recorded_total, "{stdout}");
    for stream in ["color_image", "depth", "cloud", "odometry"] {
        let topic_count = report_counter(&report, "mcap_recorder", &format!("recorded:{stream}"));
        assert_eq!(
            Some(report_published(&replay, stream)),
            topic_count,
            "{stream}"
        );
    }
    assert_eq!(report_counter(&replay, "camera", "cut_short"), Some(0));
}

/// The row of `port` in the report's `section` (`outputs`, `buffers`, ...), by `key`.
fn report_row<'a>(
    report: &'a serde_json::Value,
    section: &str,
    key: &str,
    port: &str,
) -> Option<&'a serde_json::Value> {
    report["stats"][section]
        .as_array()
        .into_iter()
        .flatten()
        .find(|row| row[key] == port)
}

/// Raw frames cross processes by reference on the path users run (issue 51): with
/// compression off, the demo's camera (in robot/sensors) writes every 720p frame into a
/// shared-memory loan that its worker's transport sends as it is, so its buffers row says
/// `shared` = published and `pooled` 0. A worker's transport that lost the loans (a
/// wrapper forwarding everything but `loans()`) makes every frame a pooled heap buffer
/// that zenoh then copies: the receivers alone cannot tell (zenoh's own copy arrives
/// through shared memory too), so this is checked on the sending side.
#[test]
fn raw_frames_leave_the_camera_by_reference() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let report_path = dir.path().join("report.json");
    let report_arg = report_path.display().to_string();
    let out = streamwire(&[
        "run",
        "demo",
        "--duration",
        "3",
        "-o",
        "compression=off",
        "-o",
        "web.port=0",
        "--report",
        &report_arg,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let report = balanced_report(&report_path, &stdout);
    // A host whose /dev/shm cannot hold the run's pool (a container's 64 MiB) runs the
    // workers without shared memory, and each says so: nothing to lend then.
    if stderr.contains("shared memory is off for this session") {
        streamwire_testdata::skip(format!("a worker runs without shared memory: {stderr}"));
        return;
    }
    // What the camera's worker put was shared memory already (the transport's count, on
    // the sending side): a heap frame that zenoh copied into its pool is not counted.
    let sent: Vec<&serde_json::Value> = report["stats"]["wire"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|w| w["direction"] == "Out")
        .filter(|w| {
            w["key"]
                .as_str()
                .is_some_and(|k| k.ends_with("color_image"))
        })
        .collect();
    assert!(
        !sent.is_empty(),
        "no wire row sends the camera's frames: {stdout}"
    );
    for row in sent {
        let frames = row["frames"].as_u64().unwrap_or(0);
        let by_reference = row["shared_memory"].as_u64().unwrap_or(0);
        // Every frame but the end-of-stream one (no pixels) when the camera finished.
        assert!(
            by_reference > 0 && frames.saturating_sub(by_reference) <= 1,
            "{by_reference} of {frames} frames put by reference: {row}\n{stdout}"
        );
    }
    let published = report_row(&report, "outputs", "port", "camera.color_image")
        .and_then(|o| o["published"].as_u64())
        .unwrap_or(0);
    let buffers = report_row(&report, "buffers", "name", "camera.color_image")
        .unwrap_or_else(|| panic!("no buffers row for the camera: {stdout}"));
    assert!(published > 0, "{stdout}");
    // Every frame published was a shared-memory loan; a loan counts when it is taken, so
    // the one the camera held when the run stopped may be counted and never published.
    let shared = buffers["shared"].as_u64().unwrap_or(0);
    assert!(
        (published..=published + 1).contains(&shared),
        "shared {shared}, published {published}: {stdout}"
    );
    assert_eq!(buffers["pooled"].as_u64(), Some(0), "{stdout}");
    assert_eq!(buffers["loan_fallback"].as_u64(), Some(0), "{stdout}");
}
