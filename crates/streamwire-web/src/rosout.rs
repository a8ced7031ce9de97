//! What `/rosout` carries: the run's log records, warnings and above, from every process
//! (this one's and, in a distributed run, what the others forwarded here: the process's
//! [`log_hub`]), with a log-record stream of the run's when it has one.

use std::time::{Duration, Instant};

use streamwire_core::{Context, Envelope, StreamTap, TapService};
use streamwire_msgs::log_hub::{self, LogSubscription, Origin};

/// How long a wait on the stream lasts before the hub is looked at again.
const SLICE: Duration = Duration::from_millis(20);

/// The tap behind `/rosout`: the hub's records first, then the stream's.
struct RosoutTap {
    hub: LogSubscription,
    stream: Box<dyn StreamTap>,
}

/// `/rosout`'s tap: the process's log hub, and `stream` (a log-record stream) when the
/// run has one.
pub(crate) fn tap(
    taps: &dyn TapService,
    stream: Option<&str>,
) -> Result<Box<dyn StreamTap>, String> {
    let hub = log_hub::hub().subscribe(&[Origin::Local, Origin::Remote]);
    let Some(stream) = stream else {
        return Ok(Box::new(hub));
    };
    let stream = taps
        .tap(stream, None)
        .map_err(|e| streamwire_core::log::chain(e.as_ref()).to_string())?;
    Ok(Box::new(RosoutTap { hub, stream }))
}

impl StreamTap for RosoutTap {
    fn recv_timeout(&self, timeout: Duration) -> Option<Envelope> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(envelope) = StreamTap::recv_timeout(&self.hub, Duration::ZERO) {
                return Some(envelope);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if let Some(envelope) = self.stream.recv_timeout(left.min(SLICE)) {
                return Some(envelope);
            }
            if Instant::now() >= deadline {
                return None;
            }
        }
    }

    fn dropped(&self) -> u64 {
        self.stream.dropped()
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
