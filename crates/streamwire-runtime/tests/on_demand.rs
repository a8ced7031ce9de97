//! Decode on demand: ready-made bytes published on an `Out<Compressed<Image>>` are
//! decoded for this process's keep-last pixel consumers only when one of them takes the
//! frame; what their queues replace while still encoded is counted as dropped there and
//! never decoded. Each consumer here waits until the camera has published every frame
//! before it takes anything, so which frames are taken is exact, whatever the load.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test failing"
)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{GUARD, balanced, input, jpeg_frames};
use streamwire_core::{Compressed, Context, In, Node, NodeResult, Out, Trigger};
use streamwire_graph::Blueprint;
use streamwire_macros::Module;
use streamwire_msgs::{CompressedImage, Image};
use streamwire_runtime::{CodecStats, EndReason, RunOptions, RunReport, Runtime};

const FRAMES: usize = 12;

/// Publishes its ready-made frames back to back, then raises `done` and finishes.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Camera {
    #[port(name = "color_image", keep_all)]
    color_image: Out<Compressed<Image>>,
    #[state]
    frames: Vec<CompressedImage>,
    #[state]
    done: Arc<AtomicBool>,
}

impl Node for Camera {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(1))
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.frames.is_empty() {
            self.done.store(true, Ordering::SeqCst);
            cx.finish();
            return Ok(());
        }
        self.color_image.publish_encoded(self.frames.remove(0))?;
        Ok(())
    }
}

/// A consumer busy until the camera is done: then it takes what its keep-last(3) queue
/// kept, and finishes.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct SlowThree {
    #[port(name = "color_image", depth = 3)]
    frames: In<Image>,
    #[state]
    camera_done: Arc<AtomicBool>,
}

/// The same with a keep-last(1) queue.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct SlowOne {
    #[port(name = "color_image", depth = 1)]
    frames: In<Image>,
    #[state]
    camera_done: Arc<AtomicBool>,
}

/// Takes every frame as it comes (keep-all: decoded at publish, as before).
#[derive(Module)]
#[module(crate = streamwire_core)]
struct KeepsAll {
    #[port(name = "color_image", keep_all)]
    frames: In<Image>,
}

fn take_when_done(frames: &mut In<Image>, done: &AtomicBool, cx: &mut Context<'_>) -> NodeResult {
    if !done.load(Ordering::SeqCst) {
        return Ok(());
    }
    while frames.recv()?.is_some() {}
    cx.finish();
    Ok(())
}

impl Node for SlowThree {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(1))
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        take_when_done(&mut self.frames, &self.camera_done, cx)
    }
}

impl Node for SlowOne {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(1))
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        take_when_done(&mut self.frames, &self.camera_done, cx)
    }
}

impl Node for KeepsAll {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while self.frames.recv()?.is_some() {}
        Ok(())
    }
}

fn camera(frames: Vec<CompressedImage>, done: &Arc<AtomicBool>) -> Camera {
    Camera {
        color_image: Out::new(),
        frames,
        done: done.clone(),
    }
}

fn run(bp: Blueprint) -> RunReport {
    let handle = Runtime::start(bp.into_runnable().unwrap(), RunOptions::default()).unwrap();
    let report = balanced(handle.wait_timeout(GUARD));
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    report
}

fn ready_made(report: &RunReport) -> &CodecStats {
    report
        .stats
        .codecs
        .iter()
        .find(|c| c.codec == "ready-made")
        .unwrap_or_else(|| panic!("no ready-made decode in {report}"))
}

#[test]
fn a_slow_keep_last_consumer_gets_only_the_frames_it_takes_decoded() {
    let done = Arc::new(AtomicBool::new(false));
    let mut bp = Blueprint::new();
    bp.add("camera", camera(jpeg_frames(FRAMES as u32), &done));
    bp.add(
        "slow",
        SlowOne {
            frames: In::new(),
            camera_done: done.clone(),
        },
    );
    bp.autoconnect();
    let report = run(bp);
    let slow = input(&report.stats, "slow.frames");
    assert_eq!(slow.delivered, 1, "the newest frame: {report}");
    assert_eq!(slow.dropped.queue_full, FRAMES as u64 - 1, "{report}");
    let decode = ready_made(&report);
    assert_eq!(decode.done, slow.delivered, "decoded == taken: {report}");
    assert!(decode.done < report.stats.outputs[0].published, "{report}");
    assert_eq!(
        decode.skipped,
        FRAMES as u64 - 1,
        "dropped encoded: {report}"
    );
    assert_eq!(decode.failed, 0);
}

#[test]
fn two_keep_last_consumers_decode_each_frame_at_most_once() {
    let done = Arc::new(AtomicBool::new(false));
    let mut bp = Blueprint::new();
    bp.add("camera", camera(jpeg_frames(FRAMES as u32), &done));
    bp.add(
        "three",
        SlowThree {
            frames: In::new(),
            camera_done: done.clone(),
        },
    );
    bp.add(
        "one",
        SlowOne {
            frames: In::new(),
            camera_done: done.clone(),
        },
    );
    bp.autoconnect();
    let report = run(bp);
    let three = input(&report.stats, "three.frames");
    let one = input(&report.stats, "one.frames");
    assert_eq!((three.delivered, one.delivered), (3, 1), "{report}");
    let decode = ready_made(&report);
    // The newest frame is taken by both and decoded once.
    assert_eq!(decode.done, 3, "{report}");
    assert_eq!(decode.skipped, FRAMES as u64 - 3, "{report}");
}

#[test]
fn a_keep_all_consumer_gets_every_frame_decoded() {
    let done = Arc::new(AtomicBool::new(false));
    let mut bp = Blueprint::new();
    bp.add("camera", camera(jpeg_frames(FRAMES as u32), &done));
    bp.add("all", KeepsAll { frames: In::new() });
    bp.autoconnect();
    let report = run(bp);
    let all = input(&report.stats, "all.frames");
    assert_eq!(all.delivered, FRAMES as u64, "{report}");
    let decode = ready_made(&report);
    assert_eq!(decode.done, FRAMES as u64, "{report}");
    assert_eq!(decode.skipped, 0, "{report}");
}

#[test]
fn a_corrupt_frame_a_keep_last_consumer_takes_is_counted_on_its_row() {
    let mut frames = jpeg_frames(FRAMES as u32);
    let last = frames.pop().unwrap();
    let mut bytes = last.data().to_vec();
    bytes.truncate(bytes.len() / 3);
    frames.push(CompressedImage::new(last.format(), bytes, 32, 16).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let mut bp = Blueprint::new();
    bp.add("camera", camera(frames, &done));
    bp.add(
        "slow",
        SlowOne {
            frames: In::new(),
            camera_done: done.clone(),
        },
    );
    bp.autoconnect();
    let report = run(bp);
    let slow = input(&report.stats, "slow.frames");
    assert_eq!(slow.dropped.decode_failed, 1, "{report}");
    assert_eq!(slow.delivered, 0, "{report}");
    assert_eq!(slow.dropped.queue_full, FRAMES as u64 - 1, "{report}");
    let decode = ready_made(&report);
    assert_eq!((decode.done, decode.failed), (0, 1), "{report}");
    assert_eq!(decode.skipped, FRAMES as u64 - 1, "{report}");
}
