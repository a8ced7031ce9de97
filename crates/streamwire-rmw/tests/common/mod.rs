//! What the interop tests share: the SDK's Python, a loopback router, a child killed
//! however a test ends.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Child;

use zenoh::Wait as _;

pub(crate) fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop")
}

/// The SDK's Python, or `None` (skipped) when `.ci/run`'s step has not installed it.
pub(crate) fn sdk_python() -> Option<PathBuf> {
    let python = interop_dir().join(".venv/bin/python");
    if python.is_file() {
        Some(python)
    } else {
        streamwire_testdata::skip(format!(
            "zenoh-ros2-sdk is not installed at {} (run .ci/run's ros2-rmw step)",
            python.display()
        ));
        None
    }
}

pub(crate) fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// A zenoh router listening on `127.0.0.1:port` only.
pub(crate) fn router(port: u16) -> zenoh::Session {
    let mut config = zenoh::Config::default();
    for (key, value) in [
        ("mode", "\"router\"".to_owned()),
        ("listen/endpoints", format!("[\"tcp/127.0.0.1:{port}\"]")),
        ("connect/endpoints", "[]".to_owned()),
        ("scouting/multicast/enabled", "false".to_owned()),
        ("scouting/gossip/enabled", "false".to_owned()),
    ] {
        config.insert_json5(key, &value).expect("a router setting");
    }
    zenoh::open(config).wait().expect("the router opens")
}

/// Kills a child process however the test ends.
pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
