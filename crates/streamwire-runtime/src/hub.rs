//! Output hubs: one per stream in a process. A publish stamps the header once and hands
//! the same shared message to every subscriber queue (a reference-count bump each).

use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use streamwire_core::buffer::{BufferPool, Loan, LoanCounters, LoanSource};
use streamwire_core::log::{BurstLog, chain, more_since};
use streamwire_core::{
    AnyMessage, DropReason, Envelope, Header, OutputBinding, PortError, codec::DynCodec,
};

use crate::clock::Clock;
use crate::queue::{Fate, InputQueue};
use crate::sender::SendHere;

/// What a subscriber takes from a hub.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wants {
    /// Messages of this wire type name (a pixel input: `streamwire/Image`; a byte input:
    /// `streamwire/CompressedImage`).
    Message(&'static str),
    /// Whatever is published (an encode node, which passes ready-made bytes through; an
    /// untyped tap).
    Any,
}

/// Whether a subscriber needs the stream now. The hub asks before it hands a message
/// over: a codec node or a sender nobody downstream wants is not woken to throw it away.
#[derive(Clone)]
pub(crate) enum Demand {
    /// A module input or a tap: needed while subscribed.
    Always,
    /// A codec node: needed while its own output has demand.
    Via(Arc<Hub>),
    /// A transport publisher: needed while another partition subscribes to the stream.
    Remote(Arc<dyn streamwire_transport::Publisher>),
}

impl Demand {
    /// Whether a message published now is wanted: a transport publisher that remembers
    /// frames for late joiners (transient-local) wants every one.
    fn wants_now(&self) -> bool {
        match self {
            Demand::Always => true,
            Demand::Via(downstream) => downstream.has_demand(),
            Demand::Remote(publisher) => publisher.is_matched() || publisher.remembers(),
        }
    }
}

/// Counters of one link (hub to queue).
#[derive(Debug, Default)]
pub(crate) struct LinkCounters {
    pub(crate) messages: AtomicU64,
    /// Payload bytes of the messages (image data, point data): content bytes, in
    /// process. Wire bytes belong to a transport and are never mixed in here.
    pub(crate) content_bytes: AtomicU64,
}

pub(crate) struct Subscriber {
    pub(crate) id: u64,
    pub(crate) queue: Arc<InputQueue>,
    pub(crate) wants: Wants,
    pub(crate) demand: Demand,
    pub(crate) link: Arc<LinkCounters>,
    /// Its module finished: it takes nothing more, and each later publish is counted on
    /// its row as unmatched (not sent), so that its report still balances.
    pub(crate) detached: bool,
    /// A sender to other partitions that the forwarding thread puts to itself: always (a
    /// keep-last stream's), or a lone small message while its thread is idle (a keep-all
    /// stream's).
    pub(crate) sender: Option<SendHere>,
}

/// Decodes ready-made bytes published on an `Out<Compressed<..>>` for the pixel
/// subscribers of the same process: at most once per publish, however many they are, and
/// only when one of them takes the frame (see [`OnDemand`]).
pub(crate) struct Passthrough {
    /// The stream, named when a corrupt frame is logged.
    stream: String,
    /// The encoded message's wire name (`streamwire/CompressedImage`).
    pub(crate) encoded: &'static str,
    codec: Box<dyn DynCodec>,
    pub(crate) decoded: AtomicU64,
    pub(crate) failed: AtomicU64,
    /// Frames never decoded: every keep-last queue that held them replaced them while
    /// they were still encoded (each queue counts its drop as `queue_full`).
    pub(crate) skipped: AtomicU64,
    /// Corrupt frames: each counted, logged once per burst.
    failures: BurstLog,
}

impl Passthrough {
    pub(crate) fn new(stream: &str, encoded: &'static str, codec: Box<dyn DynCodec>) -> Self {
        Passthrough {
            stream: stream.to_owned(),
            encoded,
            codec,
            decoded: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            failures: BurstLog::default(),
        }
    }

    /// One decode of ready-made bytes; a corrupt frame is counted and logged (once per
    /// burst), and gives `None`.
    fn decode(&self, envelope: &Envelope) -> Option<Envelope> {
        match self.codec.decode_any(envelope.message.as_ref()) {
            Ok(message) => {
                self.decoded.fetch_add(1, Ordering::Relaxed);
                Some(Envelope {
                    header: envelope.header,
                    message: Arc::from(message),
                })
            }
            Err(error) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                if let Some(unsaid) = self.failures.note() {
                    tracing::warn!(
                        stream = %self.stream,
                        "corrupt frame skipped: {}{}",
                        chain(&error),
                        more_since(unsaid)
                    );
                }
                None
            }
        }
    }
}

