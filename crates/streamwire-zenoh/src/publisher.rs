//! A stream's zenoh publisher: congestion control and priority from the stream's QoS, a
//! matching listener (a producer encodes only while someone subscribes), the frames put
//! one by one or as a batch, and which partitions it reaches (their liveliness tokens).
//! Apart from the session (`lib.rs`) and from the history a `transient_local` one keeps
//! ([`crate::history`]).

use parking_lot::RwLock;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use streamwire_core::{History, Qos, Reliability};
use streamwire_transport::batch::LinkNumbers;
use streamwire_transport::{
    FrameBytes, FrameError, MatchingListener, Publisher, PublisherCounters, TransportError,
};
use zenoh::Wait;
use zenoh::qos::{CongestionControl, Priority};

use crate::history::{RecentFrames, declare_history, history_depth};
use crate::{ZenohTransport, engine, to_zbytes_counted};

struct PublisherShared {
    matched: AtomicBool,
    listeners: RwLock<Vec<MatchingListener>>,
}

impl PublisherShared {
    fn set_matched(&self, matched: bool) {
        if self.matched.swap(matched, Ordering::SeqCst) != matched {
            let listeners = self.listeners.read().clone();
            for listener in listeners {
                listener(matched);
            }
        }
    }
}

pub(crate) struct ZenohPublisher {
    key: String,
    publisher: zenoh::pubsub::Publisher<'static>,
    /// A transient-local stream's last frames, and the queryable that hands them out.
    history: Option<Arc<RecentFrames>>,
    _queryable: Option<zenoh::query::Queryable<()>>,
    shared: Arc<PublisherShared>,
    /// Its frames' link sequence numbers.
    next_seq: LinkNumbers,
    frames: AtomicU64,
    wire_bytes: AtomicU64,
    unmatched: AtomicU64,
    /// Frames put with a large part already in shared memory (sent by reference).
    shared_memory: AtomicU64,
    transport: ZenohTransport,
}

impl ZenohPublisher {
    /// Declares the publisher of `key` in `transport`, its matching listener and, for a
    /// `transient_local` stream, its history.
    pub(crate) fn declare(
        transport: &ZenohTransport,
        key: &str,
        qos: Qos,
    ) -> Result<ZenohPublisher, TransportError> {
        transport.check_open()?;
        let expr = transport.key_expr(key);
        let state = matches!(qos.reliability, Reliability::Reliable);
        let publisher = transport
            .inner
            .session
            .declare_publisher(expr)
            .congestion_control(match qos.history {
                History::KeepAll => CongestionControl::Block,
                History::KeepLast(_) => CongestionControl::Drop,
            })
            .priority(if state {
                Priority::DataHigh
            } else {
                Priority::Data
            })
            .express(express(qos))
            .wait()
            .map_err(engine(format!("declare the publisher of `{key}`")))?;
        let shared = Arc::new(PublisherShared {
            matched: AtomicBool::new(false),
            listeners: RwLock::new(Vec::new()),
        });
        {
            // In the background: it lives as long as the publisher and goes with it (a
            // listener handle dropped after the session closed made zenoh log an error).
            let shared = shared.clone();
            publisher
                .matching_listener()
                .callback(move |status| shared.set_matched(status.matching()))
                .background()
                .wait()
                .map_err(engine(format!("watch the subscribers of `{key}`")))?;
        }
        // The listener reports changes; the status now is asked once.
        let now = publisher
            .matching_status()
            .wait()
            .map_err(engine(format!("ask who subscribes to `{key}`")))?;
        shared.set_matched(now.matching());
        let (history, queryable) = match history_depth(qos) {
            Some(depth) => {
                let (cache, queryable) = declare_history(transport, key, depth)?;
                (Some(cache), Some(queryable))
            }
            None => (None, None),
        };
        Ok(ZenohPublisher {
            key: key.to_owned(),
            publisher,
            history,
            _queryable: queryable,
            shared,
            next_seq: Default::default(),
            frames: AtomicU64::new(0),
            wire_bytes: AtomicU64::new(0),
            unmatched: AtomicU64::new(0),
            shared_memory: AtomicU64::new(0),
            transport: transport.clone(),
        })
    }
}

