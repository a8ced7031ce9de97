//! Distributed runs: the *coordinator* starts a plan's processes as worker processes and
//! supervises them; a *worker* runs one process of the plan, joined to the others by
//! zenoh (the transport is `streamwire-zenoh`; this crate is the run around it).
//!
//! The coordinator is `streamwire run`; a worker is `streamwire worker`, started by the
//! coordinator as a child process of the same binary, or by hand on another host. This
//! crate knows nothing of the command line: the caller gives the coordinator the command
//! that starts a worker ([`Launch`]) and, for processes it does not start, the advice it
//! prints ([`CoordinatorOptions::start_hint`]).
//!
//! **Joining.** A worker builds its own plan (from the blueprint and settings it was
//! given) and asks the coordinator to join with the plan's [hash](plan_hash) and its
//! [protocol version](protocol::VERSION): a worker whose plan or protocol differs, or that
//! names a process the plan does not have, is refused, and both sides say why. An
//! accepted worker declares a liveliness token (its death is seen at once, even on another
//! host), starts its part of the plan with its modules held at a
//! [`StartGate`](streamwire_runtime::StartGate), and reports itself *ready* once every
//! stream it sends to another process has a subscriber. When every process of the plan is
//! ready the coordinator says *go*: the gates open and the sources start, so no frame is
//! lost because a subscriber was late.
//!
//! **Supervision** reacts to events: a child's exit (each local worker is
//! awaited on a thread of its own), a liveliness token going away, and the workers'
//! queries. A worker that dies (exits without its report, or is killed) is named with its
//! exit status; the blueprint's [`Supervision`](streamwire_graph::Supervision) stops the
//! run or starts the worker again (it rejoins, and delivery resumes). A worker stops when
//! the coordinator says so, when its standard input closes (the coordinator is gone,
//! however it ended: no orphans), or when the coordinator stops answering. Each worker
//! sends its report at the end; the coordinator merges them into one
//! ([`RunReport::merge`](streamwire_runtime::RunReport::merge)).
//!
//! **Keys**, beside the streams' (`streamwire/<run>/<stream>`): the coordinator answers
//! queries on `streamwire/<run>/@cluster/{join,state,report}`, and workers declare
//! liveliness tokens on `streamwire/<run>/@cluster/worker/<host>/<process>`
//! ([`protocol::Keys`]). A chunk that starts with `@` is verbatim in zenoh: no wildcard
//! over the streams matches it.
//!
//! | module | what it holds |
//! |---|---|
//! | [`protocol`] | the control messages, one module per direction, and their keys |
//! | `coordinator` | the coordinator's session, its queryables and the board they share |
//! | `supervise` | the coordinator's event loop: start, barrier, deaths, restarts, the end |
//! | `worker` | a worker: join, start behind the gate, report |
//! | [`shared_memory`] | each worker's pool size, and the warning for workers without it |
//! | [`liveness`] | silent links: planned links that receive nothing while their sender sends |
//! | `report` | the end of a distributed run: its workers and the merged report |

pub mod access;
pub mod cli;
mod coordinator;
pub mod liveness;
mod logs;
pub mod protocol;
mod report;
pub mod shared_memory;
mod supervise;
mod worker;

pub use cli::Distributed;

use std::time::Duration;

use streamwire_graph::Plan;
use streamwire_zenoh::ZenohError;

pub use access::{AccessRules, Credential, RunAuthority};
pub use coordinator::{Access, Coordinator, CoordinatorOptions, Launch, Resubscriber, StartHint};
pub use liveness::{DEFAULT_SILENT_LINK, SilentLink, SilentLinks};
pub use report::{ClusterReport, WorkerSummary};
pub use shared_memory::shared_memory_pool;
pub use worker::{WorkerOptions, run_worker};

/// A short, stable hash of what a plan says (its [summary](Plan::summary) as JSON,
/// FNV-1a, 64 bits, in hex): two processes with the same blueprint and settings have the
/// same hash; a changed setting that changes the plan changes it. A plan whose summary
/// cannot be written as JSON is an error, never the hash of nothing.
///
/// ```
/// # use streamwire_graph::Blueprint;
/// let plan = Blueprint::new().build()?;
/// assert_eq!(streamwire_cluster::plan_hash(&plan)?.len(), 16);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn plan_hash(plan: &Plan) -> Result<String, ClusterError> {
    let text = serde_json::to_string(&plan.summary()).map_err(ClusterError::PlanHash)?;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    Ok(format!("{hash:016x}"))
}

