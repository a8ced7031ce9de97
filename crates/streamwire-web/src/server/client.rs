//! One websocket client as the feeds and its writer see it: its queues ([`Slot`]: one per
//! subscribed topic, one for control replies), its counts, and the replies it is sent
//! (`status`, service responses), whichever protocol it speaks.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::extract::ws::Message;
use serde_json::json;

use super::shared::{Shared, lock};
use crate::rosbridge::client_to_server::{Refused, StatusLevel};
use crate::rosbridge::outgoing::PublishFormat;
use crate::rosbridge::subscription::{Effective, Removed, Subscription, Subscriptions};
use crate::rosbridge::topics::{Source, Topic};

/// Queued control replies (statuses, service responses) per client.
const CONTROL_QUEUE: usize = 64;
/// The longest text of a status reply, and of an id echoed back.
pub(crate) const MAX_REPLY_TEXT: usize = 512;
pub(crate) const MAX_ID: usize = 128;

/// `text`, cut to at most `max` bytes on a character boundary, with an ellipsis if cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// One message for a client: one websocket frame, or its `fragment`s, sent together.
pub(super) type Outgoing = Arc<[Message]>;

/// A bounded keep-last queue for one client.
pub(super) struct Slot<T> {
    frames: Mutex<VecDeque<T>>,
    capacity: AtomicUsize,
    /// The least capacity, whatever a subscription asks for (`/rosout`'s history).
    floor: usize,
    pub(super) dropped: AtomicU64,
}

impl<T> Slot<T> {
    fn new(capacity: usize) -> Slot<T> {
        Slot::with_floor(capacity, 1)
    }

    fn with_floor(capacity: usize, floor: usize) -> Slot<T> {
        let capacity = capacity.max(floor).max(1);
        Slot {
            frames: Mutex::new(VecDeque::new()),
            capacity: AtomicUsize::new(capacity),
            floor,
            dropped: AtomicU64::new(0),
        }
    }

    /// Keeps at most `capacity` (no less than its floor) from the next push on.
    fn set_capacity(&self, capacity: usize) {
        self.capacity
            .store(capacity.max(self.floor).max(1), Ordering::Relaxed);
    }

    /// Queues `frame`; true when the oldest was dropped for it.
    pub(super) fn push(&self, frame: T) -> bool {
        let mut frames = lock(&self.frames);
        let capacity = self.capacity.load(Ordering::Relaxed);
        let mut dropped = false;
        while frames.len() >= capacity {
            frames.pop_front();
            self.dropped.fetch_add(1, Ordering::Relaxed);
            dropped = true;
        }
        frames.push_back(frame);
        dropped
    }

    pub(super) fn pop(&self) -> Option<T> {
        lock(&self.frames).pop_front()
    }
}

/// A subscriber's queue of `topic`, as long as it asked (`/rosout`'s: at least the log
/// hub's history, [`crate::rosout::QUEUE`]).
fn slot_for(topic: &Topic, queue_length: usize) -> Slot<Outgoing> {
    let floor = match topic.source {
        Source::Rosout(_) => crate::rosout::QUEUE,
        _ => 1,
    };
    Slot::with_floor(queue_length, floor)
}

/// The form a subscription's frames are written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum FrameFormat {
    /// rosbridge `publish` messages in this form (the subscribe's `compression`).
    Rosbridge(PublishFormat),
    /// Foxglove `messageData` binary frames of this subscription id (`crate::foxglove`).
    Foxglove(u32),
}

/// A client's subscriptions to one topic, as its topic's feed sees them: a rosbridge
/// client's by `id`, or one Foxglove subscription.
pub(crate) struct ClientTopic {
    /// The topic as the client spelled it (`/odom` or `odom`): replies echo it.
    pub(super) spelling: String,
    /// The topic's name (`odom`): its feed's key.
    pub(super) topic: String,
    pub(super) slot: Arc<Slot<Outgoing>>,
    /// The subscriptions by id, and what they combine into.
    subscriptions: Mutex<(Subscriptions, Effective)>,
    /// When the feed last queued a message here (for the throttle).
    pub(super) last_sent: Mutex<Option<Instant>>,
    /// A Foxglove client's subscription id (its `subscriptions` then empty, its
    /// `Effective` fixed: no throttle, its own queue length).
    foxglove: Option<u32>,
}

