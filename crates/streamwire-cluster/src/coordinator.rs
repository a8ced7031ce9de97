//! The coordinator's session: the queryables workers join, report and say their state
//! through, the liveliness subscriber that sees a worker's session end, and the board
//! they share. Each of them turns what it hears into an [`Event`] for the supervisor
//! (`supervise.rs`), which runs the run.

use parking_lot::{Mutex, MutexGuard};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

use streamwire_core::log::{BurstLog, chain, more_since};
use streamwire_graph::{Plan, Supervision};
use streamwire_runtime::{RunReport, RunStats};
use streamwire_zenoh::{SharedMemory, ZenohOptions, ZenohTransport};
use zenoh::Wait;

use crate::access::{self, AccessRules, Credential, RunAuthority};
use crate::protocol::{
    self, JoinReply, JoinRequest, Keys, ReportRequest, StateReply, StateRequest,
};
use crate::supervise::{Event, Supervisor};
use crate::{ClusterError, ClusterReport, engine, logs, plan_hash};

/// Who may join a run and what each member may say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// Closed (the default): a certificate per member made for this run, mutual TLS on
    /// every link, and zenoh's access control generated from the plan
    /// ([`access`](crate::access)).
    #[default]
    Closed,
    /// Open to every process that reaches an endpoint: any of them may read, write and
    /// stop the run. Said on every screen and in the report.
    Insecure,
}

/// How a coordinator runs.
#[derive(Clone, Debug)]
pub struct CoordinatorOptions {
    /// The run's id (the first chunk of every key after `streamwire/`).
    pub run_id: String,
    /// Where the coordinator listens for workers (default `tcp/127.0.0.1:0`: loopback,
    /// a free port; a closed run listens on `tls/` at the same address). Workers on
    /// other hosts need an address they can reach.
    pub listen: Vec<String>,
    /// Start the processes of this host here (`None`: every process of the plan, a
    /// rehearsal of all its hosts on this machine). The others are started by hand.
    pub host: Option<String>,
    /// How long to wait for every worker to be ready (default 30 s).
    pub join_timeout: Duration,
    /// A worker the coordinator has not heard from for this long while the run goes on
    /// (it says its state every 100 ms) is treated as dead: a local one is killed and the
    /// blueprint's supervision applies, a remote one is named and the run stops (default
    /// 30 s, three of zenoh's default leases). A worker paused for less receives again
    /// when it resumes.
    pub peer_timeout: Duration,
    /// How long workers have to stop and report (default 2 s).
    pub stop_deadline: Duration,
    /// Stop after this long (default: until stopped, or every worker finished).
    pub duration: Option<Duration>,
    /// A zenoh configuration file for the coordinator's session (TLS, authentication,
    /// access control: [`ZenohOptions::config_file`]). It replaces the closed run's own
    /// credentials and rules: the file's owner brings their own.
    pub zenoh_config: Option<PathBuf>,
    /// Closed (default) or insecure; ignored with `zenoh_config`.
    pub access: Access,
    /// Where a closed run writes its secret files: the tools' and those of the processes
    /// started on other hosts (default [`access::run_folder`] of the run; removed at the
    /// run's end).
    pub secret_folder: Option<PathBuf>,
    /// How to tell the user to start a process this coordinator does not start (another
    /// host's), said when it has not joined in time; without it the process is only named.
    pub start_hint: Option<StartHint>,
}

impl Default for CoordinatorOptions {
    fn default() -> Self {
        CoordinatorOptions {
            run_id: format!("run{}", std::process::id()),
            listen: vec!["tcp/127.0.0.1:0".to_owned()],
            host: None,
            join_timeout: Duration::from_secs(30),
            peer_timeout: Duration::from_secs(30),
            stop_deadline: Duration::from_secs(2),
            duration: None,
            zenoh_config: None,
            access: Access::Closed,
            secret_folder: None,
            start_hint: None,
        }
    }
}

