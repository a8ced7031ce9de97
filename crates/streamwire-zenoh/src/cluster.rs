//! Distributed runs: the *coordinator* starts a plan's processes as worker processes and
//! supervises them; a *worker* runs one process of the plan, joined to the others by
//! zenoh.
//!
//! The coordinator is `streamwire run`; a worker is `streamwire worker`, started by the
//! coordinator as a child process of the same binary, or by hand on another host
//! (`streamwire worker --connect tcp/HOST:PORT --process base_station/base demo`).
//!
//! **Joining.** A worker builds its own plan (from the blueprint and settings it was
//! given) and asks the coordinator to join with the plan's [hash](plan_hash): a worker
//! whose plan differs, or that names a process the plan does not have, is refused, and
//! both sides say why. An accepted worker declares a liveliness token (its death is seen
//! at once, even on another host), starts its part of the plan with its modules held at
//! a [`StartGate`], and reports itself *ready* once every stream it sends to another
//! process has a subscriber. When every process of the plan is ready the coordinator
//! says *go*: the gates open and the sources start, so no frame is lost because a
//! subscriber was late.
//!
//! **Supervision.** A worker that dies (exits without its report, or is killed) is named
//! with its exit status; the blueprint's [`Supervision`] stops the run or starts the
//! worker again (it rejoins, and delivery resumes). A worker stops when the coordinator
//! says so, when its standard input closes (the coordinator is gone, however it ended: no
//! orphans), or when the coordinator stops answering. Each worker sends its report at the
//! end; the coordinator merges them into one.
//!
//! **Keys**, beside the streams' (`streamwire/<run>/<stream>`): the coordinator answers
//! queries on `streamwire/<run>/@cluster/{join,state,report}`, and workers declare
//! liveliness tokens on `streamwire/<run>/@cluster/worker/<host>/<process>`. A chunk that
//! starts with `@` is verbatim in zenoh: no wildcard over the streams matches it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Read as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use streamwire_graph::{Locality, Placement, Plan, RunnablePlan, Supervision};
use streamwire_runtime::{EndReason, RunOptions, RunReport, RunStats, Runtime, StartGate};
use streamwire_transport::{FrameSink, Publisher, Subscription, Transport, TransportError};
use zenoh::Wait;

use crate::{SharedMemory, ZenohError, ZenohOptions, ZenohTransport};

/// How often workers ask the coordinator for the run's state (and say theirs).
const POLL: Duration = Duration::from_millis(100);
/// How long one query waits for its answer.
const QUERY_TIMEOUT: Duration = Duration::from_secs(1);
/// A worker that has heard nothing from its coordinator for this long stops.
const COORDINATOR_SILENCE: Duration = Duration::from_secs(5);

/// A short, stable hash of what a plan says (its [summary](Plan::summary) as JSON,
/// FNV-1a, 64 bits, in hex): two processes with the same blueprint and settings have the
/// same hash; a changed setting that changes the plan changes it.
///
/// ```
/// # use streamwire_graph::Blueprint;
/// let plan = Blueprint::new().build()?;
/// assert_eq!(streamwire_zenoh::cluster::plan_hash(&plan).len(), 16);
/// # Ok::<(), streamwire_graph::BuildError>(())
/// ```
pub fn plan_hash(plan: &Plan) -> String {
    let text = serde_json::to_string(&plan.summary()).unwrap_or_default();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Why a distributed run, or one of its workers, could not go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The zenoh session could not open.
    #[error(transparent)]
    Zenoh(#[from] ZenohError),
    /// zenoh refused a declaration or a query.
    #[error("zenoh: {0}")]
    Engine(String),
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
    /// A worker process could not be started.
    #[error("cannot start the worker of `{process}`: {error}")]
    Spawn {
        /// The process.
        process: String,
        /// The OS error.
        #[source]
        error: std::io::Error,
    },
}

fn engine(error: impl fmt::Display) -> ClusterError {
    ClusterError::Engine(error.to_string())
}

#[derive(Serialize, Deserialize)]
struct JoinRequest {
    process: String,
    plan_hash: String,
    pid: u32,
    /// Whether the worker's session offers shared memory (a worker that does not say,
    /// does not).
    #[serde(default)]
    shared_memory: bool,
}

#[derive(Serialize, Deserialize)]
struct JoinReply {
    accepted: bool,
    reason: String,
    run_id: String,
}

#[derive(Serialize, Deserialize)]
struct StateRequest {
    process: String,
    ready: bool,
    /// A snapshot of the worker's counters, about once a second (for the coordinator's
    /// status line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stats: Option<RunStats>,
}

#[derive(Serialize, Deserialize)]
struct StateReply {
    go: bool,
    stop: bool,
}

#[derive(Serialize, Deserialize)]
struct ReportRequest {
    process: String,
    report: RunReport,
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

// ----------------------------------------------------------------------------------
// Coordinator
// ----------------------------------------------------------------------------------

/// How a coordinator runs.
#[derive(Clone, Debug)]
pub struct CoordinatorOptions {
    /// The run's id (the first chunk of every key after `streamwire/`).
    pub run_id: String,
    /// Where the coordinator listens for workers (default `tcp/127.0.0.1:0`: loopback,
    /// a free port). Workers on other hosts need an address they can reach.
    pub listen: Vec<String>,
    /// Start the processes of this host here (`None`: every process of the plan, a
    /// rehearsal of all its hosts on this machine). The others are started by hand.
    pub host: Option<String>,
    /// How long to wait for every worker to be ready (default 30 s).
    pub join_timeout: Duration,
    /// How long workers have to stop and report (default 2 s).
    pub stop_deadline: Duration,
    /// Stop after this long (default: until stopped, or every worker finished).
    pub duration: Option<Duration>,
    /// A zenoh configuration file for the coordinator's session (TLS, authentication,
    /// access control: [`ZenohOptions::config_file`]).
    pub zenoh_config: Option<PathBuf>,
}

impl Default for CoordinatorOptions {
    fn default() -> Self {
        CoordinatorOptions {
            run_id: format!("run{}", std::process::id()),
            listen: vec!["tcp/127.0.0.1:0".to_owned()],
            host: None,
            join_timeout: Duration::from_secs(30),
            stop_deadline: Duration::from_secs(2),
            duration: None,
            zenoh_config: None,
        }
    }
}

/// What the coordinator gives the command that starts a worker.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The worker's process, `host/process`.
    pub process: String,
    /// The run's id.
    pub run_id: String,
    /// The coordinator's endpoints, for the worker to connect to.
    pub connect: Vec<String>,
    /// The join timeout, for the worker's own waits.
    pub join_timeout: Duration,
}

/// One worker of a finished distributed run.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerSummary {
    /// Its process, `host/process`.
    pub process: String,
    /// Started by this coordinator (not by hand on another host).
    pub local: bool,
    /// Its last process id.
    pub pid: Option<u32>,
    /// Its exit status as the OS gave it (local workers), e.g. `exit status: 0`.
    pub exit: Option<String>,
    /// How often it was started again.
    pub restarts: u32,
    /// Whether its report arrived.
    pub reported: bool,
}

