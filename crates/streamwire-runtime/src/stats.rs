//! Statistics of a run: a snapshot while it runs (`stats()`), a report at its end, each a
//! table a person reads.

use std::fmt::{self, Write as _};
use std::time::Duration;

use streamwire_core::DropReason;

pub use crate::queue::LatencySummary;

mod balance;
mod records;

pub use balance::{BalanceError, Balanced, Unbalanced, balance_checks, check_balance};

pub(crate) use records::{
    CodecRecord, InputRecord, InstanceRecord, LinkRecord, OutputRecord, Records, TapRecord,
    ThreadListing,
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

/// One thread of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ThreadStats {
    /// What it runs: an instance's name, `encode jpeg color_image`, `send odometry`.
    pub name: String,
    /// What kind of thread it is.
    pub kind: ThreadKind,
    /// The planned process it belongs to (`host/process`).
    pub process: String,
    /// How often it was woken to look for work while idle (a message queued for it,
    /// its producer finishing, the stop). A thread whose work nobody wants stays near 0:
    /// hubs hand a codec node or a sender a message only when someone downstream wants it.
    pub woken: u64,
}

/// The kinds of a run's threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum ThreadKind {
    /// A module instance's (not named `Module`: the trait's name stays unique, so that
    /// compiler errors about it say `Module`, not its whole path).
    #[default]
    Instance,
    /// A codec node of the plan.
    Codec,
    /// An encoder offering an `Out<Compressed<..>>`'s bytes to taps.
    TapEncoder,
    /// A keep-all stream's sender to other processes (a keep-last stream has none: its
    /// producer's thread puts it on the wire).
    Sender,
}

impl fmt::Display for ThreadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ThreadKind::Instance => "module",
            ThreadKind::Codec => "codec",
            ThreadKind::TapEncoder => "tap encoder",
            ThreadKind::Sender => "sender",
        })
    }
}

/// Buffers served for large messages (`streamwire::buffer`): an output's loans and its
/// pool, or one of the process's pools (`decoded images`, `received blobs`, `encoded
/// images`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct BufferStats {
    /// `instance.port` for an output's loans, or the pool's name.
    pub name: String,
    /// Loans of shared memory (sent by reference, no copy). 0 for a process pool.
    pub shared: u64,
    /// Loans of pooled heap buffers (the stream does not leave through shared memory). 0
    /// for a process pool.
    pub pooled: u64,
    /// Loans that wanted shared memory and got a heap buffer (its pool was full). 0 for
    /// a process pool.
    pub loan_fallback: u64,
    /// Heap buffers served by the pool from idle ones.
    pub hits: u64,
    /// Heap buffers the pool had to allocate.
    pub misses: u64,
    /// Bytes of the pool's buffers alive at the snapshot, idle or lent.
    pub bytes: u64,
}

/// Which way a [`WireStats`] row's frames go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum WireDirection {
    /// A publisher: frames sent by this partition.
    #[default]
    Out,
    /// A subscription: frames received by this partition.
    In,
}

