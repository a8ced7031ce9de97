//! Whole runs: blueprints started, watched, tapped and stopped. Every assertion is on a
//! count or a reason; waits have generous guards only.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test failing"
)]

mod common;

use std::time::{Duration, Instant};

use common::{
    ByteSink, Camera, GUARD, MjpegCamera, Recorder, Viewer, balanced, input, jpeg_frames,
    wait_until,
};
use streamwire_core::{Context, In, Node, NodeResult, Out, Timestamp, Trigger};
use streamwire_graph::{AutoTable, Blueprint, Locality, Placement, WireFormat};
use streamwire_macros::Module;
use streamwire_msgs::{CompressedImage, Image};
use streamwire_runtime::{
    EndReason, RunHandle, RunOptions, RunStats, Runtime, StartError, WireDirection,
};

fn start(blueprint: Blueprint) -> RunHandle {
    Runtime::start(blueprint.into_runnable().unwrap(), RunOptions::default()).unwrap()
}

fn codec<'a>(stats: &'a RunStats, role: &str, stream: &str) -> &'a streamwire_runtime::CodecStats {
    stats
        .codecs
        .iter()
        .find(|c| c.role.to_string() == role && c.stream == stream && c.codec == "jpeg")
        .unwrap_or_else(|| panic!("no {role} of {stream} in {stats}"))
}

#[test]
fn a_finite_source_ends_the_run_with_finished() {
    let mut bp = Blueprint::new();
    bp.add("camera", Camera::new(5, Duration::from_millis(1)));
    bp.add("viewer", Viewer::new());
    bp.autoconnect();
    let report = balanced(start(bp).wait_timeout(GUARD));
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    assert!(report.stragglers.is_empty());
    let viewer = input(&report.stats, "viewer.frames");
    // Keep-last queues may drop under load; every frame is either delivered or counted.
    assert_eq!(viewer.delivered + viewer.dropped.queue_full, 5, "{report}");
    // The histogram counts every delivery.
    assert_eq!(viewer.latency.count, viewer.delivered);
    assert_eq!(report.stats.outputs[0].published, 5);
    assert!(report.stats.instances.iter().all(|i| i.finished));
}

#[test]
fn a_slow_consumer_does_not_reduce_what_a_fast_one_receives() {
    #[derive(Module)]
    #[module(crate = streamwire_core)]
    struct FastViewer {
        #[port(name = "color_image", keep_all)]
        frames: In<Image>,
    }
    impl Node for FastViewer {
        fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
            while self.frames.recv()?.is_some() {
                cx.counter("seen").increment();
            }
            Ok(())
        }
    }

    let frames = 200;
    let mut bp = Blueprint::new();
    bp.add("camera", Camera::new(frames, Duration::from_millis(1)));
    bp.add("fast", FastViewer { frames: In::new() });
    let mut slow = Viewer::new();
    slow.work = Duration::from_millis(10);
    bp.add("slow", slow);
    bp.autoconnect();
    // The fast consumer is keep-all; a generous deadline keeps a loaded test machine
    // (a consumer thread not scheduled for 100 ms) from turning into drops: the test is
    // about keep-last isolation, not the deadline.
    let options = RunOptions {
        keep_all_deadline: GUARD,
        ..RunOptions::default()
    };
    let report = balanced(
        Runtime::start(bp.into_runnable().unwrap(), options)
            .unwrap()
            .wait_timeout(GUARD),
    );
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    let fast = input(&report.stats, "fast.frames");
    let slow = input(&report.stats, "slow.frames");
    assert_eq!(fast.delivered, u64::from(frames), "{report}");
    assert_eq!(fast.dropped.total(), 0);
    // The slow one (keep-last 10, 10x slower than the camera) drops, and counts it.
    assert_eq!(slow.delivered + slow.dropped.queue_full, u64::from(frames));
    assert!(slow.dropped.queue_full > 0, "{report}");
}