impl ClientTopic {
    /// A rosbridge client's first subscription to `topic`, which it spelled `spelling`.
    pub(crate) fn rosbridge(
        topic: &Topic,
        spelling: String,
        subscription: Subscription,
    ) -> Option<ClientTopic> {
        let mut subscriptions = Subscriptions::default();
        subscriptions.add(subscription);
        let effective = subscriptions.effective()?;
        Some(ClientTopic {
            spelling,
            topic: topic.name.clone(),
            slot: Arc::new(slot_for(topic, effective.queue_length)),
            subscriptions: Mutex::new((subscriptions, effective)),
            last_sent: Mutex::new(None),
            foxglove: None,
        })
    }

    /// A Foxglove client's subscription `subscription` to `topic`, with a keep-last queue
    /// of `capacity` frames.
    pub(crate) fn foxglove(topic: &Topic, subscription: u32, capacity: usize) -> ClientTopic {
        let effective = Effective {
            throttle: Duration::ZERO,
            queue_length: capacity.max(1),
            // Not read: a Foxglove subscription's frames are `messageData` (`format`).
            compression: PublishFormat::CborRaw,
            fragment_size: None,
        };
        ClientTopic {
            spelling: format!("/{}", topic.name),
            topic: topic.name.clone(),
            slot: Arc::new(slot_for(topic, effective.queue_length)),
            subscriptions: Mutex::new((Subscriptions::default(), effective)),
            last_sent: Mutex::new(None),
            foxglove: Some(subscription),
        }
    }

    /// The topic's name (`odom`).
    pub(crate) fn topic(&self) -> &str {
        &self.topic
    }

    /// What the subscriptions combine into.
    pub(super) fn effective(&self) -> Effective {
        self.subscriptions.lock().1
    }

    pub(super) fn format(&self) -> FrameFormat {
        match self.foxglove {
            Some(subscription) => FrameFormat::Foxglove(subscription),
            None => FrameFormat::Rosbridge(self.effective().compression),
        }
    }

    /// Adds a rosbridge subscription (replacing the one of the same id).
    pub(crate) fn add(&self, subscription: Subscription) {
        let mut subscriptions = self.subscriptions.lock();
        subscriptions.0.add(subscription);
        if let Some(effective) = subscriptions.0.effective() {
            subscriptions.1 = effective;
            self.slot.set_capacity(effective.queue_length);
        }
    }

    /// Removes the rosbridge subscription `id`, or all of them without an id; also says
    /// whether any is left.
    pub(crate) fn remove(&self, id: Option<&str>) -> (Removed, bool) {
        let mut subscriptions = self.subscriptions.lock();
        let removed = subscriptions.0.remove(id);
        match subscriptions.0.effective() {
            Some(effective) => {
                subscriptions.1 = effective;
                self.slot.set_capacity(effective.queue_length);
                (removed, true)
            }
            None => (removed, false),
        }
    }
}

pub(crate) struct Client {
    pub(super) id: u64,
    pub(super) name: String,
    /// The name in the run's report (`dropped:<report_as>`): the name, in characters a
    /// report line keeps together.
    pub(super) report_as: String,
    /// Of `dropped`, what the run's report already has.
    reported_drops: AtomicU64,
    /// Told when there is something to write (a frame queued, the client closing).
    pub(super) wake: tokio::sync::Notify,
    /// Told when the writer ended (the client stalled or left), to end the reader too.
    pub(super) gone: tokio::sync::Notify,
    pub(super) control: Slot<Message>,
    pub(super) topics: Mutex<Vec<Arc<ClientTopic>>>,
    pub(super) dropped: AtomicU64,
    pub(super) sent: AtomicU64,
    pub(crate) bad_input: AtomicU64,
    /// Control replies dropped from its full queue.
    pub(super) replies_dropped: AtomicU64,
    pub(super) closed: AtomicBool,
    /// The least severe `status` sent to it (a [`StatusLevel`] as a number; `set_level`).
    status_level: AtomicU8,
}

