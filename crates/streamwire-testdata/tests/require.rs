//! A skip is a skip, except under `STREAMWIRE_REQUIRE=all`, where it fails: shown on a real
//! test binary (this one, run again as a child with and without the variable).

use std::process::{Command, Output};

#[test]
#[ignore = "run by `a_skip_fails_under_require_all`, in a child process"]
fn skips_for_a_missing_tool() {
    streamwire_testdata::skip("the-missing-tool is not installed");
}

fn run_skipping_test(require: Option<&str>) -> Output {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("this test binary: {e}"));
    let mut command = Command::new(exe);
    command.args([
        "--ignored",
        "--exact",
        "skips_for_a_missing_tool",
        "--nocapture",
    ]);
    command.env_remove(streamwire_testdata::require::VARIABLE);
    if let Some(value) = require {
        command.env(streamwire_testdata::require::VARIABLE, value);
    }
    command
        .output()
        .unwrap_or_else(|e| panic!("cannot run this test binary: {e}"))
}

#[test]
fn a_skip_passes_saying_why_and_fails_under_require_all() {
    let skipped = run_skipping_test(None);
    let stdout = String::from_utf8_lossy(&skipped.stdout);
    assert!(skipped.status.success(), "{stdout}");
    assert!(
        stdout.contains("skipped: the-missing-tool is not installed"),
        "{stdout}"
    );

    let failed = run_skipping_test(Some("all"));
    let output = String::from_utf8_lossy(&failed.stdout).into_owned()
        + &String::from_utf8_lossy(&failed.stderr);
    assert!(!failed.status.success(), "{output}");
    assert!(
        output.contains(
            "STREAMWIRE_REQUIRE=all, and this test cannot run: the-missing-tool is not installed"
        ),
        "{output}"
    );
}

#[test]
fn only_all_requires_every_test() {
    use streamwire_testdata::require::required_by;
    assert!(required_by(Some("all")));
    assert!(!required_by(None));
    assert!(!required_by(Some("")));
    assert!(!required_by(Some("some")));
}