#[test]
fn encode_once_for_three_pixel_consumers_and_one_byte_consumer() {
    let frames = 20;
    let mut bp = Blueprint::new();
    bp.add("camera", Camera::new(frames, Duration::from_millis(2)));
    // One pixel consumer in the camera's process (zero-copy, no codec), two in `ui`
    // (one decode shared), and a recorder that wants the bytes in `web`.
    bp.add("local", Viewer::new());
    let a = bp.add("ui_a", Viewer::new());
    let b = bp.add("ui_b", Viewer::new());
    let recorder = bp.add("recorder", Recorder::new());
    bp.place(&a, Placement::process("ui"));
    bp.place(&b, Placement::process("ui"));
    bp.place(&recorder, Placement::process("web"));
    // The compressed wire between processes of one host is what this test exercises.
    bp.auto_table(AutoTable::default().with(Locality::SameHost, WireFormat::Compressed));
    bp.autoconnect();
    let plan = bp.build().unwrap();
    assert_eq!(plan.codec_nodes().count(), 2, "{plan}");

    let report = balanced(start(bp).wait_timeout(GUARD));
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    let encode = codec(&report.stats, "encode", "color_image");
    let decode = codec(&report.stats, "decode", "color_image");
    // Every frame was encoded exactly once, or shed by the encoder's keep-last queue under
    // load and counted as dropped: never encoded twice, never lost unseen.
    assert!(encode.done > 0, "{report}");
    assert_eq!(encode.done + encode.dropped, u64::from(frames), "{report}");
    assert_eq!(encode.skipped, 0);
    let recorded = report
        .stats
        .instances
        .iter()
        .find(|i| i.name == "recorder")
        .and_then(|i| i.counters.iter().find(|(k, _)| k == "recorded"))
        .map_or(0, |(_, v)| *v);
    // The bytes leave the camera's partition through one keep-last sender, which may shed a
    // frame under load (counted in the wire table) before either other partition sees it.
    let sent = encode.done
        - report
            .stats
            .wire
            .iter()
            .find(|w| {
                w.direction == WireDirection::Out
                    && w.partition.ends_with("main")
                    && w.key == "color_image/compressed"
            })
            .map_or(0, |w| w.sender_dropped);
    let recorder_in = input(&report.stats, "recorder.jpeg");
    assert_eq!(recorded, recorder_in.delivered);
    assert_eq!(
        recorder_in.delivered + recorder_in.dropped.queue_full,
        sent,
        "{report}"
    );
    // One decoder for both `ui` consumers: it decoded what it got once.
    assert_eq!(decode.done + decode.dropped, sent, "{report}");
    for port in ["ui_a.frames", "ui_b.frames"] {
        let i = input(&report.stats, port);
        assert_eq!(
            i.delivered + i.dropped.queue_full,
            decode.done,
            "{port}: {report}"
        );
    }
    let local = input(&report.stats, "local.frames");
    assert_eq!(
        local.delivered + local.dropped.queue_full,
        u64::from(frames)
    );
}