/// One end of a stream's crossing between partitions.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct WireStats {
    /// The partition (the planned process) this end is in.
    pub partition: String,
    /// The stream's key on the transport.
    pub key: String,
    /// Sending or receiving.
    pub direction: WireDirection,
    /// Frames sent or received (a finished stream's end-of-stream frame included).
    pub frames: u64,
    /// Their bytes on the wire.
    pub wire_bytes: u64,
    /// Sending: messages published while no other partition subscribed (not built, not
    /// sent). Receiving: 0.
    pub unmatched: u64,
    /// Sending: messages the sender's queue dropped (the stream's QoS) before they got a
    /// link sequence number: never counted as lost on the wire.
    pub sender_dropped: u64,
    /// Receiving: frames that never arrived, from gaps in the link sequence (cause
    /// `gap`: on every consumer's row as `lost_on_wire`).
    pub lost: u64,
    /// Receiving: times the link sequence started over (cause `reset`): a producer that
    /// restarted, or a number no loss explains (a jump larger than the stream could have
    /// sent since its previous frame, a step back to 0). What was lost across a reset
    /// cannot be known from the numbers, so none of it is counted lost; the count goes on
    /// from the new number, and later gaps are counted. Sending: 0.
    #[serde(default)]
    pub resets: u64,
    /// Receiving: frames of a type the plan does not send on this link (after a closed
    /// run's access control, only a misbehaving member can send one): counted here, never
    /// as a message of the stream (neither published nor delivered nor dropped). Sending: 0.
    #[serde(default)]
    pub foreign: u64,
    /// Sending: messages lost before the sender by the codec nodes feeding it (counted
    /// there, relayed here), by reason. Receiving: none.
    pub dropped_upstream: DropCounts,
    /// Sending: messages still in the sender's queue, or in a codec node's before it,
    /// when the run stopped. Receiving: 0.
    pub unprocessed_at_stop: u64,
    /// Receiving: frames that arrived after the run began to stop (counted, not
    /// delivered). Sending: 0.
    pub in_flight_at_stop: u64,
    /// Receiving: frames refused, by kind (truncated, garbage, incompatible, wrong type,
    /// undecodable), in `Rejection::ALL` order. Sending: messages that failed to serialize,
    /// under `undecodable`.
    pub rejected: Vec<(String, u64)>,
    /// Receiving: copies made to read what arrived: a blob (an image's pixels) spread over
    /// several slices (a large frame reassembled from TCP fragments), or a version 1 frame
    /// received in several, copied once into one buffer; every other blob was read where
    /// it arrived. Sending: 0.
    #[serde(default)]
    pub receive_copies: u64,
    /// Receiving: frames whose large part arrived in shared memory (by reference, from a
    /// process of this host); the others of `frames` came through the link. Sending: 0.
    #[serde(default)]
    pub shared_memory: u64,
    /// An out row whose frames the stream's forwarding thread (its producer's, or its
    /// codec node's) puts on the wire: a keep-last stream, with no sender thread.
    #[serde(default)]
    pub sent_by_producer: bool,
    /// Batches put on an out row (several small messages that were waiting together, in
    /// one transport message), and the frames they held (of `frames`).
    #[serde(default)]
    pub batches: u64,
    /// See `batches`.
    #[serde(default)]
    pub batched: u64,
}

impl WireStats {
    /// Frames refused, all kinds.
    pub fn rejected_total(&self) -> u64 {
        self.rejected.iter().map(|(_, n)| n).sum()
    }

    /// Frames refused of kind `name` (`truncated`, `garbage`...).
    pub fn rejected(&self, name: &str) -> u64 {
        self.rejected
            .iter()
            .find(|(k, _)| k == name)
            .map_or(0, |(_, n)| *n)
    }
}

/// One module instance.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct InstanceStats {
    /// Full name.
    pub name: String,
    /// Module type.
    pub module_type: String,
    /// Steps taken.
    pub steps: u64,
    /// CPU time of the instance's thread.
    pub cpu: Duration,
    /// The longest single step (wall time).
    pub longest_step: Duration,
    /// True while the current step has run longer than the stall threshold.
    pub stalled: bool,
    /// True once the module finished (or the run stopped it).
    pub finished: bool,
    /// True when it ended by an error or a panic (its state reads `failed`).
    pub failed: bool,
    /// The planned process it runs in.
    pub process: String,
    /// The host of that process.
    pub host: String,
    /// For an instance stepping on a period (a source): the rate it was configured for
    /// and the rate it reached.
    pub rate: Option<RateStats>,
    /// The module's own counters (`cx.counter(..)`), by name.
    pub counters: Vec<(String, u64)>,
}

/// The rate of an instance that steps on a period.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct RateStats {
    /// Steps per second its trigger asks for.
    pub configured_hz: f64,
    /// Steps per second it took, from its first step to its last.
    pub reached_hz: f64,
}

impl RateStats {
    /// Below this share of its configured rate, an instance is flagged.
    pub const FLAG_BELOW: f64 = 0.9;

    /// Whether it reached less than 90% of its configured rate.
    pub fn is_below(&self) -> bool {
        self.reached_hz < self.configured_hz * Self::FLAG_BELOW
    }
}

/// One output.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct OutputStats {
    /// `instance.port`.
    pub port: String,
    /// Its stream.
    pub stream: String,
    /// Messages published.
    pub published: u64,
}

