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
//! dead peer); state streams (reliable) get priority `DataHigh` and `express` (small
//! messages that must not wait behind a batch of image fragments), sensor streams priority
//! `Data`.
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

mod loans;
mod probe;
mod segments;

pub use loans::is_known as is_zenoh_buffer;
pub use probe::{
    SHM_DIR, SHM_HEADROOM, ShmProbeError, probe_shared_memory, sweep_orphaned_shared_memory,
    zenoh_segments,
};
pub use segments::in_shared_memory;

use parking_lot::{Mutex, RwLock};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use streamwire_core::{Durability, History, Qos, Reliability};
use streamwire_transport::batch::LinkNumbers;
use streamwire_transport::{
    FrameBytes, FrameError, FrameSink, MatchingListener, Publisher, PublisherCounters,
    Subscription, SubscriptionCounters, Transport, TransportError, WireFrame,
};
use zenoh::Wait;
use zenoh::bytes::ZBytes;
use zenoh::qos::{CongestionControl, Priority};
use zenoh::query::{ConsolidationMode, QueryTarget};

/// Frames a `transient_local` keep-all publisher keeps for late joiners (a keep-last one
/// keeps its depth): a bound, because "all" of a camera would be unbounded memory.
pub const TRANSIENT_KEEP_ALL_FRAMES: usize = 16;

/// How long a joining `transient_local` subscriber waits for the remembered frames; its
/// live frames wait behind them meanwhile.
const HISTORY_TIMEOUT: Duration = Duration::from_secs(2);

/// The number of frames a publisher of `qos` remembers, if any.
fn history_depth(qos: Qos) -> Option<usize> {
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

/// A frame as zenoh sends it: its parts appended, none copied; a part that is a buffer
/// of zenoh's (a shared-memory loan, a received slice) is appended as that buffer, so
/// shared memory travels by reference.
fn to_zbytes(frame: &FrameBytes) -> ZBytes {
    match frame.parts() {
        [one] => loans::to_zbytes_part(one),
        parts => {
            let mut writer = ZBytes::writer();
            for part in parts {
                writer.append(loans::to_zbytes_part(part));
            }
            writer.finish()
        }
    }
}

/// A received payload as a frame: one part per zenoh slice, each a `Bytes` that owns its
/// slice (zenoh's buffer, or its shared-memory chunk), not a copy.
fn from_zbytes(payload: &ZBytes) -> FrameBytes {
    FrameBytes::from_parts(loans::received_parts(payload))
}

/// Payloads from this size up go through shared memory (zenoh's default threshold).
pub const SHARED_MEMORY_THRESHOLD: usize = 3 * 1024;

/// Zenoh's shared memory between the processes of one host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedMemory {
    /// Offer shared memory to peers (they must offer it too) and put large payloads into
    /// the pool (on in `SharedMemory::default()`; [`ZenohOptions`] starts from
    /// [`SharedMemory::off`]).
    pub enabled: bool,
    /// The pool's size in bytes (default 16 MiB, zenoh's). A payload that finds the pool
    /// full travels as bytes instead: a small pool costs speed, never frames.
    pub pool_bytes: usize,
}

impl SharedMemory {
    /// Zenoh's default pool: 16 MiB.
    pub const DEFAULT_POOL_BYTES: usize = 16 << 20;

    /// Shared memory off: every payload travels through the link.
    pub fn off() -> SharedMemory {
        SharedMemory {
            enabled: false,
            ..SharedMemory::default()
        }
    }
}

impl Default for SharedMemory {
    fn default() -> Self {
        SharedMemory {
            enabled: true,
            pool_bytes: SharedMemory::DEFAULT_POOL_BYTES,
        }
    }
}

/// What arrived through shared memory, over every subscription of a session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SharedMemoryStats {
    /// Frames with a part (a blob, or a whole frame of one part) that arrived in shared
    /// memory, not copied through the link.
    pub received_shared: u64,
    /// Other frames of [`SHARED_MEMORY_THRESHOLD`] or more, that arrived as bytes: from
    /// another host, from a peer without shared memory, or when the sender's pool was
    /// full.
    pub received_large_copied: u64,
}

/// A peer on this host that this session exchanges payloads with as bytes, not through
/// shared memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedMemoryGap {
    /// The peer's zenoh id.
    pub zid: String,
    /// The link to it, `tcp/127.0.0.1:A -> tcp/127.0.0.1:B`.
    pub link: String,
    /// Whether this session has shared memory on (if it does, the peer has it off).
    pub ours: bool,
}

