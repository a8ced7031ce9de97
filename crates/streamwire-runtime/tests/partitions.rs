//! Multi-process plans run as partitions joined by the loopback transport: the codec rules
//! across partitions, lazy encode following matching events, hostile frames, wire loss.
//! Every assertion is on a count; waits have generous guards only.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test failing"
)]

mod common;

use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::{
    ByteSink, Camera, GUARD, MjpegCamera, Viewer, balanced, input, jpeg_frames, wait_until,
};
use streamwire_core::{Compressed, Context, Header, In, Node, NodeResult, Out, Timestamp, Trigger};
use streamwire_graph::{AutoTable, Blueprint, Locality, Placement, Report, WireFormat};
use streamwire_macros::Module;
use streamwire_msgs::{CompressedImage, Image, Odometry};
use streamwire_runtime::{
    CodecRole, CodecStats, EndReason, Partitions, RunHandle, RunOptions, RunReport, RunStats,
    Runtime, StartError, StartGate, ThreadKind, ThreadStats, WireDirection, WireStats,
    check_balance,
};
use streamwire_testdata::alloc::{CountingAlloc, peak_during};
use streamwire_transport::{FORMAT_VERSION, Loopback, WireFrame};

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

fn start_with(blueprint: Blueprint, options: RunOptions) -> RunHandle {
    Runtime::start(blueprint.into_runnable().unwrap(), options).unwrap()
}

fn codecs(stats: &RunStats, role: CodecRole) -> Vec<&CodecStats> {
    stats.codecs.iter().filter(|c| c.role == role).collect()
}

fn wire<'s>(
    stats: &'s RunStats,
    direction: WireDirection,
    partition: &str,
    key: &str,
) -> &'s WireStats {
    stats
        .wire
        .iter()
        .find(|w| w.direction == direction && w.partition.ends_with(partition) && w.key == key)
        .unwrap_or_else(|| {
            panic!(
                "no wire row {direction:?} {partition} {key} in {:#?}",
                stats.wire
            )
        })
}

/// Three pixel consumers in two partitions and one byte consumer in a third: the stream is
/// encoded once in the camera's partition and decoded once in each receiving pixel
/// partition, never for the byte consumer; every frame accounted for along the way.
#[test]
fn encode_once_decode_once_per_receiving_partition() {
    let frames = 12;
    let received = Arc::new(Mutex::new(Vec::new()));
    // A camera of raw pixels, encoded by the plan's encode node.
    let mut bp_raw = Blueprint::new();
    let camera = bp_raw.add("camera", Camera::new(frames, Duration::from_millis(2)));
    let a1 = bp_raw.add("a1", Viewer::new());
    let a2 = bp_raw.add("a2", Viewer::new());
    let b1 = bp_raw.add("b1", Viewer::new());
    let sink = bp_raw.add(
        "bytes",
        ByteSink {
            jpeg: streamwire_core::In::new(),
            received: received.clone(),
        },
    );
    bp_raw
        .place(&camera, Placement::process("camera"))
        .place(&a1, Placement::process("a"))
        .place(&a2, Placement::process("a"))
        .place(&b1, Placement::process("b"))
        .place(&sink, Placement::process("c"));
    // The compressed wire between processes of one host is what this test exercises.
    bp_raw.auto_table(AutoTable::default().with(Locality::SameHost, WireFormat::Compressed));
    // A keep-all byte sink fed across processes by a best-effort camera: the loopback
    // loses nothing, so the lossy-path check is let through.
    bp_raw.lossy_path(Report::Warn);
    bp_raw.autoconnect();
    let plan = bp_raw.build().unwrap();
    assert_eq!(plan.processes().len(), 4, "{plan}");
    let report = balanced(start_with(bp_raw, RunOptions::default()).wait_timeout(GUARD));
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    let stats = &report.stats;

    let encodes = codecs(stats, CodecRole::Encode);
    assert_eq!(encodes.len(), 1, "one encoder: {report}");
    let encode = encodes[0];
    assert_eq!(encode.done + encode.dropped, u64::from(frames), "{report}");
    assert!(encode.done > 0);
    let decodes = codecs(stats, CodecRole::Decode);
    let mut places: Vec<&str> = decodes.iter().map(|d| d.placement.as_str()).collect();
    places.sort_unstable();
    assert_eq!(
        places.len(),
        2,
        "one decoder per receiving pixel partition: {report}"
    );
    assert!(
        places[0].ends_with('a') && places[1].ends_with('b'),
        "{places:?}"
    );

    // The encoded stream left the camera's partition once per frame sent (and once more
    // to say it ended)...
    let out = wire(
        stats,
        WireDirection::Out,
        "camera",
        "color_image/compressed",
    );
    assert_eq!(
        out.frames - 1 + out.sender_dropped + out.unmatched,
        encode.done,
        "{report}"
    );
    assert_eq!(out.unmatched, 0);
    // ... and arrived whole in each of the three receiving partitions.
    for partition in ["a", "b", "c"] {
        let inbound = wire(
            stats,
            WireDirection::In,
            partition,
            "color_image/compressed",
        );
        assert_eq!(inbound.frames, out.frames, "{partition}: {report}");
        assert_eq!((inbound.lost, inbound.rejected_total()), (0, 0), "{report}");
    }
    for decode in &decodes {
        let partition = if decode.placement.ends_with('a') {
            "a"
        } else {
            "b"
        };
        let inbound = wire(
            stats,
            WireDirection::In,
            partition,
            "color_image/compressed",
        );
        assert_eq!(decode.done + decode.dropped, inbound.frames - 1, "{report}");
        assert_eq!(decode.failed, 0);
    }
    for (port, partition) in [("a1.frames", 'a'), ("a2.frames", 'a'), ("b1.frames", 'b')] {
        let decode = decodes
            .iter()
            .find(|d| d.placement.ends_with(partition))
            .unwrap();
        let i = input(stats, port);
        assert_eq!(
            i.delivered + i.dropped.queue_full,
            decode.done,
            "{port}: {report}"
        );
    }
    let bytes_in = input(stats, "bytes.jpeg");
    let inbound = wire(stats, WireDirection::In, "c", "color_image/compressed");
    assert_eq!(
        bytes_in.delivered + bytes_in.dropped.total(),
        inbound.frames - 1
    );
    assert_eq!(received.lock().len() as u64, bytes_in.delivered);
}

