//! What a run keeps to be counted: one record per instance, output, input, link, codec
//! node, tap and wire end, holding the live counters; [`Records::snapshot`] reads them
//! into [`RunStats`] (`RunHandle::stats`, and the final report).

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use streamwire_core::DropReason;
use streamwire_core::buffer::{BufferPool, PoolStats, pools};
use streamwire_core::codec::DynCodec;

use crate::clock::Signal;
use crate::hub::{Hub, LinkCounters};
use crate::partition::Ingress;
use crate::queue::InputQueue;
use crate::sender::SenderRecord;
use crate::worker::{CodecCounters, InstanceCounters, Shared};

use super::{
    BufferStats, CodecRole, CodecStats, DropCounts, InputStats, InstanceStats, LinkStats,
    OutputStats, RateStats, RunStats, TapStats, ThreadKind, ThreadStats,
};

/// Everything `stats()` reads, built once by the run builder.
pub(crate) struct Records {
    /// Every instance of the plan, in plan order, whether it runs here or not.
    pub(crate) instances: Vec<InstanceRecord>,
    /// Every output of an instance that runs here.
    pub(crate) outputs: Vec<OutputRecord>,
    /// Every input of an instance that runs here.
    pub(crate) inputs: Vec<InputRecord>,
    /// Every link whose receiving end runs here.
    pub(crate) links: Vec<LinkRecord>,
    /// Every codec node that runs here: the plan's, the tap encoders, the decodes of
    /// ready-made bytes.
    pub(crate) codecs: Vec<CodecRecord>,
    /// Every tap attached so far (taps come and go while the run goes on).
    pub(crate) taps: Mutex<Vec<TapRecord>>,
    /// A step running longer than this marks its instance stalled.
    pub(crate) stall_after: Duration,
    /// Streams leaving a partition of this process.
    pub(crate) senders: Vec<SenderRecord>,
    /// Streams entering a partition of this process (the planned ones; a tap's own
    /// ingress is listed with its tap, `TapRecord::remote`).
    pub(crate) ingresses: Vec<Ingress>,
    /// The process's pools as they were when the run was built: a run reports what it
    /// was served, not what earlier runs of the same process were.
    pub(crate) pools_at_start: Vec<PoolStats>,
    /// The run's threads, once started.
    pub(crate) threads: OnceLock<Vec<ThreadListing>>,
}

/// One thread of the run, as the report lists it.
pub(crate) struct ThreadListing {
    pub(crate) name: String,
    pub(crate) kind: ThreadKind,
    pub(crate) process: String,
    /// What wakes it, which counts how often it did.
    pub(crate) signal: Arc<Signal>,
}

/// One instance of the plan.
pub(crate) struct InstanceRecord {
    /// Its full name.
    pub(crate) name: String,
    /// Its module type.
    pub(crate) module_type: &'static str,
    /// Its thread's counters.
    pub(crate) counters: Arc<InstanceCounters>,
    /// Whether it runs in this process (only those are reported here).
    pub(crate) here: bool,
    /// Its planned process.
    pub(crate) process: String,
    /// That process's host.
    pub(crate) host: String,
    /// Its trigger's period, when it steps on one (phase `triggers`).
    pub(crate) period: Option<Duration>,
}

/// One output port.
pub(crate) struct OutputRecord {
    /// `instance.port`.
    pub(crate) port: String,
    /// The hub it publishes into (its stream, its publish count).
    pub(crate) hub: Arc<Hub>,
}

/// One input port.
pub(crate) struct InputRecord {
    /// `instance.port`.
    pub(crate) port: String,
    /// The stream it takes.
    pub(crate) stream: String,
    /// Its queue (deliveries, drops, latency).
    pub(crate) queue: Arc<InputQueue>,
    /// The key its messages crossed partitions on, if they did.
    pub(crate) via_wire: Option<String>,
}

/// One link of the plan.
pub(crate) struct LinkRecord {
    /// The sending end's name.
    pub(crate) from: String,
    /// The receiving end's name.
    pub(crate) to: String,
    /// The stream it carries.
    pub(crate) stream: String,
    /// What its subscription handed over.
    pub(crate) counters: Arc<LinkCounters>,
    /// Whether it crosses partitions.
    pub(crate) crosses: bool,
}

