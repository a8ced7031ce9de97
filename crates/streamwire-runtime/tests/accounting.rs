//! Every message accounted for (issue 25): a consumer's QoS holds along its whole path,
//! the report balances, and it says what happened (a failed instance, a source below its
//! rate). Every assertion is on a count or a state; waits have generous guards only.

mod common;

use std::time::Duration;

use common::{Camera, GUARD, balanced, input};
use streamwire_core::{Context, In, Node, NodeResult, Out, Trigger};
use streamwire_graph::{Blueprint, Placement, Report};
use streamwire_macros::Module;
use streamwire_msgs::{Image, Odometry};
use streamwire_runtime::{EndReason, RunOptions, Runtime};

/// A consumer that keeps every frame of `color_image`.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct KeepAllViewer {
    /// Every frame, in pixels.
    #[port(name = "color_image", keep_all)]
    pub frames: In<Image>,
}

impl Node for KeepAllViewer {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while self.frames.recv()?.is_some() {
            cx.counter("seen").increment();
        }
        Ok(())
    }
}

/// The case of issue 25: a camera on the default QoS (best effort, keep the last one),
/// publishing as fast as it can, and two keep-all pixel consumers in another process, so
/// that every frame goes through an encode node, the wire and a decode node.
fn keep_all_across_processes() -> Blueprint {
    let mut bp = Blueprint::new();
    bp.add("camera", Camera::new(40, Duration::ZERO));
    for name in ["detector", "mapper"] {
        let consumer = bp.add(name, KeepAllViewer { frames: In::new() });
        bp.place(
            &consumer,
            Placement::process("perception").on_host("base_station"),
        );
    }
    bp.autoconnect();
    bp
}

/// By default the plan refuses it, naming both ports: the wire of a best-effort output
/// may lose frames the keep-all inputs were promised.
#[test]
fn a_keep_all_input_behind_a_best_effort_wire_is_refused_naming_both_ports() {
    let error = keep_all_across_processes().into_runnable().unwrap_err();
    insta::assert_snapshot!(error.to_string());
}

/// Let through (the loopback loses nothing), every frame reaches both consumers: the
/// encode and decode nodes and the sender keep all for them, whatever the output's QoS.
#[test]
fn a_keep_all_consumer_gets_every_frame_through_codec_nodes_and_the_wire() {
    let mut bp = keep_all_across_processes();
    bp.lossy_path(Report::Warn);
    let runnable = bp.into_runnable().unwrap();
    for node in runnable.plan().codec_nodes() {
        assert_eq!(
            node.qos.history,
            streamwire_core::History::KeepAll,
            "{node:?}"
        );
    }
    let report = balanced(
        Runtime::start(runnable, RunOptions::default())
            .unwrap()
            .wait_timeout(GUARD),
    );
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    assert_eq!(report.stats.outputs[0].published, 40, "{report}");
    for port in ["detector.frames", "mapper.frames"] {
        let row = input(&report.stats, port);
        assert_eq!(row.delivered, 40, "{report}");
        assert_eq!(row.dropped.total(), 0, "{report}");
    }
    for codec in &report.stats.codecs {
        assert_eq!(codec.dropped, 0, "{report}");
    }
}

/// Publishes odometry until the run stops.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct Odometer {
    /// One message a millisecond.
    pub odom: Out<Odometry>,
}

impl Node for Odometer {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(1))
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        let odom = Odometry::new("odom", "base", Default::default(), Default::default())?;
        self.odom.publish(odom)?;
        Ok(())
    }
}

/// Panics on the third message it takes.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct Fragile {
    /// What it takes.
    pub odom: In<Odometry>,
    /// How many it took.
    #[state]
    pub taken: u32,
}

impl Node for Fragile {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while self.odom.recv()?.is_some() {
            self.taken += 1;
            assert!(self.taken < 3, "the third message is too much");
        }
        Ok(())
    }
}

#[test]
fn a_panicking_module_reads_failed_and_its_report_still_balances() {
    let mut bp = Blueprint::new();
    bp.add("odometer", Odometer { odom: Out::new() });
    bp.add(
        "fragile",
        Fragile {
            odom: In::new(),
            taken: 0,
        },
    );
    bp.autoconnect();
    let report = balanced(
        Runtime::start(bp.into_runnable().unwrap(), RunOptions::default())
            .unwrap()
            .wait_timeout(GUARD),
    );
    assert_eq!(report.reason, EndReason::Failed, "{report}");
    let fragile = report
        .stats
        .instances
        .iter()
        .find(|i| i.name == "fragile")
        .unwrap();
    assert!(fragile.failed, "{report}");
    let odometer = report
        .stats
        .instances
        .iter()
        .find(|i| i.name == "odometer")
        .unwrap();
    assert!(!odometer.failed, "{report}");
    let text = report.to_string();
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("fragile") && l.contains("failed")),
        "{text}"
    );
}

