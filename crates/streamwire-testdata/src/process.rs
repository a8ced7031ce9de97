//! Running a tool of another ecosystem from a test: its input on standard input, its
//! answer from standard output, its run bounded in time (a hung tool fails the test).

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `command` with `input` on its standard input and returns its standard output,
/// killing it past `limit`; a failed run fails the test, with its standard error.
pub fn run_bounded(command: Command, input: &[u8], limit: Duration) -> Vec<u8> {
    let shown = format!("{command:?}");
    let output = output_bounded(command, input, limit);
    assert!(
        output.status.success(),
        "{shown} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// Runs `command` with `input` on its standard input and returns what it wrote and how it
/// ended, whatever that was; past `limit` it is killed and the test fails. Its outputs are
/// read while it runs (on threads of their own), so a program that writes more than a pipe
/// holds never blocks on a full pipe.
pub fn output_bounded(mut command: Command, input: &[u8], limit: Duration) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?} does not start: {e}"));
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
        let mut out = Vec::new();
        stderr.read_to_end(&mut out).map(|_| out)
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
    // A program that ends without reading its input is not a failure of the writer.
    let _ = writer.join().expect("writer");
    let stdout = reader
        .join()
        .expect("reader")
        .expect("read its standard output");
    let stderr = errors
        .join()
        .expect("stderr reader")
        .unwrap_or_else(|e| format!("(its standard error was unreadable: {e})").into_bytes());
    Output {
        status,
        stdout,
        stderr,
    }
}
