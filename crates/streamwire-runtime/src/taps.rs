//! Taps: listening to any stream of a run while it goes on, from the run handle
//! ([`RunHandle::tap`](crate::RunHandle::tap)) or from a module (`Context::taps`).

use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use streamwire_core::{Delivered, DropReason, InputBinding, Message, Qos};
use streamwire_transport::{Transport, TransportError};

use crate::clock::Signal;
use crate::hub::{Demand, Hub, Wants};
use crate::partition::{Ingress, Joined};
use crate::queue::{Bound, InputQueue};
use crate::stats::{Records, TapIngressRow, TapRecord};
use crate::worker::Shared;

/// Why a tap could not attach.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TapError {
    /// No stream of that name runs here.
    #[error("no stream `{stream}` in this run (streams: {known})")]
    UnknownStream {
        /// The name asked for.
        stream: String,
        /// The streams that exist, comma separated.
        known: String,
    },
    /// The stream carries another message type.
    #[error("stream `{stream}` carries `{carries}`, not `{asked}`")]
    WrongType {
        /// The stream.
        stream: String,
        /// What it carries (and its encoded forms, if any).
        carries: String,
        /// The type asked for.
        asked: &'static str,
    },
    /// No planned process of that name runs here.
    #[error("no process `{process}` in this run (processes: {known})")]
    UnknownProcess {
        /// The name asked for.
        process: String,
        /// The processes of the plan, comma separated.
        known: String,
    },
    /// The transport refused the tap's subscription.
    #[error("cannot tap `{stream}` across partitions")]
    Transport {
        /// The stream.
        stream: String,
        /// Why.
        #[source]
        error: TransportError,
    },
}

/// A hub a partition publishes into, with what a transport needs to carry it.
pub(crate) struct StreamHub {
    /// The stream's name (`color_image`, `color_image/compressed`): its transport key.
    pub(crate) name: String,
    /// The hub its producer publishes into.
    pub(crate) hub: Arc<Hub>,
    /// The partition of its producer (0 without partitions).
    pub(crate) partition: usize,
    /// The stream's QoS, which its sender and ingresses follow.
    pub(crate) qos: Qos,
    /// The message types (with schema versions) that travel on it.
    pub(crate) accepted: Vec<(&'static str, u32)>,
    /// The codec that made its messages (`jpeg`), or empty.
    pub(crate) codec: &'static str,
    /// Whether it may leave its partition (a decoder's output never does: the plan puts a
    /// decoder in every process that wants its pixels).
    pub(crate) publish: bool,
}

/// Where taps attach: the run handle's `tap`, and modules' `Context::taps`.
pub(crate) struct TapPoint {
    /// The run's clock and stop token; a tap's signal is registered there.
    pub(crate) shared: Arc<Shared>,
    /// Where a tap's row is listed, and the ingresses a partition's tap may listen to.
    pub(crate) records: Arc<Records>,
    /// Hubs by stream name, producers first.
    pub(crate) streams: Vec<StreamHub>,
    /// The partitions' names (planned processes), when partitions are on.
    pub(crate) partitions: Vec<String>,
    /// The partition that runs here when the others run elsewhere: taps listen from it.
    pub(crate) local: Option<usize>,
    /// The transport joining them.
    pub(crate) transport: Option<Arc<dyn Transport>>,
    /// Depth of a tap's keep-last queue (`RunOptions::tap_depth`).
    pub(crate) tap_depth: usize,
    /// The plan's instances as tools describe the run (see [`run_graph_of`]).
    pub(crate) graph: Vec<streamwire_core::RunNode>,
}

/// The plan's instances with the streams their ports publish and subscribe and their
/// settings: what `TapService::run_graph` answers.
pub(crate) fn run_graph_of(plan: &streamwire_graph::Plan) -> Vec<streamwire_core::RunNode> {
    let streams = |node: &streamwire_graph::InstanceNode, direction| -> Vec<String> {
        node.ports()
            .filter(|p| p.direction() == direction)
            .map(|p| p.stream.clone())
            .collect()
    };
    plan.instances()
        .map(|node| streamwire_core::RunNode {
            name: node.name.clone(),
            publishes: streams(node, streamwire_core::Direction::Output),
            subscribes: streams(node, streamwire_core::Direction::Input),
            settings: node.settings().to_vec(),
        })
        .collect()
}

/// A module's view of the tap point: taps from the module's own partition.
pub(crate) struct PartitionTaps {
    /// The run's tap point.
    pub(crate) point: Arc<TapPoint>,
    /// The module's planned process, when partitions are on.
    pub(crate) process: Option<String>,
}

impl streamwire_core::TapService for PartitionTaps {
    fn streams(&self) -> Vec<(String, &'static str)> {
        let mut streams: Vec<(String, &'static str)> = self
            .point
            .streams
            .iter()
            .filter(|s| s.publish || self.process.is_none())
            .map(|s| (s.name.clone(), s.hub.message))
            .collect();
        streams.sort_unstable();
        streams.dedup();
        streams
    }

    fn tap(
        &self,
        stream: &str,
        message: Option<&'static str>,
    ) -> Result<Box<dyn streamwire_core::StreamTap>, streamwire_core::NodeError> {
        Ok(Box::new(self.point.attach(
            stream,
            message,
            self.process.as_deref(),
        )?))
    }

    fn run_graph(&self) -> Vec<streamwire_core::RunNode> {
        self.point.graph.clone()
    }
}

impl streamwire_core::StreamTap for AnyTap {
    fn recv_timeout(&self, timeout: Duration) -> Option<streamwire_core::Envelope> {
        AnyTap::recv_timeout(self, timeout)
    }

