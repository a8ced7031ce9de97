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
use streamwire_core::{Compressed, Context, In, Node, NodeResult, Out, Qos, Timestamp, Trigger};
use streamwire_graph::{Blueprint, Placement};
use streamwire_macros::Module;
use streamwire_msgs::{CompressedImage, Image, ImageEncoding};
use streamwire_runtime::{CodecRole, EndReason, RunOptions, RunStats, Runtime, WireDirection};
use streamwire_transport::Transport;
use streamwire_zenoh::{ZenohOptions, ZenohTransport};
use zenoh::Wait;

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

/// A camera of small raw frames, finishing after `count`.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Camera {
    #[port(keep_all)]
    color_image: Out<Compressed<Image>>,
    #[config]
    count: u32,
    #[state]
    sent: u32,
}

impl Node for Camera {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(if self.count == 0 {
            3_600_000
        } else {
            5
        }))
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.count == 0 {
            return Ok(());
        }
        if self.sent == self.count {
            cx.finish();
            return Ok(());
        }
        let data: Vec<u8> = (0..32 * 16 * 3).map(|i| (i % 251) as u8).collect();
        let image = Image::from_packed(32, 16, ImageEncoding::Rgb8, data)?
            .with_stamp(Timestamp::from_nanos(u64::from(self.sent) + 1));
        self.color_image.publish(image)?;
        self.sent += 1;
        Ok(())
    }
}

#[derive(Module)]
#[module(crate = streamwire_core)]
struct Viewer {
    #[port(name = "color_image", keep_all)]
    frames: In<Image>,
}

impl Node for Viewer {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while self.frames.recv()?.is_some() {
            cx.counter("seen").increment();
        }
        Ok(())
    }
}

#[derive(Module)]
#[module(crate = streamwire_core)]
struct Recorder {
    #[port(name = "color_image/compressed", keep_all)]
    jpeg: In<Compressed<Image>>,
}

impl Node for Recorder {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while let Some(jpeg) = self.jpeg.recv()? {
            let _: &CompressedImage = &jpeg.message;
            cx.counter("recorded").increment();
        }
        Ok(())
    }
}

fn blueprint(count: u32) -> Blueprint {
    let mut bp = Blueprint::new();
    bp.add(
        "camera",
        Camera {
            color_image: Out::new(),
            count,
            sent: 0,
        },
    );
    let viewer = bp.add("viewer", Viewer { frames: In::new() });
    let recorder = bp.add("recorder", Recorder { jpeg: In::new() });
    bp.place(&viewer, Placement::process("ui"))
        .place(&recorder, Placement::process("web"));
    bp.autoconnect();
    bp
}

fn counter(stats: &RunStats, instance: &str, name: &str) -> u64 {
    stats
        .instances
        .iter()
        .find(|i| i.name == instance)
        .and_then(|i| i.counters.iter().find(|(k, _)| k == name))
        .map_or(0, |(_, v)| *v)
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
