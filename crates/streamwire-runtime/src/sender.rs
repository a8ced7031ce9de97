//! Senders: how a stream produced in one partition leaves it through the transport.
//!
//! A keep-all stream has a thread of its own (`send <stream>`) fed by a queue: a wire
//! slower than the producer fills the queue (and then holds the producer, as keep-all
//! asks), and consecutive small messages are put in one batch; a lone message that finds
//! that thread idle is put by the forwarding thread at once. A keep-last stream is put on
//! the wire by the thread that forwards it (its producer's, or its codec node's), with no
//! queue and no hand-off: the producer's step then includes building the frame and the
//! put (RFC.md section 9), and no thread wakes per message to do it. Either sends only
//! while another partition subscribes (the hub asks before it hands a message over).

use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use streamwire_core::log::{BurstLog, chain, more_since};
use streamwire_core::{DropReason, Envelope, InputBinding};
use streamwire_transport::batch::{self, MAX_BATCH_BYTES, MAX_BATCH_FRAMES};
use streamwire_transport::{
    FrameBytes, FrameError, Publisher, Rejection, TransportError, WireFrame,
};

use crate::clock::Signal;
use crate::hub::Hub;
use crate::queue::{Fate, InputQueue, SMALL_MESSAGE};
use crate::stats::{WireDirection, WireStats};
use crate::worker::{Exit, IDLE_RECHECK, Outcome, Shared};

/// A frame that closes a link: [`WireFrame::stop`] or [`WireFrame::end_of_stream`].
pub(crate) type ClosingFrame = fn(u64) -> Result<FrameBytes, FrameError>;

/// What `stats()` reads of a sender.
pub(crate) struct SenderRecord {
    pub(crate) partition: String,
    /// The other partitions the plan sends the stream to (a distributed run waits until
    /// the publisher reaches every one before its sources start).
    pub(crate) remote_partitions: Vec<String>,
    /// The link's counts.
    pub(crate) link: Arc<SendingLink>,
    /// What a sender thread's queue holds and lost; an inline sender's counts only what
    /// it did not send, and why (it never holds a message).
    pub(crate) queue: Arc<InputQueue>,
    /// Set for a keep-last stream put on the wire by its forwarding thread.
    pub(crate) inline: Option<Arc<InlineSender>>,
}

impl SenderRecord {
    pub(crate) fn publisher(&self) -> &Arc<dyn Publisher> {
        &self.link.publisher
    }

    pub(crate) fn stats(&self) -> WireStats {
        let sent = self.link.publisher.counters();
        WireStats {
            partition: self.partition.clone(),
            key: self.link.publisher.key().to_owned(),
            direction: WireDirection::Out,
            frames: sent.frames,
            wire_bytes: sent.wire_bytes,
            unmatched: sent
                .unmatched
                .saturating_sub(self.link.control_unmatched.load(Ordering::Relaxed))
                + self.queue.unmatched(),
            sender_dropped: self.queue.dropped(DropReason::QueueFull),
            lost: 0,
            resets: 0,
            foreign: 0,
            dropped_upstream: {
                let mut upstream = crate::stats::DropCounts::default();
                for reason in DropReason::ALL {
                    if reason != DropReason::QueueFull {
                        upstream.set(reason, self.queue.dropped(reason));
                    }
                }
                upstream
            },
            unprocessed_at_stop: self.queue.unprocessed_at_stop(),
            in_flight_at_stop: 0,
            rejected: Rejection::ALL
                .iter()
                .map(|k| {
                    let n = if *k == Rejection::Undecodable {
                        self.link.failed.load(Ordering::Relaxed)
                    } else {
                        0
                    };
                    (k.name().to_owned(), n)
                })
                .collect(),
            receive_copies: 0,
            shared_memory: sent.shared_memory,
            sent_by_producer: self.inline.is_some(),
            batches: self.link.batches.load(Ordering::Relaxed),
            batched: self.link.batched.load(Ordering::Relaxed),
            tap: None,
            resubscribed: 0,
        }
    }
}

/// One stream's publisher and what putting frames on it counted.
pub(crate) struct SendingLink {
    pub(crate) publisher: Arc<dyn Publisher>,
    /// The codec that made the stream's messages (`jpeg` for an encode node), or empty.
    codec: &'static str,
    /// Messages whose frame could not be built or put.
    failed: AtomicU64,
    /// End-of-stream and stop frames put while nobody subscribed: counted by the
    /// publisher as unmatched, but not messages.
    control_unmatched: AtomicU64,
    /// Failed puts: each counted, logged once per burst.
    failures: BurstLog,
    /// Batches put, and the frames they held.
    batches: AtomicU64,
    batched: AtomicU64,
}

