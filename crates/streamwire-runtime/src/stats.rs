//! Statistics of a run: a snapshot while it runs (`stats()`), a report at its end, each a
//! table a person reads.
//!
//! This module holds the snapshot ([`RunStats`]) and the report ([`RunReport`]); apart:
//! the rows of each table (`rows.rs`), their printing (`tables.rs`), the merging of a
//! distributed run's reports (`merge.rs`), the accounting check (`balance.rs`), and the
//! live counters a snapshot is read from (`records.rs`).

use std::fmt;
use std::time::Duration;

pub use crate::queue::LatencySummary;

mod balance;
mod merge;
mod records;
mod rows;
mod tables;

pub use balance::{BalanceError, Balanced, Unbalanced, balance_checks, check_balance};
pub use rows::{
    BufferStats, CodecRole, CodecStats, DropCounts, InputStats, InstanceStats, LinkStats,
    OutputStats, RateStats, TapStats, TapWire, ThreadKind, ThreadStats, WireDirection, WireStats,
};

pub(crate) use records::{
    CodecRecord, InputRecord, InstanceRecord, LinkRecord, OutputRecord, Records, TapIngressRow,
    TapRecord, ThreadListing,
};

/// Everything counted so far in a run.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct RunStats {
    /// Wall time since the run started.
    pub elapsed: Duration,
    /// Per module instance.
    pub instances: Vec<InstanceStats>,
    /// Per output port.
    pub outputs: Vec<OutputStats>,
    /// Per input port (module inputs only; taps are listed apart).
    pub inputs: Vec<InputStats>,
    /// Per link of the plan.
    pub links: Vec<LinkStats>,
    /// Per codec node.
    pub codecs: Vec<CodecStats>,
    /// Per attached (or once attached) tap.
    pub taps: Vec<TapStats>,
    /// Per transport publisher and subscription, when the run's processes run as
    /// partitions: what crossed between them, as frames on the wire.
    pub wire: Vec<WireStats>,
    /// Buffers for large messages: each output's loans, and the process's pools (rows
    /// with nothing served are left out).
    #[serde(default)]
    pub buffers: Vec<BufferStats>,
    /// The run's threads in this process, in start order, and how often each was woken.
    #[serde(default)]
    pub threads: Vec<ThreadStats>,
}

/// Why a run ended.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum EndReason {
    /// Every module finished (a finite source ended and its consumers drained).
    Finished,
    /// `stop()` was called (or Ctrl+C in a binary).
    Stopped,
    /// A module failed; see the report's failure.
    Failed,
}

impl fmt::Display for EndReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EndReason::Finished => "finished",
            EndReason::Stopped => "stopped",
            EndReason::Failed => "failed",
        })
    }
}

/// What a run left behind: why it ended, who did not stop in time, and every counter.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct RunReport {
    /// Why it ended.
    pub reason: EndReason,
    /// The module failure that ended it, if any, as it was reported.
    pub failure: Option<String>,
    /// Threads that had not returned by the stop deadline, by name.
    pub stragglers: Vec<String>,
    /// Every counter, flushed after the threads were joined.
    pub stats: RunStats,
    /// A distributed run's planned links that received nothing for a while although their
    /// sender sent, one line each as the coordinator says it (`streamwire run
    /// --silent-link`); empty for a run of one process.
    #[serde(default)]
    pub silent_links: Vec<String>,
}

impl RunReport {
    /// A report of these parts (runs make their own; tools that merge or replay reports
    /// use this).
    pub fn new(
        reason: EndReason,
        failure: Option<String>,
        stragglers: Vec<String>,
        stats: RunStats,
    ) -> RunReport {
        RunReport {
            reason,
            failure,
            stragglers,
            stats,
            silent_links: Vec::new(),
        }
    }
}

impl RunStats {
    /// Module `instance`'s own counter `name` (`cx.counter(name)`), 0 when it has none
    /// of that name (a counter exists once first touched).
    ///
    /// ```
    /// let stats = streamwire_runtime::RunStats::default();
    /// assert_eq!(stats.counter("viewer", "seen"), 0);
    /// ```
    pub fn counter(&self, instance: &str, name: &str) -> u64 {
        self.instances
            .iter()
            .find(|i| i.name == instance)
            .and_then(|i| i.counters.iter().find(|(k, _)| k == name))
            .map_or(0, |(_, n)| *n)
    }
}

impl RunReport {
    /// What to say when threads did not stop within the deadline: who, and what to do
    /// about it. `None` when every thread stopped.
    ///
    /// ```
    /// use streamwire_runtime::{EndReason, RunReport, RunStats};
    /// let report = RunReport::new(EndReason::Stopped, None, vec!["slow".into()], RunStats::default());
    /// assert!(report.stop_overrun().unwrap().contains("`slow`"));
    /// ```
    pub fn stop_overrun(&self) -> Option<String> {
        if self.stragglers.is_empty() {
            return None;
        }
        let names = self
            .stragglers
            .iter()
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ");
        Some(format!(
            "did not stop within the deadline: {names} (still in a step: return from `step` \
             once the run stops; from then on `recv()` returns `None` and \
             `Context::sleep_until` returns false)"
        ))
    }
}
