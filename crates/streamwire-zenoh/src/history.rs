//! The history of `transient_local` streams: a publisher keeps its last frames
//! ([`RecentFrames`]) and answers a queryable with them; a joining subscriber asks once
//! ([`HistoryFetch`]), holding its live frames back meanwhile ([`Gate`]), and delivers
//! the remembered frames first, each once. Apart because it is the one part of the
//! transport that speaks zenoh's query API.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use streamwire_core::{Durability, History, Qos};
use streamwire_transport::{FrameBytes, FrameSink, TransportError, WireFrame};
use zenoh::Wait;
use zenoh::query::{ConsolidationMode, QueryTarget};

use crate::subscription::SubscriberCounters;
use crate::{ZenohTransport, engine, from_zbytes, to_zbytes};

/// Frames a `transient_local` keep-all publisher keeps for late joiners (a keep-last one
/// keeps its depth): a bound, because "all" of a camera would be unbounded memory.
pub const TRANSIENT_KEEP_ALL_FRAMES: usize = 16;

/// How long a joining `transient_local` subscriber waits for the remembered frames; its
/// live frames wait behind them meanwhile.
const HISTORY_TIMEOUT: Duration = Duration::from_secs(2);

/// The number of frames a publisher of `qos` remembers, if any.
pub(crate) fn history_depth(qos: Qos) -> Option<usize> {
    (qos.durability == Durability::TransientLocal).then(|| match qos.history {
        History::KeepLast(n) => usize::try_from(n).unwrap_or(usize::MAX).max(1),
        History::KeepAll => TRANSIENT_KEEP_ALL_FRAMES,
    })
}

/// The link sequence of a frame, if it is one.
fn link_seq(frame: &FrameBytes) -> Option<u64> {
    WireFrame::parse(frame.clone())
        .ok()
        .map(|f| f.head.link_seq)
}

/// The history of a `transient_local` stream's publisher: its last `depth` frames, and
/// the queryable on `<history key>/**` that answers a joining subscriber with them.
pub(crate) fn declare_history(
    transport: &ZenohTransport,
    key: &str,
    depth: usize,
) -> Result<(Arc<RecentFrames>, zenoh::query::Queryable<()>), TransportError> {
    let cache = Arc::new(RecentFrames {
        depth,
        frames: Mutex::new(VecDeque::new()),
    });
    let base = transport.history_key(key);
    let answers = cache.clone();
    let reply_base = base.clone();
    let queryable = transport
        .inner
        .session
        .declare_queryable(format!("{base}/**"))
        .callback(move |query| {
            for (seq, frame, unsent) in answers.snapshot() {
                let reply = query.reply(format!("{reply_base}/{seq}"), to_zbytes(&frame));
                // Tells the joiner this frame is on the not-sent count here.
                let reply = if unsent {
                    reply.attachment(UNSENT_ATTACHMENT)
                } else {
                    reply
                };
                if let Err(error) = reply.wait() {
                    tracing::debug!("history reply on {reply_base}: {error}");
                }
            }
        })
        .wait()
        .map_err(engine(format!("declare the history of `{key}`")))?;
    Ok((cache, queryable))
}

/// A transient-local publisher's last frames, by link sequence.
pub(crate) struct RecentFrames {
    depth: usize,
    frames: Mutex<VecDeque<(u64, FrameBytes, bool)>>,
}

impl RecentFrames {
    /// Remembers frame `seq`; `unsent` when nobody listened as it was published (the
    /// publisher counted it as not sent).
    pub(crate) fn remember(&self, seq: u64, frame: FrameBytes, unsent: bool) {
        let mut frames = self.frames.lock();
        if frames.len() == self.depth {
            frames.pop_front();
        }
        frames.push_back((seq, frame, unsent));
    }

    fn snapshot(&self) -> Vec<(u64, FrameBytes, bool)> {
        let frames = self.frames.lock();
        frames.iter().cloned().collect()
    }
}

/// The attachment of a history reply whose frame was published while nobody listened.
const UNSENT_ATTACHMENT: &[u8] = b"unsent";

/// A subscription's live frames: held while its history is fetched, then passed on.
pub(crate) enum Gate {
    Fetching(Vec<FrameBytes>),
    Open,
}

/// A joining transient-local subscriber's one query for the remembered frames.
pub(crate) struct HistoryFetch {
    pub(crate) transport: ZenohTransport,
    pub(crate) selector: String,
    pub(crate) gate: Arc<Mutex<Gate>>,
    pub(crate) sink: FrameSink,
    pub(crate) counters: Arc<SubscriberCounters>,
    pub(crate) alive: Arc<AtomicBool>,
}

impl HistoryFetch {
    pub(crate) fn run(self) {
        let mut remembered: Vec<(Option<u64>, FrameBytes)> = Vec::new();
        let replies = self
            .transport
            .inner
            .session
            .get(&self.selector)
            .target(QueryTarget::All)
            .consolidation(ConsolidationMode::None)
            .timeout(HISTORY_TIMEOUT)
            .wait();
        match replies {
            Ok(replies) => {
                while let Ok(reply) = replies.recv() {
                    if let Ok(sample) = reply.result() {
                        let mut frame = from_zbytes(sample.payload());
                        if sample
                            .attachment()
                            .is_some_and(|a| a.to_bytes().as_ref() == UNSENT_ATTACHMENT)
                        {
                            frame = WireFrame::marked_unsent(&frame);
                        }
                        remembered.push((link_seq(&frame), frame));
                    }
                }
            }
            Err(error) => tracing::warn!("asking {} for its history: {error}", self.selector),
        }
        remembered.sort_by_key(|(seq, _)| *seq);
        let mut gate = self.gate.lock();
        let held = match std::mem::replace(&mut *gate, Gate::Open) {
            Gate::Fetching(held) => held,
            Gate::Open => Vec::new(),
        };
        // No sink is called once the subscription is gone or the transport closed.
        if !self.alive.load(Ordering::SeqCst) || self.transport.inner.closed.load(Ordering::SeqCst)
        {
            return;
        }
        // What arrived live since the subscription began is newer than, or the same as,
        // what was remembered: the remembered frames go first, each once.
        let first_live = held.iter().find_map(link_seq);
        for (seq, frame) in remembered {
            if let (Some(seq), Some(live)) = (seq, first_live)
                && seq >= live
            {
                continue;
            }
            self.counters.frames.fetch_add(1, Ordering::Relaxed);
            self.counters
                .wire_bytes
                .fetch_add(frame.len() as u64, Ordering::Relaxed);
            (self.sink)(frame);
        }
        for frame in held {
            (self.sink)(frame);
        }
    }
}