/// The transport closed under a put: the run is ending.
struct Closed;

impl SendingLink {
    pub(crate) fn new(publisher: Arc<dyn Publisher>, codec: &'static str) -> Arc<SendingLink> {
        Arc::new(SendingLink {
            publisher,
            codec,
            failed: AtomicU64::new(0),
            control_unmatched: AtomicU64::new(0),
            failures: BurstLog::default(),
            batches: AtomicU64::new(0),
            batched: AtomicU64::new(0),
        })
    }

    /// Puts one message as a frame (built only if someone is subscribed). A failure is
    /// counted and logged once per burst; only a closed transport is returned.
    fn put(&self, envelope: &Envelope) -> Result<(), Closed> {
        let result = self.publisher.put(&mut |link_seq| {
            WireFrame::encode(
                envelope.message.as_ref(),
                envelope.header,
                link_seq,
                self.codec,
            )
        });
        match result {
            Ok(()) => Ok(()),
            Err(TransportError::Closed) => Err(Closed),
            Err(error) => {
                self.count_failure(&error);
                Ok(())
            }
        }
    }

    /// Puts `envelopes` (small messages that were waiting together) in one batch if the
    /// publisher batches, one frame each otherwise. A message whose frame cannot be
    /// built is counted and left out; only a closed transport is returned.
    fn put_batch(&self, envelopes: &[Envelope]) -> Result<(), Closed> {
        if let [one] = envelopes {
            return self.put(one);
        }
        let mut unbuildable: Vec<FrameError> = Vec::new();
        let mut built = 0;
        let result = self
            .publisher
            .put_batch(envelopes.len() as u64, &mut |first| {
                let mut frames = Vec::with_capacity(envelopes.len());
                for envelope in envelopes {
                    let link_seq = first + frames.len() as u64;
                    match WireFrame::encode(
                        envelope.message.as_ref(),
                        envelope.header,
                        link_seq,
                        self.codec,
                    ) {
                        Ok(frame) => frames.push(frame),
                        Err(error) => unbuildable.push(error),
                    }
                }
                if frames.is_empty() {
                    return Ok((FrameBytes::default(), 0));
                }
                let batch = batch::encode(&frames)?;
                built = frames.len() as u64;
                Ok((batch, built))
            });
        for error in &unbuildable {
            self.count_failure(&TransportError::Frame(error.clone()));
        }
        match result {
            Ok(true) => {
                if built > 0 {
                    self.batches.fetch_add(1, Ordering::Relaxed);
                    self.batched.fetch_add(built, Ordering::Relaxed);
                }
                Ok(())
            }
            Ok(false) => envelopes.iter().try_for_each(|envelope| self.put(envelope)),
            Err(TransportError::Closed) => Err(Closed),
            Err(error) => {
                for _ in unbuildable.len()..envelopes.len() {
                    self.count_failure(&error);
                }
                Ok(())
            }
        }
    }

    /// Counts a message not sent for `error`, logged once per burst.
    fn count_failure(&self, error: &TransportError) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        if let Some(unsaid) = self.failures.note() {
            tracing::warn!(
                key = %self.publisher.key(),
                "not sent: {}{}",
                chain(error),
                more_since(unsaid)
            );
        }
    }

    /// Puts an end-of-stream or stop frame, numbered after the last frame sent. Put while
    /// nobody subscribes, it is no message not sent: taken out of the unmatched count.
    fn put_closing(&self, frame: ClosingFrame) {
        let before = self.publisher.counters().unmatched;
        let mut frame = frame;
        let result = self.publisher.put(&mut frame);
        let after = self.publisher.counters().unmatched;
        self.control_unmatched
            .fetch_add(after.saturating_sub(before), Ordering::Relaxed);
        match result {
            Ok(()) | Err(TransportError::Closed) => {}
            Err(error) => tracing::warn!(
                key = %self.publisher.key(),
                "the frame that closes the link was not sent: {}",
                chain(&error)
            ),
        }
    }
}