#[test]
fn a_tap_drives_encoding_detaching_stops_it_and_reattaching_resumes() {
    // No byte consumer in the plan: the camera's bytes exist only for taps.
    let mut bp = Blueprint::new();
    bp.add("camera", Camera::new(u32::MAX, Duration::from_millis(2)));
    bp.add("viewer", Viewer::new());
    bp.autoconnect();
    let handle = start(bp);
    let encoded = |s: &RunStats| codec(s, "encode", "color_image").done;
    let skipped = |s: &RunStats| codec(s, "encode", "color_image").skipped;

    // Nobody listens: frames are skipped, none encoded.
    let stats = wait_until(&handle, |s| skipped(s) >= 3);
    assert!(skipped(&stats) >= 3, "{stats}");
    assert_eq!(encoded(&stats), 0, "{stats}");

    // A tap by the stream's name, asking for the bytes.
    let tap = handle.tap::<CompressedImage>("color_image").unwrap();
    let first = tap
        .recv_timeout(GUARD)
        .expect("the tap receives encoded frames");
    assert!(first.message.format().contains("jpeg"));
    let stats = wait_until(&handle, |s| encoded(s) >= 3);
    assert!(encoded(&stats) >= 3);

    // Detached: encoding stops, skipped frames are counted.
    drop(tap);
    let at_detach = handle.stats();
    let stats = wait_until(&handle, |s| skipped(s) >= skipped(&at_detach) + 3);
    assert!(skipped(&stats) >= skipped(&at_detach) + 3, "{stats}");
    // At most the frame in flight at the detach was encoded after it.
    assert!(encoded(&stats) <= encoded(&at_detach) + 1, "{stats}");

    // Re-attached by the encoded name: encoding resumes.
    let tap = handle
        .tap::<CompressedImage>("color_image/compressed")
        .unwrap();
    assert!(tap.recv_timeout(GUARD).is_some());
    assert!(handle.stats().taps.iter().any(|t| t.attached));
    drop(tap);
    let report = balanced(handle.wait_timeout(Duration::ZERO));
    assert_eq!(report.reason, EndReason::Stopped);
}

#[test]
fn a_tap_receives_pixels_by_name_and_wrong_names_are_clear_errors() {
    let mut bp = Blueprint::new();
    bp.add("camera", Camera::new(u32::MAX, Duration::from_millis(2)));
    bp.add("viewer", Viewer::new());
    bp.autoconnect();
    let handle = start(bp);
    let tap = handle.tap::<Image>("color_image").unwrap();
    let frame = tap.recv_timeout(GUARD).unwrap();
    assert_eq!(frame.message.width(), 32);
    let any = handle.tap_any("color_image").unwrap();
    assert!(any.recv_timeout(GUARD).is_some());

    let unknown = handle.tap::<Image>("colour_image").unwrap_err().to_string();
    assert!(unknown.contains("no stream `colour_image`"), "{unknown}");
    assert!(unknown.contains("color_image"), "{unknown}");
    let wrong = handle
        .tap::<streamwire_msgs::Odometry>("color_image")
        .unwrap_err()
        .to_string();
    assert!(wrong.contains("carries"), "{wrong}");

    // Read mid-run: the taps show, attached.
    let stats = handle.stats();
    assert_eq!(
        stats.taps.iter().filter(|t| t.attached).count(),
        2,
        "{stats}"
    );
    assert!(stats.outputs[0].published > 0);
    drop((tap, any));
    let report = balanced(handle.wait_timeout(Duration::ZERO));
    assert_eq!(report.stats.taps.iter().filter(|t| t.attached).count(), 0);
}

#[test]
fn ready_made_bytes_pass_through_unchanged_and_pixels_get_one_decode() {
    let frames = jpeg_frames(6);
    let sent: Vec<Vec<u8>> = frames.iter().map(|f| f.data().to_vec()).collect();
    let received = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    let mut bp = Blueprint::new();
    bp.add("camera", MjpegCamera::new(frames));
    let mut viewer = Viewer::new();
    viewer.frames = In::new();
    bp.add("viewer", viewer);
    let sink = bp.add(
        "sink",
        ByteSink {
            jpeg: In::new(),
            received: received.clone(),
        },
    );
    bp.place(&sink, Placement::process("web"));
    // A keep-all byte sink fed across processes by a best-effort camera: the loopback
    // loses nothing, so the lossy-path check is let through.
    bp.lossy_path(streamwire_graph::Report::Warn);
    bp.autoconnect();
    let report = balanced(start(bp).wait_timeout(GUARD));
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    let encode = codec(&report.stats, "encode", "color_image");
    assert_eq!(encode.done, 0, "nothing is re-encoded: {report}");
    assert_eq!(encode.passed_through, 6);
    assert_eq!(encode.dropped, 0);
    assert_eq!(*received.lock(), sent, "byte-identical");
    let ready_made = report
        .stats
        .codecs
        .iter()
        .find(|c| c.codec == "ready-made")
        .unwrap();
    let viewer = input(&report.stats, "viewer.frames");
    assert_eq!(viewer.delivered + viewer.dropped.queue_full, 6);
    // The pixel consumer keeps the last frame: one decode per frame it takes, none for a
    // frame its queue replaced while still encoded (decode on demand).
    assert_eq!(
        ready_made.done, viewer.delivered,
        "one decode per frame the pixel consumer takes: {report}"
    );
    assert_eq!(ready_made.done + ready_made.skipped, 6, "{report}");
}

