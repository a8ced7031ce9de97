//! What `/rosout` carries: the run's log records, warnings and above, from every process
//! (this one's and, in a distributed run, what the others forwarded here: the process's
//! [`log_hub`]), with a log-record stream of the run's when it has one.
//!
//! A client gets the records logged before it subscribed: the feed's first subscriber
//! from the hub's history, as its subscription starts; one who joins a running feed from
//! the same history, up to the last record the feed read ([`History`]), before the feed's
//! next. And a `/rosout` subscriber's queue holds [`QUEUE`] frames whatever it asked for,
//! so that a burst of history reaches it whole (ROS 2 keeps `/rosout`'s last 1000
//! records for a late reader); what a full queue drops is counted as any topic's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use streamwire_core::{Context, Envelope, Header, StreamTap, TapService};
use streamwire_msgs::log_hub::{self, LogSubscription, Origin};

/// How long a wait on the stream lasts before the hub is looked at again.
const SLICE: Duration = Duration::from_millis(20);

/// The frames a `/rosout` subscriber's queue holds at least: the hub's history.
pub(crate) const QUEUE: usize = log_hub::HISTORY;

/// The tap behind `/rosout`: the hub's records first, then the stream's.
struct RosoutTap {
    hub: Arc<LogSubscription>,
    stream: Option<Box<dyn StreamTap>>,
}

/// The hub's records a running `/rosout` feed has read, for a client who joins it.
pub(crate) struct History(Arc<LogSubscription>);

impl History {
    /// The records the feed read that the hub still holds, oldest first.
    pub(crate) fn envelopes(&self) -> Vec<Envelope> {
        self.0
            .history_read()
            .into_iter()
            .map(|(seq, record)| Envelope {
                header: Header {
                    seq,
                    publish_time: record.stamp,
                },
                message: Arc::new(record),
            })
            .collect()
    }
}

/// `/rosout`'s tap: the process's log hub, and `stream` (a log-record stream) when the
/// run has one; and the history a client joining its feed later gets.
pub(crate) fn tap(
    taps: &dyn TapService,
    stream: Option<&str>,
) -> Result<(Box<dyn StreamTap>, History), String> {
    let hub = Arc::new(log_hub::hub().subscribe(&[Origin::Local, Origin::Remote]));
    let stream = stream
        .map(|stream| taps.tap(stream, None))
        .transpose()
        .map_err(|e| streamwire_core::log::chain(e.as_ref()).to_string())?;
    let tap = RosoutTap {
        hub: hub.clone(),
        stream,
    };
    Ok((Box::new(tap), History(hub)))
}

impl StreamTap for RosoutTap {
    fn recv_timeout(&self, timeout: Duration) -> Option<Envelope> {
        let Some(stream) = &self.stream else {
            return StreamTap::recv_timeout(&*self.hub, timeout);
        };
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(envelope) = StreamTap::recv_timeout(&*self.hub, Duration::ZERO) {
                return Some(envelope);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if let Some(envelope) = stream.recv_timeout(left.min(SLICE)) {
                return Some(envelope);
            }
            if Instant::now() >= deadline {
                return None;
            }
        }
    }

    fn dropped(&self) -> u64 {
        self.stream.as_ref().map_or(0, |s| s.dropped())
    }
}

/// The process's log records in the run's report: `log_records` logged here or received
/// from the other processes, `log_records_dropped` past a bound anywhere (rate limit,
/// full queue), each counter brought up to the hub's count.
pub(crate) fn report_counts(cx: &Context<'_>) {
    let counts = log_hub::hub().counts();
    // A counter appears once it has something to count.
    let raise = |name: &str, to: u64| {
        if to == 0 {
            return;
        }
        let counter = cx.counter(name);
        counter.add(to.saturating_sub(counter.get()));
    };
    raise("log_records", counts.logged + counts.received);
    raise("log_records_dropped", counts.dropped());
}
