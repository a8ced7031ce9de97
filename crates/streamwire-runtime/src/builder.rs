//! Starting a run: [`Runtime::start`] fills a [`RunBuilder`] with one slot per node of the
//! plan, keyed by the plan's ids, one phase at a time, then starts its threads.
//!
//! The phases, in order: check behaviour, hubs, links, bind ports, triggers, codec
//! workers, tap encoders, ready-made decoders, senders, spawn. Each refuses what cannot
//! run before any thread exists; only `spawn` starts threads.

mod slots;
mod spans;
mod threads;
mod wiring;

use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use streamwire_core::{History, MessageInfo, ModuleValue, Trigger};
use streamwire_graph::{CodecNodeId, InstanceIndex, Plan, RunnablePlan};
use streamwire_transport::{Loopback, Transport};

use crate::clock::Signal;
use crate::handle::RunHandle;
use crate::hub::{Hub, Passthrough};
use crate::options::{RunError, RunOptions, StartError};
use crate::queue::{Bound, InputQueue};
use crate::stats::{InstanceRecord, Records};
use crate::taps::StreamHub;
use crate::worker::{InstanceCounters, Shared, Supervisor};

use slots::{CodecSlot, InstanceSlot, Layout, Slots};
use threads::PendingThread;

/// Starts runs.
#[derive(Debug)]
pub struct Runtime;

/// `blueprint.run(options)`: build the plan and start it, in one call.
///
/// ```
/// # use std::time::Duration;
/// # use serde::{Deserialize, Serialize};
/// # use streamwire::prelude::*;
/// # #[derive(Clone, Debug, Serialize, Deserialize, Message)]
/// # #[message(name = "doc/Tick")]
/// # pub struct Tick(u32);
///
/// /// Counts to three at 100 Hz, then finishes.
/// #[derive(Module)]
/// pub struct Counter { pub tick: Out<Tick>, #[state] pub n: u32 }
///
/// impl Node for Counter {
///     fn trigger(&self) -> Trigger { Trigger::rate(100.0) }
///     fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
///         if self.n == 3 { cx.finish(); } else { self.tick.publish(Tick(self.n))?; self.n += 1; }
///         Ok(())
///     }
/// }
///
/// /// Prints ticks: a reactor.
/// #[derive(Module)]
/// pub struct Printer { pub tick: In<Tick> }
///
/// impl Node for Printer {
///     fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
///         while let Some(tick) = self.tick.recv()? { println!("tick {}", tick.message.0); }
///         Ok(())
///     }
/// }
///
/// let mut blueprint = Blueprint::new();
/// blueprint.add("counter", Counter { tick: Out::new(), n: 0 });
/// blueprint.add("printer", Printer { tick: In::new() });
/// blueprint.autoconnect();
/// let report = blueprint.run(RunOptions::default())?.wait_timeout(Duration::from_secs(10));
/// assert_eq!(report.reason, EndReason::Finished);
/// assert_eq!(report.stats.outputs[0].published, 3);
/// # Ok::<(), streamwire::runtime::RunError>(())
/// ```
pub trait Run {
    /// Builds the plan and starts every module and codec node of it.
    fn run(self, options: RunOptions) -> Result<RunHandle, RunError>;
}

impl Run for streamwire_graph::Blueprint {
    fn run(self, options: RunOptions) -> Result<RunHandle, RunError> {
        Ok(Runtime::start(self.into_runnable()?, options)?)
    }
}

impl Runtime {
    /// Starts the instances and codec nodes of `runnable` that run in this process, each
    /// on a named thread, and returns the handle of the run.
    ///
    /// By default every node of the plan runs here, encoders and decoders where the plan
    /// put them, each planned process as a partition of its own joined to the others only
    /// by [`RunOptions::transport`] ([`Partitions`](crate::Partitions)). With
    /// [`RunOptions::local`] only that process's nodes run here; the rest of the plan runs
    /// elsewhere (the workers of a distributed run), reached through the transport.
    pub fn start(runnable: RunnablePlan, options: RunOptions) -> Result<RunHandle, StartError> {
        let (plan, modules) = runnable.into_parts();
        let mut run = RunBuilder::new(plan, modules, &options)?;
        run.check_behaviour()?;
        run.hubs()?;
        run.links()?;
        run.bind_ports()?;
        run.triggers()?;
        run.codec_workers()?;
        run.tap_encoders()?;
        run.ready_made_decoders();
        run.senders()?;
        run.spawn()
    }
}

/// A run being built: one slot per node of the plan, filled phase by phase (see
/// [`Runtime::start`] for their order), and what the phases collect for the handle.
pub(crate) struct RunBuilder {
    /// The plan being started: every name, port, link and placement is read from it
    /// (shared, so that a phase reads it while it fills the slots).
    plan: Arc<Plan>,
    /// Makes the run's signals, hubs and queues, registered to be woken on stop.
    make: Make,
    /// The partitions, and which one runs here.
    layout: Layout,
    /// The transport joining the partitions; `None` without partitions.
    transport: Option<Arc<dyn Transport>>,
    /// One slot per instance of the plan.
    instances: Slots<InstanceIndex, InstanceSlot>,
    /// One slot per codec node of the plan (made in phase `hubs`).
    codecs: Slots<CodecNodeId, CodecSlot>,
    /// Every hub a partition publishes into, producers first: what taps look up and
    /// senders publish.
    streams: Vec<StreamHub>,
    /// (stream, partition) of every stream the plan sends to another partition (phase
    /// `links`): a distributed run starts its sources once their publishers reach them.
    planned_remote: Vec<(String, String)>,
    /// (stream, history) of every stream sent to another partition: the strictest
    /// history of its receiving ends there, which its sender's queue keeps (phase
    /// `links`).
    remote_history: Vec<(String, History)>,
    /// The rows `stats()` reads, filled as the phases go.
    records: Records,
    /// The plan's codec nodes' threads (phase `codec_workers`), started first so that
    /// they are ready before producers publish.
    codec_threads: Vec<PendingThread>,
    /// The senders' threads (phase `senders`), started second.
    sender_threads: Vec<PendingThread>,
    /// The tap encoders' threads (phase `tap_encoders`), started third; the instances'
    /// threads come last (phase `spawn`).
    tap_encoder_threads: Vec<PendingThread>,
    /// How long `wait` gives the threads to return once stopped (`RunOptions`).
    stop_deadline: Duration,
    /// Depth of a tap's queue (`RunOptions`).
    tap_depth: usize,
}

