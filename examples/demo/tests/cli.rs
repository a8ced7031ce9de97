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

/// The number in column `column` of the report line that starts with `name`.
fn report_number(report: &str, name: &str, column: usize) -> u64 {
    report
        .lines()
        .find(|l| l.trim_start().starts_with(name))
        .and_then(|l| l.split_whitespace().nth(column))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count for {name} in:\n{report}"))
}

fn report_of(stdout: &str) -> &str {
    stdout
        .split_once("run stopped after")
        .map(|(_, report)| report)
        .unwrap_or_else(|| panic!("no report in:\n{stdout}"))
}

#[test]
fn default_run_prints_the_robot_plan() {
    let (ok, stdout, stderr) = run(&["--plan-only"]);
    assert!(ok, "{stderr}");
    // One encode, and one decode per receiving process.
    assert_eq!(
        stdout.matches("  encode color_image").count(),
        1,
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("  decode color_image").count(),
        2,
        "{stdout}"
    );
    insta::assert_snapshot!(stdout);
}

#[test]
fn the_demo_runs_the_simulated_sensors_and_reports_what_moved() {
    let (ok, stdout, stderr) = run(&["--run-for", "3", "-o", "busy.work_ms=2"]);
    assert!(ok, "{stderr}");
    let report = report_of(&stdout);
    // Counts, not speeds: frames moved through every kind of link of the plan.
    for input in [
        "detector.frames",
        "busy_robot.frames",
        "busy_base.frames",
        "recorder.jpeg",
        "mapper.depth",
        "mapper.cloud",
        "mapper.odometry",
    ] {
        assert!(
            report_number(report, input, 2) > 0,
            "{input} got nothing:\n{report}"
        );
    }
    assert!(report.contains("encode jpeg"), "{report}");
    assert!(report.contains("decode zstd"), "{report}");
}

#[test]
fn the_demo_replays_the_real_frames() {
    let data = streamwire_testdata::dir().join("cockatoo_720p/frames");
    if !data.is_dir() {
        println!(
            "skipped: no real data at {} (set STREAMWIRE_DATA)",
            data.display()
        );
        return;
    }
    let dir = data.to_string_lossy().into_owned();
    let (ok, stdout, stderr) = run(&["--replay", &dir, "--run-for", "3", "-o", "busy.work_ms=2"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("camera (ReplaySource)"), "{stdout}");
    let report = report_of(&stdout);
    assert!(report_number(report, "detector.frames", 2) > 0, "{report}");
    assert!(report.contains("published="), "{report}");
}

#[test]
fn a_folder_without_a_rate_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("streamwire-demo-norate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("0.jpg"), b"x").unwrap();
    let (ok, _, stderr) = run(&["--replay", &dir.to_string_lossy(), "--plan-only"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!ok);
    assert!(stderr.contains("--fps 20"), "{stderr}");
}

#[test]
fn one_process_layout_encodes_only_for_the_byte_consumer() {
    let (ok, stdout, stderr) = run(&["-o", "layout=one_process", "--plan-only"]);
    assert!(ok, "{stderr}");
    // Zero-copy in process: no decode; the byte consumer asked for bytes, so one encode.
    assert!(stdout.contains("1 codec node;"), "{stdout}");
    assert!(!stdout.contains("decode"), "{stdout}");
    insta::assert_snapshot!(stdout);
}

#[test]
fn settings_change_the_plan() {
    let (ok, stdout, stderr) = run(&[
        "-o",
        "jpeg_quality=90",
        "-o",
        "max_width=640",
        "--plan-only",
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("jpeg_quality=90"), "{stdout}");
    assert!(stdout.contains("max_width=640"), "{stdout}");
}

#[test]
fn a_bad_setting_is_a_clear_error() {
    let (ok, stdout, stderr) = run(&["-o", "jpeg_quality=0"]);
    assert!(!ok);
    assert!(stdout.is_empty());
    insta::assert_snapshot!(stderr);
}

#[test]
fn an_unknown_key_lists_the_valid_ones() {
    let (ok, _, stderr) = run(&["-o", "camera.colour=red"]);
    assert!(!ok);
    insta::assert_snapshot!(stderr);
}

#[test]
fn lossy_pixels_can_fail_the_build() {
    let (ok, _, stderr) = run(&["-o", "lossy_pixels=error"]);
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
