//! The thread phases of the run builder: codec workers, tap encoders, ready-made
//! decoders, senders, and spawn, the one phase that starts threads.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;

use streamwire_core::codec::DynCodec;
use streamwire_core::{CodecInfo, CodecParams, History, Qos};
use streamwire_graph::{CodecKind, InstanceIndex, Plan, PlanPort};
use streamwire_transport::Transport;

use crate::clock::Signal;
use crate::handle::{RunHandle, ThreadRecord};
use crate::hub::{Demand, Hub, Wants};
use crate::options::StartError;
use crate::queue::{Bound, InputQueue, WIRE_BUFFER_SMALL_DEPTH};
use crate::sender::{
    IdleShortcut, InlineSender, SendHere, SenderRecord, SenderWorker, SendingLink,
};
use crate::stats::{CodecRecord, CodecRole, Records, ThreadKind, ThreadListing};
use crate::taps::{PartitionTaps, StreamHub, TapPoint};
use crate::worker::{CodecCounters, CodecWorker, Exit, InstanceWorker, Shared};

use super::slots::{InstanceSlot, codec_label, codec_role};
use super::{RunBuilder, schema, spans};

impl RunBuilder {
    /// Phase `codec workers`: a worker per codec node that runs here, its codec built
    /// from the plan's parameters.
    pub(super) fn codec_workers(&mut self) -> Result<(), StartError> {
        for (id, slot) in self.codecs.iter_mut() {
            let Some(node) = self.plan.codec_node(id).filter(|_| slot.here) else {
                continue;
            };
            let engine =
                node.codec
                    .instantiate(&node.params)
                    .map_err(|error| StartError::Codec {
                        node: codec_label(node),
                        error,
                    })?;
            let engine: Arc<dyn DynCodec> = Arc::from(engine);
            let counters = Arc::new(CodecCounters::default());
            self.records.codecs.push(CodecRecord {
                role: codec_role(node),
                engine: Some(engine.clone()),
                codec: node.codec.name(),
                stream: node.stream.clone(),
                placement: node.placement.to_string(),
                counters: counters.clone(),
                passthrough_of: None,
                queue: Some(slot.queue.clone()),
                output: Some(slot.hub.clone()),
            });
            self.codec_threads.push(PendingThread {
                name: codec_label(node),
                kind: ThreadKind::Codec,
                process: node.placement.to_string(),
                signal: slot.signal.clone(),
                worker: Worker::Codec(CodecWorker {
                    thread: 0,
                    span: spans::codec(&self.plan, node),
                    role: codec_role(node),
                    codec: engine,
                    encoded_type: node.codec.encoded().name(),
                    input: slot.queue.clone(),
                    output: slot.hub.clone(),
                    subscription: slot.subscription.take(),
                    signal: slot.signal.clone(),
                    counters,
                    shared: self.make.shared.clone(),
                }),
            });
        }
        Ok(())
    }

    /// Phase `tap encoders`: an `Out<Compressed<..>>` whose plan has no encoder of its
    /// codec still offers its bytes (`<stream>/compressed`) to taps, encoding only while
    /// one is attached.
    pub(super) fn tap_encoders(&mut self) -> Result<(), StartError> {
        let plan = Arc::clone(&self.plan);
        for node in plan.instances() {
            let Some(slot) = self.instances.get(node.id).filter(|s| s.here) else {
                continue;
            };
            let partition = slot.partition;
            let unplanned: Vec<(&PlanPort, CodecInfo, Arc<Hub>)> = node
                .ports()
                .filter_map(|port| {
                    let codec = port.info.payload_form().codec()?;
                    let producer = slot.ports.get(port.index)?.hub()?.clone();
                    let planned = plan.codec_nodes().any(|c| {
                        c.kind == CodecKind::Encode && c.stream == port.stream && c.codec == codec
                    });
                    (!planned).then_some((port, codec, producer))
                })
                .collect();
            let process = node.placement.to_string();
            for (port, codec, producer) in unplanned {
                let span = spans::tap_encoder(&process, &node.name, port.field(), &port.stream);
                self.tap_encoder((partition, &process), port, codec, &producer, span)?;
            }
        }
        Ok(())
    }

