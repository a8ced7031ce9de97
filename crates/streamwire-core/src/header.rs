//! The header the runtime puts on every delivered message.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// A point in time as nanoseconds since the UNIX epoch (UTC).
///
/// Used for a message's sensor `stamp` (when the data was captured, set by the producer)
/// and for the runtime's publish time (when it was sent). The two are never mixed: latency
/// is arrival minus publish time.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The epoch itself, used for "no stamp".
    pub const ZERO: Timestamp = Timestamp(0);

    /// A timestamp `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Timestamp {
        Timestamp(nanos)
    }

    /// Now, from the system clock. A clock before 1970 reads as the epoch; one past
    /// the year 2554 saturates.
    pub fn now() -> Timestamp {
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Timestamp(u64::try_from(since_epoch.as_nanos()).unwrap_or(u64::MAX))
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(&self) -> u64 {
        self.0
    }

    /// `self - earlier`, or zero if `earlier` is later (clocks of two hosts disagree).
    pub fn saturating_since(&self, earlier: Timestamp) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:09}",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000
        )
    }
}

/// What the runtime adds to each message it delivers: a per-output sequence number and
/// the publish time. A message's own `stamp` (sensor time) is kept unchanged through
/// encode and decode; this header is the runtime's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Header {
    /// Counts the messages of one output from 0; a gap means messages were dropped.
    pub seq: u64,
    /// When the producer published the message.
    pub publish_time: Timestamp,
}

impl Header {
    /// The end-to-end latency of a message that arrived at `arrival`.
    ///
    /// ```
    /// # use streamwire::prelude::*;
    /// # use std::time::Duration;
    /// let header = Header { seq: 7, publish_time: Timestamp::from_nanos(1_000) };
    /// assert_eq!(header.latency(Timestamp::from_nanos(4_000)), Duration::from_nanos(3_000));
    /// ```
    pub fn latency(&self, arrival: Timestamp) -> Duration {
        arrival.saturating_since(self.publish_time)
    }
}

/// A message as delivered to an input: the runtime's header and the message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Delivered<M> {
    /// Sequence number and publish time.
    pub header: Header,
    /// The message, its sensor stamp untouched.
    pub message: M,
}
