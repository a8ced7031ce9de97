//! The feeds: a plain thread per tapped stream that some client wants. A feed reads its
//! stream's tap, prepares each message once (its ROS 2 CDR, its rosbridge shape, as its
//! subscribers need), writes it once per form asked for ([`FrameFormat`], fragment size),
//! and puts the frames into each subscriber's keep-last queue without ever waiting. It
//! outlives its last subscriber by [`FEED_LINGER`], then ends and drops its tap.
//!
//! Also here: subscribing a client's [`ClientTopic`] to its topic's feed (starting the
//! feed if none runs) and taking it off again, for both protocols.

use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::ws::Message;
use streamwire_core::{Envelope, StreamTap};

use super::client::{Client, ClientTopic, FrameFormat, Outgoing};
use super::shared::{Shared, lock};
use crate::foxglove;
use crate::rosbridge::outgoing::{self, PublishFormat};
use crate::rosbridge::subscription::Effective;
use crate::rosbridge::topics::{Source, Topic};
use crate::rosbridge::{self, Prepared};
use crate::wire;

/// How long a feed waits for a message before re-checking that someone still listens.
const FEED_POLL: Duration = Duration::from_millis(100);
/// How long a feed outlives its last subscriber: a client toggling subscriptions reuses
/// it rather than making a tap (and the run's record of it) per toggle.
const FEED_LINGER: Duration = Duration::from_secs(2);

/// One tapped stream and its subscribers.
pub(crate) struct Feed {
    pub(super) topic: Arc<Topic>,
    pub(super) subscribers: Mutex<Vec<(Arc<Client>, Arc<ClientTopic>)>>,
    /// `/rosout`'s subscribers who joined the running feed: the feed's thread gives them
    /// the history it read, then moves them to `subscribers`.
    pub(super) joiners: Mutex<Vec<(Arc<Client>, Arc<ClientTopic>)>>,
    /// Messages read from the tap.
    pub(super) messages: AtomicU64,
    /// Bytes written, each form once.
    pub(super) bytes: AtomicU64,
}

/// What a message is written once for: the topic as spelled, the frames' form and the
/// fragment size.
type FrameKey = (String, FrameFormat, Option<usize>);

/// Subscribes `client` to `topic` with `entry`, starting the topic's feed if none runs;
/// `Err` says why the feed could not start.
pub(crate) fn subscribe(
    shared: &Arc<Shared>,
    client: &Arc<Client>,
    topic: &Arc<Topic>,
    entry: Arc<ClientTopic>,
) -> Result<(), String> {
    join_feed(shared, topic, client, entry.clone())?;
    lock(&client.topics).push(entry);
    Ok(())
}

/// Ends one subscription of `client`; what its queue still holds is not sent.
pub(crate) fn unsubscribe(shared: &Shared, client: &Client, entry: &Arc<ClientTopic>) {
    lock(&client.topics).retain(|t| !Arc::ptr_eq(t, entry));
    leave_feed(shared, entry);
}

/// Takes `entry` off its topic's feed (the feed lingers, then ends, when it was the last).
pub(super) fn leave_feed(shared: &Shared, entry: &Arc<ClientTopic>) {
    if let Some(feed) = lock(&shared.feeds).get(&entry.topic) {
        lock(&feed.subscribers).retain(|(_, t)| !Arc::ptr_eq(t, entry));
        lock(&feed.joiners).retain(|(_, t)| !Arc::ptr_eq(t, entry));
    }
}

