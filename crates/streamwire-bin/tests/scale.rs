//! `streamwire bench scale` at its smallest sizes: the consumers sweep at 1 and 2
//! consumers (raw pixels and JPEG) and the processes sweep at 2 and 3 workers, a few
//! seconds a point. Every point is a real run whose report balances (every message
//! delivered or counted with its reason: counts, never times), each sweep writes its
//! CSV, table and chart, and nothing of the runs outlives them: no process, no /dev/shm
//! file they mapped. Bounded.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_streamwire");

/// Six points of 3 s, each with its closed start and stop, on a loaded machine.
const BOUND: Duration = Duration::from_secs(300);

/// `pid`'s descendants, from /proc.
fn descendants(pid: u32) -> Vec<u32> {
    let mut tree = streamwire_scale_bench::procfs::tree(std::path::Path::new("/proc"), pid);
    tree.split_off(1.min(tree.len()))
}

/// Runs `bench scale` with `args`, killing it and its runs past [`BOUND`]; its exit
/// success, standard output and error.
fn scale(args: &[&str]) -> (bool, String, String) {
    let mut child = Command::new(BIN)
        .args(["bench", "scale"])
        .args(args)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + BOUND;
    // Its runs are in process groups of their own: found while it lives.
    let mut seen = Vec::new();
    while child.try_wait().ok().flatten().is_none() {
        for pid in descendants(child.id()) {
            if !seen.contains(&pid) {
                seen.push(pid);
            }
        }
        if Instant::now() > deadline {
            for pid in descendants(child.id()) {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
            let _ = child.kill();
            let _ = child.wait();
            panic!("`bench scale` did not end within {BOUND:?}; killed with its runs");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let output = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    // No process of its runs is left (a pid reused since by another program would have
    // another command line than this binary's).
    for pid in seen {
        let alive = std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|cmdline| cmdline.starts_with(BIN.as_bytes()));
        assert!(!alive, "process {pid} of a run outlived `bench scale`");
    }
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The checks every point passes: its report balances, it delivered, no more than was
/// published reached each consumer, and no /dev/shm file its run mapped is left.
fn check_point(dir: &Path, consumers: u64, shown: &str) {
    let point = json(&dir.join("point.json"));
    let count = |key: &str| point[key].as_u64().unwrap_or(0);
    assert_eq!(
        point["balanced"],
        true,
        "{}: {point}\n{shown}",
        dir.display()
    );
    assert_eq!(count("consumers"), consumers, "{point}\n{shown}");
    assert!(count("delivered") > 0, "{point}\n{shown}");
    assert!(
        count("delivered") + count("dropped") <= count("published") * consumers,
        "{point}\n{shown}"
    );
    for segment in point["segments_seen"].as_array().into_iter().flatten() {
        let path = segment.as_str().unwrap_or_default();
        assert!(
            !Path::new(path).exists(),
            "{path} outlived the run\n{shown}"
        );
    }
}

/// The sweep's CSV: its header, then a row per (series, size).
fn check_csv(out: &Path, sweep: &str, rows: &[&str], shown: &str) {
    let csv = std::fs::read_to_string(out.join(format!("{sweep}.csv")))
        .unwrap_or_else(|e| panic!("{e}\n{shown}"));
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with(&format!("series,{sweep},")), "{csv}");
    let keys: Vec<String> = lines[1..]
        .iter()
        .map(|l| l.split(',').take(2).collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(keys, rows, "{csv}");
    let png = std::fs::read(out.join(format!("{sweep}.png"))).unwrap_or_else(|e| panic!("{e}"));
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(out.join(format!("{sweep}.txt")).is_file());
}

#[test]
fn the_smallest_sweeps_balance_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let out = dir.path().join("scale");
    let out_arg = out.display().to_string();
    let (success, stdout, stderr) = scale(&[
        "--sweep",
        "consumers",
        "--sizes",
        "1,2",
        "--duration",
        "3",
        "--out",
        &out_arg,
    ]);
    let shown = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(success, "{shown}");
    assert!(stdout.contains("consumers sweep"), "{shown}");
    check_csv(
        &out,
        "consumers",
        &["raw,1", "raw,2", "jpeg,1", "jpeg,2"],
        &shown,
    );
    for (series, size) in [("raw", 1), ("raw", 2), ("jpeg", 1), ("jpeg", 2)] {
        check_point(
            &out.join(format!("consumers-{series}-{size}")),
            size,
            &shown,
        );
    }
    let (success, stdout, stderr) = scale(&[
        "--sweep",
        "processes",
        "--sizes",
        "2,3",
        "--duration",
        "3",
        "--out",
        &out_arg,
    ]);
    let shown = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(success, "{shown}");
    check_csv(&out, "processes", &["raw,2", "raw,3"], &shown);
    for size in [2u32, 3] {
        let point = out.join(format!("processes-raw-{size}"));
        check_point(&point, u64::from(size) - 1, &shown);
        let counts = json(&point.join("point.json"));
        assert_eq!(
            counts["workers"].as_u64(),
            Some(u64::from(size)),
            "{counts}"
        );
        assert!(counts["ready_s"].as_f64().is_some(), "{counts}\n{shown}");
    }
}
