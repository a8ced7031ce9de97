//! The handle of a running blueprint: stop it, poll it, wait for its report, watch its
//! counters, tap its streams.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use streamwire_core::Message;
use streamwire_transport::Transport;

use crate::stats::{EndReason, Records, RunReport, RunStats};
use crate::taps::{AnyTap, Tap, TapError, TapPoint};
use crate::worker::{Exit, Outcome, Shared};

/// How long a stopped run waits at most for the stop frames of the senders in other
/// processes, before closing its subscriptions.
const WIRE_DRAIN: Duration = Duration::from_millis(500);

/// A running blueprint: watch it (`stats`), listen in (`tap`), stop it, wait for it.
/// Dropping it stops the run.
pub struct RunHandle {
    /// What every thread of the run shares: the stop token above all.
    pub(crate) shared: Arc<Shared>,
    /// What `stats()` reads.
    pub(crate) records: Arc<Records>,
    /// Where taps attach, shared with the instances (`Context::taps`).
    pub(crate) taps: Arc<TapPoint>,
    /// The transport joining the partitions, closed when the run ends.
    pub(crate) transport: Option<Arc<dyn Transport>>,
    /// Every thread of the run, in start order (an [`Exit`] names its thread by position).
    pub(crate) threads: Vec<ThreadRecord>,
    /// Where each thread says how it ended.
    pub(crate) exits: Receiver<Exit>,
    /// The first module failure, as reported.
    pub(crate) failure: Option<String>,
    /// How long `wait` gives the threads to return once stopped.
    pub(crate) stop_deadline: Duration,
    /// Set by `stop` and the stop flag: the run ends as `stopped`.
    pub(crate) stop_requested: Arc<AtomicBool>,
}

/// One thread of a run.
pub(crate) struct ThreadRecord {
    /// What the report calls it (`camera`, `encode jpeg color_image`, `send color_image`);
    /// its thread is named `sw<number> <name>`.
    pub(crate) name: String,
    /// Whether it runs a module instance (the run has finished when every one has).
    pub(crate) is_instance: bool,
    /// Joined once it exited; left detached if it ignores the stop.
    pub(crate) handle: Option<JoinHandle<()>>,
    /// Whether its exit was received.
    pub(crate) exited: bool,
}