/// Messages an input dropped, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct DropCounts {
    /// Queue full (keep-last eviction, or keep-all past its deadline).
    pub queue_full: u64,
    /// No partner for an `all` trigger.
    pub unpaired: u64,
    /// The decode node upstream could not decode it.
    pub decode_failed: u64,
    /// Could not be deserialized, or of another type.
    pub deserialize_failed: u64,
    /// An encode or decode node's queue on the way was full.
    pub codec_queue_full: u64,
    /// The sender's queue was full (the consumer is in another process).
    pub sender_dropped: u64,
    /// Sent on the wire and never received.
    pub lost_on_wire: u64,
}

impl DropCounts {
    /// The count for `reason`.
    pub fn get(&self, reason: DropReason) -> u64 {
        match reason {
            DropReason::QueueFull => self.queue_full,
            DropReason::Unpaired => self.unpaired,
            DropReason::DecodeFailed => self.decode_failed,
            DropReason::DeserializeFailed => self.deserialize_failed,
            DropReason::CodecQueueFull => self.codec_queue_full,
            DropReason::SenderDropped => self.sender_dropped,
            DropReason::LostOnWire => self.lost_on_wire,
            _ => 0,
        }
    }

    pub(crate) fn set(&mut self, reason: DropReason, n: u64) {
        match reason {
            DropReason::QueueFull => self.queue_full = n,
            DropReason::Unpaired => self.unpaired = n,
            DropReason::DecodeFailed => self.decode_failed = n,
            DropReason::DeserializeFailed => self.deserialize_failed = n,
            DropReason::CodecQueueFull => self.codec_queue_full = n,
            DropReason::SenderDropped => self.sender_dropped = n,
            DropReason::LostOnWire => self.lost_on_wire = n,
            _ => {}
        }
    }

    /// Every drop.
    pub fn total(&self) -> u64 {
        DropReason::ALL.iter().map(|reason| self.get(*reason)).sum()
    }
}

impl fmt::Display for DropCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        for reason in DropReason::ALL {
            let n = self.get(reason);
            if n > 0 {
                parts.push(format!("{n} {reason}"));
            }
        }
        if parts.is_empty() {
            f.write_str("0")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

/// One input.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct InputStats {
    /// `instance.port`.
    pub port: String,
    /// Its stream.
    pub stream: String,
    /// Messages the module took.
    pub delivered: u64,
    /// Messages dropped before the module saw them, anywhere on their way, by reason.
    pub dropped: DropCounts,
    /// Messages published while the module was not subscribed (it had finished): not
    /// sent to it.
    pub unmatched: u64,
    /// Messages still queued on the way (in this input's queue, or a codec node's
    /// before it) when the run stopped.
    pub unprocessed_at_stop: u64,
    /// Messages on the wire when the run stopped (they arrived after it).
    pub in_flight_at_stop: u64,
    /// Messages its sender counted as not sent (published while nobody listened) that
    /// this input then got from the stream's history, as a late joiner of a
    /// transient-local stream: delivered, so taken off the not-sent term when that
    /// sender's terms are added.
    #[serde(default)]
    pub recovered: u64,
    /// The key of the stream its messages crossed between processes on, when they did:
    /// that sender's wire row counts what was lost before the wire.
    pub via_wire: Option<String>,
    /// True once the terms of that sender's row were added to this row (by the run's
    /// report, or by [`RunReport::merge`] when the sender ran in another process).
    pub wire_terms_added: bool,
    /// Arrival minus publish time of every delivery.
    pub latency: LatencySummary,
}

/// One link of the plan.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct LinkStats {
    /// Where it starts (`camera.color_image`, `encode jpeg color_image`).
    pub from: String,
    /// Where it ends.
    pub to: String,
    /// The stream it carries.
    pub stream: String,
    /// Messages handed to the receiving queue.
    pub messages: u64,
    /// Payload bytes of those messages as the receiving queue got them (content bytes,
    /// never wire bytes: a crossing's frames are counted in the wire rows).
    pub content_bytes: u64,
    /// True when the link crosses between processes (its messages went through a
    /// sender, the wire and an ingress).
    pub crosses_processes: bool,
}

/// Encode or decode, at run time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum CodecRole {
    /// An encode node.
    #[default]
    Encode,
    /// A decode node.
    Decode,
}

impl fmt::Display for CodecRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CodecRole::Encode => "encode",
            CodecRole::Decode => "decode",
        })
    }
}