/// A distributed run's end: its workers, and their reports merged into one.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ClusterReport {
    /// Every worker.
    pub workers: Vec<WorkerSummary>,
    /// The workers' reports merged: every instance, input, codec and wire row of the run;
    /// the reason is `failed` if a worker failed or died, `finished` if every worker
    /// finished.
    pub report: RunReport,
}

impl fmt::Display for ClusterReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.report)?;
        writeln!(f, "workers:")?;
        let width = self
            .workers
            .iter()
            .map(|w| w.process.len())
            .max()
            .unwrap_or(0);
        for w in &self.workers {
            writeln!(
                f,
                "  {:width$}  {}  {}{}{}",
                w.process,
                if w.local { "started here" } else { "joined" },
                w.exit.as_deref().unwrap_or("-"),
                if w.restarts > 0 {
                    format!(", restarted {}x", w.restarts)
                } else {
                    String::new()
                },
                if w.reported { "" } else { ", no report" },
            )?;
        }
        Ok(())
    }
}

#[derive(Default)]
struct Board {
    plan_hash: String,
    run_id: String,
    expected: Vec<String>,
    joined: BTreeMap<String, u32>,
    ready: BTreeSet<String>,
    reports: BTreeMap<String, RunReport>,
    /// The latest counters of each worker, while it runs.
    live: BTreeMap<String, RunStats>,
    /// Liveliness tokens seen going away (a worker's session ended).
    gone: BTreeSet<String>,
    /// Refusals not yet said.
    refusals: Vec<String>,
    /// Whether each joined worker offers shared memory.
    shared_memory: BTreeMap<String, bool>,
    go: bool,
    stop: bool,
}

fn lock(board: &Mutex<Board>) -> MutexGuard<'_, Board> {
    board
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

struct ChildRecord {
    child: Child,
    /// Kept open: the worker stops when it closes (the coordinator is gone).
    _stdin: Option<std::process::ChildStdin>,
}

/// The coordinator of a distributed run: its zenoh session and the queryables workers
/// join through. [`run`](Coordinator::run) starts the local workers and supervises
/// the run to its end.
pub struct Coordinator {
    transport: ZenohTransport,
    board: Arc<Mutex<Board>>,
    options: CoordinatorOptions,
    supervision: Supervision,
    /// Every process of the plan with its host.
    processes: Vec<(String, String)>,
    _queryables: Vec<zenoh::query::Queryable<()>>,
    _liveliness: zenoh::pubsub::Subscriber<()>,
}

impl fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Coordinator")
            .field("run_id", &self.options.run_id)
            .field("endpoints", &self.transport.locators())
            .finish_non_exhaustive()
    }
}

fn reply_json<T: Serialize>(query: &zenoh::query::Query, value: &T) {
    match serde_json::to_vec(value) {
        Ok(bytes) => {
            if let Err(error) = query.reply(query.key_expr().clone(), bytes).wait() {
                tracing::warn!("cannot answer a worker: {error}");
            }
        }
        Err(error) => tracing::warn!("cannot encode an answer: {error}"),
    }
}

fn payload_json<T: for<'de> Deserialize<'de>>(query: &zenoh::query::Query) -> Option<T> {
    let payload = query.payload()?;
    serde_json::from_slice(&payload.to_bytes()).ok()
}

