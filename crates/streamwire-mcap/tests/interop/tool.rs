//! Running tests/interop/mcap_tool.py (mcap and rosbags from PyPI) from the tests.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The venv's Python with mcap and rosbags: `STREAMWIRE_MCAP_PYTHON`, by default the venv
/// `.ci/run` makes in tests/interop/.venv; `None` (a skip, or the failure under
/// `STREAMWIRE_REQUIRE=all`) when it is absent.
pub(crate) fn python() -> Option<PathBuf> {
    let python = std::env::var_os("STREAMWIRE_MCAP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| interop_dir().join(".venv/bin/python"));
    if python.exists() {
        Some(python)
    } else {
        streamwire_testdata::skip(format!(
            "{} is absent (python3 -m venv tests/interop/.venv && tests/interop/.venv/bin/pip install -r tests/interop/requirements.txt, or set STREAMWIRE_MCAP_PYTHON)",
            python.display()
        ));
        None
    }
}

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop")
}

/// Sends `request` to the tool (at most 5 minutes) and returns its answer, failing the
/// test on an `error` answer.
pub(crate) fn ask(python: &Path, request: serde_json::Value) -> serde_json::Value {
    let mut command = Command::new(python);
    command.arg(interop_dir().join("mcap_tool.py"));
    let out = streamwire_testdata::process::run_bounded(
        command,
        request.to_string().as_bytes(),
        Duration::from_secs(300),
    );
    let answer: serde_json::Value = serde_json::from_slice(&out).expect("JSON answer");
    assert!(
        answer.get("error").is_none(),
        "mcap_tool.py: {}",
        answer["error"]
    );
    answer
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
