//! In-process fan-out never copies a payload: a 2.76 MB image published to four
//! consumers allocates a small constant per delivery, nowhere near one payload.
//!
//! Its own test binary, because the counting allocator is global.

use std::time::{Duration, Instant};

use streamwire_core::{Context, In, Node, NodeResult, Out, Trigger};
use streamwire_graph::Blueprint;
use streamwire_macros::Module;
use streamwire_msgs::{Image, ImageEncoding};
use streamwire_runtime::{EndReason, RunOptions, Runtime, balance_checks, check_balance};
use streamwire_testdata::alloc::{CountingAlloc, process_counts_during};

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

const WIDTH: u32 = 1280;
const HEIGHT: u32 = 720;
const PAYLOAD: usize = (WIDTH * HEIGHT * 3) as usize;

/// Publishes the same 720p frame (shared, not copied) `count` times.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Source {
    color_image: Out<Image>,
    #[state]
    frame: Image,
    #[state]
    left: u32,
}

impl Node for Source {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(2))
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.left == 0 {
            cx.finish();
            return Ok(());
        }
        self.left -= 1;
        self.color_image.publish(self.frame.clone())?;
        Ok(())
    }
}

/// Takes every frame and checks it is the shared one (same memory).
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Consumer {
    #[port(name = "color_image", keep_all)]
    frames: In<Image>,
    #[state]
    origin: usize,
}

impl Node for Consumer {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while let Some(frame) = self.frames.recv()? {
            if frame.message.data().as_ptr() as usize == self.origin {
                cx.counter("same_memory").increment();
            }
        }
        Ok(())
    }
}

/// Runs `publishes` frames of `width x height` to `consumers` keep-all consumers and
/// returns (bytes allocated per delivery after warm-up, largest single allocation).
#[expect(
    clippy::unwrap_used,
    reason = "test helper: a failure is the test failing"
)]
fn measure(width: u32, height: u32, consumers: usize) -> (u64, usize) {
    let payload = (width * height * 3) as usize;
    let frame = Image::from_packed(width, height, ImageEncoding::Rgb8, vec![7u8; payload]).unwrap();
    let origin = frame.data().as_ptr() as usize;
    let publishes = 200;
    let mut bp = Blueprint::new();
    bp.add(
        "source",
        Source {
            color_image: Out::new(),
            frame,
            left: publishes,
        },
    );
    for n in 0..consumers {
        bp.add(
            &format!("consumer_{n}"),
            Consumer {
                frames: In::new(),
                origin,
            },
        );
    }
    bp.autoconnect();
    // Keep-all consumers with a generous deadline: on a loaded machine a consumer thread
    // may go unscheduled for a while, and this test is about copies, not deadlines.
    let options = RunOptions {
        keep_all_deadline: Duration::from_secs(30),
        ..RunOptions::default()
    };
    let handle = Runtime::start(bp.into_runnable().unwrap(), options).unwrap();

    // Warm up (queues grow to their working size), then count from here to the end.
    let began = Instant::now();
    while handle.stats().outputs[0].published < 20 && began.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(2));
    }
    let ((published_before, report), change) = process_counts_during(|| {
        let published_before = handle.stats().outputs[0].published;
        (
            published_before,
            handle.wait_timeout(Duration::from_secs(30)),
        )
    });

    if let Err(error) = check_balance(&report) {
        panic!("{error}\n{report}");
    }
    eprintln!(
        "balance: {} reports checked in this test binary",
        balance_checks()
    );
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    let delivered: u64 = report.stats.inputs.iter().map(|i| i.delivered).sum();
    assert_eq!(
        delivered,
        consumers as u64 * u64::from(publishes),
        "keep-all: every frame, to every consumer"
    );
    let same_memory: u64 = report
        .stats
        .instances
        .iter()
        .flat_map(|i| &i.counters)
        .filter(|(k, _)| k == "same_memory")
        .map(|(_, v)| *v)
        .sum();
    assert_eq!(
        same_memory, delivered,
        "every consumer saw the producer's own bytes"
    );
    let measured = (u64::from(publishes) - published_before) * consumers as u64;
    let per_delivery = change.bytes as u64 / measured.max(1);
    println!(
        "{width}x{height} to {consumers}: {measured} deliveries measured, {} bytes in {} allocations, largest {} B: {per_delivery} B per delivery (payload {payload} B)",
        change.bytes, change.allocations, change.largest
    );
    if payload >= 1 << 20 {
        // Not one payload copy in the whole measured stretch.
        assert!(change.bytes < payload, "{change:?}");
        assert!(change.largest < payload / 100, "{change:?}");
    }
    (per_delivery, change.largest)
}

#[test]
fn fan_out_copies_no_payload_and_allocates_a_small_constant_per_delivery() {
    // One test, run in sequence: the counts are process-wide.
    let hd_to_four = measure(WIDTH, HEIGHT, 4);
    let small_to_four = measure(64, 48, 4);
    let hd_to_one = measure(WIDTH, HEIGHT, 1);
    assert_eq!(PAYLOAD, (WIDTH * HEIGHT * 3) as usize);
    // A small constant: the envelope and bookkeeping, whatever the payload's size or the
    // fan-out (the report's own strings are amortised over the deliveries).
    for (case, (per_delivery, _)) in [
        ("720p to 4", hd_to_four),
        ("64x48 to 4", small_to_four),
        ("720p to 1", hd_to_one),
    ] {
        assert!(per_delivery < 512, "{case}: {per_delivery} B per delivery");
    }
}