    /// An encoder of `producer`'s messages for taps, in `partition` (planned process
    /// `process`).
    fn tap_encoder(
        &mut self,
        (partition, process): (usize, &str),
        port: &PlanPort,
        codec: CodecInfo,
        producer: &Arc<Hub>,
        span: tracing::Span,
    ) -> Result<(), StartError> {
        let label = format!("tap encoder {} {}", codec.name(), port.stream);
        let engine = codec
            .instantiate(&CodecParams::new())
            .map_err(|error| StartError::Codec {
                node: label.clone(),
                error,
            })?;
        let encoded_stream = format!("{}/{}", port.stream, codec.stream_suffix());
        let hub = self.make.hub(&encoded_stream, codec.encoded().name(), None);
        self.streams.push(StreamHub {
            name: encoded_stream,
            hub: hub.clone(),
            partition,
            qos: Qos {
                history: History::KeepLast(1),
                ..port.qos
            },
            accepted: vec![schema(codec.encoded())],
            codec: codec.name(),
            publish: true,
        });
        let signal = self.make.signal();
        let queue = self.make.queue_bounded(Bound::KeepLast(1), &signal);
        let (id, _) = producer.subscribe(queue.clone(), Wants::Any, Demand::Via(hub.clone()));
        let engine: Arc<dyn DynCodec> = Arc::from(engine);
        let counters = Arc::new(CodecCounters::default());
        self.records.codecs.push(CodecRecord {
            role: CodecRole::Encode,
            engine: Some(engine.clone()),
            codec: codec.name(),
            stream: port.stream.clone(),
            placement: "for taps".to_owned(),
            counters: counters.clone(),
            passthrough_of: None,
            queue: Some(queue.clone()),
            output: Some(hub.clone()),
        });
        self.tap_encoder_threads.push(PendingThread {
            name: label.clone(),
            kind: ThreadKind::TapEncoder,
            process: process.to_owned(),
            signal: signal.clone(),
            worker: Worker::Codec(CodecWorker {
                thread: 0,
                span,
                role: CodecRole::Encode,
                codec: engine,
                encoded_type: codec.encoded().name(),
                input: queue,
                output: hub,
                subscription: Some((producer.clone(), id)),
                signal,
                counters,
                shared: self.make.shared.clone(),
            }),
        });
        Ok(())
    }

    /// Phase `ready-made decoders`: the decode of ready-made bytes, done once per publish
    /// by the producer's hub for in-process pixel consumers, gets a row of its own.
    pub(super) fn ready_made_decoders(&mut self) {
        let Records {
            outputs, codecs, ..
        } = &mut self.records;
        for output in outputs.iter().filter(|o| o.hub.passthrough.is_some()) {
            codecs.push(CodecRecord {
                role: CodecRole::Decode,
                engine: None,
                codec: "ready-made",
                stream: output.hub.stream.clone(),
                placement: format!("in {}", output.port),
                counters: Arc::new(CodecCounters::default()),
                passthrough_of: Some(output.hub.clone()),
                queue: None,
                output: None,
            });
        }
    }

    /// Phase `senders`: every stream a partition here produces gets a publisher (the
    /// first producer of a name only), which sends only while another partition
    /// subscribes (a planned consumer there, or a tap).
    pub(super) fn senders(&mut self) -> Result<(), StartError> {
        let Some(transport) = self.transport.clone() else {
            return Ok(());
        };
        let streams = std::mem::take(&mut self.streams);
        let mut keys: Vec<&str> = Vec::new();
        for stream in &streams {
            if !stream.publish || !self.layout.is_here(stream.partition) {
                continue;
            }
            if keys.contains(&stream.name.as_str()) {
                tracing::debug!(stream = %stream.name, "a second producer of the stream is not published");
                continue;
            }
            keys.push(&stream.name);
            self.sender(stream, transport.as_ref())?;
        }
        self.streams = streams;
        Ok(())
    }

