//! A worker: runs one process of a plan in the run of a coordinator. It joins (refused
//! when its plan or protocol differs), starts its part of the plan held at the start gate,
//! says its state until told to go and then to stop, and sends its report.

use std::io::Read as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use streamwire_graph::RunnablePlan;
use streamwire_runtime::{
    EndReason, RunHandle, RunOptions, RunReport, RunStats, Runtime, StartGate,
};
use streamwire_transport::{FrameSink, Publisher, Subscription, Transport, TransportError};
use streamwire_zenoh::{SharedMemory, ZenohOptions, ZenohTransport};
use zenoh::Wait;

use crate::access::{AccessRules, Credential, closed_endpoints};
use crate::protocol::{
    self, JoinReply, JoinRequest, Keys, ReportRequest, StateReply, StateRequest,
};
use crate::{ClusterError, engine, logs, plan_hash, resolve_process, shared_memory_pool};

/// How often a worker asks the coordinator for the run's state (and says its own).
const POLL: Duration = Duration::from_millis(100);

/// A worker that has heard nothing from its coordinator for this long stops.
const COORDINATOR_SILENCE: Duration = Duration::from_secs(5);

/// The same for a worker its coordinator started (`watch_stdin`): the coordinator's end,
/// however it ends, closes the worker's standard input at once, so silence only has to
/// catch a coordinator that hangs. A coordinator starved of CPU (a loaded machine: an
/// hour's soak at load average 25-40 on 2 cores) can miss its 100 ms answers for more
/// than 5 s while its workers still run and exchange frames; three workers stopping then
/// ended their part of the run for nothing.
const STARTED_WORKER_COORDINATOR_SILENCE: Duration = Duration::from_secs(30);

/// Two polls further apart than this mean the worker itself did not run in between
/// (stopped by SIGSTOP, a suspended machine, starved of CPU): a poll takes at most the
/// query's timeout and the pause between polls.
const STALL: Duration = Duration::from_secs(2);

/// How long a worker has waited for its coordinator *while it ran*. A worker stopped
/// (SIGSTOP) past the silence and then resumed used to find the silence long over at its
/// first unanswered poll (its links to the others were still being made again after
/// zenoh's lease closed them) and stopped itself: it then received nothing more, quietly
/// (issue 31). Time it did not run is not the coordinator's silence.
struct Silence {
    heard: Instant,
    last_poll: Instant,
    not_running: Duration,
    limit: Duration,
}

impl Silence {
    fn new(limit: Duration) -> Silence {
        Silence {
            heard: Instant::now(),
            last_poll: Instant::now(),
            not_running: Duration::ZERO,
            limit,
        }
    }

    fn heard(&mut self) {
        self.heard = Instant::now();
        self.not_running = Duration::ZERO;
    }

    /// Called at each poll: how long the worker did not run since the previous one, if
    /// it was long enough to tell.
    fn poll(&mut self) -> Option<Duration> {
        let now = Instant::now();
        let gap = now.saturating_duration_since(self.last_poll);
        self.last_poll = now;
        (gap > STALL).then(|| {
            self.not_running += gap;
            gap
        })
    }

