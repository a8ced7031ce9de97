//! One module at a time, on the runtime's real queues, with a manual clock: QoS drops,
//! `all` pairing by stamp, `latest`, periods and clock skew, all deterministic.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test failing"
)]

use std::time::Duration;

use streamwire_core::{
    Context, In, Node, NodeResult, Out, Slop, Timestamp, Trigger, pair_by_stamp,
};
use streamwire_macros::Module;
use streamwire_msgs::{DepthImage, Image, ImageEncoding, Odometry};
use streamwire_runtime::{Harness, HarnessError};

fn image(stamp_ms: u64) -> Image {
    Image::from_packed(2, 1, ImageEncoding::Mono8, vec![1u8, 2])
        .unwrap()
        .with_stamp(Timestamp::from_nanos(stamp_ms * 1_000_000))
}

fn depth(stamp_ms: u64) -> DepthImage {
    DepthImage::from_mm(1, 1, &[1000u16])
        .unwrap()
        .with_stamp(Timestamp::from_nanos(stamp_ms * 1_000_000))
}

/// Forwards every frame it gets; its input keeps the last 2.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Relay {
    #[port(name = "in", depth = 2)]
    input: In<Image>,
    #[port(name = "out")]
    output: Out<Image>,
}

impl Node for Relay {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while let Some(frame) = self.input.recv()? {
            self.output.publish(frame.message)?;
        }
        Ok(())
    }
}

#[test]
fn keep_last_drops_the_oldest_and_counts_it() {
    let mut harness = Harness::new(Relay {
        input: In::new(),
        output: Out::new(),
    });
    let ports = harness.ports();
    for stamp in 0..5 {
        harness.feed(ports.input, image(stamp)).unwrap();
    }
    assert_eq!(harness.run_until_idle().unwrap(), 1);
    let out = harness.take(ports.output);
    let stamps: Vec<u64> = out
        .iter()
        .map(|d| d.message.stamp().as_nanos() / 1_000_000)
        .collect();
    assert_eq!(stamps, [3, 4], "the newest two survive");
    assert_eq!(harness.drops(ports.input).queue_full, 3);
    assert_eq!(harness.drops(ports.input).total(), 3);
}

/// Pairs colour and depth by stamp within 5 ms.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Fuse {
    #[port(keep_all)]
    color: In<Image>,
    #[port(keep_all)]
    depth: In<DepthImage>,
    #[state]
    pairs: Vec<(u64, u64)>,
}

impl Node for Fuse {
    fn trigger(&self) -> Trigger {
        Trigger::all([(&self.color).into(), (&self.depth).into()])
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        let slop = Slop::Within(Duration::from_millis(5));
        while let Some((color, depth)) = pair_by_stamp(&mut self.color, &mut self.depth, slop)? {
            self.pairs.push((
                color.message.stamp().as_nanos() / 1_000_000,
                depth.message.stamp().as_nanos() / 1_000_000,
            ));
        }
        Ok(())
    }
}

#[test]
fn all_pairs_by_stamp_within_the_slop_and_counts_the_unpaired() {
    let mut harness = Harness::new(Fuse {
        color: In::new(),
        depth: In::new(),
        pairs: Vec::new(),
    });
    let ports = harness.ports();
    for stamp in [0, 10, 20, 30] {
        harness.feed(ports.color, image(stamp)).unwrap();
    }
    for stamp in [1, 22, 33] {
        harness.feed(ports.depth, depth(stamp)).unwrap();
    }
    harness.run_until_idle().unwrap();
    assert_eq!(harness.module().pairs, [(0, 1), (20, 22), (30, 33)]);
    // Colour at 10 ms had no depth within 5 ms.
    assert_eq!(harness.drops(ports.color).unpaired, 1);
    assert_eq!(harness.drops(ports.depth).unpaired, 0);
}