/// Adds a subscriber to its topic's feed, starting the feed (a tap and its thread) if
/// none runs.
fn join_feed(
    shared: &Arc<Shared>,
    topic: &Arc<Topic>,
    client: &Arc<Client>,
    entry: Arc<ClientTopic>,
) -> Result<(), String> {
    let mut feeds = lock(&shared.feeds);
    if let Some(feed) = feeds.get(&topic.name) {
        // A newcomer to `/rosout` gets the records logged before it came, as the feed's
        // first subscriber did.
        let joined = if matches!(topic.source, Source::Rosout(_)) {
            &feed.joiners
        } else {
            &feed.subscribers
        };
        lock(joined).push((client.clone(), entry));
        return Ok(());
    }
    let feed = Arc::new(Feed {
        topic: topic.clone(),
        subscribers: Mutex::new(vec![(client.clone(), entry)]),
        joiners: Mutex::new(Vec::new()),
        messages: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
    });
    // `/rosout` always has a feed (the run's own log records); another topic has its
    // stream's.
    if topic.stream.is_some() || matches!(topic.source, Source::Rosout(_)) {
        start_feed(shared, &feed)?;
    }
    feeds.insert(topic.name.clone(), feed);
    Ok(())
}

/// Taps the topic's stream (`/rosout`: the log hub too) and starts `feed`'s thread on it.
fn start_feed(shared: &Arc<Shared>, feed: &Arc<Feed>) -> Result<(), String> {
    let topic = &feed.topic;
    let (tap, history) = match (&topic.stream, topic.source) {
        (stream, Source::Rosout(_)) => crate::rosout::tap(&*shared.taps, stream.as_deref())
            .map(|(tap, history)| (tap, Some(history))),
        (Some(stream), _) => shared
            .taps
            .tap(stream, Some(topic.tap_as))
            .map(|tap| (tap, None))
            .map_err(|e| streamwire_core::log::chain(e.as_ref()).to_string()),
        (None, _) => Err("nothing in the run feeds it".to_owned()),
    }
    .map_err(|e| format!("cannot tap `/{}`: {e}", topic.name))?;
    // A number first: Linux keeps 15 bytes of a thread's name, and topics share prefixes.
    let number = shared.next_feed.fetch_add(1, Ordering::Relaxed);
    let (shared, feed) = (shared.clone(), feed.clone());
    std::thread::Builder::new()
        .name(format!("sw web{number} {}", topic.name))
        .spawn(move || {
            let _span =
                tracing::info_span!("web feed", stream = %stream_name(&feed), topic = %feed.topic.name)
                    .entered();
            run_feed(&shared, &feed, tap, history.as_ref());
        })
        .map(drop)
        .map_err(|e| format!("cannot start the feed of `/{}`: {e}", topic.name))
}

fn stream_name(feed: &Feed) -> &str {
    // `/rosout` of a run without a log-record stream reads only the log hub.
    feed.topic.stream.as_deref().unwrap_or("log hub")
}

/// The feed's thread: each message of `tap` to the subscribers due one, until the relay
/// stops or nobody has listened for [`FEED_LINGER`]; `/rosout`'s gives a client who joins
/// it the `history` it read first.
fn run_feed(
    shared: &Arc<Shared>,
    feed: &Arc<Feed>,
    tap: Box<dyn StreamTap>,
    history: Option<&crate::rosout::History>,
) {
    let mut unwatched_since: Option<Instant> = None;
    loop {
        if let Some(history) = history {
            welcome(shared, feed, history);
        }
        let envelope = tap.recv_timeout(FEED_POLL);
        if feed_ends(shared, feed, &mut unwatched_since) {
            return;
        }
        let Some(envelope) = envelope else {
            continue;
        };
        feed.messages.fetch_add(1, Ordering::Relaxed);
        // The subscribers due a message (past their throttle): none, nothing to write.
        let due = due_subscribers(feed, Instant::now());
        if !due.is_empty() {
            deliver(shared, feed, &envelope, due);
        }
    }
}

/// Gives the feed's joiners the records it read (those the hub still holds), then makes
/// them subscribers: what it reads next reaches them as it reaches the others, so each
/// record reaches them once. Between reads: the feed's thread alone reads its tap.
fn welcome(shared: &Shared, feed: &Feed, history: &crate::rosout::History) {
    let joiners = std::mem::take(&mut *lock(&feed.joiners));
    if joiners.is_empty() {
        return;
    }
    for envelope in history.envelopes() {
        deliver(shared, feed, &envelope, joiners.clone());
    }
    lock(&feed.subscribers).extend(joiners);
}

