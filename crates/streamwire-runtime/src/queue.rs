//! Input queues: bounded by the port's QoS, counting every drop, timing every delivery.

use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use streamwire_core::{DropReason, Envelope, History, InputBinding, Timestamp};

use crate::clock::{Clock, MANUAL_POLL, Signal};
use crate::hub::{Hub, LinkCounters, OnDemand, content_bytes};

/// How an input queue bounds itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// Keep the newest `n`: a full queue evicts its oldest message, counted.
    KeepLast(usize),
    /// Hold up to `depth`; a producer finding it full waits up to `deadline` (run-clock
    /// time) for room, then drops the new message, counted. Beyond `depth`, a small
    /// message (content up to [`SMALL_MESSAGE`] bytes) is still taken while the queue
    /// holds fewer than `small_depth` (a consumer's queue: `depth`; a keep-all sender's,
    /// the wire's buffer: [`WIRE_BUFFER_SMALL_DEPTH`], so that a burst of small messages
    /// leaves in large batches, as bytes wait in a socket's buffer).
    KeepAll {
        depth: usize,
        deadline: Duration,
        small_depth: usize,
    },
}

/// A message with at most this many content bytes is small: a sender batches it with
/// others waiting, and a sender's queue takes more of them than its depth.
pub(crate) const SMALL_MESSAGE: usize = 4096;

/// How many messages a keep-all sender's queue holds when they are small (at most 1 MiB
/// of content beyond its depth).
pub(crate) const WIRE_BUFFER_SMALL_DEPTH: usize = 256;

impl Bound {
    pub(crate) fn from_history(
        history: History,
        keep_all_depth: usize,
        deadline: Duration,
    ) -> Bound {
        match history {
            History::KeepLast(n) => Bound::KeepLast(usize::try_from(n.max(1)).unwrap_or(1)),
            History::KeepAll => Bound::KeepAll {
                depth: keep_all_depth.max(1),
                deadline,
                small_depth: keep_all_depth.max(1),
            },
        }
    }
}

/// Latency statistics of one input: a histogram of arrival minus publish time, and the
/// deliveries whose publish time lay in the future (clocks that disagree).
pub(crate) struct Latency {
    histogram: Histogram<u64>,
    pub(crate) clock_skew: u64,
}

impl Latency {
    fn new() -> Latency {
        // 1 ns to 1 h at 3 significant digits; larger values saturate into the top bucket.
        // These bounds are valid constants, so construction cannot fail.
        let histogram = Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
            .expect("constant histogram bounds are valid");
        Latency {
            histogram,
            clock_skew: 0,
        }
    }

    fn record(&mut self, publish: Timestamp, arrival: Timestamp) {
        if arrival < publish {
            self.clock_skew += 1;
            return;
        }
        let nanos = arrival.as_nanos() - publish.as_nanos();
        self.histogram.saturating_record(nanos.max(1));
    }

    pub(crate) fn summary(&self) -> LatencySummary {
        let h = &self.histogram;
        LatencySummary {
            count: h.len(),
            p50: Duration::from_nanos(h.value_at_quantile(0.5)),
            p99: Duration::from_nanos(h.value_at_quantile(0.99)),
            max: Duration::from_nanos(h.max()),
            clock_skew: self.clock_skew,
        }
    }
}

/// Latency of one input, as reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LatencySummary {
    /// Deliveries recorded (every delivery whose publish time was not in the future).
    pub count: u64,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Largest.
    pub max: Duration,
    /// Deliveries published "after" they arrived: the clocks of two hosts disagree.
    /// Counted here, never read as zero latency.
    pub clock_skew: u64,
}

/// What became of a message that did not reach its consumer, as the consumer's row counts
/// it: one term of the accounting equation (RFC.md section 9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Dropped on the way, for this reason.
    Dropped(DropReason),
    /// Published while the consumer was not subscribed (it had finished): not sent to it.
    Unmatched,
    /// Still in a queue on the way (a codec node's) when the run stopped.
    UnprocessedAtStop,
    /// On the wire when the run stopped: it reached the receiving partition after the stop.
    InFlightAtStop,
    /// Not a loss: a message its sender counted as not sent (nobody listened), delivered
    /// later from the stream's history; it takes the message off the not-sent term.
    Recovered,
}