impl std::fmt::Display for SharedMemoryGap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "peer {} on this host ({}) does not use shared memory ({} has it off): large \
             payloads between them are copied through the link; enable shared memory on \
             both ends",
            self.zid,
            self.link,
            if self.ours {
                "the peer"
            } else {
                "this session"
            }
        )
    }
}

/// How a [`ZenohTransport`] joins the network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZenohOptions {
    /// The run's id: the first segment of every key, so runs never mix.
    pub run_id: String,
    /// Endpoints to listen on (default `tcp/127.0.0.1:0`: loopback, an ephemeral port).
    pub listen: Vec<String>,
    /// Endpoints of peers to connect to (default none).
    pub connect: Vec<String>,
    /// Learn the listen endpoints of the peers' other peers from the peers connected
    /// (zenoh's gossip scouting, over those connections only; multicast stays off), and
    /// connect to them directly. A distributed run's workers connect to the coordinator
    /// alone and find each other this way (default off: a session talks only to the
    /// endpoints it is given).
    pub gossip: bool,
    /// Shared memory with the peers of this host (default off for a session of its own;
    /// a distributed run's workers turn it on). Off by default because a process that
    /// used it leaves its segments in /dev/shm when it ends, and zenoh removes a segment
    /// only once its process is gone (a coordinator does, for its workers:
    /// [`remove_orphaned_shared_memory`]).
    pub shared_memory: SharedMemory,
    /// A zenoh configuration file (JSON5) to start from: TLS or mTLS endpoints and their
    /// certificates, user/password authentication, access control. streamwire's own
    /// settings are applied on top: peer mode, multicast scouting off, the endpoints
    /// (`listen` is ignored when left at its default and the file lists endpoints of its
    /// own), QoS. Its `transport/shared_memory/enabled: false` turns shared memory off.
    pub config_file: Option<PathBuf>,
    /// zenoh settings of the caller's (a closed run's TLS credential and access control),
    /// applied over the configuration file and under streamwire's own settings.
    pub settings: Settings,
}

/// zenoh settings, each a configuration key and its JSON5 value. `Debug` shows the keys
/// only: the values may hold private keys.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Settings(pub Vec<(&'static str, String)>);

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(key, _)| key))
            .finish()
    }
}

impl Default for ZenohOptions {
    fn default() -> Self {
        ZenohOptions {
            run_id: "run".to_owned(),
            listen: vec!["tcp/127.0.0.1:0".to_owned()],
            connect: Vec::new(),
            gossip: false,
            shared_memory: SharedMemory::off(),
            config_file: None,
            settings: Settings::default(),
        }
    }
}

/// Why a zenoh session could not open.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ZenohError {
    /// The run id cannot be a key segment.
    #[error(
        "run id `{0}` cannot be part of a key: use letters, digits, `-` and `_` (no `/`, `*`, `$`, `?`, `#`)"
    )]
    BadRunId(String),
    /// The configuration was refused.
    #[error("zenoh configuration `{key}`")]
    Config {
        /// The configuration key.
        key: &'static str,
        /// zenoh's error.
        #[source]
        error: zenoh::Error,
    },
    /// The session could not open (an endpoint refused, a port taken, credentials
    /// refused).
    #[error("cannot open the zenoh session")]
    Open(#[source] zenoh::Error),
    /// No free port for an endpoint that asked for port 0.
    #[error("cannot find a free port on {host}")]
    FreePort {
        /// The host of the endpoint.
        host: String,
        /// The operating system's error.
        #[source]
        error: std::io::Error,
    },
    /// The zenoh configuration file could not be read.
    #[error("zenoh configuration file {path}")]
    ConfigFile {
        /// The file.
        path: PathBuf,
        /// zenoh's error.
        #[source]
        error: zenoh::Error,
    },
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

#[derive(Default)]
struct ShmCounters {
    shared: AtomicU64,
    large_copied: AtomicU64,
    segments: segments::Segments,
}

impl ShmCounters {
    /// Counts a received frame as shared (a large part lies in a segment) or copied;
    /// true when shared.
    fn count(&self, frame: &FrameBytes, shared_memory: bool) -> bool {
        let shared = shared_memory
            && frame
                .parts()
                .iter()
                .any(|part| part.len() >= SHARED_MEMORY_THRESHOLD && self.segments.contain(part));
        if shared {
            self.shared.fetch_add(1, Ordering::Relaxed);
        } else if frame.len() >= SHARED_MEMORY_THRESHOLD {
            self.large_copied.fetch_add(1, Ordering::Relaxed);
        }
        shared
    }
}

impl std::fmt::Debug for ZenohTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZenohTransport")
            .field("prefix", &self.prefix)
            .field("zid", &self.inner.session.zid().to_string())
            .finish()
    }
}

