//! Testing one module without a blueprint, on the runtime's real queues.

use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use streamwire_core::{
    Delivered, Direction, DropReason, Header, In, InputBinding, InstanceId, Module, Node, Out,
    Payload, PortHandle, Timestamp, Trigger,
};

use crate::clock::{ManualClock, Signal};
use crate::hub::{Demand, Hub, Wants};
use crate::queue::{Bound, InputQueue};
use crate::stats::DropCounts;
use crate::worker::{
    InstanceContext, InstanceCounters, Phase, PhaseFailure, Shared, Supervisor, call_phase,
    readiness,
};

/// How many messages the harness keeps per output until taken (a keep-last queue: the
/// harness is bounded like everything else).
const COLLECT_DEPTH: usize = 100_000;

/// Why a harness call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// The module returned an error.
    #[error("{phase} returned an error: {source}")]
    Failed {
        /// `start`, `step` or `stop`.
        phase: &'static str,
        /// The module's error.
        source: streamwire_core::NodeError,
    },
    /// The module panicked.
    #[error("{phase} panicked: {message}")]
    Panicked {
        /// `start`, `step` or `stop`.
        phase: &'static str,
        /// The panic's message.
        message: String,
    },
    /// A handle that names no port of this module (a hand-made one).
    #[error("the module has no port number {index} of that direction")]
    NoSuchPort {
        /// The handle's port index.
        index: usize,
    },
}

/// Runs one module by hand: feed typed inputs, step it (or run it until its trigger no
/// longer fires), move its manual clock, and collect its typed outputs with their
/// headers and every drop its queues counted. The queues are the runtime's own, with the
/// ports' QoS, so keep-last drops and triggers behave as they will in a blueprint.
///
/// ```
/// # use serde::{Deserialize, Serialize};
/// # use streamwire::prelude::*;
/// # #[derive(Clone, Debug, Serialize, Deserialize, Message)]
/// # #[message(name = "doc/Count")]
/// # pub struct Count(u32);
///
/// /// Doubles counts.
/// #[derive(Module)]
/// pub struct Doubler {
///     pub count: In<Count>,
///     pub doubled: Out<Count>,
/// }
///
/// impl Node for Doubler {
///     fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
///         while let Some(count) = self.count.recv()? {
///             self.doubled.publish(Count(count.message.0 * 2))?;
///         }
///         Ok(())
///     }
/// }
///
/// let mut harness = Harness::new(Doubler { count: In::new(), doubled: Out::new() });
/// let ports = harness.ports();
/// harness.feed(ports.count, Count(21))?;
/// harness.run_until_idle()?;
/// let out = harness.take(ports.doubled);
/// assert_eq!(out.iter().map(|d| d.message.0).collect::<Vec<_>>(), [42]);
/// assert_eq!(out[0].header.seq, 0);
/// # Ok::<(), streamwire::runtime::HarnessError>(())
/// ```
pub struct Harness<M: Module + Node> {
    module: M,
    clock: Arc<ManualClock>,
    context: InstanceContext,
    /// Per port index: the feeding hub and the input's queue.
    inputs: Vec<Option<(Arc<Hub>, Arc<InputQueue>)>>,
    /// Per port index: the output's hub and the collecting queue.
    outputs: Vec<Option<(Arc<Hub>, Arc<InputQueue>)>>,
    next_tick: Timestamp,
    started: bool,
}

