//! What a new user met in their first hour (issue 52), through the stock binary: the
//! viewer's URL printed for any blueprint with a relay, a module failing in `start` (the
//! relay's port taken) ending the run by itself, a Mermaid plan whose edges name declared
//! nodes, `completions` into a closed pipe, `check -o` and a bad `-o` value naming its key.
//!
//! Each run is bounded (30 s) and killed past it; none takes `--duration`.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_streamwire");

/// The bound of each run.
const LIMIT: Duration = Duration::from_secs(30);

fn streamwire(args: &[&str]) -> Output {
    let mut command = Command::new(BIN);
    command.args(args).env_remove("RUST_LOG");
    streamwire_testdata::process::output_bounded(command, &[], LIMIT)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A blueprint file with only a web relay listening on 127.0.0.1 (its default) port
/// `port`, placed in a process of its own when `placed` (a distributed run: the relay
/// runs in a worker).
fn relay_blueprint(dir: &Path, port: u16, placed: bool) -> PathBuf {
    let mut yaml = format!("instances:\n  web:\n    type: WebRelay\n    port: {port}\n");
    if placed {
        yaml.push_str("placement:\n  web: ui\n");
    }
    let path = dir.join(if placed {
        "relay-ui.yaml"
    } else {
        "relay.yaml"
    });
    std::fs::write(&path, yaml).unwrap_or_else(|e| panic!("{e}"));
    path
}

/// A run whose standard error is read line by line on a thread; killed when dropped.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    fn start(args: &[&str]) -> Running {
        let mut child = Command::new(BIN)
            .args(args)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{BIN}: {e}"));
        let stderr = child.stderr.take().unwrap_or_else(|| panic!("no stderr"));
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Running {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The first line of standard error that starts with `prefix`, within the bound.
    fn line_starting(&mut self, prefix: &str) -> String {
        loop {
            match self.lines.recv_timeout(LIMIT) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(line) => self.seen.push(line),
                Err(_) => panic!("no line `{prefix}...` in:\n{}", self.seen.join("\n")),
            }
        }
    }
}

/// Stopped as Ctrl+C does (a distributed run's workers stop with it and remove their
/// shared memory), killed if it has not ended within the bound.
impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + LIMIT;
        while matches!(self.child.try_wait(), Ok(None)) {
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.wait();
    }
}

