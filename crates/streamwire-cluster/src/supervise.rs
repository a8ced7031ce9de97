//! The coordinator's run, driven by events: the workers' queries (joined, ready,
//! reported, refused), their liveliness tokens going away, and their processes exiting
//! (each local worker is awaited on a thread of its own). Between events it wakes only
//! for what has no event: a stop request (a flag a signal handler sets, seen within
//! [`STOP_CHECK`]), the end of the run's duration, the join timeout and the once-a-second
//! status.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use streamwire_graph::Supervision;
use streamwire_runtime::{EndReason, RunReport, RunStats};
use streamwire_transport::Transport as _;

use crate::coordinator::{Coordinator, lock};
use crate::report::{ClusterReport, WorkerSummary};
use crate::{ClusterError, Launch, shared_memory};

/// The longest the supervisor sleeps without looking at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// How often the status line gets the workers' merged counters.
const PROGRESS: Duration = Duration::from_secs(1);

/// Beyond the stop deadline, how long workers have to report and exit before they are
/// killed.
const EXIT_MARGIN: Duration = Duration::from_secs(2);

/// Something the supervisor reacts to.
#[derive(Debug)]
pub(crate) enum Event {
    /// A worker was refused at the join (the text says who and why).
    Refused(String),
    /// A worker joined (or rejoined).
    Joined(String),
    /// A worker's outgoing links are all matched.
    Ready(String),
    /// A worker's report arrived.
    Reported(String),
    /// A worker's liveliness token went away: its session ended.
    Gone(String),
    /// Lines a worker's modules announced (a relay's address).
    Announced(Vec<String>),
    /// A local worker's process exited.
    Exited {
        /// Its process, `host/process`.
        process: String,
        /// Which start of it (a restarted worker's old exit is not news).
        generation: u64,
        /// Its exit status as the OS gave it.
        status: String,
    },
}

/// A local worker's process.
struct Child {
    pid: u32,
    /// Which start of the process this is.
    generation: u64,
    /// Set by its waiter once the process is reaped: from then on its pid is not ours.
    reaped: Arc<AtomicBool>,
    /// Kept open: the worker stops when it closes (the coordinator is gone).
    _stdin: Option<ChildStdin>,
}

/// How the run ended, or `None` while it goes on.
type End = Option<(EndReason, Option<String>)>;

/// One supervised run: what it was given, and what it keeps about its workers.
pub(crate) struct Supervisor<'a> {
    coordinator: &'a Coordinator,
    /// Starts a worker.
    command: &'a dyn Fn(&Launch) -> Command,
    /// Set from outside (Ctrl+C): stop the run.
    stop: &'a AtomicBool,
    /// Tells the user what happens.
    say: &'a mut dyn FnMut(&str),
    /// Gets the merged counters once a second while the sources run.
    progress: &'a mut dyn FnMut(&RunStats),
    /// Gets what the workers' modules announce.
    announce: &'a mut dyn FnMut(&str),
    /// The processes started here.
    local: Vec<String>,
    /// The local workers still running.
    children: BTreeMap<String, Child>,
    /// Every worker as the end report will list it.
    summaries: BTreeMap<String, WorkerSummary>,
    /// Remote workers whose session ended.
    gone: BTreeSet<String>,
    /// Restarts done, against the blueprint's [`Supervision::Restart`] budget.
    restarts_used: u32,
    /// Workers treated as dead for being cut off past the peer timeout (until they join
    /// again).
    cut_off: BTreeSet<String>,
    /// The last generation given to a started worker.
    generation: u64,
    /// When supervision began (the join timeout counts from here).
    began: Instant,
    /// When the sources started (every worker was ready).
    run_started: Option<Instant>,
    /// When the status line is next due.
    next_progress: Instant,
}