/// A queued message: ready, or ready-made bytes decoded when the consumer takes them
/// (only a keep-last queue holds those: what it replaces is never decoded).
#[derive(Clone)]
enum Item {
    Ready(Envelope),
    OnDemand {
        frame: Arc<OnDemand>,
        /// The link that handed it over: its content bytes are the decoded frame's,
        /// added when it is decoded.
        link: Arc<LinkCounters>,
    },
}

impl Item {
    fn content_len(&self) -> usize {
        match self {
            Item::Ready(envelope) => envelope.message.content_len(),
            Item::OnDemand { frame, .. } => frame.encoded_len(),
        }
    }
}

/// One input's queue. Producers push (fan-out from a hub); the module pops through the
/// [`InputBinding`] seam. A codec node's queue is a *relay*: what it loses is counted on
/// it and, through the node's output hub, on every consumer downstream.
pub(crate) struct InputQueue {
    items: Mutex<VecDeque<Item>>,
    room: Condvar,
    bound: Bound,
    /// The consumer's wake-up.
    signal: Arc<Signal>,
    clock: Arc<dyn Clock>,
    stopping: Arc<AtomicBool>,
    /// Hubs still feeding this queue; zero and empty means closed.
    open_upstreams: AtomicUsize,
    pub(crate) delivered: AtomicU64,
    dropped: [AtomicU64; DropReason::ALL.len()],
    /// Messages published while this queue's consumer was not subscribed.
    unmatched: AtomicU64,
    /// Messages left at stop in a queue upstream of this one (relayed here); what is
    /// left in this queue itself is its length.
    unprocessed_upstream: AtomicU64,
    /// Frames that reached this queue's partition after the run stopped.
    in_flight_at_stop: AtomicU64,
    /// See [`Fate::Recovered`].
    recovered: AtomicU64,
    /// A codec node's output hub: what this queue loses is lost to its subscribers too.
    relay: OnceLock<Arc<Hub>>,
    latency: Mutex<Latency>,
}

impl InputQueue {
    pub(crate) fn new(
        bound: Bound,
        signal: Arc<Signal>,
        clock: Arc<dyn Clock>,
        stopping: Arc<AtomicBool>,
    ) -> Arc<InputQueue> {
        Arc::new(InputQueue {
            items: Mutex::new(VecDeque::new()),
            room: Condvar::new(),
            bound,
            signal,
            clock,
            stopping,
            open_upstreams: AtomicUsize::new(0),
            delivered: AtomicU64::new(0),
            dropped: Default::default(),
            unmatched: AtomicU64::new(0),
            unprocessed_upstream: AtomicU64::new(0),
            in_flight_at_stop: AtomicU64::new(0),
            recovered: AtomicU64::new(0),
            relay: OnceLock::new(),
            latency: Mutex::new(Latency::new()),
        })
    }

    /// Makes this queue a relay: what it loses is counted on the subscribers of `hub`
    /// too (a codec node's queue, relaying to the node's output hub).
    pub(crate) fn relay_to(&self, hub: Arc<Hub>) {
        let _ = self.relay.set(hub);
    }

    /// One more hub feeds this queue.
    pub(crate) fn add_upstream(&self) {
        self.open_upstreams.fetch_add(1, Ordering::SeqCst);
    }

    /// A hub feeding this queue closed (its producer finished).
    pub(crate) fn upstream_closed(&self) {
        let _ = self
            .open_upstreams
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        self.signal.notify();
    }

    /// Whether this queue keeps the newest messages only (what it replaces, nobody takes).
    pub(crate) fn keeps_last(&self) -> bool {
        matches!(self.bound, Bound::KeepLast(_))
    }

    /// Queues `envelope` by the queue's bound. Returns false when it was dropped (and
    /// counted) instead.
    pub(crate) fn push(&self, envelope: Envelope) -> bool {
        self.push_item(Item::Ready(envelope))
    }

