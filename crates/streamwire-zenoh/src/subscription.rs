//! A stream's zenoh subscription: a callback that turns each sample into a frame without
//! copying (its parts are zenoh's slices), counts it (shared memory included) and hands
//! it to the runtime's sink, behind a `transient_local` subscription's history fetch.
//! Apart from the publisher's side ([`crate::publisher`]).

use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use streamwire_core::{Durability, Qos};
use streamwire_transport::{FrameSink, Subscription, SubscriptionCounters, TransportError};
use zenoh::Wait;

use crate::history::{Gate, HistoryFetch};
use crate::{ZenohTransport, engine, from_zbytes};

#[derive(Default)]
pub(crate) struct SubscriberCounters {
    pub(crate) frames: AtomicU64,
    pub(crate) wire_bytes: AtomicU64,
    pub(crate) shared_memory: AtomicU64,
}

pub(crate) struct ZenohSubscription {
    pub(crate) key: String,
    _subscriber: zenoh::pubsub::Subscriber<()>,
    pub(crate) counters: Arc<SubscriberCounters>,
    /// False once dropped: a history fetch still under way delivers nothing.
    pub(crate) alive: Arc<AtomicBool>,
}

impl ZenohSubscription {
    /// Subscribes `sink` to `key` in `transport`; a `transient_local` subscription first
    /// fetches the stream's history on a thread of its own.
    pub(crate) fn declare(
        transport: &ZenohTransport,
        key: &str,
        qos: Qos,
        sink: FrameSink,
    ) -> Result<ZenohSubscription, TransportError> {
        transport.check_open()?;
        let counters = Arc::new(SubscriberCounters::default());
        let transient = qos.durability == Durability::TransientLocal;
        // A joining transient-local subscriber holds its live frames back until the
        // remembered ones are in; everyone else delivers at once.
        // (Only theirs: a volatile subscription's callback takes no lock per frame.)
        let gate = transient.then(|| Arc::new(Mutex::new(Gate::Fetching(Vec::new()))));
        let alive = Arc::new(AtomicBool::new(true));
        let subscriber = {
            let counters = counters.clone();
            let gate = gate.clone();
            let sink = sink.clone();
            let shm = transport.inner.shm.clone();
            let shared_memory = transport.inner.shared_memory;
            transport
                .inner
                .session
                .declare_subscriber(transport.key_expr(key))
                // A callback, not zenoh's channel handlers: its ring channel drops the
                // oldest without counting and its FIFO blocks zenoh's own thread when
                // full. The sink pushes into the runtime's bounded, counted queues.
                .callback(move |sample| {
                    let payload = sample.payload();
                    // No copy: the frame's parts are zenoh's slices (reading a blob spread
                    // over several copies it once, counted by the runtime's ingress).
                    let bytes = from_zbytes(payload);
                    if shm.count(&bytes, shared_memory) {
                        counters.shared_memory.fetch_add(1, Ordering::Relaxed);
                    }
                    // A batch is counted as the frames it holds, as its publisher did.
                    let frames = streamwire_transport::batch::frame_count(&bytes).unwrap_or(1);
                    counters.frames.fetch_add(frames as u64, Ordering::Relaxed);
                    counters
                        .wire_bytes
                        .fetch_add(payload.len() as u64, Ordering::Relaxed);
                    if let Some(gate) = &gate {
                        let mut gate = gate.lock();
                        if let Gate::Fetching(held) = &mut *gate {
                            held.push(bytes);
                            return;
                        }
                    }
                    sink(bytes);
                })
                .wait()
                .map_err(engine(format!("subscribe to `{key}`")))?
        };
        if let Some(gate) = gate {
            let fetch = HistoryFetch {
                transport: transport.clone(),
                selector: format!("{}/**", transport.history_key(key)),
                gate,
                sink,
                counters: counters.clone(),
                alive: alive.clone(),
            };
            std::thread::Builder::new()
                .name("sw-zenoh-history".to_owned())
                .spawn(move || fetch.run())
                .map_err(|error| TransportError::Engine {
                    what: "start the history thread".to_owned(),
                    source: Box::new(error),
                })?;
        }
        Ok(ZenohSubscription {
            key: key.to_owned(),
            _subscriber: subscriber,
            counters,
            alive,
        })
    }
}

impl Drop for ZenohSubscription {
    fn drop(&mut self) {
        self.alive.store(false, Ordering::SeqCst);
    }
}

impl Subscription for ZenohSubscription {
    fn key(&self) -> &str {
        &self.key
    }

    fn counters(&self) -> SubscriptionCounters {
        SubscriptionCounters {
            frames: self.counters.frames.load(Ordering::Relaxed),
            wire_bytes: self.counters.wire_bytes.load(Ordering::Relaxed),
            shared_memory: self.counters.shared_memory.load(Ordering::Relaxed),
        }
    }
}