/// A sender the hub puts to on the thread that forwards a message.
#[derive(Clone)]
pub(crate) enum SendHere {
    /// A keep-last stream's: every message, with no sender thread.
    Always(Arc<InlineSender>),
    /// A keep-all stream's: a lone small message that finds its sender thread idle.
    WhenIdle(Arc<IdleShortcut>),
}

/// A keep-last stream's sender: called by the hub on the thread that forwards the
/// message.
pub(crate) struct InlineSender {
    link: Arc<SendingLink>,
    /// Counts what was not sent, and why (never holds a message).
    queue: Arc<InputQueue>,
    /// Set once the frame that closes the link was put (or the transport closed): later
    /// messages are counted as not sent. Held during a put, so that the closing frame is
    /// numbered after the last message's.
    ended: Mutex<bool>,
    stopping: Arc<AtomicBool>,
}

impl InlineSender {
    pub(crate) fn new(
        link: Arc<SendingLink>,
        queue: Arc<InputQueue>,
        stopping: Arc<AtomicBool>,
    ) -> Arc<InlineSender> {
        Arc::new(InlineSender {
            link,
            queue,
            ended: Mutex::new(false),
            stopping,
        })
    }

    /// Puts `envelope` on the wire now. Once the run stops it is counted as left at the
    /// stop, as a message still in a sender thread's queue is.
    pub(crate) fn send(&self, envelope: &Envelope) {
        let mut ended = self.ended.lock();
        if *ended {
            self.queue.account(Fate::Unmatched);
        } else if self.stopping.load(Ordering::SeqCst) {
            self.queue.account(Fate::UnprocessedAtStop);
        } else if self.link.put(envelope).is_err() {
            self.queue.account(Fate::UnprocessedAtStop);
            *ended = true;
        }
    }

    /// The link's end: puts `frame` once (end-of-stream when the producer finished, stop
    /// when the run stops); a second call does nothing.
    pub(crate) fn close(&self, frame: ClosingFrame) {
        let mut ended = self.ended.lock();
        if !*ended {
            *ended = true;
            self.link.put_closing(frame);
        }
    }

    /// The producer's hub closed: end-of-stream, or a stop frame when the run stops.
    pub(crate) fn producer_finished(&self) {
        if self.stopping.load(Ordering::SeqCst) {
            self.close(WireFrame::stop);
        } else {
            self.close(WireFrame::end_of_stream);
        }
    }
}

/// A keep-all sender's shortcut for lone messages: a small message that comes at least
/// [`LONE_AFTER`] after the one before it and finds the sender idle (nothing queued, no
/// put under way) is put by the forwarding thread at once, saving the hand-off to the
/// sender thread (tens of microseconds on a VM, on each message of a round trip). A
/// message close behind another (a burst) goes through the queue, where the thread puts
/// what waits together in one batch; so does one over [`LONE_MAX_BYTES`], so that a slow
/// wire never holds its producer long before the queue is full. The turn orders the two ways: whoever holds it
/// puts, and a message goes directly only when nothing is queued before it.
pub(crate) struct IdleShortcut {
    link: Arc<SendingLink>,
    queue: Arc<InputQueue>,
    /// Held by whoever puts; true once the sender thread put the frame that closes the
    /// link (nothing may follow it).
    turn: Mutex<bool>,
    stopping: Arc<AtomicBool>,
    /// When the forwarding thread last offered a message, in nanoseconds since `origin`.
    last_offered: AtomicU64,
    origin: Instant,
}

/// A message offered at least this long after the one before it is a lone one.
pub(crate) const LONE_AFTER: Duration = Duration::from_micros(100);

/// The largest lone message the forwarding thread puts itself (its put copies it into
/// the engine's buffers, tens of microseconds at most); larger ones go through the
/// thread.
pub(crate) const LONE_MAX_BYTES: usize = 64 * 1024;

impl IdleShortcut {
    pub(crate) fn new(
        link: Arc<SendingLink>,
        queue: Arc<InputQueue>,
        stopping: Arc<AtomicBool>,
    ) -> Arc<IdleShortcut> {
        Arc::new(IdleShortcut {
            link,
            queue,
            turn: Mutex::new(false),
            stopping,
            last_offered: AtomicU64::new(0),
            origin: Instant::now(),
        })
    }