/// One codec node.
pub(crate) struct CodecRecord {
    /// Encode or decode.
    pub(crate) role: CodecRole,
    /// The codec its thread runs (none for the decode of ready-made bytes), asked where
    /// an adaptive encoder stands.
    pub(crate) engine: Option<Arc<dyn DynCodec>>,
    /// The codec's name.
    pub(crate) codec: &'static str,
    /// The stream it encodes or decodes.
    pub(crate) stream: String,
    /// Where it runs, as the report says it.
    pub(crate) placement: String,
    /// Its thread's counters.
    pub(crate) counters: Arc<CodecCounters>,
    /// For the decode of ready-made bytes: the producer's hub, which counts it.
    pub(crate) passthrough_of: Option<Arc<Hub>>,
    /// The node's input queue (none for the decode of ready-made bytes, which has none).
    pub(crate) queue: Option<Arc<InputQueue>>,
    /// The hub it publishes into, which counts the messages the node was not handed
    /// because nobody wanted its output (none for the decode of ready-made bytes).
    pub(crate) output: Option<Arc<Hub>>,
}

/// One tap.
pub(crate) struct TapRecord {
    /// The stream it listens to.
    pub(crate) stream: String,
    /// Its keep-last queue.
    pub(crate) queue: Arc<InputQueue>,
    /// Cleared when it detaches.
    pub(crate) attached: Arc<AtomicBool>,
    /// Its own ingress, when it listens from another partition than the producer's: a
    /// row of the wire table.
    pub(crate) remote: Option<Arc<Mutex<TapIngressRow>>>,
}

/// The wire row of a tap's own ingress: read live while the tap holds the ingress, its
/// last counts once the tap detached (and the subscription with it).
pub(crate) enum TapIngressRow {
    /// The tap holds it.
    Live(std::sync::Weak<Ingress>),
    /// The tap detached: its last counts.
    Final(Box<super::WireStats>),
}

impl Records {
    /// No rows yet.
    pub(crate) fn new(stall_after: Duration) -> Records {
        Records {
            instances: Vec::new(),
            outputs: Vec::new(),
            inputs: Vec::new(),
            links: Vec::new(),
            codecs: Vec::new(),
            taps: Mutex::new(Vec::new()),
            stall_after,
            senders: Vec::new(),
            ingresses: Vec::new(),
            pools_at_start: pools::all().map(BufferPool::stats).to_vec(),
            threads: OnceLock::new(),
        }
    }

    /// Each output's loans and pool, then the process's pools, where anything was served.
    fn buffer_stats(&self) -> Vec<BufferStats> {
        let outputs = self.outputs.iter().map(|o| {
            let loans = o.hub.loans.stats();
            let pool = o.hub.pool.stats();
            BufferStats {
                name: o.port.clone(),
                shared: loans.shared,
                pooled: loans.pooled,
                loan_fallback: loans.fallback,
                hits: pool.hits,
                misses: pool.misses,
                bytes: pool.bytes,
            }
        });
        let processes = pools::all().into_iter().map(|pool| {
            let now = pool.stats();
            let start = self.pools_at_start.iter().find(|p| p.name == now.name);
            let before = |f: fn(&PoolStats) -> u64| start.map_or(0, f);
            BufferStats {
                name: now.name.clone(),
                hits: now.hits.saturating_sub(before(|p| p.hits)),
                misses: now.misses.saturating_sub(before(|p| p.misses)),
                bytes: now.bytes,
                ..BufferStats::default()
            }
        });
        outputs
            .chain(processes)
            .filter(|b| b.shared + b.pooled + b.loan_fallback + b.hits + b.misses > 0)
            .collect()
    }

