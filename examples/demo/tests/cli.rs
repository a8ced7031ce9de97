//! The demo's command-line output, as a user sees it.

use std::process::Command;

fn run(args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_streamwire-demo"))
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .expect("the demo binary runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn default_run_prints_the_robot_plan() {
    let (ok, stdout, stderr) = run(&["--plan-only"]);
    assert!(ok, "{stderr}");
    insta::assert_snapshot!(stdout);
}

#[test]
fn the_demo_runs_its_blueprint_and_reports_what_moved() {
    let (ok, stdout, stderr) = run(&["--run-for", "3"]);
    assert!(ok, "{stderr}");
    let report = stdout
        .split_once("run stopped after")
        .map(|(_, report)| report)
        .unwrap_or_else(|| panic!("no report in:\n{stdout}"));
    // Counts, not speeds: frames moved through every kind of link of the plan.
    let delivered = |input: &str| -> u64 {
        report
            .lines()
            .find(|l| l.trim_start().starts_with(input))
            .and_then(|l| l.split_whitespace().nth(2))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no delivered count for {input} in:\n{report}"))
    };
    for input in [
        "detector.frames",
        "viewer.frames",
        "web.jpeg",
        "mapper.depth",
    ] {
        assert!(delivered(input) > 0, "{input} got nothing:\n{report}");
    }
    assert!(report.contains("encode jpeg"), "{report}");
    assert!(report.contains("decode zstd"), "{report}");
}

#[test]
fn one_process_layout_encodes_only_for_the_web_relay() {
    let (ok, stdout, stderr) = run(&["--layout", "one-process", "--plan-only"]);
    assert!(ok, "{stderr}");
    // Zero-copy in process: no decode; the relay asked for bytes, so one encode.
    assert!(stdout.contains("1 codec node;"), "{stdout}");
    assert!(!stdout.contains("decode"), "{stdout}");
    insta::assert_snapshot!(stdout);
}

#[test]
fn settings_change_the_plan() {
    let (ok, stdout, stderr) = run(&["--jpeg-quality", "90", "--max-width", "640", "--plan-only"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("jpeg_quality=90"), "{stdout}");
    assert!(stdout.contains("max_width=640"), "{stdout}");
}

#[test]
fn a_bad_setting_is_a_clear_error() {
    let (ok, stdout, stderr) = run(&["--jpeg-quality", "0"]);
    assert!(!ok);
    assert!(stdout.is_empty());
    insta::assert_snapshot!(stderr);
}

#[test]
fn lossy_pixels_can_fail_the_build() {
    let (ok, _, stderr) = run(&["--lossy-pixels", "error"]);
    assert!(!ok);
    assert!(stderr.contains("receives lossy pixels"), "{stderr}");
}

#[test]
fn dot_output_is_a_graph() {
    let (ok, stdout, stderr) = run(&["--dot"]);
    assert!(ok, "{stderr}");
    assert!(stdout.starts_with("digraph plan {"), "{stdout}");
    assert!(stdout.trim_end().ends_with('}'));
}

#[test]
fn help_lists_the_options() {
    let (ok, stdout, _) = run(&["--help"]);
    assert!(ok);
    insta::assert_snapshot!(stdout);
}