/// Ready-made JPEG bytes cross the loopback byte for byte.
#[test]
fn pass_through_jpeg_bytes_are_identical_after_the_loopback() {
    let frames = jpeg_frames(8);
    let sent: Vec<Vec<u8>> = frames.iter().map(|f| f.data().to_vec()).collect();
    let received = Arc::new(Mutex::new(Vec::new()));
    let mut bp = Blueprint::new();
    bp.add("camera", MjpegCamera::new(frames));
    let sink = bp.add(
        "recorder",
        ByteSink {
            jpeg: streamwire_core::In::new(),
            received: received.clone(),
        },
    );
    bp.place(&sink, Placement::process("web"));
    // A keep-all sink fed across processes by a best-effort camera: the loopback loses
    // nothing, so the lossy-path check is let through.
    bp.lossy_path(Report::Warn);
    bp.autoconnect();
    let report = balanced(start_with(bp, RunOptions::default()).wait_timeout(GUARD));
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    assert_eq!(*received.lock(), sent, "{report}");
    let inbound = wire(
        &report.stats,
        WireDirection::In,
        "web",
        "color_image/compressed",
    );
    // Every frame, and the end of the stream.
    assert_eq!(inbound.frames, sent.len() as u64 + 1);
}

/// Ready-made bytes on a raw link to another process (`auto` keeps a same-host link raw)
/// leave as pixels: decoded once in the producer's process, as for its own pixel
/// consumers. (They used to leave as bytes under the raw stream's key, which the receiver
/// could not read: every frame `deserialize failed`.)
#[test]
fn ready_made_bytes_on_a_raw_link_leave_as_pixels() {
    let frames = jpeg_frames(8);
    let mut bp = Blueprint::new();
    bp.add("camera", MjpegCamera::new(frames));
    let mut viewer = Viewer::new();
    viewer.frames = In::new();
    let viewer = bp.add("viewer", viewer);
    bp.place(&viewer, Placement::process("ui"));
    bp.lossy_path(Report::Warn);
    bp.autoconnect();
    let report = balanced(start_with(bp, RunOptions::default()).wait_timeout(GUARD));
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    let frames = input(&report.stats, "viewer.frames");
    assert_eq!(frames.dropped.deserialize_failed, 0, "{report}");
    assert_eq!(frames.delivered + frames.dropped.queue_full, 8, "{report}");
    let ready_made = report
        .stats
        .codecs
        .iter()
        .find(|c| c.codec == "ready-made")
        .unwrap();
    assert_eq!(ready_made.done, 8, "one decode a frame: {report}");
    let raw = wire(&report.stats, WireDirection::In, "ui", "color_image");
    assert_eq!(
        raw.frames, 9,
        "every frame as pixels, and the end: {report}"
    );
}