/// One codec node.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct CodecStats {
    /// Encode or decode.
    pub role: CodecRole,
    /// The codec, e.g. `jpeg`.
    pub codec: String,
    /// The stream it encodes or decodes.
    pub stream: String,
    /// Where the plan placed it.
    pub placement: String,
    /// Messages encoded or decoded.
    pub done: u64,
    /// Messages not encoded because nobody needed the bytes.
    pub skipped: u64,
    /// Messages its own input queue dropped before it got to them (the node fell behind
    /// its stream's keep-last depth), counted here rather than lost.
    pub dropped: u64,
    /// Ready-made encoded messages passed through unchanged (an encode node fed bytes).
    pub passed_through: u64,
    /// Messages that failed (corrupt input), counted and skipped.
    pub failed: u64,
    /// Payload bytes in.
    pub bytes_in: u64,
    /// Payload bytes out.
    pub bytes_out: u64,
    /// Total time spent encoding or decoding.
    pub busy: Duration,
    /// Where an adaptive encoder stands (JPEG under a `max_bitrate`): its quality, width,
    /// changes and the bit rate over its window.
    #[serde(default)]
    pub adaptation: Option<streamwire_core::Adaptation>,
}

impl CodecStats {
    /// Mean time per encoded or decoded message.
    pub fn time_per_message(&self) -> Duration {
        match u32::try_from(self.done) {
            Ok(0) | Err(_) => Duration::ZERO,
            Ok(n) => self.busy / n,
        }
    }
}

/// One tap.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct TapStats {
    /// The stream it listens to.
    pub stream: String,
    /// Attached now.
    pub attached: bool,
    /// Messages taken.
    pub delivered: u64,
    /// Messages its keep-last queue dropped.
    pub dropped: u64,
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

impl RunStats {
    /// Adds the counters of `other` (another process's share of the same run): the longer
    /// elapsed time, every other row appended. Every field is named here, so a field added
    /// to `RunStats` does not compile until it is merged too.
    pub fn merge(&mut self, other: RunStats) {
        let RunStats {
            elapsed,
            instances,
            outputs,
            inputs,
            links,
            codecs,
            taps,
            wire,
            buffers,
            threads,
        } = other;
        self.elapsed = self.elapsed.max(elapsed);
        self.instances.extend(instances);
        self.outputs.extend(outputs);
        self.inputs.extend(inputs);
        self.links.extend(links);
        self.codecs.extend(codecs);
        self.taps.extend(taps);
        self.wire.extend(wire);
        self.buffers.extend(buffers);
        self.threads.extend(threads);
    }
}

impl RunStats {
    /// Adds to every input whose messages crossed between processes the terms its
    /// sender counted before the wire (`sender_dropped`, the drops relayed from codec
    /// nodes there, messages it could not serialize as `deserialize_failed`, not sent,
    /// unprocessed at stop), once, where the sender's row is in
    /// these stats: a message lost anywhere on a consumer's path is on its row.
    pub fn add_wire_terms(&mut self) {
        let RunStats { inputs, wire, .. } = self;
        for input in inputs.iter_mut().filter(|i| !i.wire_terms_added) {
            let Some(sender) = input.via_wire.as_ref().and_then(|key| {
                wire.iter()
                    .find(|w| w.direction == WireDirection::Out && &w.key == key)
            }) else {
                continue;
            };
            let dropped = &mut input.dropped;
            dropped.sender_dropped += sender.sender_dropped;
            for reason in DropReason::ALL {
                let n = dropped.get(reason) + sender.dropped_upstream.get(reason);
                dropped.set(reason, n);
            }
            // A message the sender could not serialize never reached the wire.
            dropped.deserialize_failed += sender
                .rejected
                .iter()
                .filter(|(kind, _)| kind == "undecodable")
                .map(|(_, n)| n)
                .sum::<u64>();
            // What it recovered from the stream's history is on the sender's not-sent
            // count (published while nobody listened), but was delivered.
            input.unmatched += sender.unmatched.saturating_sub(input.recovered);
            input.unprocessed_at_stop += sender.unprocessed_at_stop;
            input.wire_terms_added = true;
        }
    }
}