    /// Queues ready-made bytes that are decoded when the consumer takes them (a
    /// keep-last queue: replaced while still encoded, they are counted as dropped here
    /// and never decoded).
    pub(crate) fn push_on_demand(&self, frame: Arc<OnDemand>, link: Arc<LinkCounters>) -> bool {
        self.push_item(Item::OnDemand { frame, link })
    }

    fn push_item(&self, item: Item) -> bool {
        let mut items = self.items.lock();
        let queued = match self.bound {
            Bound::KeepLast(n) => {
                while items.len() >= n {
                    items.pop_front();
                    self.count(DropReason::QueueFull);
                }
                items.push_back(item);
                true
            }
            Bound::KeepAll {
                depth,
                deadline,
                small_depth,
            } => {
                let depth = if item.content_len() <= SMALL_MESSAGE {
                    depth.max(small_depth)
                } else {
                    depth
                };
                let give_up = self
                    .clock
                    .now()
                    .as_nanos()
                    .saturating_add(u64::try_from(deadline.as_nanos()).unwrap_or(u64::MAX));
                loop {
                    if items.len() < depth {
                        items.push_back(item);
                        break true;
                    }
                    let now = self.clock.now().as_nanos();
                    if now >= give_up || self.stopping.load(Ordering::SeqCst) {
                        self.count(DropReason::QueueFull);
                        break false;
                    }
                    let wait = self
                        .clock
                        .real_time_until(Timestamp::from_nanos(give_up))
                        .unwrap_or(MANUAL_POLL)
                        .min(Duration::from_millis(5))
                        .max(Duration::from_micros(50));
                    self.room.wait_for(&mut items, wait);
                }
            }
        };
        drop(items);
        if queued {
            self.signal.notify();
        }
        queued
    }

    /// Wakes producers blocked on a full keep-all queue (the run is stopping).
    pub(crate) fn wake_producers(&self) {
        self.room.notify_all();
    }

    /// Counts a drop for `reason` on this queue (and downstream, for a relay).
    pub(crate) fn count(&self, reason: DropReason) {
        self.account(Fate::Dropped(reason));
    }

    /// Counts `fate` on this queue; a relay counts it on its downstream consumers too, a
    /// full relay queue as `codec_queue_full`.
    pub(crate) fn account(&self, fate: Fate) {
        self.account_n(fate, 1);
    }

    /// Counts `n` messages of `fate`, as [`account`](InputQueue::account) counts one.
    pub(crate) fn account_n(&self, fate: Fate, n: u64) {
        if n == 0 {
            return;
        }
        let counter = match fate {
            Fate::Dropped(reason) => DropReason::ALL
                .iter()
                .position(|r| *r == reason)
                .and_then(|slot| self.dropped.get(slot)),
            Fate::Unmatched => Some(&self.unmatched),
            Fate::UnprocessedAtStop => Some(&self.unprocessed_upstream),
            Fate::InFlightAtStop => Some(&self.in_flight_at_stop),
            Fate::Recovered => Some(&self.recovered),
        };
        if let Some(counter) = counter {
            counter.fetch_add(n, Ordering::Relaxed);
        }
        if let Some(hub) = self.relay.get() {
            let relayed = match fate {
                Fate::Dropped(DropReason::QueueFull) => Fate::Dropped(DropReason::CodecQueueFull),
                other => other,
            };
            hub.account_on_subscribers_n(relayed, n);
        }
    }

    /// Once the run's threads are joined: every message still in a relay's queue is
    /// counted as unprocessed at stop on its downstream consumers, and taken out.
    pub(crate) fn settle_relay(&self) {
        let Some(hub) = self.relay.get() else {
            return;
        };
        let left = self.items.lock().drain(..).count();
        hub.account_on_subscribers_n(
            Fate::UnprocessedAtStop,
            u64::try_from(left).unwrap_or(u64::MAX),
        );
    }

    /// Messages published while its consumer was not subscribed.
    pub(crate) fn unmatched(&self) -> u64 {
        self.unmatched.load(Ordering::Relaxed)
    }