    fn dropped(&self) -> u64 {
        AnyTap::dropped(self)
    }

    fn is_closed(&self) -> bool {
        // A stream from another process does not close when the run stops: its sender
        // sends a stop frame, after which nothing it sent can still arrive.
        self.queue.is_closed()
            || (self
                .remote
                .as_ref()
                .is_some_and(|(ingress, _)| ingress.has_ended())
                && self.queue.is_empty())
    }

    fn in_flight_at_stop(&self) -> u64 {
        self.queue.in_flight_at_stop()
    }
}

impl TapPoint {
    /// Attaches a tap on `stream` (of type `wanted`, or any), listening from `process`
    /// (or where the stream is produced).
    pub(crate) fn attach(
        &self,
        stream: &str,
        wanted: Option<&'static str>,
        process: Option<&str>,
    ) -> Result<AnyTap, TapError> {
        let partition = self.partition_named(process)?;
        let (hub, remote) = match pick(&self.hubs_in(partition), stream, wanted) {
            Ok(hub) => (hub.clone(), None),
            Err(error) => {
                // Not in this partition: across the transport from its producer's.
                let Some(at) = partition else {
                    return Err(error);
                };
                match self.remote_ingress(at, stream, wanted)? {
                    Some((hub, ingress)) => (hub, Some(ingress)),
                    None => return Err(error),
                }
            }
        };
        let signal = Signal::new();
        self.shared.signals.lock().push(signal.clone());
        // A tap is no step's input: what it holds when the run stops stays readable (a
        // recorder drains it into its file), so its queue's pop does not end with the run
        // (a keep-last queue never makes a producer wait, so the flag governs nothing else).
        let queue = InputQueue::new(
            Bound::KeepLast(self.tap_depth.max(1)),
            signal.clone(),
            self.shared.clock.clone(),
            Arc::new(AtomicBool::new(false)),
        );
        let wants = wanted.map_or(Wants::Any, Wants::Message);
        let (id, _) = hub.subscribe(queue.clone(), wants, Demand::Always);
        let attached = Arc::new(AtomicBool::new(true));
        let remote = remote.map(|ingress| {
            let ingress = Arc::new(ingress);
            let row = Arc::new(Mutex::new(TapIngressRow::Live(Arc::downgrade(&ingress))));
            (ingress, row)
        });
        self.records.taps.lock().push(TapRecord {
            stream: stream.to_owned(),
            queue: queue.clone(),
            attached: attached.clone(),
            remote: remote.as_ref().map(|(_, row)| row.clone()),
        });
        Ok(AnyTap {
            hub,
            id,
            queue,
            signal,
            attached,
            shared: self.shared.clone(),
            remote,
        })
    }

