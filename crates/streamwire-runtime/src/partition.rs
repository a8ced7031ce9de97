//! Partitions: each planned process of a run as its own set of hubs and queues, joined to
//! the others only by a transport. A stream produced in one partition and consumed in
//! another leaves through a *sender* (a publisher fed by the producer's hub) and enters
//! through an *ingress* (a subscription that reads frames into a hub of the receiving
//! partition, whose consumers subscribe to it as to any local hub). Senders are in
//! `sender.rs`.

use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use streamwire_core::log::{BurstLog, chain, more_since};
use streamwire_core::{DropReason, Envelope, Qos};
use streamwire_transport::{
    FrameBytes, FrameError, FrameSink, Rejection, ResetCause, SequenceTracker, Step, Subscription,
    SubscriptionCounters, Transport, TransportError, WireFrame, batch,
};

use crate::hub::Hub;
use crate::queue::Fate;
use crate::stats::{WireDirection, WireStats};

/// Holds a run's modules before their first step until it is opened: the run's threads,
/// queues and subscriptions are all up, so a distributed run opens it only once every
/// process has joined and every planned link is matched (no frame is lost because a
/// subscriber was late). Stopping the run releases the waiters too.
///
/// ```
/// use streamwire_runtime::StartGate;
/// let gate = StartGate::closed();
/// assert!(!gate.is_open());
/// gate.open();
/// assert!(gate.is_open());
/// ```
#[derive(Clone, Debug, Default)]
pub struct StartGate {
    /// When it opened (`None`: closed), and who waits for it.
    inner: Arc<(Mutex<Option<std::time::Instant>>, parking_lot::Condvar)>,
}

impl StartGate {
    /// A gate that holds every module until [`open`](StartGate::open).
    pub fn closed() -> StartGate {
        StartGate::default()
    }

    /// Lets the modules start.
    pub fn open(&self) {
        self.inner
            .0
            .lock()
            .get_or_insert_with(std::time::Instant::now);
        self.inner.1.notify_all();
    }

    /// Whether it was opened.
    pub fn is_open(&self) -> bool {
        self.inner.0.lock().is_some()
    }

    /// When it was opened: the run's time counts from there (a distributed run's wait for
    /// its workers is not part of it).
    pub(crate) fn opened_at(&self) -> Option<std::time::Instant> {
        *self.inner.0.lock()
    }

    pub(crate) fn wake(&self) {
        self.inner.1.notify_all();
    }

    /// Waits until opened or `stopping` is set.
    pub(crate) fn wait(&self, stopping: &AtomicBool) {
        let mut open = self.inner.0.lock();
        while open.is_none() && !stopping.load(Ordering::SeqCst) {
            self.inner
                .1
                .wait_for(&mut open, std::time::Duration::from_millis(50));
        }
    }
}

/// How a run places its planned processes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Partitions {
    /// Each planned process is a partition with its own hubs and queues; streams between
    /// them cross the loopback transport as serialized frames, exactly as they would
    /// cross a network (the default: a module never knows where its peers run, and the
    /// plan's encode and decode nodes run where it put them).
    #[default]
    PerProcess,
    /// One set of hubs for every planned process: messages between processes are shared
    /// in memory, not serialized (codec nodes still run as planned). For debugging a plan
    /// without the wire in the way.
    Shared,
}

/// When an ingress subscribes, relative to its publisher's first frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Joined {
    /// Before it: a planned link, which the run's sources wait for. A first frame that
    /// never arrives is lost on the wire, and counted so.
    BeforeFirstFrame,
    /// Wherever the publisher is (a tap): frames sent before it were never its to lose.
    Late,
}

