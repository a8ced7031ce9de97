//! The process's own log records, warnings and above, for `/rosout`: a log layer (the
//! CLI's) offers each record here ([`LogHub::offer`]), and whoever shows or forwards them
//! (the web relay, the MCAP recorder, a distributed run's forwarder to the relay's
//! process) subscribes ([`LogHub::subscribe`]).
//!
//! Everything is bounded and counted, and nothing waits on a reader: the process's
//! records pass a rate limit ([`RATE`] a second, bursts of [`BURST`]), each subscriber
//! has a queue of [`QUEUE`] records (a full one drops the new record), and the last
//! [`HISTORY`] records are kept for a subscriber that comes later (the planner warns
//! before any relay runs), as ROS 2 keeps `/rosout`'s last records for a late reader.
//! Each record the hub keeps has a number, in the order offered: a reader that serves
//! several clients from one subscription (the relay's `/rosout` feed) gives a client who
//! joins later the history up to the last record it read
//! ([`LogSubscription::history_read`]), and the rest as it comes, none twice.
//! An offer takes two short locks and copies one record per subscriber: a log storm
//! costs the logging thread that much, never a wait.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use streamwire_core::{Envelope, Header, StreamTap};

use crate::LogRecord;

/// Records a second a process offers past the rate limit, on average.
pub const RATE: u32 = 100;
/// Records a process may offer at once before the rate limit applies.
pub const BURST: u32 = 200;
/// Records a subscriber's queue holds; a full queue drops the new record (counted).
pub const QUEUE: usize = 512;
/// Records kept for a subscriber that comes later.
pub const HISTORY: usize = 256;

/// Where a record was logged: in this process, or in another process of the run (a
/// distributed run's forwarder received it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Logged by this process.
    Local,
    /// Logged by another process of the run.
    Remote,
}

/// The hub's counts, since the process started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogCounts {
    /// Records this process logged that passed the rate limit.
    pub logged: u64,
    /// Records received from the run's other processes.
    pub received: u64,
    /// Records this process logged past the rate limit: never kept nor sent.
    pub rate_limited: u64,
    /// Records a subscriber's full queue dropped here, and records received here that
    /// could not be read.
    pub queue_dropped: u64,
    /// What the run's other processes said they dropped (rate limit, full queues).
    pub remote_dropped: u64,
}

impl LogCounts {
    /// Records dropped past a bound: here, and as the other processes said, there.
    pub fn dropped(&self) -> u64 {
        self.rate_limited + self.queue_dropped + self.remote_dropped
    }

    /// Records this process dropped (what its forwarder tells the others).
    pub fn dropped_here(&self) -> u64 {
        self.rate_limited + self.queue_dropped
    }
}

/// The process's hub of log records ([`hub`]).
pub struct LogHub {
    /// Shared with its subscriptions, which read its history.
    inner: Arc<Mutex<Inner>>,
    logged: AtomicU64,
    received: AtomicU64,
    rate_limited: AtomicU64,
    queue_dropped: AtomicU64,
}

struct Inner {
    /// The process's name, put before each local record's name.
    process: Option<Arc<str>>,
    /// The records kept, each with its number.
    history: VecDeque<(u64, LogRecord, Origin)>,
    /// The number of the next record kept.
    next: u64,
    subscribers: Vec<Weak<Queue>>,
    bucket: Bucket,
    /// What the run's other processes said they dropped, each its latest total.
    remote_dropped: BTreeMap<String, u64>,
}

/// A token bucket: [`BURST`] tokens, refilled at [`RATE`] a second.
struct Bucket {
    tokens: f64,
    at: Option<Instant>,
}

impl Bucket {
    fn take(&mut self, now: Instant) -> bool {
        let elapsed = self.at.map_or(Duration::ZERO, |at| now.duration_since(at));
        self.at = Some(now);
        self.tokens = (self.tokens + elapsed.as_secs_f64() * f64::from(RATE)).min(f64::from(BURST));
        let taken = self.tokens >= 1.0;
        if taken {
            self.tokens -= 1.0;
        }
        taken
    }
}

/// The process's hub, made on first use.
pub fn hub() -> &'static LogHub {
    static HUB: LazyLock<LogHub> = LazyLock::new(LogHub::new);
    &HUB
}

impl Default for LogHub {
    fn default() -> Self {
        LogHub::new()
    }
}

impl LogHub {
    /// An empty hub (tests; a process uses [`hub`]).
    pub fn new() -> LogHub {
        LogHub {
            inner: Arc::new(Mutex::new(Inner {
                process: None,
                history: VecDeque::new(),
                next: 0,
                subscribers: Vec::new(),
                bucket: Bucket {
                    tokens: f64::from(BURST),
                    at: None,
                },
                remote_dropped: BTreeMap::new(),
            })),
            logged: AtomicU64::new(0),
            received: AtomicU64::new(0),
            rate_limited: AtomicU64::new(0),
            queue_dropped: AtomicU64::new(0),
        }
    }

