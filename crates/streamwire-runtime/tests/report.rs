//! The report a person reads at the end of a run, with fixed numbers.

use std::time::Duration;

use streamwire_runtime::{
    BufferStats, CodecRole, CodecStats, DropCounts, EndReason, InputStats, InstanceStats,
    LatencySummary, LinkStats, OutputStats, RateStats, RunReport, RunStats, TapStats,
    WireDirection, WireStats, check_balance,
};

fn ms(n: u64) -> Duration {
    Duration::from_micros(n * 1000)
}

#[test]
fn the_final_report_reads_as_tables() {
    let mut stats = RunStats::default();
    stats.elapsed = ms(2013);
    let mut camera = InstanceStats::default();
    camera.name = "camera".into();
    camera.module_type = "TestPattern".into();
    camera.steps = 40;
    camera.cpu = ms(31);
    camera.longest_step = Duration::from_micros(2450);
    camera.finished = true;
    camera.process = "main".into();
    camera.host = "robot".into();
    let mut rate = RateStats::default();
    rate.configured_hz = 20.0;
    rate.reached_hz = 7.1;
    camera.rate = Some(rate);
    let mut detector = InstanceStats::default();
    detector.name = "detector".into();
    detector.module_type = "Detector".into();
    detector.steps = 38;
    detector.cpu = ms(120);
    detector.longest_step = ms(9);
    detector.stalled = true;
    detector.finished = true;
    detector.failed = true;
    detector.process = "perception".into();
    detector.host = "base_station".into();
    detector.counters = vec![("boxes".into(), 76)];
    stats.instances = vec![camera, detector];
    let mut output = OutputStats::default();
    output.port = "camera.color_image".into();
    output.stream = "color_image".into();
    output.published = 40;
    stats.outputs = vec![output];
    let mut input = InputStats::default();
    input.port = "detector.frames".into();
    input.stream = "color_image".into();
    input.delivered = 38;
    let mut dropped = DropCounts::default();
    dropped.queue_full = 1;
    dropped.decode_failed = 1;
    input.dropped = dropped;
    input.latency = LatencySummary {
        count: 38,
        p50: Duration::from_micros(8700),
        p99: ms(14),
        max: ms(15),
        clock_skew: 0,
    };
    let mut mapper = InputStats::default();
    mapper.port = "mapper.frames".into();
    mapper.stream = "color_image".into();
    mapper.delivered = 30;
    let mut dropped = DropCounts::default();
    dropped.codec_queue_full = 2;
    dropped.lost_on_wire = 1;
    mapper.dropped = dropped;
    mapper.unprocessed_at_stop = 5;
    mapper.in_flight_at_stop = 2;
    stats.inputs = vec![input, mapper];
    let mut link = LinkStats::default();
    link.from = "camera.color_image".into();
    link.to = "encode jpeg color_image".into();
    link.stream = "color_image".into();
    link.messages = 40;
    link.content_bytes = 40 * 2_764_800;
    let mut crossing = LinkStats::default();
    crossing.from = "encode jpeg color_image".into();
    crossing.to = "decode jpeg color_image @ base_station/perception".into();
    crossing.stream = "color_image/compressed".into();
    crossing.messages = 38;
    crossing.content_bytes = 38 * 42_500;
    crossing.crosses_processes = true;
    stats.links = vec![link, crossing];
    let mut encode = CodecStats::default();
    encode.role = CodecRole::Encode;
    encode.codec = "jpeg".into();
    encode.stream = "color_image".into();
    encode.placement = "robot/main".into();
    encode.done = 39;
    encode.skipped = 1;
    encode.bytes_in = 39 * 2_764_800;
    encode.bytes_out = 39 * 42_500;
    encode.busy = ms(39 * 7);
    stats.codecs = vec![encode];
    let mut tap = TapStats::default();
    tap.stream = "color_image/compressed".into();
    tap.delivered = 12;
    stats.taps = vec![tap];
    let mut sent = WireStats::default();
    sent.partition = "robot/main".into();
    sent.key = "color_image/compressed".into();
    sent.direction = WireDirection::Out;
    sent.frames = 38;
    sent.wire_bytes = 38 * 42_700;
    sent.unprocessed_at_stop = 1;
    let mut received = WireStats::default();
    received.partition = "base_station/perception".into();
    received.key = "color_image/compressed".into();
    received.direction = WireDirection::In;
    received.frames = 37;
    received.wire_bytes = 37 * 42_700;
    received.lost = 1;
    received.in_flight_at_stop = 2;
    received.receive_copies = 3;
    stats.wire = vec![sent, received];
    // The camera's loans: shared memory until its pool was full, then heap buffers of
    // its own pool; the process's pool of encoded images.
    let mut loans = BufferStats::default();
    loans.name = "camera.color_image".into();
    loans.shared = 36;
    loans.loan_fallback = 4;
    loans.hits = 3;
    loans.misses = 1;
    loans.bytes = 2_764_800;
    let mut encoded = BufferStats::default();
    encoded.name = "encoded images".into();
    encoded.hits = 37;
    encoded.misses = 2;
    encoded.bytes = 2 * 345_624;
    stats.buffers = vec![loans, encoded];
    let report = RunReport::new(EndReason::Stopped, None, vec!["detector".into()], stats);
    insta::assert_snapshot!(report.to_string());
}

/// The keep-all case of issue 25 as its report once read: 39 published, 9 delivered, 22
/// dropped, 8 on no counter. The check fails, naming the row and how many are missing.
#[test]
fn a_report_with_messages_on_no_counter_fails_the_balance_check() {
    let mut stats = RunStats::default();
    let mut output = OutputStats::default();
    output.port = "camera.color_image".into();
    output.stream = "color_image".into();
    output.published = 39;
    stats.outputs = vec![output];
    let mut input = InputStats::default();
    input.port = "detector.frames".into();
    input.stream = "color_image".into();
    input.delivered = 9;
    input.dropped.queue_full = 22;
    stats.inputs = vec![input.clone()];
    let report = RunReport::new(EndReason::Stopped, None, Vec::new(), stats.clone());
    let error = check_balance(&report).expect_err("8 messages are on no counter");
    insta::assert_snapshot!(error.to_string());

    // The same row with the 8 counted where they were at stop balances.
    input.unprocessed_at_stop = 8;
    stats.inputs = vec![input];
    let report = RunReport::new(EndReason::Stopped, None, Vec::new(), stats);
    let balanced = check_balance(&report).expect("balanced");
    assert_eq!(balanced.rows, 1);
    assert!(balanced.elsewhere.is_empty());
}

/// A worker's own report holds its consumers' rows but not the producer's: those rows are
/// listed as checked elsewhere (the merged report checks them), not as balanced.
#[test]
fn rows_whose_producer_reported_elsewhere_are_not_checked() {
    let mut stats = RunStats::default();
    let mut input = InputStats::default();
    input.port = "detector.frames".into();
    input.stream = "color_image".into();
    input.delivered = 9;
    stats.inputs = vec![input];
    let report = RunReport::new(EndReason::Finished, None, Vec::new(), stats);
    let balanced = check_balance(&report).expect("nothing to check here");
    assert_eq!(balanced.rows, 0);
    assert_eq!(balanced.elsewhere, ["detector.frames"]);
}
