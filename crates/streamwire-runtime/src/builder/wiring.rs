//! The wiring phases of the run builder: check behaviour, hubs, links, bind ports,
//! triggers. They make every hub and queue and subscribe them along the plan's links.

use std::sync::Arc;

use streamwire_core::{CodecParams, Direction, Durability, History, Trigger};
use streamwire_graph::{
    CodecKind, CodecNode, CodecNodeId, Endpoint, InstanceIndex, InstanceNode, Link, Plan, PlanPort,
    PortIndex,
};

use crate::clock::Signal;
use crate::hub::{Demand, Hub, Passthrough, Wants};
use crate::options::StartError;
use crate::partition::{Ingress, Joined};
use crate::queue::InputQueue;
use crate::stats::{InputRecord, LinkRecord, OutputRecord};
use crate::taps::StreamHub;

use super::slots::{
    CodecSlot, Layout, PortSlot, Slots, codec_output_stream, codec_output_type, delivered_type,
    end_name,
};
use super::{RunBuilder, schema};

impl RunBuilder {
    /// Phase `check behaviour`: refuse a module without `impl Node` before any thread
    /// exists.
    pub(super) fn check_behaviour(&mut self) -> Result<(), StartError> {
        for (id, slot) in self.instances.iter_mut() {
            let (Some(node), Some(module)) = (self.plan.instance(id), slot.module.as_mut()) else {
                continue;
            };
            if slot.here && module.behaviour().is_none() {
                return Err(StartError::NoBehaviour {
                    instance: node.name.clone(),
                    module_type: node.module_type,
                });
            }
        }
        Ok(())
    }

    /// Phase `hubs`: a hub per instance output and per codec node, a queue per input
    /// and per codec node; every hub listed in `streams`.
    pub(super) fn hubs(&mut self) -> Result<(), StartError> {
        let plan = Arc::clone(&self.plan);
        for node in plan.instances() {
            let Some(slot) = self.instances.get(node.id) else {
                continue;
            };
            let (partition, here, signal) = (slot.partition, slot.here, slot.signal.clone());
            let ports = node
                .ports()
                .map(|port| self.port_slot(node, port, partition, here, &signal))
                .collect::<Result<Slots<_, _>, _>>()?;
            if let Some(slot) = self.instances.get_mut(node.id) {
                slot.ports = ports;
            }
        }
        self.codecs = plan
            .codec_nodes()
            .map(|node| self.codec_slot(node))
            .collect();
        Ok(())
    }

    /// The queue of an input, or the hub of an output (listed as a stream, and as an
    /// output of this process when its instance runs here). An `Out<Compressed<..>>`'s
    /// hub decodes its ready-made bytes once for pixel consumers.
    fn port_slot(
        &mut self,
        node: &InstanceNode,
        port: &PlanPort,
        partition: usize,
        here: bool,
        signal: &Arc<Signal>,
    ) -> Result<PortSlot, StartError> {
        if matches!(port.info.direction(), Direction::Input) {
            return Ok(PortSlot::Input(self.make.queue(port.qos.history, signal)));
        }
        let codec = port.info.payload_form().codec();
        let passthrough = match codec {
            Some(codec) => Some(Arc::new(Passthrough::new(
                &port.stream,
                codec.encoded().name(),
                codec
                    .instantiate(&CodecParams::new())
                    .map_err(|error| StartError::Codec {
                        node: format!("decode of ready-made {}", port.stream),
                        error,
                    })?,
            ))),
            None => None,
        };
        let hub = self
            .make
            .hub(&port.stream, port.info.message().name(), passthrough);
        let mut accepted = vec![schema(port.info.message())];
        accepted.extend(codec.map(|codec| schema(codec.encoded())));
        self.streams.push(StreamHub {
            name: port.stream.clone(),
            hub: hub.clone(),
            partition,
            qos: port.qos,
            accepted,
            codec: "",
            publish: true,
        });
        if here {
            self.records.outputs.push(OutputRecord {
                port: format!("{}.{}", node.name, port.field()),
                hub: hub.clone(),
            });
        }
        Ok(PortSlot::Output(hub))
    }

    /// A codec node's slot: its hub (listed in `streams`; a decoder's output never leaves
    /// its partition), and its queue, which follows its stream's QoS.
    fn codec_slot(&mut self, node: &CodecNode) -> CodecSlot {
        let partition = self.layout.partition_of(&node.placement.to_string());
        let signal = self.make.signal();
        let hub = self
            .make
            .hub(codec_output_stream(node), codec_output_type(node), None);
        let encode = node.kind == CodecKind::Encode;
        self.streams.push(StreamHub {
            name: codec_output_stream(node).to_owned(),
            hub: hub.clone(),
            partition,
            qos: node.qos,
            accepted: vec![schema(if encode {
                node.codec.encoded()
            } else {
                node.codec.message()
            })],
            codec: if encode { node.codec.name() } else { "" },
            publish: encode,
        });
        // What the node's queue loses is lost to every consumer it serves: a relay.
        let queue = self.make.queue(node.qos.history, &signal);
        queue.relay_to(hub.clone());
        CodecSlot {
            partition,
            here: self.layout.is_here(partition),
            hub,
            queue,
            signal,
            subscription: None,
        }
    }