    /// Names this process (`robot/sensors`, `coordinator`): its records' names become
    /// `<process>/<name>` from now on.
    pub fn set_process(&self, process: &str) {
        self.inner.lock().process = Some(Arc::from(process));
    }

    /// The process's name, if [`set_process`](LogHub::set_process) gave one.
    pub fn process(&self) -> Option<Arc<str>> {
        self.inner.lock().process.clone()
    }

    /// Offers a record this process logged; false when the rate limit dropped it
    /// (counted). Never waits for a reader.
    pub fn offer(&self, mut record: LogRecord) -> bool {
        let mut inner = self.inner.lock();
        if !inner.bucket.take(Instant::now()) {
            self.rate_limited.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        if let Some(process) = &inner.process {
            record.name = Arc::from(format!("{process}/{}", record.name));
        }
        self.logged.fetch_add(1, Ordering::Relaxed);
        self.publish(&mut inner, record, Origin::Local);
        true
    }

    /// Offers a record another process of the run logged (its forwarder's name checked
    /// by the receiver); no rate limit here, the sender's applied.
    pub fn offer_remote(&self, record: LogRecord) {
        let mut inner = self.inner.lock();
        self.received.fetch_add(1, Ordering::Relaxed);
        self.publish(&mut inner, record, Origin::Remote);
    }

    /// Notes that process `from` has dropped `total` records in all (its latest count).
    pub fn remote_dropped(&self, from: &str, total: u64) {
        self.inner
            .lock()
            .remote_dropped
            .insert(from.to_owned(), total);
    }

    /// Counts a record received from another process that could not be read.
    pub fn unreadable(&self) {
        self.queue_dropped.fetch_add(1, Ordering::Relaxed);
    }

    fn publish(&self, inner: &mut Inner, record: LogRecord, origin: Origin) {
        if inner.history.len() == HISTORY {
            inner.history.pop_front();
        }
        let number = inner.next;
        inner.next += 1;
        inner.history.push_back((number, record.clone(), origin));
        inner.subscribers.retain(|queue| {
            let Some(queue) = queue.upgrade() else {
                return false;
            };
            if queue.wants(origin) && !queue.push(number, record.clone()) {
                self.queue_dropped.fetch_add(1, Ordering::Relaxed);
            }
            true
        });
    }

    /// A subscription to the records of `origins` (`Local` only: a forwarder, which must
    /// not send back what it received), starting with those the history still holds.
    pub fn subscribe(&self, origins: &[Origin]) -> LogSubscription {
        let mut inner = self.inner.lock();
        let queue = Arc::new(Queue {
            origins: origins.to_vec(),
            records: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
        });
        for (number, record, origin) in &inner.history {
            if queue.wants(*origin) && !queue.push(*number, record.clone()) {
                self.queue_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        inner.subscribers.push(Arc::downgrade(&queue));
        LogSubscription {
            queue,
            hub: self.inner.clone(),
            read: Mutex::new(None),
        }
    }

    /// The hub's counts.
    pub fn counts(&self) -> LogCounts {
        LogCounts {
            logged: self.logged.load(Ordering::Relaxed),
            received: self.received.load(Ordering::Relaxed),
            rate_limited: self.rate_limited.load(Ordering::Relaxed),
            queue_dropped: self.queue_dropped.load(Ordering::Relaxed),
            remote_dropped: self.inner.lock().remote_dropped.values().sum(),
        }
    }
}

/// A subscriber's bounded queue.
struct Queue {
    origins: Vec<Origin>,
    /// The records, each with its number in the hub.
    records: Mutex<VecDeque<(u64, LogRecord)>>,
    ready: Condvar,
}

impl Queue {
    fn wants(&self, origin: Origin) -> bool {
        self.origins.contains(&origin)
    }

    /// Queues record `number`; false when the queue is full (the record is dropped).
    fn push(&self, number: u64, record: LogRecord) -> bool {
        let mut records = self.records.lock();
        if records.len() >= QUEUE {
            return false;
        }
        records.push_back((number, record));
        self.ready.notify_one();
        true
    }
}

/// A subscription to a [`LogHub`]: its records in the order offered. Dropping it
/// unsubscribes. As a [`StreamTap`] (what a relay's `/rosout` or a recorder reads), each
/// record comes in an envelope stamped with its own time and numbered as the hub numbered
/// it.
pub struct LogSubscription {
    queue: Arc<Queue>,
    hub: Arc<Mutex<Inner>>,
    /// The number of the last record read.
    read: Mutex<Option<u64>>,
}

impl StreamTap for LogSubscription {
    fn recv_timeout(&self, timeout: Duration) -> Option<Envelope> {
        let (number, record) = self.next(timeout)?;
        Some(Envelope {
            header: Header {
                seq: number,
                publish_time: record.stamp,
            },
            message: Arc::new(record),
        })
    }

    /// The hub counts what its queues drop ([`LogHub::counts`]).
    fn dropped(&self) -> u64 {
        0
    }
}

impl LogSubscription {
    /// The next record, waiting up to `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<LogRecord> {
        self.next(timeout).map(|(_, record)| record)
    }

    fn next(&self, timeout: Duration) -> Option<(u64, LogRecord)> {
        let mut records = self.queue.records.lock();
        if records.is_empty() {
            let _ = self
                .queue
                .ready
                .wait_while_for(&mut records, |r| r.is_empty(), timeout);
        }
        let next = records.pop_front()?;
        *self.read.lock() = Some(next.0);
        Some(next)
    }

    /// The records of its origins the hub's history still holds, up to the last one this
    /// subscription read, oldest first (each numbered as the hub numbered it): what a
    /// reader serving several clients gives one who joins after it began, before the
    /// records it reads next.
    pub fn history_read(&self) -> Vec<(u64, LogRecord)> {
        let Some(through) = *self.read.lock() else {
            return Vec::new();
        };
        self.hub
            .lock()
            .history
            .iter()
            .filter(|(number, _, origin)| *number <= through && self.queue.wants(*origin))
            .map(|(number, record, _)| (*number, record.clone()))
            .collect()
    }
}

impl std::fmt::Debug for LogSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogSubscription")
            .field("origins", &self.queue.origins)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for LogHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogHub")
            .field("counts", &self.counts())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LogLevel;

    fn record(n: usize) -> LogRecord {
        LogRecord::new(LogLevel::Warn, "t", format!("{n}"))
    }

    #[test]
    fn a_storm_past_the_rate_limit_is_dropped_and_counted_without_waiting() {
        let hub = LogHub::new();
        let reader = hub.subscribe(&[Origin::Local]);
        let offered = 10 * BURST as usize;
        let kept = (0..offered).filter(|&n| hub.offer(record(n))).count();
        // The burst passes, the rest (but what the rate refilled meanwhile) is dropped.
        assert!(kept >= BURST as usize && kept < offered / 2, "{kept}");
        let counts = hub.counts();
        assert_eq!(counts.logged + counts.rate_limited, offered as u64);
        assert_eq!(counts.dropped(), counts.rate_limited);
        let mut read = 0;
        while reader.recv_timeout(Duration::ZERO).is_some() {
            read += 1;
        }
        assert_eq!(read, kept);
    }

    #[test]
    fn a_full_queue_drops_the_new_record_and_counts_it() {
        let hub = LogHub::new();
        let reader = hub.subscribe(&[Origin::Remote]);
        for n in 0..QUEUE + 7 {
            hub.offer_remote(record(n));
        }
        assert_eq!(hub.counts().dropped(), 7);
        assert_eq!(
            reader.recv_timeout(Duration::ZERO).map(|r| r.msg),
            Some("0".into())
        );
    }

    #[test]
    fn a_late_subscriber_gets_the_history_and_a_forwarder_only_local_records() {
        let hub = LogHub::new();
        hub.set_process("robot/sensors");
        hub.offer(record(1));
        hub.offer_remote(LogRecord::new(LogLevel::Error, "robot/perception/x", "2"));
        let everything = hub.subscribe(&[Origin::Local, Origin::Remote]);
        let forwarder = hub.subscribe(&[Origin::Local]);
        let names = |s: &LogSubscription| {
            std::iter::from_fn(|| s.recv_timeout(Duration::ZERO))
                .map(|r| r.name.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(&everything),
            ["robot/sensors/t", "robot/perception/x"]
        );
        assert_eq!(names(&forwarder), ["robot/sensors/t"]);
    }

    #[test]
    fn a_reader_gives_a_later_client_what_it_read_and_nothing_twice() {
        let hub = LogHub::new();
        let feed = hub.subscribe(&[Origin::Local, Origin::Remote]);
        assert!(feed.history_read().is_empty(), "nothing read yet");
        for n in 0..3 {
            hub.offer(record(n));
        }
        // The feed read two of three: a client joining now gets those two from the
        // history and the third from the feed.
        assert!(feed.recv_timeout(Duration::ZERO).is_some());
        assert!(feed.recv_timeout(Duration::ZERO).is_some());
        let history: Vec<String> = feed
            .history_read()
            .into_iter()
            .map(|(_, r)| r.msg.to_string())
            .collect();
        assert_eq!(history, ["0", "1"]);
        let next = StreamTap::recv_timeout(&feed, Duration::ZERO).map(|e| e.header.seq);
        assert_eq!(next, Some(2));
    }

    #[test]
    fn the_other_processes_drops_add_up_by_their_latest_totals() {
        let hub = LogHub::new();
        hub.remote_dropped("a/b", 3);
        hub.remote_dropped("a/b", 5);
        hub.remote_dropped("c/d", 1);
        assert_eq!(hub.counts().dropped(), 6);
    }
}
