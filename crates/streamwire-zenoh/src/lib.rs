//! The zenoh transport of streamwire: partitions in other processes and on other hosts,
//! joined by [zenoh](https://zenoh.io), an existing distributed engine (no home-made
//! networking).
//!
//! [`ZenohTransport`] implements the runtime's [`Transport`] seam: one zenoh publisher per
//! stream a partition produces, one subscriber per stream a partition receives, matching
//! listeners so that a producer encodes only while someone subscribes, and the runtime's
//! wire frame as the payload: its parts are handed to zenoh as `Bytes` and appended, not
//! copied, and a received frame's slices become `Bytes` that keep zenoh's buffers (shared
//! memory included) alive, not copies, so a blob (an image's pixels) is read where zenoh
//! put it.
//!
//! **Key expressions**: `streamwire/<run id>/<stream>`, the stream's resolved name without a
//! leading `/` (`color_image/compressed` keeps its name): two runs on one network never
//! hear each other, and a tool finds a run's streams under `streamwire/<run id>/**`.
//!
//! **QoS**: keep-last streams use congestion control `Drop` (a slow link sheds frames,
//! never blocks the producer), keep-all streams `Block` (with zenoh's
//! `wait_before_close` below the runtime's stop deadline, so a stop is never held up by a
//! dead peer); state streams (reliable) get priority `DataHigh` (small messages that must
//! not wait behind a batch of image fragments), sensor streams priority `Data`. Reliable
//! keep-last streams are also `express` (the latest state, put alone); keep-all streams
//! are not, so that zenoh batches a burst's puts (an express put is a link write of its
//! own: 4 KiB messages ran at about 17k msg/s so, issue 51), while a lone put still leaves
//! at once.
//!
//! **Durability**: a `transient_local` stream's publisher keeps its last frames (its
//! keep-last depth, or [`TRANSIENT_KEEP_ALL_FRAMES`] for keep-all), built even while
//! nobody subscribes, and answers a queryable on `streamwire/<run id>/@history/<stream>/**`;
//! a `transient_local` subscriber asks it once on joining and gets those frames first, then
//! the live ones (a frame both remembered and live is delivered once). The same
//! mechanism as zenoh-ext's advanced publisher cache, on zenoh's stable API.
//!
//! **Shared memory**: between the processes of one host, zenoh puts payloads of 3 KB and
//! more into a shared pool instead of the TCP stream ([`SharedMemory`]: on in a distributed
//! run's workers, with a pool sized from the plan's streams; off in a session of its own
//! unless asked).
//! Both ends must have it on, or frames silently travel as bytes: a session reports the
//! peers on its host it cannot use it with ([`ZenohTransport::shared_memory_gaps`]) and
//! counts what arrived through it ([`ZenohTransport::shared_memory_stats`]).
//!
//! **Security**: a zenoh configuration file ([`ZenohOptions::config_file`]) brings TLS or
//! mTLS endpoints, user/password authentication and access control; streamwire's own
//! settings (multicast off, endpoints, QoS) are applied on top of it.
//!
//! **Network hygiene**: multicast and gossip scouting are off; a session listens and
//! connects only on the endpoints it is given, by default `tcp/127.0.0.1:0` (loopback, an
//! ephemeral port).
//!
//! `lib.rs` holds the transport and its keys; apart: opening a session (`session.rs`),
//! publishers (`publisher.rs`), subscriptions (`subscription.rs`), the history of
//! `transient_local` streams (`history.rs`), shared memory (`shm.rs`, with `probe.rs`,
//! `segments.rs` and `loans.rs`).

mod history;
mod loans;
mod probe;
mod publisher;
mod segments;
mod session;
mod shm;
mod subscription;

pub use history::TRANSIENT_KEEP_ALL_FRAMES;
pub use loans::is_known as is_zenoh_buffer;
pub use probe::{
    SHM_DIR, SHM_HEADROOM, ShmProbeError, probe_shared_memory, sweep_orphaned_shared_memory,
    zenoh_segments,
};
pub use segments::in_shared_memory;
pub use session::{Settings, ZenohError, ZenohOptions};
pub use shm::{
    SHARED_MEMORY_THRESHOLD, SharedMemory, SharedMemoryGap, SharedMemoryStats,
    remove_orphaned_shared_memory,
};

use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use streamwire_core::Qos;
use streamwire_transport::{
    FrameBytes, FrameSink, Publisher, Subscription, Transport, TransportError,
};
use zenoh::Wait;
use zenoh::bytes::ZBytes;

use publisher::ZenohPublisher;
use session::check_run_id;
use shm::ShmCounters;
use subscription::ZenohSubscription;

/// A frame as zenoh sends it: its parts appended, none copied; a part that is a buffer
/// of zenoh's (a shared-memory loan, a received slice) is appended as that buffer, so
/// shared memory travels by reference.
fn to_zbytes(frame: &FrameBytes) -> ZBytes {
    to_zbytes_counted(frame).0
}

/// [`to_zbytes`], and whether a part of it is already shared memory (a loan, or a
/// received chunk sent on): zenoh sends that part by reference, no copy.
fn to_zbytes_counted(frame: &FrameBytes) -> (ZBytes, bool) {
    match frame.parts() {
        [one] => {
            let part = loans::to_zbytes_part(one);
            let shared = part.as_shm().is_some();
            (part, shared)
        }
        parts => {
            let mut shared = false;
            let mut writer = ZBytes::writer();
            for part in parts {
                let part = loans::to_zbytes_part(part);
                shared |= part.as_shm().is_some();
                writer.append(part);
            }
            (writer.finish(), shared)
        }
    }
}