    /// Phase `links`: subscribe each receiving queue that runs here to its sending hub,
    /// across partitions through the receiving partition's ingress of the stream.
    pub(super) fn links(&mut self) -> Result<(), StartError> {
        let plan = Arc::clone(&self.plan);
        plan.links().try_for_each(|link| self.link(link))
    }

    /// One link: its receiving queue, if it runs here, subscribed to its sending hub (or
    /// to the ingress of the stream when the link crosses partitions); its row listed.
    fn link(&mut self, link: &Link) -> Result<(), StartError> {
        let (Some(hub), Some(to)) = (self.sending_hub(link.from), self.receiving(link.to)) else {
            return Ok(());
        };
        let (Some(from_part), Some(to_part)) =
            (self.partition_at(link.from), self.partition_at(link.to))
        else {
            return Ok(());
        };
        let crosses = self.transport.is_some() && from_part != to_part;
        // Across hosts, one process of the receiving host takes the stream off the link
        // and hands it on to the host's other consumers (RFC.md, "One copy per link").
        let crossing = crosses.then(|| self.crossing_of(link)).flatten();
        if crosses {
            let history = self.receiving_history(link.to);
            match crossing.as_ref().filter(|c| c.forwarded_to_partition) {
                Some(c) => self.plan_remote_named(&c.key, to_part, history),
                None => self.plan_remote(&hub, to_part, history),
            }
        }
        if !self.layout.is_here(to_part) {
            // Its receiving end runs elsewhere.
            return Ok(());
        }
        let hub = if crosses {
            match self.ingress_hub(&hub, to_part, crossing.as_ref())? {
                Some(ingress) => ingress,
                None => return Ok(()),
            }
        } else {
            hub
        };
        let (id, counters) = hub.subscribe(to.queue, to.wants, to.demand);
        match link.to {
            Endpoint::Port { instance, .. } => {
                if let Some(slot) = self.instances.get_mut(instance) {
                    slot.subscriptions.push((hub.clone(), id));
                }
            }
            Endpoint::Codec(codec) => {
                if let Some(slot) = self.codecs.get_mut(codec) {
                    slot.subscription = Some((hub.clone(), id));
                }
            }
            _ => {}
        }
        self.records.links.push(LinkRecord {
            from: end_name(&self.plan, link.from),
            to: end_name(&self.plan, link.to),
            stream: if link.stream.is_empty() {
                hub.stream.clone()
            } else {
                link.stream.clone()
            },
            counters,
            crosses,
        });
        Ok(())
    }

    /// The slot of port `port` of instance `instance`.
    fn port(&self, instance: InstanceIndex, port: PortIndex) -> Option<&PortSlot> {
        self.instances.get(instance)?.ports.get(port)
    }

    /// The hub a link starts from: an output's, or a codec node's.
    fn sending_hub(&self, end: Endpoint) -> Option<Arc<Hub>> {
        match end {
            Endpoint::Port { instance, port } => self.port(instance, port)?.hub().cloned(),
            Endpoint::Codec(id) => Some(self.codecs.get(id)?.hub.clone()),
            _ => None,
        }
    }

    /// Where a link delivers: an input's queue (its messages of the port's wire type,
    /// always), or a codec node's (only while the node's output is wanted).
    fn receiving(&self, end: Endpoint) -> Option<Receiving> {
        match end {
            Endpoint::Port { instance, port } => Some(Receiving {
                queue: self.port(instance, port)?.queue()?.clone(),
                wants: Wants::Message(delivered_type(self.plan.port(instance, port)?)),
                demand: Demand::Always,
            }),
            Endpoint::Codec(id) => {
                let (slot, node) = (self.codecs.get(id)?, self.plan.codec_node(id)?);
                Some(Receiving {
                    queue: slot.queue.clone(),
                    wants: match node.kind {
                        CodecKind::Encode => Wants::Any,
                        _ => Wants::Message(node.codec.encoded().name()),
                    },
                    demand: Demand::Via(slot.hub.clone()),
                })
            }
            _ => None,
        }
    }

    /// The partition a link's end runs in.
    fn partition_at(&self, end: Endpoint) -> Option<usize> {
        match end {
            Endpoint::Port { instance, .. } => Some(self.instances.get(instance)?.partition),
            Endpoint::Codec(id) => Some(self.codecs.get(id)?.partition),
            _ => None,
        }
    }

