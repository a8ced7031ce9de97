//! The report a person reads at the end of a run, with fixed numbers.

use std::time::Duration;

use streamwire_runtime::{
    CodecRole, CodecStats, DropCounts, EndReason, InputStats, InstanceStats, LatencySummary,
    LinkStats, OutputStats, RunReport, RunStats, TapStats,
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
    let mut detector = InstanceStats::default();
    detector.name = "detector".into();
    detector.module_type = "Detector".into();
    detector.steps = 38;
    detector.cpu = ms(120);
    detector.longest_step = ms(9);
    detector.stalled = true;
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
    stats.inputs = vec![input];
    let mut link = LinkStats::default();
    link.from = "camera.color_image".into();
    link.to = "encode jpeg color_image".into();
    link.stream = "color_image".into();
    link.messages = 40;
    link.content_bytes = 40 * 2_764_800;
    stats.links = vec![link];
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
    let report = RunReport::new(EndReason::Stopped, None, vec!["detector".into()], stats);
    insta::assert_snapshot!(report.to_string());
}
