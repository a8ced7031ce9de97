//! The run builder's slots: one per plan node, keyed by the plan's typed ids
//! ([`InstanceIndex`], [`PortIndex`], [`CodecNodeId`]), and the few facts of the plan's
//! nodes the runtime reads in its own words.

use std::marker::PhantomData;
use std::sync::Arc;

use streamwire_core::{ModuleValue, PayloadForm, Trigger};
use streamwire_graph::{
    CodecKind, CodecNode, CodecNodeId, Endpoint, InstanceIndex, Plan, PlanPort, PortIndex,
};

use crate::clock::Signal;
use crate::hub::Hub;
use crate::options::{RunOptions, StartError};
use crate::partition::Partitions;
use crate::queue::InputQueue;
use crate::stats::CodecRole;
use crate::worker::InstanceCounters;

/// A typed id of the plan: a position in its kind's list of nodes.
pub(crate) trait PlanId: Copy {
    /// The id at position `index`.
    fn at(index: usize) -> Self;
    /// Its position.
    fn position(self) -> usize;
}

macro_rules! plan_id {
    ($($id:ty),*) => {$(
        impl PlanId for $id {
            fn at(index: usize) -> Self {
                <$id>::new(index)
            }
            fn position(self) -> usize {
                self.index()
            }
        }
    )*};
}
plan_id!(InstanceIndex, PortIndex, CodecNodeId);

/// One slot per plan node of a kind, in the plan's order, reached by the plan's id.
pub(crate) struct Slots<Id, T> {
    slots: Vec<T>,
    _id: PhantomData<fn(Id)>,
}

impl<Id: PlanId, T> Slots<Id, T> {
    /// The slot of `id`.
    pub(crate) fn get(&self, id: Id) -> Option<&T> {
        self.slots.get(id.position())
    }

    /// The slot of `id`, to fill.
    pub(crate) fn get_mut(&mut self, id: Id) -> Option<&mut T> {
        self.slots.get_mut(id.position())
    }

    /// Every slot with its id.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Id, &T)> {
        self.slots.iter().enumerate().map(|(i, s)| (Id::at(i), s))
    }

    /// Every slot with its id, to fill.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (Id, &mut T)> {
        self.slots
            .iter_mut()
            .enumerate()
            .map(|(i, s)| (Id::at(i), s))
    }

    /// Every slot with its id, taken.
    pub(crate) fn into_entries(self) -> impl Iterator<Item = (Id, T)> {
        self.slots
            .into_iter()
            .enumerate()
            .map(|(i, s)| (Id::at(i), s))
    }
}

impl<Id, T> Default for Slots<Id, T> {
    fn default() -> Self {
        Slots {
            slots: Vec::new(),
            _id: PhantomData,
        }
    }
}

impl<Id, T> FromIterator<T> for Slots<Id, T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Slots {
            slots: iter.into_iter().collect(),
            _id: PhantomData,
        }
    }
}

/// One instance of the plan, as the run builds it.
pub(crate) struct InstanceSlot {
    /// The partition it runs in (0 without partitions).
    pub(crate) partition: usize,
    /// Whether it runs in this process (all do, unless `RunOptions::local` names one).
    pub(crate) here: bool,
    /// The module value, until its thread takes it.
    pub(crate) module: Option<Box<dyn ModuleValue>>,
    /// One per port, by [`PortIndex`] (phase `hubs`).
    pub(crate) ports: Slots<PortIndex, PortSlot>,
    /// Wakes its thread: every input queue of it notifies this.
    pub(crate) signal: Arc<Signal>,
    /// When it steps, read after its ports are bound (phase `triggers`).
    pub(crate) trigger: Trigger,
    /// (hub, subscriber id) of each subscription feeding its inputs (phase `links`),
    /// detached when it finishes.
    pub(crate) subscriptions: Vec<(Arc<Hub>, u64)>,
    /// Its counters, also in the run's records.
    pub(crate) counters: Arc<InstanceCounters>,
}

/// One port of an instance: an output publishes into a hub, an input reads a queue.
pub(crate) enum PortSlot {
    /// An output's hub (fan-out to its consumers' queues).
    Output(Arc<Hub>),
    /// An input's queue, bounded by the port's QoS.
    Input(Arc<InputQueue>),
}

impl PortSlot {
    /// The queue, for an input.
    pub(crate) fn queue(&self) -> Option<&Arc<InputQueue>> {
        match self {
            PortSlot::Input(queue) => Some(queue),
            PortSlot::Output(_) => None,
        }
    }

    /// The hub, for an output.
    pub(crate) fn hub(&self) -> Option<&Arc<Hub>> {
        match self {
            PortSlot::Output(hub) => Some(hub),
            PortSlot::Input(_) => None,
        }
    }
}