    /// Notes that the stream of `hub` is planned to reach partition `to`, whose receiving
    /// end keeps `history`.
    fn plan_remote(&mut self, hub: &Arc<Hub>, to: usize, history: Option<History>) {
        let Some(source) = self.streams.iter().find(|s| Arc::ptr_eq(&s.hub, hub)) else {
            return;
        };
        let name = source.name.clone();
        self.plan_remote_named(&name, to, history);
    }

    /// Notes that the stream on key `name` is planned to reach partition `to`, whose
    /// receiving end keeps `history`.
    fn plan_remote_named(&mut self, name: &str, to: usize, history: Option<History>) {
        let entry = (name.to_owned(), self.layout.name(to).to_owned());
        if let Some(history) = history {
            match self.remote_history.iter_mut().find(|(n, _)| n == name) {
                Some((_, kept)) => *kept = kept.strictest(history),
                None => self.remote_history.push((name.to_owned(), history)),
            }
        }
        if !self.planned_remote.contains(&entry) {
            self.planned_remote.push(entry);
        }
    }

    /// How a link that crosses partitions reaches its receiving end when it crosses to
    /// another host: from the link (its host's receiver), or handed on by that receiver.
    fn crossing_of(&self, link: &Link) -> Option<LinkCrossing> {
        let to = self.plan.placement_of(link.to)?;
        let crossing = self.plan.crossing(link.from, to.host())?;
        Some(LinkCrossing {
            key: crossing.forwarded_key(),
            forwarded_to_partition: crossing.is_forwarded_to(to),
            hands_on: crossing.receiver == *to && !crossing.forwarded_to.is_empty(),
        })
    }

    /// The history a link's receiving end keeps: its input's, or its codec node's.
    fn receiving_history(&self, end: Endpoint) -> Option<History> {
        match end {
            Endpoint::Port { instance, port } => Some(self.plan.port(instance, port)?.qos.history),
            Endpoint::Codec(id) => Some(self.plan.codec_node(id)?.qos.history),
            _ => None,
        }
    }

    /// The hub of partition `to`'s ingress of the stream of `hub` (one per stream and
    /// partition, fed by the transport), opened on first use.
    ///
    /// Across hosts (`crossing`), a partition the host's receiver hands the stream on to
    /// subscribes to the forwarded key instead; the receiver's ingress hub is listed as a
    /// stream of that key, which phase *senders* publishes.
    fn ingress_hub(
        &mut self,
        hub: &Arc<Hub>,
        to: usize,
        crossing: Option<&LinkCrossing>,
    ) -> Result<Option<Arc<Hub>>, StartError> {
        let (Some(transport), Some(source)) = (
            &self.transport,
            self.streams.iter().find(|s| Arc::ptr_eq(&s.hub, hub)),
        ) else {
            return Ok(None);
        };
        let partition = self.layout.name(to);
        let key = match crossing {
            Some(c) if c.forwarded_to_partition => c.key.as_str(),
            _ => source.name.as_str(),
        };
        if let Some(ingress) = self
            .records
            .ingresses
            .iter()
            .find(|g| g.key == key && g.partition == partition)
        {
            return Ok(Some(ingress.hub.clone()));
        }
        let ingress_hub = self.make.hub(&source.name, source.hub.message, None);
        // A planned link is subscribed before the run's sources start, so its first frame
        // is its to lose; except on a transient-local stream, whose publisher numbers
        // (and remembers) frames while nobody listens: those count as not sent there.
        let joined = if source.qos.durability == Durability::TransientLocal {
            Joined::Late
        } else {
            Joined::BeforeFirstFrame
        };
        let ingress = Ingress::open(
            transport.as_ref(),
            (partition, key),
            source.qos,
            ingress_hub.clone(),
            source.accepted.clone(),
            joined,
        )
        .map_err(|error| StartError::Transport {
            stream: key.to_owned(),
            error,
        })?;
        let forwarded = crossing.filter(|c| c.hands_on).map(|c| StreamHub {
            name: c.key.clone(),
            hub: ingress_hub.clone(),
            partition: to,
            qos: source.qos,
            accepted: source.accepted.clone(),
            codec: source.codec,
            publish: true,
        });
        self.records.ingresses.push(ingress);
        self.streams.extend(forwarded);
        Ok(Some(ingress_hub))
    }

