//! Settings out of their declared ranges, and hostile files, refused before a run starts:
//! every value issue 33 found `check` and `config` accepting (and `run` then failing on) is
//! refused by `check` in a blueprint file, with the range and the line, and by `config`
//! through `-o`, with the range.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_streamwire");

/// Runs the binary in `dir` (so that messages name files relative to it), bounded.
fn streamwire(dir: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(BIN);
    command.args(args).current_dir(dir).env_remove("RUST_LOG");
    streamwire_testdata::process::output_bounded(command, &[], Duration::from_secs(60))
}

/// One value the issue found accepted: the instance as a blueprint file writes it, what
/// `check` must name, and the same value as `-o key=value` over a valid instance.
struct Case {
    what: &'static str,
    /// The instance (`{ type: .., ..}`) named `sensor`, and a placement line if any.
    instance: &'static str,
    placement: Option<&'static str>,
    /// The valid instance the `-o` goes over, and the `-o`.
    valid: &'static str,
    flag: Option<&'static str>,
    /// What each refusal must say: the range (or the rule) it breaks.
    range: &'static str,
    /// What `check` must say when it is not the range: NaN, which the YAML reader refuses
    /// on its line before any setting is read (`check` never accepted it; `-o` did).
    check_says: Option<&'static str>,
}

const CASES: &[Case] = &[
    Case {
        what: "camera 100000 x 100000",
        instance: "{ type: SimCamera, width: 100000, height: 100000 }",
        placement: None,
        valid: "{ type: SimCamera }",
        flag: Some("sensor.width=100000"),
        range: "1..=16384",
        check_says: None,
    },
    Case {
        what: "camera 16384 x 16384: each in range, the frame over the budget",
        instance: "{ type: SimCamera, width: 16384, height: 16384 }",
        placement: None,
        valid: "{ type: SimCamera, width: 16384 }",
        flag: Some("sensor.height=16384"),
        range: "over the 134217728 bytes (128 MiB) one frame may take",
        check_says: None,
    },
    Case {
        what: "lidar 65536 x 65536",
        instance: "{ type: SimLidar, beams: 65536, azimuths: 65536 }",
        placement: None,
        valid: "{ type: SimLidar }",
        flag: Some("sensor.beams=65536"),
        range: "1..=1024",
        check_says: None,
    },
    Case {
        what: "width 4294967295",
        instance: "{ type: SimCamera, width: 4294967295 }",
        placement: None,
        valid: "{ type: SimCamera }",
        flag: Some("sensor.width=4294967295"),
        range: "1..=16384",
        check_says: None,
    },
    Case {
        what: "height 4294967295",
        instance: "{ type: SimDepth, height: 4294967295 }",
        placement: None,
        valid: "{ type: SimDepth }",
        flag: Some("sensor.height=4294967295"),
        range: "1..=16384",
        check_says: None,
    },
    Case {
        what: "mapper.resolution_m 0",
        instance: "{ type: Mapper, resolution_m: 0 }",
        placement: None,
        valid: "{ type: Mapper }",
        flag: Some("sensor.resolution_m=0"),
        range: "finite, 0.01..=10.0",
        check_says: None,
    },
    Case {
        what: "busy.work_ms 1e308",
        instance: "{ type: BusySink, work_ms: 1e308 }",
        placement: None,
        valid: "{ type: BusySink }",
        flag: Some("sensor.work_ms=1e308"),
        range: "finite, 0.0..=60000.0",
        check_says: None,
    },
    Case {
        what: "fps 0",
        instance: "{ type: SimCamera, fps: 0 }",
        placement: None,
        valid: "{ type: SimCamera }",
        flag: Some("sensor.fps=0"),
        range: "finite, 0.01..=1000.0",
        check_says: None,
    },
    Case {
        what: "fps -1",
        instance: "{ type: SimCamera, fps: -1 }",
        placement: None,
        valid: "{ type: SimCamera }",
        flag: Some("sensor.fps=-1"),
        range: "finite, 0.01..=1000.0",
        check_says: None,
    },
    Case {
        what: "fps NaN",
        instance: "{ type: SimCamera, fps: .nan }",
        placement: None,
        valid: "{ type: SimCamera }",
        flag: Some("sensor.fps=NaN"),
        range: "finite, 0.01..=1000.0",
        check_says: Some("non-finite float `.nan` rejected"),
    },
    Case {
        what: "lidar hz NaN",
        instance: "{ type: SimLidar, hz: .nan }",
        placement: None,
        valid: "{ type: SimLidar }",
        flag: Some("sensor.hz=NaN"),
        range: "finite, 0.01..=1000.0",
        check_says: Some("non-finite float `.nan` rejected"),
    },
    Case {
        what: "width 0",
        instance: "{ type: SimCamera, width: 0 }",
        placement: None,
        valid: "{ type: SimCamera }",
        flag: Some("sensor.width=0"),
        range: "1..=16384",
        check_says: None,
    },
    Case {
        what: "placement robot/**",
        instance: "{ type: SimCamera }",
        placement: Some("robot/**"),
        valid: "{ type: SimCamera }",
        flag: None,
        range: "reserved in zenoh key expressions",
        check_says: None,
    },
    Case {
        what: "placement @cluster/join",
        instance: "{ type: SimCamera }",
        placement: Some("\"@cluster/join\""),
        valid: "{ type: SimCamera }",
        flag: None,
        range: "a leading `@` makes a verbatim chunk",
        check_says: None,
    },
];