    /// The partition a tap listens from: the one of `process` when partitions are on, or
    /// else the one that runs here (none: where each stream is produced).
    fn partition_named(&self, process: Option<&str>) -> Result<Option<usize>, TapError> {
        match process {
            Some(name) if !self.partitions.is_empty() => self
                .partitions
                .iter()
                .position(|p| p == name)
                .map(Some)
                .ok_or_else(|| TapError::UnknownProcess {
                    process: name.to_owned(),
                    known: self.partitions.join(", "),
                }),
            _ => Ok(self.local),
        }
    }

    /// What a tap can listen to without the transport, as (stream, hub): every producer
    /// (no partition asked), or the hubs of `partition`, its ingresses included.
    fn hubs_in(&self, partition: Option<usize>) -> Vec<(&str, &Arc<Hub>)> {
        match partition {
            None => self
                .streams
                .iter()
                .map(|s| (s.name.as_str(), &s.hub))
                .collect(),
            Some(at) => self
                .streams
                .iter()
                .filter(|s| s.partition == at)
                .map(|s| (s.name.as_str(), &s.hub))
                .chain(
                    self.records
                        .ingresses
                        .iter()
                        .filter(|g| Some(&g.partition) == self.partitions.get(at))
                        .map(|g| (g.key.as_str(), &g.hub)),
                )
                .collect(),
        }
    }

    /// A hub of partition `at` fed across the transport by the ingress of `stream` from
    /// its producer's partition; `None` when no other partition publishes it (or there
    /// is no transport).
    fn remote_ingress(
        &self,
        at: usize,
        stream: &str,
        wanted: Option<&'static str>,
    ) -> Result<Option<(Arc<Hub>, Ingress)>, TapError> {
        let (Some(transport), Some(partition)) = (&self.transport, self.partitions.get(at)) else {
            return Ok(None);
        };
        let remote: Vec<(&str, &Arc<Hub>)> = self
            .streams
            .iter()
            .filter(|s| s.publish && s.partition != at)
            .map(|s| (s.name.as_str(), &s.hub))
            .collect();
        let Ok(source) = pick(&remote, stream, wanted) else {
            return Ok(None);
        };
        let Some(source) = self.streams.iter().find(|s| Arc::ptr_eq(&s.hub, source)) else {
            return Ok(None);
        };
        let hub = Hub::new(
            source.name.clone(),
            source.hub.message,
            self.shared.clock.clone(),
            self.shared.stopping.clone(),
            None,
        );
        let ingress = Ingress::open(
            transport.as_ref(),
            (partition, &source.name),
            source.qos,
            hub.clone(),
            source.accepted.clone(),
            Joined::Late,
        )
        .map_err(|error| TapError::Transport {
            stream: stream.to_owned(),
            error,
        })?;
        Ok(Some((hub, ingress)))
    }
}

/// The hub a tap on `stream` listens to among `candidates` (stream name, hub): by its own
/// name, or an encoded form of it (`color_image` asked as bytes); pixels from the
/// stream's producer, bytes from its encode node.
fn pick<'h>(
    candidates: &[(&str, &'h Arc<Hub>)],
    stream: &str,
    wanted: Option<&'static str>,
) -> Result<&'h Arc<Hub>, TapError> {
    let named: Vec<&Arc<Hub>> = candidates
        .iter()
        .filter(|(name, _)| *name == stream)
        .map(|(_, hub)| *hub)
        .collect();
    let encoded: Vec<&Arc<Hub>> = candidates
        .iter()
        .filter(|(name, _)| {
            name.strip_prefix(stream)
                .is_some_and(|rest| rest.starts_with('/'))
        })
        .map(|(_, hub)| *hub)
        .collect();
    if named.is_empty() && encoded.is_empty() {
        let mut known: Vec<&str> = candidates.iter().map(|(n, _)| *n).collect();
        known.sort_unstable();
        known.dedup();
        return Err(TapError::UnknownStream {
            stream: stream.to_owned(),
            known: known.join(", "),
        });
    }
    let hub = match wanted {
        None => named.first().copied(),
        Some(want) => named
            .iter()
            .chain(&encoded)
            .find(|hub| hub.message == want)
            .copied(),
    };
    hub.ok_or_else(|| {
        let carries: Vec<&str> = named.iter().chain(&encoded).map(|h| h.message).collect();
        TapError::WrongType {
            stream: stream.to_owned(),
            carries: carries.join(", "),
            asked: wanted.unwrap_or("any"),
        }
    })
}

/// Set by [`cut_next_tap_ingress`]; taken by the next remote tap that reads.
static CUT_NEXT: AtomicBool = AtomicBool::new(false);

/// For tests: the next tap of this process that reads from its own ingress drops that
/// ingress's subscription, as a link that went away would (issue 50): the tap stays
/// attached and receives nothing until its ingress is subscribed again.
#[doc(hidden)]
pub fn cut_next_tap_ingress() {
    CUT_NEXT.store(true, Ordering::SeqCst);
}

/// A subscription to a stream at run time, whatever it carries. Detaches when dropped.
pub struct AnyTap {
    hub: Arc<Hub>,
    id: u64,
    queue: Arc<InputQueue>,
    signal: Arc<Signal>,
    attached: Arc<AtomicBool>,
    /// For the stop flag, and to unregister the tap's wake-up when it detaches.
    shared: Arc<Shared>,
    /// A tap from another partition than the producer's: its subscription on the
    /// transport (the only owner: undeclared when the tap detaches), and its wire row,
    /// which keeps the ingress's last counts then.
    remote: Option<(Arc<Ingress>, Arc<Mutex<TapIngressRow>>)>,
}

impl AnyTap {
    /// The next message, waiting up to `timeout`; `None` on timeout, when the stream
    /// closed, or when the run stops.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<streamwire_core::Envelope> {
        if let Some((ingress, _)) = &self.remote
            && CUT_NEXT.load(Ordering::Relaxed)
            && CUT_NEXT.swap(false, Ordering::SeqCst)
        {
            ingress.undeclare();
        }
        let deadline = Instant::now() + timeout;
        loop {
            let since = self.signal.count();
            if let Some(envelope) = self.queue.pop() {
                return Some(envelope);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.queue.is_closed() || self.shared.is_stopping() {
                return None;
            }
            self.signal.wait(since, left);
        }
    }

