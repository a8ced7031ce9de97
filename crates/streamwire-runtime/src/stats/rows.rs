//! The rows of a [`RunStats`](super::RunStats) snapshot, one type per table: instances,
//! outputs, inputs (with their [`DropCounts`] by reason), links, codec nodes, taps, wire
//! ends, buffers and threads. Apart from the snapshot that lists them, so each row's
//! fields and their docs read in one place.

use std::fmt;
use std::time::Duration;

use streamwire_core::DropReason;

use super::LatencySummary;

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
    /// process of this host); the others of `frames` came through the link. Sending:
    /// frames put with their large part already in shared memory (a loan, sent by
    /// reference); a heap part zenoh copies into its pool is not counted.
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
    /// Receiving, on a tap's own ingress (a web relay's client, a recorder or a tool
    /// listening from another process than the stream's producer's): which tap, and
    /// whether it is still attached; a distributed run's coordinator watches the
    /// attached ones as it watches planned links (issue 50). `None` on a planned link.
    #[serde(default)]
    pub tap: Option<TapWire>,
    /// Times a tap's ingress declared its subscription again, the coordinator having
    /// found it silent (issue 50); its other counts carry over.
    #[serde(default)]
    pub resubscribed: u64,
}

/// The tap a wire row is the ingress of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct TapWire {
    /// The tap's number among its process's taps (the row of the taps table).
    pub id: u64,
    /// Attached now: someone listens (a detached tap's row keeps its last counts).
    pub attached: bool,
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
    /// report, or by [`RunReport::merge`](super::RunReport::merge) when the sender ran in another process).
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
    /// Messages not encoded because nobody needed the bytes; for the decode of
    /// ready-made bytes, frames never decoded because every keep-last consumer's queue
    /// replaced them while still encoded (decode on demand: `done + skipped + failed`
    /// frames were received).
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