/// A received payload as a frame: one part per zenoh slice, each a `Bytes` that owns its
/// slice (zenoh's buffer, or its shared-memory chunk), not a copy.
fn from_zbytes(payload: &ZBytes) -> FrameBytes {
    FrameBytes::from_parts(loans::received_parts(payload))
}

/// The zenoh transport. Cheap to clone (clones share the session).
#[derive(Clone)]
pub struct ZenohTransport {
    inner: Arc<Inner>,
    /// `streamwire/<run id>`: the first chunks of every key.
    prefix: Arc<str>,
}

struct Inner {
    session: zenoh::Session,
    listening: Vec<String>,
    closed: AtomicBool,
    /// One liveliness token per (stream, partition) this session receives: how a
    /// publisher elsewhere tells which partitions it reaches.
    announced: Mutex<Vec<zenoh::liveliness::LivelinessToken>>,
    /// Whether this session offers shared memory.
    shared_memory: bool,
    shm: Arc<ShmCounters>,
    /// Loans of the session's shared memory (when it has it on).
    loans: Option<Arc<loans::ShmLoans>>,
}

impl std::fmt::Debug for ZenohTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZenohTransport")
            .field("prefix", &self.prefix)
            .field("zid", &self.inner.session.zid().to_string())
            .finish()
    }
}

impl ZenohTransport {
    /// This session's zenoh id.
    pub fn zid(&self) -> String {
        self.inner.session.zid().to_string()
    }

    /// The same session, for run `run_id` (a worker learns its run's id from the
    /// coordinator after its session is open).
    pub fn with_run_id(&self, run_id: &str) -> Result<ZenohTransport, ZenohError> {
        check_run_id(run_id)?;
        Ok(ZenohTransport {
            inner: self.inner.clone(),
            prefix: Arc::from(format!("streamwire/{run_id}")),
        })
    }

    /// `streamwire/<run id>`, the first chunks of this run's keys.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The key expression of `stream` in this run.
    pub fn key_expr(&self, stream: &str) -> String {
        format!("{}/{}", self.prefix, stream.trim_start_matches('/'))
    }

    /// Where a `transient_local` stream's remembered frames are asked for:
    /// `streamwire/<run id>/@history/<stream>` (a verbatim chunk, so no wildcard
    /// subscription on the run's streams hears it).
    pub fn history_key(&self, stream: &str) -> String {
        format!(
            "{}/@history/{}",
            self.prefix,
            stream.trim_start_matches('/')
        )
    }

    /// The liveliness key by which `partition` says it receives `stream`:
    /// `streamwire/<run id>/@sub/<stream>/@/<host>/<process>` (`@` ends the stream's
    /// chunks, which may hold `/`).
    fn announcement_key(&self, stream: &str, partition: &str) -> String {
        format!(
            "{}/@sub/{}/@/{}",
            self.prefix,
            stream.trim_start_matches('/'),
            partition
        )
    }

    /// The liveliness key by which `partition` says it publishes `stream`:
    /// `streamwire/<run id>/@pub/<stream>/@/<host>/<process>` (what `topic list
    /// --connect` reads).
    fn publisher_announcement_key(&self, stream: &str, partition: &str) -> String {
        format!(
            "{}/@pub/{}/@/{}",
            self.prefix,
            stream.trim_start_matches('/'),
            partition
        )
    }

    /// Declares liveliness token `key`, held until the transport closes.
    fn declare_token(&self, key: String) {
        match self.inner.session.liveliness().declare_token(&key).wait() {
            Ok(token) => self.inner.announced.lock().push(token),
            Err(error) => tracing::warn!("announcing `{key}`: {error}"),
        }
    }

    /// The endpoints this session listens on (with the ports chosen for `:0`), for
    /// others to connect to.
    pub fn locators(&self) -> Vec<String> {
        self.inner.listening.clone()
    }

    /// The zenoh session, for what the seam does not cover (liveliness, queryables).
    pub fn session(&self) -> &zenoh::Session {
        &self.inner.session
    }

    fn check_open(&self) -> Result<(), TransportError> {
        if self.inner.closed.load(Ordering::SeqCst) {
            Err(TransportError::Closed)
        } else {
            Ok(())
        }
    }
}

/// zenoh's error, kept as the source, saying what was being done.
fn engine(what: impl Into<String>) -> impl FnOnce(zenoh::Error) -> TransportError {
    move |source| TransportError::Engine {
        what: what.into(),
        source,
    }
}

impl Transport for ZenohTransport {
    fn name(&self) -> &'static str {
        "zenoh"
    }

    fn loans(&self) -> Option<Arc<dyn streamwire_core::buffer::LoanSource>> {
        self.inner
            .loans
            .clone()
            .map(|loans| loans as Arc<dyn streamwire_core::buffer::LoanSource>)
    }

    fn publisher(&self, key: &str, qos: Qos) -> Result<Arc<dyn Publisher>, TransportError> {
        Ok(Arc::new(ZenohPublisher::declare(self, key, qos)?))
    }

    fn subscribe(
        &self,
        key: &str,
        qos: Qos,
        sink: FrameSink,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        Ok(Box::new(ZenohSubscription::declare(self, key, qos, sink)?))
    }

    fn announce(&self, key: &str, partition: &str) {
        // Declared after the subscriber, on the same session: a publisher that sees the
        // token has been told of the subscriber first.
        self.declare_token(self.announcement_key(key, partition));
    }

    fn announce_publisher(&self, key: &str, partition: &str) {
        self.declare_token(self.publisher_announcement_key(key, partition));
    }

    fn close(&self) {
        self.inner.announced.lock().clear();
        if !self.inner.closed.swap(true, Ordering::SeqCst)
            && let Err(error) = self.inner.session.close().wait()
        {
            tracing::warn!("closing the zenoh session: {error}");
        }
    }
}