/// Counts of one ingress, shared with its frame sink.
#[derive(Default)]
pub(crate) struct IngressCounters {
    tracker: Mutex<SequenceTracker>,
    lost: AtomicU64,
    /// Frames that arrived after the run began to stop.
    in_flight_at_stop: AtomicU64,
    /// Set once its sender's end-of-stream or stop frame arrived: nothing it sent is
    /// still on the wire.
    ended: AtomicBool,
    /// Times the link sequence started over (a restarted producer, or a number no loss
    /// explains).
    resets: AtomicU64,
    /// Resets: each counted, logged once per burst.
    reset_log: BurstLog,
    /// Frames of a type the plan does not send on this link: counted here, never as a
    /// message of the stream (nobody in the run published them).
    foreign: AtomicU64,
    /// Foreign frames: each counted, logged once per burst.
    foreign_log: BurstLog,
    rejected: [AtomicU64; Rejection::ALL.len()],
    /// Copies made to read frames that arrived spread over several slices.
    receive_copies: AtomicU64,
    /// A version mismatch is logged once per ingress, with both versions.
    incompatible_logged: AtomicBool,
    /// Refused frames: each counted, logged once per burst.
    refusals: BurstLog,
}

impl IngressCounters {
    fn note_reset(&self, key: &str, seq: u64, cause: ResetCause, expected: u64) {
        self.resets.fetch_add(1, Ordering::Relaxed);
        if let Some(unsaid) = self.reset_log.note() {
            tracing::warn!(
                stream = %key,
                "link sequence {seq} where {expected} was expected ({}): counted as a reset, \
                 the count starts over{}",
                cause.name(),
                more_since(unsaid)
            );
        }
    }

