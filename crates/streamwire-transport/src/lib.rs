//! The transport seam of streamwire: what carries a stream from one process to another.
//!
//! The runtime runs each planned process as a *partition*; links between partitions go
//! through a [`Transport`] instead of a shared in-memory fan-out. Three pieces live here:
//!
//! - [`Transport`], [`Publisher`] and [`Subscription`]: the trait a transport implements,
//!   shaped after zenoh (the engine of distributed runs): one publisher per stream key,
//!   subscribers per receiving process, matching events (a publisher learns when its first
//!   subscriber appears and its last one goes, so an encoder in the producer's process
//!   encodes only while someone far away wants the bytes), frames as [`FrameBytes`] (one
//!   buffer, or a version 2 frame's parts) in and out,
//!   per-key counters, orderly close.
//! - [`frame`]: the versioned wire frame every message travels in (RFC.md, "The wire
//!   frame"), and the checks that turn a hostile frame into a counted rejection before
//!   anything of its declared size is allocated.
//! - [`Loopback`]: the in-process transport, serializing every message exactly as a network
//!   would, with matching. It proves the seam before zenoh carries real processes.
//!
//! A module never sees any of this: it publishes and receives on its ports, wherever its
//! peers run.
//!
//! ```
//! use std::sync::Arc;
//! use parking_lot::Mutex;
//! use bytes::Bytes;
//! use streamwire_core::Qos;
//! use streamwire_transport::{FrameBytes, Loopback, Transport};
//!
//! let transport = Loopback::new();
//! let publisher = transport.publisher("chatter", Qos::DEFAULT)?;
//! assert!(!publisher.is_matched());
//! let got = Arc::new(Mutex::new(Vec::new()));
//! let sink = got.clone();
//! let subscription = transport.subscribe(
//!     "chatter",
//!     Qos::DEFAULT,
//!     Arc::new(move |frame: FrameBytes| sink.lock().push(frame.to_bytes())),
//! )?;
//! assert!(publisher.is_matched());
//! publisher.put(&mut |link_seq| Ok(Bytes::from(format!("hello {link_seq}")).into()))?;
//! assert_eq!(got.lock()[0], Bytes::from("hello 0"));
//! drop(subscription);
//! assert!(!publisher.is_matched());
//! # Ok::<(), streamwire_transport::TransportError>(())
//! ```

use std::sync::Arc;

use streamwire_core::Qos;

pub mod batch;
pub mod frame;
mod loopback;
mod parts;
pub mod payload;
mod sequence;

pub use frame::{
    BlobEntry, FORMAT_VERSION, FORMAT_VERSIONS, FrameError, FrameHead, MAGIC, Rejection, WireFrame,
};
pub use loopback::Loopback;
pub use parts::FrameBytes;
pub use sequence::{
    PLAUSIBLE_GAP, RATE_MARGIN, REORDER_WINDOW, ResetCause, SequenceTracker, Step, UNKNOWN_RATE_HZ,
};

/// Why a transport refused an operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The transport was closed: nothing more is sent or received.
    #[error("the transport is closed")]
    Closed,
    /// A key expression the transport cannot use.
    #[error("`{key}` is not a valid stream key: {reason}")]
    BadKey {
        /// The key asked for.
        key: String,
        /// Why not.
        reason: String,
    },
    /// Building the frame failed (the message could not be serialized).
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The engine beneath failed (a network error, a refused declaration).
    #[error("transport: cannot {what}")]
    Engine {
        /// What the transport was doing ("declare the publisher of `<key>`").
        what: String,
        /// The engine's own error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Called once per received frame, on the transport's thread: the frame's bytes, shared
/// with every other subscriber of the key (no copy). The runtime's receiver decodes it and
/// pushes the message into its counted input queues, so it never blocks for long.
pub type FrameSink = Arc<dyn Fn(FrameBytes) + Send + Sync>;

/// Called with `true` when a publisher gets its first subscriber, `false` when its last one
/// goes.
pub type MatchingListener = Arc<dyn Fn(bool) + Send + Sync>;

/// A transport: carries frames on keys (one key per stream) between partitions,
/// processes or hosts.
///
/// The runtime declares one [`Publisher`] per stream produced in a partition and one
/// [`Subscription`] per stream a partition receives. QoS is given at declaration so that an
/// engine can map it (reliability, congestion control, priority).
pub trait Transport: Send + Sync + 'static {
    /// A short name for reports: `loopback`, `zenoh`.
    fn name(&self) -> &'static str;

    /// Declares a publisher on `key`.
    fn publisher(&self, key: &str, qos: Qos) -> Result<Arc<dyn Publisher>, TransportError>;

    /// Subscribes `sink` to `key` until the returned subscription is dropped (or closed).
    fn subscribe(
        &self,
        key: &str,
        qos: Qos,
        sink: FrameSink,
    ) -> Result<Box<dyn Subscription>, TransportError>;

    /// Orderly close: undeclares every publisher and subscription; later puts fail with
    /// [`TransportError::Closed`] and no sink is called after this returns.
    fn close(&self);

    // The three capabilities below have no default body on purpose: a transport that
    // wraps another (a worker's `KeepOpen`) must say what it does with each, so one it
    // forgets does not compile. A default `loans()` of `None` once made every worker of a
    // distributed run copy frames it could have lent (issue 51).

    /// Says that `partition` receives `key`; called after [`subscribe`](Transport::subscribe).
    /// A transport whose subscriptions reach publishers asynchronously uses it so that a
    /// publisher can tell which partitions it reaches ([`Publisher::reaches`]); one whose
    /// subscriptions are in place when `subscribe` returns does nothing.
    fn announce(&self, key: &str, partition: &str);

    /// Says that `partition` publishes `key`; called after [`publisher`](Transport::publisher).
    /// A transport that tools join uses it so that they can list every stream on it and
    /// who produces it, received or not; one that no tool joins does nothing.
    fn announce_publisher(&self, key: &str, partition: &str);

    /// Buffers for large messages that this transport sends without copying them (zenoh's
    /// shared memory), if it has them: an output whose stream it sends lends them to its
    /// producer ([`streamwire_core::buffer`]). `None` when it has none.
    fn loans(&self) -> Option<Arc<dyn streamwire_core::buffer::LoanSource>>;
}