#[test]
fn a_corrupt_frame_is_counted_and_skipped_and_the_stream_goes_on() {
    let mut frames = jpeg_frames(5);
    let good = frames[2].clone();
    let mut bytes = good.data().to_vec();
    let cut = bytes.len() / 3;
    bytes.truncate(cut);
    frames[2] = CompressedImage::new(good.format(), bytes, 32, 16).unwrap();
    let mut bp = Blueprint::new();
    bp.add("camera", MjpegCamera::new(frames));
    let viewer = bp.add("viewer", Viewer::new());
    bp.place(&viewer, Placement::process("ui"));
    // And one in the camera's process: it gets the ready-made bytes decoded on publish
    // (it keeps all: a keep-last consumer decodes on demand, and a corrupt frame its
    // queue replaced while still encoded is never met; `tests/on_demand.rs`).
    bp.add("local", KeepAllViewer { frames: In::new() });
    // The compressed wire between processes of one host is what this test exercises.
    bp.auto_table(AutoTable::default().with(Locality::SameHost, WireFormat::Compressed));
    bp.autoconnect();
    let report = balanced(start(bp).wait_timeout(GUARD));
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    let local = input(&report.stats, "local.frames");
    assert_eq!(local.dropped.decode_failed, 1, "{report}");
    assert_eq!(local.dropped.deserialize_failed, 0, "{report}");
    assert_eq!(local.delivered + local.dropped.queue_full, 4, "{report}");
    let decode = codec(&report.stats, "decode", "color_image");
    assert_eq!(decode.failed, 1, "{report}");
    assert_eq!(decode.done, 4);
    assert_eq!(decode.dropped, 0);
    let viewer = input(&report.stats, "viewer.frames");
    assert_eq!(viewer.dropped.decode_failed, 1);
    assert_eq!(viewer.delivered + viewer.dropped.queue_full, 4);
}

/// A pixel consumer that keeps all its input.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct KeepAllViewer {
    #[port(name = "color_image", keep_all)]
    frames: In<Image>,
}

impl Node for KeepAllViewer {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while self.frames.recv()?.is_some() {}
        Ok(())
    }
}

#[derive(Module)]
#[module(crate = streamwire_core)]
struct Fragile {
    #[port(name = "color_image")]
    frames: In<Image>,
}

impl Node for Fragile {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        if let Some(frame) = self.frames.recv()?
            && frame.header.seq == 2
        {
            panic!("cannot handle frame {}", frame.header.seq);
        }
        Ok(())
    }
}

#[test]
fn a_panicking_module_is_reported_by_name_and_the_run_stops_cleanly() {
    let mut bp = Blueprint::new();
    bp.add("camera", Camera::new(u32::MAX, Duration::from_millis(1)));
    bp.add("fragile", Fragile { frames: In::new() });
    bp.add("viewer", Viewer::new());
    bp.autoconnect();
    let report = balanced(start(bp).wait_timeout(GUARD));
    assert_eq!(report.reason, EndReason::Failed, "{report}");
    let failure = report.failure.clone().unwrap();
    assert!(
        failure.contains(
            "instance `fragile` (Fragile) failed in step: panicked: cannot handle frame 2"
        ),
        "{failure}"
    );
    assert!(report.stragglers.is_empty(), "{report}");
    assert!(
        report.stats.instances.iter().all(|i| i.finished),
        "{report}"
    );
}