/// Asks for a step every 2 ms and takes 10 ms per step: it cannot reach a fifth of its rate.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct SlowSource {
    /// Never published: it is a source only by its trigger.
    pub odom: Out<Odometry>,
    /// Steps taken.
    #[state]
    pub steps: u32,
}

impl Node for SlowSource {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(2))
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.steps == 6 {
            cx.finish();
            return Ok(());
        }
        self.steps += 1;
        std::thread::sleep(Duration::from_millis(10));
        Ok(())
    }
}

#[test]
fn a_source_held_below_its_rate_is_flagged_with_the_rate_it_reached() {
    let mut bp = Blueprint::new();
    bp.add(
        "slow",
        SlowSource {
            odom: Out::new(),
            steps: 0,
        },
    );
    let report = balanced(
        Runtime::start(bp.into_runnable().unwrap(), RunOptions::default())
            .unwrap()
            .wait_timeout(GUARD),
    );
    let slow = &report.stats.instances[0];
    let rate = slow.rate.unwrap();
    assert_eq!(rate.configured_hz, 500.0, "{report}");
    // Each step sleeps 10 ms: at most 100 steps a second, whatever the machine.
    assert!(rate.reached_hz <= 100.0, "{report}");
    assert!(rate.is_below(), "{report}");
    assert!(report.to_string().contains("BELOW RATE"), "{report}");
}

/// A user message with a payload: its `Vec<u8>` field is its content (derived
/// `payload_len`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, streamwire_macros::Message)]
#[message(name = "test/Blob", crate = streamwire_core)]
pub struct Blob {
    /// The content.
    pub data: Vec<u8>,
    /// Not content.
    pub label: String,
}

/// A user message whose content size is its own (`payload_len = path`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, streamwire_macros::Message)]
#[message(name = "test/Samples", crate = streamwire_core, payload_len = Samples::content_len)]
pub struct Samples {
    /// Four bytes each.
    pub values: Vec<f32>,
}

impl Samples {
    fn content_len(&self) -> usize {
        self.values.len() * 4
    }
}

/// Publishes three blobs of 100 bytes and three sample sets of 25 values, then finishes.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct BlobSource {
    /// Blobs.
    pub blobs: Out<Blob>,
    /// Samples.
    pub samples: Out<Samples>,
    /// Steps taken.
    #[state]
    pub sent: u32,
}

impl Node for BlobSource {
    fn trigger(&self) -> Trigger {
        Trigger::FreeRunning
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.sent == 3 {
            cx.finish();
            return Ok(());
        }
        self.sent += 1;
        self.blobs.publish(Blob {
            data: vec![7; 100],
            label: "a label that is not content".into(),
        })?;
        self.samples.publish(Samples {
            values: vec![0.5; 25],
        })?;
        Ok(())
    }
}

/// Keeps every blob and sample set.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct BlobSink {
    /// Blobs.
    #[port(keep_all)]
    pub blobs: In<Blob>,
    /// Samples.
    #[port(keep_all)]
    pub samples: In<Samples>,
}

impl Node for BlobSink {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while self.blobs.recv()?.is_some() {}
        while self.samples.recv()?.is_some() {}
        Ok(())
    }
}

/// A user message's content size is counted on its links: the derived `payload_len` sums
/// its byte fields, an overriding one is used as written.
#[test]
fn a_user_messages_content_bytes_are_counted_on_its_links() {
    let mut bp = Blueprint::new();
    bp.add(
        "source",
        BlobSource {
            blobs: Out::new(),
            samples: Out::new(),
            sent: 0,
        },
    );
    bp.add(
        "sink",
        BlobSink {
            blobs: In::new(),
            samples: In::new(),
        },
    );
    bp.autoconnect();
    let report = balanced(
        Runtime::start(bp.into_runnable().unwrap(), RunOptions::default())
            .unwrap()
            .wait_timeout(GUARD),
    );
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    let link = |stream: &str| {
        report
            .stats
            .links
            .iter()
            .find(|l| l.stream == stream)
            .unwrap()
            .clone()
    };
    let blobs = link("blobs");
    assert_eq!((blobs.messages, blobs.content_bytes), (3, 300), "{report}");
    let samples = link("samples");
    assert_eq!(
        (samples.messages, samples.content_bytes),
        (3, 300),
        "{report}"
    );
    assert!(report.to_string().contains("300 B content"), "{report}");
}
