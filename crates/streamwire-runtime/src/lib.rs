//! Runs streamwire blueprints in one process.
//!
//! [`Runtime::start`] takes what [`Blueprint::into_runnable`](streamwire_graph::Blueprint::into_runnable)
//! made and runs every module instance on a named thread of its own, stepping it when its
//! [`Trigger`](streamwire_core::Trigger) fires, and every codec node the plan inserted on
//! a thread too. What the plan shows is what runs:
//!
//! - **Zero-copy fan-out.** A publish stamps the header once and hands the same shared
//!   message to every consumer's queue: a reference-count bump each, never a payload copy.
//! - **Bounded queues that count.** Each input's queue follows its QoS: `keep_last(n)`
//!   evicts the oldest and counts it; `keep_all` holds up to a depth, then blocks the
//!   producer for at most a deadline, then drops and counts. A slow consumer never
//!   stalls a fast one on keep-last. Nothing is unbounded.
//! - **Codec nodes that work.** An encode node encodes once per message for all its
//!   consumers, and only while one of them needs the bytes (otherwise it counts
//!   `skipped`); ready-made bytes from the producer pass through byte-identical. A decode
//!   node decodes once for all pixel consumers of its process. Corrupt frames are counted
//!   and logged once per burst; the stream goes on.
//! - **Taps**: [`RunHandle::tap`] subscribes to any stream by name while it runs.
//! - **Counters** in [`RunHandle::stats`] while running and in the final [`RunReport`].
//! - **Bounded shutdown**: stop by call, by the end of every finite module, or by a
//!   module failure (a panic is caught and reported with the instance's name); threads
//!   are joined with a deadline and stragglers named.
//!
//! A single module is tested without a blueprint with the [`Harness`].
//!
//! # The shapes of a module
//!
//! Every module is a struct of ports (`#[derive(Module)]`) with a behaviour
//! ([`Node`](streamwire_core::Node)): a `step` the runtime calls when the module's
//! trigger fires. Each shape below runs in the harness, as it would in a blueprint.
//!
//! A **source** has no inputs and produces on its own schedule, here at a rate of
//! run-clock time (like ROS `Rate`):
//!
//! ```
//! # use std::time::Duration;
//! # use serde::{Deserialize, Serialize};
//! # use streamwire::prelude::*;
//! # #[derive(Clone, Debug, Serialize, Deserialize, Message)]
//! # #[message(name = "doc/Reading")]
//! # pub struct Reading(f32);
//! /// A thermometer read at 10 Hz.
//! #[derive(Module)]
//! pub struct Thermometer {
//!     pub temperature: Out<Reading>,
//! }
//!
//! impl Node for Thermometer {
//!     fn trigger(&self) -> Trigger {
//!         Trigger::rate(10.0)
//!     }
//!     fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
//!         self.temperature.publish(Reading(21.5))?;
//!         Ok(())
//!     }
//! }
//!
//! let mut harness = Harness::new(Thermometer { temperature: Out::new() });
//! let ports = harness.ports();
//! harness.run_until_idle()?; // the first tick
//! harness.clock().advance(Duration::from_millis(100));
//! harness.run_until_idle()?; // one period later
//! assert_eq!(harness.take(ports.temperature).len(), 2);
//! # Ok::<(), streamwire::runtime::HarnessError>(())
//! ```
//!
//! A **reactor** handles its input as it comes and publishes (the default trigger: any
//! input has a message); see [`Harness`] for one. A module that **waits on several inputs
//! at once** pairs them by sensor stamp, exactly or within a slop (ROS message_filters'
//! ExactTime and ApproximateTime), and what finds no partner is dropped and counted:
//!
//! ```
//! # use std::time::Duration;
//! # use streamwire::prelude::*;
//! const SLOP: Slop = Slop::Within(Duration::from_millis(5));
//!
//! /// Colour and depth of the same instant, for a point cloud.
//! #[derive(Module)]
//! pub struct Rgbd {
//!     #[port(keep_all)]
//!     pub color: In<Image>,
//!     #[port(keep_all)]
//!     pub depth: In<DepthImage>,
//!     #[state]
//!     pub pairs: u32,
//! }
//!
//! impl Node for Rgbd {
//!     fn trigger(&self) -> Trigger {
//!         Trigger::all([(&self.color).into(), (&self.depth).into()])
//!     }
//!     fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
//!         // Typed: `color` is a `Delivered<Image>`, `depth` a `Delivered<DepthImage>`.
//!         while let Some((_color, _depth)) = pair_by_stamp(&mut self.color, &mut self.depth, SLOP)? {
//!             self.pairs += 1;
//!         }
//!         Ok(())
//!     }
//! }
//!
//! let at = |ms: u64| Timestamp::from_nanos(ms * 1_000_000);
//! let mut harness = Harness::new(Rgbd { color: In::new(), depth: In::new(), pairs: 0 });
//! let ports = harness.ports();
//! for ms in [0, 33, 66] {
//!     let color = Image::from_packed(1, 1, ImageEncoding::Mono8, vec![0u8]).unwrap();
//!     harness.feed(ports.color, color.with_stamp(at(ms)))?;
//! }
//! for ms in [1, 68] {
//!     let depth = DepthImage::from_mm(1, 1, &[900]).unwrap();
//!     harness.feed(ports.depth, depth.with_stamp(at(ms)))?;
//! }
//! harness.run_until_idle()?;
//! assert_eq!(harness.module().pairs, 2);
//! assert_eq!(harness.drops(ports.color).unpaired, 1); // the frame at 33 ms
//! # Ok::<(), streamwire::runtime::HarnessError>(())
//! ```
//!
//! A module **driven by a fast input reads the latest value of a slow one** (odometry, a
//! map) with `latest`, which keeps the newest value between steps:
//!
//! ```
//! # use streamwire::prelude::*;
//! /// Tags each frame with the robot's latest pose.
//! #[derive(Module)]
//! pub struct Tagger {
//!     pub frames: In<Image>,
//!     pub odometry: In<Odometry>,
//!     #[state]
//!     pub tagged: u32,
//! }
//!
//! impl Node for Tagger {
//!     fn trigger(&self) -> Trigger {
//!         Trigger::input(&self.frames) // odometry alone does not step it
//!     }
//!     fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
//!         while let Some(_frame) = self.frames.recv()? {
//!             if self.odometry.latest()?.is_some() {
//!                 self.tagged += 1;
//!             }
//!         }
//!         Ok(())
//!     }
//! }
//!
//! let mut harness = Harness::new(Tagger { frames: In::new(), odometry: In::new(), tagged: 0 });
//! let ports = harness.ports();
//! let pose = Odometry::new("odom", "base_link", Default::default(), Default::default()).unwrap();
//! harness.feed(ports.odometry, pose)?;
//! for _ in 0..3 {
//!     let frame = Image::from_packed(1, 1, ImageEncoding::Mono8, vec![0u8]).unwrap();
//!     harness.feed(ports.frames, frame)?;
//!     harness.run_until_idle()?;
//! }
//! assert_eq!(harness.module().tagged, 3);
//! # Ok::<(), streamwire::runtime::HarnessError>(())
//! ```

mod builder;
mod clock;
mod handle;
mod harness;
mod hub;
mod options;
mod partition;
mod queue;
mod sender;
mod stats;
mod taps;
mod worker;

pub use builder::{Run, Runtime};
pub use clock::{Clock, ManualClock, ScaledClock, SystemClock};
pub use handle::{RunHandle, StopFlag};
pub use harness::{Harness, HarnessError};
pub use options::{RunError, RunOptions, StartError};
pub use partition::{Partitions, StartGate};
pub use stats::{
    BalanceError, Balanced, BufferStats, CodecRole, CodecStats, DropCounts, EndReason, InputStats,
    InstanceStats, LatencySummary, LinkStats, OutputStats, RateStats, RunReport, RunStats,
    TapStats, TapWire, ThreadKind, ThreadStats, Unbalanced, WireDirection, WireStats,
    balance_checks, check_balance,
};
#[doc(hidden)]
pub use taps::cut_next_tap_ingress;
pub use taps::{AnyTap, Tap, TapError};