    /// Whether the coordinator has been silent, while this worker ran, for too long.
    fn too_long(&self) -> bool {
        self.heard.elapsed().saturating_sub(self.not_running) >= self.limit
    }
}

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
    /// Its credential in a closed run (from the coordinator through standard input, or
    /// from the secret file the operator copied): its run, mutual TLS, and the run's
    /// access control. `None`: an insecure run, or one of `zenoh_config`.
    pub credential: Option<Credential>,
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
            credential: None,
        }
    }
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
    // Every log line of this worker, its instances' and codec nodes' included, names it.
    let _span = tracing::info_span!(
        "worker",
        process = %process,
        run = options.run_id.as_deref().unwrap_or("join"),
    )
    .entered();
    // Its log records on `/rosout` name it.
    streamwire_msgs::log_hub::hub().set_process(&process);
    let hash = plan_hash(runnable.plan())?;
    let pool_bytes = runnable
        .plan()
        .processes()
        .iter()
        .find(|p| p.placement().to_string() == process)
        .map_or(SharedMemory::DEFAULT_POOL_BYTES, |p| {
            shared_memory_pool(runnable.plan(), p.placement())
        });
    let (run_id, settings, listen, connect) = match &options.credential {
        Some(credential) => {
            let run_id = closed_run_id(credential, &process, options.run_id.as_deref())?;
            let rules = AccessRules::from_plan(runnable.plan(), &run_id);
            (
                Some(run_id),
                streamwire_zenoh::Settings(credential.zenoh_settings(&rules)),
                closed_endpoints(&options.listen),
                closed_endpoints(&options.connect),
            )
        }
        None => (
            options.run_id.clone(),
            streamwire_zenoh::Settings::default(),
            options.listen.clone(),
            options.connect.clone(),
        ),
    };
    let session = ZenohTransport::open(&ZenohOptions {
        run_id: run_id.clone().unwrap_or_else(|| "join".to_owned()),
        listen,
        connect,
        gossip: true,
        shared_memory: SharedMemory {
            enabled: options.shared_memory,
            pool_bytes,
        },
        config_file: options.zenoh_config.clone(),
        settings,
    })?;
    let worker = Worker {
        options,
        run_id: run_id.as_deref(),
        process: &process,
        hash: &hash,
        base: &session,
        stop,
        stdin_closed: watch_stdin(options.watch_stdin),
    };
    let result = worker.work(runnable, say);
    session.close();
    result
}

/// The run of a closed run's worker: its credential's, which must name its process and
/// agree with the run it was told.
fn closed_run_id(
    credential: &Credential,
    process: &str,
    told: Option<&str>,
) -> Result<String, ClusterError> {
    if credential.subject() != process {
        return Err(ClusterError::BadCredential(format!(
            "it is the credential of `{}`, not of process `{process}`",
            credential.subject()
        )));
    }
    match told {
        Some(run) if run != credential.run_id() => Err(ClusterError::BadCredential(format!(
            "it is for run `{}`, not `{run}`",
            credential.run_id()
        ))),
        _ => Ok(credential.run_id().to_owned()),
    }
}

/// A flag set once standard input closes (the coordinator that started this worker is
/// gone), when asked to watch it.
fn watch_stdin(watch: bool) -> Arc<AtomicBool> {
    let closed = Arc::new(AtomicBool::new(false));
    if watch {
        let flag = closed.clone();
        let spawned = std::thread::Builder::new()
            .name("sw stdin watch".to_owned())
            .spawn(move || {
                let mut buffer = [0u8; 64];
                let mut stdin = std::io::stdin();
                while matches!(stdin.read(&mut buffer), Ok(n) if n > 0) {}
                flag.store(true, Ordering::SeqCst);
            });
        if let Err(error) = spawned {
            tracing::warn!("cannot watch standard input: {error}");
        }
    }
    closed
}

/// One worker's run.
struct Worker<'a> {
    options: &'a WorkerOptions,
    /// The run it joins, if it knows it before asking.
    run_id: Option<&'a str>,
    /// Its process, `host/process`.
    process: &'a str,
    /// Its plan's hash.
    hash: &'a str,
    /// Its session, opened before it knew its run.
    base: &'a ZenohTransport,
    /// Set from outside (Ctrl+C).
    stop: &'a AtomicBool,
    /// Set once standard input closed, with `watch_stdin`.
    stdin_closed: Arc<AtomicBool>,
}