/// What the coordinator gives the command that starts a worker (and the advice for a
/// worker started by hand).
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
    /// In a closed run, a worker started here reads its credential from its standard
    /// input first (a line `end` ends it; the input then stays open).
    pub credential_on_stdin: bool,
    /// In a closed run, the secret file of a process started on another host, for the
    /// operator to copy there and give as `--secret-file`.
    pub secret_file: Option<PathBuf>,
}

/// The advice for starting a worker by hand (the command line is the caller's: this crate
/// knows nothing of it), e.g. `start it there with "worker --connect ..."`.
#[derive(Clone)]
pub struct StartHint(Arc<dyn Fn(&Launch) -> String + Send + Sync>);

impl StartHint {
    /// A hint written by `advice` for each process not started here.
    pub fn new(advice: impl Fn(&Launch) -> String + Send + Sync + 'static) -> StartHint {
        StartHint(Arc::new(advice))
    }

    /// The advice for `launch`.
    pub fn advise(&self, launch: &Launch) -> String {
        (self.0)(launch)
    }
}

impl fmt::Debug for StartHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StartHint(..)")
    }
}

/// What the queryables learn from the workers and answer them with; the supervisor reads
/// it and sets `go` and `stop`.
#[derive(Default)]
pub(crate) struct Board {
    /// The coordinator's plan hash, which a joining worker must match.
    pub(crate) plan_hash: String,
    /// The run's id, told to every joining worker.
    pub(crate) run_id: String,
    /// Every process of the plan, `host/process`.
    pub(crate) expected: Vec<String>,
    /// The joined workers and their pids.
    pub(crate) joined: BTreeMap<String, u32>,
    /// The workers whose outgoing links are all matched.
    pub(crate) ready: BTreeSet<String>,
    /// The reports that arrived.
    pub(crate) reports: BTreeMap<String, RunReport>,
    /// The latest counters of each worker, while it runs.
    pub(crate) live: BTreeMap<String, RunStats>,
    /// When each joined worker was last heard from (its join, its state).
    pub(crate) heard: BTreeMap<String, Instant>,
    /// Whether each joined worker offers shared memory.
    pub(crate) shared_memory: BTreeMap<String, bool>,
    /// Every process is ready: the sources may start.
    pub(crate) go: bool,
    /// The run is over: every worker stops.
    pub(crate) stop: bool,
    /// Taps found silent, by receiving process, told with its next state reply.
    pub(crate) resubscribe: BTreeMap<String, Vec<u64>>,
}

/// The board. Every write to it is a whole insertion or removal, so what a panicking
/// callback left is consistent (the lock is not poisoned: the failure policy).
pub(crate) fn lock(board: &Mutex<Board>) -> MutexGuard<'_, Board> {
    board.lock()
}

/// The coordinator of a distributed run: its zenoh session and the queryables workers
/// join through. [`run`](Coordinator::run) starts the local workers and supervises
/// the run to its end.
pub struct Coordinator {
    pub(crate) transport: ZenohTransport,
    pub(crate) board: Arc<Mutex<Board>>,
    pub(crate) options: CoordinatorOptions,
    pub(crate) supervision: Supervision,
    /// Every process of the plan with its host.
    pub(crate) processes: Vec<(String, String)>,
    /// What the queryables, the liveliness subscriber and the children's waiters say.
    pub(crate) events: Receiver<Event>,
    /// For the children's waiters.
    pub(crate) sender: Sender<Event>,
    /// A closed run's credentials and secret files (`None`: insecure, or a zenoh
    /// configuration file of the user's).
    pub(crate) closed: Option<ClosedRun>,
    /// Declared last, dropped first: the queryables and the liveliness subscriber go
    /// before the session closes.
    _declarations: Declarations,
}

/// Asks the workers of a run to declare again the subscriptions of taps found silent
/// (see [`Coordinator::resubscriber`]).
#[derive(Clone)]
pub struct Resubscriber {
    board: Arc<Mutex<Board>>,
}

