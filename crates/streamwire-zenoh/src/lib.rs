//! The zenoh transport of streamwire: partitions in other processes and on other hosts,
//! joined by [zenoh](https://zenoh.io), an existing distributed engine (no home-made
//! networking).
//!
//! [`ZenohTransport`] implements the runtime's [`Transport`] seam: one zenoh publisher per
//! stream a partition produces, one subscriber per stream a partition receives, matching
//! listeners so that a producer encodes only while someone subscribes, and the runtime's
//! wire frame as the payload (the frame is handed to zenoh as `Bytes`, not copied).
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
//! **Network hygiene**: multicast and gossip scouting are off; a session listens and
//! connects only on the endpoints it is given, by default `tcp/127.0.0.1:0` (loopback, an
//! ephemeral port).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use streamwire_core::{History, Qos, Reliability};
use streamwire_transport::{
    FrameError, FrameSink, MatchingListener, Publisher, PublisherCounters, Subscription,
    SubscriptionCounters, Transport, TransportError,
};
use zenoh::Wait;
use zenoh::qos::{CongestionControl, Priority};

pub mod cluster;

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
}

impl Default for ZenohOptions {
    fn default() -> Self {
        ZenohOptions {
            run_id: "run".to_owned(),
            listen: vec!["tcp/127.0.0.1:0".to_owned()],
            connect: Vec::new(),
            gossip: false,
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
    #[error("zenoh configuration `{key}`: {error}")]
    Config {
        /// The configuration key.
        key: &'static str,
        /// zenoh's error.
        error: String,
    },
    /// The session could not open (an endpoint refused, a port taken).
    #[error("cannot open the zenoh session: {0}")]
    Open(String),
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
        let listening = options
            .listen
            .iter()
            .map(|e| with_free_port(e))
            .collect::<Result<Vec<String>, ZenohError>>()?;
        let mut config = zenoh::Config::default();
        let settings: [(&'static str, String); 7] = [
            ("mode", "\"peer\"".to_owned()),
            ("scouting/multicast/enabled", "false".to_owned()),
            ("scouting/gossip/enabled", options.gossip.to_string()),
            ("listen/endpoints", json_list(&listening)),
            ("connect/endpoints", json_list(&options.connect)),
            // A peer that cannot be reached is retried, not fatal: workers start in any
            // order.
            ("connect/exit_on_failure", "false".to_owned()),
            // A keep-all publisher blocked by a peer that stopped reading gives up within
            // 1 s (microseconds here), below the runtime's 2 s stop deadline.
            (
                "transport/link/tx/queue/congestion_control/block/wait_before_close",
                "1000000".to_owned(),
            ),
        ];
        for (key, value) in settings {
            config
                .insert_json5(key, &value)
                .map_err(|error| ZenohError::Config {
                    key,
                    error: error.to_string(),
                })?;
        }
        let session = zenoh::open(config)
            .wait()
            .map_err(|error| ZenohError::Open(error.to_string()))?;
        Ok(ZenohTransport {
            inner: Arc::new(Inner {
                session,
                listening,
                closed: AtomicBool::new(false),
            }),
            prefix: Arc::from(format!("streamwire/{run_id}")),
        })
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

/// `tcp/HOST:0` with a port the system picks now (zenoh's stable API does not say which
/// port it bound, and peers must be told). The port is free when picked; another process
/// taking it before zenoh binds makes `open` fail with the address in use.
fn with_free_port(endpoint: &str) -> Result<String, ZenohError> {
    let Some(host) = endpoint
        .strip_prefix("tcp/")
        .and_then(|rest| rest.strip_suffix(":0"))
    else {
        return Ok(endpoint.to_owned());
    };
    let bind_host = host.trim_start_matches('[').trim_end_matches(']');
    let listener = std::net::TcpListener::bind((bind_host, 0))
        .map_err(|error| ZenohError::Open(format!("cannot find a free port on {host}: {error}")))?;
    let port = listener
        .local_addr()
        .map_err(|error| ZenohError::Open(error.to_string()))?
        .port();
    Ok(format!("tcp/{host}:{port}"))
}

fn engine(error: impl std::fmt::Display) -> TransportError {
    TransportError::Engine(error.to_string())
}

impl Transport for ZenohTransport {
    fn name(&self) -> &'static str {
        "zenoh"
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
            .map_err(engine)?;
        let shared = Arc::new(PublisherShared {
            matched: AtomicBool::new(false),
            listeners: RwLock::new(Vec::new()),
        });
        let listener = {
            let shared = shared.clone();
            publisher
                .matching_listener()
                .callback(move |status| shared.set_matched(status.matching()))
                .wait()
                .map_err(engine)?
        };
        // The listener reports changes; the status now is asked once.
        let now = publisher.matching_status().wait().map_err(engine)?;
        shared.set_matched(now.matching());
        Ok(Arc::new(ZenohPublisher {
            key: key.to_owned(),
            publisher,
            _listener: listener,
            shared,
            next_seq: AtomicU64::new(0),
            frames: AtomicU64::new(0),
            wire_bytes: AtomicU64::new(0),
            unmatched: AtomicU64::new(0),
            transport: self.clone(),
        }))
    }

    fn subscribe(
        &self,
        key: &str,
        _qos: Qos,
        sink: FrameSink,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        self.check_open()?;
        let counters = Arc::new(SubscriberCounters::default());
        let subscriber = {
            let counters = counters.clone();
            self.inner
                .session
                .declare_subscriber(self.key_expr(key))
                // A callback, not zenoh's channel handlers: its ring channel drops the
                // oldest without counting and its FIFO blocks zenoh's own thread when
                // full. The sink pushes into the runtime's bounded, counted queues.
                .callback(move |sample| {
                    let payload = sample.payload();
                    counters.frames.fetch_add(1, Ordering::Relaxed);
                    counters
                        .wire_bytes
                        .fetch_add(payload.len() as u64, Ordering::Relaxed);
                    // One copy into a buffer of our own: zenoh's when the frame arrived in
                    // fragments (it joins them), ours when it is one slice of zenoh's.
                    let bytes = match payload.to_bytes() {
                        std::borrow::Cow::Borrowed(slice) => Bytes::copy_from_slice(slice),
                        std::borrow::Cow::Owned(vec) => Bytes::from(vec),
                    };
                    sink(bytes);
                })
                .wait()
                .map_err(engine)?
        };
        Ok(Box::new(ZenohSubscription {
            key: key.to_owned(),
            _subscriber: subscriber,
            counters,
        }))
    }

    fn close(&self) {
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
            let listeners = self.listeners.read().map(|l| l.clone()).unwrap_or_default();
            for listener in listeners {
                listener(matched);
            }
        }
    }
}

struct ZenohPublisher {
    key: String,
    publisher: zenoh::pubsub::Publisher<'static>,
    _listener: zenoh::matching::MatchingListener<()>,
    shared: Arc<PublisherShared>,
    next_seq: AtomicU64,
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
        build: &mut dyn FnMut(u64) -> Result<Bytes, FrameError>,
    ) -> Result<(), TransportError> {
        self.transport.check_open()?;
        if !self.shared.matched.load(Ordering::SeqCst) {
            self.unmatched.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let frame = build(seq)?;
        let len = frame.len() as u64;
        self.publisher.put(frame).wait().map_err(engine)?;
        self.frames.fetch_add(1, Ordering::Relaxed);
        self.wire_bytes.fetch_add(len, Ordering::Relaxed);
        Ok(())
    }

    fn is_matched(&self) -> bool {
        self.shared.matched.load(Ordering::SeqCst)
    }

    fn on_matching(&self, listener: MatchingListener) {
        if let Ok(mut listeners) = self.shared.listeners.write() {
            listeners.push(listener);
        }
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
}

struct ZenohSubscription {
    key: String,
    _subscriber: zenoh::pubsub::Subscriber<()>,
    counters: Arc<SubscriberCounters>,
}

impl Subscription for ZenohSubscription {
    fn key(&self) -> &str {
        &self.key
    }

    fn counters(&self) -> SubscriptionCounters {
        SubscriptionCounters {
            frames: self.counters.frames.load(Ordering::Relaxed),
            wire_bytes: self.counters.wire_bytes.load(Ordering::Relaxed),
        }
    }
}