/// A tap in another partition is a consumer across the transport: the producer's
/// partition encodes for it while it is attached, and stops when it detaches.
#[test]
fn lazy_encode_follows_a_remote_byte_consumer() {
    let mut bp = Blueprint::new();
    let camera = bp.add("camera", Camera::new(u32::MAX, Duration::from_millis(2)));
    let local = bp.add("viewer", Viewer::new());
    // Something in a second process, so that the plan has two partitions: an idle
    // camera of another stream (the robot camera's stream has no planned remote consumer).
    let far = bp.add("far_camera", Camera::new(0, Duration::from_secs(3600)));
    bp.place(&camera, Placement::process("robot"))
        .place(&local, Placement::process("robot"))
        .place(&far, Placement::process("laptop"));
    bp.remap_stream("far_camera", "color_image", "other_camera");
    bp.autoconnect();
    let handle = start_with(bp, RunOptions::default());
    let laptop = handle
        .partitions()
        .iter()
        .find(|p| p.ends_with("laptop"))
        .unwrap()
        .clone();
    let encoder = |stats: &RunStats| -> CodecStats {
        codecs(stats, CodecRole::Encode)
            .into_iter()
            .find(|c| c.stream == "color_image")
            .cloned()
            .unwrap()
    };
    // Nobody wants the bytes: the encoder skips every frame.
    let idle = wait_until(&handle, |s| encoder(s).skipped >= 5);
    assert_eq!(encoder(&idle).done, 0, "{idle}");

    let tap = handle
        .tap_in::<CompressedImage>(&laptop, "color_image")
        .unwrap();
    let first = tap
        .recv_timeout(GUARD)
        .expect("bytes arrive in the laptop's partition");
    assert!(!first.message.data().is_empty());
    let busy = wait_until(&handle, |s| encoder(s).done >= 5);
    assert!(encoder(&busy).done >= 5, "{busy}");
    let inbound = wire(&busy, WireDirection::Out, "robot", "color_image/compressed");
    assert!(inbound.frames > 0, "{busy}");
    // The tap's own ingress is a row of the wire table, as a planned link's is (issue 50).
    let tap_row = |stats: &RunStats| -> WireStats {
        wire(stats, WireDirection::In, "laptop", "color_image/compressed").clone()
    };
    let row = tap_row(&busy);
    assert!(row.frames > 0, "{busy}");
    assert_eq!(
        row.tap.map(|t| (t.id, t.attached)),
        Some((0, true)),
        "{busy}"
    );
    assert!(busy.to_string().contains("in (tap 0)"), "{busy}");

    drop(tap);
    let after = handle.stats();
    // Detached, it keeps its last counts.
    let row = tap_row(&after);
    assert!(row.frames > 0, "{after}");
    assert_eq!(row.tap.map(|t| t.attached), Some(false), "{after}");
    let settled = wait_until(&handle, |s| {
        encoder(s).skipped >= encoder(&after).skipped + 5
    });
    // At most the frame in flight when the tap detached was still encoded.
    assert!(
        encoder(&settled).done <= encoder(&after).done + 1,
        "encoding went on after the remote consumer left: {settled}"
    );
    handle.stop();
    let report = balanced(handle.wait());
    assert_eq!(report.reason, EndReason::Stopped, "{report}");
}

/// The thread named `name` in the report.
fn thread<'s>(stats: &'s RunStats, name: &str) -> Option<&'s ThreadStats> {
    stats.threads.iter().find(|t| t.name == name)
}