impl<M: Module + Node> Harness<M> {
    /// Binds `module`'s ports to queues with their QoS (keep-all inputs: depth 10, and a
    /// full one drops at once, since no other thread could make room). The clock is
    /// manual, starting at 1 s after the epoch.
    pub fn new(mut module: M) -> Harness<M> {
        let clock = Arc::new(ManualClock::new(Timestamp::from_nanos(1_000_000_000)));
        let stopping = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared {
            clock: clock.clone(),
            stopping: stopping.clone(),
            started: Instant::now(),
            signals: Mutex::new(Vec::new()),
            hubs: Mutex::new(Vec::new()),
            gate: None,
            // A module in the harness fails its test: never restarted behind its back.
            supervision: Supervisor::new(streamwire_graph::Supervision::Stop),
            notices: Mutex::new(Vec::new()),
        });
        let signal = Signal::new();
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        for info in M::PORTS {
            let stream = info.stream().to_owned();
            match info.direction() {
                Direction::Input => {
                    let queue = InputQueue::new(
                        Bound::from_history(info.qos().history, 10, Duration::ZERO),
                        signal.clone(),
                        clock.clone(),
                        stopping.clone(),
                    );
                    let feeder = Hub::new(
                        stream,
                        info.message().name(),
                        clock.clone(),
                        stopping.clone(),
                        None,
                    );
                    feeder.subscribe(queue.clone(), Wants::Any, Demand::Always);
                    inputs.push(Some((feeder, queue)));
                    outputs.push(None);
                }
                Direction::Output => {
                    let hub = Hub::new(
                        stream,
                        info.message().name(),
                        clock.clone(),
                        stopping.clone(),
                        None,
                    );
                    let collector = InputQueue::new(
                        Bound::KeepLast(COLLECT_DEPTH),
                        Signal::new(),
                        clock.clone(),
                        stopping.clone(),
                    );
                    hub.subscribe(collector.clone(), Wants::Any, Demand::Always);
                    outputs.push(Some((hub, collector)));
                    inputs.push(None);
                }
            }
        }
        module.visit_ports(&mut |index, port| {
            // Directions come from the same metadata, so binding cannot fail here.
            let _ = match (&inputs[index], &outputs[index]) {
                (Some((_, queue)), _) => port.bind_input(index, queue.clone()),
                (_, Some((hub, _))) => port.bind_output(index, hub.clone()),
                _ => Ok(()),
            };
        });
        let next_tick = clock_now(&clock);
        Harness {
            module,
            clock,
            context: InstanceContext {
                name: M::TYPE_NAME.to_owned(),
                shared,
                signal,
                counters: Arc::new(InstanceCounters::default()),
                finish_requested: AtomicBool::new(false),
                // One module alone: no run to tap (`Context::taps` is `None`).
                taps: None,
            },
            inputs,
            outputs,
            next_tick,
            started: false,
        }
    }

    /// The module's typed port handles, to name ports in `feed`, `take` and `drops`.
    pub fn ports(&self) -> M::Ports {
        M::port_handles(InstanceId::new(0, 0))
    }

    /// The manual run clock: `harness.clock().advance(..)` moves time for periods,
    /// latencies and keep-all deadlines.
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// The module, to inspect its state.
    pub fn module(&self) -> &M {
        &self.module
    }

    /// Queues `message` on input `port` (by its QoS: a full keep-last queue drops its
    /// oldest, counted). The header gets the next sequence number and the clock's now.
    pub fn feed<P: Payload>(
        &mut self,
        port: PortHandle<In<P>>,
        message: P::Delivered,
    ) -> Result<Header, HarnessError>
    where
        P::Delivered: streamwire_core::Message,
    {
        let (feeder, _) = self.input(port.port_index())?;
        Ok(feeder.publish_new(Arc::new(message)))
    }

    /// Closes input `port`: its producer finished; once drained the input reports closed.
    pub fn close<P: Payload>(&mut self, port: PortHandle<In<P>>) -> Result<(), HarnessError> {
        let (feeder, _) = self.input(port.port_index())?;
        feeder.close();
        Ok(())
    }

    /// Everything the module published on `port` since the last `take`, with headers.
    pub fn take<P: Payload>(&mut self, port: PortHandle<Out<P>>) -> Vec<Delivered<P::Logical>>
    where
        P::Logical: streamwire_core::Message,
    {
        let Some(Some((_, collector))) = self.outputs.get(port.port_index()) else {
            return Vec::new();
        };
        let mut taken = Vec::new();
        while let Some(envelope) = collector.pop() {
            if let Some(message) = envelope.message.as_any().downcast_ref::<P::Logical>() {
                taken.push(Delivered {
                    header: envelope.header,
                    message: message.clone(),
                });
            }
        }
        taken
    }

    /// What input `port` dropped, by reason.
    pub fn drops<P: Payload>(&self, port: PortHandle<In<P>>) -> DropCounts {
        let mut counts = DropCounts::default();
        if let Some(Some((_, queue))) = self.inputs.get(port.port_index()) {
            for reason in DropReason::ALL {
                counts.set(reason, queue.dropped(reason));
            }
        }
        counts
    }

    /// Latency of input `port`: arrival (the module's `recv`) minus publish time on the
    /// manual clock, with deliveries "from the future" counted as clock skew.
    pub fn latency<P: Payload>(&self, port: PortHandle<In<P>>) -> crate::LatencySummary {
        match self.inputs.get(port.port_index()) {
            Some(Some((_, queue))) => queue.latency(),
            _ => crate::LatencySummary::default(),
        }
    }

    /// The module's own counter `name` (`cx.counter(name)`), zero if never used.
    pub fn counter(&self, name: &str) -> u64 {
        self.context
            .counters
            .counters
            .lock()
            .get(name)
            .map_or(0, |c| c.get())
    }

    /// True once the module called `cx.finish()`.
    pub fn is_finished(&self) -> bool {
        self.context.finish_requested.load(Ordering::SeqCst)
    }

    /// Calls `start` (done by the first `step` if not called).
    pub fn start(&mut self) -> Result<(), HarnessError> {
        self.started = true;
        self.call(Phase::Start)
    }

    /// Calls `step` once, whether or not the trigger would fire.
    pub fn step(&mut self) -> Result<(), HarnessError> {
        if !self.started {
            self.start()?;
        }
        self.call(Phase::Step)
    }

    /// Steps while the module's trigger fires (at most 10,000 times); returns how many
    /// steps ran. A period trigger fires once per elapsed period of the manual clock.
    pub fn run_until_idle(&mut self) -> Result<usize, HarnessError> {
        if !self.started {
            self.start()?;
        }
        let trigger: Trigger = self.module.trigger();
        let queues: Vec<(usize, Arc<InputQueue>)> = self
            .inputs
            .iter()
            .enumerate()
            .filter_map(|(i, slot)| slot.as_ref().map(|(_, q)| (i, q.clone())))
            .collect();
        let mut steps = 0;
        while steps < 10_000 && !self.is_finished() {
            let (ready, _, _) =
                readiness(&trigger, &queues, self.clock.as_ref(), &mut self.next_tick);
            if !ready || matches!(trigger, Trigger::FreeRunning) && steps > 0 {
                break;
            }
            self.call(Phase::Step)?;
            steps += 1;
        }
        Ok(steps)
    }

    /// Calls `stop`.
    pub fn stop(&mut self) -> Result<(), HarnessError> {
        self.call(Phase::Stop)
    }

    fn input(&self, index: usize) -> Result<&(Arc<Hub>, Arc<InputQueue>), HarnessError> {
        self.inputs
            .get(index)
            .and_then(Option::as_ref)
            .ok_or(HarnessError::NoSuchPort { index })
    }

    fn call(&mut self, phase: Phase) -> Result<(), HarnessError> {
        call_phase(&mut self.module, phase, &self.context).map_err(|failure| match failure {
            PhaseFailure::Error(source) => HarnessError::Failed {
                phase: phase.name(),
                source,
            },
            PhaseFailure::Panic(message) => HarnessError::Panicked {
                phase: phase.name(),
                message,
            },
        })
    }
}

fn clock_now(clock: &ManualClock) -> Timestamp {
    crate::Clock::now(clock)
}

impl<M: Module + Node> std::fmt::Debug for Harness<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("module", &M::TYPE_NAME)
            .finish_non_exhaustive()
    }
}