    /// A snapshot of every counter, as the run's `shared` state sees it now.
    pub(crate) fn snapshot(&self, shared: &Shared) -> RunStats {
        RunStats {
            elapsed: shared.elapsed(),
            instances: self.instance_stats(shared),
            outputs: self
                .outputs
                .iter()
                .map(|o| OutputStats {
                    port: o.port.clone(),
                    stream: o.hub.stream.clone(),
                    published: o.hub.published.load(Ordering::Relaxed),
                })
                .collect(),
            inputs: self
                .inputs
                .iter()
                .map(|i| InputStats {
                    port: i.port.clone(),
                    stream: i.stream.clone(),
                    delivered: i.queue.delivered.load(Ordering::Relaxed),
                    dropped: drops(&i.queue),
                    unmatched: i.queue.unmatched(),
                    unprocessed_at_stop: i.queue.unprocessed_at_stop(),
                    in_flight_at_stop: i.queue.in_flight_at_stop(),
                    recovered: i.queue.recovered(),
                    via_wire: i.via_wire.clone(),
                    wire_terms_added: false,
                    latency: i.queue.latency(),
                })
                .collect(),
            links: self
                .links
                .iter()
                .map(|l| LinkStats {
                    from: l.from.clone(),
                    to: l.to.clone(),
                    stream: l.stream.clone(),
                    messages: l.counters.messages.load(Ordering::Relaxed),
                    content_bytes: l.counters.content_bytes.load(Ordering::Relaxed),
                    crosses_processes: l.crosses,
                })
                .collect(),
            codecs: self
                .codecs
                .iter()
                .filter(|c| c.is_listed())
                .map(CodecRecord::stats)
                .collect(),
            taps: self.tap_stats(),
            wire: self
                .senders
                .iter()
                .map(SenderRecord::stats)
                .chain(self.ingresses.iter().map(Ingress::stats))
                .chain(self.tap_ingress_stats())
                .collect(),
            buffers: self.buffer_stats(),
            threads: self
                .threads
                .get()
                .map(|threads| {
                    threads
                        .iter()
                        .map(|t| ThreadStats {
                            name: t.name.clone(),
                            kind: t.kind,
                            process: t.process.clone(),
                            woken: t.signal.woken(),
                        })
                        .collect()
                })
                // infallible: before the threads start there are none to list.
                .unwrap_or_default(),
        }
    }

    /// The instances that run here; a step begun longer ago than `stall_after` is stalled.
    fn instance_stats(&self, shared: &Shared) -> Vec<InstanceStats> {
        let now_mark = shared.mark();
        let stall = u64::try_from(self.stall_after.as_nanos()).unwrap_or(u64::MAX);
        self.instances
            .iter()
            .filter(|i| i.here)
            .map(|i| {
                let c = &i.counters;
                let began = c.step_began.load(Ordering::SeqCst);
                InstanceStats {
                    name: i.name.clone(),
                    module_type: i.module_type.to_owned(),
                    steps: c.steps.load(Ordering::Relaxed),
                    cpu: Duration::from_nanos(c.cpu_nanos.load(Ordering::Relaxed)),
                    longest_step: Duration::from_nanos(
                        c.longest_step_nanos.load(Ordering::Relaxed),
                    ),
                    stalled: began != 0 && now_mark.saturating_sub(began) > stall,
                    finished: c.finished.load(Ordering::SeqCst),
                    failed: c.failed.load(Ordering::SeqCst),
                    process: i.process.clone(),
                    host: i.host.clone(),
                    rate: i.rate(),
                    counters: c
                        .counters
                        .lock()
                        .iter()
                        .map(|(k, v)| (k.clone(), v.get()))
                        .collect(),
                }
            })
            .collect()
    }

    /// Once the run's threads are joined: what is still in a codec node's queue is
    /// counted as unprocessed at stop on the consumers downstream (encoders first, so
    /// that a decoder relays what its encoder left too).
    pub(crate) fn settle(&self) {
        let mut relays: Vec<&CodecRecord> = self.codecs.iter().collect();
        relays.sort_by_key(|c| c.role != CodecRole::Encode);
        for codec in relays {
            if let Some(queue) = &codec.queue {
                queue.settle_relay();
            }
        }
    }

    /// The own ingress of tap `id` (its number in the taps table), while it is attached.
    pub(crate) fn tap_ingress(&self, id: u64) -> Option<Arc<Ingress>> {
        let taps = self.taps.lock();
        let tap = taps.get(usize::try_from(id).ok()?)?;
        match &*tap.remote.as_ref()?.lock() {
            TapIngressRow::Live(ingress) => ingress.upgrade(),
            TapIngressRow::Final(_) => None,
        }
    }