/// Whether the feed ends now (the relay stops, or its linger without subscribers is
/// over); an ending feed takes itself out of the relay's feeds, under their lock, so
/// that a client subscribing meanwhile starts a new one.
fn feed_ends(shared: &Shared, feed: &Arc<Feed>, unwatched_since: &mut Option<Instant>) -> bool {
    let mut feeds = lock(&shared.feeds);
    let unwatched = lock(&feed.subscribers).is_empty() && lock(&feed.joiners).is_empty();
    *unwatched_since = if unwatched {
        unwatched_since.or_else(|| Some(Instant::now()))
    } else {
        None
    };
    let linger_over = unwatched_since.is_some_and(|at| at.elapsed() >= FEED_LINGER);
    if !shared.stopping.load(Ordering::SeqCst) && !linger_over {
        return false;
    }
    if feeds
        .get(&feed.topic.name)
        .is_some_and(|f| Arc::ptr_eq(f, feed))
    {
        feeds.remove(&feed.topic.name);
    }
    true
}

/// The subscribers past their throttle at `now`, marked as sent to.
fn due_subscribers(feed: &Feed, now: Instant) -> Vec<(Arc<Client>, Arc<ClientTopic>)> {
    lock(&feed.subscribers)
        .iter()
        .filter(|(_, entry)| {
            let mut last = lock(&entry.last_sent);
            let throttle = entry.effective().throttle;
            let due = last.is_none_or(|at| now.duration_since(at) >= throttle);
            if due {
                *last = Some(now);
            }
            due
        })
        .cloned()
        .collect()
}

/// Queues the message of `envelope` for each of `due`, prepared once for all of them;
/// a full queue drops its oldest frame, counted for its client.
fn deliver(
    shared: &Shared,
    feed: &Feed,
    envelope: &Envelope,
    due: Vec<(Arc<Client>, Arc<ClientTopic>)>,
) {
    let formats: Vec<FrameFormat> = due.iter().map(|(_, e)| e.format()).collect();
    let Some(prepared) = prepare(shared, &feed.topic, envelope, &formats) else {
        return;
    };
    let stamp_ns = envelope.header.publish_time.as_nanos();
    let mut written: Vec<(FrameKey, Outgoing)> = Vec::new();
    for (client, entry) in due {
        let Some(frame) = frames_once(shared, feed, &prepared, &entry, stamp_ns, &mut written)
        else {
            continue;
        };
        if entry.slot.push(frame) {
            client.dropped.fetch_add(1, Ordering::Relaxed);
            shared.counters.dropped.increment();
        }
        client.wake.notify_one();
    }
}

/// The frames `entry` needs: written the first time its [`FrameKey`] is asked for this
/// message, then taken from `written`; `None` when they cannot be written (counted).
fn frames_once(
    shared: &Shared,
    feed: &Feed,
    prepared: &Prepared,
    entry: &ClientTopic,
    stamp_ns: u64,
    written: &mut Vec<(FrameKey, Outgoing)>,
) -> Option<Outgoing> {
    let effective = entry.effective();
    let format = entry.format();
    let key = (entry.spelling.clone(), format, effective.fragment_size);
    if let Some((_, frame)) = written.iter().find(|(k, _)| *k == key) {
        return Some(frame.clone());
    }
    let frame = match frames_of(
        shared,
        prepared,
        &entry.spelling,
        format,
        effective,
        stamp_ns,
    ) {
        Ok(frame) => frame,
        Err(error) => {
            shared.counters.unwritable.increment();
            tracing::debug!(%error, "message not written");
            return None;
        }
    };
    let len: usize = frame
        .iter()
        .map(|m| match m {
            Message::Text(text) => text.len(),
            Message::Binary(bytes) => bytes.len(),
            _ => 0,
        })
        .sum();
    feed.bytes.fetch_add(len as u64, Ordering::Relaxed);
    written.push((key, frame.clone()));
    Some(frame)
}