impl<'a> Supervisor<'a> {
    pub(crate) fn new(
        coordinator: &'a Coordinator,
        command: &'a dyn Fn(&Launch) -> Command,
        stop: &'a AtomicBool,
        say: &'a mut dyn FnMut(&str),
        progress: &'a mut dyn FnMut(&RunStats),
        announce: &'a mut dyn FnMut(&str),
    ) -> Supervisor<'a> {
        let local = coordinator.local_processes();
        let summaries = coordinator
            .processes
            .iter()
            .map(|(p, _)| (p.clone(), WorkerSummary::new(p, local.contains(p))))
            .collect();
        Supervisor {
            coordinator,
            command,
            stop,
            say,
            progress,
            announce,
            local,
            children: BTreeMap::new(),
            summaries,
            gone: BTreeSet::new(),
            restarts_used: 0,
            cut_off: BTreeSet::new(),
            generation: 0,
            began: Instant::now(),
            run_started: None,
            next_progress: Instant::now() + PROGRESS,
        }
    }

    /// The whole run: start the local workers, supervise to the end, stop every worker
    /// (killing those past the deadline: no orphans), merge the reports.
    pub(crate) fn run(mut self) -> Result<ClusterReport, ClusterError> {
        let outcome = self.start_local().and_then(|()| self.until_end());
        let stragglers = self.stop_workers();
        let reports = self.collect_reports();
        self.coordinator.transport.close();
        // A worker killed by a signal leaves its shared-memory segments in /dev/shm (POSIX
        // keeps a named segment until someone unlinks it): zenoh removes the segments
        // whose processes are gone. After this session's close: frames routed through it
        // had it hold their segments too.
        streamwire_zenoh::remove_orphaned_shared_memory();
        let (reason, failure) = outcome?;
        Ok(ClusterReport {
            access: self.coordinator.access_summary(),
            workers: std::mem::take(&mut self.summaries).into_values().collect(),
            report: RunReport::merge(reason, failure, stragglers, reports),
        })
    }

    fn start_local(&mut self) -> Result<(), ClusterError> {
        // A run killed outright (its coordinator by SIGKILL) left its workers' segments
        // in /dev/shm: removed before this run's workers make their own, and named.
        let orphans = streamwire_zenoh::sweep_orphaned_shared_memory();
        if !orphans.is_empty() {
            let names: Vec<String> = orphans.iter().map(|p| p.display().to_string()).collect();
            (self.say)(&format!(
                "removed {} shared-memory segment{} left by processes that are gone: {}",
                orphans.len(),
                if orphans.len() == 1 { "" } else { "s" },
                names.join(", ")
            ));
        }
        for process in self.local.clone() {
            self.launch(&process)?;
        }
        Ok(())
    }

    /// Starts the worker of `process` and a thread that waits for its exit.
    fn launch(&mut self, process: &str) -> Result<(), ClusterError> {
        let spawn_error = |error| ClusterError::Spawn {
            process: process.to_owned(),
            error,
        };
        let mut command = (self.command)(&self.coordinator.launch_of(process));
        command.stdin(Stdio::piped());
        let mut child = command.spawn().map_err(spawn_error)?;
        self.generation += 1;
        let generation = self.generation;
        let pid = child.id();
        let mut stdin = child.stdin.take();
        // A closed run's worker reads its credential first: never on its command line or
        // in its environment, where other users' `ps` could read it.
        if let (Some(text), Some(pipe)) = (
            self.coordinator
                .closed
                .as_ref()
                .and_then(|c| c.credential_text(process)),
            stdin.as_mut(),
        ) && let Err(error) = std::io::Write::write_all(pipe, text.as_bytes())
        {
            // The worker is gone already: its exit is the news.
            tracing::warn!(
                "cannot hand worker `{process}` its credential: {}",
                streamwire_core::log::chain(&error)
            );
        }
        let reaped = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (reaped, events, process) = (
                reaped.clone(),
                self.coordinator.sender.clone(),
                process.to_owned(),
            );
            move || await_exit(child, &process, generation, &reaped, &events)
        };
        std::thread::Builder::new()
            // The pid first: Linux keeps 15 bytes of a thread's name.
            .name(format!("sw{pid} wait {process}"))
            .spawn(waiter)
            .map_err(spawn_error)?;
        if let Some(s) = self.summaries.get_mut(process) {
            s.pid = Some(pid);
        }
        (self.say)(&format!("worker `{process}` started (pid {pid})"));
        self.children.insert(
            process.to_owned(),
            Child {
                pid,
                generation,
                reaped,
                _stdin: stdin,
            },
        );
        Ok(())
    }

    /// Events until the run ends: its reason and failure.
    fn until_end(&mut self) -> Result<(EndReason, Option<String>), ClusterError> {
        loop {
            match self.coordinator.events.recv_timeout(self.next_wake()) {
                Ok(event) => {
                    if let Some(end) = self.on_event(event)? {
                        return Ok(end);
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {}
            }
            if let Some(end) = self.on_time()? {
                return Ok(end);
            }
        }
    }

    /// How long to wait for the next event before looking at the clock and the stop flag.
    fn next_wake(&self) -> Duration {
        let now = Instant::now();
        let due = match self.run_started {
            None => self.began + self.coordinator.options.join_timeout,
            Some(at) => {
                let end = self.coordinator.options.duration.map(|d| at + d);
                end.map_or(self.next_progress, |end| end.min(self.next_progress))
            }
        };
        due.saturating_duration_since(now).min(STOP_CHECK)
    }

    fn on_event(&mut self, event: Event) -> Result<End, ClusterError> {
        match event {
            Event::Refused(refusal) => (self.say)(&refusal),
            Event::Joined(process) => {
                tracing::info!("worker `{process}` joined");
                self.gone.remove(&process);
                self.cut_off.remove(&process);
            }
            Event::Ready(process) => {
                tracing::info!("worker `{process}` ready");
                self.start_when_all_ready();
            }
            Event::Reported(process) => return Ok(self.on_report(&process)),
            Event::Gone(process) => return self.on_gone(process),
            Event::Announced(lines) => {
                for line in lines {
                    (self.announce)(&line);
                }
            }
            Event::Exited {
                process,
                generation,
                status,
            } => return self.on_exit(process, generation, status),
        }
        Ok(None)
    }

    /// Once every process is ready: go (the sources start), and the shared-memory gaps.
    fn start_when_all_ready(&mut self) {
        if self.run_started.is_some() {
            return;
        }
        let mut b = lock(&self.coordinator.board);
        if !b.expected.iter().all(|p| b.ready.contains(p)) {
            return;
        }
        b.go = true;
        let offers = b.shared_memory.clone();
        drop(b);
        self.run_started = Some(Instant::now());
        (self.say)(&format!(
            "every worker is ready ({}): the sources start",
            self.coordinator.processes.len()
        ));
        for warning in shared_memory::warnings(&self.coordinator.processes, &offers) {
            tracing::warn!("{warning}");
            (self.say)(&warning);
        }
    }

    /// A failed worker ends the run; so does the last report of a started run.
    fn on_report(&self, process: &str) -> End {
        let b = lock(&self.coordinator.board);
        let report = b.reports.get(process)?;
        if report.reason == EndReason::Failed {
            let failure = format!(
                "in worker `{process}`: {}",
                report.failure.as_deref().unwrap_or("a module failed")
            );
            return Some((EndReason::Failed, Some(failure)));
        }
        let all_reported = b.expected.iter().all(|p| b.reports.contains_key(p));
        (self.run_started.is_some() && all_reported).then_some((EndReason::Finished, None))
    }

    /// A remote worker's session ended: without its report, it died. (A local worker's
    /// end is its exit.)
    fn on_gone(&mut self, process: String) -> Result<End, ClusterError> {
        if self.local.contains(&process) {
            return Ok(None);
        }
        let mut b = lock(&self.coordinator.board);
        let reported = b.reports.contains_key(&process);
        b.joined.remove(&process);
        b.ready.remove(&process);
        drop(b);
        self.gone.insert(process.clone());
        if reported {
            return Ok(None);
        }
        self.on_death(&process, "its session ended")
    }

    /// A local worker exited: without its report, it died.
    fn on_exit(
        &mut self,
        process: String,
        generation: u64,
        status: String,
    ) -> Result<End, ClusterError> {
        if self.children.get(&process).map(|c| c.generation) != Some(generation) {
            return Ok(None);
        }
        self.children.remove(&process);
        if let Some(s) = self.summaries.get_mut(&process) {
            s.exit = Some(status.clone());
        }
        // A worker that reported ended its run (finished, stopped or failed: its report
        // says which); one that did not, died.
        if lock(&self.coordinator.board).reports.contains_key(&process) {
            return Ok(None);
        }
        self.on_death(&process, &status)
    }

    /// The blueprint's supervision for a dead worker: restart it, wait for it, or fail.
    fn on_death(&mut self, process: &str, status: &str) -> Result<End, ClusterError> {
        let is_local = self.local.iter().any(|p| p == process);
        let who = match self.summaries.get(process).and_then(|s| s.pid) {
            Some(pid) if is_local => format!("worker `{process}` (pid {pid})"),
            _ => format!("worker `{process}`"),
        };
        {
            let mut b = lock(&self.coordinator.board);
            b.joined.remove(process);
            b.ready.remove(process);
        }
        match self.coordinator.supervision {
            Supervision::Restart { max } if is_local && self.restarts_used < max => {
                self.restarts_used += 1;
                (self.say)(&format!(
                    "{who} died ({status}); restarting it (restart {} of {max})",
                    self.restarts_used
                ));
                self.launch(process)?;
                if let Some(s) = self.summaries.get_mut(process) {
                    s.restarts += 1;
                    s.exit = None;
                }
                Ok(None)
            }
            Supervision::Restart { .. } if !is_local => {
                (self.say)(&format!(
                    "{who} left ({status}); waiting for it to join again"
                ));
                Ok(None)
            }
            _ => {
                let failure = format!("{who} died: {status}");
                (self.say)(&failure);
                Ok(Some((EndReason::Failed, Some(failure))))
            }
        }
    }

    /// What has no event: a stop request, the run's duration, the join timeout, the
    /// status line.
    fn on_time(&mut self) -> Result<End, ClusterError> {
        if self.stop.load(Ordering::SeqCst) {
            return Ok(Some((EndReason::Stopped, None)));
        }
        let now = Instant::now();
        let Some(started) = self.run_started else {
            if now >= self.began + self.coordinator.options.join_timeout {
                return Err(ClusterError::JoinTimeout {
                    missing: self.missing().join(", "),
                    timeout: self.coordinator.options.join_timeout,
                });
            }
            return Ok(None);
        };
        if self
            .coordinator
            .options
            .duration
            .is_some_and(|limit| now >= started + limit)
        {
            return Ok(Some((EndReason::Stopped, None)));
        }
        if let Some(end) = self.on_cut_off(now)? {
            return Ok(Some(end));
        }
        if now >= self.next_progress {
            self.next_progress = now + PROGRESS;
            let mut merged = RunStats::default();
            for stats in lock(&self.coordinator.board).live.values() {
                merged.merge(stats.clone());
            }
            (self.progress)(&merged);
        }
        Ok(None)
    }

    /// Workers not heard from for longer than the peer timeout, without their report: a
    /// local one is killed (its exit then gets the blueprint's supervision), a remote one
    /// is dead now.
    fn on_cut_off(&mut self, now: Instant) -> Result<End, ClusterError> {
        let timeout = self.coordinator.options.peer_timeout;
        let silent: Vec<(String, Duration)> = {
            let b = lock(&self.coordinator.board);
            b.joined
                .keys()
                .filter(|p| !b.reports.contains_key(*p) && !self.cut_off.contains(*p))
                .filter_map(|p| {
                    let for_ = now.saturating_duration_since(*b.heard.get(p)?);
                    (for_ > timeout).then(|| (p.clone(), for_))
                })
                .collect()
        };
        for (process, for_) in silent {
            self.cut_off.insert(process.clone());
            let cut = format!(
                "cut off for {:.1} s (longer than the peer timeout, {:.1} s)",
                for_.as_secs_f64(),
                timeout.as_secs_f64()
            );
            match self.children.get(&process) {
                Some(child) => {
                    (self.say)(&format!(
                        "worker `{process}` (pid {}) {cut}: treated as dead, killed",
                        child.pid
                    ));
                    kill(child);
                }
                None => {
                    if let Some(end) = self.on_death(&process, &cut)? {
                        return Ok(Some(end));
                    }
                }
            }
        }
        Ok(None)
    }

    /// Each process not ready at the join timeout, with what is known of it.
    fn missing(&self) -> Vec<String> {
        let b = lock(&self.coordinator.board);
        b.expected
            .iter()
            .filter(|p| !b.ready.contains(*p))
            .map(|p| {
                let host = self
                    .coordinator
                    .processes
                    .iter()
                    .find(|(n, _)| n == p)
                    .map_or("", |(_, h)| h.as_str());
                if self.local.contains(p) {
                    if b.joined.contains_key(p) {
                        format!("`{p}` (started here, joined, its links not matched yet)")
                    } else {
                        format!("`{p}` (started here, not joined)")
                    }
                } else {
                    match &self.coordinator.options.start_hint {
                        Some(hint) => format!(
                            "`{p}` (host `{host}`: {})",
                            hint.advise(&self.coordinator.launch_of(p))
                        ),
                        None => format!("`{p}` (host `{host}`: not started here)"),
                    }
                }
            })
            .collect()
    }

    /// Tells every worker to stop and waits, for the stop deadline and a margin, for the
    /// local ones to exit and the remote ones to report (or leave); kills the local ones
    /// still running after that. The stragglers, by name.
    fn stop_workers(&mut self) -> Vec<String> {
        lock(&self.coordinator.board).stop = true;
        let deadline = Instant::now() + self.coordinator.options.stop_deadline + EXIT_MARGIN;
        self.wait_for_exits(deadline, true);
        let mut stragglers = Vec::new();
        for (process, child) in &self.children {
            (self.say)(&format!(
                "worker `{process}` did not stop within the deadline: killed"
            ));
            stragglers.push(format!("worker {process} (killed)"));
            kill(child);
        }
        // Their waiters say when they are gone, with the status a kill gives.
        self.wait_for_exits(Instant::now() + EXIT_MARGIN, false);
        stragglers
    }

    /// Events until every local worker exited (and, with `remotes`, every remote one is
    /// done) or `deadline`.
    fn wait_for_exits(&mut self, deadline: Instant, remotes: bool) {
        while !(self.children.is_empty() && (!remotes || self.remotes_done())) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.coordinator.events.recv_timeout(left) {
                Ok(Event::Exited {
                    process,
                    generation,
                    status,
                }) => {
                    if self.children.get(&process).map(|c| c.generation) == Some(generation) {
                        self.children.remove(&process);
                        if let Some(s) = self.summaries.get_mut(&process) {
                            s.exit.get_or_insert(status);
                        }
                    }
                }
                Ok(Event::Gone(process)) => {
                    self.gone.insert(process);
                }
                Ok(_) => {}
                Err(_) => return,
            }
        }
    }

    /// Every remote worker reported, never joined, or left.
    fn remotes_done(&self) -> bool {
        let b = lock(&self.coordinator.board);
        self.summaries.values().filter(|w| !w.local).all(|w| {
            b.reports.contains_key(&w.process)
                || !b.joined.contains_key(&w.process)
                || self.gone.contains(&w.process)
        })
    }

    /// The reports that arrived, marking which workers reported.
    fn collect_reports(&mut self) -> Vec<(String, RunReport)> {
        let b = lock(&self.coordinator.board);
        for (process, summary) in &mut self.summaries {
            summary.reported = b.reports.contains_key(process);
        }
        b.reports
            .iter()
            .map(|(p, r)| (p.clone(), r.clone()))
            .collect()
    }
}

/// Waits for `child` to exit and says so.
fn await_exit(
    mut child: std::process::Child,
    process: &str,
    generation: u64,
    reaped: &AtomicBool,
    events: &Sender<Event>,
) {
    let status = match child.wait() {
        Ok(status) => status.to_string(),
        Err(error) => format!("cannot wait for it: {error}"),
    };
    reaped.store(true, Ordering::SeqCst);
    // The supervisor may have ended: nobody left to tell.
    let _ = events.send(Event::Exited {
        process: process.to_owned(),
        generation,
        status,
    });
}

/// Kills a worker past its deadline, unless its waiter has already reaped it (then its
/// pid may be another process's).
fn kill(child: &Child) {
    if child.reaped.load(Ordering::SeqCst) {
        return;
    }
    let Ok(pid) = i32::try_from(child.pid) else {
        return;
    };
    if let Err(error) = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    ) {
        tracing::warn!("cannot kill worker pid {pid}: {error}");
    }
}