impl Coordinator {
    /// Opens the coordinator's session and starts answering workers of `plan`.
    pub fn start(plan: &Plan, options: CoordinatorOptions) -> Result<Coordinator, ClusterError> {
        let transport = ZenohTransport::open(&ZenohOptions {
            run_id: options.run_id.clone(),
            listen: options.listen.clone(),
            connect: Vec::new(),
            gossip: true,
            // The coordinator carries no frames: without shared memory it holds no
            // segment of its own, nor maps the workers' (which would keep them alive).
            shared_memory: SharedMemory::off(),
            config_file: options.zenoh_config.clone(),
        })?;
        let processes: Vec<(String, String)> = plan
            .processes()
            .iter()
            .map(|p| (p.placement().to_string(), p.placement().host().to_owned()))
            .collect();
        let board = Arc::new(Mutex::new(Board {
            plan_hash: plan_hash(plan),
            run_id: options.run_id.clone(),
            expected: processes.iter().map(|(p, _)| p.clone()).collect(),
            ..Board::default()
        }));
        let session = transport.session();
        let key = |what: &str| format!("{}/@cluster/{what}", transport.prefix());
        let join = {
            let board = board.clone();
            session
                .declare_queryable(key("join"))
                .callback(move |query| {
                    let Some(request) = payload_json::<JoinRequest>(&query) else {
                        return;
                    };
                    let mut b = lock(&board);
                    let reason = if !b.expected.contains(&request.process) {
                        Some(format!(
                            "the coordinator's plan has no process `{}` (its processes: {})",
                            request.process,
                            b.expected.join(", ")
                        ))
                    } else if request.plan_hash != b.plan_hash {
                        Some(format!(
                            "the worker's plan (hash {}) differs from the coordinator's (hash \
                             {}): start the worker with the same blueprint and settings \
                             (`-o`, environment) as `run`",
                            request.plan_hash, b.plan_hash
                        ))
                    } else {
                        None
                    };
                    let reply = JoinReply {
                        accepted: reason.is_none(),
                        reason: reason.clone().unwrap_or_default(),
                        run_id: b.run_id.clone(),
                    };
                    match reason {
                        Some(reason) => b.refusals.push(format!(
                            "refused worker `{}` (pid {}): {reason}",
                            request.process, request.pid
                        )),
                        None => {
                            // A rejoin (a restarted worker) starts over.
                            b.shared_memory
                                .insert(request.process.clone(), request.shared_memory);
                            b.joined.insert(request.process.clone(), request.pid);
                            b.ready.remove(&request.process);
                            b.reports.remove(&request.process);
                            b.gone.remove(&request.process);
                        }
                    }
                    drop(b);
                    reply_json(&query, &reply);
                })
                .wait()
                .map_err(engine)?
        };
        let state = {
            let board = board.clone();
            session
                .declare_queryable(key("state"))
                .callback(move |query| {
                    let Some(request) = payload_json::<StateRequest>(&query) else {
                        return;
                    };
                    let mut b = lock(&board);
                    if b.joined.contains_key(&request.process) {
                        if let Some(stats) = request.stats {
                            b.live.insert(request.process.clone(), stats);
                        }
                        if request.ready {
                            b.ready.insert(request.process);
                        }
                    }
                    let reply = StateReply {
                        go: b.go,
                        stop: b.stop,
                    };
                    drop(b);
                    reply_json(&query, &reply);
                })
                .wait()
                .map_err(engine)?
        };
        let report = {
            let board = board.clone();
            session
                .declare_queryable(key("report"))
                .callback(move |query| {
                    let Some(request) = payload_json::<ReportRequest>(&query) else {
                        return;
                    };
                    lock(&board).reports.insert(request.process, request.report);
                    reply_json(&query, &true);
                })
                .wait()
                .map_err(engine)?
        };
        let liveliness = {
            let board = board.clone();
            let prefix = key("worker/");
            session
                .liveliness()
                .declare_subscriber(key("worker/**"))
                .callback(move |sample| {
                    if sample.kind() == zenoh::sample::SampleKind::Delete
                        && let Some(process) = sample.key_expr().as_str().strip_prefix(&prefix)
                    {
                        lock(&board).gone.insert(process.to_owned());
                    }
                })
                .wait()
                .map_err(engine)?
        };
        Ok(Coordinator {
            transport,
            board,
            supervision: plan.supervision(),
            processes,
            options,
            _queryables: vec![join, state, report],
            _liveliness: liveliness,
        })
    }

    /// Where workers connect (`tcp/127.0.0.1:PORT` by default).
    pub fn endpoints(&self) -> Vec<String> {
        self.transport.locators()
    }

    /// The processes this coordinator starts as children.
    pub fn local_processes(&self) -> Vec<String> {
        self.processes
            .iter()
            .filter(|(_, host)| self.options.host.as_ref().is_none_or(|h| h == host))
            .map(|(p, _)| p.clone())
            .collect()
    }

