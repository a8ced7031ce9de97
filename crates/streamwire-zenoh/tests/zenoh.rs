//! The zenoh transport on loopback only: sessions listen on 127.0.0.1 with ephemeral ports,
//! connect to each other by explicit endpoint, multicast scouting off. Every wait is
//! bounded by a guard.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test failing"
)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use streamwire_core::{In, Out, Qos};
use streamwire_graph::{Blueprint, Placement};
use streamwire_msgs::Image;
use streamwire_runtime::{CodecRole, EndReason, RunOptions, RunStats, Runtime, WireDirection};
use streamwire_transport::Transport;
use streamwire_zenoh::{ZenohOptions, ZenohTransport};
use zenoh::Wait;

mod common;
use common::{Camera, Recorder, blueprint, counter};

const GUARD: Duration = Duration::from_secs(20);

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
    publisher.on_matching(Arc::new(move |m| events.lock().unwrap().push(m)));
    assert!(!publisher.is_matched());
    // Nobody listens: a put is counted, not sent.
    publisher
        .put(&mut |_| Ok(Bytes::from_static(b"lost")))
        .unwrap();
    assert_eq!(publisher.counters().unmatched, 1);

    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let subscription = b
        .subscribe(
            "chatter",
            Qos::DEFAULT,
            Arc::new(move |frame: Bytes| sink.lock().unwrap().push(frame)),
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
        publisher.put(&mut |_| Ok(payload.clone())).unwrap();
    }
    assert!(until(|| got.lock().unwrap().len() == 3));
    let got_frames = got.lock().unwrap().clone();
    assert_eq!(got_frames[1], big, "a 3 MB frame arrives whole");
    assert_eq!(got_frames[2], Bytes::from(vec![2u8; 10]));
    assert_eq!(subscription.counters().frames, 3);
    assert_eq!(publisher.counters().frames, 3);

    drop(subscription);
    assert!(until(|| !publisher.is_matched()), "matching never ended");
    assert_eq!(*matched_events.lock().unwrap(), vec![true, false]);
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
    let report = handle.wait_timeout(GUARD);
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

/// Garbage put on a stream's key by another session is counted and refused; the
/// stream's consumers are not disturbed.
#[test]
fn garbage_on_a_stream_key_is_counted_and_refused() {
    let (ours, theirs) = pair("garbage");
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
    foreign.put(b"not a frame".to_vec()).wait().unwrap();
    foreign.put(vec![0u8; 3]).wait().unwrap();
    let refused = |stats: &RunStats| -> u64 {
        stats
            .wire
            .iter()
            .filter(|w| w.direction == WireDirection::In && w.key == "color_image/compressed")
            .map(|w| w.rejected("garbage"))
            .sum()
    };
    // Two receiving partitions (ui and web) each refuse both.
    assert!(
        until(|| refused(&handle.stats()) == 4),
        "{}",
        handle.stats()
    );
    handle.stop();
    let report = handle.wait();
    assert_eq!(report.reason, EndReason::Stopped, "{report}");
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
        .map(|(process, session)| {
            Runtime::start(
                bp().into_runnable().unwrap(),
                RunOptions {
                    transport: Some(Arc::new(session.clone())),
                    local: Some((*process).to_owned()),
                    start_gate: Some(gate.clone()),
                    ..RunOptions::default()
                },
            )
            .unwrap()
        })
        .collect();
    (handles, gate)
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
    let mut reports: Vec<_> = handles.drain(..).map(|h| h.wait_timeout(GUARD)).collect();
    reports.insert(0, main.wait_timeout(GUARD));
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
    let report = web.wait();
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
    assert_eq!(main.wait().reason, EndReason::Stopped);
    for s in &sessions {
        s.close();
    }
}