    /// The next message if one is queued.
    pub fn try_recv(&self) -> Option<streamwire_core::Envelope> {
        self.queue.pop()
    }

    /// Messages this tap's keep-last queue dropped.
    pub fn dropped(&self) -> u64 {
        self.queue.dropped(DropReason::QueueFull)
    }

    /// Detaches now (dropping the tap does the same).
    pub fn detach(self) {}
}

impl Drop for AnyTap {
    fn drop(&mut self) {
        self.attached.store(false, Ordering::SeqCst);
        if let Some((ingress, row)) = self.remote.take() {
            *row.lock() = TapIngressRow::Final(Box::new(ingress.stats()));
        }
        self.hub.unsubscribe(self.id);
        // Taps come and go for as long as a run lasts: nothing of them may pile up.
        self.shared
            .signals
            .lock()
            .retain(|s| !Arc::ptr_eq(s, &self.signal));
    }
}

impl std::fmt::Debug for AnyTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnyTap")
            .field("stream", &self.hub.stream)
            .finish_non_exhaustive()
    }
}

/// A typed subscription to a stream at run time. Detaches when dropped.
pub struct Tap<M> {
    inner: AnyTap,
    _message: std::marker::PhantomData<fn() -> M>,
}

impl<M: Message> Tap<M> {
    /// The typed view of `inner`.
    pub(crate) fn typed(inner: AnyTap) -> Tap<M> {
        Tap {
            inner,
            _message: std::marker::PhantomData,
        }
    }

    /// The next message with its header, waiting up to `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Delivered<M>> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let envelope = self.inner.recv_timeout(left)?;
            if let Some(message) = envelope.message.as_any().downcast_ref::<M>() {
                return Some(Delivered {
                    header: envelope.header,
                    message: message.clone(),
                });
            }
            self.inner.queue.count(DropReason::DeserializeFailed);
        }
    }

    /// Messages this tap's keep-last queue dropped.
    pub fn dropped(&self) -> u64 {
        self.inner.dropped()
    }

    /// Detaches now (dropping the tap does the same).
    pub fn detach(self) {}
}

impl<M> std::fmt::Debug for Tap<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}
