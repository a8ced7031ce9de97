//! The threads of a run: one per module instance, one per codec node.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use streamwire_core::codec::DynCodec;
use streamwire_core::{
    Context, Counter, DropReason, Envelope, InputBinding, ModuleValue, RunContext, Timestamp,
    Trigger,
};

use crate::clock::{Clock, MANUAL_POLL, Signal};
use crate::hub::{Hub, content_bytes};
use crate::queue::{Fate, InputQueue};
use crate::stats::CodecRole;

/// How long a waiting thread sleeps at most before re-checking its state (a guard: every
/// real wake-up comes through its signal).
pub(crate) const IDLE_RECHECK: Duration = Duration::from_millis(100);

/// What every thread of a run shares.
pub(crate) struct Shared {
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) stopping: Arc<AtomicBool>,
    pub(crate) started: Instant,
    /// Every waiter's signal, to wake them all on stop.
    pub(crate) signals: Mutex<Vec<Arc<Signal>>>,
    /// Every hub, to wake producers blocked on full queues on stop.
    pub(crate) hubs: Mutex<Vec<Arc<Hub>>>,
    /// Instances wait for it before their first step (a distributed run opens it once
    /// every process is up and subscribed).
    pub(crate) gate: Option<crate::StartGate>,
    /// The blueprint's supervision of a failed instance, and the restarts it has used.
    pub(crate) supervision: Supervisor,
    /// Lines the instances announced (`Context::announce`) that the runner has not taken.
    pub(crate) notices: Mutex<Vec<String>>,
}

/// The blueprint's [`Supervision`](streamwire_graph::Supervision) of this process's
/// instances, as the coordinator applies it to its workers: `stop` lets a failure end the
/// run; `restart:N` restarts a failed instance, at most N times over the run (all
/// instances together), and the next failure ends it.
pub(crate) struct Supervisor {
    policy: streamwire_graph::Supervision,
    restarts_used: AtomicU32,
}

impl Supervisor {
    pub(crate) fn new(policy: streamwire_graph::Supervision) -> Supervisor {
        Supervisor {
            policy,
            restarts_used: AtomicU32::new(0),
        }
    }

    /// Takes one restart from the budget: `Some((restart, max))`, or `None` when the
    /// policy is `stop` or the budget is spent.
    fn take_restart(&self) -> Option<(u32, u32)> {
        let streamwire_graph::Supervision::Restart { max } = self.policy else {
            return None;
        };
        self.restarts_used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                (used < max).then_some(used + 1)
            })
            .ok()
            .map(|used| (used + 1, max))
    }
}

impl Shared {
    pub(crate) fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(gate) = &self.gate {
            gate.wake();
        }
        for signal in self.signals.lock().iter() {
            signal.notify();
        }
        for hub in self.hubs.lock().iter() {
            hub.wake_blocked_producers();
        }
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Wall time since the run started: since its start gate opened when it has one (a
    /// distributed run's wait for its workers is not run time; zero until then).
    pub(crate) fn elapsed(&self) -> Duration {
        match &self.gate {
            Some(gate) => gate.opened_at().map_or(Duration::ZERO, |at| at.elapsed()),
            None => self.started.elapsed(),
        }
    }

    /// Wall nanoseconds since the run started, plus one (zero means "not set").
    pub(crate) fn mark(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_nanos())
            .unwrap_or(u64::MAX)
            .saturating_add(1)
    }
}

/// How a thread ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    Finished,
    Failed(String),
}

pub(crate) struct Exit {
    pub(crate) thread: usize,
    pub(crate) outcome: Outcome,
}