    fn launch(
        &self,
        process: &str,
        command: &dyn Fn(&Launch) -> Command,
    ) -> Result<ChildRecord, ClusterError> {
        let mut cmd = command(&Launch {
            process: process.to_owned(),
            run_id: self.options.run_id.clone(),
            connect: self.endpoints(),
            join_timeout: self.options.join_timeout,
        });
        cmd.stdin(Stdio::piped());
        let mut child = cmd.spawn().map_err(|error| ClusterError::Spawn {
            process: process.to_owned(),
            error,
        })?;
        let stdin = child.stdin.take();
        Ok(ChildRecord {
            child,
            _stdin: stdin,
        })
    }

    /// Starts the local workers (each by `command`, a command line of the worker for its
    /// [`Launch`]), waits until every process of the plan is ready, lets the sources
    /// start, supervises the workers until the run ends (every worker finished, one
    /// failed, `duration`, or `stop` set) and returns the merged report. `say` gets
    /// each event for the user (a worker started, joined, died, restarted).
    pub fn run(
        self,
        command: &dyn Fn(&Launch) -> Command,
        stop: &AtomicBool,
        say: &mut dyn FnMut(&str),
    ) -> Result<ClusterReport, ClusterError> {
        self.run_observed(command, stop, say, &mut |_| {})
    }