impl Resubscriber {
    /// Asks the worker of `link`'s receiving process to declare the subscription of the
    /// tap's own ingress again (told with its next state reply): what the coordinator
    /// does for a tap it found silent. Call it once per silence, as
    /// [`SilentLinks::observe`](crate::SilentLinks::observe) names it; `false` for a
    /// planned link, which this does not repair.
    pub fn ask(&self, link: &crate::SilentLink) -> bool {
        let Some(tap) = link.tap else {
            return false;
        };
        let mut board = lock(&self.board);
        let taps = board.resubscribe.entry(link.partition.clone()).or_default();
        if !taps.contains(&tap) {
            taps.push(tap);
        }
        true
    }
}

/// A closed run's credentials for the workers started here, and its secret files.
pub(crate) struct ClosedRun {
    /// The folder of the secret files, removed at the end.
    folder: PathBuf,
    /// The tools' secret file.
    tool_file: PathBuf,
    /// The credentials of the processes started here, handed over their standard input.
    local: BTreeMap<String, Credential>,
    /// The secret files of the processes started elsewhere.
    remote: BTreeMap<String, PathBuf>,
}

impl ClosedRun {
    /// The credential of local `process`, as its standard input gets it.
    pub(crate) fn credential_text(&self, process: &str) -> Option<String> {
        self.local.get(process).map(Credential::to_text)
    }
}

impl Drop for ClosedRun {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_dir_all(&self.folder) {
            tracing::warn!(
                "cannot remove the run's secret files in {}: {}",
                self.folder.display(),
                chain(&error)
            );
        }
    }
}

/// The coordinator's declarations, kept for as long as it runs.
struct Declarations {
    _queryables: Vec<zenoh::query::Queryable<()>>,
    _liveliness: zenoh::pubsub::Subscriber<()>,
    /// Its log records (the planner's warnings) on their way to `/rosout`.
    _logs: logs::LogLink,
}

/// The coordinator's name on its log records and their key (`@log/coordinator`).
const COORDINATOR_LOG_NAME: &str = crate::access::COORDINATOR;

impl fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Coordinator")
            .field("run_id", &self.options.run_id)
            .field("endpoints", &self.transport.locators())
            .finish_non_exhaustive()
    }
}

impl Coordinator {
    /// Opens the coordinator's session and starts answering workers of `plan`.
    pub fn start(plan: &Plan, options: CoordinatorOptions) -> Result<Coordinator, ClusterError> {
        let processes: Vec<(String, String)> = plan
            .processes()
            .iter()
            .map(|p| (p.placement().to_string(), p.placement().host().to_owned()))
            .collect();
        let is_closed = options.access == Access::Closed && options.zenoh_config.is_none();
        let (closed, settings, listen) = if is_closed {
            let (closed, settings) = close_run(plan, &options, &processes)?;
            (
                Some(closed),
                settings,
                access::closed_endpoints(&options.listen),
            )
        } else {
            (None, Default::default(), options.listen.clone())
        };
        let transport = ZenohTransport::open(&ZenohOptions {
            run_id: options.run_id.clone(),
            listen,
            connect: Vec::new(),
            gossip: true,
            // The coordinator carries no frames: without shared memory it holds no
            // segment of its own, nor maps the workers' (which would keep them alive).
            shared_memory: SharedMemory::off(),
            config_file: options.zenoh_config.clone(),
            settings,
        })?;
        let board = Arc::new(Mutex::new(Board {
            plan_hash: plan_hash(plan)?,
            run_id: options.run_id.clone(),
            expected: processes.iter().map(|(p, _)| p.clone()).collect(),
            ..Board::default()
        }));
        let (sender, events) = std::sync::mpsc::channel();
        let keys = Keys::new(transport.prefix());
        let session = transport.session();
        let declarations = Declarations {
            _queryables: vec![
                answer(session, &keys, "join", &board, &sender, join)?,
                answer(session, &keys, "state", &board, &sender, state)?,
                answer(session, &keys, "report", &board, &sender, report)?,
            ],
            _liveliness: declare_liveliness(session, &keys, &sender)?,
            _logs: {
                streamwire_msgs::log_hub::hub().set_process(COORDINATOR_LOG_NAME);
                logs::start(session, transport.prefix(), COORDINATOR_LOG_NAME, false)?
            },
        };
        Ok(Coordinator {
            transport,
            board,
            supervision: plan.supervision(),
            processes,
            options,
            events,
            sender,
            closed,
            _declarations: declarations,
        })
    }