    /// The sender of `stream`: its publisher, put to by the stream's forwarding thread
    /// for a keep-last stream, by a thread of its own fed by a queue for a keep-all one
    /// (`sender.rs` says why).
    fn sender(&mut self, stream: &StreamHub, transport: &dyn Transport) -> Result<(), StartError> {
        let publisher = transport
            .publisher(&stream.name, stream.qos)
            .map_err(|error| StartError::Transport {
                stream: stream.name.clone(),
                error,
            })?;
        transport.announce_publisher(&stream.name, self.layout.name(stream.partition));
        if let Some(source) = transport.loans() {
            stream.hub.loan_from(source);
        }
        let signal = self.make.signal();
        // The sender keeps what the strictest consumer in another partition keeps, so
        // that a keep-all consumer loses nothing before the wire.
        let history = self
            .remote_history
            .iter()
            .find(|(name, _)| *name == stream.name)
            .map_or(stream.qos.history, |(_, remote)| {
                stream.qos.history.strictest(*remote)
            });
        let queue = self.make.queue_bounded(self.wire_buffer(history), &signal);
        let link = SendingLink::new(publisher.clone(), stream.codec);
        let demand = Demand::Remote(publisher);
        let stopping = self.make.shared.stopping.clone();
        let inline = match history {
            History::KeepLast(_) => {
                let sender = InlineSender::new(link.clone(), queue.clone(), stopping);
                let here = SendHere::Always(sender.clone());
                stream.hub.subscribe_sender(queue.clone(), demand, here);
                Some(sender)
            }
            History::KeepAll => {
                let shortcut = IdleShortcut::new(link.clone(), queue.clone(), stopping);
                let here = SendHere::WhenIdle(shortcut.clone());
                let id = stream.hub.subscribe_sender(queue.clone(), demand, here);
                self.sender_thread(stream, (&link, &queue, shortcut), signal, id);
                None
            }
        };
        self.records.senders.push(SenderRecord {
            partition: self.layout.name(stream.partition).to_owned(),
            remote_partitions: self
                .planned_remote
                .iter()
                .filter(|(name, _)| *name == stream.name)
                .map(|(_, partition)| partition.clone())
                .collect(),
            link,
            queue,
            inline,
        });
        Ok(())
    }

    /// The bound of a sender's queue keeping `history`: a keep-all one is the wire's
    /// buffer, where small messages wait in numbers, to leave in batches.
    fn wire_buffer(&self, history: History) -> Bound {
        match self.make.bound(history) {
            Bound::KeepAll {
                depth, deadline, ..
            } => Bound::KeepAll {
                depth,
                deadline,
                small_depth: WIRE_BUFFER_SMALL_DEPTH,
            },
            keep_last => keep_last,
        }
    }

    /// The thread of a keep-all stream's sender, subscribed to its hub as `id`.
    fn sender_thread(
        &mut self,
        stream: &StreamHub,
        (link, queue, shortcut): (&Arc<SendingLink>, &Arc<InputQueue>, Arc<IdleShortcut>),
        signal: Arc<Signal>,
        id: u64,
    ) {
        let process = self.layout.name(stream.partition);
        self.sender_threads.push(PendingThread {
            name: format!("send {}", stream.name),
            kind: ThreadKind::Sender,
            process: process.to_owned(),
            signal: signal.clone(),
            worker: Worker::Sender(SenderWorker {
                thread: 0,
                span: spans::sender(&self.plan, process, &stream.name),
                link: link.clone(),
                queue: queue.clone(),
                shortcut,
                signal,
                subscription: (stream.hub.clone(), id),
                shared: self.make.shared.clone(),
            }),
        });
    }

    /// Phase `spawn`: the records and the tap point shared, a worker per instance that
    /// runs here, every thread started (codec nodes, senders, tap encoders, instances),
    /// the handle returned. If a thread cannot start, those started are stopped.
    pub(super) fn spawn(self) -> Result<RunHandle, StartError> {
        let RunBuilder {
            plan,
            make,
            layout,
            transport,
            instances,
            streams,
            records,
            codec_threads,
            sender_threads,
            tap_encoder_threads,
            stop_deadline,
            tap_depth,
            ..
        } = self;
        let shared = make.shared;
        let records = Arc::new(records);
        let taps = Arc::new(TapPoint {
            shared: shared.clone(),
            records: records.clone(),
            streams,
            partitions: layout.names,
            local: layout.local,
            transport: transport.clone(),
            tap_depth,
            graph: crate::taps::run_graph_of(&plan),
        });
        let instance_threads = instances
            .into_entries()
            .filter_map(|(id, slot)| instance_thread(&plan, id, slot, &shared, &taps));
        let (exit_tx, exits) = mpsc::channel();
        let mut threads = Vec::new();
        let mut listed = Vec::new();
        for pending in codec_threads
            .into_iter()
            .chain(sender_threads)
            .chain(tap_encoder_threads)
            .chain(instance_threads)
        {
            listed.push(ThreadListing {
                name: pending.name.clone(),
                kind: pending.kind,
                process: pending.process.clone(),
                signal: pending.signal.clone(),
            });
            match start_thread(pending, threads.len(), &exit_tx) {
                Ok(thread) => threads.push(thread),
                Err(error) => {
                    shared.stop();
                    return Err(error);
                }
            }
        }
        let _ = records.threads.set(listed);
        Ok(RunHandle {
            shared,
            records,
            taps,
            transport,
            threads,
            exits,
            failure: None,
            stop_deadline,
            stop_requested: Arc::new(AtomicBool::new(false)),
        })
    }
}