/// Whether a stream's frames skip zenoh's batching: a reliable keep-last stream's (the
/// latest state, put alone by its producer, must not wait behind other messages), never a
/// keep-all stream's. An express put is a link write of its own, and the receiver's
/// wake-up; a keep-all burst's puts (several of 4 KiB, each with its own part) are what
/// zenoh's batching is for, and a lone put that finds zenoh's sender idle leaves at once
/// either way (zenoh holds a batch back only while puts keep adding to it, at most 1 ms).
fn express(qos: Qos) -> bool {
    matches!(qos.reliability, Reliability::Reliable) && matches!(qos.history, History::KeepLast(_))
}

impl Publisher for ZenohPublisher {
    fn key(&self) -> &str {
        &self.key
    }

    fn put(
        &self,
        build: &mut dyn FnMut(u64) -> Result<FrameBytes, FrameError>,
    ) -> Result<(), TransportError> {
        self.transport.check_open()?;
        let matched = self.shared.matched.load(Ordering::SeqCst);
        if !matched && self.history.is_none() {
            self.unmatched.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let seq = self.next_seq.next();
        let frame = build(seq)?;
        if let Some(history) = &self.history {
            // Remembered for late joiners even when nobody listens now (then counted as
            // unmatched: built, not sent).
            history.remember(seq, frame.clone(), !matched);
            if !matched {
                self.unmatched.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
        }
        let len = frame.len() as u64;
        let (payload, by_reference) = to_zbytes_counted(&frame);
        self.publisher
            .put(payload)
            .wait()
            .map_err(engine("send a frame"))?;
        self.frames.fetch_add(1, Ordering::Relaxed);
        if by_reference {
            self.shared_memory.fetch_add(1, Ordering::Relaxed);
        }
        self.wire_bytes.fetch_add(len, Ordering::Relaxed);
        Ok(())
    }

    fn is_matched(&self) -> bool {
        self.shared.matched.load(Ordering::SeqCst)
    }

    fn remembers(&self) -> bool {
        self.history.is_some()
    }

    fn put_batch(
        &self,
        count: u64,
        build: &mut dyn FnMut(u64) -> Result<(FrameBytes, u64), FrameError>,
    ) -> Result<bool, TransportError> {
        // A transient-local history keeps frames one by one: such a stream is not batched.
        if self.history.is_some() {
            return Ok(false);
        }
        self.transport.check_open()?;
        if !self.shared.matched.load(Ordering::SeqCst) {
            self.unmatched.fetch_add(count, Ordering::Relaxed);
            return Ok(true);
        }
        let (batch, frames) = self.next_seq.batch(build)?;
        if frames == 0 {
            return Ok(true);
        }
        let len = batch.len() as u64;
        let (payload, by_reference) = to_zbytes_counted(&batch);
        self.publisher
            .put(payload)
            .wait()
            .map_err(engine("send a batch of frames"))?;
        self.frames.fetch_add(frames, Ordering::Relaxed);
        if by_reference {
            self.shared_memory.fetch_add(frames, Ordering::Relaxed);
        }
        self.wire_bytes.fetch_add(len, Ordering::Relaxed);
        Ok(true)
    }

    fn reaches(&self, partitions: &[String]) -> bool {
        if !self.is_matched() {
            return false;
        }
        // Matching says "someone"; the partitions' liveliness tokens say who.
        let wanted: Vec<String> = partitions
            .iter()
            .map(|p| self.transport.announcement_key(&self.key, p))
            .collect();
        let Ok(replies) = self
            .transport
            .inner
            .session
            .liveliness()
            .get(format!(
                "{}/@sub/{}/@/**",
                self.transport.prefix,
                self.key.trim_start_matches('/')
            ))
            .timeout(Duration::from_secs(1))
            .wait()
        else {
            return false;
        };
        let mut seen = Vec::new();
        while let Ok(reply) = replies.recv() {
            if let Ok(sample) = reply.result() {
                seen.push(sample.key_expr().as_str().to_owned());
            }
        }
        wanted.iter().all(|w| seen.contains(w))
    }

    fn on_matching(&self, listener: MatchingListener) {
        self.shared.listeners.write().push(listener);
    }

    fn counters(&self) -> PublisherCounters {
        PublisherCounters {
            frames: self.frames.load(Ordering::Relaxed),
            wire_bytes: self.wire_bytes.load(Ordering::Relaxed),
            unmatched: self.unmatched.load(Ordering::Relaxed),
            shared_memory: self.shared_memory.load(Ordering::Relaxed),
        }
    }
}
