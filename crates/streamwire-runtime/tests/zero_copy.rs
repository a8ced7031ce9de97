//! In-process fan-out never copies a payload: a 2.76 MB image published to four
//! consumers allocates a small constant per delivery, nowhere near one payload.
//!
//! Its own test binary, because the counting allocator is global.

use std::time::{Duration, Instant};

use streamwire_core::{Context, In, Node, NodeResult, Out, Trigger};
use streamwire_graph::Blueprint;
use streamwire_macros::Module;
use streamwire_msgs::{Image, ImageEncoding};
use streamwire_runtime::{EndReason, RunOptions, Runtime};
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

#[test]
fn fan_out_of_a_720p_frame_to_four_consumers_copies_no_payload() {
    let frame = Image::from_packed(WIDTH, HEIGHT, ImageEncoding::Rgb8, vec![7u8; PAYLOAD]).unwrap();
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
    for name in ["a", "b", "c", "d"] {
        bp.add(
            name,
            Consumer {
                frames: In::new(),
                origin,
            },
        );
    }
    bp.autoconnect();
    let handle = Runtime::start(bp.into_runnable().unwrap(), RunOptions::default()).unwrap();

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

    assert_eq!(report.reason, EndReason::Finished, "{report}");
    let delivered: u64 = report.stats.inputs.iter().map(|i| i.delivered).sum();
    assert_eq!(
        delivered,
        4 * u64::from(publishes),
        "keep-all: every frame, to all four"
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

    let measured = (u64::from(publishes) - published_before) * 4;
    let per_delivery = change.bytes as u64 / measured.max(1);
    println!(
        "{} deliveries measured: {} bytes allocated in {} allocations, largest {} B ({per_delivery} B per delivery, payload {PAYLOAD} B)",
        measured, change.bytes, change.allocations, change.largest
    );
    // Not one payload copy in the whole measured stretch (hundreds of deliveries), and a
    // small constant per delivery (the envelope, the report's own strings amortised).
    assert!(change.bytes < PAYLOAD, "{change:?}");
    assert!(change.largest < PAYLOAD / 100, "{change:?}");
    assert!(per_delivery < 512, "{per_delivery} B per delivery");
}
