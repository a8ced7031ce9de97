//! The suite's iceoryx2 rows, a few samples of small sizes between this test and a peer
//! process: every round trip answered, every burst message acknowledged, and nothing of
//! the run left in /dev/shm or iceoryx2's folder. Asserts behaviour, never a time.

use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use streamwire_latency_bench::{Link, Options, Route, Suite, run, serve_peer};

/// The peer's arguments, when this test binary runs as the suite's peer process.
const PEER_ARGS: &str = "STREAMWIRE_TEST_BENCH_PEER";

/// Not a test of its own: the suite's peer process when [`PEER_ARGS`] is set (the suite
/// starts this binary again with it, filtered to this function), nothing otherwise.
#[test]
fn peer_process() {
    if let Ok(args) = std::env::var(PEER_ARGS) {
        let args: Vec<String> = args.split(' ').map(str::to_owned).collect();
        serve_peer(&args).unwrap_or_else(|e| panic!("the peer: {e}"));
    }
}

/// This test binary as the suite's peer: the arguments the suite appends reach it through
/// [`PEER_ARGS`] (the test harness would take them for its own).
fn peer() -> Command {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let mut command = Command::new("sh");
    command.args([
        "-c",
        &format!(
            "export {PEER_ARGS}=\"$*\"; exec \"$0\" peer_process --exact --nocapture --test-threads=1"
        ),
    ]);
    command.arg(exe);
    command
}

/// What iceoryx2 keeps of this process's runs: its /dev/shm files and its folders
/// (each row's prefix `iox2_sw<pid>` and its root folder `sw<pid>`, then the row's mark).
fn leftovers() -> Vec<String> {
    let run = format!("sw{}", std::process::id());
    let mut found = Vec::new();
    for (dir, prefix) in [
        ("/dev/shm", format!("iox2_{run}")),
        ("/tmp/iceoryx2", run.clone()),
    ] {
        if let Ok(entries) = std::fs::read_dir(dir) {
            found.extend(
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name.starts_with(&prefix))
                    .map(|name| format!("{dir}/{name}")),
            );
        }
    }
    found
}

fn run_rows(sizes: &[usize], samples: usize) -> Suite {
    let options = Options {
        samples,
        sizes: sizes.to_vec(),
        chain_sizes: Vec::new(),
        routes: vec![Route::Iceoryx2],
    };
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(run(&options, &peer, &mut |_| {}));
    });
    finished
        .recv_timeout(Duration::from_secs(180))
        .unwrap_or_else(|_| panic!("the iceoryx2 rows did not end within 180 s"))
        .unwrap_or_else(|e| panic!("the iceoryx2 rows: {e}"))
}

#[test]
fn every_sample_is_echoed_and_the_files_are_removed() {
    let sizes = [0, 64, 4096];
    let samples = 5;
    let suite = run_rows(&sizes, samples);
    for label in ["iceoryx2", "iceoryx2-busy"] {
        for size in sizes {
            let row = suite
                .rows
                .iter()
                .find(|r| r.label == label && r.size == size)
                .unwrap_or_else(|| panic!("no row {label} {size}:\n{suite}"));
            assert_eq!(row.link, Link::Shm, "{label}");
            let latency = row.latency.unwrap_or_else(|| panic!("{label} {size}"));
            assert_eq!((latency.n, latency.lost), (samples, 0), "{label} {size}");
            let throughput = row.throughput.unwrap_or_else(|| panic!("{label} {size}"));
            assert_eq!(
                (throughput.n, throughput.lost),
                (samples as u64, 0),
                "{label} {size}"
            );
        }
    }
    assert_eq!(leftovers(), Vec::<String>::new(), "iceoryx2 files left");
}