/// Fails in every step from frame `fail_from` on, counting its starts and stops; says
/// one line when it starts.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Flaky {
    #[port(name = "color_image")]
    frames: In<Image>,
    #[state]
    starts: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

impl Node for Flaky {
    fn start(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let n = 1 + self
            .starts
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        cx.announce(&format!("flaky: start {n}"));
        Ok(())
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        if let Some(frame) = self.frames.recv()? {
            return Err(format!("cannot handle frame {}", frame.header.seq).into());
        }
        Ok(())
    }
}

/// `supervision: restart:2`: a failed instance is restarted in place twice (its `stop`,
/// then its `start` again), and its third failure ends the run, as the coordinator does
/// for workers; what it announces on each start is the runner's to print.
#[test]
fn restart_supervision_restarts_a_failed_instance_then_its_failure_ends_the_run() {
    let starts = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut bp = Blueprint::new();
    bp.add("camera", Camera::new(u32::MAX, Duration::from_millis(1)));
    bp.add(
        "flaky",
        Flaky {
            frames: In::new(),
            starts: starts.clone(),
        },
    );
    bp.supervision("restart:2".parse().unwrap());
    bp.autoconnect();
    let mut handle = start(bp);
    let began = Instant::now();
    while handle.poll_end().is_none() {
        assert!(began.elapsed() < GUARD, "the run did not end by itself");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        handle.take_notices(),
        ["flaky: start 1", "flaky: start 2", "flaky: start 3"]
    );
    let report = handle.wait();
    assert_eq!(report.reason, EndReason::Failed, "{report}");
    assert_eq!(starts.load(std::sync::atomic::Ordering::SeqCst), 3);
    let failure = report.failure.clone().unwrap();
    assert!(
        failure.contains("instance `flaky` (Flaky) failed in step: returned an error"),
        "{failure}"
    );
}