impl Worker<'_> {
    /// How long this worker may hear nothing from its coordinator before it stops.
    fn coordinator_silence(&self) -> Duration {
        if self.options.watch_stdin {
            STARTED_WORKER_COORDINATOR_SILENCE
        } else {
            COORDINATOR_SILENCE
        }
    }

    fn told_to_stop(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || self.stdin_closed.load(Ordering::SeqCst)
    }

    fn work(
        &self,
        runnable: RunnablePlan,
        say: &mut dyn FnMut(&str),
    ) -> Result<RunReport, ClusterError> {
        let Some(reply) = self.join()? else {
            return Ok(RunReport::new(
                EndReason::Stopped,
                None,
                Vec::new(),
                RunStats::default(),
            ));
        };
        let transport = self.base.with_run_id(&reply.run_id)?;
        let keys = Keys::new(transport.prefix());
        let _token = self
            .base
            .session()
            .liveliness()
            .declare_token(keys.worker(self.process))
            .wait()
            .map_err(engine("the worker's liveliness token"))?;
        // A process whose instances tap the run's streams (a web relay, a recorder)
        // receives the others' log records too.
        let taps = runnable
            .plan()
            .instances()
            .any(|i| i.placement.to_string() == self.process && !i.taps().is_none());
        let _logs = logs::start(self.base.session(), transport.prefix(), self.process, taps)?;
        say(&format!(
            "worker `{}` joined run `{}` (plan {})",
            self.process, reply.run_id, self.hash
        ));
        // Start, held at the gate.
        let gate = StartGate::closed();
        let mut handle = Runtime::start(
            runnable,
            RunOptions {
                local: Some(self.process.to_owned()),
                transport: Some(Arc::new(KeepOpen(transport.clone()))),
                start_gate: Some(gate.clone()),
                stop_deadline: self.options.stop_deadline,
                ..RunOptions::default()
            },
        )?;
        self.until_stopped(&keys, &mut handle, &gate, say)?;
        let report = handle.wait();
        self.send_report(&keys, &report)?;
        self.linger(&keys)?;
        Ok(report)
    }

    /// Asks to join until the coordinator answers (`None`: told to stop first).
    fn join(&self) -> Result<Option<JoinReply>, ClusterError> {
        let join_key =
            Keys::new(&format!("streamwire/{}", self.run_id.unwrap_or("*"))).join(self.process);
        let request = JoinRequest {
            version: protocol::VERSION,
            process: self.process.to_owned(),
            plan_hash: self.hash.to_owned(),
            pid: std::process::id(),
            shared_memory: self.base.shared_memory(),
            frame_versions: streamwire_transport::FORMAT_VERSIONS.to_vec(),
        };
        let began = Instant::now();
        let reply: JoinReply = loop {
            if self.told_to_stop() {
                return Ok(None);
            }
            if let Some((_, reply)) = protocol::ask(self.base.session(), &join_key, &request)? {
                break reply;
            }
            if began.elapsed() >= self.options.join_timeout {
                return Err(ClusterError::NoCoordinator {
                    endpoints: self.options.connect.join(", "),
                    timeout: self.options.join_timeout,
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        if !reply.accepted {
            return Err(ClusterError::Refused {
                process: self.process.to_owned(),
                run_id: reply.run_id,
                reason: reply.reason,
            });
        }
        Ok(Some(reply))
    }

    /// Says its state until the run ends here or the worker is told to stop (then stops
    /// its part of the plan).
    fn until_stopped(
        &self,
        keys: &Keys,
        handle: &mut RunHandle,
        gate: &StartGate,
        say: &mut dyn FnMut(&str),
    ) -> Result<(), ClusterError> {
        let started = Instant::now();
        let mut matched = false;
        let mut warned_unmatched = false;
        let mut silence = Silence::new(self.coordinator_silence());
        let mut last_stats = Instant::now();
        let stopped_by = loop {
            if let Some(gap) = silence.poll() {
                say(&format!(
                    "worker `{}` did not run for {:.1} s (stopped, or starved of CPU): its \
                     links are made again, and its coordinator's silence counts from now",
                    self.process,
                    gap.as_secs_f64()
                ));
            }
            if !matched {
                let unmatched = handle.unmatched_links();
                matched = unmatched.is_empty();
                if !matched && started.elapsed() >= self.options.join_timeout && !warned_unmatched {
                    warned_unmatched = true;
                    say(&format!(
                        "worker `{}`: no subscriber yet for {} after {:?}",
                        self.process,
                        unmatched.join(", "),
                        self.options.join_timeout
                    ));
                }
            }
            let stats =
                (gate.is_open() && last_stats.elapsed() >= Duration::from_secs(1)).then(|| {
                    last_stats = Instant::now();
                    handle.stats()
                });
            let notices = handle.take_notices();
            let state = self.ask_state(keys, matched, stats, notices)?;
            let mut stopped_by = None;
            match state {
                Some(state) => {
                    silence.heard();
                    if !state.resubscribe_taps.is_empty() {
                        handle.resubscribe_taps(&state.resubscribe_taps);
                    }
                    if state.go && matched && !gate.is_open() {
                        gate.open();
                    }
                    if state.stop {
                        stopped_by = Some("the coordinator");
                    }
                }
                None if silence.too_long() => {
                    stopped_by = Some("the coordinator stopped answering");
                }
                None => {}
            }
            if self.stop.load(Ordering::SeqCst) {
                stopped_by = Some("a stop request");
            }
            if self.stdin_closed.load(Ordering::SeqCst) {
                stopped_by = Some("its standard input closed (the coordinator is gone)");
            }
            if stopped_by.is_some() || handle.poll_end().is_some() {
                break stopped_by;
            }
            std::thread::sleep(POLL);
        };
        if let Some(by) = stopped_by {
            if by == "the coordinator" {
                tracing::info!("worker `{}` stops: {by}", self.process);
            } else {
                // Not asked by the run: said where the operator reads it.
                say(&format!("worker `{}` stops: {by}", self.process));
            }
            handle.stop();
        }
        Ok(())
    }

    fn ask_state(
        &self,
        keys: &Keys,
        ready: bool,
        stats: Option<RunStats>,
        notices: Vec<String>,
    ) -> Result<Option<StateReply>, ClusterError> {
        let request = StateRequest {
            process: self.process.to_owned(),
            ready,
            stats,
            notices,
        };
        Ok(protocol::ask::<_, StateReply>(
            self.base.session(),
            &keys.state(self.process),
            &request,
        )?
        .map(|(_, state)| state))
    }

    /// The report, acknowledged (a few tries: the coordinator may be busy).
    fn send_report(&self, keys: &Keys, report: &RunReport) -> Result<(), ClusterError> {
        let request = ReportRequest {
            process: self.process.to_owned(),
            report: report.clone(),
        };
        for _ in 0..3 {
            if protocol::ask::<_, bool>(self.base.session(), &keys.report(self.process), &request)?
                .is_some()
            {
                return Ok(());
            }
        }
        tracing::warn!(
            "worker `{}`: the coordinator did not acknowledge its report",
            self.process
        );
        Ok(())
    }

    /// Keeps the session until the run ends: frames this worker sent last (the end of a
    /// stream) may still be on their way, and closing the session would drop them.
    fn linger(&self, keys: &Keys) -> Result<(), ClusterError> {
        let mut silence = Silence::new(self.coordinator_silence());
        while !silence.too_long() && !self.told_to_stop() {
            silence.poll();
            match self.ask_state(keys, false, None, Vec::new())? {
                Some(state) if state.stop => break,
                Some(_) => silence.heard(),
                None => {}
            }
            std::thread::sleep(POLL);
        }
        Ok(())
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

    fn announce_publisher(&self, key: &str, partition: &str) {
        self.0.announce_publisher(key, partition);
    }

    fn loans(&self) -> Option<Arc<dyn streamwire_core::buffer::LoanSource>> {
        self.0.loans()
    }

    fn close(&self) {}
}