/// One codec node of the plan, as the run builds it (made in phase `hubs`).
pub(crate) struct CodecSlot {
    /// The partition it runs in (0 without partitions).
    pub(crate) partition: usize,
    /// Whether it runs in this process.
    pub(crate) here: bool,
    /// The hub it publishes into: the encoded stream, or the decoded one.
    pub(crate) hub: Arc<Hub>,
    /// Its input queue, which follows its stream's QoS.
    pub(crate) queue: Arc<InputQueue>,
    /// Wakes its thread.
    pub(crate) signal: Arc<Signal>,
    /// (hub, subscriber id) of the subscription feeding its queue (phase `links`), taken
    /// by its worker.
    pub(crate) subscription: Option<(Arc<Hub>, u64)>,
}

/// The run's partitions: which planned processes are kept apart, and which one runs here.
pub(crate) struct Layout {
    /// The partitions' names (the plan's processes, `host/process`), in the plan's
    /// order; empty without partitions.
    pub(crate) names: Vec<String>,
    /// The partition that runs here when the others run elsewhere
    /// (`RunOptions::local`); `None` when every one runs here.
    pub(crate) local: Option<usize>,
}

impl Layout {
    /// Partitions, one per planned process, when the options ask for them and the plan
    /// has several processes; the process `RunOptions::local` names is looked up once.
    pub(crate) fn of(plan: &Plan, options: &RunOptions) -> Result<Layout, StartError> {
        let mut names: Vec<String> = plan
            .processes()
            .iter()
            .map(|p| p.placement().to_string())
            .collect();
        let partitioned = (options.partitions == Partitions::PerProcess || options.local.is_some())
            && names.len() > 1;
        let local = match &options.local {
            Some(name) => match names.iter().position(|p| p == name) {
                Some(at) => partitioned.then_some(at),
                None => {
                    return Err(StartError::UnknownProcess {
                        process: name.clone(),
                        known: names.join(", "),
                    });
                }
            },
            None => None,
        };
        if !partitioned {
            names.clear();
        }
        Ok(Layout { names, local })
    }

    /// Whether the plan's processes run as partitions joined by a transport.
    pub(crate) fn is_partitioned(&self) -> bool {
        !self.names.is_empty()
    }

    /// The partition of a node placed at `placement` (0 without partitions).
    pub(crate) fn partition_of(&self, placement: &str) -> usize {
        self.names.iter().position(|p| p == placement).unwrap_or(0)
    }

    /// Whether partition `partition` runs in this process.
    pub(crate) fn is_here(&self, partition: usize) -> bool {
        self.local.is_none_or(|l| l == partition)
    }

    /// The name of partition `partition` (empty without partitions).
    pub(crate) fn name(&self, partition: usize) -> &str {
        self.names.get(partition).map_or("", String::as_str)
    }
}

/// The wire name of what `port` carries: the message, or for `Compressed<M, C>` the
/// encoded message.
pub(crate) fn delivered_type(port: &PlanPort) -> &'static str {
    match port.info.payload_form() {
        PayloadForm::Raw => port.info.message().name(),
        PayloadForm::Codec(codec) => codec.encoded().name(),
    }
}

/// A codec node as the run names it (threads, reports): `encode jpeg color_image`;
/// decoders, one per receiving process, with their place: `decode jpeg color_image @ ui`.
pub(crate) fn codec_label(node: &CodecNode) -> String {
    match node.kind {
        CodecKind::Decode => format!(
            "{} {} {} @ {}",
            node.kind,
            node.codec.name(),
            node.stream,
            node.placement
        ),
        _ => format!("{} {} {}", node.kind, node.codec.name(), node.stream),
    }
}

/// Encode or decode, as reported.
pub(crate) fn codec_role(node: &CodecNode) -> CodecRole {
    match node.kind {
        CodecKind::Encode => CodecRole::Encode,
        _ => CodecRole::Decode,
    }
}

/// The stream a codec node publishes: the encoded stream, or the decoded one.
pub(crate) fn codec_output_stream(node: &CodecNode) -> &str {
    match node.kind {
        CodecKind::Encode => &node.encoded_stream,
        _ => &node.stream,
    }
}

/// The wire name of the message a codec node publishes.
pub(crate) fn codec_output_type(node: &CodecNode) -> &'static str {
    match node.kind {
        CodecKind::Encode => node.codec.encoded().name(),
        _ => node.codec.message().name(),
    }
}

/// A link's end as the run's report names it: `instance.port`, or the codec node's label.
pub(crate) fn end_name(plan: &Plan, end: Endpoint) -> String {
    match end {
        Endpoint::Codec(id) => plan
            .codec_node(id)
            .map_or_else(|| plan.endpoint_name(end), codec_label),
        _ => plan.endpoint_name(end),
    }
}
