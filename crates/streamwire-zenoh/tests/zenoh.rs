//! The zenoh transport on loopback only: sessions listen on 127.0.0.1 with ephemeral ports,
//! connect to each other by explicit endpoint, multicast scouting off. Every wait is
//! bounded by a guard.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test failing"
)]

use parking_lot::Mutex;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use streamwire_codec::jpeg::{self, EncodeOptions, PixelFormat, PixelsRef};
use streamwire_core::{Header, In, Out, Qos, Timestamp};
use streamwire_graph::{Blueprint, Placement};
use streamwire_msgs::{CompressedImage, Image};
use streamwire_runtime::{
    CodecRole, EndReason, RunOptions, RunReport, RunStats, Runtime, WireDirection, check_balance,
};
use streamwire_testdata::alloc::{CountingAlloc, process_counts_during};
use streamwire_transport::{FORMAT_VERSION, FrameBytes, Transport, WireFrame, batch};
use streamwire_zenoh::{ZenohOptions, ZenohTransport};
use zenoh::Wait;

mod common;
use common::{Camera, Recorder, balanced, balanced_merge, blueprint, counter};

const GUARD: Duration = Duration::from_secs(20);

/// Hostile payloads must be refused before anything of their declared size is allocated.
#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

fn until(mut done: impl FnMut() -> bool) -> bool {
    let began = Instant::now();
    while began.elapsed() < GUARD {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// Two sessions on loopback: the first listens, the second connects to it.
fn pair(run_id: &str) -> (ZenohTransport, ZenohTransport) {
    let a = ZenohTransport::open(&ZenohOptions {
        run_id: run_id.to_owned(),
        ..ZenohOptions::default()
    })
    .unwrap();
    let endpoint = a
        .locators()
        .into_iter()
        .find(|l| l.starts_with("tcp/127.0.0.1:"))
        .unwrap();
    let b = ZenohTransport::open(&ZenohOptions {
        run_id: run_id.to_owned(),
        listen: Vec::new(),
        connect: vec![endpoint],
        gossip: false,
        ..ZenohOptions::default()
    })
    .unwrap();
    (a, b)
}

#[test]
fn sessions_listen_on_loopback_only() {
    let (a, b) = pair("hygiene");
    let locators = a.locators();
    assert!(!locators.is_empty());
    for locator in locators {
        assert!(locator.starts_with("tcp/127.0.0.1:"), "{locator}");
    }
    assert!(
        b.locators().is_empty(),
        "the connecting session listens nowhere"
    );
    a.close();
    b.close();
}

#[test]
fn frames_cross_between_sessions_and_matching_follows_subscribers() {
    let (a, b) = pair("crossing");
    let publisher = a.publisher("chatter", Qos::DEFAULT).unwrap();
    let matched_events = Arc::new(Mutex::new(Vec::new()));
    let events = matched_events.clone();
    publisher.on_matching(Arc::new(move |m| events.lock().push(m)));
    assert!(!publisher.is_matched());
    // Nobody listens: a put is counted, not sent.
    publisher
        .put(&mut |_| Ok(Bytes::from_static(b"lost").into()))
        .unwrap();
    assert_eq!(publisher.counters().unmatched, 1);

    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let subscription = b
        .subscribe(
            "chatter",
            Qos::DEFAULT,
            Arc::new(move |frame: FrameBytes| sink.lock().push(frame.to_bytes())),
        )
        .unwrap();
    assert!(
        until(|| publisher.is_matched()),
        "the publisher never matched"
    );
    let big = Bytes::from(vec![7u8; 3_000_000]);
    for n in 0..3u8 {
        let payload = if n == 1 {
            big.clone()
        } else {
            Bytes::from(vec![n; 10])
        };
        publisher.put(&mut |_| Ok(payload.clone().into())).unwrap();
    }
    assert!(until(|| got.lock().len() == 3));
    let got_frames = got.lock().clone();
    assert_eq!(got_frames[1], big, "a 3 MB frame arrives whole");
    assert_eq!(got_frames[2], Bytes::from(vec![2u8; 10]));
    assert_eq!(subscription.counters().frames, 3);
    assert_eq!(publisher.counters().frames, 3);

    drop(subscription);
    assert!(until(|| !publisher.is_matched()), "matching never ended");
    assert_eq!(*matched_events.lock(), vec![true, false]);
    a.close();
    b.close();
}

/// A batch crosses as one zenoh message and splits into its frames, in order, each with
/// its own link sequence; both ends count frames, not batches. Unmatched, a batch is
/// counted frame by frame and nothing is built.
#[test]
fn a_batch_crosses_as_one_message_and_counts_as_its_frames() {
    let (a, b) = pair("batches");
    let publisher = a.publisher("burst", Qos::DEFAULT).unwrap();
    let mut built = false;
    assert!(
        publisher
            .put_batch(3, &mut |_| {
                built = true;
                Ok((FrameBytes::default(), 0))
            })
            .unwrap()
    );
    assert!(!built, "nothing is built while nobody listens");
    assert_eq!(publisher.counters().unmatched, 3);

    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let subscription = b
        .subscribe(
            "burst",
            Qos::DEFAULT,
            Arc::new(move |frame: FrameBytes| sink.lock().push(frame)),
        )
        .unwrap();
    assert!(until(|| publisher.is_matched()), "never matched");
    // A frame alone first, then a batch of three numbered on from it.
    publisher.put(&mut WireFrame::stop).unwrap();
    let sent = publisher
        .put_batch(3, &mut |first| {
            let frames: Vec<FrameBytes> = (first..first + 3)
                .map(WireFrame::stop)
                .collect::<Result<_, _>>()?;
            Ok((batch::encode(&frames)?, 3))
        })
        .unwrap();
    assert!(sent, "zenoh publishers batch");
    assert!(
        until(|| got.lock().len() == 2),
        "{} messages",
        got.lock().len()
    );
    let messages = got.lock().clone();
    assert_eq!(batch::frame_count(&messages[0]), None);
    let frames = batch::split(messages[1].clone()).unwrap().unwrap();
    let seqs: Vec<u64> = frames
        .into_iter()
        .map(|f| WireFrame::parse(f).unwrap().head.link_seq)
        .collect();
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(publisher.counters().frames, 4);
    assert_eq!(subscription.counters().frames, 4);
    a.close();
    b.close();
}

/// A multi-process plan whose partitions talk over zenoh: encoded once, decoded once for
/// the pixel partition, bytes to the recorder, every frame delivered (keep-all), the end
/// of the stream crossing too.
#[test]
fn a_run_whose_partitions_talk_over_zenoh() {
    let transport = ZenohTransport::open(&ZenohOptions {
        run_id: "partitions".to_owned(),
        ..ZenohOptions::default()
    })
    .unwrap();
    let options = RunOptions {
        transport: Some(Arc::new(transport)),
        ..RunOptions::default()
    };
    let frames = 10;
    let handle = Runtime::start(blueprint(frames).into_runnable().unwrap(), options).unwrap();
    let report = balanced(handle.wait_timeout(GUARD));
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    let stats = &report.stats;
    assert_eq!(
        counter(stats, "viewer", "seen"),
        u64::from(frames),
        "{report}"
    );
    assert_eq!(
        counter(stats, "recorder", "recorded"),
        u64::from(frames),
        "{report}"
    );
    let encodes: Vec<_> = stats
        .codecs
        .iter()
        .filter(|c| c.role == CodecRole::Encode)
        .collect();
    let decodes: Vec<_> = stats
        .codecs
        .iter()
        .filter(|c| c.role == CodecRole::Decode)
        .collect();
    assert_eq!((encodes.len(), decodes.len()), (1, 1), "{report}");
    assert_eq!(encodes[0].done, u64::from(frames));
    assert_eq!(decodes[0].done, u64::from(frames));
    let out = stats
        .wire
        .iter()
        .find(|w| w.direction == WireDirection::Out && w.key == "color_image/compressed")
        .unwrap();
    // The frames and the end of the stream.
    assert_eq!(out.frames, u64::from(frames) + 1, "{report}");
}

/// A JPEG `CompressedImage` as a wire frame from a foreign publisher.
fn jpeg_frame(data: Vec<u8>, width: u32, height: u32, link_seq: u64) -> Bytes {
    let image = CompressedImage::new("rgb8; jpeg compressed bgr8", data, width, height).unwrap();
    let header = Header {
        seq: link_seq,
        publish_time: Timestamp::from_nanos(1),
    };
    WireFrame::encode(&image, header, link_seq, "jpeg")
        .unwrap()
        .to_bytes()
}

/// Garbage, truncated, wrong-version and oversized frames put on a stream's key by another
/// session are counted by kind in every receiving partition; a well-formed frame whose JPEG claims
/// 60000 x 60000 (10.8 GB of pixels) fails its decode without anything near that size
/// being allocated; a good frame after them all is delivered.
#[test]
fn hostile_payloads_over_zenoh_are_counted_and_absurd_sizes_never_allocated() {
    let (ours, theirs) = pair("hostile");
    let key = ours.key_expr("color_image/compressed");
    let options = RunOptions {
        transport: Some(Arc::new(ours)),
        ..RunOptions::default()
    };
    let handle = Runtime::start(blueprint(0).into_runnable().unwrap(), options).unwrap();
    let foreign = theirs.session().declare_publisher(key).wait().unwrap();
    assert!(until(|| foreign
        .matching_status()
        .wait()
        .unwrap()
        .matching()));

    let pixels = vec![90u8; 32 * 16 * 3];
    let small = jpeg::encode(
        &PixelsRef::new(32, 16, 32 * 3, PixelFormat::Rgb8, &pixels).unwrap(),
        &EncodeOptions::default(),
    )
    .unwrap()
    .data;
    let mut huge = small.clone();
    let sof = huge.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
    huge[sof + 5..sof + 9].copy_from_slice(&[0xEA, 0x60, 0xEA, 0x60]);
    let good = jpeg_frame(small.clone(), 32, 16, 0);
    let mut wrong_version = good.to_vec();
    wrong_version[4..6].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let mut oversized = good.to_vec();
    oversized[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    let hostile = [
        Bytes::from_static(b"not a frame"),
        Bytes::from_static(&[0, 0, 0]),
        good.slice(..good.len() / 2),
        Bytes::from(wrong_version),
        Bytes::from(oversized),
        jpeg_frame(huge, 60000, 60000, 1),
    ];
    let refused = |stats: &RunStats, kind: &str| -> Vec<u64> {
        stats
            .wire
            .iter()
            .filter(|w| w.direction == WireDirection::In && w.key == "color_image/compressed")
            .map(|w| w.rejected(kind))
            .collect()
    };
    let failed_decodes = |stats: &RunStats| -> u64 {
        stats
            .codecs
            .iter()
            .filter(|c| c.role == CodecRole::Decode)
            .map(|c| c.failed)
            .sum()
    };
    let (seen, counts) = process_counts_during(|| {
        for frame in hostile {
            foreign.put(frame.to_vec()).wait().unwrap();
        }
        until(|| failed_decodes(&handle.stats()) == 1)
    });
    assert!(
        seen,
        "the absurd frame's decode never failed: {}",
        handle.stats()
    );
    assert!(
        counts.largest < 32 << 20,
        "{} bytes in one allocation while refusing",
        counts.largest
    );
    foreign
        .put(jpeg_frame(small, 32, 16, 2).to_vec())
        .wait()
        .unwrap();
    assert!(
        until(|| counter(&handle.stats(), "viewer", "seen") == 1),
        "{}",
        handle.stats()
    );
    let stats = handle.stats();
    // Both receiving partitions (ui decodes, web records the bytes) refused the same.
    assert_eq!(refused(&stats, "garbage"), [2, 2], "{stats}");
    assert_eq!(refused(&stats, "truncated"), [2, 2], "{stats}");
    assert_eq!(refused(&stats, "incompatible"), [1, 1], "{stats}");
    // The byte consumer takes the claim as bytes (it decodes nothing): both frames.
    assert!(
        until(|| counter(&handle.stats(), "recorder", "recorded") == 2),
        "{}",
        handle.stats()
    );
    handle.stop();
    let report = handle.wait();
    assert_eq!(report.reason, EndReason::Stopped, "{report}");
    // The foreign frames were never published by the run: its rows cannot balance.
    assert!(check_balance(&report).is_err(), "{report}");
    theirs.close();
}

/// Three sessions, as three workers would have: the first listens, the others connect to
/// it and find each other by gossip (over those connections; multicast stays off).
fn trio(run_id: &str) -> Vec<ZenohTransport> {
    let first = ZenohTransport::open(&ZenohOptions {
        run_id: run_id.to_owned(),
        gossip: true,
        ..ZenohOptions::default()
    })
    .unwrap();
    let endpoint = first.locators()[0].clone();
    let mut all = vec![first];
    for _ in 0..2 {
        all.push(
            ZenohTransport::open(&ZenohOptions {
                run_id: run_id.to_owned(),
                connect: vec![endpoint.clone()],
                gossip: true,
                ..ZenohOptions::default()
            })
            .unwrap(),
        );
    }
    all
}

/// Each process of the plan run by its own runtime on its own session (as the workers of
/// a distributed run do), held at a start gate until the links are matched.
fn start_apart(
    bp: impl Fn() -> Blueprint,
    sessions: &[ZenohTransport],
    processes: &[&str],
) -> (
    Vec<streamwire_runtime::RunHandle>,
    streamwire_runtime::StartGate,
) {
    let gate = streamwire_runtime::StartGate::closed();
    let handles = processes
        .iter()
        .zip(sessions)
        .map(|(process, session)| start_process(bp(), session, process, Some(gate.clone())))
        .collect();
    (handles, gate)
}

/// One process of `blueprint`'s plan, run by its own runtime on `session`.
fn start_process(
    blueprint: Blueprint,
    session: &ZenohTransport,
    process: &str,
    start_gate: Option<streamwire_runtime::StartGate>,
) -> streamwire_runtime::RunHandle {
    Runtime::start(
        blueprint.into_runnable().unwrap(),
        RunOptions {
            transport: Some(Arc::new(session.clone())),
            local: Some(process.to_owned()),
            start_gate,
            ..RunOptions::default()
        },
    )
    .unwrap()
}

/// The plan of `blueprint` in three runtimes, one per process: each runs only its own
/// instances and codec nodes; nothing starts before every link is matched, so a keep-all
/// stream loses no frame at start; the camera's process encodes once, the viewer's
/// decodes once, the recorder's takes the bytes with no decode.
#[test]
fn each_process_in_its_own_runtime_delivers_every_frame() {
    let sessions = trio("apart");
    let frames = 20;
    let (mut handles, gate) = start_apart(
        || blueprint(frames),
        &sessions,
        &["localhost/main", "localhost/ui", "localhost/web"],
    );
    assert!(
        until(|| handles.iter().all(|h| h.unmatched_links().is_empty())),
        "links never matched: {:?}",
        handles[0].unmatched_links()
    );
    assert_eq!(
        handles[0].stats().outputs[0].published,
        0,
        "held at the gate"
    );
    gate.open();
    // Consumers first: a runtime closes its session when waited, and the producer's
    // last frame (the end of the stream) must have crossed by then.
    let main = handles.remove(0);
    let mut reports: Vec<_> = handles
        .drain(..)
        .map(|h| balanced(h.wait_timeout(GUARD)))
        .collect();
    reports.insert(0, balanced(main.wait_timeout(GUARD)));
    balanced_merge(&[
        ("main", &reports[0]),
        ("ui", &reports[1]),
        ("web", &reports[2]),
    ]);
    for report in &reports {
        assert_eq!(report.reason, EndReason::Finished, "{report}");
    }
    let [main, ui, web] = &reports[..] else {
        unreachable!()
    };
    // Each runtime lists only its own instances.
    let names = |r: &streamwire_runtime::RunReport| -> Vec<String> {
        r.stats.instances.iter().map(|i| i.name.clone()).collect()
    };
    assert_eq!(names(main), ["camera"]);
    assert_eq!(names(ui), ["viewer"]);
    assert_eq!(names(web), ["recorder"]);
    assert_eq!(
        counter(&ui.stats, "viewer", "seen"),
        u64::from(frames),
        "{ui}"
    );
    assert_eq!(
        counter(&web.stats, "recorder", "recorded"),
        u64::from(frames),
        "{web}"
    );
    let roles = |r: &streamwire_runtime::RunReport| -> Vec<(CodecRole, u64)> {
        r.stats.codecs.iter().map(|c| (c.role, c.done)).collect()
    };
    assert_eq!(
        roles(main),
        [(CodecRole::Encode, u64::from(frames))],
        "{main}"
    );
    assert_eq!(roles(ui), [(CodecRole::Decode, u64::from(frames))], "{ui}");
    assert_eq!(
        roles(web),
        [],
        "the byte consumer's process decodes nothing: {web}"
    );
    // The encoder wrote into the process's pool of encoded images and the decoder into
    // its pool of decoded images, and the reports say so. (The pools are the process's:
    // these three runtimes, and any test running beside them, share them, so at least.)
    let served = |r: &streamwire_runtime::RunReport, pool: &str| -> u64 {
        r.stats
            .buffers
            .iter()
            .filter(|b| b.name == pool)
            .map(|b| b.hits + b.misses)
            .sum()
    };
    assert!(
        served(main, "encoded images") >= u64::from(frames),
        "{main}"
    );
    assert!(served(ui, "decoded images") >= u64::from(frames), "{ui}");
    for s in &sessions {
        s.close();
    }
}

/// Only a camera and the byte consumer; the consumer's process leaves: its producer's
/// encoder stops encoding (lazy encode across processes), and a tap from another process
/// gets the camera's pixels across zenoh.
#[test]
fn encoding_stops_when_the_remote_byte_consumer_leaves_and_taps_cross() {
    let sessions = trio("lazy");
    let bp = || {
        let mut bp = Blueprint::new();
        bp.add(
            "camera",
            Camera {
                color_image: Out::new(),
                count: u32::MAX,
                sent: 0,
            },
        );
        let recorder = bp.add("recorder", Recorder { jpeg: In::new() });
        bp.place(&recorder, Placement::process("web"));
        // A keep-all byte consumer of a best-effort camera in another process: let through.
        bp.lossy_path(streamwire_graph::Report::Warn);
        bp.autoconnect();
        bp
    };
    let (mut handles, gate) = start_apart(bp, &sessions[..2], &["localhost/main", "localhost/web"]);
    assert!(until(|| handles[0].unmatched_links().is_empty()));
    gate.open();
    let encoded = |h: &streamwire_runtime::RunHandle| -> (u64, u64) {
        let stats = h.stats();
        let e = stats
            .codecs
            .iter()
            .find(|c| c.role == CodecRole::Encode)
            .unwrap();
        (e.done, e.skipped)
    };
    assert!(until(|| encoded(&handles[0]).0 >= 5));
    // A tap from the byte consumer's process on the camera's pixels: raw frames cross.
    let tap = handles[1].tap::<Image>("color_image").unwrap();
    let frame = tap.recv_timeout(GUARD).expect("a frame through the tap");
    assert_eq!(frame.message.width(), 32);
    drop(tap);
    // The consumer leaves.
    let web = handles.pop().unwrap();
    web.stop();
    let report = balanced(web.wait());
    assert!(
        counter(&report.stats, "recorder", "recorded") >= 5,
        "{report}"
    );
    assert!(
        until(|| !handles[0].unmatched_links().is_empty()),
        "the publisher never saw its subscriber go"
    );
    let (done, skipped) = encoded(&handles[0]);
    assert!(
        until(|| encoded(&handles[0]).1 > skipped + 3),
        "frames are still published, and skipped by the encoder"
    );
    let (done_after, _) = encoded(&handles[0]);
    assert!(
        done_after <= done + 1,
        "encoding went on with nobody subscribed: {done} -> {done_after}"
    );
    let main = handles.pop().unwrap();
    main.stop();
    let main_report = balanced(main.wait());
    assert_eq!(main_report.reason, EndReason::Stopped);
    balanced_merge(&[("main", &main_report), ("web", &report)]);
    for s in &sessions {
        s.close();
    }
}

/// A publisher reaches a partition once that partition's subscription is announced, and
/// matching alone (someone subscribes) does not make it reach every planned partition.
#[test]
fn a_publisher_reaches_exactly_the_partitions_that_announced_themselves() {
    let (producer, consumer) = pair("reaches");
    let publisher = producer.publisher("color_image", Qos::default()).unwrap();
    let _subscription = consumer
        .subscribe("color_image", Qos::default(), Arc::new(|_| {}))
        .unwrap();
    let ui = vec!["localhost/ui".to_owned()];
    let both = vec!["localhost/ui".to_owned(), "localhost/web".to_owned()];
    // Subscribed but not announced: matched, yet no partition is known to be reached.
    assert!(until(|| publisher.is_matched()));
    assert!(!publisher.reaches(&ui));
    consumer.announce("color_image", "localhost/ui");
    assert!(until(|| publisher.reaches(&ui)));
    assert!(!publisher.reaches(&both), "web never subscribed");
    // Another stream's announcement is not this one's.
    consumer.announce("color_image/compressed", "localhost/web");
    assert!(!publisher.reaches(&both));
    consumer.close();
    producer.close();
}

/// A map-like stream: five frames, then nothing (it stays up).
#[derive(streamwire_macros::Module)]
#[module(crate = streamwire_core)]
struct MapSource {
    #[port(name = "map", transient_local, depth = 2)]
    map: Out<Image>,
    #[state]
    sent: u32,
}

impl streamwire_core::Node for MapSource {
    fn trigger(&self) -> streamwire_core::Trigger {
        streamwire_core::Trigger::Period(Duration::from_millis(5))
    }

    fn step(&mut self, _cx: &mut streamwire_core::Context<'_>) -> streamwire_core::NodeResult {
        if self.sent < 5 {
            self.map.publish(common::frame(self.sent)?)?;
            self.sent += 1;
        }
        Ok(())
    }
}

/// Counts the map frames it gets and sums their stamps (which frames they were).
#[derive(streamwire_macros::Module)]
#[module(crate = streamwire_core)]
struct MapViewer {
    #[port(name = "map", transient_local, keep_all)]
    map: In<Image>,
}

impl streamwire_core::Node for MapViewer {
    fn step(&mut self, cx: &mut streamwire_core::Context<'_>) -> streamwire_core::NodeResult {
        while let Some(frame) = self.map.recv()? {
            cx.counter("seen").increment();
            cx.counter("stamps").add(frame.message.stamp().as_nanos());
        }
        Ok(())
    }
}

/// A transient-local stream over zenoh: the producer's process publishes its five frames
/// with nobody listening; a consumer process that joins afterwards gets the last two (its
/// depth), once each, and nothing is counted as lost.
#[test]
fn a_late_joiner_of_a_transient_local_stream_gets_the_last_frames() {
    let (first, second) = pair("transient");
    let blueprint = || {
        let mut bp = Blueprint::new();
        bp.add(
            "source",
            MapSource {
                map: Out::new(),
                sent: 0,
            },
        );
        let viewer = bp.add("viewer", MapViewer { map: In::new() });
        bp.place(&viewer, Placement::process("ui"));
        // A keep-all viewer of a best-effort map in another process: let through (the
        // loopback zenoh loses nothing; a loss would be counted `lost_on_wire`).
        bp.lossy_path(streamwire_graph::Report::Warn);
        bp.autoconnect();
        bp
    };
    let producer = start_process(blueprint(), &first, "localhost/main", None);
    // Published, and put on the wire by the sender's thread (a loaded machine once let the
    // fifth put happen after the consumer matched, so it went live, not from the history).
    let put = || {
        producer
            .stats()
            .wire
            .iter()
            .filter(|w| w.direction == WireDirection::Out && w.key == "map")
            .map(|w| w.frames + w.unmatched)
            .sum::<u64>()
    };
    assert!(until(
        || producer.stats().outputs[0].published == 5 && put() == 5
    ));
    let consumer = start_process(blueprint(), &second, "localhost/ui", None);
    assert!(
        until(|| counter(&consumer.stats(), "viewer", "seen") == 2),
        "{}",
        consumer.stats()
    );
    // Nothing more arrives (no duplicate of a remembered frame).
    std::thread::sleep(Duration::from_millis(300));
    let stats = consumer.stats();
    assert_eq!(counter(&stats, "viewer", "seen"), 2, "{stats}");
    // Frames 3 and 4 of the producer: stamps 4 and 5 ns.
    assert_eq!(counter(&stats, "viewer", "stamps"), 9, "{stats}");
    let inbound = stats
        .wire
        .iter()
        .find(|w| w.direction == WireDirection::In && w.key == "map")
        .unwrap();
    assert_eq!((inbound.frames, inbound.lost), (2, 0), "{stats}");
    consumer.stop();
    let consumer_report = balanced(consumer.wait());
    producer.stop();
    let producer_report = balanced(producer.wait());
    // Balanced once merged: the sender counted all five as not sent (nobody listened
    // when they were published), and the two the late joiner got from the stream's
    // history came flagged so, which takes them off its row's not-sent term.
    let merged = RunReport::merge(
        EndReason::Stopped,
        None,
        Vec::new(),
        [
            ("producer".to_owned(), producer_report),
            ("consumer".to_owned(), consumer_report),
        ],
    );
    let viewer = merged
        .stats
        .inputs
        .iter()
        .find(|i| i.stream == "map")
        .unwrap();
    assert_eq!(
        (viewer.delivered, viewer.recovered, viewer.unmatched),
        (2, 2, 3),
        "{merged}"
    );
    balanced(merged);
}

/// A zenoh configuration file for a session of user `user` with `password`, checking its
/// peers against `dictionary`, and with `acl` (a JSON5 `access_control` table) if given.
fn secured_config(
    dir: &std::path::Path,
    name: &str,
    user: &str,
    password: &str,
    acl: Option<&str>,
) -> std::path::PathBuf {
    let dictionary = dir.join("users.txt");
    let path = dir.join(format!("{name}.json5"));
    let acl = acl
        .map(|a| format!("access_control: {a},"))
        .unwrap_or_default();
    std::fs::write(
        &path,
        format!(
            "{{ {acl} transport: {{ auth: {{ usrpwd: {{ user: \"{user}\", password: \
             \"{password}\", dictionary_file: \"{}\" }} }} }} }}",
            dictionary.display()
        ),
    )
    .unwrap();
    path
}

/// Access control from a zenoh configuration file: the robot's session admits only user
/// `operator` to streamwire's keys. The operator gets the frames; `visitor`, whose
/// credentials are valid but who has no permission, is connected and gets none; a peer
/// with a wrong password is not admitted at all, and gets none either.
#[test]
fn with_access_control_a_peer_without_the_right_credentials_gets_no_data() {
    let dir = std::env::temp_dir().join(format!("streamwire-acl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("users.txt"),
        "robot:r0b0t-pass\noperator:0perator-pass\nvisitor:v1sitor-pass\n",
    )
    .unwrap();
    let all = r#"["put", "delete", "declare_subscriber", "query", "reply", "declare_queryable",
        "liveliness_token", "liveliness_query", "declare_liveliness_subscriber"]"#;
    let acl = format!(
        r#"{{ enabled: true, default_permission: "deny",
            rules: [{{ id: "streams", messages: {all}, flows: ["egress", "ingress"],
                       permission: "allow", key_exprs: ["streamwire/**"] }}],
            subjects: [{{ id: "operators", usernames: ["operator"] }}],
            policies: [{{ rules: ["streams"], subjects: ["operators"] }}] }}"#
    );
    let robot = ZenohTransport::open(&ZenohOptions {
        run_id: "acl".to_owned(),
        config_file: Some(secured_config(
            &dir,
            "robot",
            "robot",
            "r0b0t-pass",
            Some(&acl),
        )),
        ..ZenohOptions::default()
    })
    .unwrap();
    let endpoint = robot.locators()[0].clone();
    assert!(endpoint.starts_with("tcp/127.0.0.1:"), "{endpoint}");
    let peer = |name: &str, user: &str, password: &str| {
        ZenohTransport::open(&ZenohOptions {
            run_id: "acl".to_owned(),
            listen: Vec::new(),
            connect: vec![endpoint.clone()],
            config_file: Some(secured_config(&dir, name, user, password, None)),
            ..ZenohOptions::default()
        })
    };
    let operator = peer("operator", "operator", "0perator-pass").unwrap();
    let visitor = peer("visitor", "visitor", "v1sitor-pass").unwrap();
    // A refused handshake either fails the open or leaves a session with no peer.
    let intruder = peer("intruder", "operator", "guessed").ok();

    let received = |transport: &ZenohTransport| {
        let got = Arc::new(Mutex::new(0usize));
        let sink = got.clone();
        let subscription = transport
            .subscribe(
                "camera",
                Qos::DEFAULT,
                Arc::new(move |_frame: FrameBytes| *sink.lock() += 1),
            )
            .unwrap();
        (got, subscription)
    };
    let (to_operator, _s1) = received(&operator);
    let (to_visitor, _s2) = received(&visitor);
    let to_intruder = intruder.as_ref().map(received);
    let publisher = robot.publisher("camera", Qos::DEFAULT).unwrap();
    assert!(
        until(|| publisher.is_matched()),
        "the operator never matched"
    );
    // Frames until the operator has ten: the others had every chance to get them too.
    assert!(until(|| {
        publisher
            .put(&mut |_| Ok(Bytes::from_static(b"frame").into()))
            .unwrap();
        *to_operator.lock() >= 10
    }));
    std::thread::sleep(Duration::from_millis(300));
    let robot_zid: zenoh::session::ZenohId = robot.session().zid();
    let visitor_peers: Vec<_> = visitor.session().info().peers_zid().wait().collect();
    assert!(
        visitor_peers.contains(&robot_zid),
        "the visitor is connected to the robot (admitted, just not allowed)"
    );
    assert_eq!(*to_visitor.lock(), 0, "the visitor got frames");
    if let (Some(intruder), Some((got, _s3))) = (&intruder, &to_intruder) {
        let peers: Vec<_> = intruder.session().info().peers_zid().wait().collect();
        assert!(peers.is_empty(), "the intruder was admitted: {peers:?}");
        assert_eq!(*got.lock(), 0, "the intruder got frames");
    }
    drop(publisher);
    for transport in [
        Some(&robot),
        Some(&operator),
        Some(&visitor),
        intruder.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        transport.close();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