/// Why a distributed run, or one of its workers, could not go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The zenoh session could not open.
    #[error(transparent)]
    Zenoh(#[from] ZenohError),
    /// zenoh refused a declaration or a query.
    #[error("zenoh: {what}")]
    Engine {
        /// What was asked of zenoh.
        what: &'static str,
        /// zenoh's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A control message could not be written or read as JSON.
    #[error("cluster protocol: {what}")]
    Protocol {
        /// Which message.
        what: &'static str,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// The plan's summary could not be written, so it has no hash to join with.
    #[error("cannot hash the plan: its summary does not serialize")]
    PlanHash(#[source] serde_json::Error),
    /// The coordinator refused this worker.
    #[error("worker `{process}` refused by the coordinator of run `{run_id}`: {reason}")]
    Refused {
        /// The worker's process.
        process: String,
        /// The run it asked to join.
        run_id: String,
        /// Why, naming both sides.
        reason: String,
    },
    /// No coordinator answered.
    #[error(
        "no coordinator answered within {timeout:?} (connecting to {endpoints}): is `run` \
         going there, with this run id?"
    )]
    NoCoordinator {
        /// Where the worker looked.
        endpoints: String,
        /// How long it tried.
        timeout: Duration,
    },
    /// The process asked for is not one of the plan's.
    #[error("no process `{process}` in the plan (processes: {known})")]
    UnknownProcess {
        /// The name asked for.
        process: String,
        /// The plan's processes.
        known: String,
    },
    /// The worker's part of the plan could not start.
    #[error(transparent)]
    Start(#[from] streamwire_runtime::StartError),
    /// Workers did not join in time.
    #[error("not every worker joined within {timeout:?}; missing: {missing}")]
    JoinTimeout {
        /// Each missing process, with what is known about it.
        missing: String,
        /// The join timeout.
        timeout: Duration,
    },
    /// A closed run's key or certificate could not be made.
    #[error("cannot make {what}")]
    Credential {
        /// What was being made.
        what: String,
        /// The certificate library's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A credential's text does not read.
    #[error("bad credential: {0}")]
    BadCredential(String),
    /// A credential could not be read (its file or standard input failed).
    #[error("cannot read a credential")]
    CredentialInput {
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A secret file could not be read or written.
    #[error("secret file {path}")]
    SecretFile {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A worker process could not be started.
    #[error("cannot start the worker of `{process}`")]
    Spawn {
        /// The process.
        process: String,
        /// The OS error.
        #[source]
        error: std::io::Error,
    },
    /// A thread of the cluster's own could not be started.
    #[error("cannot start {what}")]
    Thread {
        /// What the thread does.
        what: &'static str,
        /// The OS error.
        #[source]
        error: std::io::Error,
    },
}

/// A zenoh error, keeping it as the source.
fn engine(what: &'static str) -> impl FnOnce(zenoh::Error) -> ClusterError {
    move |source| ClusterError::Engine { what, source }
}

/// The plan's processes, `host/process`.
fn process_names(plan: &Plan) -> Vec<String> {
    plan.processes()
        .iter()
        .map(|p| p.placement().to_string())
        .collect()
}

/// `host/process` for `name`, which may also be the process alone when that is unique.
fn resolve_process(plan: &Plan, name: &str) -> Result<String, ClusterError> {
    let names = process_names(plan);
    if names.iter().any(|n| n == name) {
        return Ok(name.to_owned());
    }
    let by_process: Vec<&String> = names
        .iter()
        .filter(|n| n.rsplit_once('/').is_some_and(|(_, p)| p == name))
        .collect();
    match by_process.as_slice() {
        [one] => Ok((*one).clone()),
        _ => Err(ClusterError::UnknownProcess {
            process: name.to_owned(),
            known: names.join(", "),
        }),
    }
}
