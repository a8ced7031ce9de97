//! The loopback transport: partitions of one OS process joined as a network would join
//! them. Every message crosses as a serialized frame; a frame put is handed to each
//! subscriber of its key as the same `FrameBytes` (no copy between subscribers; a
//! version 2 frame's blobs are the sender's own buffers).

use parking_lot::{Mutex, MutexGuard, RwLock};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use streamwire_core::Qos;

use crate::{
    FrameBytes, FrameError, FrameSink, MatchingListener, Publisher, PublisherCounters,
    Subscription, SubscriptionCounters, Transport, TransportError,
};

/// The in-process transport. Cheap to clone; clones share the same keys.
///
/// Delivery is synchronous: `put` calls every subscriber's sink on the putting thread
/// (the runtime's sinks push into bounded, counted queues), so the loopback itself never
/// queues, never loses and never reorders. Loss on the wire is what a real network adds;
/// tests make it with [`Loopback::put_raw`].
#[derive(Clone, Default)]
pub struct Loopback {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    keys: Mutex<HashMap<String, KeyState>>,
    next_id: AtomicU64,
    closed: AtomicBool,
}

#[derive(Default)]
struct KeyState {
    subscribers: Vec<Arc<SubscriberState>>,
    publishers: Vec<std::sync::Weak<PublisherState>>,
}

struct SubscriberState {
    id: u64,
    sink: FrameSink,
    frames: AtomicU64,
    wire_bytes: AtomicU64,
}

struct PublisherState {
    key: String,
    transport: Arc<Inner>,
    /// Its frames' link sequence numbers.
    next_seq: crate::batch::LinkNumbers,
    frames: AtomicU64,
    wire_bytes: AtomicU64,
    unmatched: AtomicU64,
    matched: AtomicBool,
    listeners: RwLock<Vec<MatchingListener>>,
}

impl Loopback {
    /// A new loopback with no keys.
    pub fn new() -> Loopback {
        Loopback::default()
    }

    /// Sends `bytes` on `key` as they are, to every subscriber, bypassing any publisher:
    /// what a foreign or broken sender puts on the wire. For tests of the receiving side
    /// (garbage, truncated frames, gaps in the link sequence).
    pub fn put_raw(&self, key: &str, bytes: impl Into<FrameBytes>) -> Result<(), TransportError> {
        let bytes = bytes.into();
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(TransportError::Closed);
        }
        for subscriber in self.inner.subscribers(key) {
            subscriber.deliver(bytes.clone());
        }
        Ok(())
    }

    /// Subscribers currently declared on `key`.
    pub fn subscriber_count(&self, key: &str) -> usize {
        self.inner
            .lock()
            .get(key)
            .map_or(0, |state| state.subscribers.len())
    }
}

impl std::fmt::Debug for Loopback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<String> = self.inner.lock().keys().cloned().collect();
        f.debug_struct("Loopback").field("keys", &keys).finish()
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, KeyState>> {
        self.keys.lock()
    }

    fn subscribers(&self, key: &str) -> Vec<Arc<SubscriberState>> {
        self.lock()
            .get(key)
            .map(|state| state.subscribers.clone())
            // infallible: a key nobody subscribed to has no subscribers
            .unwrap_or_default()
    }

    /// Recomputes the matching status of every publisher of `key` and tells listeners of
    /// a change; called with the map unlocked so listeners may use the transport.
    fn rematch(&self, key: &str) {
        let (matched, publishers): (bool, Vec<Arc<PublisherState>>) = {
            let mut keys = self.lock();
            let Some(state) = keys.get_mut(key) else {
                return;
            };
            state.publishers.retain(|p| p.strong_count() > 0);
            (
                !state.subscribers.is_empty(),
                state
                    .publishers
                    .iter()
                    .filter_map(std::sync::Weak::upgrade)
                    .collect(),
            )
        };
        for publisher in publishers {
            if publisher.matched.swap(matched, Ordering::SeqCst) != matched {
                let listeners = publisher.listeners.read().clone();
                for listener in listeners {
                    listener(matched);
                }
            }
        }
    }
}

impl SubscriberState {
    fn deliver(&self, bytes: FrameBytes) {
        // A batch is counted as the frames it holds, as its publisher did.
        let frames = crate::batch::frame_count(&bytes).unwrap_or(1) as u64;
        self.frames.fetch_add(frames, Ordering::Relaxed);
        self.wire_bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        (self.sink)(bytes);
    }
}

fn check_key(key: &str) -> Result<(), TransportError> {
    let bad = |reason: &str| TransportError::BadKey {
        key: key.to_owned(),
        reason: reason.to_owned(),
    };
    if key.is_empty() {
        return Err(bad("it is empty"));
    }
    if key.starts_with('/') || key.ends_with('/') || key.contains("//") {
        return Err(bad("keys have no leading, trailing or doubled `/`"));
    }
    if key.contains(['*', '$', '?', '#']) {
        return Err(bad(
            "keys name one stream: no wildcards (`*`, `$`, `?`, `#`)",
        ));
    }
    Ok(())
}