impl RunReport {
    /// One report of a run whose processes each reported apart (a distributed run's
    /// workers), given as (process, report): it ended for `reason` with `failure`; its
    /// stragglers are `stragglers` followed by each process's own, suffixed
    /// ` (in {process})`; its counters are every process's, merged by
    /// [`RunStats::merge`]. The processes' own reasons and failures are not read: the
    /// caller, who saw the whole run, decides those.
    pub fn merge(
        reason: EndReason,
        failure: Option<String>,
        mut stragglers: Vec<String>,
        reports: impl IntoIterator<Item = (String, RunReport)>,
    ) -> RunReport {
        let mut stats = RunStats::default();
        for (process, report) in reports {
            stats.merge(report.stats);
            stragglers.extend(
                report
                    .stragglers
                    .into_iter()
                    .map(|thread| format!("{thread} (in {process})")),
            );
        }
        stats.add_wire_terms();
        RunReport::new(reason, failure, stragglers, stats)
    }
}

impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "run {} after {}", self.reason, ms(self.stats.elapsed))?;
        if let Some(failure) = &self.failure {
            writeln!(f, "failure: {failure}")?;
        }
        if let Some(overrun) = self.stop_overrun() {
            writeln!(f, "{overrun}")?;
        }
        write!(f, "{}", self.stats)
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

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 1.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.3} ms")
    }
}

/// Bits per second, in Mbit/s.
fn bitrate(bits: u64) -> String {
    format!("{:.2} Mbit/s", bits as f64 / 1e6)
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Writes rows as left-aligned columns under a title.
fn table(out: &mut String, title: &str, header: &[&str], rows: &[Vec<String>]) {
    if rows.is_empty() {
        return;
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut text = String::from("  ");
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                let _ = write!(text, "{cell:<w$}  ");
            }
        }
        text.trim_end().to_owned()
    };
    let _ = writeln!(out, "{title}");
    let _ = writeln!(out, "{}", line(header.to_vec()));
    for row in rows {
        let _ = writeln!(out, "{}", line(row.iter().map(String::as_str).collect()));
    }
}

impl RunStats {
    /// The instances table.
    fn write_instances(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .instances
            .iter()
            .map(|i| {
                let mut state = match (i.failed, i.finished) {
                    (true, _) => "failed",
                    (false, true) => "finished",
                    (false, false) => "running",
                }
                .to_owned();
                if i.stalled {
                    state.push_str(", STALLED");
                }
                if let Some(rate) = i.rate.filter(RateStats::is_below) {
                    let _ = write!(
                        state,
                        ", BELOW RATE {:.1} of {:.1} Hz",
                        rate.reached_hz, rate.configured_hz
                    );
                }
                let counters = i
                    .counters
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ");
                vec![
                    i.name.clone(),
                    i.module_type.clone(),
                    i.process.clone(),
                    i.host.clone(),
                    i.steps.to_string(),
                    ms(i.cpu),
                    ms(i.longest_step),
                    state,
                    counters,
                ]
            })
            .collect();
        table(
            out,
            "instances",
            &[
                "instance",
                "module",
                "process",
                "host",
                "steps",
                "cpu",
                "longest step",
                "state",
                "counters",
            ],
            &rows,
        );
    }

    /// The outputs table.
    fn write_outputs(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .outputs
            .iter()
            .map(|o| vec![o.port.clone(), o.stream.clone(), o.published.to_string()])
            .collect();
        table(out, "outputs", &["output", "stream", "published"], &rows);
    }

    /// The inputs table.
    fn write_inputs(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .inputs
            .iter()
            .map(|i| {
                vec![
                    i.port.clone(),
                    i.stream.clone(),
                    i.delivered.to_string(),
                    i.dropped.to_string(),
                    i.unmatched.to_string(),
                    i.unprocessed_at_stop.to_string(),
                    i.in_flight_at_stop.to_string(),
                    ms(i.latency.p50),
                    ms(i.latency.p99),
                    i.latency.clock_skew.to_string(),
                ]
            })
            .collect();
        table(
            out,
            "inputs",
            &[
                "input",
                "stream",
                "delivered",
                "dropped",
                "not sent",
                "unprocessed at stop",
                "in flight at stop",
                "latency p50",
                "p99",
                "clock skew",
            ],
            &rows,
        );
    }

    /// The links table: content bytes, each row saying whether it crosses processes
    /// (the wire bytes of a crossing are in the wire table).
    fn write_links(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .links
            .iter()
            .map(|l| {
                vec![
                    format!("{} -> {}", l.from, l.to),
                    l.stream.clone(),
                    l.messages.to_string(),
                    format!("{} content", bytes(l.content_bytes)),
                    if l.crosses_processes {
                        "across processes"
                    } else {
                        "in process"
                    }
                    .to_owned(),
                ]
            })
            .collect();
        table(
            out,
            "links",
            &["link", "stream", "messages", "bytes", "path"],
            &rows,
        );
    }