    /// Like [`run`](Coordinator::run), and `progress` gets the workers' counters merged,
    /// about once a second while the sources run (for a status line).
    pub fn run_observed(
        self,
        command: &dyn Fn(&Launch) -> Command,
        stop: &AtomicBool,
        say: &mut dyn FnMut(&str),
        progress: &mut dyn FnMut(&RunStats),
    ) -> Result<ClusterReport, ClusterError> {
        let local = self.local_processes();
        let mut children: BTreeMap<String, ChildRecord> = BTreeMap::new();
        let mut summaries: BTreeMap<String, WorkerSummary> = self
            .processes
            .iter()
            .map(|(p, _)| {
                (
                    p.clone(),
                    WorkerSummary {
                        process: p.clone(),
                        local: local.contains(p),
                        pid: None,
                        exit: None,
                        restarts: 0,
                        reported: false,
                    },
                )
            })
            .collect();
        let result = self.supervise(
            &local,
            command,
            stop,
            say,
            progress,
            &mut children,
            &mut summaries,
        );
        // Whatever happened: every worker is told to stop, has the stop deadline and a
        // margin to report and exit, and is killed after that. No orphans.
        lock(&self.board).stop = true;
        let deadline = Instant::now() + self.options.stop_deadline + Duration::from_secs(2);
        loop {
            let all_exited = children
                .values_mut()
                .all(|c| matches!(c.child.try_wait(), Ok(Some(_)) | Err(_)));
            let b = lock(&self.board);
            let remote_done = summaries.values().filter(|w| !w.local).all(|w| {
                b.reports.contains_key(&w.process)
                    || !b.joined.contains_key(&w.process)
                    || b.gone.contains(&w.process)
            });
            drop(b);
            if (all_exited && remote_done) || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut stragglers = Vec::new();
        for (process, record) in &mut children {
            let status = match record.child.try_wait() {
                Ok(Some(status)) => Some(status),
                _ => {
                    say(&format!(
                        "worker `{process}` did not stop within the deadline: killed"
                    ));
                    stragglers.push(format!("worker {process} (killed)"));
                    let _ = record.child.kill();
                    record.child.wait().ok()
                }
            };
            if let (Some(status), Some(summary)) = (status, summaries.get_mut(process))
                && summary.exit.is_none()
            {
                summary.exit = Some(status.to_string());
            }
        }
        let (reason, failure) = result?;
        let b = lock(&self.board);
        for (process, summary) in &mut summaries {
            summary.reported = b.reports.contains_key(process);
        }
        let reports: Vec<(String, RunReport)> = b
            .reports
            .iter()
            .map(|(p, r)| (p.clone(), r.clone()))
            .collect();
        drop(b);
        self.transport.close();
        // A worker killed by a signal leaves its shared-memory segments in /dev/shm (POSIX
        // keeps a named segment until someone unlinks it): zenoh removes the segments
        // whose processes are gone. After this session's close: frames routed through it
        // had it hold their segments too.
        crate::remove_orphaned_shared_memory();
        Ok(ClusterReport {
            workers: summaries.into_values().collect(),
            report: merge(reason, failure, stragglers, reports),
        })
    }

    /// The run until it ends: its reason and failure.
    #[expect(
        clippy::too_many_arguments,
        reason = "the run's inputs and the two tables it keeps, all owned by `run_observed`"
    )]
    fn supervise(
        &self,
        local: &[String],
        command: &dyn Fn(&Launch) -> Command,
        stop: &AtomicBool,
        say: &mut dyn FnMut(&str),
        progress: &mut dyn FnMut(&RunStats),
        children: &mut BTreeMap<String, ChildRecord>,
        summaries: &mut BTreeMap<String, WorkerSummary>,
    ) -> Result<(EndReason, Option<String>), ClusterError> {
        for process in local {
            let record = self.launch(process, command)?;
            if let Some(s) = summaries.get_mut(process) {
                s.pid = Some(record.child.id());
            }
            say(&format!(
                "worker `{process}` started (pid {})",
                record.child.id()
            ));
            children.insert(process.clone(), record);
        }
        let began = Instant::now();
        let mut restarts_used = 0u32;
        let mut said_ready: BTreeSet<String> = BTreeSet::new();
        let mut run_started: Option<Instant> = None;
        let mut last_progress = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let refusals = std::mem::take(&mut lock(&self.board).refusals);
            for refusal in refusals {
                say(&refusal);
            }
            if stop.load(Ordering::SeqCst) {
                return Ok((EndReason::Stopped, None));
            }
            if let (Some(at), Some(limit)) = (run_started, self.options.duration)
                && at.elapsed() >= limit
            {
                return Ok((EndReason::Stopped, None));
            }
            // Deaths: a local worker that exited without its report, a remote one whose
            // token went away without one.
            let mut dead: Vec<(String, String)> = Vec::new();
            for (process, record) in children.iter_mut() {
                if let Ok(Some(status)) = record.child.try_wait() {
                    let reported = lock(&self.board).reports.contains_key(process);
                    if let Some(s) = summaries.get_mut(process) {
                        s.exit = Some(status.to_string());
                    }
                    // A worker that reported ended its run (finished, stopped or failed:
                    // its report says which); one that did not, died.
                    if !reported {
                        dead.push((process.clone(), status.to_string()));
                    }
                }
            }
            {
                let mut b = lock(&self.board);
                let gone: Vec<String> = b.gone.iter().cloned().collect();
                for process in gone {
                    if !local.contains(&process) && !b.reports.contains_key(&process) {
                        dead.push((process.clone(), "its session ended".to_owned()));
                    }
                    if !local.contains(&process) {
                        b.gone.remove(&process);
                        b.joined.remove(&process);
                        b.ready.remove(&process);
                    }
                }
            }
            for (process, status) in dead {
                let is_local = local.contains(&process);
                let pid = summaries.get(&process).and_then(|s| s.pid);
                let who = match pid {
                    Some(pid) if is_local => format!("worker `{process}` (pid {pid})"),
                    _ => format!("worker `{process}`"),
                };
                children.remove(&process).map(|mut c| c.child.wait());
                {
                    let mut b = lock(&self.board);
                    b.joined.remove(&process);
                    b.ready.remove(&process);
                }
                said_ready.remove(&process);
                match self.supervision {
                    Supervision::Restart { max } if is_local && restarts_used < max => {
                        restarts_used += 1;
                        say(&format!(
                            "{who} died ({status}); restarting it (restart {restarts_used} of {max})"
                        ));
                        let record = self.launch(&process, command)?;
                        if let Some(s) = summaries.get_mut(&process) {
                            s.pid = Some(record.child.id());
                            s.restarts += 1;
                            s.exit = None;
                        }
                        say(&format!(
                            "worker `{process}` started (pid {})",
                            record.child.id()
                        ));
                        children.insert(process, record);
                    }
                    Supervision::Restart { .. } if !is_local => {
                        say(&format!(
                            "{who} left ({status}); waiting for it to join again"
                        ));
                    }
                    _ => {
                        let failure = format!("{who} died: {status}");
                        say(&failure);
                        return Ok((EndReason::Failed, Some(failure)));
                    }
                }
            }
            let b = lock(&self.board);
            for process in b.ready.iter() {
                if said_ready.insert(process.clone()) {
                    tracing::info!("worker `{process}` ready");
                }
            }
            let all_ready = b.expected.iter().all(|p| b.ready.contains(p));
            let failed = b
                .reports
                .iter()
                .find(|(_, r)| r.reason == EndReason::Failed)
                .map(|(p, r)| {
                    format!(
                        "in worker `{p}`: {}",
                        r.failure.as_deref().unwrap_or("a module failed")
                    )
                });
            let all_reported = b.expected.iter().all(|p| b.reports.contains_key(p));
            let missing: Vec<String> = b
                .expected
                .iter()
                .filter(|p| !b.ready.contains(*p))
                .map(|p| {
                    let host = self
                        .processes
                        .iter()
                        .find(|(n, _)| n == p)
                        .map_or("", |(_, h)| h.as_str());
                    if local.contains(p) {
                        if b.joined.contains_key(p) {
                            format!("`{p}` (started here, joined, its links not matched yet)")
                        } else {
                            format!("`{p}` (started here, not joined)")
                        }
                    } else {
                        format!(
                            "`{p}` (host `{host}`: start it there with `worker --connect {} \
                             --process {p} <blueprint>`)",
                            self.endpoints().join(" --connect ")
                        )
                    }
                })
                .collect();
            drop(b);
            if let Some(failure) = failed {
                return Ok((EndReason::Failed, Some(failure)));
            }
            if run_started.is_none() {
                if all_ready {
                    lock(&self.board).go = true;
                    run_started = Some(Instant::now());
                    say(&format!(
                        "every worker is ready ({}): the sources start",
                        self.processes.len()
                    ));
                    let offers = lock(&self.board).shared_memory.clone();
                    for warning in shared_memory_warnings(&self.processes, &offers) {
                        tracing::warn!("{warning}");
                        say(&warning);
                    }
                } else if began.elapsed() >= self.options.join_timeout {
                    return Err(ClusterError::JoinTimeout {
                        missing: missing.join(", "),
                        timeout: self.options.join_timeout,
                    });
                }
            } else if all_reported {
                return Ok((EndReason::Finished, None));
            } else if last_progress.elapsed() >= Duration::from_secs(1) {
                last_progress = Instant::now();
                let live: Vec<(String, RunReport)> = lock(&self.board)
                    .live
                    .iter()
                    .map(|(p, stats)| {
                        (
                            p.clone(),
                            RunReport::new(EndReason::Stopped, None, Vec::new(), stats.clone()),
                        )
                    })
                    .collect();
                progress(&merge(EndReason::Stopped, None, Vec::new(), live).stats);
            }
        }
    }
}