/// With `stop` (the default) the first failure ends the run: no restart.
#[test]
fn stop_supervision_ends_the_run_at_the_first_failure() {
    let starts = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut bp = Blueprint::new();
    bp.add("camera", Camera::new(u32::MAX, Duration::from_millis(1)));
    bp.add(
        "flaky",
        Flaky {
            frames: In::new(),
            starts: starts.clone(),
        },
    );
    bp.autoconnect();
    let report = start(bp).wait_timeout(GUARD);
    assert_eq!(report.reason, EndReason::Failed, "{report}");
    assert_eq!(starts.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// A run held at its start gate (a distributed worker waiting for the others) has run
/// for no time yet: its time counts from the gate's opening.
#[test]
fn a_runs_time_counts_from_its_start_gate() {
    let gate = streamwire_runtime::StartGate::closed();
    let mut bp = Blueprint::new();
    bp.add("camera", Camera::new(u32::MAX, Duration::from_millis(1)));
    bp.add("viewer", Viewer::new());
    bp.autoconnect();
    let handle = Runtime::start(
        bp.into_runnable().unwrap(),
        RunOptions {
            start_gate: Some(gate.clone()),
            ..RunOptions::default()
        },
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(handle.stats().elapsed, Duration::ZERO);
    gate.open();
    wait_until(&handle, |stats| stats.elapsed > Duration::ZERO);
    handle.stop();
    drop(handle.wait());
}

/// Ignores the stop: one step that blocks far longer than the stop deadline.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Stubborn {
    #[port(name = "color_image")]
    frames: In<Image>,
}

impl Node for Stubborn {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        let _ = self.frames.recv()?;
        std::thread::sleep(Duration::from_secs(3));
        Ok(())
    }
}

#[test]
fn stop_under_overload_joins_the_rest_and_names_the_straggler() {
    let mut bp = Blueprint::new();
    // A source at full rate, a consumer 10x too slow for it, and one that ignores stop.
    bp.add("camera", Camera::new(u32::MAX, Duration::ZERO));
    let mut slow = Viewer::new();
    slow.work = Duration::from_millis(1);
    bp.add("slow", slow);
    bp.add("stubborn", Stubborn { frames: In::new() });
    bp.autoconnect();
    let options = RunOptions {
        stop_deadline: Duration::from_millis(300),
        stall_after: Duration::from_millis(100),
        ..RunOptions::default()
    };
    let handle = Runtime::start(bp.into_runnable().unwrap(), options).unwrap();
    let stats = wait_until(&handle, |s| {
        s.instances
            .iter()
            .any(|i| i.name == "stubborn" && i.stalled)
    });
    assert!(
        stats
            .instances
            .iter()
            .any(|i| i.name == "stubborn" && i.stalled),
        "{stats}"
    );
    handle.stop();
    let report = balanced(handle.wait());
    assert_eq!(report.reason, EndReason::Stopped);
    assert_eq!(report.stragglers, ["stubborn"], "{report}");
    let slow = input(&report.stats, "slow.frames");
    assert!(
        slow.dropped.queue_full > 0,
        "overloaded, and counted: {report}"
    );
}

/// The guide's drain loop on a keep-all input fed faster than it works: 300 ms a
/// message, so a full queue (the default depth, 10) takes longer to drain than the
/// default stop deadline (2 s).
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Drainer {
    #[port(name = "color_image", keep_all)]
    frames: In<Image>,
}

impl Node for Drainer {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while let Some(_frame) = self.frames.recv()? {
            cx.counter("seen").increment();
            std::thread::sleep(Duration::from_millis(300));
        }
        Ok(())
    }
}

#[test]
fn a_keep_all_drain_loop_ends_by_itself_when_the_run_stops() {
    let mut bp = Blueprint::new();
    bp.add("camera", Camera::new(u32::MAX, Duration::ZERO));
    bp.add("drainer", Drainer { frames: In::new() });
    bp.autoconnect();
    // The default stop deadline: the loop must end on its own, not be outwaited.
    let handle = start(bp);
    let stats = wait_until(&handle, |s| {
        s.counter("drainer", "seen") >= 2 && input(s, "drainer.frames").unprocessed_at_stop >= 9
    });
    assert!(stats.counter("drainer", "seen") >= 2, "{stats}");
    handle.stop();
    let report = balanced(handle.wait());
    assert_eq!(report.reason, EndReason::Stopped, "{report}");
    assert!(report.stragglers.is_empty(), "{report}");
    assert_eq!(report.stop_overrun(), None);
    let drainer = report
        .stats
        .instances
        .iter()
        .find(|i| i.name == "drainer")
        .unwrap();
    assert!(drainer.finished && !drainer.failed, "{report}");
}

#[test]
fn a_module_without_behaviour_or_with_a_trigger_that_cannot_fire_does_not_start() {
    #[derive(Module)]
    #[module(crate = streamwire_core)]
    struct JustPorts {
        color_image: Out<Image>,
    }
    let mut bp = Blueprint::new();
    bp.add(
        "ports_only",
        JustPorts {
            color_image: Out::new(),
        },
    );
    let error = Runtime::start(bp.into_runnable().unwrap(), RunOptions::default()).unwrap_err();
    assert!(matches!(error, StartError::NoBehaviour { .. }));
    assert_eq!(
        error.to_string(),
        "instance `ports_only` (JustPorts) has no behaviour: implement `streamwire::Node` for `JustPorts` (its `step` is what runs)"
    );

    #[derive(Module)]
    #[module(crate = streamwire_core)]
    struct Silent {
        color_image: Out<Image>,
    }
    impl Node for Silent {
        fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
            Ok(())
        }
    }
    let mut bp = Blueprint::new();
    bp.add(
        "silent",
        Silent {
            color_image: Out::new(),
        },
    );
    let error = Runtime::start(bp.into_runnable().unwrap(), RunOptions::default()).unwrap_err();
    assert!(error.to_string().contains("Trigger::Period"), "{error}");
}