#[test]
fn exact_pairing_needs_equal_stamps() {
    let mut color: In<Image> = In::new();
    let mut depth_in: In<DepthImage> = In::new();
    // Unbound ports: pairing is an error, not a panic.
    assert!(pair_by_stamp(&mut color, &mut depth_in, Slop::Exact).is_err());

    /// Pairs colour and depth only when their stamps are equal.
    #[derive(Module)]
    #[module(crate = streamwire_core)]
    struct ExactFuse {
        #[port(keep_all)]
        color: In<Image>,
        #[port(keep_all)]
        depth: In<DepthImage>,
        #[state]
        pairs: Vec<u64>,
    }
    impl Node for ExactFuse {
        fn trigger(&self) -> Trigger {
            Trigger::all([(&self.color).into(), (&self.depth).into()])
        }
        fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
            while let Some((color, _)) =
                pair_by_stamp(&mut self.color, &mut self.depth, Slop::Exact)?
            {
                self.pairs
                    .push(color.message.stamp().as_nanos() / 1_000_000);
            }
            Ok(())
        }
    }
    let mut harness = Harness::new(ExactFuse {
        color: In::new(),
        depth: In::new(),
        pairs: Vec::new(),
    });
    let ports = harness.ports();
    for stamp in [10, 20, 30] {
        harness.feed(ports.color, image(stamp)).unwrap();
    }
    // 19 ms is within any sensible slop of 20 ms, but not equal.
    for stamp in [10, 19, 30] {
        harness.feed(ports.depth, depth(stamp)).unwrap();
    }
    harness.run_until_idle().unwrap();
    assert_eq!(harness.module().pairs, [10, 30]);
    assert_eq!(harness.drops(ports.depth).unpaired, 1, "depth at 19 ms");
    assert_eq!(harness.drops(ports.color).unpaired, 1, "colour at 20 ms");
}

/// Driven by images; reads the latest odometry when it needs it.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Annotate {
    frames: In<Image>,
    odometry: In<Odometry>,
    #[state]
    seen: Vec<(u64, Option<u64>)>,
}

impl Node for Annotate {
    fn trigger(&self) -> Trigger {
        Trigger::input(&self.frames)
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while let Some(frame) = self.frames.recv()? {
            let pose = self.odometry.latest()?;
            self.seen.push((
                frame.message.stamp().as_nanos() / 1_000_000,
                pose.map(|p| p.message.stamp().as_nanos() / 1_000_000),
            ));
        }
        Ok(())
    }
}

fn odometry(stamp_ms: u64) -> Odometry {
    Odometry::new("odom", "base_link", Default::default(), Default::default())
        .unwrap()
        .with_stamp(Timestamp::from_nanos(stamp_ms * 1_000_000))
}

#[test]
fn latest_reads_the_newest_slow_input_and_keeps_it_between_steps() {
    let mut harness = Harness::new(Annotate {
        frames: In::new(),
        odometry: In::new(),
        seen: Vec::new(),
    });
    let ports = harness.ports();
    harness.feed(ports.frames, image(1)).unwrap();
    harness.run_until_idle().unwrap();
    harness.feed(ports.odometry, odometry(5)).unwrap();
    harness.feed(ports.odometry, odometry(7)).unwrap();
    // Odometry alone does not trigger the module.
    assert_eq!(harness.run_until_idle().unwrap(), 0);
    harness.feed(ports.frames, image(8)).unwrap();
    harness.run_until_idle().unwrap();
    harness.feed(ports.frames, image(9)).unwrap();
    harness.run_until_idle().unwrap();
    assert_eq!(
        harness.module().seen,
        [(1, None), (8, Some(7)), (9, Some(7))]
    );
}

/// Ticks at 10 Hz of run-clock time and counts.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Ticker {
    ticks: Out<Odometry>,
}

impl Node for Ticker {
    fn trigger(&self) -> Trigger {
        Trigger::rate(10.0)
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        cx.counter("ticks").increment();
        self.ticks
            .publish(odometry(cx.now().as_nanos() / 1_000_000))?;
        Ok(())
    }
}

