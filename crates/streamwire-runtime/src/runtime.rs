//! Starting a run from a plan, and the handle that watches, taps and stops it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use streamwire_core::{
    CodecParams, Delivered, Direction, DropReason, History, InputBinding, Message, MessageInfo,
    ModuleValue, Qos, Trigger,
};
use streamwire_graph::{CodecKind, RunnablePlan};
use streamwire_transport::{Loopback, Transport, TransportError};

use crate::clock::{Clock, Signal, SystemClock};
use crate::hub::{Demand, Hub, LinkCounters, Passthrough, Wants};
use crate::partition::{Ingress, Partitions, SenderRecord, SenderWorker, StartGate};
use crate::queue::{Bound, InputQueue};
use crate::stats::{
    CodecRole, CodecStats, DropCounts, EndReason, InputStats, InstanceStats, LinkStats,
    OutputStats, RunReport, RunStats, TapStats,
};
use crate::wiring::{End, Wiring};
use crate::worker::{
    CodecCounters, CodecWorker, Exit, InstanceCounters, InstanceWorker, Outcome, Shared,
};

/// How a run behaves: its clock, queue bounds and deadlines.
#[derive(Clone)]
pub struct RunOptions {
    /// The run clock (default: wall time). Tests pass a [`ManualClock`](crate::ManualClock).
    pub clock: Arc<dyn Clock>,
    /// How long `stop` waits for threads to return before naming them (default 2 s).
    pub stop_deadline: Duration,
    /// Depth of a `keep_all` input's queue (default 10).
    pub keep_all_depth: usize,
    /// How long a producer waits on a full `keep_all` queue before dropping, run-clock
    /// time (default 100 ms).
    pub keep_all_deadline: Duration,
    /// A step running longer than this marks its instance `stalled` (default 1 s).
    pub stall_after: Duration,
    /// Depth of a tap's keep-last queue (default 16).
    pub tap_depth: usize,
    /// How the plan's processes run here (default: each is a partition, joined to the
    /// others by the loopback transport).
    pub partitions: Partitions,
    /// The transport joining partitions (default: a new [`Loopback`] per run). Pass a
    /// clone of your own loopback to put frames on it from a test.
    pub transport: Option<Arc<dyn Transport>>,
    /// Run only this planned process (`host/process`, as the plan names it) here: its
    /// instances and codec nodes start, the rest of the plan runs elsewhere and is reached
    /// through [`transport`](RunOptions::transport) (a worker of a distributed run).
    /// Default: every process here.
    pub local: Option<String>,
    /// Hold the modules before their first step until this gate opens (default: start at
    /// once).
    pub start_gate: Option<StartGate>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            clock: Arc::new(SystemClock),
            stop_deadline: Duration::from_secs(2),
            keep_all_depth: 10,
            keep_all_deadline: Duration::from_millis(100),
            stall_after: Duration::from_secs(1),
            tap_depth: 16,
            partitions: Partitions::default(),
            transport: None,
            local: None,
            start_gate: None,
        }
    }
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("stop_deadline", &self.stop_deadline)
            .field("keep_all_depth", &self.keep_all_depth)
            .field("keep_all_deadline", &self.keep_all_deadline)
            .field("stall_after", &self.stall_after)
            .field("tap_depth", &self.tap_depth)
            .field("partitions", &self.partitions)
            .field("transport", &self.transport.as_ref().map(|t| t.name()))
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A module type has no `impl Node`: it describes ports but does nothing.
    #[error(
        "instance `{instance}` ({module_type}) has no behaviour: implement `streamwire::Node` for `{module_type}` (its `step` is what runs)"
    )]
    NoBehaviour {
        /// The instance.
        instance: String,
        /// Its module type.
        module_type: &'static str,
    },
    /// A module's trigger cannot fire.
    #[error("instance `{instance}` ({module_type}): {reason}")]
    BadTrigger {
        /// The instance.
        instance: String,
        /// Its module type.
        module_type: &'static str,
        /// What is wrong, and what to write instead.
        reason: String,
    },
    /// A codec node could not be built from the plan's parameters.
    #[error("codec node `{node}` cannot be built: {error}")]
    Codec {
        /// The node, e.g. `encode jpeg color_image`.
        node: String,
        /// The codec's error.
        #[source]
        error: streamwire_core::CodecError,
    },
    /// A port refused its binding.
    #[error("port `{port}` cannot be bound: {error}")]
    Bind {
        /// `instance.port`.
        port: String,
        /// Why.
        #[source]
        error: streamwire_core::PortError,
    },
    /// The transport refused a publisher or a subscription.
    #[error("stream `{stream}` cannot cross between partitions: {error}")]
    Transport {
        /// The stream.
        stream: String,
        /// Why.
        #[source]
        error: TransportError,
    },
    /// The process asked to run here is not one of the plan's.
    #[error("no process `{process}` in the plan (processes: {known})")]
    UnknownProcess {
        /// The name asked for.
        process: String,
        /// The plan's processes, comma separated.
        known: String,
    },
    /// The operating system refused a thread.
    #[error("cannot start the thread of `{name}`")]
    Spawn {
        /// The thread's name.
        name: String,
        /// The OS error.
        #[source]
        error: std::io::Error,
    },
}

/// Why a tap could not attach.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TapError {
    /// No stream of that name runs here.
    #[error("no stream `{stream}` in this run (streams: {known})")]
    UnknownStream {
        /// The name asked for.
        stream: String,
        /// The streams that exist, comma separated.
        known: String,
    },
    /// The stream carries another message type.
    #[error("stream `{stream}` carries `{carries}`, not `{asked}`")]
    WrongType {
        /// The stream.
        stream: String,
        /// What it carries (and its encoded forms, if any).
        carries: String,
        /// The type asked for.
        asked: &'static str,
    },
    /// No planned process of that name runs here.
    #[error("no process `{process}` in this run (processes: {known})")]
    UnknownProcess {
        /// The name asked for.
        process: String,
        /// The processes of the plan, comma separated.
        known: String,
    },
    /// The transport refused the tap's subscription.
    #[error("cannot tap `{stream}` across partitions: {error}")]
    Transport {
        /// The stream.
        stream: String,
        /// Why.
        #[source]
        error: TransportError,
    },
}