/// The warnings for the workers of one host that cannot share memory: a worker without
/// it gets the raw frames of its neighbours copied through TCP, silently.
fn shared_memory_warnings(
    processes: &[(String, String)],
    offers: &BTreeMap<String, bool>,
) -> Vec<String> {
    let mut warnings = Vec::new();
    let hosts: BTreeSet<&str> = processes.iter().map(|(_, h)| h.as_str()).collect();
    for host in hosts {
        let on_host: Vec<&String> = processes
            .iter()
            .filter(|(_, h)| h == host)
            .map(|(p, _)| p)
            .collect();
        let with: Vec<&str> = on_host
            .iter()
            .filter(|p| offers.get(p.as_str()) == Some(&true))
            .map(|p| p.as_str())
            .collect();
        let without: Vec<&str> = on_host
            .iter()
            .filter(|p| offers.get(p.as_str()) == Some(&false))
            .map(|p| p.as_str())
            .collect();
        if !with.is_empty() && !without.is_empty() {
            warnings.push(format!(
                "shared memory: worker{} {} on host `{host}` run{} without it ({} {} it): \
                 large frames between them are copied through TCP; enable it on both ends \
                 (zenoh's `transport/shared_memory/enabled`)",
                if without.len() == 1 { "" } else { "s" },
                without.join(", "),
                if without.len() == 1 { "s" } else { "" },
                with.join(", "),
                if with.len() == 1 { "has" } else { "have" },
            ));
        }
    }
    warnings
}

/// Frames a worker may have in its shared-memory pool per stream it sends raw to a
/// process of its own host: one being written, one in flight, one being read.
const SHM_SLOTS_PER_LINK: usize = 3;

/// The room for one frame in a worker's pool: a 1080p RGBA image (8.3 MB) fits; a 720p
/// RGB one is 2.76 MB. Messages are not sized in the plan, so this is a bound, not a
/// measurement; a frame that finds the pool full travels as bytes instead.
const SHM_SLOT_BYTES: usize = 8 << 20;

/// The shared-memory pool of the worker of `process`: room for three frames of 8 MiB
/// (one being written, one in flight, one being read; a 1080p RGBA image fits) per raw
/// link to another process of its host, at least zenoh's 16 MiB, at most 1 GiB.
pub fn shared_memory_pool(plan: &Plan, process: &Placement) -> usize {
    let links = plan.process(process).map_or(0, |view| {
        view.outgoing_links()
            .filter(|l| l.locality == Locality::SameHost && !l.payload.is_encoded())
            .count()
    });
    (links * SHM_SLOTS_PER_LINK * SHM_SLOT_BYTES).clamp(SharedMemory::DEFAULT_POOL_BYTES, 1 << 30)
}

/// One report of the reports of every worker.
fn merge(
    reason: EndReason,
    failure: Option<String>,
    mut stragglers: Vec<String>,
    reports: Vec<(String, RunReport)>,
) -> RunReport {
    let mut stats = RunStats::default();
    for (process, report) in reports {
        let s = report.stats;
        stats.elapsed = stats.elapsed.max(s.elapsed);
        stats.instances.extend(s.instances);
        stats.outputs.extend(s.outputs);
        stats.inputs.extend(s.inputs);
        stats.links.extend(s.links);
        stats.codecs.extend(s.codecs);
        stats.taps.extend(s.taps);
        stats.wire.extend(s.wire);
        stragglers.extend(
            report
                .stragglers
                .into_iter()
                .map(|t| format!("{t} (in {process})")),
        );
    }
    RunReport::new(reason, failure, stragglers, stats)
}

// ----------------------------------------------------------------------------------
// Worker
// ----------------------------------------------------------------------------------

/// How a worker joins its run.
#[derive(Clone, Debug)]
pub struct WorkerOptions {
    /// The process of the plan it runs: `host/process`, or the process alone when that
    /// is unique.
    pub process: String,
    /// The run to join (default: whichever coordinator answers at `connect`).
    pub run_id: Option<String>,
    /// The coordinator's endpoints.
    pub connect: Vec<String>,
    /// Where this worker listens for the other workers (default `tcp/127.0.0.1:0`). A
    /// worker on another host gives an address the others can reach.
    pub listen: Vec<String>,
    /// How long to look for the coordinator, and to wait for its links to be matched.
    pub join_timeout: Duration,
    /// The runtime's stop deadline.
    pub stop_deadline: Duration,
    /// Stop when standard input closes (a worker started by a coordinator: when the
    /// coordinator ends, however it ends, so does the worker).
    pub watch_stdin: bool,
    /// Offer shared memory to the workers of this host (default on; its pool is sized
    /// from the plan: [`shared_memory_pool`]).
    pub shared_memory: bool,
    /// A zenoh configuration file for the worker's session ([`ZenohOptions::config_file`]).
    pub zenoh_config: Option<PathBuf>,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            process: String::new(),
            run_id: None,
            connect: Vec::new(),
            listen: vec!["tcp/127.0.0.1:0".to_owned()],
            join_timeout: Duration::from_secs(30),
            stop_deadline: Duration::from_secs(2),
            watch_stdin: false,
            shared_memory: true,
            zenoh_config: None,
        }
    }
}