    /// The codec nodes table.
    fn write_codecs(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .codecs
            .iter()
            .map(|c| {
                vec![
                    format!("{} {}", c.role, c.codec),
                    c.stream.clone(),
                    c.placement.clone(),
                    c.done.to_string(),
                    c.skipped.to_string(),
                    c.dropped.to_string(),
                    c.passed_through.to_string(),
                    c.failed.to_string(),
                    bytes(c.bytes_in),
                    bytes(c.bytes_out),
                    ms(c.time_per_message()),
                ]
            })
            .collect();
        table(
            out,
            "codec nodes",
            &[
                "node", "stream", "where", "done", "skipped", "dropped", "passed", "failed", "in",
                "out", "per msg",
            ],
            &rows,
        );
    }

    /// The bit-rate budgets: where each adaptive encoder stands (listed only when one
    /// has a budget).
    fn write_budgets(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .codecs
            .iter()
            .filter_map(|c| Some((c, c.adaptation.as_ref()?)))
            .map(|(c, a)| {
                vec![
                    c.stream.clone(),
                    c.placement.clone(),
                    bitrate(a.budget_bitrate),
                    a.quality.to_string(),
                    a.width.map_or_else(|| "full".to_owned(), |w| w.to_string()),
                    a.changes.to_string(),
                    bitrate(a.window_bitrate),
                    a.worst_window_bitrate
                        .map_or_else(|| "-".to_owned(), bitrate),
                ]
            })
            .collect();
        table(
            out,
            "bit-rate budgets (quality and width now; windows of 2 s on the frames' stamps, the worst after the first)",
            &[
                "stream",
                "where",
                "budget",
                "quality",
                "width",
                "changes",
                "last window",
                "worst window",
            ],
            &rows,
        );
    }

    /// The taps table.
    fn write_taps(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .taps
            .iter()
            .map(|t| {
                vec![
                    t.stream.clone(),
                    if t.attached { "attached" } else { "detached" }.to_owned(),
                    t.delivered.to_string(),
                    t.dropped.to_string(),
                ]
            })
            .collect();
        table(
            out,
            "taps",
            &["stream", "state", "delivered", "dropped"],
            &rows,
        );
    }

    /// The wire table (between partitions).
    fn write_buffers(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .buffers
            .iter()
            .map(|b| {
                vec![
                    b.name.clone(),
                    b.shared.to_string(),
                    b.pooled.to_string(),
                    b.loan_fallback.to_string(),
                    b.hits.to_string(),
                    b.misses.to_string(),
                    bytes(b.bytes),
                ]
            })
            .collect();
        table(
            out,
            "buffers (loans of large messages, pools)",
            &[
                "output or pool",
                "shared",
                "pooled",
                "loan fallback",
                "pool hits",
                "pool misses",
                "pool bytes",
            ],
            &rows,
        );
    }