impl Client {
    /// A client numbered `id`, called `name`, with nothing queued.
    pub(super) fn new(id: u64, name: String) -> Client {
        Client {
            id,
            report_as: report_name(&name),
            name,
            reported_drops: AtomicU64::new(0),
            wake: tokio::sync::Notify::new(),
            gone: tokio::sync::Notify::new(),
            control: Slot::new(CONTROL_QUEUE),
            topics: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            bad_input: AtomicU64::new(0),
            replies_dropped: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            status_level: AtomicU8::new(StatusLevel::Info as u8),
        }
    }

    /// Drops not yet in the run's report, now counted as reported.
    pub(super) fn unreported_drops(&self) -> u64 {
        let dropped = self.dropped.load(Ordering::Relaxed);
        dropped.saturating_sub(self.reported_drops.swap(dropped, Ordering::Relaxed))
    }

    /// Its subscriptions to the topic it spelled `spelling`, if any.
    pub(crate) fn topic_spelled(&self, spelling: &str) -> Option<Arc<ClientTopic>> {
        lock(&self.topics)
            .iter()
            .find(|t| t.spelling == spelling)
            .cloned()
    }

    /// Queues a JSON reply.
    pub(crate) fn reply(&self, shared: &Shared, value: serde_json::Value) {
        self.queue_control(shared, Message::Text(value.to_string().into()));
    }

    /// Queues a control frame (a reply, a ping, a close); the oldest queued one makes way
    /// when the queue is full, counted.
    pub(crate) fn queue_control(&self, shared: &Shared, frame: Message) {
        if self.control.push(frame) {
            self.replies_dropped.fetch_add(1, Ordering::Relaxed);
            shared.counters.replies_dropped.increment();
        }
        self.wake.notify_one();
    }

    /// Sends only the `status` messages at `level` and above from now on (`set_level`).
    pub(crate) fn set_status_level(&self, level: StatusLevel) {
        self.status_level.store(level as u8, Ordering::Relaxed);
    }

    /// Sends `status` unless the client asked for less (`set_level`).
    pub(crate) fn status(&self, shared: &Shared, level: StatusLevel, status: serde_json::Value) {
        if (level as u8) >= self.status_level.load(Ordering::Relaxed) {
            self.reply(shared, status);
        }
    }

    /// Says why its op was refused in a rosbridge `status` error, counted as bad input.
    pub(crate) fn status_error(&self, shared: &Shared, refused: Refused) {
        self.bad_input.fetch_add(1, Ordering::Relaxed);
        shared.counters.bad_input.increment();
        // Replies echo what the client sent: clipped, so that queued replies stay small.
        let mut status =
            json!({"op": "status", "level": "error", "msg": clip(&refused.msg, MAX_REPLY_TEXT)});
        if let Some(id) = refused.id {
            status["id"] = json!(clip(&id, MAX_ID));
        }
        self.status(shared, StatusLevel::Error, status);
    }
}

/// A client's name as one word of the run's report: letters, digits, `-`, `_` and `.`
/// kept, anything else `_`, at most 32 characters.
fn report_name(name: &str) -> String {
    name.chars()
        .take(32)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_is_one_word_of_the_report() {
        assert_eq!(report_name("client 3"), "client_3");
        assert_eq!(report_name("viewer-ab12.x_y"), "viewer-ab12.x_y");
        assert_eq!(report_name("a=b é"), "a_b__");
        assert_eq!(report_name(&"x".repeat(100)).len(), 32);
    }

    #[test]
    fn replies_clip_on_a_character_boundary() {
        assert_eq!(clip("héllo", 2), "h…");
        assert_eq!(clip("hello", 5), "hello");
    }
}