impl std::fmt::Debug for RunHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHandle")
            .field(
                "threads",
                &self.threads.iter().map(|t| &t.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl RunHandle {
    /// Asks every thread to stop; returns at once. [`wait`](RunHandle::wait) joins them.
    pub fn stop(&self) {
        self.stop_requested.store(true, Ordering::SeqCst);
        self.shared.stop();
    }

    /// A flag that stops the run when set (for a Ctrl+C handler in a binary).
    pub fn stop_flag(&self) -> StopFlag {
        StopFlag {
            shared: self.shared.clone(),
            requested: self.stop_requested.clone(),
        }
    }

    /// Whether the run has ended by itself, without blocking: `Some(Finished)` once every
    /// module finished, `Some(Failed)` once one failed, `None` while it goes on. The
    /// report is still [`wait`](RunHandle::wait)'s.
    pub fn poll_end(&mut self) -> Option<EndReason> {
        while let Ok(exit) = self.exits.try_recv() {
            self.record_exit(exit);
        }
        if self.failure.is_some() {
            Some(EndReason::Failed)
        } else if self.every_instance_exited() {
            Some(EndReason::Finished)
        } else {
            None
        }
    }

    /// Waits until the run ends (every module finished, a module failed, or `stop`
    /// was called), stops what still runs, joins with the deadline and reports.
    pub fn wait(self) -> RunReport {
        self.wait_at_most(None)
    }

    /// Like [`wait`](RunHandle::wait), but stops the run after `limit` if it has not
    /// ended by then (its reason is then `stopped`).
    pub fn wait_timeout(self, limit: Duration) -> RunReport {
        self.wait_at_most(Some(Instant::now() + limit))
    }

    fn wait_at_most(mut self, limit: Option<Instant>) -> RunReport {
        let reason = self.until_end(limit);
        self.shared.stop();
        let stragglers = self.join_within_deadline();
        // A keep-last stream's producer put its stop frame as its thread ended; one that
        // did not end (a straggler) gets it here, after its last frame.
        for sender in self
            .records
            .senders
            .iter()
            .filter_map(|s| s.inline.as_ref())
        {
            sender.close(streamwire_transport::WireFrame::stop);
        }
        // What other processes' senders sent before their stop frame is still counted
        // (as in flight at stop) before the subscriptions close.
        self.drain_wire();
        // Orderly close of the transport: every publisher and subscription undeclared.
        if let Some(transport) = &self.transport {
            transport.close();
        }
        let reason = if self.failure.is_some() {
            EndReason::Failed
        } else {
            reason
        };
        // What codec nodes still held is counted on their consumers before the snapshot.
        self.records.settle();
        let mut stats = self.stats();
        stats.add_wire_terms();
        RunReport::new(reason, self.failure.clone(), stragglers, stats)
    }

    /// Waits until the run ends by itself (every module finished, or one failed), `stop`
    /// is called, or `limit` passes.
    fn until_end(&mut self, limit: Option<Instant>) -> EndReason {
        loop {
            if self.stop_requested.load(Ordering::SeqCst)
                || limit.is_some_and(|l| Instant::now() >= l)
            {
                return EndReason::Stopped;
            }
            // Exits already taken by `poll_end`.
            if self.failure.is_some() {
                return EndReason::Failed;
            }
            if self.every_instance_exited() {
                return EndReason::Finished;
            }
            match self.exits.recv_timeout(Duration::from_millis(20)) {
                Ok(exit) => {
                    if self.record_exit(exit) {
                        return EndReason::Failed;
                    }
                    if self.every_instance_exited() {
                        return EndReason::Finished;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return EndReason::Finished,
            }
        }
    }

    /// Once stopped: gives every thread the stop deadline to return, joins those that did
    /// and names the others (stragglers, left running detached).
    fn join_within_deadline(&mut self) -> Vec<String> {
        let deadline = Instant::now() + self.stop_deadline;
        while self.threads.iter().any(|t| !t.exited) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match self.exits.recv_timeout(left) {
                Ok(exit) => {
                    self.record_exit(exit);
                }
                Err(_) => break,
            }
        }
        let mut stragglers = Vec::new();
        for thread in &mut self.threads {
            if thread.exited {
                if let Some(handle) = thread.handle.take() {
                    let _ = handle.join();
                }
            } else {
                // Left running (detached): it ignored the stop; the report names it.
                stragglers.push(thread.name.clone());
            }
        }
        stragglers
    }

    /// Once stopped: waits, up to [`WIRE_DRAIN`], until every ingress has read its
    /// sender's stop or end-of-stream frame, so that the frames still on the wire when the
    /// run stopped are counted `in_flight_at_stop` on their consumers' rows. A sender
    /// that does not stop with this run (another process that goes on) is not waited for
    /// longer: what it still sends is on no counter here, and the balance check says so.
    fn drain_wire(&self) {
        let deadline = Instant::now() + WIRE_DRAIN.min(self.stop_deadline);
        while self.records.ingresses.iter().any(|i| !i.has_ended()) {
            if Instant::now() >= deadline {
                let waiting: Vec<&str> = self
                    .records
                    .ingresses
                    .iter()
                    .filter(|i| !i.has_ended())
                    .map(|i| i.key.as_str())
                    .collect();
                tracing::debug!(
                    streams = ?waiting,
                    "no stop frame from these streams' senders: frames they sent after \
                     this run stopped are on no counter here"
                );
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Whether every module instance's thread has exited (the run finished).
    fn every_instance_exited(&self) -> bool {
        self.threads.iter().all(|t| !t.is_instance || t.exited)
    }

    /// Marks a thread exited; true when it failed (the first failure is kept).
    fn record_exit(&mut self, exit: Exit) -> bool {
        if let Some(thread) = self.threads.get_mut(exit.thread) {
            thread.exited = true;
        }
        match exit.outcome {
            Outcome::Finished => false,
            Outcome::Failed(text) => {
                if self.failure.is_none() {
                    self.failure = Some(text);
                }
                true
            }
        }
    }

    /// The lines the run's modules announced (`Context::announce`: a relay's address)
    /// since the last call, in order: a runner prints them where the person running it
    /// reads (`streamwire run`: standard error, at the default log level).
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut *self.shared.notices.lock())
    }

    /// Declares again the subscription of the own ingress of each tap of `taps` (numbers
    /// of the taps table) that is still attached: a distributed run's coordinator asks
    /// it of a tap it found silent (issue 50). Each is counted on the tap's wire row
    /// (`resubscribed`) and logged; gives how many were declared again.
    pub fn resubscribe_taps(&self, taps: &[u64]) -> usize {
        let Some(transport) = &self.transport else {
            return 0;
        };
        let mut done = 0;
        for &id in taps {
            let Some(ingress) = self.records.tap_ingress(id) else {
                continue;
            };
            match ingress.resubscribe(transport.as_ref()) {
                Ok(()) => {
                    done += 1;
                    tracing::warn!(
                        stream = %ingress.key,
                        "tap {id} into {} received nothing while its sender sent: its \
                         subscription is declared again",
                        ingress.partition
                    );
                }
                Err(error) => tracing::warn!(
                    stream = %ingress.key,
                    "tap {id} into {} received nothing while its sender sent, and cannot \
                     subscribe again: {error}",
                    ingress.partition
                ),
            }
        }
        done
    }

    /// A snapshot of every counter, while the run goes on.
    pub fn stats(&self) -> RunStats {
        self.records.snapshot(&self.shared)
    }

    /// Subscribes to stream `stream` while the run goes on, typed: `tap::<Image>("color_image")`
    /// gets pixels; `tap::<CompressedImage>("color_image")` (or
    /// `"color_image/compressed"`) gets the encoded bytes of the stream's encode node,
    /// which then encodes for the tap. A tap counts as a consumer until dropped. It
    /// listens where the stream is produced; [`tap_in`](RunHandle::tap_in) listens from a
    /// given process.
    pub fn tap<M: Message>(&self, stream: &str) -> Result<Tap<M>, TapError> {
        let inner = self.taps.attach(stream, Some(M::TYPE_NAME), None)?;
        Ok(Tap::typed(inner))
    }

    /// Subscribes to stream `stream` whatever it carries.
    pub fn tap_any(&self, stream: &str) -> Result<AnyTap, TapError> {
        self.taps.attach(stream, None, None)
    }

    /// Like [`tap`](RunHandle::tap), from inside planned process `process` (its
    /// partition): a stream produced in another partition comes across the transport, as
    /// it would to a tool joining that process, and its producer's partition sends it
    /// (encoding, for bytes) only while this tap is attached. Without partitions (one
    /// process, or `Partitions::Shared`) it is the same as `tap`.
    pub fn tap_in<M: Message>(&self, process: &str, stream: &str) -> Result<Tap<M>, TapError> {
        let inner = self
            .taps
            .attach(stream, Some(M::TYPE_NAME), Some(process))?;
        Ok(Tap::typed(inner))
    }

    /// The streams this process sends to other processes of the plan whose publisher does
    /// not reach every one of them yet (a distributed run starts its sources once this is
    /// empty).
    pub fn unmatched_links(&self) -> Vec<String> {
        self.records
            .senders
            .iter()
            .filter(|s| {
                !s.remote_partitions.is_empty() && !s.publisher().reaches(&s.remote_partitions)
            })
            .map(|s| s.publisher().key().to_owned())
            .collect()
    }

    /// The names of the run's partitions (its planned processes), empty without
    /// partitions.
    pub fn partitions(&self) -> &[String] {
        &self.taps.partitions
    }
}

/// Dropping the handle without waiting stops the run (its threads see the stop token and
/// return; nobody is left running unseen).
impl Drop for RunHandle {
    fn drop(&mut self) {
        self.shared.stop();
    }
}

/// Stops a run from anywhere (a Ctrl+C handler, another thread).
#[derive(Clone)]
pub struct StopFlag {
    shared: Arc<Shared>,
    requested: Arc<AtomicBool>,
}

impl StopFlag {
    /// Stops the run.
    pub fn stop(&self) {
        self.requested.store(true, Ordering::SeqCst);
        self.shared.stop();
    }
}

impl std::fmt::Debug for StopFlag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StopFlag")
    }
}