impl RunBuilder {
    /// A slot per instance, each in its partition with its module, signal and counters;
    /// no hub, queue or thread yet.
    fn new(
        plan: Plan,
        modules: Vec<Box<dyn ModuleValue>>,
        options: &RunOptions,
    ) -> Result<RunBuilder, StartError> {
        let layout = Layout::of(&plan, options)?;
        let transport: Option<Arc<dyn Transport>> = layout.is_partitioned().then(|| {
            options
                .transport
                .clone()
                .unwrap_or_else(|| Arc::new(Loopback::new()))
        });
        let make = Make {
            shared: Arc::new(Shared {
                clock: options.clock.clone(),
                stopping: Arc::new(AtomicBool::new(false)),
                started: Instant::now(),
                signals: Mutex::new(Vec::new()),
                hubs: Mutex::new(Vec::new()),
                gate: options.start_gate.clone(),
                supervision: Supervisor::new(plan.supervision()),
                notices: Mutex::new(Vec::new()),
            }),
            keep_all_depth: options.keep_all_depth,
            keep_all_deadline: options.keep_all_deadline,
        };
        let mut records = Records::new(options.stall_after);
        let mut modules = modules.into_iter();
        let instances = plan
            .instances()
            .map(|node| {
                let partition = layout.partition_of(&node.placement.to_string());
                let here = layout.is_here(partition);
                let counters = Arc::new(InstanceCounters::default());
                records.instances.push(InstanceRecord {
                    name: node.name.clone(),
                    module_type: node.module_type,
                    counters: counters.clone(),
                    here,
                    process: node.placement.process_name().to_owned(),
                    host: node.placement.host().to_owned(),
                    period: None,
                });
                InstanceSlot {
                    partition,
                    here,
                    module: modules.next(),
                    ports: Slots::default(),
                    signal: make.signal(),
                    trigger: Trigger::AnyInput,
                    subscriptions: Vec::new(),
                    counters,
                }
            })
            .collect();
        Ok(RunBuilder {
            plan: Arc::new(plan),
            make,
            layout,
            transport,
            instances,
            codecs: Slots::default(),
            streams: Vec::new(),
            planned_remote: Vec::new(),
            remote_history: Vec::new(),
            records,
            codec_threads: Vec::new(),
            sender_threads: Vec::new(),
            tap_encoder_threads: Vec::new(),
            stop_deadline: options.stop_deadline,
            tap_depth: options.tap_depth,
        })
    }
}

/// Makes the run's signals, hubs and queues, each registered with the run's shared state
/// so that a stop wakes it.
struct Make {
    /// The run's shared state: clock, stop token, and the lists a stop wakes.
    shared: Arc<Shared>,
    /// Depth of a `keep_all` queue (`RunOptions`).
    keep_all_depth: usize,
    /// How long a producer waits on a full `keep_all` queue (`RunOptions`).
    keep_all_deadline: Duration,
}

impl Make {
    /// A new signal, woken on stop.
    fn signal(&self) -> Arc<Signal> {
        let signal = Signal::new();
        self.shared.signals.lock().push(signal.clone());
        signal
    }

    /// A new hub of `stream`, whose blocked producers are woken on stop.
    fn hub(
        &self,
        stream: &str,
        message: &'static str,
        passthrough: Option<Arc<Passthrough>>,
    ) -> Arc<Hub> {
        let hub = Hub::new(
            stream.to_owned(),
            message,
            self.shared.clock.clone(),
            self.shared.stopping.clone(),
            passthrough,
        );
        self.shared.hubs.lock().push(hub.clone());
        hub
    }

    /// A queue bounded as `history` says, notifying `signal`.
    fn queue(&self, history: History, signal: &Arc<Signal>) -> Arc<InputQueue> {
        self.queue_bounded(self.bound(history), signal)
    }

    /// The bound of a queue keeping `history`, with the run's keep-all depth and deadline.
    fn bound(&self, history: History) -> Bound {
        Bound::from_history(history, self.keep_all_depth, self.keep_all_deadline)
    }

    /// A queue of bound `bound`, notifying `signal`.
    fn queue_bounded(&self, bound: Bound, signal: &Arc<Signal>) -> Arc<InputQueue> {
        InputQueue::new(
            bound,
            signal.clone(),
            self.shared.clock.clone(),
            self.shared.stopping.clone(),
        )
    }
}

/// A message type as a transport checks it: wire name and schema version.
fn schema(info: MessageInfo) -> (&'static str, u32) {
    (info.name(), info.schema_version())
}
