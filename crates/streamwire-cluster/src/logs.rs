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

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use streamwire_msgs::LogRecord;
use streamwire_msgs::log_hub::{self, Origin};
use zenoh::Wait as _;
use zenoh::pubsub::{Publisher, Subscriber};
use zenoh::qos::CongestionControl;
use zenoh::sample::{Locality, Sample};

use crate::{ClusterError, engine};

/// How often a forwarder looks for a subscriber, its stop flag and its drop count.
const POLL: Duration = Duration::from_millis(100);
/// How long a forwarder waits after it found a subscriber before it sends.
const SETTLE: Duration = Duration::from_secs(1);
/// The largest forwarded record a receiver reads (a record is a log line).
const MAX_BYTES: usize = 64 * 1024;

/// What a forwarder puts: a record or none, and the records its process dropped so far.
#[derive(Serialize, Deserialize)]
struct Forwarded {
    record: Option<LogRecord>,
    dropped: u64,
}

/// A process's part: its forwarder, and its receiver when it has one. Dropping it stops
/// both.
pub(crate) struct LogLink {
    stop: Arc<AtomicBool>,
    forwarder: Option<JoinHandle<()>>,
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
    let receiver = receive
        .then(|| {
            let from_prefix = format!("{prefix}/@log/");
            session
                .declare_subscriber(format!("{prefix}/@log/**"))
                // Its own records are in its hub already.
                .allowed_origin(Locality::Remote)
                .callback(move |sample| received(&from_prefix, &sample))
                .wait()
                .map_err(engine("the log records' subscriber"))
        })
        .transpose()?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let forwarder = std::thread::Builder::new()
        .name("sw log forward".to_owned())
        .spawn(move || forward(&publisher, &flag))
        .map_err(|error| ClusterError::Thread {
            what: "the log forwarder",
            error,
        })?;
    Ok(LogLink {
        stop,
        forwarder: Some(forwarder),
        _receiver: receiver,
    })
}

/// The forwarder: the process's own records, once someone subscribes, until `stop`.
fn forward(publisher: &Publisher<'static>, stop: &AtomicBool) {
    let reader = log_hub::hub().subscribe(&[Origin::Local]);
    let mut matched = false;
    let mut told_dropped = 0;
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
        let forwarded = Forwarded { record, dropped };
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
/// name.
fn received(from_prefix: &str, sample: &Sample) {
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
    hub.remote_dropped(from, forwarded.dropped);
    if let Some(mut record) = forwarded.record {
        if !record.name.starts_with(&format!("{from}/")) {
            record.name = Arc::from(format!("{from}/{}", record.name));
        }
        hub.offer_remote(record);
    }
}