/// Streams nobody outside their process wants: the hub does not hand their messages to
/// the tap encoder or the keep-all sender, so neither thread is woken per message (only
/// by its producer finishing and the stop), and each message is still counted: skipped
/// by the encoder, not sent by the sender. A keep-last stream has no sender thread.
#[test]
fn streams_nobody_wants_wake_no_encoder_or_sender_thread() {
    const FRAMES: u32 = 100;
    let mut bp = Blueprint::new();
    let camera = bp.add("camera", Camera::new(FRAMES, Duration::from_millis(1)));
    let viewer = bp.add("viewer", Viewer::new());
    let mjpeg = bp.add(
        "mjpeg",
        MjpegCamera {
            color_image: Out::new(),
            frames: jpeg_frames(FRAMES),
        },
    );
    // A second process, so that every stream of `robot` gets a sender (for taps).
    let far = bp.add("far_camera", Camera::new(0, Duration::from_secs(3600)));
    bp.place(&camera, Placement::process("robot"))
        .place(&viewer, Placement::process("robot"))
        .place(&mjpeg, Placement::process("robot"))
        .place(&far, Placement::process("laptop"));
    bp.remap_stream("mjpeg", "color_image", "mjpeg");
    bp.remap_stream("far_camera", "color_image", "other_camera");
    bp.autoconnect();
    let handle = start_with(bp, RunOptions::default());
    let done = wait_until(&handle, |s| {
        s.outputs
            .iter()
            .filter(|o| o.published == u64::from(FRAMES))
            .count()
            == 2
    });
    assert_eq!(
        done.outputs
            .iter()
            .filter(|o| o.published == u64::from(FRAMES))
            .count(),
        2,
        "{done}"
    );
    handle.stop();
    let report = balanced(handle.wait());
    let stats = &report.stats;

    let encoder = codecs(stats, CodecRole::Encode)
        .into_iter()
        .find(|c| c.stream == "color_image")
        .unwrap();
    assert_eq!(encoder.skipped, u64::from(FRAMES), "{report}");
    assert_eq!(encoder.done, 0, "{report}");
    let encoder_thread = thread(stats, "tap encoder jpeg color_image").unwrap();
    assert!(encoder_thread.woken <= 3, "{report}");

    let sender = thread(stats, "send mjpeg").unwrap();
    assert_eq!(sender.kind, ThreadKind::Sender);
    assert!(sender.woken <= 3, "{report}");
    let mjpeg_out = wire(stats, WireDirection::Out, "robot", "mjpeg");
    assert_eq!(mjpeg_out.unmatched, u64::from(FRAMES), "{report}");
    assert_eq!(mjpeg_out.frames, 0, "{report}");

    // Keep-last: put (here: not put, nobody listens) by the camera's own thread.
    assert!(thread(stats, "send color_image").is_none(), "{report}");
    let camera_out = wire(stats, WireDirection::Out, "robot", "color_image");
    assert!(camera_out.sent_by_producer, "{report}");
    assert_eq!(camera_out.unmatched, u64::from(FRAMES), "{report}");
}

/// Publishes `count` small odometry messages: all in one step, as fast as its keep-all
/// queue takes them (`period` zero: a burst), or one every `period`.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct OdometrySource {
    #[port(keep_all)]
    odom: Out<Odometry>,
    #[config]
    count: u64,
    #[config]
    period: Duration,
    #[state]
    sent: u64,
}

impl OdometrySource {
    fn new(count: u64, period: Duration) -> OdometrySource {
        OdometrySource {
            odom: Out::new(),
            count,
            period,
            sent: 0,
        }
    }
}

impl Node for OdometrySource {
    fn trigger(&self) -> Trigger {
        if self.period.is_zero() {
            Trigger::FreeRunning
        } else {
            Trigger::Period(self.period)
        }
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let now = if self.period.is_zero() { self.count } else { 1 };
        for _ in 0..now.min(self.count - self.sent) {
            let odom = Odometry::new("odom", "base", Default::default(), Default::default())?;
            self.odom.publish(odom)?;
            self.sent += 1;
        }
        if self.sent == self.count {
            cx.finish();
        }
        Ok(())
    }
}

/// Keeps the header sequence numbers of what it receives, in order.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct SeqLog {
    #[port(keep_all)]
    odom: In<Odometry>,
    #[state]
    seqs: Arc<Mutex<Vec<u64>>>,
}

impl Node for SeqLog {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while let Some(odom) = self.odom.recv()? {
            self.seqs.lock().push(odom.header.seq);
        }
        Ok(())
    }
}

/// Runs `source` in `robot` and a `SeqLog` in `laptop` to the end: the report, balanced,
/// and the header sequence numbers the log received.
fn odometry_across(source: OdometrySource) -> (RunReport, Vec<u64>) {
    let seqs = Arc::new(Mutex::new(Vec::new()));
    let mut bp = Blueprint::new();
    let source = bp.add("source", source);
    let log = bp.add(
        "log",
        SeqLog {
            odom: In::new(),
            seqs: seqs.clone(),
        },
    );
    bp.place(&source, Placement::process("robot"))
        .place(&log, Placement::process("laptop"));
    bp.autoconnect();
    let report = balanced(start_with(bp, RunOptions::default()).wait_timeout(GUARD));
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    let seqs = seqs.lock().clone();
    (report, seqs)
}