/// `GET path` on `host`: the status code and the body.
fn get(host: &str, path: &str) -> (String, String) {
    let mut stream = std::net::TcpStream::connect(host).unwrap_or_else(|e| panic!("{e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap_or_else(|e| panic!("{e}"));
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").unwrap_or_else(|e| panic!("{e}"));
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let code = response.split(' ').nth(1).unwrap_or_default().to_owned();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (code, body)
}

/// A YAML blueprint with a relay on port 0 prints the viewer's line at the default log
/// level, with the port the relay got and the run's token, in one process and when the
/// relay runs in a worker (the coordinator prints it); the URL serves the viewer page.
#[test]
fn a_yaml_relay_on_port_0_prints_the_viewer_line_and_its_url_serves_the_page() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for placed in [false, true] {
        let file = relay_blueprint(dir.path(), 0, placed);
        let file = file.to_str().unwrap_or_default();
        let mut run = Running::start(&["run", file]);
        let line = run.line_starting("viewer: open http://");
        let url = line
            .strip_prefix("viewer: open http://")
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_default();
        let (host, path) = url.split_once('/').unwrap_or_default();
        let port: u16 = host
            .strip_prefix("127.0.0.1:")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{line}"));
        assert_ne!(port, 0, "{line}");
        assert!(path.starts_with("?token="), "{line}");
        assert!(
            line.ends_with("in a browser (the token is this run's)"),
            "{line}"
        );
        let (code, body) = get(host, &format!("/{path}"));
        assert_eq!(code, "200", "{line}\n{body}");
        assert!(
            body.contains("<html") || body.contains("<!doctype html"),
            "{body}"
        );
    }
}

/// The relay's port taken: its `start` fails, and the run ends by itself with exit status
/// 1 and the failure named, in one process as over workers (no `--duration`: the run used
/// to go on, in one process, until Ctrl+C).
#[test]
fn a_relay_whose_port_is_taken_ends_the_run_with_the_failure_named() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let address = taken.local_addr().unwrap_or_else(|e| panic!("{e}"));
    for (placed, name) in [(false, "one_process"), (true, "distributed")] {
        let file = relay_blueprint(dir.path(), address.port(), placed);
        let out = streamwire(&["run", file.to_str().unwrap_or_default()]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        let error = stderr
            .lines()
            .find(|l| l.starts_with("error:"))
            .unwrap_or_else(|| panic!("no error line:\n{stderr}"))
            .replace(&address.to_string(), "127.0.0.1:PORT");
        insta::assert_snapshot!(format!("port_taken_{name}"), error);
    }
}

/// The ids a Mermaid flowchart declares, and every edge's two ends among them.
fn assert_every_edge_names_a_declared_node(mermaid: &str) {
    let declared: Vec<&str> = mermaid
        .lines()
        .map(str::trim)
        .filter(|l| !l.contains("-->") && !l.starts_with("subgraph"))
        .filter_map(|l| l.split_once(['[', '{']).map(|(id, _)| id))
        .collect();
    let edges: Vec<&str> = mermaid.lines().filter(|l| l.contains("-->")).collect();
    assert!(!edges.is_empty(), "{mermaid}");
    for line in edges {
        let line = line.trim();
        let from = line.split(" -->").next().unwrap_or_default();
        let to = line.rsplit("| ").next().unwrap_or_default();
        for end in [from, to] {
            assert!(
                declared.contains(&end),
                "`{end}` undeclared: {line}\n{mermaid}"
            );
        }
    }
}

/// The demo's plan (encoders, and decoders in several processes) as Mermaid: every edge
/// names a declared node.
#[test]
fn the_demo_plan_as_mermaid_names_only_declared_nodes() {
    let out = streamwire(&["graph", "demo", "--format", "mermaid"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mermaid = text(&out.stdout);
    assert!(mermaid.contains("{{\"decode"), "{mermaid}");
    assert_every_edge_names_a_declared_node(&mermaid);
}

/// `completions bash | head -3`: the reader closes the pipe early, and the command ends
/// quietly (it panicked on the broken pipe).
#[test]
fn completions_into_a_closed_pipe_end_quietly() {
    let mut child = Command::new(BIN)
        .args(["completions", "bash"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let first: Vec<String> = BufReader::new(stdout)
        .lines()
        .take(3)
        .map_while(Result::ok)
        .collect();
    assert_eq!(first.len(), 3);
    // The pipe is closed here; the rest of the script meets it.
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.status.success(), "{stderr}");
}

/// `check` takes `-o` as `run` does; a value of the wrong type names its key.
#[test]
fn check_takes_settings_and_a_bad_value_names_its_key() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = dir.path().join("camera.yaml");
    std::fs::write(&file, "instances:\n  camera:\n    type: SimCamera\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let file = file.to_str().unwrap_or_default();
    let good = streamwire(&["check", file, "-o", "camera.fps=5"]);
    assert!(good.status.success(), "{}", text(&good.stderr));
    assert!(
        text(&good.stdout).starts_with("ok: "),
        "{}",
        text(&good.stdout)
    );
    let bad = streamwire(&["check", file, "-o", "camera.fps=fast"]);
    assert_eq!(bad.status.code(), Some(1));
    insta::assert_snapshot!("bad_value_in_a_file", text(&bad.stderr).trim_end());
    let bad = streamwire(&["config", "demo", "-o", "camera.fps=fast"]);
    assert_eq!(bad.status.code(), Some(1));
    insta::assert_snapshot!("bad_value_in_code", text(&bad.stderr).trim_end());
}