/// Counters of one instance, read by `stats()` while it runs.
#[derive(Default)]
pub(crate) struct InstanceCounters {
    pub(crate) steps: AtomicU64,
    pub(crate) cpu_nanos: AtomicU64,
    pub(crate) longest_step_nanos: AtomicU64,
    /// `Shared::mark()` when the current step began; zero between steps.
    pub(crate) step_began: AtomicU64,
    pub(crate) finished: AtomicBool,
    /// Set when it ended by an error or a panic.
    pub(crate) failed: AtomicBool,
    /// Run-clock nanoseconds (plus one) when its first step began; zero before.
    pub(crate) first_step_ns: AtomicU64,
    /// Run-clock nanoseconds (plus one) when its latest step began.
    pub(crate) last_step_ns: AtomicU64,
    pub(crate) counters: Mutex<BTreeMap<String, Counter>>,
}

/// What a module's `Context` reads.
pub(crate) struct InstanceContext {
    pub(crate) name: String,
    pub(crate) shared: Arc<Shared>,
    pub(crate) signal: Arc<Signal>,
    pub(crate) counters: Arc<InstanceCounters>,
    pub(crate) finish_requested: AtomicBool,
    /// None in the harness, which runs one module with no run around it to tap.
    pub(crate) taps: Option<Arc<dyn streamwire_core::TapService>>,
}

impl RunContext for InstanceContext {
    fn instance_name(&self) -> &str {
        &self.name
    }

    fn now(&self) -> Timestamp {
        self.shared.clock.now()
    }

    fn is_stopping(&self) -> bool {
        self.shared.is_stopping()
    }

    fn finish(&self) {
        self.finish_requested.store(true, Ordering::SeqCst);
    }

    fn counter(&self, name: &str) -> Counter {
        self.counters
            .counters
            .lock()
            .entry(name.to_owned())
            .or_default()
            .clone()
    }

    fn sleep_until(&self, deadline: Timestamp) -> bool {
        loop {
            if self.shared.is_stopping() {
                return false;
            }
            if self.shared.clock.now() >= deadline {
                return true;
            }
            let since = self.signal.count();
            let wait = self
                .shared
                .clock
                .real_time_until(deadline)
                .unwrap_or(MANUAL_POLL)
                .min(IDLE_RECHECK);
            self.signal.wait(since, wait);
        }
    }

    fn taps(&self) -> Option<Arc<dyn streamwire_core::TapService>> {
        self.taps.clone()
    }

    fn announce(&self, line: &str) {
        tracing::info!(instance = %self.name, "{line}");
        self.shared.notices.lock().push(line.to_owned());
    }
}

/// One instance's thread: its module, its bound inputs, its outputs.
pub(crate) struct InstanceWorker {
    pub(crate) thread: usize,
    /// Its `tracing` span (`process`, `instance`, `module`).
    pub(crate) span: tracing::Span,
    pub(crate) name: String,
    pub(crate) module_type: &'static str,
    pub(crate) module: Box<dyn ModuleValue>,
    pub(crate) trigger: Trigger,
    /// (port index, queue) of every input.
    pub(crate) inputs: Vec<(usize, Arc<InputQueue>)>,
    /// The hubs this instance's outputs publish into.
    pub(crate) outputs: Vec<Arc<Hub>>,
    /// (hub, subscriber id) of every subscription of its inputs, to detach on finish.
    pub(crate) subscriptions: Vec<(Arc<Hub>, u64)>,
    pub(crate) signal: Arc<Signal>,
    pub(crate) counters: Arc<InstanceCounters>,
    pub(crate) shared: Arc<Shared>,
    /// The run's taps, offered to the module (`Context::taps`).
    pub(crate) taps: Arc<dyn streamwire_core::TapService>,
}

/// The text of a panic payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// A call into a module's behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    Start,
    Step,
    Stop,
}

impl Phase {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Phase::Start => "start",
            Phase::Step => "step",
            Phase::Stop => "stop",
        }
    }
}

/// How a phase failed.
pub(crate) enum PhaseFailure {
    Error(streamwire_core::NodeError),
    Panic(String),
}

