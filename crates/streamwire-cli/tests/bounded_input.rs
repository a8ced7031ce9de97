//! A blueprint file is read only when it is a regular file under the limit: `check
//! /dev/zero` and a FIFO are refused without a byte of them read.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use streamwire_cli::Cli;

/// `check FILE` in this thread: its exit status, and the bytes this thread read meanwhile
/// (Linux's per-thread count of `read` calls; 0 elsewhere).
#[expect(clippy::unwrap_used, reason = "test helper")]
fn check(file: &str, env: &[(&str, &str)]) -> (String, u64) {
    let cli = Cli::new("streamwire", "test");
    let stop = Arc::new(AtomicBool::new(false));
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let before = streamwire_core::input::thread_bytes_read().unwrap_or(0);
    let code = cli
        .run_args(["streamwire", "check", file], env, &stop)
        .unwrap();
    let read = streamwire_core::input::thread_bytes_read().unwrap_or(0) - before;
    (format!("{code:?}"), read)
}

/// `/dev/zero` (which `check` read until memory ran out) is refused and none of it read:
/// the limit is 4 MiB, and this thread read less than 64 KiB in all (the argument parsing
/// and the /proc counter itself).
#[cfg(target_os = "linux")]
#[test]
fn check_dev_zero_reads_none_of_it() {
    let (code, read) = check("/dev/zero", &[]);
    assert_eq!(code, format!("{:?}", std::process::ExitCode::FAILURE));
    assert!(read < 64 << 10, "{read} bytes read");
}

/// A FIFO named as the blueprint is refused without being opened: the bytes its writer
/// put in are all still there (a read would have taken them; an open would have waited).
#[cfg(target_os = "linux")]
#[test]
fn a_fifo_blueprint_is_refused_unread() {
    let dir = std::env::temp_dir().join(format!("streamwire-cli-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("blueprint.yaml");
    let mut held = streamwire_testdata::fifo::Fifo::holding(&fifo, b"instances: {}\n").unwrap();
    let (code, _) = check(&fifo.to_string_lossy(), &[]);
    assert_eq!(code, format!("{:?}", std::process::ExitCode::FAILURE));
    assert_eq!(held.left(), b"instances: {}\n", "check read from the FIFO");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The limit is a setting: a file over `STREAMWIRE_MAX_BLUEPRINT_BYTES` is refused before
/// it is read, one under it is read.
#[test]
fn the_limit_is_a_setting() {
    let dir = std::env::temp_dir().join(format!("streamwire-cli-limit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("empty.yaml");
    std::fs::write(&file, "instances: {}\n").unwrap();
    let path = file.to_string_lossy().into_owned();
    let (refused, read) = check(&path, &[("STREAMWIRE_MAX_BLUEPRINT_BYTES", "4")]);
    assert_eq!(refused, format!("{:?}", std::process::ExitCode::FAILURE));
    if cfg!(target_os = "linux") {
        assert!(read < 64 << 10, "{read} bytes read");
    }
    let (accepted, _) = check(&path, &[("STREAMWIRE_MAX_BLUEPRINT_BYTES", "1024")]);
    assert_eq!(accepted, format!("{:?}", std::process::ExitCode::SUCCESS));
    std::fs::remove_dir_all(&dir).unwrap();
}