/// A keep-all burst of small messages to another process: the sender puts the messages
/// that wait together in one batch; each arrives, in order, and is counted one by one.
#[test]
fn batches_of_small_messages_keep_order_and_per_message_accounting() {
    const COUNT: u64 = 2000;
    let (report, seqs) = odometry_across(OdometrySource::new(COUNT, Duration::ZERO));
    assert_eq!(seqs, (0..COUNT).collect::<Vec<_>>(), "{report}");
    let out = wire(&report.stats, WireDirection::Out, "robot", "odom");
    // Each message a frame, and the end-of-stream frame.
    assert_eq!(out.frames, COUNT + 1, "{report}");
    assert!(
        out.batches > 0 && out.batched > out.batches,
        "no batch was sent: {report}"
    );
    let inbound = wire(&report.stats, WireDirection::In, "laptop", "odom");
    assert_eq!(inbound.frames, COUNT + 1, "{report}");
    assert_eq!(inbound.lost, 0, "{report}");
    let received = input(&report.stats, "log.odom");
    assert_eq!(received.delivered, COUNT, "{report}");
    assert!(report.to_string().contains("sent in batches"), "{report}");
}

/// Lone keep-all messages (one every 2 ms, far apart from the sender's view) are put by
/// the producer's thread while the sender thread is idle: that thread is not woken for
/// each of them (it would be, once a message, without the shortcut), and every message
/// still arrives in order, counted.
#[test]
fn lone_keep_all_messages_are_put_without_waking_the_sender_thread() {
    const COUNT: u64 = 60;
    let (report, seqs) = odometry_across(OdometrySource::new(COUNT, Duration::from_millis(2)));
    assert_eq!(seqs, (0..COUNT).collect::<Vec<_>>(), "{report}");
    let out = wire(&report.stats, WireDirection::Out, "robot", "odom");
    assert_eq!(out.frames, COUNT + 1, "{report}");
    let sender = thread(&report.stats, "send odom").unwrap();
    assert!(sender.woken < COUNT / 2, "{report}");
}

/// [`idle_camera_plan`] started on a loopback the test can put frames on.
fn idle_camera_on_a_loopback() -> (Loopback, RunHandle) {
    let loopback = Loopback::new();
    let options = RunOptions {
        transport: Some(Arc::new(loopback.clone())),
        ..RunOptions::default()
    };
    (loopback, start_with(idle_camera_plan(), options))
}

/// A plan whose only cross-partition stream is the camera's, with the camera idle, so that
/// the test alone puts frames on the stream's key.
fn idle_camera_plan() -> Blueprint {
    let mut bp = Blueprint::new();
    bp.add(
        "camera",
        IdleCamera {
            color_image: Out::new(),
        },
    );
    let viewer = bp.add("viewer", Viewer::new());
    bp.place(&viewer, Placement::process("ui"));
    // The compressed wire between processes of one host is what this test exercises.
    bp.auto_table(AutoTable::default().with(Locality::SameHost, WireFormat::Compressed));
    bp.autoconnect();
    bp
}

/// A camera that never publishes (and never finishes) until the run stops.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct IdleCamera {
    color_image: Out<Compressed<Image>>,
}

impl Node for IdleCamera {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_secs(3600))
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        Ok(())
    }
}

fn jpeg_frame(link_seq: u64) -> Bytes {
    let image = jpeg_frames(1).remove(0);
    WireFrame::encode(
        &image,
        Header {
            seq: link_seq,
            publish_time: Timestamp::from_nanos(1),
        },
        link_seq,
        "jpeg",
    )
    .unwrap()
    .to_bytes()
}