    /// How the run is closed, for every screen and the report: `closed (...)`,
    /// `INSECURE (...)` or the user's zenoh configuration file.
    pub fn access_summary(&self) -> String {
        access_summary(&self.options, self.closed.is_some())
    }

    /// In a closed run, the secret file of `process`, started on another host (the
    /// operator copies it there and gives it as `--secret-file`).
    pub fn secret_file(&self, process: &str) -> Option<&std::path::Path> {
        self.closed
            .as_ref()
            .and_then(|c| c.remote.get(process))
            .map(PathBuf::as_path)
    }

    /// In a closed run, the tools' secret file (`topic --secret-file`; a tool on this
    /// host finds it by the run's id).
    pub fn tool_secret_file(&self) -> Option<&std::path::Path> {
        self.closed.as_ref().map(|c| c.tool_file.as_path())
    }

    /// Where workers connect (`tls/127.0.0.1:PORT` by default; `tcp/` in an insecure
    /// run).
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

    /// What a worker of `process` is started with.
    pub(crate) fn launch_of(&self, process: &str) -> Launch {
        Launch {
            process: process.to_owned(),
            run_id: self.options.run_id.clone(),
            connect: self.endpoints(),
            join_timeout: self.options.join_timeout,
            credential_on_stdin: self
                .closed
                .as_ref()
                .is_some_and(|c| c.local.contains_key(process)),
            secret_file: self
                .closed
                .as_ref()
                .and_then(|c| c.remote.get(process).cloned()),
        }
    }

    /// Starts the local workers (each by `command`, a command line of the worker for its
    /// [`Launch`]), waits until every process of the plan is ready, lets the sources
    /// start, supervises the workers until the run ends (every worker finished, one
    /// failed, `duration`, or `stop` set) and returns the merged report. `say` gets
    /// each event for the user (a worker started, joined, died, restarted).
    pub fn run(
        self,
        command: &dyn Fn(&Launch) -> std::process::Command,
        stop: &AtomicBool,
        say: &mut dyn FnMut(&str),
    ) -> Result<ClusterReport, ClusterError> {
        // One `say` for the events and what the workers' modules announce.
        let say = std::cell::RefCell::new(say);
        self.run_observed(
            command,
            stop,
            &mut |event| (*say.borrow_mut())(event),
            &mut |_| {},
            &mut |line| (*say.borrow_mut())(line),
        )
    }

    /// What asks a silent tap's worker to subscribe again (issue 50), kept while
    /// [`run_observed`](Coordinator::run_observed) runs: its `progress` calls it.
    pub fn resubscriber(&self) -> Resubscriber {
        Resubscriber {
            board: self.board.clone(),
        }
    }

    /// Like [`run`](Coordinator::run), and `progress` gets the workers' counters merged,
    /// about once a second while the sources run (for a status line); `announce` gets
    /// each line the workers' modules announced (a relay's address).
    pub fn run_observed(
        self,
        command: &dyn Fn(&Launch) -> std::process::Command,
        stop: &AtomicBool,
        say: &mut dyn FnMut(&str),
        progress: &mut dyn FnMut(&RunStats),
        announce: &mut dyn FnMut(&str),
    ) -> Result<ClusterReport, ClusterError> {
        Supervisor::new(&self, command, stop, say, progress, announce).run()
    }
}