/// The sending end of one key. Numbers its frames (the *link sequence*, separate from the
/// runtime's per-output `Header.seq`, so a skipped encode or a sender-side drop is never
/// mistaken for loss on the wire).
pub trait Publisher: Send + Sync {
    /// The key it publishes on.
    fn key(&self) -> &str;

    /// Sends one frame. `build` gets the link sequence number of this frame and returns
    /// its bytes (see [`WireFrame::encode`]); the publisher sends them as they are. Frames
    /// put while nobody is subscribed are counted (`unmatched`) and not built.
    fn put(
        &self,
        build: &mut dyn FnMut(u64) -> Result<FrameBytes, FrameError>,
    ) -> Result<(), TransportError>;

    /// True while at least one subscriber is declared on the key.
    fn is_matched(&self) -> bool;

    /// Sends several message frames as one transport message (a [`batch`]), if this
    /// publisher batches: `build` gets the link sequence of the first frame and returns
    /// the batch and how many frames it holds, numbered on from the first. Counted as
    /// [`put`](Publisher::put) counts: each frame sent, or each unmatched (`count`
    /// frames, nothing built, while nobody subscribes). Returns false, having done
    /// nothing, when it does not batch: the caller puts the frames one by one. The
    /// default: false.
    fn put_batch(
        &self,
        count: u64,
        build: &mut dyn FnMut(u64) -> Result<(FrameBytes, u64), FrameError>,
    ) -> Result<bool, TransportError> {
        let _ = (count, build);
        Ok(false)
    }

    /// True when a put while nobody subscribes still does something: the frame is kept
    /// for late joiners (a transient-local history). A runtime then hands it every
    /// message, matched or not; otherwise it does not build what nobody would receive.
    /// The default: false.
    fn remembers(&self) -> bool {
        false
    }

    /// True when every partition of `partitions` subscribes to the key, as far as this
    /// publisher can tell (a start barrier waits for it). The default is
    /// [`is_matched`](Publisher::is_matched): enough for a transport whose subscriptions are
    /// in place when `subscribe` returns, as the loopback's are.
    fn reaches(&self, partitions: &[String]) -> bool {
        let _ = partitions;
        self.is_matched()
    }

    /// Calls `listener` on every change of [`is_matched`](Publisher::is_matched).
    fn on_matching(&self, listener: MatchingListener);

    /// What it has sent so far.
    fn counters(&self) -> PublisherCounters;
}

/// The receiving end of one key in one partition; dropping it unsubscribes (and the
/// publisher's matching event fires if it was the last).
pub trait Subscription: Send + Sync {
    /// The key it receives.
    fn key(&self) -> &str;

    /// What it has received so far.
    fn counters(&self) -> SubscriptionCounters;
}

/// A publisher's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PublisherCounters {
    /// Frames sent.
    pub frames: u64,
    /// Bytes of those frames, as they went on the wire.
    pub wire_bytes: u64,
    /// Puts while nobody was subscribed: not built, not sent.
    pub unmatched: u64,
    /// Of `frames`, those put with a large part (a blob, or a whole frame of one part)
    /// that already lay in shared memory: a loan, sent by reference. What the sending side
    /// alone can tell: a heap part that zenoh copies into its pool arrives through shared
    /// memory too. 0 for a transport without shared memory.
    pub shared_memory: u64,
}

/// A subscription's counts, as the transport saw them (before any decoding).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubscriptionCounters {
    /// Frames delivered to the sink.
    pub frames: u64,
    /// Their bytes.
    pub wire_bytes: u64,
    /// Of `frames`, those whose large part (a blob, or a whole frame of one part) lay in
    /// shared memory: sent by reference between two processes of one host. 0 for a
    /// transport without shared memory.
    pub shared_memory: u64,
}