fn json_list(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|i| format!("\"{}\"", i.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect();
    format!("[{}]", quoted.join(","))
}

impl ZenohTransport {
    /// Opens a zenoh session (a peer) with multicast scouting off, listening and
    /// connecting only on the endpoints given.
    pub fn open(options: &ZenohOptions) -> Result<ZenohTransport, ZenohError> {
        let run_id = &options.run_id;
        check_run_id(run_id)?;
        let mut config = match &options.config_file {
            Some(path) => {
                zenoh::Config::from_file(path).map_err(|error| ZenohError::ConfigFile {
                    path: path.clone(),
                    error,
                })?
            }
            None => zenoh::Config::default(),
        };
        // Whether the file lists endpoints of its own (zenoh's defaults otherwise).
        let file_listens = options.config_file.is_some()
            && config.get_json("listen/endpoints").ok()
                != zenoh::Config::default().get_json("listen/endpoints").ok();
        let listen = if file_listens && options.listen == ZenohOptions::default().listen {
            None
        } else {
            Some(
                options
                    .listen
                    .iter()
                    .map(|e| with_free_port(e))
                    .collect::<Result<Vec<String>, ZenohError>>()?,
            )
        };
        // A file may turn shared memory off; it cannot turn it on against the options.
        let file_allows_shm = !matches!(
            config.get_json("transport/shared_memory/enabled"),
            Ok(json) if json.trim() == "false"
        );
        let pool = options.shared_memory.pool_bytes.max(1 << 20);
        // zenoh unwraps the making of its shared-memory internals (a panic in a lazy
        // static when /dev/shm is full): asked first, a failure turns it off, said once.
        let shared_memory = options.shared_memory.enabled
            && file_allows_shm
            && match probe_shared_memory(std::path::Path::new(SHM_DIR), pool) {
                Ok(()) => true,
                Err(error) => {
                    tracing::warn!(
                        "shared memory is off for this session: {}; frames to the \
                         processes of this host travel as bytes (`--no-shared-memory` \
                         turns it off without asking)",
                        streamwire_core::log::chain(&error)
                    );
                    false
                }
            };
        let mut settings: Vec<(&'static str, String)> = options.settings.0.clone();
        settings.extend([
            ("mode", "\"peer\"".to_owned()),
            ("scouting/multicast/enabled", "false".to_owned()),
            ("scouting/gossip/enabled", options.gossip.to_string()),
            // A peer that cannot be reached is retried, not fatal: workers start in any
            // order.
            ("connect/exit_on_failure", "false".to_owned()),
            // A keep-all publisher blocked by a peer that stopped reading gives up within
            // 1 s (microseconds here), below the runtime's 2 s stop deadline.
            (
                "transport/link/tx/queue/congestion_control/block/wait_before_close",
                "1000000".to_owned(),
            ),
            ("transport/shared_memory/enabled", shared_memory.to_string()),
            // zenoh's shared-memory internals are made when the session opens, not at the
            // first frame. (The pool itself is still made on the first large frame, on a
            // thread: the few frames sent meanwhile travel as bytes.)
            (
                "transport/shared_memory/mode",
                if shared_memory {
                    "\"init\""
                } else {
                    "\"lazy\""
                }
                .to_owned(),
            ),
            (
                "transport/shared_memory/transport_optimization/enabled",
                shared_memory.to_string(),
            ),
            (
                "transport/shared_memory/transport_optimization/pool_size",
                pool.to_string(),
            ),
            (
                "transport/shared_memory/transport_optimization/message_size_threshold",
                SHARED_MEMORY_THRESHOLD.to_string(),
            ),
        ]);
        if let Some(listen) = &listen {
            settings.push(("listen/endpoints", json_list(listen)));
        }
        if !options.connect.is_empty() || options.config_file.is_none() {
            settings.push(("connect/endpoints", json_list(&options.connect)));
        }
        let listening = match listen {
            Some(listen) => listen,
            None => config
                .get_json("listen/endpoints")
                .ok()
                .and_then(|json| serde_json::from_str::<Vec<String>>(&json).ok())
                // infallible: only the list we print: a mode-dependent or absent value lists nothing, and zenoh checks the endpoints themselves when the session opens
                .unwrap_or_default(),
        };
        for (key, value) in settings {
            config
                .insert_json5(key, &value)
                .map_err(|error| ZenohError::Config { key, error })?;
        }
        let session = zenoh::open(config).wait().map_err(ZenohError::Open)?;
        Ok(ZenohTransport {
            inner: Arc::new(Inner {
                listening,
                closed: AtomicBool::new(false),
                announced: Mutex::new(Vec::new()),
                shared_memory,
                shm: Arc::new(ShmCounters::default()),
                loans: shared_memory.then(|| Arc::new(loans::ShmLoans::new(session.clone()))),
                session,
            }),
            prefix: Arc::from(format!("streamwire/{run_id}")),
        })
    }

    /// This session's zenoh id.
    pub fn zid(&self) -> String {
        self.inner.session.zid().to_string()
    }

    /// Whether this session offers shared memory to its peers.
    pub fn shared_memory(&self) -> bool {
        self.inner.shared_memory
    }

    /// What arrived through shared memory so far, over every subscription.
    pub fn shared_memory_stats(&self) -> SharedMemoryStats {
        SharedMemoryStats {
            received_shared: self.inner.shm.shared.load(Ordering::Relaxed),
            received_large_copied: self.inner.shm.large_copied.load(Ordering::Relaxed),
        }
    }

    /// The peers on this host (a link whose two ends share an IP address, or loopback)
    /// that this session cannot use shared memory with, because either end has it off.
    /// Shared memory is negotiated per peer when the two sessions connect, and a peer
    /// without it gets every payload as bytes, silently: this is how to notice.
    pub fn shared_memory_gaps(&self) -> Vec<SharedMemoryGap> {
        let info = self.inner.session.info();
        let without: Vec<String> = info
            .transports()
            .wait()
            .filter(|t| !t.is_shm())
            .map(|t| t.zid().to_string())
            .collect();
        let mut gaps = Vec::new();
        for link in info.links().wait() {
            let zid = link.zid().to_string();
            if without.contains(&zid)
                && same_host(&link.src().to_string(), &link.dst().to_string())
                && !gaps.iter().any(|g: &SharedMemoryGap| g.zid == zid)
            {
                gaps.push(SharedMemoryGap {
                    zid,
                    link: format!("{} -> {}", link.src(), link.dst()),
                    ours: self.inner.shared_memory,
                });
            }
        }
        gaps
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

/// Removes the shared-memory segments (`/dev/shm/<id>.zenoh`) whose processes are gone: a
/// process killed by a signal leaves its segments behind (POSIX keeps a named segment
/// until it is unlinked). A coordinator calls it once its workers have ended. Cheap when
/// there is nothing to remove; does nothing outside Linux.
pub fn remove_orphaned_shared_memory() {
    zenoh::shm::cleanup_orphaned_shm_segments();
}

/// Whether a link's two locators (`tcp/127.0.0.1:7447`) are on one host: loopback, or the
/// same address at both ends.
fn same_host(src: &str, dst: &str) -> bool {
    fn ip(locator: &str) -> Option<std::net::IpAddr> {
        let address = locator.split_once('/').map_or(locator, |(_, a)| a);
        let address = address.split('#').next().unwrap_or(address);
        address.parse::<std::net::SocketAddr>().ok().map(|a| a.ip())
    }
    match (ip(src), ip(dst)) {
        (Some(a), Some(b)) => a == b || (a.is_loopback() && b.is_loopback()),
        _ => false,
    }
}

fn check_run_id(run_id: &str) -> Result<(), ZenohError> {
    if run_id.is_empty()
        || !run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(ZenohError::BadRunId(run_id.to_owned()));
    }
    Ok(())
}

/// `tcp/HOST:0` (or `tls/HOST:0`) with a port the system picks now (zenoh's stable API
/// does not say which port it bound, and peers must be told). The port is free when
/// picked; another process taking it before zenoh binds makes `open` fail with the address
/// in use.
fn with_free_port(endpoint: &str) -> Result<String, ZenohError> {
    let Some((protocol, host)) = ["tcp/", "tls/"].iter().find_map(|protocol| {
        let host = endpoint.strip_prefix(protocol)?.strip_suffix(":0")?;
        Some((protocol, host))
    }) else {
        return Ok(endpoint.to_owned());
    };
    let bind_host = host.trim_start_matches('[').trim_end_matches(']');
    let listener =
        std::net::TcpListener::bind((bind_host, 0)).map_err(|error| ZenohError::FreePort {
            host: host.to_owned(),
            error,
        })?;
    let port = listener
        .local_addr()
        .map_err(|error| ZenohError::FreePort {
            host: host.to_owned(),
            error,
        })?
        .port();
    Ok(format!("{protocol}{host}:{port}"))
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
        self.check_open()?;
        let expr = self.key_expr(key);
        let state = matches!(qos.reliability, Reliability::Reliable);
        let publisher = self
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
            .express(state)
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
                let cache = Arc::new(RecentFrames {
                    depth,
                    frames: Mutex::new(VecDeque::new()),
                });
                let base = self.history_key(key);
                let answers = cache.clone();
                let reply_base = base.clone();
                let queryable = self
                    .inner
                    .session
                    .declare_queryable(format!("{base}/**"))
                    .callback(move |query| {
                        for (seq, frame, unsent) in answers.snapshot() {
                            let reply =
                                query.reply(format!("{reply_base}/{seq}"), to_zbytes(&frame));
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
                (Some(cache), Some(queryable))
            }
            None => (None, None),
        };
        Ok(Arc::new(ZenohPublisher {
            key: key.to_owned(),
            publisher,
            history,
            _queryable: queryable,
            shared,
            next_seq: Default::default(),
            frames: AtomicU64::new(0),
            wire_bytes: AtomicU64::new(0),
            unmatched: AtomicU64::new(0),
            transport: self.clone(),
        }))
    }

    fn subscribe(
        &self,
        key: &str,
        qos: Qos,
        sink: FrameSink,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        self.check_open()?;
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
            let shm = self.inner.shm.clone();
            let shared_memory = self.inner.shared_memory;
            self.inner
                .session
                .declare_subscriber(self.key_expr(key))
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
                transport: self.clone(),
                selector: format!("{}/**", self.history_key(key)),
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
        Ok(Box::new(ZenohSubscription {
            key: key.to_owned(),
            _subscriber: subscriber,
            counters,
            alive,
        }))
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

/// A transient-local publisher's last frames, by link sequence.
struct RecentFrames {
    depth: usize,
    frames: Mutex<VecDeque<(u64, FrameBytes, bool)>>,
}

impl RecentFrames {
    /// Remembers frame `seq`; `unsent` when nobody listened as it was published (the
    /// publisher counted it as not sent).
    fn remember(&self, seq: u64, frame: FrameBytes, unsent: bool) {
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
enum Gate {
    Fetching(Vec<FrameBytes>),
    Open,
}

/// A joining transient-local subscriber's one query for the remembered frames.
struct HistoryFetch {
    transport: ZenohTransport,
    selector: String,
    gate: Arc<Mutex<Gate>>,
    sink: FrameSink,
    counters: Arc<SubscriberCounters>,
    alive: Arc<AtomicBool>,
}

impl HistoryFetch {
    fn run(self) {
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

struct ZenohPublisher {
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
    transport: ZenohTransport,
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
        self.publisher
            .put(to_zbytes(&frame))
            .wait()
            .map_err(engine("send a frame"))?;
        self.frames.fetch_add(1, Ordering::Relaxed);
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
        self.publisher
            .put(to_zbytes(&batch))
            .wait()
            .map_err(engine("send a batch of frames"))?;
        self.frames.fetch_add(frames, Ordering::Relaxed);
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
        }
    }
}

#[derive(Default)]
struct SubscriberCounters {
    frames: AtomicU64,
    wire_bytes: AtomicU64,
    shared_memory: AtomicU64,
}

struct ZenohSubscription {
    key: String,
    _subscriber: zenoh::pubsub::Subscriber<()>,
    counters: Arc<SubscriberCounters>,
    /// False once dropped: a history fetch still under way delivers nothing.
    alive: Arc<AtomicBool>,
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