#[test]
fn hostile_frames_on_the_loopback_are_counted_by_kind_without_large_allocations() {
    let (loopback, handle) = idle_camera_on_a_loopback();
    let key = "color_image/compressed";
    assert_eq!(
        loopback.subscriber_count(key),
        1,
        "the ui partition subscribed"
    );
    let good = jpeg_frame(0);
    let mut wrong_version = good.to_vec();
    wrong_version[4..6].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let mut oversized = good.to_vec();
    oversized[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    let image =
        Image::from_packed(2, 2, streamwire_msgs::ImageEncoding::Rgb8, vec![0u8; 12]).unwrap();
    let header = Header {
        seq: 1,
        publish_time: Timestamp::from_nanos(1),
    };
    let wrong_type = WireFrame::encode(&image, header, 1, "").unwrap().to_bytes();
    let hostile: Vec<Bytes> = vec![
        Bytes::from_static(b"\x00\x01garbage that is no frame at all"),
        good.slice(..good.len() / 2),
        Bytes::from(wrong_version),
        Bytes::from(oversized),
        wrong_type,
    ];
    for frame in hostile {
        let ((), peak) = peak_during(|| loopback.put_raw(key, frame).unwrap());
        assert!(
            peak < 256 * 1024,
            "{peak} bytes allocated for a hostile frame"
        );
    }
    // A good frame after all that still gets through.
    loopback.put_raw(key, jpeg_frame(2)).unwrap();
    let stats = wait_until(&handle, |s| input(s, "viewer.frames").delivered == 1);
    let inbound = wire(&stats, WireDirection::In, "ui", key);
    assert_eq!(inbound.rejected("garbage"), 1, "{stats}");
    assert_eq!(inbound.rejected("truncated"), 2, "{stats}");
    assert_eq!(inbound.rejected("incompatible"), 1, "{stats}");
    // A frame of a type the plan does not send on this link is foreign: counted on the
    // wire, never as a message of the stream (not on the consumer's row).
    assert_eq!(inbound.rejected("wrong_type"), 0, "{stats}");
    assert_eq!(inbound.foreign, 1, "{stats}");
    assert_eq!(input(&stats, "viewer.frames").delivered, 1, "{stats}");
    assert_eq!(
        input(&stats, "viewer.frames").dropped.deserialize_failed,
        0,
        "{stats}"
    );
    handle.stop();
    foreign_frames_do_not_balance(handle.wait());
}

/// Frames put on the wire by a foreign sender (not this run's publisher) were never
/// published by the run: the report cannot balance, and the check says which row.
fn foreign_frames_do_not_balance(report: RunReport) {
    let error = check_balance(&report).expect_err("frames nobody published were counted");
    let text = error.to_string();
    assert!(
        text.contains("`viewer.frames` on `color_image`: published 0"),
        "{text}"
    );
    assert!(text.contains("counted twice"), "{text}");
}

#[test]
fn link_sequence_gaps_are_wire_loss_not_queue_drops() {
    let (loopback, handle) = idle_camera_on_a_loopback();
    let key = "color_image/compressed";
    // Frames 0, 1 and 5 of a publisher: 2, 3 and 4 never arrived.
    for seq in [0, 1, 5, 6] {
        loopback.put_raw(key, jpeg_frame(seq)).unwrap();
    }
    let stats = wait_until(&handle, |s| {
        wire(s, WireDirection::In, "ui", key).frames == 4
            && codecs(s, CodecRole::Decode)
                .iter()
                .map(|d| d.done + d.dropped)
                .sum::<u64>()
                == 4
            // and the viewer has taken what the decoder gave it (queued is neither).
            && {
                let viewer = input(s, "viewer.frames");
                let decoded: u64 = codecs(s, CodecRole::Decode).iter().map(|d| d.done).sum();
                viewer.delivered + viewer.dropped.queue_full == decoded
            }
    });
    let inbound = wire(&stats, WireDirection::In, "ui", key);
    assert_eq!(inbound.lost, 3, "{stats}");
    assert_eq!(inbound.rejected_total(), 0, "{stats}");
    // Loss on the wire is not a queue drop anywhere.
    let decode = codecs(&stats, CodecRole::Decode)[0].clone();
    let viewer = input(&stats, "viewer.frames");
    assert_eq!(decode.done + decode.dropped, 4, "{stats}");
    assert_eq!(
        viewer.delivered + viewer.dropped.queue_full,
        decode.done,
        "{stats}"
    );
    // The consumer's own row says what its path lost: on the wire, and in the decoder's
    // queue (counted there, relayed here).
    assert_eq!(viewer.dropped.lost_on_wire, 3, "{stats}");
    assert_eq!(viewer.dropped.codec_queue_full, decode.dropped, "{stats}");
    handle.stop();
    foreign_frames_do_not_balance(handle.wait());
}

/// A producer's link sequence that jumps to 2^62 or back to 0 is a reset: counted, no
/// frame counted lost for it, and the real gaps after it are still counted (issue 31).
#[test]
fn forged_link_sequences_are_resets_and_later_gaps_still_count() {
    let (loopback, handle) = idle_camera_on_a_loopback();
    let key = "color_image/compressed";
    // 2^62 after 2 and 0 after 7 are no loss; 5, 6 and 9 never arrived.
    let sent = [0, 1, 2, 1 << 62, 3, 4, 7, 0, 8, 10];
    for seq in sent {
        loopback.put_raw(key, jpeg_frame(seq)).unwrap();
    }
    let stats = wait_until(&handle, |s| {
        wire(s, WireDirection::In, "ui", key).frames == sent.len() as u64 && {
            let viewer = input(s, "viewer.frames");
            let decode = codecs(s, CodecRole::Decode);
            let decoded: u64 = decode.iter().map(|d| d.done).sum();
            let taken: u64 = decode.iter().map(|d| d.done + d.dropped).sum();
            taken == sent.len() as u64 && viewer.delivered + viewer.dropped.queue_full == decoded
        }
    });
    let inbound = wire(&stats, WireDirection::In, "ui", key);
    assert_eq!((inbound.lost, inbound.resets), (3, 2), "{stats}");
    assert_eq!(inbound.foreign, 0, "{stats}");
    assert_eq!(inbound.rejected_total(), 0, "{stats}");
    let viewer = input(&stats, "viewer.frames");
    assert_eq!(viewer.dropped.lost_on_wire, 3, "{stats}");
    // The report says it where a person reads it.
    let text = stats.to_string();
    assert!(text.contains("reset=2"), "{text}");
    handle.stop();
    foreign_frames_do_not_balance(handle.wait());
}

/// Where the fields of a frame's head and its payload start in `frame` (version 1 or 2):
/// (schema version, link sequence, payload), offsets in bytes.
fn head_fields(frame: &[u8]) -> (usize, usize, usize) {
    let u32_at = |at: usize| u32::from_le_bytes(frame[at..at + 4].try_into().unwrap()) as usize;
    let version = u16::from_le_bytes([frame[4], frame[5]]);
    let head = if version == 1 {
        16
    } else {
        24 + 8 * u32_at(16)
    };
    // CDR after its 4-byte encapsulation: the name (length, bytes), then u32 schema
    // version and u64 link sequence, each aligned to its size.
    let cdr = head + 4;
    let schema = (4 + u32_at(cdr)).next_multiple_of(4);
    let link_seq = (schema + 4).next_multiple_of(8);
    (cdr + schema, cdr + link_seq, head + u32_at(8))
}

/// A frame of the planned type numbered `link_seq` that no consumer can read: its payload
/// is no CBOR (`undecodable`) or, with `schema_bump`, of another schema version
/// (`incompatible`).
fn unreadable_frame(link_seq: u64, schema_bump: bool) -> Bytes {
    let mut frame = jpeg_frame(link_seq).to_vec();
    let (schema, _, payload) = head_fields(&frame);
    if schema_bump {
        frame[schema] += 1;
    } else {
        frame[payload] = 0xFF;
    }
    Bytes::from(frame)
}

/// Refused frames are counted once, on the wire row of their kind: not on the consumer's
/// row, and their (forged) link sequence is not followed, so real frames after them are
/// not lost; a refused frame of the real numbering is the one loss the next frame shows
/// (issue 50).
#[test]
fn refused_frames_count_once_and_their_numbers_make_no_loss() {
    let (loopback, handle) = idle_camera_on_a_loopback();
    let key = "color_image/compressed";
    let frames = [
        jpeg_frame(0),
        jpeg_frame(1),
        // 28 ahead, 2^62 and 0: forged numbers on frames nobody can read.
        unreadable_frame(30, false),
        unreadable_frame(1 << 62, false),
        unreadable_frame(0, true),
        jpeg_frame(2),
        jpeg_frame(3),
        // The real frame 4, unreadable: lost once frame 5 arrives.
        unreadable_frame(4, false),
        jpeg_frame(5),
    ];
    for frame in frames {
        loopback.put_raw(key, frame).unwrap();
    }
    let stats = wait_until(&handle, |s| {
        let viewer = input(s, "viewer.frames");
        viewer.delivered + viewer.dropped.queue_full == 5
    });
    let inbound = wire(&stats, WireDirection::In, "ui", key);
    assert_eq!(inbound.rejected("undecodable"), 3, "{stats}");
    assert_eq!(inbound.rejected("incompatible"), 1, "{stats}");
    assert_eq!((inbound.lost, inbound.resets), (1, 0), "{stats}");
    let viewer = input(&stats, "viewer.frames");
    assert_eq!(viewer.dropped.deserialize_failed, 0, "{stats}");
    assert_eq!(viewer.dropped.lost_on_wire, 1, "{stats}");
    handle.stop();
    foreign_frames_do_not_balance(handle.wait());
}

/// `Partitions::Shared` keeps every planned process in one set of hubs: nothing crosses a
/// wire, the codec nodes still run where planned.
#[test]
fn shared_partitions_put_nothing_on_the_wire() {
    let mut bp = Blueprint::new();
    bp.add("camera", Camera::new(5, Duration::from_millis(2)));
    let viewer = bp.add("viewer", Viewer::new());
    bp.place(&viewer, Placement::process("ui"));
    // The compressed wire between processes of one host is what this test exercises.
    bp.auto_table(AutoTable::default().with(Locality::SameHost, WireFormat::Compressed));
    bp.autoconnect();
    let options = RunOptions {
        partitions: Partitions::Shared,
        ..RunOptions::default()
    };
    let report = balanced(start_with(bp, options).wait_timeout(GUARD));
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    assert!(report.stats.wire.is_empty(), "{report}");
    assert_eq!(codecs(&report.stats, CodecRole::Decode).len(), 1);
}

/// The name the plan gives the process whose name ends with `process`.
fn process_named(runnable: &streamwire_graph::RunnablePlan, process: &str) -> String {
    runnable
        .plan()
        .processes()
        .iter()
        .map(|p| p.placement().to_string())
        .find(|p| p.ends_with(process))
        .unwrap()
}

/// `RunOptions::local` runs one planned process here and reaches the others through the
/// transport, as a distributed run's worker does: two runs on one loopback, each running
/// its own process, make one run. The robot's stream waits unmatched until the laptop's
/// run subscribes; then the sources start and every frame crosses.
#[test]
fn two_local_runs_on_one_transport_make_one_run() {
    let frames = 8;
    let blueprint = || {
        let mut bp = Blueprint::new();
        let camera = bp.add("camera", Camera::new(frames, Duration::from_millis(2)));
        let viewer = bp.add("viewer", Viewer::new());
        bp.place(&camera, Placement::process("robot"))
            .place(&viewer, Placement::process("laptop"));
        bp.autoconnect();
        bp.into_runnable().unwrap()
    };
    let loopback = Arc::new(Loopback::new());
    let gate = StartGate::closed();
    let options = |local: String| RunOptions {
        local: Some(local),
        transport: Some(loopback.clone()),
        start_gate: Some(gate.clone()),
        ..RunOptions::default()
    };
    let instances = |stats: &RunStats| -> Vec<String> {
        stats.instances.iter().map(|i| i.name.clone()).collect()
    };

    let robot_plan = blueprint();
    let robot_name = process_named(&robot_plan, "robot");
    let robot = Runtime::start(robot_plan, options(robot_name)).unwrap();
    assert_eq!(instances(&robot.stats()), ["camera"]);
    assert_eq!(robot.partitions().len(), 2);
    let unmatched = robot.unmatched_links();
    assert_eq!(unmatched.len(), 1, "{unmatched:?}");
    assert!(unmatched[0].starts_with("color_image"), "{unmatched:?}");

    let laptop_plan = blueprint();
    let laptop_name = process_named(&laptop_plan, "laptop");
    let laptop = Runtime::start(laptop_plan, options(laptop_name)).unwrap();
    assert_eq!(instances(&laptop.stats()), ["viewer"]);
    assert!(laptop.unmatched_links().is_empty());
    let began = std::time::Instant::now();
    while !robot.unmatched_links().is_empty() && began.elapsed() < GUARD {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(robot.unmatched_links().is_empty());

    gate.open();
    let robot_report = balanced(robot.wait_timeout(GUARD));
    assert_eq!(robot_report.reason, EndReason::Finished, "{robot_report}");
    assert_eq!(robot_report.stats.outputs[0].published, u64::from(frames));
    // The robot's run ends with its camera, which may stop its sender before the end of
    // the stream is sent: the laptop's run is stopped once every frame is accounted for.
    let crossed = |s: &RunStats| {
        let viewer = input(s, "viewer.frames");
        viewer.delivered + viewer.dropped.total()
    };
    wait_until(&laptop, |s| crossed(s) == u64::from(frames));
    laptop.stop();
    let laptop_report = balanced(laptop.wait());
    assert_eq!(
        crossed(&laptop_report.stats),
        u64::from(frames),
        "{laptop_report}"
    );
    let inbound = wire(
        &laptop_report.stats,
        WireDirection::In,
        "laptop",
        "color_image",
    );
    assert!(inbound.frames >= u64::from(frames), "{laptop_report}");
    assert_eq!(inbound.lost, 0, "{laptop_report}");
}

/// A process the plan does not have is refused before anything starts, naming the
/// plan's processes, whether the plan has one process or several.
#[test]
fn an_unknown_local_process_is_refused_naming_the_known_ones() {
    for places in [false, true] {
        let mut bp = Blueprint::new();
        let camera = bp.add("camera", Camera::new(1, Duration::from_millis(2)));
        let viewer = bp.add("viewer", Viewer::new());
        if places {
            bp.place(&camera, Placement::process("robot"))
                .place(&viewer, Placement::process("laptop"));
        }
        bp.autoconnect();
        let runnable = bp.into_runnable().unwrap();
        let options = RunOptions {
            local: Some("nowhere".to_owned()),
            ..RunOptions::default()
        };
        let error = Runtime::start(runnable, options).unwrap_err();
        let StartError::UnknownProcess { process, known } = &error else {
            panic!("not UnknownProcess: {error}");
        };
        assert_eq!(process, "nowhere");
        let expected = if places { 2 } else { 1 };
        assert_eq!(known.split(", ").count(), expected, "{error}");
        if places {
            assert!(
                known.contains("robot") && known.contains("laptop"),
                "{error}"
            );
        }
    }
}