    fn write_wire(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .wire
            .iter()
            .map(|w| {
                let problems = w
                    .rejected
                    .iter()
                    .map(|(k, n)| (k.as_str(), *n))
                    .chain([("reset", w.resets), ("foreign", w.foreign)])
                    .filter(|(_, n)| *n > 0)
                    .map(|(k, n)| format!("{k}={n}"))
                    .collect::<Vec<_>>()
                    .join(" ");
                vec![
                    w.partition.clone(),
                    match w.direction {
                        WireDirection::Out => "out",
                        WireDirection::In => "in",
                    }
                    .to_owned(),
                    w.key.clone(),
                    w.frames.to_string(),
                    bytes(w.wire_bytes),
                    w.unmatched.to_string(),
                    w.sender_dropped.to_string(),
                    w.dropped_upstream.total().to_string(),
                    w.unprocessed_at_stop.to_string(),
                    w.lost.to_string(),
                    w.in_flight_at_stop.to_string(),
                    if problems.is_empty() {
                        "-".to_owned()
                    } else {
                        problems
                    },
                ]
            })
            .collect();
        table(
            out,
            "wire (between partitions: frames, wire bytes)",
            &[
                "partition",
                "dir",
                "key",
                "frames",
                "bytes",
                "unmatched",
                "sender dropped",
                "dropped upstream",
                "unprocessed at stop",
                "lost",
                "in flight at stop",
                "rejected, reset, foreign",
            ],
            &rows,
        );
        // Lines under the table, each naming the rows it is about (none: no line).
        let mut note = |title: &str, describe: &dyn Fn(&WireStats) -> Option<String>| {
            let items: Vec<String> = self.wire.iter().filter_map(describe).collect();
            if !items.is_empty() {
                let _ = writeln!(out, "{title}: {}", items.join(", "));
            }
        };
        note(
            "copied once on receipt (spread over several received slices)",
            &|w| {
                (w.receive_copies > 0)
                    .then(|| format!("{} {} {}", w.partition, w.key, w.receive_copies))
            },
        );
        note(
            "received through shared memory (by reference, from this host)",
            &|w| {
                (w.shared_memory > 0)
                    .then(|| format!("{} {} {}", w.partition, w.key, w.shared_memory))
            },
        );
        note("sent in batches (small messages waiting together)", &|w| {
            (w.batches > 0).then(|| {
                format!(
                    "{} {} {} frames in {} batches",
                    w.partition, w.key, w.batched, w.batches
                )
            })
        });
        note(
            "put on the wire by the producer's thread (keep-last, no sender thread)",
            &|w| {
                w.sent_by_producer
                    .then(|| format!("{} {}", w.partition, w.key))
            },
        );
    }

    fn write_threads(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .threads
            .iter()
            .map(|t| {
                vec![
                    t.name.clone(),
                    t.kind.to_string(),
                    t.process.clone(),
                    t.woken.to_string(),
                ]
            })
            .collect();
        table(
            out,
            "threads (woken: times an idle thread was woken to look for work)",
            &["thread", "kind", "process", "woken"],
            &rows,
        );
    }
}

