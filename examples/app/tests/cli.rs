//! The example application's CLI, run as a user runs it: the binary, spawned, with
//! bounded durations.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_acme-robot");

fn blueprint() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("blueprints/robot.yaml")
}

/// Runs the binary with `args` and `env` (and no other `STREAMWIRE_*` variable), killed
/// after 30 s at worst.
#[expect(clippy::unwrap_used, reason = "test helper")]
fn cli(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars() {
        if k.starts_with("STREAMWIRE_") {
            command.env_remove(k);
        }
    }
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("acme-robot {args:?} did not end within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn run_for_a_second_ends_with_a_report() {
    let out = cli(
        &["run", "robot", "--duration", "1", "-o", "camera.fps=20"],
        &[],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.starts_with("run stopped after"), "{stdout}");
    assert!(stdout.contains("detector.counts"), "{stdout}");
    // Not a terminal: plain status lines on stderr, no escape codes.
    assert!(!text(&out.stderr).contains('\u{1b}'));
}

#[test]
fn run_a_file_by_path() {
    let path = blueprint();
    let out = cli(&["run", path.to_str().unwrap(), "--duration", "0.5"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("camera.counts"));
}

#[test]
fn sigint_prints_the_report_and_exits_zero() {
    let mut child = Command::new(BIN)
        .args(["run", "robot"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let it start (the report then has deliveries), then Ctrl+C.
    std::thread::sleep(Duration::from_millis(700));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("run did not stop within 10 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.starts_with("run stopped after"), "{stdout}");
    assert!(stdout.contains("detector.counts"), "{stdout}");
}

#[test]
fn a_panicking_module_exits_nonzero_and_is_named() {
    let out = cli(
        &[
            "run",
            "robot",
            "--duration",
            "10",
            "-o",
            "detector.fail_after=3",
        ],
        &[],
    );
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("error:") && stderr.contains("detector"),
        "{stderr}"
    );
    assert!(stderr.contains("failed on purpose"), "{stderr}");
    assert!(
        text(&out.stdout).starts_with("run failed"),
        "{}",
        text(&out.stdout)
    );
}

/// The `error:` line of a failed run, with the worker's process named the same way in
/// every run (its host is this machine's name).
fn error_line(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("no `error:` line in\n{stderr}"))
        .to_owned()
}

/// A module failing in `start` or in `step` ends the run by itself, in one process and
/// over workers alike, with exit status 1 and the failure named: no `--duration` (the
/// harness's 30 s bound is the only limit; the run used to go on until Ctrl+C in one
/// process).
fn a_failure_ends_the_run(setting: &str, in_process: bool) -> String {
    let mut args = vec!["run", "robot", "-o", setting];
    if in_process {
        args.push("--in-process");
    }
    let out = cli(&args, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        text(&out.stdout).starts_with("run failed"),
        "{}",
        text(&out.stdout)
    );
    error_line(&stderr)
}

#[test]
fn a_module_failing_in_step_ends_a_run_in_one_process() {
    insta::assert_snapshot!(a_failure_ends_the_run("detector.fail_after=3", true));
}

#[test]
fn a_module_failing_in_start_ends_a_run_in_one_process() {
    insta::assert_snapshot!(a_failure_ends_the_run("detector.fail_on_start=true", true));
}

#[test]
fn a_module_failing_in_step_ends_a_distributed_run() {
    insta::assert_snapshot!(a_failure_ends_the_run("detector.fail_after=3", false));
}

#[test]
fn a_module_failing_in_start_ends_a_distributed_run() {
    insta::assert_snapshot!(a_failure_ends_the_run("detector.fail_on_start=true", false));
}

/// `supervision: restart:2`: the failed instance is restarted twice (said each time),
/// then its third failure ends the run, in one process as over workers.
#[test]
fn restart_supervision_restarts_a_failed_module_then_stops() {
    let yaml = std::fs::read_to_string(blueprint()).unwrap();
    let dir = std::env::temp_dir().join(format!("acme-restart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("robot.yaml");
    std::fs::write(&file, format!("supervision: restart:2\n{yaml}")).unwrap();
    for in_process in [true, false] {
        let mut args = vec!["run", file.to_str().unwrap(), "-o", "detector.fail_after=3"];
        if in_process {
            args.push("--in-process");
        }
        let out = cli(&args, &[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        for n in [1, 2] {
            let said = format!("restarting instance `detector` (restart {n} of 2)");
            assert!(stderr.contains(&said), "{said} not in\n{stderr}");
        }
        assert!(!stderr.contains("restart 3"), "{stderr}");
        assert!(
            error_line(&stderr).contains("failed on purpose"),
            "{stderr}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn config_precedence_file_env_flag() {
    // File only.
    let out = cli(&["config", "robot"], &[]);
    insta::assert_snapshot!("config_file", text(&out.stdout));
    // The environment beats the file; -o beats the environment; per stream is its own key.
    let out = cli(
        &[
            "config",
            "robot",
            "-o",
            "jpeg_quality=50",
            "-o",
            "camera.fps=15",
            "-o",
            "streams.counts.compression=off",
        ],
        &[
            ("STREAMWIRE_JPEG_QUALITY", "80"),
            ("STREAMWIRE_COMPRESSION", "on"),
            ("STREAMWIRE_MAX_WIDTH", "640"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    insta::assert_snapshot!("config_layers", text(&out.stdout));
}

#[test]
fn a_knob_from_the_command_line_shows_in_config_and_report() {
    let out = cli(&["config", "robot", "-o", "camera.fps=10"], &[]);
    let stdout = text(&out.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("camera.fps") && l.contains("= 10") && l.contains("(-o)")),
        "{stdout}"
    );
    let out = cli(
        &["run", "robot", "--duration", "1", "-o", "camera.fps=10"],
        &[],
    );
    let stdout = text(&out.stdout);
    // 10 frames per second for a second: about 10 published (never the file's 50).
    let published: u64 = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("camera.counts"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!((5..=15).contains(&published), "{stdout}");
}

#[test]
fn bad_settings_are_one_clear_error() {
    type Case<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)]);
    let cases: &[Case<'_>] = &[
        ("no_equals", &["config", "robot", "-o", "jpeg_quality"], &[]),
        (
            "unknown_key",
            &["config", "robot", "-o", "camera.fsp=3"],
            &[],
        ),
        (
            "unknown_instance",
            &["config", "robot", "-o", "camra.fps=3"],
            &[],
        ),
        (
            "out_of_range",
            &["config", "robot", "-o", "jpeg_quality=300"],
            &[],
        ),
        (
            "bad_compression",
            &["config", "robot", "-o", "compression=maybe"],
            &[],
        ),
        (
            "mistyped_value",
            &["config", "robot", "-o", "camera.fps=fast"],
            &[],
        ),
        (
            "unknown_env",
            &["config", "robot"],
            &[("STREAMWIRE_JPEG_QUALTY", "5")],
        ),
        (
            "env_opt_out_disagrees",
            &["config", "robot"],
            &[
                ("STREAMWIRE_COMPRESS_IMAGES", "0"),
                ("STREAMWIRE_COMPRESSION", "on"),
            ],
        ),
        ("unknown_blueprint", &["run", "robto"], &[]),
        (
            "unknown_stream",
            &["run", "robot", "-o", "streams.cuonts.compression=on"],
            &[],
        ),
    ];
    for (name, args, env) in cases {
        let out = cli(args, env);
        assert!(!out.status.success(), "{name}: {}", text(&out.stdout));
        assert!(
            out.stdout.is_empty(),
            "{name}: nothing starts: {}",
            text(&out.stdout)
        );
        insta::assert_snapshot!(format!("bad_{name}"), text(&out.stderr));
    }
    // The opt-out alone, and agreeing with the other form, are fine.
    let out = cli(&["config", "robot"], &[("STREAMWIRE_COMPRESS_IMAGES", "0")]);
    let stdout = text(&out.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("compression") && l.contains("= off")),
        "{stdout}"
    );
    let out = cli(
        &["config", "robot"],
        &[
            ("STREAMWIRE_COMPRESS_IMAGES", "0"),
            ("STREAMWIRE_COMPRESSION", "off"),
        ],
    );
    assert!(out.status.success());
}

#[test]
fn check_a_good_and_a_bad_file() {
    let good = blueprint();
    let out = cli(&["check", good.to_str().unwrap()], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    insta::assert_snapshot!("check_good", text(&out.stdout));

    let dir = std::env::temp_dir().join(format!("acme-robot-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.yaml");
    // Three mistakes: a module type, a setting and a placement, each misspelt.
    let text_of_bad = std::fs::read_to_string(&good)
        .unwrap()
        .replace("type: Detector", "type: Detektor")
        .replace("fps: 50", "fsp: 50")
        .replace("detector: perception", "detecter: perception");
    std::fs::write(&bad, text_of_bad).unwrap();
    let out = cli(&["check", bad.to_str().unwrap()], &[]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!out.status.success());
    let stderr = text(&out.stderr).replace(dir.to_str().unwrap(), "<dir>");
    // All three in one `check`, the error printed once, each mistake located once.
    assert_eq!(stderr.matches("error").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("<dir>/bad.yaml:").count(), 4, "{stderr}");
    insta::assert_snapshot!("check_bad", stderr);
}

#[test]
fn a_file_may_leave_out_a_setting_with_a_default() {
    let dir = std::env::temp_dir().join(format!("acme-robot-default-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("robot.yaml");
    let yaml = std::fs::read_to_string(blueprint())
        .unwrap()
        .replace("    fail_after: 0\n", "");
    assert!(!yaml.contains("fail_after"), "{yaml}");
    std::fs::write(&file, yaml).unwrap();
    let out = cli(&["config", file.to_str().unwrap()], &[]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.lines().any(|l| l.contains("detector.fail_after")
            && l.contains("= 0")
            && l.contains("(default)")),
        "{stdout}"
    );
}

#[test]
fn graph_in_every_format() {
    for format in ["text", "dot", "mermaid", "json"] {
        let out = cli(&["graph", "robot", "--format", format], &[]);
        assert!(out.status.success(), "{format}: {}", text(&out.stderr));
        insta::assert_snapshot!(format!("graph_{format}"), text(&out.stdout));
    }
}

#[test]
fn help_and_list() {
    let out = cli(&["--help"], &[]);
    assert!(out.status.success());
    insta::assert_snapshot!("help", text(&out.stdout));
    let out = cli(&["run", "--help"], &[]);
    // What the app's plugins add (the distributed runner's placement flags), and no
    // more: a workspace build links nothing else into it.
    insta::assert_snapshot!("help_run", text(&out.stdout));
    let out = cli(&["list"], &[]);
    insta::assert_snapshot!("list", text(&out.stdout));
    let out = cli(&["completions", "bash"], &[]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("acme-robot"));
}

/// The report with its numbers replaced by `N` and columns squeezed: what a run prints,
/// without the counts and times that differ from run to run.
fn shape_of(report: &str) -> String {
    let mut out = String::new();
    for line in report.lines() {
        let mut shaped = String::new();
        let mut in_number = false;
        for c in line.chars() {
            if c.is_ascii_digit() || (in_number && c == '.') {
                if !in_number {
                    shaped.push('N');
                }
                in_number = true;
            } else {
                in_number = false;
                shaped.push(c);
            }
        }
        let mut shaped = shaped.split_whitespace().collect::<Vec<_>>().join(" ");
        // A drop is a count and its reason ("N queue_full, N lost_on_wire"): whether a
        // 1 s run on a loaded machine drops is not the report's shape (the balance is
        // checked elsewhere), so the reasons fold into one "N" as a count of 0 reads.
        for reason in DROP_REASONS {
            shaped = shaped
                .replace(&format!("N {reason}, "), "")
                .replace(&format!("N {reason}"), "N");
        }
        out.push_str(&shaped);
        out.push('\n');
    }
    out
}

/// The reasons a report's `dropped` cell names (`DropReason::name`).
const DROP_REASONS: [&str; 7] = [
    "queue_full",
    "unpaired",
    "decode_failed",
    "deserialize_failed",
    "codec_queue_full",
    "sender_dropped",
    "lost_on_wire",
];

#[test]
fn report_snapshot() {
    let out = cli(&["run", "robot", "--duration", "1"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    insta::assert_snapshot!("report_shape", shape_of(&text(&out.stdout)));
}

/// The blueprint made in code (`robot-code`, no config struct) has the file's keys from
/// the modules' declared settings, gives the file's plan, and is range-checked by them.
#[test]
fn a_code_blueprint_takes_its_settings_from_the_modules() {
    let graph = |name: &str| {
        let out = cli(&["graph", name], &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert_eq!(graph("robot"), graph("robot-code"));

    let config = cli(&["config", "robot-code", "-o", "detector.threshold=5"], &[]);
    let config = text(&config.stdout);
    for line in [
        "camera.fps             = 50.0",
        "(blueprint default)  accepts finite, 0.1..=1000.0",
        "detector.threshold     = 5",
    ] {
        assert!(config.contains(line), "{line:?} not in:\n{config}");
    }

    let refused = cli(&["graph", "robot-code", "-o", "camera.fps=5000"], &[]);
    assert!(!refused.status.success());
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("camera.fps") && stderr.contains("0.1..=1000.0"),
        "{stderr}"
    );
}