    /// Messages left unprocessed at stop on the way to this queue's consumer: those
    /// still in this queue, and those relayed from queues upstream.
    pub(crate) fn unprocessed_at_stop(&self) -> u64 {
        let here = u64::try_from(self.len()).unwrap_or(u64::MAX);
        here + self.unprocessed_upstream.load(Ordering::Relaxed)
    }

    /// Frames that reached this queue's partition after the run stopped.
    pub(crate) fn in_flight_at_stop(&self) -> u64 {
        self.in_flight_at_stop.load(Ordering::Relaxed)
    }

    /// See [`Fate::Recovered`].
    pub(crate) fn recovered(&self) -> u64 {
        self.recovered.load(Ordering::Relaxed)
    }

    pub(crate) fn dropped(&self, reason: DropReason) -> u64 {
        DropReason::ALL
            .iter()
            .position(|r| *r == reason)
            .map_or(0, |slot| self.dropped[slot].load(Ordering::Relaxed))
    }

    pub(crate) fn latency(&self) -> LatencySummary {
        self.latency.lock().summary()
    }

    /// The message of a taken item, decoded now if it came encoded (once per process:
    /// another queue may have decoded it already). A corrupt frame is counted on this
    /// row as `decode_failed`, as a decode at publish counts it, and gives `None`.
    fn decoded(&self, item: Item) -> Option<Envelope> {
        let (frame, link) = match item {
            Item::Ready(envelope) => return Some(envelope),
            Item::OnDemand { frame, link } => (frame, link),
        };
        match frame.take() {
            Some(envelope) => {
                link.content_bytes
                    .fetch_add(content_bytes(envelope.message.as_ref()), Ordering::Relaxed);
                Some(envelope)
            }
            None => {
                // A decode at publish hands a corrupt frame to no link.
                let _ = link
                    .messages
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
                self.count(DropReason::DecodeFailed);
                None
            }
        }
    }
}

impl InputBinding for InputQueue {
    fn pop(&self) -> Option<Envelope> {
        loop {
            // Once the run is stopping, a step's drain loop (`while let Some(m) =
            // recv()?`) ends by itself even while input keeps arriving: what is left is
            // counted as unprocessed at stop.
            if self.stopping.load(Ordering::SeqCst) {
                return None;
            }
            let item = self.items.lock().pop_front()?;
            self.room.notify_one();
            // Decoded here, out of the lock: a corrupt frame is counted and the next
            // one taken.
            let Some(envelope) = self.decoded(item) else {
                continue;
            };
            self.delivered.fetch_add(1, Ordering::Relaxed);
            self.latency
                .lock()
                .record(envelope.header.publish_time, self.clock.now());
            return Some(envelope);
        }
    }

    fn peek(&self) -> Option<Envelope> {
        loop {
            if self.stopping.load(Ordering::SeqCst) {
                return None;
            }
            let front = self.items.lock().front().cloned()?;
            let Item::OnDemand { frame, .. } = &front else {
                return self.decoded(front);
            };
            if let Some(envelope) = frame.take() {
                return Some(envelope);
            }
            // A corrupt frame in front: taken out and counted, as `pop` would.
            let mut items = self.items.lock();
            let still_in_front = matches!(
                items.front(),
                Some(Item::OnDemand { frame: f, .. }) if Arc::ptr_eq(f, frame)
            );
            if still_in_front {
                let taken = items.pop_front();
                drop(items);
                self.room.notify_one();
                if let Some(taken) = taken {
                    let _ = self.decoded(taken);
                }
            }
        }
    }

    fn len(&self) -> usize {
        self.items.lock().len()
    }

    fn is_closed(&self) -> bool {
        self.open_upstreams.load(Ordering::SeqCst) == 0 && self.is_empty()
    }

