//! Opening a session: [`ZenohOptions`] (endpoints, gossip, shared memory, a zenoh
//! configuration file and the caller's settings), streamwire's own zenoh settings laid
//! over them, the run id's check, a free port for `:0` endpoints, and [`ZenohError`].
//! Apart from the transport itself (`lib.rs`), which starts from an open session.

use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use zenoh::Wait;

use crate::shm::ShmCounters;
use crate::{
    Inner, SHARED_MEMORY_THRESHOLD, SHM_DIR, SharedMemory, ZenohTransport, loans,
    probe_shared_memory,
};

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
    /// [`remove_orphaned_shared_memory`](crate::remove_orphaned_shared_memory)).
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
            // How long `open` waits for the peers it connects to (and those gossip names)
            // before it returns anyway, saying "Scouting delay elapsed before start
            // conditions are met" at WARN: zenoh's 500 ms was too short for mutual-TLS
            // links on a loaded machine (a CI run's demo worker said it). `open` returns as
            // soon as the links are up, so a longer wait costs only where they are slow.
            ("scouting/delay", "3000".to_owned()),
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
}

pub(crate) fn check_run_id(run_id: &str) -> Result<(), ZenohError> {
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
