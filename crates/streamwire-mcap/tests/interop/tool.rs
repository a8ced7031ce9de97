//! Running tests/interop/mcap_tool.py (mcap and rosbags from PyPI) from the tests.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let mut child = Command::new(python)
        .arg(interop_dir().join("mcap_tool.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts the tool");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(request.to_string().as_bytes())
        .expect("request");
    drop(stdin);
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        stdout.read_to_end(&mut out).map(|_| out)
    });
    let mut stderr = child.stderr.take().expect("stderr");
    let errors = std::thread::spawn(move || {
        let mut out = String::new();
        stderr.read_to_string(&mut out).map(|_| out)
    });
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mcap_tool.py ran longer than 5 minutes; killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = reader.join().expect("reader").expect("answer");
    let err = errors.join().expect("stderr").unwrap_or_default();
    assert!(status.success(), "mcap_tool.py failed ({status}): {err}");
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