/// A message of `topic` made from what its stream carried, in the forms `formats`
/// need; `None` when the topic leaves it out or it cannot be written (counted).
fn prepare(
    shared: &Shared,
    topic: &Topic,
    envelope: &Envelope,
    formats: &[FrameFormat],
) -> Option<Prepared> {
    let converted = match topic.convert(&envelope.message) {
        Ok(Some(message)) => message,
        Ok(None) => return None,
        Err(error) => {
            shared.counters.unwritable.increment();
            tracing::debug!(%error, "message not converted");
            return None;
        }
    };
    if matches!(topic.source, Source::DecodedImage | Source::DecodedDepth) {
        shared.counters.images_decoded.increment();
    }
    // Foxglove reads a ROS 2 type's CDR, a user's type as JSON (its shape).
    let want_value = formats.iter().any(|f| match f {
        FrameFormat::Rosbridge(format) => format.wants_value(),
        FrameFormat::Foxglove(_) => topic.schema.is_none(),
    });
    let want_cdr = formats.iter().any(|f| match f {
        FrameFormat::Rosbridge(format) => *format == PublishFormat::CborRaw,
        FrameFormat::Foxglove(_) => topic.schema.is_some(),
    });
    match rosbridge::prepare(topic, &converted, want_value, want_cdr) {
        Ok(prepared) => Some(prepared),
        Err(error) => {
            shared.counters.unwritable.increment();
            tracing::debug!(%error, "message not written");
            None
        }
    }
}

/// The frames of a prepared message on `spelling` in `format`, as `effective` asks: one
/// frame, or the `fragment`s of a longer text; a Foxglove subscription's `messageData`
/// stamped `stamp_ns`.
fn frames_of(
    shared: &Shared,
    prepared: &Prepared,
    spelling: &str,
    format: FrameFormat,
    effective: Effective,
    stamp_ns: u64,
) -> Result<Outgoing, String> {
    match format {
        FrameFormat::Rosbridge(format) => {
            publish_frames(shared, prepared, spelling, format, effective.fragment_size)
        }
        FrameFormat::Foxglove(subscription) => {
            let payload = foxglove::payload(prepared).ok_or_else(|| not_prepared(spelling))?;
            let bytes = foxglove::message_data(subscription, stamp_ns, &payload);
            Ok(Arc::from([Message::Binary(bytes.into())]))
        }
    }
}

/// A rosbridge `publish` of a prepared message on `spelling` in `format`: one frame, or
/// with a `fragment_size` the `fragment`s of a longer text.
fn publish_frames(
    shared: &Shared,
    prepared: &Prepared,
    spelling: &str,
    format: PublishFormat,
    fragment_size: Option<usize>,
) -> Result<Outgoing, String> {
    let value = || {
        prepared
            .value
            .as_ref()
            .ok_or_else(|| not_prepared(spelling))
    };
    let (text, op) = match format {
        PublishFormat::CborRaw => {
            let cdr = prepared
                .cdr
                .as_ref()
                .ok_or_else(|| not_prepared(spelling))?;
            let bytes = outgoing::publish_cbor_raw(spelling, cdr).map_err(|e| e.to_string())?;
            return Ok(Arc::from([Message::Binary(bytes.into())]));
        }
        PublishFormat::Cbor => {
            let bytes = wire::publish_cbor(spelling, value()?);
            return Ok(Arc::from([Message::Binary(bytes.into())]));
        }
        PublishFormat::Json => (wire::publish_json(spelling, value()?), "fragment"),
        PublishFormat::Png => {
            let text = outgoing::publish_png(spelling, value()?).map_err(|e| e.to_string())?;
            (text, "png")
        }
    };
    let Some(size) = fragment_size else {
        return Ok(Arc::from([Message::Text(text.into())]));
    };
    let id = format!(
        "publish {}",
        shared.next_fragmented.fetch_add(1, Ordering::Relaxed)
    );
    Ok(outgoing::fragments(text, size, op, &id)
        .into_iter()
        .map(|part| Message::Text(part.into()))
        .collect())
}

fn not_prepared(spelling: &str) -> String {
    format!("`{spelling}`: the message was not prepared in this form")
}