#[test]
fn codec_nodes_keep_the_producers_header_and_the_sensor_stamp() {
    let mut bp = Blueprint::new();
    bp.add("camera", Camera::new(u32::MAX, Duration::from_millis(2)));
    let viewer = bp.add("viewer", Viewer::new());
    bp.place(&viewer, Placement::process("ui"));
    bp.autoconnect();
    let handle = start(bp);
    let raw = handle.tap::<Image>("color_image").unwrap();
    let bytes = handle
        .tap::<CompressedImage>("color_image/compressed")
        .unwrap();
    let first_raw = raw.recv_timeout(GUARD).unwrap();
    // Find the same frame among the encoded ones: same seq, same publish time, same stamp.
    let began = Instant::now();
    let mut matched = None;
    while matched.is_none() && began.elapsed() < GUARD {
        if let Some(encoded) = bytes.recv_timeout(GUARD)
            && encoded.header.seq >= first_raw.header.seq
        {
            matched = Some(encoded);
        }
    }
    let encoded = matched.unwrap();
    let raw_again = std::iter::once(first_raw)
        .chain(std::iter::from_fn(|| raw.recv_timeout(GUARD)))
        .find(|r| r.header.seq == encoded.header.seq)
        .unwrap();
    assert_eq!(encoded.header, raw_again.header);
    assert_eq!(encoded.message.stamp(), raw_again.message.stamp());
    assert_ne!(encoded.message.stamp(), Timestamp::ZERO);
    drop((raw, bytes));
    handle.stop();
    balanced(handle.wait());
}

/// A module that taps its own run (what a web relay does): lists the streams in `start`,
/// taps the camera's bytes in its first step and counts what arrives.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct SelfTapper {
    #[state]
    listed: std::sync::Arc<parking_lot::Mutex<Vec<(String, &'static str)>>>,
    #[state]
    tap: Option<Box<dyn streamwire_core::StreamTap>>,
}

impl Node for SelfTapper {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(2))
    }

    fn start(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let taps = cx.taps().ok_or("a run offers taps")?;
        *self.listed.lock() = taps.streams();
        self.tap = Some(taps.tap("color_image", Some("streamwire/CompressedImage"))?);
        let unknown = taps
            .tap("nowhere", None)
            .err()
            .ok_or("an unknown stream fails")?;
        if !unknown.to_string().contains("no stream `nowhere`") {
            return Err(format!("unclear error: {unknown}").into());
        }
        Ok(())
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if let Some(tap) = &self.tap
            && let Some(envelope) = tap.recv_timeout(Duration::from_millis(1))
        {
            let bytes = envelope
                .message
                .downcast_ref::<CompressedImage>()
                .ok_or("the tap gives bytes")?;
            cx.counter("jpeg_frames").increment();
            cx.counter("jpeg_bytes").add(bytes.data().len() as u64);
        }
        Ok(())
    }
}