impl fmt::Display for RunStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.write_instances(&mut out);
        self.write_outputs(&mut out);
        self.write_inputs(&mut out);
        self.write_links(&mut out);
        self.write_codecs(&mut out);
        self.write_budgets(&mut out);
        self.write_taps(&mut out);
        self.write_wire(&mut out);
        self.write_buffers(&mut out);
        self.write_threads(&mut out);
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counters of one process, every field non-zero and marked with `n` (each
    /// struct is written out whole: a new field must be given a value here).
    fn stats_of(n: u64, process: &str) -> RunStats {
        let d = |k: u64| Duration::from_millis(n * 10 + k);
        RunStats {
            elapsed: d(0),
            instances: vec![InstanceStats {
                name: format!("camera{n}"),
                module_type: "Camera".to_owned(),
                steps: n,
                cpu: d(1),
                longest_step: d(2),
                stalled: true,
                finished: true,
                failed: true,
                process: process.to_owned(),
                host: format!("host{n}"),
                rate: Some(RateStats {
                    configured_hz: n as f64,
                    reached_hz: n as f64 / 2.0,
                }),
                counters: vec![("frames".to_owned(), n)],
            }],
            outputs: vec![OutputStats {
                port: format!("camera{n}.image"),
                stream: format!("image{n}"),
                published: n,
            }],
            inputs: vec![InputStats {
                port: format!("viewer{n}.image"),
                stream: format!("image{n}"),
                delivered: n,
                dropped: DropCounts {
                    queue_full: n,
                    unpaired: n + 1,
                    decode_failed: n + 2,
                    deserialize_failed: n + 3,
                    codec_queue_full: n + 4,
                    sender_dropped: n + 5,
                    lost_on_wire: n + 6,
                },
                unmatched: n + 7,
                unprocessed_at_stop: n + 8,
                in_flight_at_stop: n + 9,
                recovered: n + 10,
                via_wire: Some(format!("image{n}/compressed")),
                wire_terms_added: true,
                latency: LatencySummary {
                    count: n,
                    p50: d(3),
                    p99: d(4),
                    max: d(5),
                    clock_skew: n,
                },
            }],
            links: vec![LinkStats {
                from: format!("camera{n}.image"),
                to: format!("viewer{n}.image"),
                stream: format!("image{n}"),
                messages: n,
                content_bytes: n * 100,
                crosses_processes: true,
            }],
            codecs: vec![CodecStats {
                role: CodecRole::Decode,
                codec: "jpeg".to_owned(),
                stream: format!("image{n}"),
                placement: process.to_owned(),
                done: n,
                skipped: n + 1,
                dropped: n + 2,
                passed_through: n + 3,
                failed: n + 4,
                bytes_in: n + 5,
                bytes_out: n + 6,
                busy: d(6),
                adaptation: None,
            }],
            taps: vec![TapStats {
                stream: format!("image{n}"),
                attached: true,
                delivered: n,
                dropped: n + 1,
            }],
            wire: vec![WireStats {
                partition: process.to_owned(),
                key: format!("image{n}"),
                direction: WireDirection::In,
                frames: n,
                wire_bytes: n + 1,
                unmatched: n + 2,
                sender_dropped: n + 3,
                lost: n + 4,
                resets: n + 9,
                foreign: n + 10,
                dropped_upstream: DropCounts {
                    codec_queue_full: n + 5,
                    ..DropCounts::default()
                },
                unprocessed_at_stop: n + 6,
                in_flight_at_stop: n + 7,
                rejected: vec![("garbage".to_owned(), n)],
                receive_copies: n + 8,
                shared_memory: n + 11,
                sent_by_producer: true,
                batches: n + 9,
                batched: n + 10,
            }],
            buffers: vec![BufferStats {
                name: format!("camera{n}.image"),
                shared: n,
                pooled: n + 1,
                loan_fallback: n + 2,
                hits: n + 3,
                misses: n + 4,
                bytes: n + 5,
            }],
            threads: vec![ThreadStats {
                name: format!("camera{n}"),
                kind: ThreadKind::Codec,
                process: process.to_owned(),
                woken: n,
            }],
        }
    }

    #[test]
    fn merging_reports_keeps_every_field_of_every_process() {
        let (a, b) = (stats_of(1, "host/a"), stats_of(2, "host/b"));
        let report = |stats: &RunStats, straggler: &str| {
            RunReport::new(
                EndReason::Finished,
                Some(format!("{straggler} failed")),
                vec![straggler.to_owned()],
                stats.clone(),
            )
        };
        let merged = RunReport::merge(
            EndReason::Failed,
            Some("worker host/b died".to_owned()),
            vec!["host/c".to_owned()],
            [
                ("host/a".to_owned(), report(&a, "camera1")),
                ("host/b".to_owned(), report(&b, "camera2")),
            ],
        );
        let RunReport {
            reason,
            failure,
            stragglers,
            stats,
            silent_links,
        } = merged;
        assert!(silent_links.is_empty(), "the coordinator adds them");
        // The caller's verdict, not the workers'.
        assert_eq!(reason, EndReason::Failed);
        assert_eq!(failure.as_deref(), Some("worker host/b died"));
        assert_eq!(
            stragglers,
            ["host/c", "camera1 (in host/a)", "camera2 (in host/b)"]
        );
        // Every field, named: a new one must be checked here to compile.
        let RunStats {
            elapsed,
            instances,
            outputs,
            inputs,
            links,
            codecs,
            taps,
            wire,
            buffers,
            threads,
        } = stats;
        // The longer of the two (process b's).
        assert_eq!(elapsed, Duration::from_millis(20));
        assert_eq!(instances, [a.instances, b.instances].concat());
        assert_eq!(outputs, [a.outputs, b.outputs].concat());
        assert_eq!(inputs, [a.inputs, b.inputs].concat());
        assert_eq!(links, [a.links, b.links].concat());
        assert_eq!(codecs, [a.codecs, b.codecs].concat());
        assert_eq!(taps, [a.taps, b.taps].concat());
        assert_eq!(wire, [a.wire, b.wire].concat());
        assert_eq!(buffers, [a.buffers, b.buffers].concat());
        assert_eq!(threads, [a.threads, b.threads].concat());
    }

    #[test]
    fn merging_stats_into_a_snapshot_keeps_its_rows_first() {
        let mut merged = stats_of(3, "host/a");
        merged.merge(stats_of(1, "host/b"));
        assert_eq!(merged.elapsed, Duration::from_millis(30));
        assert_eq!(merged.instances[0].name, "camera3");
        assert_eq!(merged.instances[1].name, "camera1");
        assert_eq!(merged.wire[1].partition, "host/b");
    }
}