/// One publish of ready-made bytes for this process's pixel subscribers, decoded at most
/// once: at publish for a subscriber that keeps all (or a sender), else when the first
/// keep-last subscriber takes it. A frame every keep-last queue replaced while it was
/// still encoded is never decoded: a slow consumer costs no decodes it would throw away.
pub(crate) struct OnDemand {
    encoded: Envelope,
    passthrough: Arc<Passthrough>,
    decoded: OnceLock<Option<Envelope>>,
}

impl OnDemand {
    fn new(encoded: Envelope, passthrough: Arc<Passthrough>) -> OnDemand {
        OnDemand {
            encoded,
            passthrough,
            decoded: OnceLock::new(),
        }
    }

    /// The decoded frame (decoded now by the first caller; a second waits for it), or
    /// `None` for a corrupt one (counted once, on the decode's row).
    pub(crate) fn take(&self) -> Option<Envelope> {
        self.decoded
            .get_or_init(|| self.passthrough.decode(&self.encoded))
            .clone()
    }

    /// The encoded frame's content bytes (what a queue weighs it by).
    pub(crate) fn encoded_len(&self) -> usize {
        self.encoded.message.content_len()
    }
}

impl Drop for OnDemand {
    fn drop(&mut self) {
        // The last queue holding it let it go: dropped encoded by every one of them.
        if self.decoded.get().is_none() {
            self.passthrough.skipped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One stream's fan-out.
pub(crate) struct Hub {
    pub(crate) stream: String,
    /// The wire name of the message this hub carries.
    pub(crate) message: &'static str,
    subscribers: RwLock<Vec<Subscriber>>,
    next_subscriber: AtomicU64,
    seq: AtomicU64,
    pub(crate) published: AtomicU64,
    /// Messages the codec node publishing into this hub was not handed because nobody
    /// downstream wanted them (the node's `skipped`, counted by the hub feeding it).
    pub(crate) not_wanted: AtomicU64,
    open: AtomicBool,
    clock: Arc<dyn Clock>,
    stopping: Arc<AtomicBool>,
    pub(crate) passthrough: Option<Arc<Passthrough>>,
    /// Failures: each counted, logged once per burst.
    failures: BurstLog,
    /// Shared memory for loans, when the stream leaves the process through a transport
    /// that has it (set when its sender is made).
    loan_source: RwLock<Option<Arc<dyn LoanSource>>>,
    /// Heap buffers for loans elsewhere, and for loans the shared memory cannot serve.
    pub(crate) pool: BufferPool,
    pub(crate) loans: LoanCounters,
}

/// Idle heap buffers an output's pool keeps: the frames its consumers' queues may hold
/// are lent, not idle, so a few suffice.
const IDLE_BUFFERS_PER_OUTPUT: usize = 4;

impl Hub {
    pub(crate) fn new(
        stream: String,
        message: &'static str,
        clock: Arc<dyn Clock>,
        stopping: Arc<AtomicBool>,
        passthrough: Option<Arc<Passthrough>>,
    ) -> Arc<Hub> {
        Arc::new(Hub {
            pool: BufferPool::new(stream.clone(), IDLE_BUFFERS_PER_OUTPUT),
            loans: LoanCounters::default(),
            loan_source: RwLock::new(None),
            stream,
            message,
            subscribers: RwLock::new(Vec::new()),
            next_subscriber: AtomicU64::new(0),
            seq: AtomicU64::new(0),
            published: AtomicU64::new(0),
            not_wanted: AtomicU64::new(0),
            open: AtomicBool::new(true),
            clock,
            stopping,
            passthrough,
            failures: BurstLog::default(),
        })
    }

    /// Adds a subscriber; returns its id (to unsubscribe) and its link counters.
    pub(crate) fn subscribe(
        &self,
        queue: Arc<InputQueue>,
        wants: Wants,
        demand: Demand,
    ) -> (u64, Arc<LinkCounters>) {
        self.subscribe_with(queue, wants, demand, None)
    }

    /// Adds a sender the forwarding thread puts to itself (`SendHere`); `queue` is a
    /// keep-all sender thread's queue, or a keep-last sender's count of what it did not
    /// send.
    pub(crate) fn subscribe_sender(
        &self,
        queue: Arc<InputQueue>,
        demand: Demand,
        sender: SendHere,
    ) -> u64 {
        // A stream leaves its process as its own message: ready-made bytes published on
        // it (`publish_encoded`) are decoded once for the sender, as for this process's
        // pixel consumers; the receiver reads the stream's type under its key.
        let wants = if self.passthrough.is_some() {
            Wants::Message(self.message)
        } else {
            Wants::Any
        };
        self.subscribe_with(queue, wants, demand, Some(sender)).0
    }

    fn subscribe_with(
        &self,
        queue: Arc<InputQueue>,
        wants: Wants,
        demand: Demand,
        sender: Option<SendHere>,
    ) -> (u64, Arc<LinkCounters>) {
        let id = self.next_subscriber.fetch_add(1, Ordering::Relaxed);
        let link = Arc::new(LinkCounters::default());
        queue.add_upstream();
        self.subscribers.write().push(Subscriber {
            id,
            queue: queue.clone(),
            wants,
            demand,
            link: link.clone(),
            detached: false,
            sender,
        });
        if !self.open.load(Ordering::SeqCst) {
            queue.upstream_closed();
        }
        (id, link)
    }

    /// Removes subscriber `id` (a tap detached, a module finished).
    pub(crate) fn unsubscribe(&self, id: u64) {
        let removed = {
            let mut subscribers = self.subscribers.write();
            let at = subscribers.iter().position(|s| s.id == id);
            at.map(|at| subscribers.remove(at))
        };
        if let Some(subscriber) = removed
            && self.open.load(Ordering::SeqCst)
        {
            subscriber.queue.upstream_closed();
        }
    }

    /// Detaches subscriber `id` (a module that finished): it takes nothing more, but
    /// stays listed so that every later publish is counted on its row as unmatched.
    pub(crate) fn detach(&self, id: u64) {
        let detached = {
            let mut subscribers = self.subscribers.write();
            subscribers
                .iter_mut()
                .find(|s| s.id == id && !s.detached)
                .map(|subscriber| {
                    subscriber.detached = true;
                    subscriber.queue.clone()
                })
        };
        if let Some(queue) = detached
            && self.open.load(Ordering::SeqCst)
        {
            queue.upstream_closed();
        }
    }

    /// True while some subscriber needs this stream (what `Out::has_consumers` says: a
    /// transient-local publisher's history alone does not make a module produce).
    pub(crate) fn has_demand(&self) -> bool {
        self.subscribers
            .read()
            .iter()
            .filter(|s| !s.detached)
            .any(|s| match &s.demand {
                Demand::Always => true,
                Demand::Via(downstream) => downstream.has_demand(),
                Demand::Remote(publisher) => publisher.is_matched(),
            })
    }

    /// The producer finished: subscribers see their input close once drained; a sender
    /// on this thread puts its end-of-stream frame.
    pub(crate) fn close(&self) {
        if self.open.swap(false, Ordering::SeqCst) {
            for s in self.subscribers.read().iter().filter(|s| !s.detached) {
                s.queue.upstream_closed();
                if let Some(SendHere::Always(sender)) = &s.sender {
                    sender.producer_finished();
                }
            }
        }
    }

    /// Counts a message lost upstream (a failed decode) on every subscriber's input.
    pub(crate) fn count_on_subscribers(&self, reason: DropReason) {
        self.account_on_subscribers(Fate::Dropped(reason));
    }

    /// Counts what became of a message lost upstream on every subscriber's row (a
    /// detached one counts it as unmatched: it would not have been sent to it).
    pub(crate) fn account_on_subscribers(&self, fate: Fate) {
        self.account_on_subscribers_n(fate, 1);
    }

    /// Counts `n` messages of `fate` on every subscriber's row. A detached subscriber
    /// counts a loss as not sent (it would not have been sent to it), but what the stop
    /// left on the way as left at the stop, and a recovered message as recovered.
    pub(crate) fn account_on_subscribers_n(&self, fate: Fate, n: u64) {
        for s in self.subscribers.read().iter() {
            let fate = match fate {
                Fate::UnprocessedAtStop | Fate::InFlightAtStop | Fate::Recovered => fate,
                _ if s.detached => Fate::Unmatched,
                _ => fate,
            };
            s.queue.account_n(fate, n);
        }
    }

    /// Wakes every producer blocked on a subscriber's full queue (stopping).
    pub(crate) fn wake_blocked_producers(&self) {
        for s in self.subscribers.read().iter() {
            s.queue.wake_producers();
        }
    }

    /// Stamps a new header and fans `message` out.
    pub(crate) fn publish_new(&self, message: Arc<dyn AnyMessage>) -> Header {
        let header = Header {
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            publish_time: self.clock.now(),
        };
        self.forward(Envelope { header, message });
        header
    }

    /// Fans `envelope` out with its header unchanged (codec nodes keep the producer's
    /// header, so latency at a pixel consumer includes encode and decode).
    pub(crate) fn forward(&self, envelope: Envelope) {
        self.published.fetch_add(1, Ordering::Relaxed);
        let subscribers = self.subscribers.read();
        let published_type = envelope.message.type_name();
        // Sizes and the decode of ready-made bytes are worked out once per publish,
        // however many subscribers share them.
        let published_bytes = content_bytes(envelope.message.as_ref());
        let mut on_demand: Option<Arc<OnDemand>> = None;
        for s in subscribers.iter() {
            if s.detached {
                s.queue.account(Fate::Unmatched);
                continue;
            }
            if !s.demand.wants_now() {
                Self::not_wanted(s);
                continue;
            }
            let (delivery, bytes) = match s.wants {
                Wants::Message(want) if want != published_type => {
                    let Some(passthrough) = self
                        .passthrough
                        .as_ref()
                        .filter(|p| want == self.message && p.encoded == published_type)
                    else {
                        s.queue.count(DropReason::DeserializeFailed);
                        continue;
                    };
                    let frame = on_demand.get_or_insert_with(|| {
                        Arc::new(OnDemand::new(envelope.clone(), passthrough.clone()))
                    });
                    if s.sender.is_none() && s.queue.keeps_last() {
                        // Decoded when its consumer takes it, if it ever does.
                        s.link.messages.fetch_add(1, Ordering::Relaxed);
                        s.queue.push_on_demand(frame.clone(), s.link.clone());
                        continue;
                    }
                    let Some(decoded) = frame.take() else {
                        s.queue.count(DropReason::DecodeFailed);
                        continue;
                    };
                    let bytes = content_bytes(decoded.message.as_ref());
                    (decoded, bytes)
                }
                // `Any`, or the type published.
                _ => (envelope.clone(), published_bytes),
            };
            s.link.messages.fetch_add(1, Ordering::Relaxed);
            s.link.content_bytes.fetch_add(bytes, Ordering::Relaxed);
            match &s.sender {
                Some(SendHere::Always(sender)) => sender.send(&delivery),
                Some(SendHere::WhenIdle(sender)) if sender.try_send(&delivery) => {}
                _ => {
                    s.queue.push(delivery);
                }
            }
        }
    }

    /// A message subscriber `s` does not want now, counted where its thread would have
    /// counted it: a codec node's as skipped (not sent to its consumers, which have all
    /// finished), a sender's as not sent.
    fn not_wanted(s: &Subscriber) {
        match &s.demand {
            Demand::Via(downstream) => {
                downstream.not_wanted.fetch_add(1, Ordering::Relaxed);
                downstream.account_on_subscribers(Fate::Unmatched);
            }
            _ => s.queue.account(Fate::Unmatched),
        }
    }

    /// Logs the first failure of a burst, with the stream's name; counts all of them.
    pub(crate) fn failed(&self, error: &dyn std::error::Error) {
        if let Some(unsaid) = self.failures.note() {
            tracing::warn!(
                stream = %self.stream,
                "corrupt frame skipped: {}{}",
                chain(error),
                more_since(unsaid)
            );
        }
    }

    /// Loans of this stream come from `source` (its sender's transport shares memory).
    pub(crate) fn loan_from(&self, source: Arc<dyn LoanSource>) {
        *self.loan_source.write() = Some(source);
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

impl OutputBinding for Hub {
    fn publish(&self, message: Arc<dyn AnyMessage>) -> Result<Header, PortError> {
        if self.is_stopping() {
            return Err(PortError::Stopped);
        }
        Ok(self.publish_new(message))
    }

    fn has_consumers(&self) -> bool {
        self.has_demand()
    }

    fn loan(&self, len: usize) -> Loan {
        self.loans
            .loan(self.loan_source.read().as_deref(), &self.pool, len)
    }
}

/// The content bytes of a message ([`Message::payload_len`](streamwire_core::Message::payload_len)).
pub(crate) fn content_bytes(message: &dyn AnyMessage) -> u64 {
    u64::try_from(message.content_len()).unwrap_or(u64::MAX)
}