    /// Phase `bind ports`: bind every port of the modules that run here to its hub or
    /// queue, through the erased seam; list their inputs.
    pub(super) fn bind_ports(&mut self) -> Result<(), StartError> {
        for (id, slot) in self.instances.iter_mut() {
            let Some(node) = self.plan.instance(id).filter(|_| slot.here) else {
                continue;
            };
            let Some(module) = slot.module.as_mut() else {
                continue;
            };
            let ports = &slot.ports;
            let mut failure = None;
            module.visit_ports(&mut |p, port| {
                let result = match ports.get(PortIndex::new(p)) {
                    Some(PortSlot::Output(hub)) => port.bind_output(p, hub.clone()),
                    Some(PortSlot::Input(queue)) => port.bind_input(p, queue.clone()),
                    None => Ok(()),
                };
                if let Err(error) = result
                    && failure.is_none()
                {
                    failure = Some((p, error));
                }
            });
            if let Some((p, error)) = failure {
                let field = node.port(PortIndex::new(p)).map_or("?", PlanPort::field);
                return Err(StartError::Bind {
                    port: format!("{}.{field}", node.name),
                    error,
                });
            }
            for port in node.ports() {
                if let Some(queue) = ports.get(port.index).and_then(PortSlot::queue) {
                    self.records.inputs.push(InputRecord {
                        port: format!("{}.{}", node.name, port.field()),
                        stream: port.stream.clone(),
                        queue: queue.clone(),
                        via_wire: via_wire(&self.plan, &self.layout, &self.codecs, id, port),
                    });
                }
            }
        }
        Ok(())
    }

    /// Phase `triggers`: read each module's trigger (after binding, so that it can name
    /// bound ports) and refuse one that cannot fire.
    pub(super) fn triggers(&mut self) -> Result<(), StartError> {
        for (id, slot) in self.instances.iter_mut() {
            let Some(module) = slot.module.as_mut() else {
                continue;
            };
            slot.trigger = module
                .behaviour()
                .map_or(Trigger::AnyInput, |node| node.trigger());
            if let (Trigger::Period(period), Some(record)) =
                (&slot.trigger, self.records.instances.get_mut(id.index()))
            {
                record.period = Some(*period);
            }
            if slot.here
                && let Some(node) = self.plan.instance(id)
            {
                check_trigger(node, &slot.trigger, &slot.ports)?;
            }
        }
        Ok(())
    }
}

/// The key on which the messages of input `port` of instance `instance` cross
/// partitions, if they do: its producer's stream, or the encoded stream of the decoder
/// that feeds it.
fn via_wire(
    plan: &Plan,
    layout: &Layout,
    codecs: &Slots<CodecNodeId, CodecSlot>,
    instance: InstanceIndex,
    port: &PlanPort,
) -> Option<String> {
    if !layout.is_partitioned() {
        return None;
    }
    let to = Endpoint::Port {
        instance,
        port: port.index,
    };
    let partition = |end: Endpoint| match end {
        Endpoint::Port { instance, .. } => plan
            .instance(instance)
            .map(|node| layout.partition_of(&node.placement.to_string())),
        Endpoint::Codec(id) => codecs.get(id).map(|slot| slot.partition),
        _ => None,
    };
    let feed = plan.links().find(|link| link.to == to)?;
    let (feed, key) = match feed.from {
        Endpoint::Codec(decoder) => {
            let node = plan.codec_node(decoder)?;
            let into = plan.links().find(|l| l.to == Endpoint::Codec(decoder))?;
            (into, node.encoded_stream.clone())
        }
        _ => (feed, port.stream.clone()),
    };
    if partition(feed.from)? == partition(feed.to)? {
        return None;
    }
    // Handed on by its host's receiver: the forwarded key.
    let placement = plan.placement_of(feed.to)?;
    match plan.crossing(feed.from, placement.host()) {
        Some(crossing) if crossing.is_forwarded_to(placement) => Some(crossing.forwarded_key()),
        _ => Some(key),
    }
}

/// A link to another host, as its receiving partition takes it.
struct LinkCrossing {
    /// The key the host's receiver hands the stream on under (`@host/<host>/<stream>`).
    key: String,
    /// The receiving partition gets it from its host's receiver, on `key`.
    forwarded_to_partition: bool,
    /// The receiving partition is its host's receiver and hands it on to others.
    hands_on: bool,
}

/// Where a link delivers.
struct Receiving {
    /// The receiving queue.
    queue: Arc<InputQueue>,
    /// What it takes.
    wants: Wants,
    /// When its producer must produce for it.
    demand: Demand,
}

/// Refuses a trigger of `node` that cannot fire, given its `ports`.
fn check_trigger(
    node: &InstanceNode,
    trigger: &Trigger,
    ports: &Slots<PortIndex, PortSlot>,
) -> Result<(), StartError> {
    let is_input = |index: usize| {
        ports
            .get(PortIndex::new(index))
            .and_then(PortSlot::queue)
            .is_some()
    };
    let has_inputs = ports.iter().any(|(_, port)| port.queue().is_some());
    let bad = |reason: String| StartError::BadTrigger {
        instance: node.name.clone(),
        module_type: node.module_type,
        reason,
    };
    let named = |port: &streamwire_core::PortRef| -> Result<(), StartError> {
        match port.index() {
            Some(index) if is_input(index) => Ok(()),
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