/// The runtime's view of the worker's session: everything but `close`, which the worker
/// does itself once its report is sent.
struct KeepOpen(ZenohTransport);

impl Transport for KeepOpen {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn publisher(
        &self,
        key: &str,
        qos: streamwire_core::Qos,
    ) -> Result<Arc<dyn Publisher>, TransportError> {
        self.0.publisher(key, qos)
    }

    fn subscribe(
        &self,
        key: &str,
        qos: streamwire_core::Qos,
        sink: FrameSink,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        self.0.subscribe(key, qos, sink)
    }

    fn announce(&self, key: &str, partition: &str) {
        self.0.announce(key, partition);
    }

    fn close(&self) {}
}

/// Asks `key` with `request`; the first answer, with the key it came from.
fn ask<Q: Serialize, A: for<'de> Deserialize<'de>>(
    session: &zenoh::Session,
    key: &str,
    request: &Q,
) -> Result<Option<(String, A)>, ClusterError> {
    let payload = serde_json::to_vec(request).map_err(engine)?;
    let replies = session
        .get(key)
        .payload(payload)
        .timeout(QUERY_TIMEOUT)
        .wait()
        .map_err(engine)?;
    while let Ok(reply) = replies.recv() {
        if let Ok(sample) = reply.result()
            && let Ok(answer) = serde_json::from_slice::<A>(&sample.payload().to_bytes())
        {
            return Ok(Some((sample.key_expr().as_str().to_owned(), answer)));
        }
    }
    Ok(None)
}

/// Runs process `options.process` of `runnable` as a worker of the run a coordinator
/// leads: joins (refused when its plan differs), starts its part of the plan when every
/// process is ready, stops when told (or when `stop` is set, its standard input closes
/// with `watch_stdin`, or the coordinator goes silent), and sends its report. `say` gets
/// each event for the user.
pub fn run_worker(
    runnable: RunnablePlan,
    options: &WorkerOptions,
    stop: &AtomicBool,
    say: &mut dyn FnMut(&str),
) -> Result<RunReport, ClusterError> {
    let process = resolve_process(runnable.plan(), &options.process)?;
    let hash = plan_hash(runnable.plan());
    let session_transport = ZenohTransport::open(&ZenohOptions {
        run_id: options.run_id.clone().unwrap_or_else(|| "join".to_owned()),
        listen: options.listen.clone(),
        connect: options.connect.clone(),
        gossip: true,
        shared_memory: SharedMemory {
            enabled: options.shared_memory,
            pool_bytes: runnable
                .plan()
                .processes()
                .iter()
                .find(|p| p.placement().to_string() == process)
                .map_or(SharedMemory::DEFAULT_POOL_BYTES, |p| {
                    shared_memory_pool(runnable.plan(), p.placement())
                }),
        },
        config_file: options.zenoh_config.clone(),
    })?;
    let result = work(
        runnable,
        options,
        &process,
        &hash,
        &session_transport,
        stop,
        say,
    );
    session_transport.close();
    result
}