    /// Puts `envelope` now if it is small, lone and the sender idle; false when it is to
    /// be queued.
    pub(crate) fn try_send(&self, envelope: &Envelope) -> bool {
        let now = u64::try_from(self.origin.elapsed().as_nanos())
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let before = self.last_offered.swap(now, Ordering::Relaxed);
        let lone = before == 0 || now.saturating_sub(before) >= LONE_AFTER.as_nanos() as u64;
        if !lone
            || envelope.message.content_len() > LONE_MAX_BYTES
            || self.stopping.load(Ordering::SeqCst)
        {
            return false;
        }
        let Some(ended) = self.turn.try_lock() else {
            return false;
        };
        if *ended || !self.queue.is_empty() {
            return false;
        }
        if self.link.put(envelope).is_err() {
            // Taken as the run ended: still unsent.
            self.queue.account(Fate::UnprocessedAtStop);
        }
        true
    }
}

/// Takes a partition's messages of one keep-all stream from its queue and puts them on
/// the transport, one frame each, or small ones waiting together in a batch.
pub(crate) struct SenderWorker {
    pub(crate) thread: usize,
    /// Its `tracing` span (`process`, `stream`, `port`).
    pub(crate) span: tracing::Span,
    pub(crate) link: Arc<SendingLink>,
    pub(crate) queue: Arc<InputQueue>,
    /// Whose turn it is to put: this thread's, or its forwarding thread's shortcut.
    pub(crate) shortcut: Arc<IdleShortcut>,
    pub(crate) signal: Arc<Signal>,
    pub(crate) subscription: (Arc<Hub>, u64),
    pub(crate) shared: Arc<Shared>,
}

impl SenderWorker {
    pub(crate) fn run(self, exits: Sender<Exit>) {
        let span = self.span.clone();
        let _entered = span.enter();
        // The frame that closes the link: a stop frame when the run stops, an
        // end-of-stream frame when the producer finished, none once the transport closed.
        let mut last: Option<ClosingFrame> = None;
        loop {
            let since = self.signal.count();
            if self.shared.is_stopping() {
                last = Some(WireFrame::stop);
                break;
            }
            let turn = self.shortcut.turn.lock();
            match self.queue.pop() {
                Some(envelope) => {
                    let (small, large) = self.take_waiting(envelope);
                    let sent = self.link.put_batch(&small).and_then(|()| match &large {
                        Some(envelope) => self.link.put(envelope),
                        None => Ok(()),
                    });
                    if sent.is_err() {
                        // Taken from the queue as the run ended: still unsent.
                        let taken = small.len() + usize::from(large.is_some());
                        self.queue.account_n(Fate::UnprocessedAtStop, taken as u64);
                        break;
                    }
                }
                None if self.queue.is_closed() => {
                    // The producer finished: so do its consumers in other partitions.
                    last = Some(WireFrame::end_of_stream);
                    break;
                }
                None => {
                    drop(turn);
                    self.signal.wait(since, IDLE_RECHECK);
                }
            }
        }
        let mut ended = self.shortcut.turn.lock();
        *ended = true;
        if let Some(frame) = last {
            self.link.put_closing(frame);
        }
        drop(ended);
        // Detached, not removed: what the producer still publishes is counted on this
        // queue as not sent (and so on the rows of the consumers behind the wire).
        let (hub, id) = &self.subscription;
        hub.detach(*id);
        let _ = exits.send(Exit {
            thread: self.thread,
            outcome: Outcome::Finished,
        });
    }

    /// `first` and, if it is small, the small messages waiting behind it (never waiting
    /// for more: a batch is only what the queue already holds), up to a batch's limits;
    /// and the large message that ended the run of small ones, if any.
    fn take_waiting(&self, first: Envelope) -> (Vec<Envelope>, Option<Envelope>) {
        let mut bytes = batched_size(&first);
        let mut small = vec![first];
        if bytes > SMALL_MESSAGE {
            return (small, None);
        }
        while small.len() < MAX_BATCH_FRAMES && bytes < MAX_BATCH_BYTES - SMALL_MESSAGE {
            let Some(next) = self.queue.pop() else { break };
            let size = batched_size(&next);
            if size > SMALL_MESSAGE {
                return (small, Some(next));
            }
            bytes += size;
            small.push(next);
        }
        (small, None)
    }
}

/// What a message adds to a batch, about: its content and a frame's head.
fn batched_size(envelope: &Envelope) -> usize {
    envelope.message.content_len().saturating_add(128)
}
