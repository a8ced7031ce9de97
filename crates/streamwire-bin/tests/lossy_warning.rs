//! The lossy-pixels warning (issue 52, point 7): printed once per command, with its
//! remedy, even where a command builds its plan more than once (`run --record` builds it
//! for the run and for the recorder's streams). Each command is bounded (60 s).

use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_streamwire");

/// What the warning says, and the remedy it must carry.
const WARNING: &str = "lossy pixels: ";
const REMEDY: &str = "for exact pixels mark the input `#[port(lossless)]`";

fn stderr_of(args: &[&str]) -> String {
    let mut command = Command::new(BIN);
    command.args(args).env_remove("RUST_LOG");
    let out = streamwire_testdata::process::output_bounded(command, &[], Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "streamwire {args:?}:\n{}\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

/// Each warning line (one per lossy input of the plan) appears once, with the remedy.
fn assert_warned_once_each(args: &[&str], stderr: &str) {
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains(WARNING)).collect();
    assert!(
        !lines.is_empty(),
        "streamwire {args:?} gave no lossy-pixels warning:\n{stderr}"
    );
    for line in &lines {
        assert!(line.contains(REMEDY), "no remedy in: {line}");
        let said = line.split_once(WARNING).map_or("", |(_, said)| said);
        let times = stderr
            .lines()
            .filter(|l| l.contains(WARNING) && l.ends_with(said))
            .count();
        assert_eq!(
            times, 1,
            "streamwire {args:?} said it {times} times:\n{stderr}"
        );
    }
}

#[test]
fn the_lossy_pixels_warning_is_printed_once_per_command_with_its_remedy() {
    let graph = ["graph", "demo-split"];
    assert_warned_once_each(&graph, &stderr_of(&graph));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = dir.path().join("run.mcap");
    let file = file.to_str().unwrap_or_default();
    let run = [
        "run",
        "demo-split",
        "--insecure",
        "--duration",
        "2",
        "-o",
        "web.enabled=false",
        "-o",
        "camera.width=320",
        "-o",
        "camera.height=240",
        "--record",
        file,
    ];
    assert_warned_once_each(&run, &stderr_of(&run));
}