    /// The wire rows of the taps' own ingresses, numbered as the taps table.
    fn tap_ingress_stats(&self) -> Vec<super::WireStats> {
        self.taps
            .lock()
            .iter()
            .enumerate()
            .filter_map(|(id, t)| {
                let row = t.remote.as_ref()?.lock();
                let mut wire = match &*row {
                    TapIngressRow::Live(ingress) => ingress.upgrade()?.stats(),
                    TapIngressRow::Final(last) => (**last).clone(),
                };
                wire.tap = Some(super::TapWire {
                    id: id as u64,
                    attached: t.attached.load(Ordering::SeqCst),
                });
                Some(wire)
            })
            .collect()
    }

    fn tap_stats(&self) -> Vec<TapStats> {
        self.taps
            .lock()
            .iter()
            .map(|t| TapStats {
                stream: t.stream.clone(),
                attached: t.attached.load(Ordering::SeqCst),
                delivered: t.queue.delivered.load(Ordering::Relaxed),
                dropped: t.queue.dropped(DropReason::QueueFull),
            })
            .collect()
    }
}

impl InstanceRecord {
    /// Its configured and reached rate, when it steps on a period and took two steps.
    fn rate(&self) -> Option<RateStats> {
        let period = self.period.filter(|p| !p.is_zero())?;
        let c = &self.counters;
        let steps = c.steps.load(Ordering::Relaxed);
        let (first, last) = (
            c.first_step_ns.load(Ordering::Relaxed),
            c.last_step_ns.load(Ordering::Relaxed),
        );
        if steps < 2 || last <= first {
            return None;
        }
        let span = Duration::from_nanos(last - first).as_secs_f64();
        Some(RateStats {
            configured_hz: 1.0 / period.as_secs_f64(),
            reached_hz: (steps - 1) as f64 / span,
        })
    }
}

impl CodecRecord {
    /// The decode of ready-made bytes is listed once it has done something (or skipped
    /// a frame); every other node always.
    fn is_listed(&self) -> bool {
        self.passthrough_of
            .as_ref()
            .and_then(|h| h.passthrough.as_ref())
            .is_none_or(|p| {
                p.decoded.load(Ordering::Relaxed)
                    + p.failed.load(Ordering::Relaxed)
                    + p.skipped.load(Ordering::Relaxed)
                    > 0
            })
    }

    fn stats(&self) -> CodecStats {
        let n = &self.counters;
        // The decode of ready-made bytes skips the frames its keep-last consumers
        // replaced while still encoded (decode on demand).
        let (done, failed, skipped) = match self
            .passthrough_of
            .as_ref()
            .and_then(|h| h.passthrough.as_ref())
        {
            Some(p) => (
                p.decoded.load(Ordering::Relaxed),
                p.failed.load(Ordering::Relaxed),
                p.skipped.load(Ordering::Relaxed),
            ),
            None => (
                n.done.load(Ordering::Relaxed),
                n.failed.load(Ordering::Relaxed),
                n.skipped.load(Ordering::Relaxed),
            ),
        };
        CodecStats {
            role: self.role,
            codec: self.codec.to_owned(),
            stream: self.stream.clone(),
            placement: self.placement.clone(),
            done,
            skipped: skipped
                + self
                    .output
                    .as_ref()
                    .map_or(0, |hub| hub.not_wanted.load(Ordering::Relaxed)),
            dropped: self
                .queue
                .as_ref()
                .map_or(0, |q| q.dropped(DropReason::QueueFull)),
            passed_through: n.passed_through.load(Ordering::Relaxed),
            failed,
            bytes_in: n.bytes_in.load(Ordering::Relaxed),
            bytes_out: n.bytes_out.load(Ordering::Relaxed),
            busy: Duration::from_nanos(n.busy_nanos.load(Ordering::Relaxed)),
            // An encoder's: a decoder built from the same parameters adapts nothing.
            adaptation: self
                .engine
                .as_ref()
                .filter(|_| self.role == CodecRole::Encode)
                .and_then(|engine| engine.adaptation()),
        }
    }
}

/// An input queue's drops, by reason.
fn drops(queue: &InputQueue) -> DropCounts {
    let mut counts = DropCounts::default();
    for reason in DropReason::ALL {
        counts.set(reason, queue.dropped(reason));
    }
    counts
}
