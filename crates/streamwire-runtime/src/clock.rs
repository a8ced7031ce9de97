//! The run clock, and the one wake-up primitive every waiting thread uses.

use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use streamwire_core::Timestamp;

/// The run clock that `cx.now()` reads and that publish times and latencies use.
pub trait Clock: Send + Sync + 'static {
    /// Now, on this clock.
    fn now(&self) -> Timestamp;

    /// How long, in real time, until this clock reaches `deadline`; `None` when the
    /// clock does not follow real time (a manual clock), so waiters poll instead.
    fn real_time_until(&self, deadline: Timestamp) -> Option<Duration>;
}

/// Wall time (the system clock): the default.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }

    fn real_time_until(&self, deadline: Timestamp) -> Option<Duration> {
        Some(deadline.saturating_since(Timestamp::now()))
    }
}

/// A clock that moves only when told: timing behaviour in tests is deterministic.
///
/// ```
/// # use std::time::Duration;
/// # use streamwire::prelude::*;
/// # use streamwire::runtime::Clock;
/// # use streamwire::runtime::ManualClock;
/// let clock = ManualClock::new(Timestamp::from_nanos(1_000));
/// clock.advance(Duration::from_micros(2));
/// assert_eq!(clock.now(), Timestamp::from_nanos(3_000));
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    nanos: AtomicU64,
}

impl ManualClock {
    /// A manual clock reading `start`.
    pub fn new(start: Timestamp) -> ManualClock {
        ManualClock {
            nanos: AtomicU64::new(start.as_nanos()),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_add(by, Ordering::SeqCst);
    }

    /// Sets the clock to `to` (also backwards, to simulate clocks that disagree).
    pub fn set(&self, to: Timestamp) {
        self.nanos.store(to.as_nanos(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_nanos(self.nanos.load(Ordering::SeqCst))
    }

    fn real_time_until(&self, _: Timestamp) -> Option<Duration> {
        None
    }
}

/// A replay's clock: starts at `start` and runs `rate` times as fast as wall time (a rate
/// multiplier of 2 replays a recording in half the time).
#[derive(Debug)]
pub struct ScaledClock {
    origin: Instant,
    start: Timestamp,
    rate: f64,
}

impl ScaledClock {
    /// A clock reading `start` now and advancing `rate` times as fast as wall time. A rate
    /// that is not a positive finite number is taken as 1.
    pub fn new(start: Timestamp, rate: f64) -> ScaledClock {
        let rate = if rate.is_finite() && rate > 0.0 {
            rate
        } else {
            1.0
        };
        ScaledClock {
            origin: Instant::now(),
            start,
            rate,
        }
    }
}

impl Clock for ScaledClock {
    fn now(&self) -> Timestamp {
        let scaled = self.origin.elapsed().as_secs_f64() * self.rate * 1e9;
        Timestamp::from_nanos(self.start.as_nanos().saturating_add(scaled as u64))
    }

    fn real_time_until(&self, deadline: Timestamp) -> Option<Duration> {
        let clock_time = deadline.saturating_since(self.now());
        Some(clock_time.div_f64(self.rate))
    }
}

/// How often a waiter re-reads a clock that does not follow real time.
pub(crate) const MANUAL_POLL: Duration = Duration::from_millis(1);

/// A wake-up counter: producers bump it after queueing, the stop bumps every one, and a
/// waiter sleeps until it changes. Reading the count before checking for work and waiting
/// "since" that count means no wake-up is ever lost.
///
/// A waiter spins briefly before it blocks: a message that arrives within a few
/// microseconds is then taken without the cost of a futex sleep and wake-up (tens of
/// microseconds on a VM), as channel implementations do.
#[derive(Debug, Default)]
pub(crate) struct Signal {
    count: AtomicU64,
    sleepers: AtomicU64,
    /// Waits that ended because the count changed: how often its thread was woken to
    /// look for work (the report's `woken`; a thread nobody feeds stays at its stop's).
    woken: AtomicU64,
    lock: Mutex<()>,
    changed: Condvar,
}

/// Spin iterations before blocking (about a few microseconds).
const SPINS: u32 = 200;

impl Signal {
    pub(crate) fn new() -> Arc<Signal> {
        Arc::new(Signal::default())
    }

    /// The current count, to wait "since".
    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }

    pub(crate) fn notify(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            // Taking the lock orders this wake-up after a sleeper's last check.
            drop(self.lock.lock());
            self.changed.notify_all();
        }
    }

    /// Waits until the count differs from `since`, or `timeout` passes.
    pub(crate) fn wait(&self, since: u64, timeout: Duration) {
        for _ in 0..SPINS {
            if self.count() != since {
                self.woken.fetch_add(1, Ordering::Relaxed);
                return;
            }
            std::hint::spin_loop();
        }
        let mut guard = self.lock.lock();
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let _ = self
            .changed
            .wait_while_for(&mut guard, |_| self.count() == since, timeout);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        if self.count() != since {
            self.woken.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// How often a wait ended because the count changed.
    pub(crate) fn woken(&self) -> u64 {
        self.woken.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use streamwire_core::Timestamp;

    use super::{Clock, ManualClock, ScaledClock};

    #[test]
    fn a_scaled_clock_runs_rate_times_as_fast_as_wall_time() {
        let clock = ScaledClock::new(Timestamp::from_nanos(1_000_000_000), 4.0);
        let now = clock.now();
        assert!(now >= Timestamp::from_nanos(1_000_000_000));
        // Four seconds of replay time are (at most) one second of wall time away.
        let deadline = Timestamp::from_nanos(now.as_nanos() + 4_000_000_000);
        let wait = clock.real_time_until(deadline).unwrap();
        assert!(wait <= Duration::from_secs(1), "{wait:?}");
        assert!(wait > Duration::from_millis(500), "{wait:?}");
        // A nonsense rate is taken as 1.
        let clock = ScaledClock::new(Timestamp::ZERO, f64::NAN);
        let deadline = Timestamp::from_nanos(clock.now().as_nanos() + 1_000_000_000);
        assert!(clock.real_time_until(deadline).unwrap() > Duration::from_millis(500));
    }

    #[test]
    fn a_manual_clock_moves_only_when_told_and_can_go_back() {
        let clock = ManualClock::new(Timestamp::from_nanos(10));
        assert_eq!(clock.now(), Timestamp::from_nanos(10));
        clock.advance(Duration::from_nanos(5));
        assert_eq!(clock.now(), Timestamp::from_nanos(15));
        clock.set(Timestamp::from_nanos(3));
        assert_eq!(clock.now(), Timestamp::from_nanos(3));
        assert_eq!(clock.real_time_until(Timestamp::from_nanos(100)), None);
    }
}
