//! A client's subscriptions to one topic, keyed by their `id`, and the settings the topic
//! is sent with: as ROSBRIDGE_PROTOCOL.md (3.3.4) says, the lowest `throttle_rate`, the
//! lowest `fragment_size` and the highest `queue_length` of them; the compression the
//! richest asked (`cbor-raw`, then `cbor`, then `png`, then `none`), as rosbridge_suite
//! picks it. An `unsubscribe` with an `id` removes that subscription only; without one,
//! all of them.

use std::time::Duration;

use crate::rosbridge::outgoing::PublishFormat;

/// One `subscribe`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Subscription {
    /// Its `id` (`None`: the client gave none; a later one without an id replaces it).
    pub(crate) id: Option<String>,
    /// `throttle_rate`.
    pub(crate) throttle: Duration,
    /// `queue_length`, at least 1.
    pub(crate) queue_length: usize,
    /// `compression`.
    pub(crate) compression: PublishFormat,
    /// `fragment_size`.
    pub(crate) fragment_size: Option<usize>,
}

/// What the topic is sent with: the subscriptions' settings combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Effective {
    /// The least time between two messages.
    pub(crate) throttle: Duration,
    /// The most messages kept for the client.
    pub(crate) queue_length: usize,
    /// The form of the frames.
    pub(crate) compression: PublishFormat,
    /// The longest text frame before it is fragmented.
    pub(crate) fragment_size: Option<usize>,
}

/// What an `unsubscribe` removed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Removed {
    /// This many subscriptions (all, or the one of the id).
    Some(usize),
    /// No subscription has the id given.
    UnknownId,
}

/// A client's subscriptions to one topic.
#[derive(Debug, Default)]
pub(crate) struct Subscriptions(Vec<Subscription>);

impl Subscriptions {
    /// Adds `subscription`, replacing the one with the same id.
    pub(crate) fn add(&mut self, subscription: Subscription) {
        self.0.retain(|s| s.id != subscription.id);
        self.0.push(subscription);
    }

    /// Removes the subscription of `id`, or all of them without an id.
    pub(crate) fn remove(&mut self, id: Option<&str>) -> Removed {
        let before = self.0.len();
        match id {
            None => self.0.clear(),
            Some(id) => self.0.retain(|s| s.id.as_deref() != Some(id)),
        }
        match before - self.0.len() {
            0 if id.is_some() => Removed::UnknownId,
            n => Removed::Some(n),
        }
    }

    /// The settings the topic is sent with; `None` when none is left.
    pub(crate) fn effective(&self) -> Option<Effective> {
        let first = self.0.first()?;
        let mut effective = Effective {
            throttle: first.throttle,
            queue_length: first.queue_length,
            compression: first.compression,
            fragment_size: first.fragment_size,
        };
        for s in &self.0[1..] {
            effective.throttle = effective.throttle.min(s.throttle);
            effective.queue_length = effective.queue_length.max(s.queue_length);
            effective.compression = effective.compression.max(s.compression);
            effective.fragment_size = match (effective.fragment_size, s.fragment_size) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        Some(effective)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(
        id: &str,
        throttle_ms: u64,
        queue_length: usize,
        compression: PublishFormat,
    ) -> Subscription {
        Subscription {
            id: Some(id.to_owned()),
            throttle: Duration::from_millis(throttle_ms),
            queue_length,
            compression,
            fragment_size: None,
        }
    }

    #[test]
    fn several_ids_combine_and_leave_one_by_one() {
        let mut subs = Subscriptions::default();
        subs.add(sub("slow", 1000, 1, PublishFormat::Json));
        subs.add(Subscription {
            fragment_size: Some(500),
            ..sub("fast", 100, 4, PublishFormat::Cbor)
        });
        let both = subs.effective().expect("two");
        assert_eq!(both.throttle, Duration::from_millis(100));
        assert_eq!(both.queue_length, 4);
        assert_eq!(both.compression, PublishFormat::Cbor);
        assert_eq!(both.fragment_size, Some(500));
        // The same id again replaces its subscription.
        subs.add(sub("fast", 200, 2, PublishFormat::Json));
        assert_eq!(
            subs.effective().map(|e| e.throttle),
            Some(Duration::from_millis(200))
        );
        assert_eq!(subs.remove(Some("nobody")), Removed::UnknownId);
        assert_eq!(subs.remove(Some("fast")), Removed::Some(1));
        let slow = subs.effective().expect("one left");
        assert_eq!(
            (slow.throttle, slow.queue_length),
            (Duration::from_secs(1), 1)
        );
        assert_eq!(subs.remove(None), Removed::Some(1));
        assert!(subs.effective().is_none());
    }

    #[test]
    fn the_richest_compression_wins() {
        let mut subs = Subscriptions::default();
        subs.add(sub("a", 0, 1, PublishFormat::Png));
        subs.add(sub("b", 0, 1, PublishFormat::Json));
        assert_eq!(
            subs.effective().map(|e| e.compression),
            Some(PublishFormat::Png)
        );
        subs.add(sub("c", 0, 1, PublishFormat::CborRaw));
        assert_eq!(
            subs.effective().map(|e| e.compression),
            Some(PublishFormat::CborRaw)
        );
    }
}