/// Declares the queryable of `ask` (every worker's keys of it) whose every query carries
/// a `Q`: `handle` reads it against the board and gives the answer and, when there is
/// news, an [`Event`] for the supervisor. A query without a readable request, or whose
/// request names another process than its key, is logged and left unanswered (in a
/// closed run a key is its worker's alone: the access control lets nobody else ask on
/// it).
fn answer<Q, A, E>(
    session: &zenoh::Session,
    keys: &Keys,
    ask: &'static str,
    board: &Arc<Mutex<Board>>,
    events: &Sender<Event>,
    handle: impl Fn(&mut Board, Q) -> (A, E) + Send + Sync + 'static,
) -> Result<zenoh::query::Queryable<()>, ClusterError>
where
    Q: protocol::Named + for<'de> serde::Deserialize<'de>,
    A: serde::Serialize,
    E: IntoIterator<Item = Event>,
{
    let (board, events) = (board.clone(), events.clone());
    // Forged requests may come in floods: the first is said, the others counted.
    let misplaced = BurstLog::default();
    session
        .declare_queryable(keys.every(ask))
        .callback(move |query| {
            let Some(request) = protocol::request::<Q>(&query) else {
                return;
            };
            let key = query.key_expr().as_str();
            if Keys::process_of(ask, key) != Some(request.process()) {
                if let Some(unsaid) = misplaced.note() {
                    tracing::warn!(
                        "a {ask} request for `{}` on another process's key {key}: not \
                         answered{}",
                        request.process(),
                        more_since(unsaid)
                    );
                }
                return;
            }
            let (reply, news) = handle(&mut lock(&board), request);
            protocol::reply(&query, &reply);
            for event in news {
                // The supervisor may have ended: nobody left to tell.
                let _ = events.send(event);
            }
        })
        .wait()
        .map_err(engine(match ask {
            "join" => "the join queryable",
            "state" => "the state queryable",
            _ => "the report queryable",
        }))
}

/// Joining: a worker of another plan, another protocol or an unknown process is refused,
/// naming both sides; a joined one starts over (a restarted worker rejoins).
fn join(b: &mut Board, request: JoinRequest) -> (JoinReply, Option<Event>) {
    let refusal = refusal(b, &request);
    let reply = JoinReply {
        version: protocol::VERSION,
        accepted: refusal.is_none(),
        // infallible: an accepted join has no refusal to give
        reason: refusal.clone().unwrap_or_default(),
        run_id: b.run_id.clone(),
    };
    let event = match refusal {
        Some(reason) => Event::Refused(format!(
            "refused worker `{}` (pid {}): {reason}",
            request.process, request.pid
        )),
        None => {
            b.shared_memory
                .insert(request.process.clone(), request.shared_memory);
            b.joined.insert(request.process.clone(), request.pid);
            b.heard.insert(request.process.clone(), Instant::now());
            b.ready.remove(&request.process);
            b.reports.remove(&request.process);
            Event::Joined(request.process)
        }
    };
    (reply, Some(event))
}

/// Why `request` may not join, if it may not. A refusal never says the coordinator's
/// plan hash: whoever learns it could join with it.
fn refusal(board: &Board, request: &JoinRequest) -> Option<String> {
    let joined = board.joined.get(&request.process);
    if request.version != protocol::VERSION {
        Some(format!(
            "the worker speaks protocol version {} and the coordinator version {}: start both \
             from the same build",
            request.version,
            protocol::VERSION
        ))
    } else if !board.expected.contains(&request.process) {
        Some(format!(
            "the coordinator's plan has no process `{}` (its processes: {})",
            request.process,
            board.expected.join(", ")
        ))
    } else if let Some(pid) = joined.filter(|pid| **pid != request.pid) {
        Some(format!(
            "process `{}` has already joined (pid {pid}): a second worker for it is refused",
            request.process
        ))
    } else if request.plan_hash != board.plan_hash {
        Some(format!(
            "the worker's plan (hash {}) differs from the coordinator's: start the worker with \
             the same blueprint and settings (`-o`, environment) as `run`",
            request.plan_hash
        ))
    } else {
        streamwire_transport::FORMAT_VERSIONS
            .iter()
            .find(|v| !request.frame_versions.contains(v))
            .map(|missing| {
                format!(
                    "the worker reads wire frame {} and the run's processes send version \
                     {missing} (this build reads and writes {}): start both from the same \
                     build",
                    versions(&request.frame_versions),
                    versions(&streamwire_transport::FORMAT_VERSIONS)
                )
            })
    }
}