/// Starts runs.
#[derive(Debug)]
pub struct Runtime;

/// Why `blueprint.run(..)` failed: the blueprint did not build, or the run did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The blueprint has problems (each named in the error).
    #[error(transparent)]
    Build(#[from] streamwire_graph::BuildError),
    /// The run could not start.
    #[error(transparent)]
    Start(#[from] StartError),
}

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

struct ThreadRecord {
    name: String,
    is_instance: bool,
    handle: Option<JoinHandle<()>>,
    exited: bool,
}

struct InputRecord {
    port: String,
    stream: String,
    queue: Arc<InputQueue>,
}

struct LinkRecord {
    from: String,
    to: String,
    stream: String,
    counters: Arc<LinkCounters>,
}

struct CodecRecord {
    role: CodecRole,
    codec: &'static str,
    stream: String,
    placement: String,
    counters: Arc<CodecCounters>,
    passthrough_of: Option<Arc<Hub>>,
    /// The node's input queue (none for the decode of ready-made bytes, which has none).
    queue: Option<Arc<InputQueue>>,
}

struct TapRecord {
    stream: String,
    queue: Arc<InputQueue>,
    attached: Arc<AtomicBool>,
}

/// Everything `stats()` reads.
struct Records {
    /// Every instance of the plan, and whether it runs here.
    instances: Vec<(String, &'static str, Arc<InstanceCounters>, bool)>,
    outputs: Vec<(String, Arc<Hub>)>,
    inputs: Vec<InputRecord>,
    links: Vec<LinkRecord>,
    codecs: Vec<CodecRecord>,
    taps: Mutex<Vec<TapRecord>>,
    stall_after: Duration,
    /// Streams leaving a partition, and the planned ones entering one.
    senders: Vec<SenderRecord>,
    ingresses: Vec<Ingress>,
}

/// A hub a partition publishes into, with what a transport needs to carry it.
struct StreamHub {
    name: String,
    hub: Arc<Hub>,
    partition: usize,
    qos: Qos,
    /// The message types (with schema versions) that travel on it.
    accepted: Vec<(&'static str, u32)>,
    /// The codec that made its messages (`jpeg`), or empty.
    codec: &'static str,
    /// Whether it may leave its partition (a decoder's output never does: the plan puts a
    /// decoder in every process that wants its pixels).
    publish: bool,
}

fn schema(info: MessageInfo) -> (&'static str, u32) {
    (info.name(), info.schema_version())
}

/// A running blueprint: watch it (`stats`), listen in (`tap`), stop it, wait for it.
/// Dropping it stops the run.
pub struct RunHandle {
    shared: Arc<Shared>,
    records: Arc<Records>,
    /// Where taps attach, shared with the instances (`Context::taps`).
    taps: Arc<TapPoint>,
    /// The transport joining the partitions, closed when the run ends.
    transport: Option<Arc<dyn Transport>>,
    threads: Vec<ThreadRecord>,
    exits: Receiver<Exit>,
    failure: Option<String>,
    stop_deadline: Duration,
    stop_requested: Arc<AtomicBool>,
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

impl Runtime {
    /// Starts every instance and codec node of `runnable` in this process, each on a
    /// named thread, and returns the handle of the run.
    ///
    /// Placement is shown in the plan and kept for the codec nodes (an encoder and a
    /// decoder run where the plan put them), but every node runs in this one process.
    pub fn start(runnable: RunnablePlan, options: RunOptions) -> Result<RunHandle, StartError> {
        let (plan, mut modules) = runnable.into_parts();
        let wiring = Wiring::of(&plan);
        // Partitions: one per planned process, when asked for and when there are several.
        let mut partition_names: Vec<String> = plan
            .processes()
            .iter()
            .map(|p| p.placement().to_string())
            .collect();
        let partitioned = (options.partitions == Partitions::PerProcess || options.local.is_some())
            && partition_names.len() > 1;
        // The one partition that runs here, when the others run elsewhere.
        let local = match &options.local {
            Some(name) if partitioned => Some(
                partition_names
                    .iter()
                    .position(|p| p == name)
                    .ok_or_else(|| StartError::UnknownProcess {
                        process: name.clone(),
                        known: partition_names.join(", "),
                    })?,
            ),
            Some(name) => {
                let known: Vec<String> = plan
                    .processes()
                    .iter()
                    .map(|p| p.placement().to_string())
                    .collect();
                if !known.contains(name) {
                    return Err(StartError::UnknownProcess {
                        process: name.clone(),
                        known: known.join(", "),
                    });
                }
                None
            }
            None => None,
        };
        let is_here = |partition: usize| local.is_none_or(|l| l == partition);
        if !partitioned {
            partition_names.clear();
        }
        let partition_of = |placement: &str| -> usize {
            partition_names
                .iter()
                .position(|p| p == placement)
                .unwrap_or(0)
        };
        let instance_partition: Vec<usize> = wiring
            .instances
            .iter()
            .map(|i| partition_of(&i.placement))
            .collect();
        let codec_partition: Vec<usize> = wiring
            .codecs
            .iter()
            .map(|c| partition_of(&c.placement))
            .collect();
        let end_partition = |end: End| match end {
            End::Port(i, _) => instance_partition[i],
            End::Codec(c) => codec_partition[c],
        };
        let transport: Option<Arc<dyn Transport>> = partitioned.then(|| {
            options
                .transport
                .clone()
                .unwrap_or_else(|| Arc::new(Loopback::new()))
        });
        let stopping = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared {
            clock: options.clock.clone(),
            stopping: stopping.clone(),
            started: Instant::now(),
            signals: Mutex::new(Vec::new()),
            hubs: Mutex::new(Vec::new()),
            gate: options.start_gate.clone(),
        });
        let new_signal = || {
            let signal = Signal::new();
            if let Ok(mut signals) = shared.signals.lock() {
                signals.push(signal.clone());
            }
            signal
        };
        let new_hub = |stream: &str, message: &'static str, passthrough: Option<Passthrough>| {
            let hub = Hub::new(
                stream.to_owned(),
                message,
                options.clock.clone(),
                stopping.clone(),
                passthrough,
            );
            if let Ok(mut hubs) = shared.hubs.lock() {
                hubs.push(hub.clone());
            }
            hub
        };
        let bound_of = |history| {
            Bound::from_history(history, options.keep_all_depth, options.keep_all_deadline)
        };

        // Behaviour first: refuse to start before any thread exists.
        for (i, (desc, module)) in wiring.instances.iter().zip(modules.iter_mut()).enumerate() {
            if is_here(instance_partition[i]) && module.behaviour().is_none() {
                return Err(StartError::NoBehaviour {
                    instance: desc.name.clone(),
                    module_type: desc.module_type,
                });
            }
        }

        // Hubs: one per instance output, one per codec node.
        let mut signals = Vec::new();
        let mut streams: Vec<StreamHub> = Vec::new();
        let mut port_hubs: Vec<Vec<Option<Arc<Hub>>>> = Vec::new();
        let mut port_queues: Vec<Vec<Option<Arc<InputQueue>>>> = Vec::new();
        let mut outputs = Vec::new();
        for (i, desc) in wiring.instances.iter().enumerate() {
            let signal = new_signal();
            let mut hubs = Vec::new();
            let mut queues = Vec::new();
            for port in &desc.ports {
                match port.info.direction() {
                    Direction::Output => {
                        let passthrough = match port.info.transport().codec() {
                            Some(codec) => Some(Passthrough {
                                encoded: codec.encoded().name(),
                                codec: codec.instantiate(&CodecParams::new()).map_err(|error| {
                                    StartError::Codec {
                                        node: format!("decode of ready-made {}", port.stream),
                                        error,
                                    }
                                })?,
                                decoded: Default::default(),
                                failed: Default::default(),
                            }),
                            None => None,
                        };
                        let hub = new_hub(&port.stream, port.info.message().name(), passthrough);
                        let mut accepted = vec![schema(port.info.message())];
                        if let Some(codec) = port.info.transport().codec() {
                            accepted.push(schema(codec.encoded()));
                        }
                        streams.push(StreamHub {
                            name: port.stream.clone(),
                            hub: hub.clone(),
                            partition: instance_partition[i],
                            qos: port.qos,
                            accepted,
                            codec: "",
                            publish: true,
                        });
                        if is_here(instance_partition[i]) {
                            outputs.push((
                                format!("{}.{}", desc.name, port.info.field()),
                                hub.clone(),
                            ));
                        }
                        hubs.push(Some(hub));
                        queues.push(None);
                    }
                    Direction::Input => {
                        hubs.push(None);
                        queues.push(Some(InputQueue::new(
                            bound_of(port.qos.history),
                            signal.clone(),
                            options.clock.clone(),
                            stopping.clone(),
                        )));
                    }
                }
            }
            signals.push(signal);
            port_hubs.push(hubs);
            port_queues.push(queues);
        }
        let mut codec_hubs = Vec::new();
        let mut codec_queues = Vec::new();
        let mut codec_signals = Vec::new();
        for (c, codec) in wiring.codecs.iter().enumerate() {
            let signal = new_signal();
            let hub = new_hub(codec.output_stream(), codec.output_type(), None);
            let encode = codec.kind == CodecKind::Encode;
            streams.push(StreamHub {
                name: codec.output_stream().to_owned(),
                hub: hub.clone(),
                partition: codec_partition[c],
                qos: codec.qos,
                accepted: vec![schema(if encode {
                    codec.codec.encoded()
                } else {
                    codec.codec.message()
                })],
                codec: if encode { codec.codec.name() } else { "" },
                publish: encode,
            });
            // A codec node's queue follows its stream's QoS.
            let history = codec.qos.history;
            codec_queues.push(InputQueue::new(
                bound_of(history),
                signal.clone(),
                options.clock.clone(),
                stopping.clone(),
            ));
            codec_signals.push(signal);
            codec_hubs.push(hub);
        }

        // Links: subscribe each receiving queue to its sending hub.
        let mut links = Vec::new();
        let mut ingresses: Vec<Ingress> = Vec::new();
        let mut subscriptions: Vec<Vec<(Arc<Hub>, u64)>> = vec![Vec::new(); wiring.instances.len()];
        let mut codec_subscriptions: Vec<Option<(Arc<Hub>, u64)>> = vec![None; wiring.codecs.len()];
        // Streams the plan sends to another partition (a distributed run waits for their
        // publishers to be matched).
        let mut planned_remote: Vec<(String, String)> = Vec::new();
        for link in &wiring.links {
            let hub = match link.from {
                End::Port(i, p) => port_hubs[i][p].clone(),
                End::Codec(c) => Some(codec_hubs[c].clone()),
            };
            let (queue, wants, demand) = match link.to {
                End::Port(i, p) => (
                    port_queues[i][p].clone(),
                    Wants::Message(wiring.instances[i].ports[p].delivered_type()),
                    Demand::Always,
                ),
                End::Codec(c) => (
                    Some(codec_queues[c].clone()),
                    match wiring.codecs[c].kind {
                        CodecKind::Encode => Wants::Any,
                        _ => Wants::Message(wiring.codecs[c].codec.encoded().name()),
                    },
                    Demand::Via(codec_hubs[c].clone()),
                ),
            };
            let (Some(hub), Some(queue)) = (hub, queue) else {
                continue;
            };
            // Across partitions, the receiving end subscribes to its partition's ingress
            // of the stream (one per stream and partition), fed by the transport.
            let (from_part, to_part) = (end_partition(link.from), end_partition(link.to));
            if transport.is_some()
                && from_part != to_part
                && let Some(source) = streams.iter().find(|s| Arc::ptr_eq(&s.hub, &hub))
            {
                let entry = (source.name.clone(), partition_names[to_part].clone());
                if !planned_remote.contains(&entry) {
                    planned_remote.push(entry);
                }
            }
            if !is_here(to_part) {
                // Its receiving end runs elsewhere.
                continue;
            }
            let hub = match (&transport, from_part == to_part) {
                (Some(transport), false) => {
                    let Some(source) = streams.iter().find(|s| Arc::ptr_eq(&s.hub, &hub)) else {
                        continue;
                    };
                    let existing = ingresses.iter().position(|g| {
                        g.key == source.name && g.partition == partition_names[to_part]
                    });
                    let at = match existing {
                        Some(at) => at,
                        None => {
                            let ingress_hub = new_hub(&source.name, source.hub.message, None);
                            let ingress = Ingress::open(
                                transport.as_ref(),
                                &partition_names[to_part],
                                &source.name,
                                source.qos,
                                ingress_hub,
                                source.accepted.clone(),
                            )
                            .map_err(|error| {
                                StartError::Transport {
                                    stream: source.name.clone(),
                                    error,
                                }
                            })?;
                            ingresses.push(ingress);
                            ingresses.len() - 1
                        }
                    };
                    ingresses[at].hub.clone()
                }
                _ => hub,
            };
            let (id, counters) = hub.subscribe(queue, wants, demand);
            match link.to {
                End::Port(i, _) => subscriptions[i].push((hub.clone(), id)),
                End::Codec(c) => codec_subscriptions[c] = Some((hub.clone(), id)),
            }
            links.push(LinkRecord {
                from: wiring.end_name(link.from),
                to: wiring.end_name(link.to),
                stream: if link.stream.is_empty() {
                    hub.stream.clone()
                } else {
                    link.stream.clone()
                },
                counters,
            });
        }

        // Bind every module's ports.
        let mut inputs = Vec::new();
        for (i, (desc, module)) in wiring.instances.iter().zip(modules.iter_mut()).enumerate() {
            if !is_here(instance_partition[i]) {
                continue;
            }
            let mut failure = None;
            module.visit_ports(&mut |p, port| {
                let result = match (&port_hubs[i].get(p), &port_queues[i].get(p)) {
                    (Some(Some(hub)), _) => port.bind_output(p, hub.clone()),
                    (_, Some(Some(queue))) => port.bind_input(p, queue.clone()),
                    _ => Ok(()),
                };
                if let Err(error) = result
                    && failure.is_none()
                {
                    failure = Some((p, error));
                }
            });
            if let Some((p, error)) = failure {
                return Err(StartError::Bind {
                    port: format!("{}.{}", desc.name, desc.ports[p].info.field()),
                    error,
                });
            }
            for (p, port) in desc.ports.iter().enumerate() {
                if let Some(Some(queue)) = port_queues[i].get(p) {
                    inputs.push(InputRecord {
                        port: format!("{}.{}", desc.name, port.info.field()),
                        stream: port.stream.clone(),
                        queue: queue.clone(),
                    });
                }
            }
        }
        // Triggers are read after binding, so they can name bound ports.
        let mut triggers = Vec::with_capacity(modules.len());
        for (i, (desc, module)) in wiring.instances.iter().zip(modules.iter_mut()).enumerate() {
            let trigger = module
                .behaviour()
                .map_or(Trigger::AnyInput, |node| node.trigger());
            if is_here(instance_partition[i]) {
                check_trigger(desc, &trigger, &port_queues[i])?;
            }
            triggers.push(trigger);
        }

        let mut codec_records = Vec::new();
        let mut codec_workers = Vec::new();
        for (c, codec) in wiring.codecs.iter().enumerate() {
            if !is_here(codec_partition[c]) {
                continue;
            }
            let counters = Arc::new(CodecCounters::default());
            let role = match codec.kind {
                CodecKind::Encode => CodecRole::Encode,
                _ => CodecRole::Decode,
            };
            let engine =
                codec
                    .codec
                    .instantiate(&codec.params)
                    .map_err(|error| StartError::Codec {
                        node: codec.label(),
                        error,
                    })?;
            codec_records.push(CodecRecord {
                role,
                codec: codec.codec.name(),
                stream: codec.stream.clone(),
                placement: codec.placement.clone(),
                counters: counters.clone(),
                passthrough_of: None,
                queue: Some(codec_queues[c].clone()),
            });
            codec_workers.push((
                codec.label(),
                CodecWorker {
                    thread: 0,
                    role,
                    codec: engine,
                    encoded_type: codec.codec.encoded().name(),
                    input: codec_queues[c].clone(),
                    output: codec_hubs[c].clone(),
                    subscription: codec_subscriptions[c].take(),
                    signal: codec_signals[c].clone(),
                    counters,
                    shared: shared.clone(),
                },
            ));
        }
        // Encoders for taps: an `Out<Compressed<..>>` whose plan has no encoder of its
        // codec still offers its bytes (`<stream>/compressed`) to taps, encoding only
        // while one is attached.
        let mut tap_encoders = Vec::new();
        for (i, desc) in wiring.instances.iter().enumerate() {
            if !is_here(instance_partition[i]) {
                continue;
            }
            for (p, port) in desc.ports.iter().enumerate() {
                let (Some(codec), Some(Some(producer))) =
                    (port.info.transport().codec(), port_hubs[i].get(p))
                else {
                    continue;
                };
                let planned = wiring.codecs.iter().any(|c| {
                    c.kind == CodecKind::Encode && c.stream == port.stream && c.codec == codec
                });
                if planned {
                    continue;
                }
                let label = format!("tap encoder {} {}", codec.name(), port.stream);
                let engine =
                    codec
                        .instantiate(&CodecParams::new())
                        .map_err(|error| StartError::Codec {
                            node: label.clone(),
                            error,
                        })?;
                let encoded_stream = format!("{}/{}", port.stream, codec.stream_suffix());
                let hub = new_hub(&encoded_stream, codec.encoded().name(), None);
                streams.push(StreamHub {
                    name: encoded_stream,
                    hub: hub.clone(),
                    partition: instance_partition[i],
                    qos: Qos {
                        history: History::KeepLast(1),
                        ..port.qos
                    },
                    accepted: vec![schema(codec.encoded())],
                    codec: codec.name(),
                    publish: true,
                });
                let signal = new_signal();
                let queue = InputQueue::new(
                    Bound::KeepLast(1),
                    signal.clone(),
                    options.clock.clone(),
                    stopping.clone(),
                );
                let (id, _) =
                    producer.subscribe(queue.clone(), Wants::Any, Demand::Via(hub.clone()));
                let counters = Arc::new(CodecCounters::default());
                codec_records.push(CodecRecord {
                    role: CodecRole::Encode,
                    codec: codec.name(),
                    stream: port.stream.clone(),
                    placement: "for taps".to_owned(),
                    counters: counters.clone(),
                    passthrough_of: None,
                    queue: Some(queue.clone()),
                });
                tap_encoders.push((
                    label,
                    CodecWorker {
                        thread: 0,
                        role: CodecRole::Encode,
                        codec: engine,
                        encoded_type: codec.encoded().name(),
                        input: queue,
                        output: hub,
                        subscription: Some((producer.clone(), id)),
                        signal,
                        counters,
                        shared: shared.clone(),
                    },
                ));
            }
        }
        // Ready-made bytes decoded once per publish for in-process pixel consumers.
        for (name, hub) in &outputs {
            if hub.passthrough.is_some() {
                codec_records.push(CodecRecord {
                    role: CodecRole::Decode,
                    codec: "ready-made",
                    stream: hub.stream.clone(),
                    placement: format!("in {name}"),
                    counters: Arc::new(CodecCounters::default()),
                    passthrough_of: Some(hub.clone()),
                    queue: None,
                });
            }
        }

        // Senders: every stream a partition produces gets a publisher, which sends only
        // while another partition subscribes (a planned consumer there, or a tap).
        let mut senders = Vec::new();
        let mut sender_workers = Vec::new();
        if let Some(transport) = &transport {
            let mut keys: Vec<&str> = Vec::new();
            for stream in streams.iter().filter(|s| s.publish && is_here(s.partition)) {
                if keys.contains(&stream.name.as_str()) {
                    tracing::debug!(stream = %stream.name, "a second producer of the stream is not published");
                    continue;
                }
                keys.push(&stream.name);
                let publisher = transport
                    .publisher(&stream.name, stream.qos)
                    .map_err(|error| StartError::Transport {
                        stream: stream.name.clone(),
                        error,
                    })?;
                let signal = new_signal();
                let queue = InputQueue::new(
                    bound_of(stream.qos.history),
                    signal.clone(),
                    options.clock.clone(),
                    stopping.clone(),
                );
                let (id, _) = stream.hub.subscribe(
                    queue.clone(),
                    Wants::Any,
                    Demand::Remote(publisher.clone()),
                );
                let failed = Arc::new(std::sync::atomic::AtomicU64::new(0));
                senders.push(SenderRecord {
                    partition: partition_names[stream.partition].clone(),
                    remote_partitions: planned_remote
                        .iter()
                        .filter(|(name, _)| *name == stream.name)
                        .map(|(_, partition)| partition.clone())
                        .collect(),
                    publisher: publisher.clone(),
                    queue: queue.clone(),
                    failed: failed.clone(),
                });
                sender_workers.push(SenderWorker {
                    thread: 0,
                    publisher,
                    codec: stream.codec,
                    queue,
                    signal,
                    subscription: (stream.hub.clone(), id),
                    failed,
                    shared: shared.clone(),
                });
            }
        }

        let records = Arc::new(Records {
            instances: wiring
                .instances
                .iter()
                .zip(&instance_partition)
                .map(|(d, partition)| {
                    (
                        d.name.clone(),
                        d.module_type,
                        Arc::new(InstanceCounters::default()),
                        is_here(*partition),
                    )
                })
                .collect(),
            outputs,
            inputs,
            links,
            codecs: codec_records,
            taps: Mutex::new(Vec::new()),
            stall_after: options.stall_after,
            senders,
            ingresses,
        });

        // Threads: codec nodes first, so they are ready before producers publish.
        let (exit_tx, exits) = mpsc::channel();
        let mut threads = Vec::new();
        let spawn = |threads: &mut Vec<ThreadRecord>,
                     name: String,
                     is_instance: bool,
                     body: Box<dyn FnOnce() + Send>|
         -> Result<(), StartError> {
            let handle = std::thread::Builder::new()
                .name(name.clone())
                .spawn(body)
                .map_err(|error| StartError::Spawn {
                    name: name.clone(),
                    error,
                })?;
            threads.push(ThreadRecord {
                name,
                is_instance,
                handle: Some(handle),
                exited: false,
            });
            Ok(())
        };
        for (label, mut worker) in codec_workers {
            worker.thread = threads.len();
            let exits = exit_tx.clone();
            spawn(
                &mut threads,
                format!("sw {label}"),
                false,
                Box::new(move || worker.run(exits)),
            )?;
        }
        for mut worker in sender_workers {
            worker.thread = threads.len();
            let exits = exit_tx.clone();
            let name = format!("sw send {}", worker.publisher.key());
            spawn(
                &mut threads,
                name,
                false,
                Box::new(move || worker.run(exits)),
            )?;
        }
        for (label, mut worker) in tap_encoders {
            worker.thread = threads.len();
            let exits = exit_tx.clone();
            spawn(
                &mut threads,
                format!("sw {label}"),
                false,
                Box::new(move || worker.run(exits)),
            )?;
        }
        let taps = Arc::new(TapPoint {
            shared: shared.clone(),
            records: records.clone(),
            streams,
            partitions: partition_names,
            local,
            transport: transport.clone(),
            tap_depth: options.tap_depth,
        });
        let mut modules: Vec<Option<Box<dyn ModuleValue>>> =
            modules.into_iter().map(Some).collect();
        for (i, desc) in wiring.instances.iter().enumerate() {
            let Some(module) = modules[i].take() else {
                continue;
            };
            if !is_here(instance_partition[i]) {
                continue;
            }
            let worker = InstanceWorker {
                thread: threads.len(),
                name: desc.name.clone(),
                module_type: desc.module_type,
                module,
                trigger: triggers[i].clone(),
                inputs: port_queues[i]
                    .iter()
                    .enumerate()
                    .filter_map(|(p, q)| q.clone().map(|q| (p, q)))
                    .collect(),
                outputs: port_hubs[i].iter().flatten().cloned().collect(),
                subscriptions: std::mem::take(&mut subscriptions[i]),
                signal: signals[i].clone(),
                counters: records.instances[i].2.clone(),
                shared: shared.clone(),
                // A module taps from its own partition, as a tool joining its process would.
                taps: Arc::new(PartitionTaps {
                    point: taps.clone(),
                    process: (!taps.partitions.is_empty()).then(|| desc.placement.clone()),
                }),
            };
            let exits = exit_tx.clone();
            spawn(
                &mut threads,
                format!("sw {}", desc.name),
                true,
                Box::new(move || worker.run(exits)),
            )?;
        }

        Ok(RunHandle {
            shared,
            records,
            taps,
            transport,
            threads,
            exits,
            failure: None,
            stop_deadline: options.stop_deadline,
            stop_requested: Arc::new(AtomicBool::new(false)),
        })
    }
}

fn check_trigger(
    desc: &crate::wiring::InstanceDesc,
    trigger: &Trigger,
    queues: &[Option<Arc<InputQueue>>],
) -> Result<(), StartError> {
    let has_inputs = queues.iter().any(Option::is_some);
    let bad = |reason: String| StartError::BadTrigger {
        instance: desc.name.clone(),
        module_type: desc.module_type,
        reason,
    };
    let named = |port: &streamwire_core::PortRef| -> Result<(), StartError> {
        match port.index() {
            Some(index) if matches!(queues.get(index), Some(Some(_))) => Ok(()),
            _ => Err(bad(format!(
                "its trigger names `{}`, which is not a bound input of this module",
                port.type_name()
            ))),
        }
    };
    match trigger {
        Trigger::AnyInput if !has_inputs => Err(bad(
            "it has no inputs, so the default trigger (any input) never fires: return \
             `Trigger::Period(..)` or `Trigger::FreeRunning` from `Node::trigger`"
                .to_owned(),
        )),
        Trigger::Input(port) => named(port),
        Trigger::All(inputs) => {
            if inputs.is_empty() {
                return Err(bad("its `all` trigger names no inputs".to_owned()));
            }
            inputs.iter().try_for_each(named)
        }
        Trigger::Period(period) if period.is_zero() => Err(bad(
            "its period is zero: use `Trigger::FreeRunning` to step as fast as possible".to_owned(),
        )),
        _ => Ok(()),
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
        } else if self.threads.iter().all(|t| !t.is_instance || t.exited) {
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
        let mut reason = None;
        while reason.is_none() {
            if self.stop_requested.load(Ordering::SeqCst) {
                reason = Some(EndReason::Stopped);
                break;
            }
            if limit.is_some_and(|l| Instant::now() >= l) {
                reason = Some(EndReason::Stopped);
                break;
            }
            // Exits already taken by `poll_end`.
            if self.failure.is_some() {
                reason = Some(EndReason::Failed);
                break;
            }
            if self.threads.iter().all(|t| !t.is_instance || t.exited) {
                reason = Some(EndReason::Finished);
                break;
            }
            match self.exits.recv_timeout(Duration::from_millis(20)) {
                Ok(exit) => {
                    if self.record_exit(exit) {
                        reason = Some(EndReason::Failed);
                    } else if self.threads.iter().all(|t| !t.is_instance || t.exited) {
                        reason = Some(EndReason::Finished);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => reason = Some(EndReason::Finished),
            }
        }
        self.shared.stop();
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
                stragglers.push(thread.name.trim_start_matches("sw ").to_owned());
            }
        }
        // Orderly close of the transport: every publisher and subscription undeclared.
        if let Some(transport) = &self.transport {
            transport.close();
        }
        let reason = reason.unwrap_or(EndReason::Stopped);
        let reason = if self.failure.is_some() {
            EndReason::Failed
        } else {
            reason
        };
        RunReport {
            reason,
            failure: self.failure.clone(),
            stragglers,
            stats: self.stats(),
        }
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

    /// A snapshot of every counter, while the run goes on.
    pub fn stats(&self) -> RunStats {
        let r = &self.records;
        let now_mark = self.shared.mark();
        let stall = u64::try_from(r.stall_after.as_nanos()).unwrap_or(u64::MAX);
        RunStats {
            elapsed: self.shared.started.elapsed(),
            instances: r
                .instances
                .iter()
                .filter(|(_, _, _, here)| *here)
                .map(|(name, module_type, c, _)| {
                    let began = c.step_began.load(Ordering::SeqCst);
                    InstanceStats {
                        name: name.clone(),
                        module_type: (*module_type).to_owned(),
                        steps: c.steps.load(Ordering::Relaxed),
                        cpu: Duration::from_nanos(c.cpu_nanos.load(Ordering::Relaxed)),
                        longest_step: Duration::from_nanos(
                            c.longest_step_nanos.load(Ordering::Relaxed),
                        ),
                        stalled: began != 0 && now_mark.saturating_sub(began) > stall,
                        finished: c.finished.load(Ordering::SeqCst),
                        counters: c
                            .counters
                            .lock()
                            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.get())).collect())
                            .unwrap_or_default(),
                    }
                })
                .collect(),
            outputs: r
                .outputs
                .iter()
                .map(|(port, hub)| OutputStats {
                    port: port.clone(),
                    stream: hub.stream.clone(),
                    published: hub.published.load(Ordering::Relaxed),
                })
                .collect(),
            inputs: r
                .inputs
                .iter()
                .map(|i| InputStats {
                    port: i.port.clone(),
                    stream: i.stream.clone(),
                    delivered: i.queue.delivered.load(Ordering::Relaxed),
                    dropped: drops(&i.queue),
                    latency: i.queue.latency(),
                })
                .collect(),
            links: r
                .links
                .iter()
                .map(|l| LinkStats {
                    from: l.from.clone(),
                    to: l.to.clone(),
                    stream: l.stream.clone(),
                    messages: l.counters.messages.load(Ordering::Relaxed),
                    content_bytes: l.counters.content_bytes.load(Ordering::Relaxed),
                })
                .collect(),
            codecs: r
                .codecs
                .iter()
                // The decode of ready-made bytes is listed once it has done something.
                .filter(|c| {
                    c.passthrough_of
                        .as_ref()
                        .and_then(|h| h.passthrough.as_ref())
                        .is_none_or(|p| {
                            p.decoded.load(Ordering::Relaxed) + p.failed.load(Ordering::Relaxed) > 0
                        })
                })
                .map(|c| {
                    let n = &c.counters;
                    let (done, failed) = match c
                        .passthrough_of
                        .as_ref()
                        .and_then(|h| h.passthrough.as_ref())
                    {
                        Some(p) => (
                            p.decoded.load(Ordering::Relaxed),
                            p.failed.load(Ordering::Relaxed),
                        ),
                        None => (
                            n.done.load(Ordering::Relaxed),
                            n.failed.load(Ordering::Relaxed),
                        ),
                    };
                    CodecStats {
                        role: c.role,
                        codec: c.codec.to_owned(),
                        stream: c.stream.clone(),
                        placement: c.placement.clone(),
                        done,
                        skipped: n.skipped.load(Ordering::Relaxed),
                        dropped: c
                            .queue
                            .as_ref()
                            .map_or(0, |q| q.dropped(DropReason::QueueFull)),
                        passed_through: n.passed_through.load(Ordering::Relaxed),
                        failed,
                        bytes_in: n.bytes_in.load(Ordering::Relaxed),
                        bytes_out: n.bytes_out.load(Ordering::Relaxed),
                        busy: Duration::from_nanos(n.busy_nanos.load(Ordering::Relaxed)),
                    }
                })
                .collect(),
            taps: r
                .taps
                .lock()
                .map(|taps| {
                    taps.iter()
                        .map(|t| TapStats {
                            stream: t.stream.clone(),
                            attached: t.attached.load(Ordering::SeqCst),
                            delivered: t.queue.delivered.load(Ordering::Relaxed),
                            dropped: t.queue.dropped(DropReason::QueueFull),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            wire: r
                .senders
                .iter()
                .map(SenderRecord::stats)
                .chain(r.ingresses.iter().map(Ingress::stats))
                .collect(),
        }
    }

    /// Subscribes to stream `stream` while the run goes on, typed: `tap::<Image>("color_image")`
    /// gets pixels; `tap::<CompressedImage>("color_image")` (or
    /// `"color_image/compressed"`) gets the encoded bytes of the stream's encode node,
    /// which then encodes for the tap. A tap counts as a consumer until dropped. It
    /// listens where the stream is produced; [`tap_in`](RunHandle::tap_in) listens from a
    /// given process.
    pub fn tap<M: Message>(&self, stream: &str) -> Result<Tap<M>, TapError> {
        let inner = self.taps.attach(stream, Some(M::TYPE_NAME), None)?;
        Ok(Tap {
            inner,
            _message: std::marker::PhantomData,
        })
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
        Ok(Tap {
            inner,
            _message: std::marker::PhantomData,
        })
    }

    /// The streams this process sends to other processes of the plan whose publisher does
    /// not reach every one of them yet (a distributed run starts its sources once this is
    /// empty).
    pub fn unmatched_links(&self) -> Vec<String> {
        self.records
            .senders
            .iter()
            .filter(|s| {
                !s.remote_partitions.is_empty() && !s.publisher.reaches(&s.remote_partitions)
            })
            .map(|s| s.publisher.key().to_owned())
            .collect()
    }

    /// The names of the run's partitions (its planned processes), empty without
    /// partitions.
    pub fn partitions(&self) -> &[String] {
        &self.taps.partitions
    }
}

/// Where taps attach: the run handle's `tap`, and modules' `Context::taps`.
struct TapPoint {
    shared: Arc<Shared>,
    records: Arc<Records>,
    /// Hubs by stream name, producers first.
    streams: Vec<StreamHub>,
    /// The partitions' names (planned processes), when partitions are on.
    partitions: Vec<String>,
    /// The partition that runs here when the others run elsewhere: taps listen from it.
    local: Option<usize>,
    /// The transport joining them.
    transport: Option<Arc<dyn Transport>>,
    tap_depth: usize,
}

/// A module's view of the tap point: taps from the module's own partition.
struct PartitionTaps {
    point: Arc<TapPoint>,
    process: Option<String>,
}

impl streamwire_core::TapService for PartitionTaps {
    fn streams(&self) -> Vec<(String, &'static str)> {
        let mut streams: Vec<(String, &'static str)> = self
            .point
            .streams
            .iter()
            .filter(|s| s.publish || self.process.is_none())
            .map(|s| (s.name.clone(), s.hub.message))
            .collect();
        streams.sort_unstable();
        streams.dedup();
        streams
    }

    fn tap(
        &self,
        stream: &str,
        message: Option<&'static str>,
    ) -> Result<Box<dyn streamwire_core::StreamTap>, streamwire_core::NodeError> {
        Ok(Box::new(self.point.attach(
            stream,
            message,
            self.process.as_deref(),
        )?))
    }
}

impl streamwire_core::StreamTap for AnyTap {
    fn recv_timeout(&self, timeout: Duration) -> Option<streamwire_core::Envelope> {
        AnyTap::recv_timeout(self, timeout)
    }

    fn dropped(&self) -> u64 {
        AnyTap::dropped(self)
    }
}

impl TapPoint {
    fn attach(
        &self,
        stream: &str,
        wanted: Option<&'static str>,
        process: Option<&str>,
    ) -> Result<AnyTap, TapError> {
        let partition = match process {
            Some(name) if !self.partitions.is_empty() => Some(
                self.partitions
                    .iter()
                    .position(|p| p == name)
                    .ok_or_else(|| TapError::UnknownProcess {
                        process: name.to_owned(),
                        known: self.partitions.join(", "),
                    })?,
            ),
            _ => self.local,
        };
        // What the tap can listen to without the transport: every producer (no
        // partition asked), or the hubs of the partition asked for, its ingresses included.
        let local: Vec<(&str, &Arc<Hub>)> = match partition {
            None => self
                .streams
                .iter()
                .map(|s| (s.name.as_str(), &s.hub))
                .collect(),
            Some(at) => self
                .streams
                .iter()
                .filter(|s| s.partition == at)
                .map(|s| (s.name.as_str(), &s.hub))
                .chain(
                    self.records
                        .ingresses
                        .iter()
                        .filter(|g| g.partition == self.partitions[at])
                        .map(|g| (g.key.as_str(), &g.hub)),
                )
                .collect(),
        };
        let (hub, remote) = match pick(&local, stream, wanted) {
            Ok(hub) => (hub.clone(), None),
            Err(error) => {
                // Not in this partition: across the transport from its producer's.
                let (Some(at), Some(transport)) = (partition, &self.transport) else {
                    return Err(error);
                };
                let remote: Vec<(&str, &Arc<Hub>)> = self
                    .streams
                    .iter()
                    .filter(|s| s.publish && s.partition != at)
                    .map(|s| (s.name.as_str(), &s.hub))
                    .collect();
                let Ok(source) = pick(&remote, stream, wanted) else {
                    return Err(error);
                };
                let Some(source) = self.streams.iter().find(|s| Arc::ptr_eq(&s.hub, source)) else {
                    return Err(error);
                };
                let hub = Hub::new(
                    source.name.clone(),
                    source.hub.message,
                    self.shared.clock.clone(),
                    self.shared.stopping.clone(),
                    None,
                );
                let ingress = Ingress::open(
                    transport.as_ref(),
                    &self.partitions[at],
                    &source.name,
                    source.qos,
                    hub.clone(),
                    source.accepted.clone(),
                )
                .map_err(|error| TapError::Transport {
                    stream: stream.to_owned(),
                    error,
                })?;
                (hub, Some(ingress))
            }
        };
        let signal = Signal::new();
        if let Ok(mut signals) = self.shared.signals.lock() {
            signals.push(signal.clone());
        }
        let queue = InputQueue::new(
            Bound::KeepLast(self.tap_depth.max(1)),
            signal.clone(),
            self.shared.clock.clone(),
            self.shared.stopping.clone(),
        );
        let wants = wanted.map_or(Wants::Any, Wants::Message);
        let (id, _) = hub.subscribe(queue.clone(), wants, Demand::Always);
        let attached = Arc::new(AtomicBool::new(true));
        if let Ok(mut taps) = self.records.taps.lock() {
            taps.push(TapRecord {
                stream: stream.to_owned(),
                queue: queue.clone(),
                attached: attached.clone(),
            });
        }
        Ok(AnyTap {
            hub,
            id,
            queue,
            signal,
            attached,
            shared: self.shared.clone(),
            _remote: remote,
        })
    }
}

/// The hub a tap on `stream` listens to among `candidates` (stream name, hub): by its own
/// name, or an encoded form of it (`color_image` asked as bytes); pixels from the
/// stream's producer, bytes from its encode node.
fn pick<'h>(
    candidates: &[(&str, &'h Arc<Hub>)],
    stream: &str,
    wanted: Option<&'static str>,
) -> Result<&'h Arc<Hub>, TapError> {
    let named: Vec<&Arc<Hub>> = candidates
        .iter()
        .filter(|(name, _)| *name == stream)
        .map(|(_, hub)| *hub)
        .collect();
    let encoded: Vec<&Arc<Hub>> = candidates
        .iter()
        .filter(|(name, _)| {
            name.strip_prefix(stream)
                .is_some_and(|rest| rest.starts_with('/'))
        })
        .map(|(_, hub)| *hub)
        .collect();
    if named.is_empty() && encoded.is_empty() {
        let mut known: Vec<&str> = candidates.iter().map(|(n, _)| *n).collect();
        known.sort_unstable();
        known.dedup();
        return Err(TapError::UnknownStream {
            stream: stream.to_owned(),
            known: known.join(", "),
        });
    }
    let hub = match wanted {
        None => named.first().copied(),
        Some(want) => named
            .iter()
            .chain(&encoded)
            .find(|hub| hub.message == want)
            .copied(),
    };
    hub.ok_or_else(|| {
        let carries: Vec<&str> = named.iter().chain(&encoded).map(|h| h.message).collect();
        TapError::WrongType {
            stream: stream.to_owned(),
            carries: carries.join(", "),
            asked: wanted.unwrap_or("any"),
        }
    })
}

fn drops(queue: &InputQueue) -> DropCounts {
    let mut counts = DropCounts::default();
    for reason in DropReason::ALL {
        counts.set(reason, queue.dropped(reason));
    }
    counts
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

/// A subscription to a stream at run time, whatever it carries. Detaches when dropped.
pub struct AnyTap {
    hub: Arc<Hub>,
    id: u64,
    queue: Arc<InputQueue>,
    signal: Arc<Signal>,
    attached: Arc<AtomicBool>,
    /// For the stop flag, and to unregister the tap's wake-up when it detaches.
    shared: Arc<Shared>,
    /// A tap from another partition than the producer's: its subscription on the
    /// transport, undeclared when the tap detaches.
    _remote: Option<Ingress>,
}

impl AnyTap {
    /// The next message, waiting up to `timeout`; `None` on timeout, when the stream
    /// closed, or when the run stops.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<streamwire_core::Envelope> {
        let deadline = Instant::now() + timeout;
        loop {
            let since = self.signal.count();
            if let Some(envelope) = self.queue.pop() {
                return Some(envelope);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.queue.is_closed() || self.shared.is_stopping() {
                return None;
            }
            self.signal.wait(since, left);
        }
    }

    /// The next message if one is queued.
    pub fn try_recv(&self) -> Option<streamwire_core::Envelope> {
        self.queue.pop()
    }

    /// Messages this tap's keep-last queue dropped.
    pub fn dropped(&self) -> u64 {
        self.queue.dropped(DropReason::QueueFull)
    }

    /// Detaches now (dropping the tap does the same).
    pub fn detach(self) {}
}

impl Drop for AnyTap {
    fn drop(&mut self) {
        self.attached.store(false, Ordering::SeqCst);
        self.hub.unsubscribe(self.id);
        // Taps come and go for as long as a run lasts: nothing of them may pile up.
        if let Ok(mut signals) = self.shared.signals.lock() {
            signals.retain(|s| !Arc::ptr_eq(s, &self.signal));
        }
    }
}

impl std::fmt::Debug for AnyTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnyTap")
            .field("stream", &self.hub.stream)
            .finish_non_exhaustive()
    }
}

/// A typed subscription to a stream at run time. Detaches when dropped.
pub struct Tap<M> {
    inner: AnyTap,
    _message: std::marker::PhantomData<fn() -> M>,
}

impl<M: Message> Tap<M> {
    /// The next message with its header, waiting up to `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Delivered<M>> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let envelope = self.inner.recv_timeout(left)?;
            if let Some(message) = envelope.message.as_any().downcast_ref::<M>() {
                return Some(Delivered {
                    header: envelope.header,
                    message: message.clone(),
                });
            }
            self.inner.queue.count(DropReason::DeserializeFailed);
        }
    }

    /// Messages this tap's keep-last queue dropped.
    pub fn dropped(&self) -> u64 {
        self.inner.dropped()
    }

    /// Detaches now (dropping the tap does the same).
    pub fn detach(self) {}
}

impl<M> std::fmt::Debug for Tap<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}
