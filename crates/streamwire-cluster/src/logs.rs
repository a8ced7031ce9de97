//! A distributed run's log records on their way to `/rosout`: every process (the
//! coordinator and each worker) forwards its own records, warnings and above, from its
//! [`log_hub`] to `streamwire/<run>/@log/<process>`, and a process whose instances tap
//! the run's streams (a web relay, a recorder) subscribes to `streamwire/<run>/@log/**`
//! and hands what it receives to its own hub, where the relay reads them.
//!
//! In a closed run each process may put only its own key (RFC.md section 11), and a
//! receiver names a record after the key it came on, so that no process can log in
//! another's name. A forwarder sends nothing until someone subscribes: its records wait
//! in its hub's bounded queue (the planner warns before any worker joined). Its puts
//! drop rather than wait when the link is congested; with each record, and on its own
//! when it changed, goes how many records the process dropped, which the receiver's hub
//! adds to its count.
//!
//! A receiver that comes after a forwarder began to send (a second tapping process, a
//! worker restarted) still gets what was logged before it: each forwarder keeps the last
//! [`HISTORY`] records it sent, numbered, and answers a query on its key with them; a
//! receiver asks `@log/**` once its subscriber is declared, and takes each process's
//! numbered record once, whether it came live or in an answer.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use streamwire_msgs::LogRecord;
use streamwire_msgs::log_hub::{self, HISTORY, Origin};
use zenoh::Wait as _;
use zenoh::pubsub::{Publisher, Subscriber};
use zenoh::qos::CongestionControl;
use zenoh::query::{Query, Queryable};
use zenoh::sample::{Locality, Sample};

use crate::{ClusterError, engine};

/// How often a forwarder looks for a subscriber, its stop flag and its drop count.
const POLL: Duration = Duration::from_millis(100);
/// How long a forwarder waits after it found a subscriber before it sends.
const SETTLE: Duration = Duration::from_secs(1);
/// The largest forwarded record a receiver reads (a record is a log line).
const MAX_BYTES: usize = 64 * 1024;
/// How long a receiver waits for the forwarders' answers to its question.
const ASK_TIMEOUT: Duration = Duration::from_secs(5);

/// What a forwarder puts: a record or none, and the records its process dropped so far.
#[derive(Clone, Serialize, Deserialize)]
struct Forwarded {
    record: Option<LogRecord>,
    dropped: u64,
    /// The record's number among those its forwarder sent (a receiver takes each once);
    /// absent from an older forwarder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    number: Option<u64>,
}

/// The last records a forwarder sent, for a receiver that asks.
type Sent = Arc<Mutex<VecDeque<Forwarded>>>;

/// A process's part: its forwarder, and its receiver when it has one. Dropping it stops
/// both.
pub(crate) struct LogLink {
    stop: Arc<AtomicBool>,
    forwarder: Option<JoinHandle<()>>,
    _answers: Queryable<()>,
    _receiver: Option<Subscriber<()>>,
}

impl Drop for LogLink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.forwarder.take()
            && thread.join().is_err()
        {
            tracing::debug!("the log forwarder panicked");
        }
    }
}

/// Starts process `own`'s log link in run `prefix` (`streamwire/<run>`) on `session`:
/// its forwarder, and a receiver when `receive`.
pub(crate) fn start(
    session: &zenoh::Session,
    prefix: &str,
    own: &str,
    receive: bool,
) -> Result<LogLink, ClusterError> {
    let publisher = session
        .declare_publisher(format!("{prefix}/@log/{own}"))
        .congestion_control(CongestionControl::Drop)
        .wait()
        .map_err(engine("the log records' publisher"))?;
    let sent: Sent = Arc::default();
    let answers = {
        let (sent, key) = (sent.clone(), format!("{prefix}/@log/{own}"));
        session
            .declare_queryable(key.clone())
            .callback(move |query| answer(&query, &key, &sent))
            .wait()
            .map_err(engine("the log records' queryable"))?
    };
    let receiver = receive
        .then(|| receive_from(session, prefix, own))
        .transpose()?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let forwarder = std::thread::Builder::new()
        .name("sw log forward".to_owned())
        .spawn(move || forward(&publisher, &flag, &sent))
        .map_err(|error| ClusterError::Thread {
            what: "the log forwarder",
            error,
        })?;
    Ok(LogLink {
        stop,
        forwarder: Some(forwarder),
        _answers: answers,
        _receiver: receiver,
    })
}

/// The receiver of process `own`: the other processes' records as they come, and what
/// they sent before, asked once its subscriber is declared (each record taken once).
fn receive_from(
    session: &zenoh::Session,
    prefix: &str,
    own: &str,
) -> Result<Subscriber<()>, ClusterError> {
    let from_prefix: Arc<str> = Arc::from(format!("{prefix}/@log/"));
    let own_key = format!("{from_prefix}{own}");
    let seen = Arc::new(Seen::default());
    let (live_prefix, live_seen) = (from_prefix.clone(), seen.clone());
    let subscriber = session
        .declare_subscriber(format!("{prefix}/@log/**"))
        // Its own records are in its hub already.
        .allowed_origin(Locality::Remote)
        .callback(move |sample| received(&live_prefix, &sample, &live_seen))
        .wait()
        .map_err(engine("the log records' subscriber"))?;
    session
        .get(format!("{prefix}/@log/**"))
        .timeout(ASK_TIMEOUT)
        .callback(move |reply| {
            // Its own forwarder answers too: those records are in its hub already.
            if let Ok(sample) = reply.result()
                && sample.key_expr().as_str() != own_key
            {
                received(&from_prefix, sample, &seen);
            }
        })
        .wait()
        .map_err(engine("the log records' question"))?;
    Ok(subscriber)
}