/// Calls one phase of `node`, catching a panic (the workspace keeps `panic = "unwind"`):
/// shared by the run's threads and the harness.
pub(crate) fn call_phase(
    node: &mut dyn streamwire_core::Node,
    phase: Phase,
    context: &dyn RunContext,
) -> Result<(), PhaseFailure> {
    let mut cx = Context::new(context);
    match catch_unwind(AssertUnwindSafe(|| match phase {
        Phase::Start => node.start(&mut cx),
        Phase::Step => node.step(&mut cx),
        Phase::Stop => node.stop(&mut cx),
    })) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(PhaseFailure::Error(error)),
        Err(payload) => Err(PhaseFailure::Panic(panic_text(payload.as_ref()))),
    }
}

impl InstanceWorker {
    pub(crate) fn run(mut self, exits: Sender<Exit>) {
        let context = InstanceContext {
            name: self.name.clone(),
            shared: self.shared.clone(),
            signal: self.signal.clone(),
            counters: self.counters.clone(),
            finish_requested: AtomicBool::new(false),
            taps: Some(self.taps.clone()),
        };
        let cpu_origin = cpu_time::ThreadTime::try_now().ok();
        let span = self.span.clone();
        let _entered = span.enter();
        if let Some(gate) = &self.shared.gate {
            gate.wait(&self.shared.stopping);
        }
        let mut outcome = if self.shared.is_stopping() {
            Some(Outcome::Finished)
        } else {
            self.call(Phase::Start, &context)
        };
        loop {
            self.step_until_done(&context, &mut outcome, cpu_origin.as_ref());
            if !self.restarted(&context, &mut outcome) {
                break;
            }
        }
        // `stop` runs even after a failed step, so a module can release what it holds;
        // the first failure is the one reported.
        let stopped = self.call(Phase::Stop, &context);
        let outcome = outcome.or(stopped);
        for hub in &self.outputs {
            hub.close();
        }
        for (hub, id) in &self.subscriptions {
            // Detached, not removed: what its producers publish from now on is counted
            // on its inputs as not sent.
            hub.detach(*id);
        }
        self.module.visit_ports(&mut |_, port| port.unbind());
        if matches!(outcome, Some(Outcome::Failed(_))) {
            self.counters.failed.store(true, Ordering::SeqCst);
        }
        self.counters.finished.store(true, Ordering::SeqCst);
        let _ = exits.send(Exit {
            thread: self.thread,
            outcome: outcome.unwrap_or(Outcome::Finished),
        });
    }

    /// Steps the instance whenever its trigger fires, until it finishes, fails (`outcome`
    /// set), or the run stops.
    fn step_until_done(
        &mut self,
        context: &InstanceContext,
        outcome: &mut Option<Outcome>,
        cpu_origin: Option<&cpu_time::ThreadTime>,
    ) {
        let mut next_tick = self.shared.clock.now();
        while outcome.is_none() {
            if self.shared.is_stopping() || context.finish_requested.load(Ordering::SeqCst) {
                break;
            }
            let since = self.signal.count();
            let (ready, done, wait) = self.readiness(&mut next_tick);
            if ready {
                let began = Instant::now();
                self.counters
                    .step_began
                    .store(self.shared.mark(), Ordering::SeqCst);
                let step_at = self.shared.clock.now().as_nanos().saturating_add(1);
                let _ = self.counters.first_step_ns.compare_exchange(
                    0,
                    step_at,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                self.counters.last_step_ns.store(step_at, Ordering::Relaxed);
                *outcome = self.call(Phase::Step, context);
                self.counters.step_began.store(0, Ordering::SeqCst);
                let took = u64::try_from(began.elapsed().as_nanos()).unwrap_or(u64::MAX);
                self.counters.steps.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .longest_step_nanos
                    .fetch_max(took, Ordering::Relaxed);
                if let Some(cpu) = cpu_origin.and_then(|t| t.try_elapsed().ok()) {
                    self.counters.cpu_nanos.store(
                        u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX),
                        Ordering::Relaxed,
                    );
                }
            } else if done {
                break;
            } else {
                self.signal.wait(since, wait);
            }
        }
    }

