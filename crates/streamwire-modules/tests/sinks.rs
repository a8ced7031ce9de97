//! The sinks: recordings complete after a stop and parseable after a kill, the busy
//! sink's work scaling with N, the byte consumer's checks.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use streamwire::msgs::{CompressedImage, Jpeg};
use streamwire::prelude::*;
use streamwire_modules::sinks::{BusySink, ByteConsumer, RecordingSink, read_records};

#[expect(clippy::unwrap_used, reason = "test helper")]
fn image(value: u8, stamp_ms: u64) -> Image {
    Image::from_packed(64, 48, ImageEncoding::Rgb8, vec![value; 64 * 48 * 3])
        .unwrap()
        .with_stamp(Timestamp::from_nanos(stamp_ms * 1_000_000))
}

#[test]
fn a_recording_is_complete_after_a_stop() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/rec.jsonl");
    let mut harness = Harness::new(RecordingSink {
        path: Some(path.clone()),
        ..RecordingSink::default()
    });
    let ports = harness.ports();
    harness.start().unwrap();
    for i in 0..5u64 {
        harness.feed(ports.frames, image(i as u8, 100 + i)).unwrap();
        harness.clock().advance(Duration::from_millis(3));
        harness.run_until_idle().unwrap();
    }
    harness.stop().unwrap();
    let records = read_records(&path).unwrap();
    assert_eq!(records.len(), 5);
    for (i, r) in records.iter().enumerate() {
        let i = i as u64;
        assert_eq!(r.seq, i);
        assert_eq!(r.stream, "color_image");
        assert_eq!(r.instance, "RecordingSink");
        assert_eq!(r.stamp_ns, (100 + i) * 1_000_000);
        assert_eq!(r.bytes, 64 * 48 * 3);
        assert_eq!(
            r.arrival_ns - r.publish_ns,
            3_000_000,
            "latency on the manual clock"
        );
        assert_eq!(r.passes, None);
    }
}

#[test]
fn the_reader_skips_a_partial_last_line_and_refuses_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.jsonl");
    let mut harness = Harness::new(RecordingSink {
        path: Some(path.clone()),
        ..RecordingSink::default()
    });
    let ports = harness.ports();
    for i in 0..3 {
        // One at a time: the input keeps the newest frame only.
        harness.feed(ports.frames, image(i, 1)).unwrap();
        harness.run_until_idle().unwrap();
    }
    harness.stop().unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(br#"{"instance":"x","stream":"col"#).unwrap();
    drop(file);
    assert_eq!(
        read_records(&path).unwrap().len(),
        3,
        "partial last line skipped"
    );
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.insert_str(0, "not json\n");
    std::fs::write(&path, text).unwrap();
    assert!(
        read_records(&path).is_err(),
        "a complete bad line is an error"
    );
}

/// Child side of the kill test: records forever (until killed) into the file named by
/// `STREAMWIRE_RECORD_CHILD`; does nothing when run as an ordinary test.
#[test]
#[ignore = "run by a_killed_run_leaves_a_parseable_recording"]
fn child_records_until_killed() {
    let Some(path) = std::env::var_os("STREAMWIRE_RECORD_CHILD") else {
        return;
    };
    let mut harness = Harness::new(RecordingSink {
        path: Some(path.into()),
        ..RecordingSink::default()
    });
    let ports = harness.ports();
    let started = Instant::now();
    let mut i = 0u64;
    // Bounded even if nobody kills it.
    while started.elapsed() < Duration::from_secs(60) {
        harness.feed(ports.frames, image(1, i)).unwrap();
        harness.clock().advance(Duration::from_millis(1));
        harness.run_until_idle().unwrap();
        i += 1;
    }
}

fn complete_lines(path: &Path) -> usize {
    std::fs::read(path)
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .unwrap_or(0)
}

#[test]
fn a_killed_run_leaves_a_parseable_recording() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.jsonl");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_records_until_killed",
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .env("STREAMWIRE_RECORD_CHILD", &path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while complete_lines(&path) < 200 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let records = read_records(&path).unwrap();
    assert!(records.len() >= 200, "{} records", records.len());
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.seq, i as u64, "no gap before the kill");
    }
}

#[test]
fn the_busy_sinks_passes_scale_with_its_cpu_budget() {
    let frame = image(7, 0);
    let passes = |work_ms: f64| {
        let mut sink = BusySink {
            work_ms,
            ..BusySink::default()
        };
        let mut v: Vec<u64> = (0..7).map(|_| sink.work(&frame, || false)).collect();
        v.sort();
        v[3]
    };
    let (p1, p5, p20) = (passes(1.0), passes(5.0), passes(20.0));
    assert!(p1 >= 1, "{p1}");
    // CPU time, not wall time: roughly proportional on any machine.
    assert!(p5 as f64 >= 2.5 * p1 as f64, "{p1} {p5}");
    assert!(p20 as f64 >= 2.5 * p5 as f64, "{p5} {p20}");
    assert_eq!(passes(0.0), 0);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy.jsonl");
    let mut harness = Harness::new(BusySink {
        work_ms: 1.0,
        path: Some(path.clone()),
        ..BusySink::default()
    });
    let ports = harness.ports();
    harness.feed(ports.frames, frame).unwrap();
    harness.run_until_idle().unwrap();
    harness.stop().unwrap();
    let records = read_records(&path).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].passes, Some(harness.counter("passes")));
    assert_eq!(harness.module().last_passes, harness.counter("passes"));
}

#[test]
fn the_byte_consumer_keeps_bytes_and_counts_what_does_not_decode() {
    let mut harness = Harness::new(ByteConsumer {
        keep: 2,
        ..ByteConsumer::default()
    });
    let ports = harness.ports();
    let jpeg = Jpeg::default();
    for i in 0..3 {
        let encoded = Codec::<Image>::encode(&jpeg, &image(i * 40, 0)).unwrap();
        harness.feed(ports.jpeg, encoded).unwrap();
        harness.run_until_idle().unwrap();
    }
    let bad =
        CompressedImage::new("rgb8; jpeg compressed bgr8", vec![0xFF, 0xD8, 1, 2], 64, 48).unwrap();
    harness.feed(ports.jpeg, bad).unwrap();
    harness.run_until_idle().unwrap();
    assert_eq!(harness.counter("frames"), 4);
    assert_eq!(harness.counter("decoded"), 3);
    assert_eq!(harness.counter("decode_failed"), 1);
    assert_eq!(harness.module().kept.len(), 2, "keeps the newest `keep`");
}