/// Answers a receiver's question with the records this forwarder sent (the last
/// [`HISTORY`]), each as it was put.
fn answer(query: &Query, key: &str, sent: &Sent) {
    let records: Vec<Forwarded> = sent.lock().iter().cloned().collect();
    for forwarded in records {
        match serde_json::to_vec(&forwarded) {
            Ok(bytes) => {
                if let Err(error) = query.reply(key, bytes).wait() {
                    tracing::debug!("a log record was not given to a receiver: {error}");
                    return;
                }
            }
            Err(error) => tracing::debug!("a log record was not written: {error}"),
        }
    }
}

/// The numbers of the records taken from each process (its latest [`SEEN`]).
#[derive(Default)]
struct Seen(Mutex<BTreeMap<String, BTreeSet<u64>>>);

/// How many numbers a receiver remembers per process: more than one answer holds.
const SEEN: usize = 2 * HISTORY;

impl Seen {
    /// Whether record `number` of process `from` is new (and remembers it).
    fn first(&self, from: &str, number: u64) -> bool {
        let mut all = self.0.lock();
        let numbers = all.entry(from.to_owned()).or_default();
        if numbers.len() >= SEEN && numbers.first().is_some_and(|&oldest| number < oldest) {
            // Older than anything remembered: taken long ago.
            return false;
        }
        if !numbers.insert(number) {
            return false;
        }
        if numbers.len() > SEEN {
            numbers.pop_first();
        }
        true
    }
}

/// The forwarder: the process's own records, once someone subscribes, until `stop`; the
/// last [`HISTORY`] it sent kept in `sent`.
fn forward(publisher: &Publisher<'static>, stop: &AtomicBool, sent: &Sent) {
    let reader = log_hub::hub().subscribe(&[Origin::Local]);
    let mut matched = false;
    let mut told_dropped = 0;
    let mut next_number = 0;
    while !stop.load(Ordering::SeqCst) {
        if !matched {
            matched = publisher
                .matching_status()
                .wait()
                .is_ok_and(|status| status.matching());
            // zenoh says "matching" once the subscriber's declaration arrived; puts in
            // the moments after were seen lost (the first records of a run), so the
            // forwarder lets the route settle first.
            std::thread::sleep(if matched { SETTLE } else { POLL });
            if !matched {
                continue;
            }
        }
        let record = reader.recv_timeout(POLL);
        let dropped = log_hub::hub().counts().dropped_here();
        if record.is_none() && dropped == told_dropped {
            continue;
        }
        told_dropped = dropped;
        let number = record.is_some().then(|| {
            next_number += 1;
            next_number - 1
        });
        let forwarded = Forwarded {
            record,
            dropped,
            number,
        };
        if number.is_some() {
            let mut sent = sent.lock();
            if sent.len() == HISTORY {
                sent.pop_front();
            }
            sent.push_back(forwarded.clone());
        }
        match serde_json::to_vec(&forwarded) {
            Ok(bytes) => {
                if let Err(error) = publisher.put(bytes).wait() {
                    tracing::debug!("a log record was not forwarded: {error}");
                }
            }
            Err(error) => tracing::debug!("a log record was not written: {error}"),
        }
    }
}

/// A record another process forwarded, into this process's hub under that process's
/// name, unless `seen` has it already.
fn received(from_prefix: &str, sample: &Sample, seen: &Seen) {
    let hub = log_hub::hub();
    let Some(from) = sample.key_expr().as_str().strip_prefix(from_prefix) else {
        return;
    };
    let bytes = sample.payload().to_bytes();
    let forwarded = (bytes.len() <= MAX_BYTES)
        .then(|| serde_json::from_slice::<Forwarded>(&bytes).ok())
        .flatten();
    let Some(forwarded) = forwarded else {
        hub.unreadable();
        return;
    };
    if let Some(number) = forwarded.number
        && !seen.first(from, number)
    {
        return;
    }
    hub.remote_dropped(from, forwarded.dropped);
    if let Some(mut record) = forwarded.record {
        if !record.name.starts_with(&format!("{from}/")) {
            record.name = Arc::from(format!("{from}/{}", record.name));
        }
        hub.offer_remote(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receiver_takes_each_numbered_record_of_a_process_once() {
        let seen = Seen::default();
        // Live first, then an answer with what came before and the same record again.
        assert!(seen.first("robot/sensors", 7));
        assert!(seen.first("robot/sensors", 3));
        assert!(!seen.first("robot/sensors", 7));
        // Another process numbers its own.
        assert!(seen.first("coordinator", 7));
        // Past what it remembers, an older number is taken as seen long ago.
        for n in 100..100 + SEEN as u64 {
            seen.first("coordinator", n);
        }
        assert!(!seen.first("coordinator", 8));
        assert!(seen.first("coordinator", 100 + SEEN as u64));
    }
}