    fn count_drop(&self, reason: DropReason) {
        // Taken by `pop` (and counted delivered), then dropped by the module side: it
        // moves from delivered to the drop, so that the input's row still balances.
        let _ = self
            .delivered
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        self.count(reason);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    use streamwire_core::{Envelope, Header, InputBinding, Timestamp};
    use streamwire_msgs::Odometry;

    use super::{Bound, InputQueue};
    use crate::clock::{ManualClock, Signal};

    fn envelope(seq: u64) -> Envelope {
        Envelope {
            header: Header {
                seq,
                publish_time: Timestamp::ZERO,
            },
            message: Arc::new(
                Odometry::new("odom", "base", Default::default(), Default::default()).unwrap(),
            ),
        }
    }

    fn keep_all(clock: &Arc<ManualClock>) -> Arc<InputQueue> {
        InputQueue::new(
            Bound::KeepAll {
                depth: 2,
                deadline: Duration::from_millis(100),
                small_depth: 2,
            },
            Signal::new(),
            clock.clone(),
            Arc::new(AtomicBool::new(false)),
        )
    }

    /// Waits (real time, generous) for a pusher thread; the test never asserts speed.
    fn joined(pusher: std::thread::JoinHandle<bool>) -> bool {
        pusher.join().unwrap()
    }

    #[test]
    fn keep_all_blocks_the_producer_then_drops_after_the_deadline() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_nanos(1)));
        let queue = keep_all(&clock);
        assert!(queue.push(envelope(0)));
        assert!(queue.push(envelope(1)));
        let pusher = {
            let queue = queue.clone();
            std::thread::spawn(move || queue.push(envelope(2)))
        };
        // The producer waits: nothing dropped while the run clock stands still.
        std::thread::sleep(Duration::from_millis(30));
        assert!(!pusher.is_finished());
        assert_eq!(queue.dropped(streamwire_core::DropReason::QueueFull), 0);
        clock.advance(Duration::from_millis(99));
        std::thread::sleep(Duration::from_millis(30));
        assert!(!pusher.is_finished(), "99 ms is inside the 100 ms deadline");
        clock.advance(Duration::from_millis(2));
        assert!(!joined(pusher), "dropped after the deadline");
        assert_eq!(queue.dropped(streamwire_core::DropReason::QueueFull), 1);
        assert_eq!(queue.len(), 2);
    }

    #[test]
    fn keep_all_delivers_when_the_consumer_makes_room_in_time() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_nanos(1)));
        let queue = keep_all(&clock);
        assert!(queue.push(envelope(0)));
        assert!(queue.push(envelope(1)));
        let pusher = {
            let queue = queue.clone();
            std::thread::spawn(move || queue.push(envelope(2)))
        };
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(queue.pop().map(|e| e.header.seq), Some(0));
        assert!(joined(pusher));
        let seqs: Vec<u64> = std::iter::from_fn(|| queue.pop())
            .map(|e| e.header.seq)
            .collect();
        assert_eq!(seqs, [1, 2]);
        assert_eq!(queue.dropped(streamwire_core::DropReason::QueueFull), 0);
    }

    #[test]
    fn a_wire_buffer_takes_small_messages_beyond_its_depth_and_not_large_ones() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_nanos(1)));
        let queue = InputQueue::new(
            Bound::KeepAll {
                depth: 2,
                deadline: Duration::ZERO,
                small_depth: 5,
            },
            Signal::new(),
            clock.clone(),
            Arc::new(AtomicBool::new(false)),
        );
        // Odometry carries no content bytes: small. Five fit, the sixth is refused at once
        // (a zero deadline), counted.
        for seq in 0..5 {
            assert!(queue.push(envelope(seq)), "message {seq}");
        }
        assert!(!queue.push(envelope(5)));
        assert_eq!(queue.dropped(streamwire_core::DropReason::QueueFull), 1);
        // A large message finds the queue over its depth of 2: refused too.
        let mut large = envelope(6);
        large.message = Arc::new(
            streamwire_msgs::Image::from_packed(
                64,
                64,
                streamwire_msgs::ImageEncoding::Rgb8,
                vec![0u8; 64 * 64 * 3],
            )
            .unwrap(),
        );
        while queue.len() > 2 {
            queue.pop();
        }
        assert!(!queue.push(large.clone()), "over its depth");
        queue.pop();
        assert!(queue.push(large), "under its depth");
    }
}