/// `version 1`, `versions 1, 2`.
fn versions(versions: &[u16]) -> String {
    let list: Vec<String> = versions.iter().map(ToString::to_string).collect();
    let plural = if list.len() == 1 { "" } else { "s" };
    format!("version{plural} {}", list.join(", "))
}

/// A joined worker's state (ready, counters), answered with the run's (go, stop).
fn state(b: &mut Board, request: StateRequest) -> (StateReply, Vec<Event>) {
    let mut became_ready = false;
    if b.joined.contains_key(&request.process) {
        b.heard.insert(request.process.clone(), Instant::now());
        if let Some(stats) = request.stats {
            b.live.insert(request.process.clone(), stats);
        }
        if request.ready {
            became_ready = b.ready.insert(request.process.clone());
        }
    }
    let resubscribe_taps = if b.joined.contains_key(&request.process) {
        // infallible: no queued request for this process is an empty list
        b.resubscribe.remove(&request.process).unwrap_or_default()
    } else {
        Vec::new()
    };
    let reply = StateReply {
        go: b.go,
        stop: b.stop,
        resubscribe_taps,
    };
    let mut news = Vec::new();
    if !request.notices.is_empty() {
        news.push(Event::Announced(request.notices));
    }
    if became_ready {
        news.push(Event::Ready(request.process));
    }
    (reply, news)
}

/// A worker's report, acknowledged.
fn report(b: &mut Board, request: ReportRequest) -> (bool, Option<Event>) {
    b.reports.insert(request.process.clone(), request.report);
    (true, Some(Event::Reported(request.process)))
}

/// A worker's liveliness token going away: its session ended (even on another host).
fn declare_liveliness(
    session: &zenoh::Session,
    keys: &Keys,
    events: &Sender<Event>,
) -> Result<zenoh::pubsub::Subscriber<()>, ClusterError> {
    let events = events.clone();
    let prefix = keys.worker_prefix();
    session
        .liveliness()
        .declare_subscriber(format!("{prefix}**"))
        .callback(move |sample| {
            if sample.kind() == zenoh::sample::SampleKind::Delete
                && let Some(process) = sample.key_expr().as_str().strip_prefix(&prefix)
            {
                let _ = events.send(Event::Gone(process.to_owned()));
            }
        })
        .wait()
        .map_err(engine("the workers' liveliness subscriber"))
}

/// A closed run's credentials: the coordinator's own session settings, the local
/// workers' credentials (kept for their standard input), and the secret files of the
/// tools and of the processes started elsewhere.
fn close_run(
    plan: &Plan,
    options: &CoordinatorOptions,
    processes: &[(String, String)],
) -> Result<(ClosedRun, streamwire_zenoh::Settings), ClusterError> {
    let run_id = &options.run_id;
    let authority = RunAuthority::new(run_id)?;
    let rules = AccessRules::from_plan(plan, run_id);
    let settings = authority.issue(access::COORDINATOR)?.zenoh_settings(&rules);
    let folder = options
        .secret_folder
        .clone()
        .unwrap_or_else(|| access::run_folder(run_id));
    let mut closed = ClosedRun {
        tool_file: access::secret_file(&folder, access::TOOL),
        folder,
        local: BTreeMap::new(),
        remote: BTreeMap::new(),
    };
    authority
        .issue(access::TOOL)?
        .write_file(&closed.tool_file)?;
    for (process, host) in processes {
        let credential = authority.issue(process)?;
        if options.host.as_ref().is_none_or(|h| h == host) {
            closed.local.insert(process.clone(), credential);
        } else {
            let file = access::secret_file(&closed.folder, process);
            credential.write_file(&file)?;
            closed.remote.insert(process.clone(), file);
        }
    }
    Ok((closed, streamwire_zenoh::Settings(settings)))
}