/// A thread to start.
pub(super) struct PendingThread {
    /// What the report calls it (`camera`, `encode jpeg color_image`, `send color_image`).
    name: String,
    /// What kind of thread the report calls it.
    kind: ThreadKind,
    /// The planned process it belongs to (`host/process`).
    process: String,
    /// What wakes it (the report counts how often it did).
    signal: Arc<Signal>,
    /// What it runs.
    worker: Worker,
}

/// What a thread of the run runs.
enum Worker {
    /// A module instance.
    Instance(Box<InstanceWorker>),
    /// A codec node or a tap encoder.
    Codec(CodecWorker),
    /// A sender to other partitions.
    Sender(SenderWorker),
}

impl Worker {
    /// Runs as thread number `thread` of the run, saying on `exits` how it ended.
    fn run(self, thread: usize, exits: mpsc::Sender<Exit>) {
        match self {
            Worker::Instance(mut worker) => {
                worker.thread = thread;
                worker.run(exits);
            }
            Worker::Codec(mut worker) => {
                worker.thread = thread;
                worker.run(exits);
            }
            Worker::Sender(mut worker) => {
                worker.thread = thread;
                worker.run(exits);
            }
        }
    }
}

/// The thread of instance `id`, if it runs here: its module, ports, trigger,
/// subscriptions and counters from its slot; its taps from its own partition, as a tool
/// joining its process would tap.
fn instance_thread(
    plan: &Plan,
    id: InstanceIndex,
    slot: InstanceSlot,
    shared: &Arc<Shared>,
    taps: &Arc<TapPoint>,
) -> Option<PendingThread> {
    let node = plan.instance(id).filter(|_| slot.here)?;
    let signal = slot.signal.clone();
    let worker = InstanceWorker {
        thread: 0,
        span: spans::instance(node),
        name: node.name.clone(),
        module_type: node.module_type,
        module: slot.module?,
        trigger: slot.trigger,
        inputs: slot
            .ports
            .iter()
            .filter_map(|(p, port)| Some((p.index(), port.queue()?.clone())))
            .collect(),
        outputs: slot
            .ports
            .iter()
            .filter_map(|(_, port)| port.hub().cloned())
            .collect(),
        subscriptions: slot.subscriptions,
        signal: slot.signal,
        counters: slot.counters,
        shared: shared.clone(),
        taps: Arc::new(PartitionTaps {
            point: taps.clone(),
            process: (!taps.partitions.is_empty()).then(|| node.placement.to_string()),
        }),
    };
    Some(PendingThread {
        name: node.name.clone(),
        kind: ThreadKind::Instance,
        process: node.placement.to_string(),
        signal,
        worker: Worker::Instance(Box::new(worker)),
    })
}

/// The operating system's name of thread number `thread`: `sw<thread> <name>`. Linux keeps
/// the first 15 bytes of a name (what `top -H` and `ps -L` show), so the number comes
/// first: every thread of a run is told apart even when names share a long prefix.
fn os_thread_name(thread: usize, name: &str) -> String {
    format!("sw{thread} {name}")
}

/// Starts `pending` as thread number `thread` of the run.
fn start_thread(
    pending: PendingThread,
    thread: usize,
    exits: &mpsc::Sender<Exit>,
) -> Result<ThreadRecord, StartError> {
    let PendingThread { name, worker, .. } = pending;
    let is_instance = matches!(worker, Worker::Instance(_));
    let exits = exits.clone();
    let handle = std::thread::Builder::new()
        .name(os_thread_name(thread, &name))
        .spawn(move || worker.run(thread, exits))
        .map_err(|error| StartError::Spawn {
            name: name.clone(),
            error,
        })?;
    Ok(ThreadRecord {
        name,
        is_instance,
        handle: Some(handle),
        exited: false,
    })
}

#[cfg(test)]
mod tests {
    use super::os_thread_name;

    #[test]
    fn thread_names_differ_within_the_fifteen_bytes_linux_keeps() {
        let names = [
            "encode jpeg color_image",
            "encode jpeg color_image_left",
            "send color_image",
            "send color_image_left",
            "camera",
        ];
        let kept: Vec<String> = (0..60)
            .map(|thread| {
                let name = os_thread_name(thread, names[thread % names.len()]);
                name.bytes().take(15).map(char::from).collect()
            })
            .collect();
        let mut unique = kept.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), kept.len(), "{kept:?}");
    }
}