fn blueprint(instance: &str, placement: Option<&str>) -> String {
    let mut text = format!("instances:\n  sensor: {instance}\n");
    if let Some(placement) = placement {
        text.push_str(&format!("placement:\n  sensor: {placement}\n"));
    }
    text
}

/// Every value of the issue that `check` accepted is refused by `check`, naming the range
/// (or the rule) and the file's line, and by `config` through `-o`, naming the range. The
/// messages are snapshotted: they are what a person reads.
#[test]
fn every_value_the_issue_found_accepted_is_refused_with_its_range() {
    let dir = tempfile::tempdir().unwrap();
    let mut transcript = String::new();
    for case in CASES {
        std::fs::write(
            dir.path().join("bad.yaml"),
            blueprint(case.instance, case.placement),
        )
        .unwrap();
        let out = streamwire(dir.path(), &["check", "bad.yaml"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}: check accepted it", case.what);
        let says = case.check_says.unwrap_or(case.range);
        assert!(stderr.contains(says), "{}: {stderr}", case.what);
        assert!(
            stderr.contains("bad.yaml:"),
            "{}: no line: {stderr}",
            case.what
        );
        transcript.push_str(&format!(
            "== {}\n$ streamwire check bad.yaml\n{stderr}",
            case.what
        ));

        let Some(flag) = case.flag else {
            transcript.push('\n');
            continue;
        };
        std::fs::write(dir.path().join("good.yaml"), blueprint(case.valid, None)).unwrap();
        let valid = streamwire(dir.path(), &["config", "good.yaml"]);
        assert!(
            valid.status.success(),
            "{}: the valid instance is refused: {}",
            case.what,
            String::from_utf8_lossy(&valid.stderr)
        );
        let out = streamwire(dir.path(), &["config", "good.yaml", "-o", flag]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{}: config -o accepted it",
            case.what
        );
        assert!(stderr.contains(case.range), "{}: {stderr}", case.what);
        transcript.push_str(&format!(
            "$ streamwire config good.yaml -o {flag}\n{stderr}\n"
        ));
    }
    insta::assert_snapshot!("refused_values", transcript);
}

/// The demo's own keys are checked the same way: `-o busy.work_ms=1e308` (which panicked a
/// run converting it to a `Duration`), `-o camera.width=0` and `-o camera.fps=NaN` are
/// refused by `config`, the first two with the range.
#[test]
fn the_demo_refuses_out_of_range_keys() {
    let dir = tempfile::tempdir().unwrap();
    let mut transcript = String::new();
    for flag in [
        "busy.work_ms=1e308",
        "camera.width=0",
        "camera.fps=0",
        "camera.fps=NaN",
    ] {
        let out = streamwire(dir.path(), &["config", "demo", "-o", flag]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag}: {stderr}");
        transcript.push_str(&format!("$ streamwire config demo -o {flag}\n{stderr}\n"));
    }
    assert!(
        transcript.contains("`work_ms` = 1e308 is out of range: it accepts finite, 0.0..=60000.0"),
        "{transcript}"
    );
    assert!(
        transcript.contains("`camera.width` = 0 is out of range: it accepts 1..=16384"),
        "{transcript}"
    );
    insta::assert_snapshot!("demo_refusals", transcript);
}

/// `check /dev/zero` is refused at once, as not a regular file (the count of bytes it did
/// not read is proven in streamwire-cli's `bounded_input` test, in process).
#[cfg(target_os = "linux")]
#[test]
fn check_refuses_dev_zero() {
    let dir = tempfile::tempdir().unwrap();
    let out = streamwire(dir.path(), &["check", "/dev/zero"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "/dev/zero is a character device, not a regular file: refused without reading it"
        ),
        "{stderr}"
    );
}

/// `config` shows what each key accepts, next to its value and where it came from.
#[test]
fn config_shows_each_range() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("camera.yaml"),
        "instances:\n  camera: { type: SimCamera, width: 640, height: 480 }\n",
    )
    .unwrap();
    let out = streamwire(
        dir.path(),
        &["config", "camera.yaml", "-o", "camera.fps=15"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    insta::assert_snapshot!("config_with_ranges", stdout);
    // The guide shows this very output.
    let guide = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/guide/src/blueprints-and-settings.md"
    ))
    .unwrap();
    assert!(
        guide.contains(&format!(
            "$ streamwire config camera.yaml -o camera.fps=15\n{stdout}"
        )),
        "docs/guide/src/blueprints-and-settings.md does not show `config`'s output as it is:\n{stdout}"
    );
}
