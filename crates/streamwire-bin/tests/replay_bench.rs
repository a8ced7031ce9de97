//! `streamwire bench replay` in smoke mode (the basic blueprint, raw and codec, 2 s each):
//! the table, the JSON lines of results, samples and arrivals, the summary and the charts
//! are well formed. Asserts shapes and counts, never a time or a rate.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_streamwire");

/// Runs the binary with `args`, bounded.
fn streamwire(args: &[&str], bound: Duration) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + bound;
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`streamwire {}` did not end within {bound:?}",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `bench replay` with `args` (bounded), which must succeed; its standard output.
fn bench_table(args: &[&str]) -> String {
    let output = streamwire(args, Duration::from_secs(180));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    stdout
}

/// The table rows of `blueprint` in `stdout`.
fn rows_of<'a>(stdout: &'a str, blueprint: &str) -> Vec<&'a str> {
    let start = format!("| {blueprint} |");
    stdout.lines().filter(|l| l.starts_with(&start)).collect()
}

fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(text.ends_with('\n'), "{}: complete lines", path.display());
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}: {l}", path.display())))
        .collect()
}

/// A PNG's width and height, from its signature and IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(
        bytes.len() > 24 && bytes.starts_with(b"\x89PNG\r\n\x1a\n") && &bytes[12..16] == b"IHDR"
    );
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&bytes[16..20]), be(&bytes[20..24]))
}

#[test]
fn smoke_run_writes_well_formed_results_summary_and_charts() {
    let out = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let out_dir = out.path().join("bench");
    let out_arg = out_dir.display().to_string();
    let frames =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/cockatoo_720p");
    let frames_arg = frames.display().to_string();
    let mut args = vec![
        "bench",
        "replay",
        "--blueprint",
        "basic",
        "--mode",
        "raw,codec",
        "--duration",
        "2",
        "--work-ms",
        "1",
        "--out",
        &out_arg,
    ];
    if frames.is_dir() {
        args.extend(["--replay", &frames_arg]);
    } else {
        println!(
            "no recorded frames at {}: the simulated camera",
            frames.display()
        );
        args.push("--sim");
    }
    // A namespace of its own needs root (CI runs as root); elsewhere the machine's.
    let netns = Command::new("unshare")
        .args(["-n", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !netns {
        // The cells then run in the machine's namespace: the smoke test still runs, the
        // namespace path does not; under STREAMWIRE_REQUIRE=all that is a failure.
        assert!(
            !streamwire_testdata::require::required(),
            "`unshare -n` is not allowed here (STREAMWIRE_REQUIRE=all needs the cells' \
             namespaces)"
        );
        println!("`unshare -n` is not allowed here: --no-netns");
        args.push("--no-netns");
    }
    let stdout = bench_table(&args);
    // The table: a head, a rule and one row per variant; then the bars.
    let rows = rows_of(&stdout, "basic");
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(
        rows[0].contains("| raw | on |") && rows[1].contains("| codec | on |"),
        "{stdout}"
    );
    for row in &rows {
        assert_eq!(row.matches('|').count(), 16, "15 columns: {row}");
    }
    assert!(
        stdout.contains("basic all 1ms raw-shm") && stdout.contains('#'),
        "bars: {stdout}"
    );

    // One result line per cell, each with its sink.
    let results = json_lines(&out_dir.join("results.jsonl"));
    assert_eq!(results.len(), 2);
    for r in &results {
        assert!(r["published"].as_u64().is_some_and(|n| n > 0), "{r}");
        assert_eq!(r["spec"]["netns"], serde_json::Value::Bool(netns), "{r}");
        let sinks = r["sinks"].as_array().unwrap_or_else(|| panic!("{r}"));
        assert_eq!(sinks.len(), 1, "{r}");
        assert_eq!(sinks[0]["instance"], "busy_0");
        let delivered = sinks[0]["delivered"]
            .as_u64()
            .unwrap_or_else(|| panic!("{r}"));
        assert!(delivered > 0, "{r}");
        assert!(r["cpu_pct"].as_f64().is_some_and(|c| c > 0.0), "{r}");
        assert!(r["ended"].as_str().is_some_and(|e| e == "stopped"), "{r}");
        // Every arrival is a line of the cell's recording.
        let dir = PathBuf::from(r["spec"]["dir"].as_str().unwrap_or_else(|| panic!("{r}")));
        let arrivals = json_lines(&dir.join("arrivals/busy_0.jsonl"));
        assert_eq!(arrivals.len() as u64, delivered);
        for a in &arrivals {
            for field in ["seq", "publish_ns", "arrival_ns", "bytes"] {
                assert!(a[field].is_u64(), "{field} in {a}");
            }
        }
        let samples = json_lines(&dir.join("samples.jsonl"));
        assert!(!samples.is_empty());
        for s in &samples {
            assert!(s["tree_cpu_pct"].is_f64() && s["lo_bytes"].is_u64(), "{s}");
        }
        assert!(dir.join("report.json").is_file() && dir.join("host.json").is_file());
    }
    // The raw cell carries pixels, the codec cell JPEG.
    let kb = |i: usize| {
        results[i]["image_wire_kb_per_frame"]
            .as_f64()
            .unwrap_or(0.0)
    };
    assert!(
        kb(0) > 1000.0,
        "raw frames of 1280x720 are megabytes: {}",
        kb(0)
    );
    assert!(
        kb(1) > 0.0 && kb(1) < kb(0) / 4.0,
        "JPEG is smaller: {}",
        kb(1)
    );

    // The summary links every chart, and every chart is a real SVG and PNG.
    let summary =
        std::fs::read_to_string(out_dir.join("summary.md")).unwrap_or_else(|e| panic!("{e}"));
    assert!(summary.starts_with("# Replay benchmark") && summary.contains("## Medians"));
    for chart in [
        "fps",
        "cpu",
        "wire",
        "cpu-over-time-basic-all-1ms",
        "lag-basic-all-1ms",
    ] {
        assert!(
            summary.contains(&format!("]({chart}.svg)")),
            "{chart} linked"
        );
        let svg = std::fs::read_to_string(out_dir.join(format!("{chart}.svg")))
            .unwrap_or_else(|e| panic!("{chart}: {e}"));
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{chart}.svg"
        );
        let png = std::fs::read(out_dir.join(format!("{chart}.png")))
            .unwrap_or_else(|e| panic!("{chart}: {e}"));
        assert_eq!(png_size(&png), (960, 540), "{chart}.png");
    }
    let rows_json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("rows.json")).unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("rows.json: {e}"));
    assert_eq!(rows_json.as_array().map(Vec::len), Some(2));
}