    fn note_foreign(&self, key: &str, wire_name: &str, accepted: &[(&'static str, u32)]) {
        self.foreign.fetch_add(1, Ordering::Relaxed);
        if let Some(unsaid) = self.foreign_log.note() {
            let planned: Vec<&str> = accepted.iter().map(|(name, _)| *name).collect();
            tracing::warn!(
                stream = %key,
                "a frame of `{wire_name}` on a link the plan gives {}: counted foreign{}",
                planned.join(" or "),
                more_since(unsaid)
            );
        }
    }

    fn reject(&self, key: &str, error: &FrameError) {
        let kind = error.rejection();
        if let Some(counter) = Rejection::ALL
            .iter()
            .position(|k| *k == kind)
            .and_then(|i| self.rejected.get(i))
        {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        if kind == Rejection::Incompatible {
            if !self.incompatible_logged.swap(true, Ordering::Relaxed) {
                tracing::warn!(stream = %key, "frame refused: {error}");
            }
        } else if let Some(unsaid) = self.refusals.note() {
            tracing::warn!(stream = %key, "frame refused: {}{}", chain(error), more_since(unsaid));
        }
    }
}

/// What an ingress does with each frame it receives.
struct Receiver {
    counters: Arc<IngressCounters>,
    hub: Arc<Hub>,
    key: String,
    /// The message types the link carries, with their schema versions.
    accepted: Vec<(&'static str, u32)>,
}

impl Receiver {
    /// Reads one frame: its message (or the link's end), then loss from its link
    /// sequence; a frame that cannot be read is counted and refused.
    ///
    /// A refused frame is counted once, on the wire row of its kind, and nowhere else:
    /// not on the consumers' rows, and its link sequence is not followed. A frame that
    /// does not read proves nothing about who sent it (a member of a closed run may put
    /// on its own streams, and zenoh's `SourceInfo` is the sender's to choose), so its
    /// number must not turn the real frames after it into losses, nor its refusal be
    /// charged to a message nobody in the run published. Were it one of the stream's
    /// own frames, the next frame that reads finds its number missing: the consumers'
    /// rows count it `lost_on_wire` then, once (RFC.md section 9).
    fn frame(&self, bytes: FrameBytes) {
        let (counters, hub, accepted) = (&self.counters, &self.hub, &self.accepted);
        let frame = match WireFrame::parse(bytes) {
            Ok(frame) => frame,
            Err(error) => return counters.reject(&self.key, &error),
        };
        // A message of a type the plan does not send here: nobody in the run published
        // it (only a misbehaving member can send one), so it is no message of the
        // stream, and its number is not the stream's either.
        let control = frame.end_of_stream || frame.stop;
        if !control
            && !accepted
                .iter()
                .any(|(name, _)| *name == frame.head.wire_name)
        {
            return counters.note_foreign(&self.key, &frame.head.wire_name, accepted);
        }
        // The payload is judged before the number is followed (see above).
        let message = if control {
            None
        } else {
            match frame.decode_message(accepted) {
                Ok(message) => Some(message),
                Err(error) => return counters.reject(&self.key, &error),
            }
        };
        self.follow(frame.head.link_seq);
        let Some(message) = message else {
            // The sender stopped (or the producer finished): every frame it sent has
            // arrived or was lost.
            counters.ended.store(true, Ordering::SeqCst);
            if frame.end_of_stream {
                // Consumers here see their input close.
                hub.close();
            }
            return;
        };
        if frame.unsent {
            // On its sender's not-sent count, yet here after all (from the
            // stream's history): whatever becomes of it now is counted below.
            hub.account_on_subscribers(Fate::Recovered);
        }
        if hub.is_stopping() {
            // On the wire when the run stopped: counted, not delivered.
            counters.in_flight_at_stop.fetch_add(1, Ordering::Relaxed);
            hub.account_on_subscribers(Fate::InFlightAtStop);
            return;
        }
        let copies = frame.copies();
        if copies > 0 {
            counters.receive_copies.fetch_add(copies, Ordering::Relaxed);
        }
        hub.forward(Envelope {
            header: frame.head.header(),
            message: Arc::from(message),
        });
    }

    /// Follows the link sequence of a frame that read: a gap is loss on the wire, on
    /// every consumer's row here.
    fn follow(&self, seq: u64) {
        let counters = &self.counters;
        let step = counters.tracker.lock().observe(seq);
        match step {
            Step::Gap { lost } => {
                counters.lost.fetch_add(lost, Ordering::Relaxed);
                self.hub
                    .account_on_subscribers_n(Fate::Dropped(DropReason::LostOnWire), lost);
            }
            Step::Reset { cause, expected } => {
                counters.note_reset(&self.key, seq, cause, expected);
            }
            Step::InOrder | Step::Behind => {}
        }
    }
}

/// A stream entering a partition.
pub(crate) struct Ingress {
    pub(crate) partition: String,
    pub(crate) key: String,
    pub(crate) hub: Arc<Hub>,
    pub(crate) counters: Arc<IngressCounters>,
    /// Dropping it unsubscribes (the publisher's matching event fires). Behind a lock: a
    /// tap's ingress the coordinator finds silent declares it again (issue 50).
    subscription: Mutex<Box<dyn Subscription>>,
    /// What a new subscription is declared with: the same sink (the same counters and
    /// sequence tracker) and QoS.
    sink: FrameSink,
    qos: Qos,
    /// The counts of the subscriptions it dropped, so the row's totals only grow.
    before: Mutex<SubscriptionCounters>,
    /// Times its subscription was declared again.
    resubscribed: AtomicU64,
}

/// Where a dropped subscription was, until one is declared again: receives nothing.
struct Undeclared {
    key: String,
}

impl Subscription for Undeclared {
    fn key(&self) -> &str {
        &self.key
    }

    fn counters(&self) -> SubscriptionCounters {
        SubscriptionCounters::default()
    }
}

impl Ingress {
    /// Subscribes to `key` on `transport`; frames of the `accepted` types are read into
    /// `hub` (a hub of the receiving partition), everything else is counted and refused.
    /// `joined` says whether frames before the first one seen were this ingress's to lose.
    pub(crate) fn open(
        transport: &dyn Transport,
        (partition, key): (&str, &str),
        qos: Qos,
        hub: Arc<Hub>,
        accepted: Vec<(&'static str, u32)>,
        joined: Joined,
    ) -> Result<Ingress, TransportError> {
        let counters = Arc::new(IngressCounters::default());
        if joined == Joined::BeforeFirstFrame {
            *counters.tracker.lock() = SequenceTracker::from_first_frame();
        }
        let receiver = Arc::new(Receiver {
            counters: counters.clone(),
            hub: hub.clone(),
            key: key.to_owned(),
            accepted,
        });
        let sink: FrameSink = Arc::new(move |bytes: FrameBytes| {
            if batch::frame_count(&bytes).is_none() {
                return receiver.frame(bytes);
            }
            match batch::split(bytes) {
                // Each frame of a batch is read as if it came alone.
                Ok(frames) => frames
                    .into_iter()
                    .flatten()
                    .for_each(|frame| receiver.frame(frame)),
                // Its frames are lost: the next frame's link sequence says how many.
                Err(error) => receiver.counters.reject(&receiver.key, &error),
            }
        });
        let subscription = transport.subscribe(key, qos, sink.clone())?;
        transport.announce(key, partition);
        Ok(Ingress {
            partition: partition.to_owned(),
            key: key.to_owned(),
            hub,
            counters,
            subscription: Mutex::new(subscription),
            sink,
            qos,
            before: Mutex::new(SubscriptionCounters::default()),
            resubscribed: AtomicU64::new(0),
        })
    }

    /// Drops its subscription (its counts kept) and declares it again on `transport`:
    /// a silent tap's ingress, as the coordinator asks (issue 50). The old one goes
    /// first, so no frame arrives twice; what the wire carried meanwhile shows as a gap
    /// of the link sequence, counted lost. Counted on the row even when the transport
    /// refuses (the ingress then stays without a subscription, and silent).
    pub(crate) fn resubscribe(&self, transport: &dyn Transport) -> Result<(), TransportError> {
        self.resubscribed.fetch_add(1, Ordering::Relaxed);
        self.undeclare();
        let fresh = transport.subscribe(&self.key, self.qos, self.sink.clone())?;
        *self.subscription.lock() = fresh;
        Ok(())
    }

    /// Drops its subscription, keeping its counts; nothing arrives until
    /// [`resubscribe`](Ingress::resubscribe).
    pub(crate) fn undeclare(&self) {
        let gone = Box::new(Undeclared {
            key: self.key.clone(),
        });
        let old = {
            // Its counts move into `before` under the subscription's lock, which `seen`
            // takes first: the row never shows them twice or not at all.
            let mut subscription = self.subscription.lock();
            let old = std::mem::replace(&mut *subscription, gone);
            let seen = old.counters();
            let mut before = self.before.lock();
            before.frames += seen.frames;
            before.wire_bytes += seen.wire_bytes;
            before.shared_memory += seen.shared_memory;
            old
        };
        // Undeclared here, outside the locks. A frame its callback delivers while this
        // runs reaches the sink (and the consumers' rows) but not `frames`, which was
        // read above: at most the few frames of one undeclaration, on a row already
        // named silent.
        drop(old);
    }

    /// What its subscriptions received, the dropped ones included.
    fn seen(&self) -> SubscriptionCounters {
        // Read under the subscription's lock: a subscription moves into `before` under it.
        let subscription = self.subscription.lock();
        let now = subscription.counters();
        let before = *self.before.lock();
        SubscriptionCounters {
            frames: before.frames + now.frames,
            wire_bytes: before.wire_bytes + now.wire_bytes,
            shared_memory: before.shared_memory + now.shared_memory,
        }
    }

    /// Whether its sender's end-of-stream or stop frame arrived (after it, nothing the
    /// sender sent can still be on the wire).
    pub(crate) fn has_ended(&self) -> bool {
        self.counters.ended.load(Ordering::SeqCst)
    }

    pub(crate) fn stats(&self) -> WireStats {
        let c = &self.counters;
        let seen = self.seen();
        WireStats {
            partition: self.partition.clone(),
            key: self.key.clone(),
            direction: WireDirection::In,
            frames: seen.frames,
            wire_bytes: seen.wire_bytes,
            unmatched: 0,
            sender_dropped: 0,
            lost: c.lost.load(Ordering::Relaxed),
            resets: c.resets.load(Ordering::Relaxed),
            foreign: c.foreign.load(Ordering::Relaxed),
            dropped_upstream: Default::default(),
            unprocessed_at_stop: 0,
            in_flight_at_stop: c.in_flight_at_stop.load(Ordering::Relaxed),
            rejected: Rejection::ALL
                .iter()
                .zip(&c.rejected)
                .map(|(k, n)| (k.name().to_owned(), n.load(Ordering::Relaxed)))
                .collect(),
            receive_copies: c.receive_copies.load(Ordering::Relaxed),
            shared_memory: seen.shared_memory,
            sent_by_producer: false,
            batches: 0,
            batched: 0,
            tap: None,
            resubscribed: self.resubscribed.load(Ordering::Relaxed),
        }
    }
}