/// The run's access, said on every screen and in the report.
fn access_summary(options: &CoordinatorOptions, closed: bool) -> String {
    match (&options.zenoh_config, closed) {
        (Some(file), _) => format!(
            "as configured by zenoh configuration file {} (no credentials made by the run)",
            file.display()
        ),
        (None, true) => "closed: a certificate per process, mutual TLS, access control from \
                         the plan"
            .to_owned(),
        (None, false) => {
            "INSECURE: open to every process that reaches an endpoint (--insecure)".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board() -> Board {
        Board {
            plan_hash: "00000000000000aa".to_owned(),
            run_id: "lab".to_owned(),
            expected: vec!["robot/sensors".to_owned(), "laptop/ui".to_owned()],
            ..Board::default()
        }
    }

    fn join(version: u32, process: &str, plan_hash: &str) -> JoinRequest {
        JoinRequest {
            version,
            process: process.to_owned(),
            plan_hash: plan_hash.to_owned(),
            pid: 7,
            shared_memory: false,
            frame_versions: streamwire_transport::FORMAT_VERSIONS.to_vec(),
        }
    }

    #[test]
    fn a_worker_that_reads_only_frame_version_one_is_refused_naming_both_versions() {
        let mut request = join(protocol::VERSION, "laptop/ui", "00000000000000aa");
        request.frame_versions = vec![1];
        assert_eq!(
            refusal(&board(), &request).as_deref(),
            Some(
                "the worker reads wire frame version 1 and the run's processes send version 2 \
                 (this build reads and writes versions 1, 2): start both from the same build"
            )
        );
        // A worker of this protocol that does not say which versions it reads reads 1.
        let silent =
            r#"{"version":3,"process":"laptop/ui","plan_hash":"00000000000000aa","pid":7}"#;
        let request: JoinRequest = serde_json::from_str(silent).unwrap();
        assert_eq!(request.frame_versions, [1]);
        assert!(
            refusal(&board(), &request)
                .unwrap()
                .contains("frame version 1 ")
        );
    }

    #[test]
    fn a_join_of_the_same_plan_protocol_and_a_planned_process_is_accepted() {
        assert_eq!(
            refusal(
                &board(),
                &join(protocol::VERSION, "laptop/ui", "00000000000000aa")
            ),
            None
        );
    }

    #[test]
    fn a_worker_of_another_protocol_is_refused_naming_both_versions() {
        let reason = refusal(&board(), &join(1, "laptop/ui", "00000000000000aa"));
        assert_eq!(
            reason.as_deref(),
            Some(
                "the worker speaks protocol version 1 and the coordinator version 3: start \
                 both from the same build"
            )
        );
    }

    #[test]
    fn a_worker_too_old_to_say_its_version_speaks_version_one() {
        let old = r#"{"process":"laptop/ui","plan_hash":"00000000000000aa","pid":7}"#;
        let request: JoinRequest = serde_json::from_str(old).unwrap();
        assert_eq!(request.version, 1);
        assert!(refusal(&board(), &request).is_some());
    }

    #[test]
    fn an_unplanned_process_and_another_plan_are_refused_naming_both_sides() {
        assert_eq!(
            refusal(
                &board(),
                &join(protocol::VERSION, "robot/ui", "00000000000000aa")
            )
            .as_deref(),
            Some(
                "the coordinator's plan has no process `robot/ui` (its processes: \
                 robot/sensors, laptop/ui)"
            )
        );
        let reason = refusal(
            &board(),
            &join(protocol::VERSION, "laptop/ui", "00000000000000bb"),
        );
        assert_eq!(
            reason.as_deref(),
            Some(
                "the worker's plan (hash 00000000000000bb) differs from the coordinator's: \
                 start the worker with the same blueprint and settings (`-o`, environment) as \
                 `run`"
            )
        );
    }

    #[test]
    fn a_second_join_for_a_joined_process_is_refused_naming_it() {
        let mut b = board();
        b.joined.insert("laptop/ui".to_owned(), 7);
        let mut second = join(protocol::VERSION, "laptop/ui", "00000000000000aa");
        second.pid = 8;
        assert_eq!(
            refusal(&b, &second).as_deref(),
            Some(
                "process `laptop/ui` has already joined (pid 7): a second worker for it is \
                 refused"
            )
        );
        // The same worker asking again (its answer was lost) is not a second one.
        second.pid = 7;
        assert_eq!(refusal(&b, &second), None);
    }
}