    /// After a failure, the blueprint's supervision: restarts the instance in place (its
    /// `stop`, then its `start` again; its fields keep their values) while the budget
    /// lasts, and says so; false when the failure stands (or there was none).
    fn restarted(&mut self, context: &InstanceContext, outcome: &mut Option<Outcome>) -> bool {
        if !matches!(outcome, Some(Outcome::Failed(_))) || self.shared.is_stopping() {
            return false;
        }
        let Some((restart, max)) = self.shared.supervision.take_restart() else {
            return false;
        };
        tracing::warn!(
            "supervision: restarting instance `{}` (restart {restart} of {max})",
            self.name
        );
        // What its `stop` says is logged by `call`; the restart goes on regardless.
        let _ = self.call(Phase::Stop, context);
        *outcome = self.call(Phase::Start, context);
        true
    }

    /// Calls one phase, turning an error or a panic into the failure that stops the run.
    /// An error while the run is stopping (a publish refused) is not a failure.
    fn call(&mut self, phase: Phase, context: &InstanceContext) -> Option<Outcome> {
        let Some(node) = self.module.behaviour() else {
            return Some(Outcome::Failed(format!(
                "instance `{}` ({}) has no behaviour",
                self.name, self.module_type
            )));
        };
        let failure = match call_phase(node, phase, context) {
            Ok(()) => return None,
            // A publish refused because the run is stopping is not a failure.
            Err(PhaseFailure::Error(_)) if self.shared.is_stopping() => return None,
            Err(PhaseFailure::Error(error)) => format!("returned an error: {error}"),
            Err(PhaseFailure::Panic(message)) => format!("panicked: {message}"),
        };
        let text = format!(
            "instance `{}` ({}) failed in {}: {failure}",
            self.name,
            self.module_type,
            phase.name()
        );
        tracing::error!("{text}");
        Some(Outcome::Failed(text))
    }

    fn readiness(&self, next_tick: &mut Timestamp) -> (bool, bool, Duration) {
        readiness(
            &self.trigger,
            &self.inputs,
            self.shared.clock.as_ref(),
            next_tick,
        )
    }
}

/// For `trigger` over `inputs`: (ready to step, will never be ready again, how long to
/// wait otherwise). Shared by the run's threads and the harness.
pub(crate) fn readiness(
    trigger: &Trigger,
    inputs: &[(usize, Arc<InputQueue>)],
    clock: &dyn Clock,
    next_tick: &mut Timestamp,
) -> (bool, bool, Duration) {
    let queue = |index: Option<usize>| {
        let index = index?;
        inputs.iter().find(|(i, _)| *i == index).map(|(_, q)| q)
    };
    let all_closed = !inputs.is_empty() && inputs.iter().all(|(_, q)| q.is_closed());
    match trigger {
        Trigger::AnyInput => (
            inputs.iter().any(|(_, q)| !q.is_empty()),
            all_closed,
            IDLE_RECHECK,
        ),
        Trigger::Input(port) => match queue(port.index()) {
            Some(q) => (!q.is_empty(), q.is_closed(), IDLE_RECHECK),
            None => (false, true, IDLE_RECHECK),
        },
        Trigger::All(ports) => {
            let queues: Vec<_> = ports.iter().filter_map(|p| queue(p.index())).collect();
            (
                !queues.is_empty() && queues.iter().all(|q| !q.is_empty()),
                queues.is_empty() || queues.iter().any(|q| q.is_closed()),
                IDLE_RECHECK,
            )
        }
        Trigger::Period(period) => {
            let now = clock.now();
            if now >= *next_tick {
                let period_nanos = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX).max(1);
                let mut next = next_tick.as_nanos().saturating_add(period_nanos);
                // Behind by more than a period (a slow step): skip the missed ticks
                // instead of bursting to catch up.
                if next <= now.as_nanos() {
                    next = now.as_nanos().saturating_add(period_nanos);
                }
                *next_tick = Timestamp::from_nanos(next);
                (true, false, Duration::ZERO)
            } else {
                let wait = clock
                    .real_time_until(*next_tick)
                    .unwrap_or(MANUAL_POLL)
                    .min(IDLE_RECHECK);
                (false, all_closed, wait)
            }
        }
        Trigger::FreeRunning => (true, all_closed, Duration::ZERO),
        _ => (false, true, IDLE_RECHECK),
    }
}