#[test]
fn a_module_taps_its_own_run_and_the_harness_offers_none() {
    let listed = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    let mut bp = Blueprint::new();
    bp.add("camera", Camera::new(u32::MAX, Duration::from_millis(2)));
    bp.add(
        "tapper",
        SelfTapper {
            listed: listed.clone(),
            tap: None,
        },
    );
    let handle = start(bp);
    let stats = wait_until(&handle, |s| {
        s.instances.iter().any(|i| {
            i.counters
                .iter()
                .any(|(n, v)| n == "jpeg_frames" && *v >= 3)
        })
    });
    let tapper = stats.instances.iter().find(|i| i.name == "tapper").unwrap();
    assert!(
        tapper
            .counters
            .iter()
            .any(|(n, v)| n == "jpeg_frames" && *v >= 3),
        "{stats}"
    );
    // Through the same code as the handle's taps: the module's tap is in the statistics.
    assert_eq!(
        stats.taps.iter().filter(|t| t.attached).count(),
        1,
        "{stats}"
    );
    let listed = listed.lock().clone();
    assert!(
        listed.contains(&("color_image".to_owned(), "streamwire/Image")),
        "{listed:?}"
    );
    assert!(
        listed
            .iter()
            .any(|(name, message)| name.starts_with("color_image/")
                && *message == "streamwire/CompressedImage"),
        "{listed:?}"
    );
    drop(handle);

    let mut harness = streamwire_runtime::Harness::new(SelfTapper {
        listed: Default::default(),
        tap: None,
    });
    let error = harness.start().unwrap_err().to_string();
    assert!(error.contains("a run offers taps"), "{error}");
}

/// What [`StopTapper`] saw of its tap once the run stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct AtStop {
    /// Messages its tap gave it, before and after the stop.
    received: u64,
    /// Whether the tap said it closed before the test's limit.
    closed: bool,
}

/// A module in another process than the camera's that taps the camera's pixels, and at
/// stop drains its tap until it says it closed (what a recorder does).
#[derive(Module)]
#[module(crate = streamwire_core)]
struct StopTapper {
    #[state]
    seen: std::sync::Arc<parking_lot::Mutex<AtStop>>,
    #[state]
    tap: Option<Box<dyn streamwire_core::StreamTap>>,
}

impl Node for StopTapper {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(2))
    }

    fn start(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let taps = cx.taps().ok_or("a run offers taps")?;
        self.tap = Some(taps.tap("color_image", None)?);
        Ok(())
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        if let Some(tap) = &self.tap
            && tap.recv_timeout(Duration::from_millis(1)).is_some()
        {
            self.seen.lock().received += 1;
        }
        Ok(())
    }

    fn stop(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        let Some(tap) = self.tap.take() else {
            return Ok(());
        };
        // Within the stop deadline (2 s): a tap that never closes fails the test.
        let limit = Instant::now() + Duration::from_secs(1);
        while Instant::now() < limit {
            if tap.recv_timeout(Duration::from_millis(1)).is_some() {
                self.seen.lock().received += 1;
            } else if tap.is_closed() {
                self.seen.lock().closed = true;
                break;
            }
        }
        Ok(())
    }
}

/// A tap of a stream from another process closes once the run stopped, its sender's stop
/// frame arrived (the sender sends a stop frame, not an end of stream, so the stream's hub
/// there never closes) and what it held was read (a tap's queue stays readable after the
/// stop, unlike a step's input): a recorder draining at stop knows when nothing more can
/// come.
#[test]
fn a_tap_from_another_process_closes_once_the_run_stopped() {
    let seen = std::sync::Arc::new(parking_lot::Mutex::new(AtStop::default()));
    let mut bp = Blueprint::new();
    bp.add("camera", Camera::new(u32::MAX, Duration::from_millis(2)));
    let tapper = bp.add(
        "tapper",
        StopTapper {
            seen: seen.clone(),
            tap: None,
        },
    );
    bp.place(&tapper, Placement::process("recorder"));
    let handle = start(bp);
    let began = Instant::now();
    while seen.lock().received < 3 && began.elapsed() < GUARD {
        std::thread::sleep(Duration::from_millis(5));
    }
    handle.stop();
    let report = handle.wait();
    let seen = *seen.lock();
    assert!(seen.received >= 3, "{seen:?}");
    assert!(seen.closed, "the tap never said it closed: {seen:?}");
    assert!(report.stragglers.is_empty(), "{:?}", report.stragglers);
}