fn work(
    runnable: RunnablePlan,
    options: &WorkerOptions,
    process: &str,
    hash: &str,
    base: &ZenohTransport,
    stop: &AtomicBool,
    say: &mut dyn FnMut(&str),
) -> Result<RunReport, ClusterError> {
    let stdin_closed = Arc::new(AtomicBool::new(false));
    if options.watch_stdin {
        let closed = stdin_closed.clone();
        let spawned = std::thread::Builder::new()
            .name("sw stdin watch".to_owned())
            .spawn(move || {
                let mut buffer = [0u8; 64];
                let mut stdin = std::io::stdin();
                while matches!(stdin.read(&mut buffer), Ok(n) if n > 0) {}
                closed.store(true, Ordering::SeqCst);
            });
        if let Err(error) = spawned {
            tracing::warn!("cannot watch standard input: {error}");
        }
    }
    // Join.
    let session = base.session();
    let join_key = format!(
        "streamwire/{}/@cluster/join",
        options.run_id.as_deref().unwrap_or("*")
    );
    let request = JoinRequest {
        process: process.to_owned(),
        plan_hash: hash.to_owned(),
        pid: std::process::id(),
        shared_memory: base.shared_memory(),
    };
    let began = Instant::now();
    let reply: JoinReply = loop {
        if stop.load(Ordering::SeqCst) || stdin_closed.load(Ordering::SeqCst) {
            return Ok(RunReport::new(
                EndReason::Stopped,
                None,
                Vec::new(),
                RunStats::default(),
            ));
        }
        if let Some((_, reply)) = ask::<_, JoinReply>(session, &join_key, &request)? {
            break reply;
        }
        if began.elapsed() >= options.join_timeout {
            return Err(ClusterError::NoCoordinator {
                endpoints: options.connect.join(", "),
                timeout: options.join_timeout,
            });
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    if !reply.accepted {
        return Err(ClusterError::Refused {
            process: process.to_owned(),
            run_id: reply.run_id,
            reason: reply.reason,
        });
    }
    let transport = base.with_run_id(&reply.run_id)?;
    let cluster = |what: &str| format!("{}/@cluster/{what}", transport.prefix());
    let _token = session
        .liveliness()
        .declare_token(cluster(&format!("worker/{process}")))
        .wait()
        .map_err(engine)?;
    say(&format!(
        "worker `{process}` joined run `{}` (plan {hash})",
        reply.run_id
    ));
    // Start, held at the gate.
    let gate = StartGate::closed();
    let mut handle = Runtime::start(
        runnable,
        RunOptions {
            local: Some(process.to_owned()),
            transport: Some(Arc::new(KeepOpen(transport.clone()))),
            start_gate: Some(gate.clone()),
            stop_deadline: options.stop_deadline,
            ..RunOptions::default()
        },
    )?;
    let started = Instant::now();
    let mut matched = false;
    let mut warned_unmatched = false;
    let mut last_answer = Instant::now();
    let mut stopped_by: Option<&str> = None;
    let mut last_stats = Instant::now();
    loop {
        if !matched {
            let unmatched = handle.unmatched_links();
            if unmatched.is_empty() {
                matched = true;
            } else if started.elapsed() >= options.join_timeout && !warned_unmatched {
                warned_unmatched = true;
                say(&format!(
                    "worker `{process}`: no subscriber yet for {} after {:?}",
                    unmatched.join(", "),
                    options.join_timeout
                ));
            }
        }
        let state = ask::<_, StateReply>(
            session,
            &cluster("state"),
            &StateRequest {
                process: process.to_owned(),
                ready: matched,
                stats: (gate.is_open() && last_stats.elapsed() >= Duration::from_secs(1)).then(
                    || {
                        last_stats = Instant::now();
                        handle.stats()
                    },
                ),
            },
        )?;
        match state {
            Some((_, state)) => {
                last_answer = Instant::now();
                if state.go && matched && !gate.is_open() {
                    gate.open();
                }
                if state.stop {
                    stopped_by = Some("the coordinator");
                }
            }
            None if last_answer.elapsed() >= COORDINATOR_SILENCE => {
                stopped_by = Some("the coordinator stopped answering");
            }
            None => {}
        }
        if stop.load(Ordering::SeqCst) {
            stopped_by = Some("a stop request");
        }
        if stdin_closed.load(Ordering::SeqCst) {
            stopped_by = Some("its standard input closed (the coordinator is gone)");
        }
        if stopped_by.is_some() || handle.poll_end().is_some() {
            break;
        }
        std::thread::sleep(POLL);
    }
    if let Some(by) = stopped_by {
        tracing::info!("worker `{process}` stops: {by}");
        handle.stop();
    }
    let report = handle.wait();
    // The report, acknowledged (a few tries: the coordinator may be busy).
    let request = ReportRequest {
        process: process.to_owned(),
        report: report.clone(),
    };
    for _ in 0..3 {
        if ask::<_, bool>(session, &cluster("report"), &request)?.is_some() {
            break;
        }
    }
    // Keep the session until the run ends: frames this worker sent last (the end of a
    // stream) may still be on their way, and closing the session would drop them.
    let mut last_answer = Instant::now();
    while last_answer.elapsed() < COORDINATOR_SILENCE
        && !stop.load(Ordering::SeqCst)
        && !stdin_closed.load(Ordering::SeqCst)
    {
        let state = ask::<_, StateReply>(
            session,
            &cluster("state"),
            &StateRequest {
                process: process.to_owned(),
                ready: false,
                stats: None,
            },
        )?;
        match state {
            Some((_, state)) if state.stop => break,
            Some(_) => last_answer = Instant::now(),
            None => {}
        }
        std::thread::sleep(POLL);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn processes(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(p, h)| ((*p).to_owned(), (*h).to_owned()))
            .collect()
    }

    #[test]
    fn workers_of_one_host_that_disagree_about_shared_memory_are_named() {
        let processes = processes(&[
            ("robot/cam", "robot"),
            ("robot/ui", "robot"),
            ("laptop/web", "laptop"),
        ]);
        let offers: BTreeMap<String, bool> = [
            ("robot/cam".to_owned(), true),
            ("robot/ui".to_owned(), false),
            ("laptop/web".to_owned(), false),
        ]
        .into();
        assert_eq!(
            shared_memory_warnings(&processes, &offers),
            [
                "shared memory: worker robot/ui on host `robot` runs without it (robot/cam has \
              it): large frames between them are copied through TCP; enable it on both ends \
              (zenoh's `transport/shared_memory/enabled`)"
            ]
        );
        // One host alone, or every worker of a host alike: nothing to say.
        let alike: BTreeMap<String, bool> = [
            ("robot/cam".to_owned(), true),
            ("robot/ui".to_owned(), true),
            ("laptop/web".to_owned(), false),
        ]
        .into();
        assert!(shared_memory_warnings(&processes, &alike).is_empty());
    }
}