#[test]
fn a_period_fires_once_per_elapsed_period_of_the_manual_clock() {
    let mut harness = Harness::new(Ticker { ticks: Out::new() });
    let ports = harness.ports();
    assert_eq!(
        harness.run_until_idle().unwrap(),
        1,
        "the first tick is at start"
    );
    assert_eq!(harness.run_until_idle().unwrap(), 0);
    harness.clock().advance(Duration::from_millis(99));
    assert_eq!(harness.run_until_idle().unwrap(), 0);
    harness.clock().advance(Duration::from_millis(1));
    assert_eq!(harness.run_until_idle().unwrap(), 1);
    // Far behind: missed ticks are skipped, not burst.
    harness.clock().advance(Duration::from_secs(1));
    assert_eq!(harness.run_until_idle().unwrap(), 1);
    assert_eq!(harness.counter("ticks"), 3);
    let published = harness.take(ports.ticks);
    assert_eq!(published.len(), 3);
    assert_eq!(
        published.iter().map(|p| p.header.seq).collect::<Vec<_>>(),
        [0, 1, 2]
    );
}

/// Records latency as the module sees it.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Sink {
    frames: In<Image>,
}

impl Node for Sink {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while self.frames.recv()?.is_some() {}
        Ok(())
    }
}

#[test]
fn a_failing_step_is_an_error_of_the_harness() {
    #[derive(Module)]
    #[module(crate = streamwire_core)]
    struct Grumpy {
        frames: In<Image>,
    }
    impl Node for Grumpy {
        fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
            Err("no thanks".into())
        }
    }
    let mut harness = Harness::new(Grumpy { frames: In::new() });
    let error = harness.step().unwrap_err();
    assert!(matches!(error, HarnessError::Failed { phase: "step", .. }));
    assert_eq!(error.to_string(), "step returned an error: no thanks");

    #[derive(Module)]
    #[module(crate = streamwire_core)]
    struct Brittle {
        frames: In<Image>,
    }
    impl Node for Brittle {
        fn start(&mut self, _cx: &mut Context<'_>) -> NodeResult {
            panic!("no camera attached");
        }
        fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
            Ok(())
        }
    }
    let mut harness = Harness::new(Brittle { frames: In::new() });
    let error = harness.step().unwrap_err();
    assert_eq!(error.to_string(), "start panicked: no camera attached");
}

#[test]
fn a_closed_input_reports_closed_once_drained() {
    let mut harness = Harness::new(Sink { frames: In::new() });
    let ports = harness.ports();
    harness.feed(ports.frames, image(1)).unwrap();
    harness.close(ports.frames).unwrap();
    assert!(
        !harness.module().frames.is_closed().unwrap(),
        "one still queued"
    );
    harness.run_until_idle().unwrap();
    assert!(harness.module().frames.is_closed().unwrap());
}

#[test]
fn latency_is_arrival_minus_publish_and_negative_latency_is_clock_skew() {
    let mut harness = Harness::new(Sink { frames: In::new() });
    let ports = harness.ports();
    harness.feed(ports.frames, image(1)).unwrap();
    harness.clock().advance(Duration::from_millis(3));
    harness.run_until_idle().unwrap();
    let latency = harness.latency(ports.frames);
    assert_eq!(latency.count, 1);
    // 3 ms, to the histogram's 3 significant digits.
    assert!(latency.p50.as_micros().abs_diff(3_000) <= 3, "{latency:?}");

    // Published "later" than it arrives: the clocks of two hosts disagree.
    harness.feed(ports.frames, image(2)).unwrap();
    harness.clock().set(Timestamp::from_nanos(500_000_000));
    harness.run_until_idle().unwrap();
    let latency = harness.latency(ports.frames);
    assert_eq!(latency.count, 1, "not read as zero latency");
    assert_eq!(latency.clock_skew, 1);
}