#[test]
fn bad_options_are_named_before_anything_runs() {
    for (args, says) in [
        (
            &[
                "bench",
                "replay",
                "--blueprint",
                "medium",
                "--sim",
                "--no-netns",
            ][..],
            "unknown blueprint `medium`",
        ),
        (
            &[
                "bench",
                "replay",
                "--replay",
                "/no/such/folder",
                "--no-netns",
            ][..],
            "--replay /no/such/folder: neither a folder nor an MCAP file",
        ),
        (
            &["bench", "replay", "--mode", "jpeg", "--sim", "--no-netns"][..],
            "unknown mode `jpeg`",
        ),
        (
            &[
                "bench",
                "replay",
                "--profile",
                "robot",
                "--sim",
                "--no-netns",
            ][..],
            "unknown profile `robot`",
        ),
        (
            &[
                "bench",
                "replay",
                "--link",
                "rate=50,delay=5,jitter=9",
                "--sim",
            ][..],
            "jitter",
        ),
        (
            &["bench", "replay", "--link", "wifi", "--sim", "--no-netns"][..],
            "cannot run with --no-netns",
        ),
    ] {
        let output = streamwire(args, Duration::from_secs(30));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn a_cell_across_a_shaped_link_sends_jpeg_to_the_laptop_and_no_shared_memory() {
    let out = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let out_dir = out.path().join("bench");
    let out_arg = out_dir.display().to_string();
    // The link needs root: network namespaces, veths, tc.
    let root = Command::new("ip")
        .args(["netns", "add", "sw-bench-probe"])
        .status()
        .is_ok_and(|s| s.success());
    let _ = Command::new("ip")
        .args(["netns", "del", "sw-bench-probe"])
        .status();
    if !root {
        streamwire_testdata::skip("network namespaces are not available here (`ip netns add`)");
        return;
    }
    let args = [
        "bench",
        "replay",
        "--blueprint",
        "basic",
        "--mode",
        "auto",
        "--link",
        "wifi",
        "--sim",
        "--duration",
        "3",
        "--work-ms",
        "1",
        "--out",
        &out_arg,
    ];
    let stdout = bench_table(&args);
    // The link table, one row: JPEG crossed, nothing through shared memory.
    let rows = rows_of(&stdout, "basic");
    assert_eq!(rows.len(), 1, "{stdout}");
    assert!(
        rows[0].contains("| wifi | auto | color_image/compressed (jpeg) |"),
        "{stdout}"
    );
    let results = json_lines(&out_dir.join("results.jsonl"));
    assert_eq!(results.len(), 1);
    let r = &results[0];
    let link = &r["link"];
    assert!(
        link["profile"]
            .as_str()
            .is_some_and(|p| p.starts_with("wifi")),
        "{r}"
    );
    assert_eq!(link["laptop_shared_memory_frames"], 0, "{r}");
    assert!(link["laptop_frames"].as_u64().is_some_and(|n| n > 0), "{r}");
    assert!(
        link["to_laptop_mbit_s"].as_f64().is_some_and(|m| m > 0.0),
        "{r}"
    );
    let workers = link["workers"].as_array().unwrap_or_else(|| panic!("{r}"));
    assert_eq!(workers.len(), 1, "the sink's process: {r}");
    assert_eq!(workers[0]["process"], "laptop/sink", "{r}");
    assert_eq!(workers[0]["exit_code"], 0, "{r}");
    assert!(r["ended"].as_str().is_some_and(|e| e == "stopped"), "{r}");
    // The sink on the laptop got frames, as JPEG decoded there.
    let consumers = r["consumers"].as_array().unwrap_or_else(|| panic!("{r}"));
    assert!(
        consumers.iter().any(|c| c["instance"] == "busy_0"
            && c["host"] == "laptop"
            && c["delivered"].as_u64().is_some_and(|n| n > 0)),
        "{r}"
    );
    // The link's namespaces are gone with the cell.
    let laptop = r["spec"]["place"]["laptop_namespace"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    let namespaces = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let listed = String::from_utf8_lossy(&namespaces.stdout);
    assert!(!listed.contains(laptop), "{laptop} left: {listed}");
}
