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

mod clock;
mod harness;
mod hub;
mod queue;
mod runtime;
mod stats;
mod wiring;
mod worker;

pub use clock::{Clock, ManualClock, ScaledClock, SystemClock};
pub use harness::{Harness, HarnessError};
pub use runtime::{
    AnyTap, Run, RunError, RunHandle, RunOptions, Runtime, StartError, StopFlag, Tap, TapError,
};
pub use stats::{
    CodecRole, CodecStats, DropCounts, EndReason, InputStats, InstanceStats, LatencySummary,
    LinkStats, OutputStats, RunReport, RunStats, TapStats,
};
