//! `streamwire bench latency` in smoke mode (few samples, few sizes): every transport
//! runs, the CSV is in the reference format, the table names what was not measured.
//! Asserts the shape of the output, never a time.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_streamwire");

#[test]
fn smoke_run_writes_well_formed_csv() {
    let before = streamwire_testdata::shm::zenoh_files();
    let mut child = Command::new(BIN)
        .args([
            "bench",
            "latency",
            "--samples",
            "30",
            "--sizes",
            "0,4096,65536",
            "--chain-sizes",
            "64",
        ])
        .env("BENCH_CSV", "1")
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + Duration::from_secs(240);
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bench latency did not end within 240 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let mut latency = BTreeSet::new();
    let mut throughput = BTreeSet::new();
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), 11, "not 11 fields: {line}");
        let bytes: usize = fields[1].parse().unwrap_or_else(|_| panic!("{line}"));
        let label = fields[2].to_owned();
        let n: u64 = fields[3].parse().unwrap_or_else(|_| panic!("{line}"));
        match fields[0] {
            "latency" => {
                let ns: Vec<u64> = fields[4..]
                    .iter()
                    .map(|f| f.parse().unwrap_or_else(|_| panic!("{line}")))
                    .collect();
                let [avg, p50, p95, p99, p999, min, max] = ns[..] else {
                    panic!("{line}");
                };
                assert_eq!(n, 30, "{line}");
                assert!(min <= p50 && p50 <= p95 && p95 <= p99, "{line}");
                assert!(p99 <= p999 && p999 <= max, "{line}");
                assert!(min <= avg && avg <= max, "{line}");
                latency.insert((label, bytes));
            }
            "throughput" => {
                let rate: f64 = fields[4].parse().unwrap_or_else(|_| panic!("{line}"));
                let elapsed: u64 = fields[5].parse().unwrap_or_else(|_| panic!("{line}"));
                assert!(rate > 0.0 && elapsed > 0, "{line}");
                assert!(fields[6..].iter().all(|f| *f == "0"), "{line}");
                throughput.insert((label, bytes));
            }
            other => panic!("unknown row kind {other}: {line}"),
        }
    }
    for label in [
        "in-process",
        "bare-channel",
        "loopback",
        "zenoh",
        "zenoh-insecure",
        "bare-zenoh-fifo",
        "bare-zenoh-callback",
        "zenoh-direct",
        "zenoh-shm-direct",
        "zenoh-shm",
        "zenoh-shm-insecure",
        "bare-zenoh-shm-fifo",
        "bare-zenoh-shm-loan",
    ] {
        for bytes in [0, 4096, 65536] {
            assert!(
                latency.contains(&(label.to_owned(), bytes)),
                "no latency row {label} {bytes}:\n{stdout}"
            );
        }
    }
    for label in ["chain16-in-process", "chain16-zenoh"] {
        assert!(latency.contains(&(label.to_owned(), 64)), "{stdout}");
    }
    for label in [
        "in-process",
        "loopback",
        "zenoh",
        "zenoh-insecure",
        "bare-zenoh-fifo",
        "zenoh-direct",
        "zenoh-shm",
        "zenoh-shm-insecure",
        "bare-zenoh-shm-fifo",
        "bare-zenoh-shm-loan",
    ] {
        assert!(
            throughput.contains(&(label.to_owned(), 65536)),
            "no throughput row {label}:\n{stdout}"
        );
    }
    // The table for people went to stderr, with the ratios and its notes.
    for ratio in [
        "p50 zenoh-insecure / bare zenoh (FIFO + recv thread), both tcp:",
        "p50 zenoh-shm-insecure / bare zenoh shm loan, both tcp+shm:",
        "p50 zenoh / zenoh-insecure (tls / tcp):",
        "p50 zenoh-shm / zenoh (tls+shm / tls):",
        "msg/s zenoh-shm-insecure / bare zenoh shm loan, both tcp+shm:",
    ] {
        assert!(stderr.contains(ratio), "no {ratio}\n{stderr}");
    }
    // Every row names its link: the workers' closed run is TLS, the bare rows TCP.
    let link_of = |label: &str| {
        stderr
            .lines()
            .find_map(|l| {
                let cells: Vec<&str> = l.split_whitespace().collect();
                let at = cells.iter().position(|c| *c == label)?;
                cells.get(at + 1).map(|c| (*c).to_owned())
            })
            .unwrap_or_default()
    };
    for (label, link) in [
        ("zenoh", "tls"),
        ("zenoh-insecure", "tcp"),
        ("zenoh-shm", "tls+shm"),
        ("zenoh-shm-insecure", "tcp+shm"),
        ("bare-zenoh-shm-loan", "tcp+shm"),
        ("zenoh-direct", "tcp"),
    ] {
        assert_eq!(link_of(label), link, "{label}:\n{stderr}");
    }
    assert!(
        stderr.contains("zenoh-shm: zenoh's shared memory on at both ends"),
        "{stderr}"
    );
    // The peers' shared-memory segments were removed by the suite; its own are removed
    // now that it has ended.
    streamwire_zenoh::remove_orphaned_shared_memory();
    let left: Vec<String> = streamwire_testdata::shm::left_since(&before);
    assert!(left.is_empty(), "left in /dev/shm: {left:?}");
}