impl Transport for Loopback {
    fn name(&self) -> &'static str {
        "loopback"
    }

    fn publisher(&self, key: &str, _qos: Qos) -> Result<Arc<dyn Publisher>, TransportError> {
        check_key(key)?;
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(TransportError::Closed);
        }
        let publisher = Arc::new(PublisherState {
            key: key.to_owned(),
            transport: self.inner.clone(),
            next_seq: Default::default(),
            frames: AtomicU64::new(0),
            wire_bytes: AtomicU64::new(0),
            unmatched: AtomicU64::new(0),
            matched: AtomicBool::new(false),
            listeners: RwLock::new(Vec::new()),
        });
        {
            let mut keys = self.inner.lock();
            let state = keys.entry(key.to_owned()).or_default();
            publisher
                .matched
                .store(!state.subscribers.is_empty(), Ordering::SeqCst);
            state.publishers.push(Arc::downgrade(&publisher));
        }
        Ok(publisher)
    }

    fn subscribe(
        &self,
        key: &str,
        _qos: Qos,
        sink: FrameSink,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        check_key(key)?;
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(TransportError::Closed);
        }
        let state = Arc::new(SubscriberState {
            id: self.inner.next_id.fetch_add(1, Ordering::Relaxed),
            sink,
            frames: AtomicU64::new(0),
            wire_bytes: AtomicU64::new(0),
        });
        self.inner
            .lock()
            .entry(key.to_owned())
            .or_default()
            .subscribers
            .push(state.clone());
        self.inner.rematch(key);
        Ok(Box::new(LoopbackSubscription {
            key: key.to_owned(),
            transport: self.inner.clone(),
            state,
        }))
    }

    fn announce(&self, _key: &str, _partition: &str) {
        // A loopback subscription is in place when `subscribe` returns: nothing to say.
    }

    fn announce_publisher(&self, _key: &str, _partition: &str) {
        // No tool joins a loopback: nothing to say.
    }

    fn loans(&self) -> Option<Arc<dyn streamwire_core::buffer::LoanSource>> {
        // Frames stay in this process: nothing to lend.
        None
    }

    fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        let keys: Vec<String> = {
            let mut map = self.inner.lock();
            for state in map.values_mut() {
                state.subscribers.clear();
            }
            map.keys().cloned().collect()
        };
        for key in keys {
            self.inner.rematch(&key);
        }
    }
}

impl Publisher for PublisherState {
    fn key(&self) -> &str {
        &self.key
    }

    fn put(
        &self,
        build: &mut dyn FnMut(u64) -> Result<FrameBytes, FrameError>,
    ) -> Result<(), TransportError> {
        if self.transport.closed.load(Ordering::SeqCst) {
            return Err(TransportError::Closed);
        }
        let subscribers = self.transport.subscribers(&self.key);
        if subscribers.is_empty() {
            self.unmatched.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let seq = self.next_seq.next();
        let frame = build(seq)?;
        self.frames.fetch_add(1, Ordering::Relaxed);
        self.wire_bytes
            .fetch_add(frame.len() as u64, Ordering::Relaxed);
        for subscriber in subscribers {
            subscriber.deliver(frame.clone());
        }
        Ok(())
    }

    fn is_matched(&self) -> bool {
        self.matched.load(Ordering::SeqCst)
    }

    /// A batch is delivered as one frame is (the receiving side splits it), as zenoh
    /// carries it, so that batching is tested without a network.
    fn put_batch(
        &self,
        count: u64,
        build: &mut dyn FnMut(u64) -> Result<(FrameBytes, u64), FrameError>,
    ) -> Result<bool, TransportError> {
        if self.transport.closed.load(Ordering::SeqCst) {
            return Err(TransportError::Closed);
        }
        let subscribers = self.transport.subscribers(&self.key);
        if subscribers.is_empty() {
            self.unmatched.fetch_add(count, Ordering::Relaxed);
            return Ok(true);
        }
        let (batch, frames) = self.next_seq.batch(build)?;
        if frames == 0 {
            return Ok(true);
        }
        self.frames.fetch_add(frames, Ordering::Relaxed);
        self.wire_bytes
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        for subscriber in subscribers {
            subscriber.deliver(batch.clone());
        }
        Ok(true)
    }

    fn on_matching(&self, listener: MatchingListener) {
        self.listeners.write().push(listener);
    }

    fn counters(&self) -> PublisherCounters {
        PublisherCounters {
            frames: self.frames.load(Ordering::Relaxed),
            wire_bytes: self.wire_bytes.load(Ordering::Relaxed),
            unmatched: self.unmatched.load(Ordering::Relaxed),
            shared_memory: 0,
        }
    }
}

struct LoopbackSubscription {
    key: String,
    transport: Arc<Inner>,
    state: Arc<SubscriberState>,
}

impl Subscription for LoopbackSubscription {
    fn key(&self) -> &str {
        &self.key
    }

    fn counters(&self) -> SubscriptionCounters {
        SubscriptionCounters {
            frames: self.state.frames.load(Ordering::Relaxed),
            wire_bytes: self.state.wire_bytes.load(Ordering::Relaxed),
            // In one process: nothing is shared memory.
            shared_memory: 0,
        }
    }
}

impl Drop for LoopbackSubscription {
    fn drop(&mut self) {
        let id = self.state.id;
        if let Some(state) = self.transport.lock().get_mut(&self.key) {
            state.subscribers.retain(|s| s.id != id);
        }
        self.transport.rematch(&self.key);
    }
}
