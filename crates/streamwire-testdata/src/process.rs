//! Running a tool of another ecosystem from a test: its input on standard input, its
//! answer from standard output, its run bounded in time (a hung tool fails the test).

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `command` with `input` on its standard input and returns its standard output,
/// killing it past `limit`.
pub fn run_bounded(mut command: Command, input: &[u8], limit: Duration) -> Vec<u8> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts the tool");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
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
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} ran longer than {limit:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    writer.join().expect("writer").expect("wrote the request");
    let out = reader.join().expect("reader").expect("read the answer");
    let err = errors
        .join()
        .expect("stderr reader")
        .unwrap_or_else(|e| format!("(its standard error was unreadable: {e})"));
    assert!(status.success(), "{command:?} failed ({status}): {err}");
    out
}