/// Counters of one codec node.
#[derive(Default)]
pub(crate) struct CodecCounters {
    pub(crate) done: AtomicU64,
    pub(crate) skipped: AtomicU64,
    pub(crate) passed_through: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) bytes_in: AtomicU64,
    pub(crate) bytes_out: AtomicU64,
    pub(crate) busy_nanos: AtomicU64,
}

/// One codec node's thread.
pub(crate) struct CodecWorker {
    pub(crate) thread: usize,
    /// Its `tracing` span (`process`, `stream`, `port`, `role`, `codec`).
    pub(crate) span: tracing::Span,
    pub(crate) role: CodecRole,
    pub(crate) codec: Arc<dyn DynCodec>,
    /// The encoded message's wire name (what an encoder passes through unchanged).
    pub(crate) encoded_type: &'static str,
    pub(crate) input: Arc<InputQueue>,
    pub(crate) output: Arc<Hub>,
    pub(crate) subscription: Option<(Arc<Hub>, u64)>,
    pub(crate) signal: Arc<Signal>,
    pub(crate) counters: Arc<CodecCounters>,
    pub(crate) shared: Arc<Shared>,
}

impl CodecWorker {
    pub(crate) fn run(self, exits: Sender<Exit>) {
        let span = self.span.clone();
        let _entered = span.enter();
        loop {
            let since = self.signal.count();
            if self.shared.is_stopping() {
                break;
            }
            match self.input.pop() {
                Some(envelope) => self.handle(envelope),
                None if self.input.is_closed() => break,
                None => self.signal.wait(since, IDLE_RECHECK),
            }
        }
        self.output.close();
        if let Some((hub, id)) = &self.subscription {
            // Detached, not removed: what reaches its stream from now on (published, or
            // arriving off the wire after the stop) is still counted, through its queue,
            // on the rows of the consumers it served.
            hub.detach(*id);
        }
        let _ = exits.send(Exit {
            thread: self.thread,
            outcome: Outcome::Finished,
        });
    }

    fn handle(&self, envelope: Envelope) {
        let c = &self.counters;
        if self.role == CodecRole::Encode {
            // Encode only while someone needs the bytes (ROS image_transport publishes
            // compressed images only while subscribed).
            if !self.output.has_demand() {
                c.skipped.fetch_add(1, Ordering::Relaxed);
                // Not sent to the consumers downstream, which have all finished.
                self.output.account_on_subscribers(Fate::Unmatched);
                return;
            }
            if envelope.message.type_name() == self.encoded_type {
                // Ready-made bytes from the producer: byte-identical, never re-encoded.
                c.passed_through.fetch_add(1, Ordering::Relaxed);
                self.output.forward(envelope);
                return;
            }
        }
        let bytes_in = content_bytes(envelope.message.as_ref());
        let began = Instant::now();
        let result = match self.role {
            CodecRole::Encode => self.codec.encode_any(envelope.message.as_ref()),
            _ => self.codec.decode_any(envelope.message.as_ref()),
        };
        c.busy_nanos.fetch_add(
            u64::try_from(began.elapsed().as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        match result {
            Ok(message) => {
                let message: Arc<dyn streamwire_core::AnyMessage> = Arc::from(message);
                c.done.fetch_add(1, Ordering::Relaxed);
                c.bytes_in.fetch_add(bytes_in, Ordering::Relaxed);
                c.bytes_out
                    .fetch_add(content_bytes(message.as_ref()), Ordering::Relaxed);
                self.output.forward(Envelope {
                    header: envelope.header,
                    message,
                });
            }
            Err(error) => {
                c.failed.fetch_add(1, Ordering::Relaxed);
                self.output.failed(&error);
                if self.role == CodecRole::Decode {
                    self.output.count_on_subscribers(DropReason::DecodeFailed);
                }
            }
        }
    }
}
