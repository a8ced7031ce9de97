//! The wired graph: instances, codec nodes and the links between them, each with the
//! reason it carries what it carries.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use petgraph::Direction as EdgeDirection;
use petgraph::graph::{DiGraph, EdgeIndex, NodeIndex};
use petgraph::visit::EdgeRef;
use serde::{Deserialize, Serialize};
use streamwire_core::{
    CodecInfo, CodecParams, Direction, Fidelity, MessageInfo, MessageKind, PortInfo, Qos, Taps,
    Transport,
};

use crate::settings::{AutoTable, Compression, Locality, Placement, Report, WireFormat};

macro_rules! plan_index {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub(crate) usize);

        impl $name {
            #[doc = concat!("The ", $what, " at position `index`.")]
            pub const fn new(index: usize) -> $name {
                $name(index)
            }

            #[doc = concat!("The position of the ", $what, ".")]
            pub const fn index(self) -> usize {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

plan_index!(
    /// An instance of a [`Plan`]: instance `i` of the plan is instance `i` of the
    /// blueprint (in the order of `Blueprint::add`). Resolve it with [`Plan::instance`].
    InstanceIndex,
    "instance"
);
plan_index!(
    /// A port of an instance: its position in the module's `Module::PORTS` (field order).
    /// Resolve it with [`InstanceNode::port`] or [`Plan::port`].
    PortIndex,
    "port"
);
plan_index!(
    /// A codec node of a [`Plan`], in the order the planner made them. Resolve it with
    /// [`Plan::codec_node`].
    CodecNodeId,
    "codec node"
);
plan_index!(
    /// A link of a [`Plan`]. Resolve it with [`Plan::link`].
    LinkId,
    "link"
);

/// Where one QoS value of a port came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum QosSource {
    /// The default of the message's kind (`#[message(kind = ..)]`).
    Kind(MessageKind),
    /// The port's own `#[port(..)]` attribute.
    Port,
}

/// Where each QoS value of a port came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QosOrigin {
    /// Of the reliability.
    pub reliability: QosSource,
    /// Of the durability.
    pub durability: QosSource,
    /// Of the history (queue depth).
    pub history: QosSource,
}

impl fmt::Display for QosOrigin {
    /// `sensor defaults`, `#[port]`, or `#[port] depth; sensor defaults otherwise`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values = [
            ("reliability", self.reliability),
            ("durability", self.durability),
            ("depth", self.history),
        ];
        let set: Vec<&str> = values
            .iter()
            .filter(|(_, source)| *source == QosSource::Port)
            .map(|(name, _)| *name)
            .collect();
        let kind = values.iter().find_map(|(_, source)| match source {
            QosSource::Kind(kind) => Some(*kind),
            QosSource::Port => None,
        });
        match (set.as_slice(), kind) {
            (_, None) => f.write_str("#[port]"),
            ([], Some(kind)) => write!(f, "{kind} defaults"),
            (set, Some(kind)) => write!(f, "#[port] {}; {kind} defaults otherwise", set.join(", ")),
        }
    }
}

/// A port of an instance in a plan: its metadata, its resolved stream and its effective
/// QoS.
#[derive(Clone, Debug)]
pub struct PlanPort {
    /// Its position in the module's ports.
    pub index: PortIndex,
    /// The metadata the derive generated: field, type, direction, message, transport,
    /// `optional` / `lossless`, the QoS values the attributes set.
    pub info: &'static PortInfo,
    /// The stream after namespaces and remaps (`left/color_image`).
    pub stream: String,
    /// The QoS it gets: its `#[port(..)]` values over its message kind's defaults.
    pub qos: Qos,
    /// Where each QoS value came from.
    pub qos_origin: QosOrigin,
}

impl PlanPort {
    /// The struct field, e.g. `color_image`.
    pub fn field(&self) -> &'static str {
        self.info.field()
    }

    /// Input or output.
    pub fn direction(&self) -> Direction {
        self.info.direction()
    }
}

/// A module instance in a plan.
#[derive(Clone, Debug)]
pub struct InstanceNode {
    /// Its id: the same position as in the blueprint.
    pub id: InstanceIndex,
    /// Full name, namespaces included.
    pub name: String,
    /// The module type.
    pub module_type: &'static str,
    /// Where it runs.
    pub placement: Placement,
    pub(crate) ports: Vec<PlanPort>,
    /// Its `#[config]` fields as (field, value as JSON text), as a blueprint file holds
    /// them.
    pub(crate) settings: Vec<(String, String)>,
    /// The streams it taps while it runs, as its module declares them.
    pub(crate) taps: Taps,
}

impl InstanceNode {
    /// Every port, in field order, with its resolved stream and QoS.
    pub fn ports(&self) -> impl ExactSizeIterator<Item = &PlanPort> {
        self.ports.iter()
    }

    /// The port at `index`.
    pub fn port(&self, index: PortIndex) -> Option<&PlanPort> {
        self.ports.get(index.0)
    }

    /// The port of field `field`.
    pub fn port_named(&self, field: &str) -> Option<&PlanPort> {
        self.ports.iter().find(|p| p.field() == field)
    }

    /// Its `#[config]` settings as (field, value as JSON text), as a blueprint file holds
    /// them (empty for a module a file cannot hold).
    pub fn settings(&self) -> &[(String, String)] {
        &self.settings
    }

    /// The streams it taps while it runs ([`Node::taps`](streamwire_core::Node::taps)):
    /// in a closed distributed run its process may subscribe to them in the other
    /// processes, encoded forms included.
    pub fn taps(&self) -> &Taps {
        &self.taps
    }
}

/// Encode or decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodecKind {
    /// Message to encoded message, in the producer's process.
    Encode,
    /// Encoded message to message, once per receiving process.
    Decode,
}

impl fmt::Display for CodecKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CodecKind::Encode => "encode",
            CodecKind::Decode => "decode",
        })
    }
}

/// A codec node inserted by the planner.
#[derive(Clone, Debug)]
pub struct CodecNode {
    /// Its id.
    pub id: CodecNodeId,
    /// Encode or decode.
    pub kind: CodecKind,
    /// The stream it encodes or decodes (`color_image`).
    pub stream: String,
    /// The encoded stream's name (`color_image/compressed`).
    pub encoded_stream: String,
    /// The codec.
    pub codec: CodecInfo,
    /// Every parameter, defaults included: what the runtime builds the codec with
    /// ([`CodecInfo::instantiate`]).
    pub params: CodecParams,
    /// The parameters the blueprint set (a subset of `params`); the rest are defaults.
    pub user_params: CodecParams,
    /// Those of `user_params` that came from the blueprint-wide defaults
    /// ([`Blueprint::codec_default`](crate::Blueprint::codec_default)), not the stream's own
    /// settings.
    pub blueprint_params: CodecParams,
    /// What the codec does to the message with these parameters.
    pub fidelity: Fidelity,
    /// Where it runs.
    pub placement: Placement,
    /// The QoS of what it sends: an encoded stream inherits its stream's QoS (the
    /// producer's output), and so does a decoder's output.
    pub qos: Qos,
}

/// What a link carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkPayload {
    /// The message itself (pixels, for images).
    Message(MessageInfo),
    /// The encoded message, made by this codec.
    Encoded(CodecInfo),
}

impl LinkPayload {
    /// True for encoded bytes.
    pub fn is_encoded(&self) -> bool {
        matches!(self, LinkPayload::Encoded(_))
    }
}

impl fmt::Display for LinkPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkPayload::Message(message) => write!(f, "{message}"),
            LinkPayload::Encoded(codec) => write!(f, "{} ({})", codec.encoded(), codec.name()),
        }
    }
}

/// Why a link carries what it carries: the plan prints it next to every link.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkReason {
    /// Raw or compressed by the `auto` table for this locality.
    Auto {
        /// The link's locality.
        locality: Locality,
        /// What the table says.
        format: WireFormat,
    },
    /// The global setting is `on` or `off`.
    Global(Compression),
    /// The stream's own setting is `on` or `off`.
    Stream(Compression),
    /// A plain `Out<M>` stays raw unless a per-stream setting asks.
    PlainOutput {
        /// The output's type.
        output_type: &'static str,
    },
    /// Kept raw: the input is `lossless` and the codec is not.
    LosslessInput {
        /// The codec that would have been used.
        codec: &'static str,
    },
    /// From the producer to its encoder, in the producer's process.
    ToEncoder,
    /// From a decoder to an input in the decoder's process.
    Decoded {
        /// The process decoded for.
        placement: Placement,
    },
    /// The input asked for the encoded bytes (`In<Compressed<..>>`).
    BytesRequested {
        /// The input's type.
        input_type: &'static str,
    },
}

impl fmt::Display for LinkReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkReason::Auto {
                locality: Locality::InProcess,
                format: WireFormat::Raw,
            } => f.write_str("raw: in-process delivery is zero-copy (auto)"),
            LinkReason::Auto {
                locality,
                format: WireFormat::Raw,
            } => write!(f, "raw: auto keeps {locality} links raw"),
            LinkReason::Auto {
                locality,
                format: WireFormat::Compressed,
            } => write!(f, "compressed: auto compresses {locality} links"),
            LinkReason::Global(Compression::On) => {
                f.write_str("compressed: global compression is on")
            }
            LinkReason::Global(Compression::Off) => f.write_str("raw: global compression is off"),
            LinkReason::Global(Compression::Auto) => f.write_str("global compression is auto"),
            LinkReason::Stream(Compression::On) => {
                f.write_str("compressed: the stream's setting is on")
            }
            LinkReason::Stream(Compression::Off) => f.write_str("raw: the stream's setting is off"),
            LinkReason::Stream(Compression::Auto) => f.write_str("the stream's setting is auto"),
            LinkReason::PlainOutput { output_type } => write!(
                f,
                "raw: a plain `{output_type}` compresses only when its stream's setting asks"
            ),
            LinkReason::LosslessInput { codec } => {
                write!(f, "raw: the input is lossless and `{codec}` is not")
            }
            LinkReason::ToEncoder => f.write_str("to the encoder, in the producer's process"),
            LinkReason::Decoded { placement } => write!(f, "decoded once for {placement}"),
            LinkReason::BytesRequested { input_type } => {
                write!(f, "the input asked for bytes: `{input_type}`")
            }
        }
    }
}

/// One end of a link: a port of an instance, or a codec node. Resolve it with
/// [`Plan::instance`] / [`InstanceNode::port`] or [`Plan::codec_node`], or name it with
/// [`Plan::endpoint_name`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Endpoint {
    /// A port of an instance.
    Port {
        /// The instance.
        instance: InstanceIndex,
        /// The port.
        port: PortIndex,
    },
    /// A codec node.
    Codec(CodecNodeId),
}

impl Endpoint {
    /// The instance, for a port end.
    pub fn instance(&self) -> Option<InstanceIndex> {
        match self {
            Endpoint::Port { instance, .. } => Some(*instance),
            Endpoint::Codec(_) => None,
        }
    }

    /// The codec node, for a codec end.
    pub fn codec_node(&self) -> Option<CodecNodeId> {
        match self {
            Endpoint::Codec(id) => Some(*id),
            Endpoint::Port { .. } => None,
        }
    }
}

/// A link between two nodes: what travels from one end to the other, how far, and why.
#[derive(Clone, Debug)]
pub struct Link {
    /// Its id.
    pub id: LinkId,
    /// Where it starts: an output port or a codec node.
    pub from: Endpoint,
    /// Where it ends: an input port or a codec node.
    pub to: Endpoint,
    /// The name of what travels: the stream, or the encoded stream.
    pub stream: String,
    /// Message or encoded message.
    pub payload: LinkPayload,
    /// How far apart its ends are.
    pub locality: Locality,
    /// Why it carries what it carries.
    pub reason: LinkReason,
    /// Made by `connect` rather than autoconnect.
    pub explicit: bool,
}

/// A node of the plan graph: an instance or a codec node, by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PlanNode {
    Instance(InstanceIndex),
    Codec(CodecNodeId),
}

/// Something the plan wants a person to know: listed in the plan, logged with `Warn`,
/// a build error with `Error`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Note {
    /// An input receives lossy or downscaled pixels.
    LossyPixels {
        /// `instance.port`.
        input: String,
        /// The stream.
        stream: String,
        /// The codec.
        codec: &'static str,
        /// `lossy`, `downscaled`, or both.
        fidelity: Fidelity,
    },
    /// An optional input that nobody feeds.
    UnfedOptional {
        /// `instance.port`.
        input: String,
        /// The stream it listens to.
        stream: String,
    },
    /// An output's QoS cannot satisfy the input it feeds (kept only when
    /// `incompatible_qos` is not `Error`).
    IncompatibleQos {
        /// `instance.port` of the output.
        output: String,
        /// `instance.port` of the input.
        input: String,
        /// The stream.
        stream: String,
        /// What does not match, e.g. `the output is best_effort, the input wants reliable`.
        reasons: Vec<String>,
    },
    /// A `keep_all` input fed from another process by a `best_effort` output (kept only
    /// when `lossy_path` is not `Error`).
    LossyPath {
        /// `instance.port` of the output.
        output: String,
        /// `instance.port` of the input.
        input: String,
        /// The stream.
        stream: String,
    },
    /// A `keep_all` input shares its stream with other consumers: when its queue is full
    /// it holds the producer back (up to the runtime's keep-all deadline per message),
    /// and so delays the others too.
    BlockingFanOut {
        /// `instance.port` of the keep-all input.
        input: String,
        /// The stream.
        stream: String,
        /// How many other consumers the stream has.
        others: usize,
    },
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::LossyPixels {
                input,
                stream,
                codec,
                fidelity,
            } => write!(
                f,
                "lossy pixels: {input} receives {fidelity} pixels of `{stream}` (decoded from {codec})"
            ),
            Note::UnfedOptional { input, stream } => write!(
                f,
                "unfed optional input: {input} listens to `{stream}`, which no output produces"
            ),
            Note::IncompatibleQos {
                output,
                input,
                stream,
                reasons,
            } => write!(
                f,
                "incompatible qos: {output} feeds {input} on `{stream}`, but {}",
                reasons.join(", and ")
            ),
            Note::LossyPath {
                output,
                input,
                stream,
            } => write!(
                f,
                "lossy path: {output} feeds keep_all {input} on `{stream}` from another \
                 process over a best_effort wire, which may lose frames"
            ),
            Note::BlockingFanOut {
                input,
                stream,
                others,
            } => write!(
                f,
                "blocking input on a fan-out: {input} keeps all of `{stream}`; when its queue is \
                 full it holds the producer back (up to the keep-all deadline), delaying the \
                 other {others} consumer{}",
                if *others == 1 { "" } else { "s" }
            ),
        }
    }
}

/// The settings a plan was built with, for printing.
#[derive(Clone, Debug)]
pub(crate) struct PlanSettings {
    pub(crate) compression: Compression,
    pub(crate) auto_table: AutoTable,
    pub(crate) lossy_pixels: Report,
    pub(crate) unfed_optional: Report,
    pub(crate) incompatible_qos: Report,
    pub(crate) supervision: crate::Supervision,
}

/// How one stream is carried, for printing.
#[derive(Clone, Debug)]
pub(crate) struct StreamSummary {
    pub(crate) name: String,
    pub(crate) message: MessageInfo,
    pub(crate) producer: InstanceIndex,
    pub(crate) producer_port: PortIndex,
    /// `auto (global)`, `on (stream setting)`, `off (plain output)`...
    pub(crate) mode: String,
    pub(crate) wire_codec: Option<CodecInfo>,
}

/// A wired blueprint: every instance, every codec node the rules inserted, and every
/// link, each with why it is raw or compressed. `Display` prints it for a person;
/// [`Plan::to_dot`] draws it; [`Plan::processes`] splits it per process;
/// [`Plan::summary`] serializes it.
///
/// Everything is named by id: [`InstanceIndex`] (instance `i` of the blueprint),
/// [`PortIndex`] (field order), [`CodecNodeId`], [`LinkId`]; links join two
/// [`Endpoint`]s.
#[derive(Clone, Debug)]
pub struct Plan {
    pub(crate) instances: Vec<InstanceNode>,
    pub(crate) codec_nodes: Vec<CodecNode>,
    /// One node per instance (node `i` is instance `i`), then one per codec node; one
    /// edge per link (edge `k` is link `k`).
    pub(crate) graph: DiGraph<PlanNode, Link>,
    pub(crate) streams: Vec<StreamSummary>,
    pub(crate) notes: Vec<Note>,
    pub(crate) settings: PlanSettings,
}

impl Plan {
    /// What a distributed run does when a worker process dies.
    pub fn supervision(&self) -> crate::Supervision {
        self.settings.supervision
    }

    /// The instances, in the blueprint's order (instance `i` has id `InstanceIndex(i)`).
    pub fn instances(&self) -> impl ExactSizeIterator<Item = &InstanceNode> {
        self.instances.iter()
    }

    /// The instance `id`.
    pub fn instance(&self, id: InstanceIndex) -> Option<&InstanceNode> {
        self.instances.get(id.0)
    }

    /// The instance named `name` (full name, namespaces included).
    pub fn instance_named(&self, name: &str) -> Option<&InstanceNode> {
        self.instances.iter().find(|i| i.name == name)
    }

    /// Port `port` of instance `instance`.
    pub fn port(&self, instance: InstanceIndex, port: PortIndex) -> Option<&PlanPort> {
        self.instance(instance)?.port(port)
    }

    /// The codec nodes, in the order they were made.
    pub fn codec_nodes(&self) -> impl ExactSizeIterator<Item = &CodecNode> {
        self.codec_nodes.iter()
    }

    /// The codec node `id`.
    pub fn codec_node(&self, id: CodecNodeId) -> Option<&CodecNode> {
        self.codec_nodes.get(id.0)
    }

    /// Every link.
    pub fn links(&self) -> impl Iterator<Item = &Link> {
        self.graph.edge_weights()
    }

    /// The link `id`.
    pub fn link(&self, id: LinkId) -> Option<&Link> {
        self.graph.edge_weight(EdgeIndex::new(id.0))
    }

    /// The links that start at `endpoint`.
    pub fn links_from(&self, endpoint: Endpoint) -> impl Iterator<Item = &Link> {
        self.links().filter(move |l| l.from == endpoint)
    }

    /// The link that feeds `endpoint` (an input port, or a codec node), if any.
    pub fn feed(&self, endpoint: Endpoint) -> Option<&Link> {
        self.links().find(|l| l.to == endpoint)
    }

    /// The link that feeds input `port` (a field name) of the instance named `instance`.
    pub fn feed_of(&self, instance: &str, port: &str) -> Option<&Link> {
        let node = self.instance_named(instance)?;
        let port = node.port_named(port)?;
        self.feed(Endpoint::Port {
            instance: node.id,
            port: port.index,
        })
    }

    /// An endpoint as plans print it: `cam.color_image`, `[encode color_image/compressed]`,
    /// `[decode @ localhost/ui]`.
    pub fn endpoint_name(&self, endpoint: Endpoint) -> String {
        match endpoint {
            Endpoint::Port { instance, port } => match self.instance(instance) {
                Some(node) => match node.port(port) {
                    Some(p) => format!("{}.{}", node.name, p.field()),
                    None => format!("{}.<port {port}>", node.name),
                },
                None => format!("<instance {instance}>.<port {port}>"),
            },
            Endpoint::Codec(id) => match self.codec_node(id) {
                Some(codec) => crate::render::codec_label(codec),
                None => format!("<codec node {id}>"),
            },
        }
    }

    /// Where `endpoint` runs.
    pub fn placement_of(&self, endpoint: Endpoint) -> Option<&Placement> {
        match endpoint {
            Endpoint::Port { instance, .. } => self.instance(instance).map(|i| &i.placement),
            Endpoint::Codec(id) => self.codec_node(id).map(|c| &c.placement),
        }
    }

    /// Lossy inputs, unfed optional inputs, and incompatible QoS let through.
    pub fn notes(&self) -> &[Note] {
        &self.notes
    }

    pub(crate) fn node_of(&self, endpoint: Endpoint) -> Option<NodeIndex> {
        let index = match endpoint {
            Endpoint::Port { instance, .. } => instance.0,
            Endpoint::Codec(id) => self.instances.len() + id.0,
        };
        (index < self.graph.node_count()).then(|| NodeIndex::new(index))
    }

    /// Checks the plan's invariants; returns every violation. Used by tests as cheap
    /// insurance that the planner's output obeys the rules stated in RFC.md.
    #[doc(hidden)]
    pub fn verify(&self) -> Result<(), Vec<String>> {
        let mut violations = Vec::new();
        let g = &self.graph;
        let mut encodes = BTreeSet::new();
        let mut decodes = BTreeSet::new();
        let mut encoded_names = BTreeMap::new();

        for edge in g.edge_references() {
            let link = edge.weight();
            if link.id.0 != edge.id().index()
                || self.node_of(link.from) != Some(edge.source())
                || self.node_of(link.to) != Some(edge.target())
            {
                violations.push(format!(
                    "link {} ({} -> {}) does not match its graph edge",
                    link.id,
                    self.endpoint_name(link.from),
                    self.endpoint_name(link.to)
                ));
            }
        }

        for node in g.node_indices() {
            let incoming: Vec<&Link> = g
                .edges_directed(node, EdgeDirection::Incoming)
                .map(|e| e.weight())
                .collect();
            let outgoing: Vec<&Link> = g
                .edges_directed(node, EdgeDirection::Outgoing)
                .map(|e| e.weight())
                .collect();
            match g[node] {
                PlanNode::Instance(id) => {
                    let Some(instance) = self.instance(id) else {
                        violations.push(format!("graph node {} has no instance", node.index()));
                        continue;
                    };
                    self.verify_instance(instance, &incoming, &outgoing, &mut violations);
                }
                PlanNode::Codec(id) => {
                    let Some(codec) = self.codec_node(id) else {
                        violations.push(format!("graph node {} has no codec node", node.index()));
                        continue;
                    };
                    self.verify_codec(codec, &incoming, &outgoing, &mut violations);
                    let key = (
                        codec.stream.clone(),
                        codec.codec.name(),
                        codec.params.to_string(),
                        codec.placement.clone(),
                    );
                    let unique = match codec.kind {
                        CodecKind::Encode => {
                            if let Some(other) = encoded_names
                                .insert(codec.encoded_stream.clone(), codec.stream.clone())
                            {
                                violations.push(format!(
                                    "encoded stream name {} is used twice (for {other} and {})",
                                    codec.encoded_stream, codec.stream
                                ));
                            }
                            encodes.insert(key)
                        }
                        CodecKind::Decode => {
                            decodes.insert((codec.stream.clone(), codec.placement.clone()))
                        }
                    };
                    if !unique {
                        violations.push(format!("{} is duplicated", codec_title(codec)));
                    }
                }
            }
        }
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
    }

    fn verify_instance(
        &self,
        instance: &InstanceNode,
        incoming: &[&Link],
        outgoing: &[&Link],
        violations: &mut Vec<String>,
    ) {
        for port in instance.ports() {
            if port.direction() != Direction::Input {
                continue;
            }
            let endpoint = Endpoint::Port {
                instance: instance.id,
                port: port.index,
            };
            let feeds: Vec<&&Link> = incoming.iter().filter(|l| l.to == endpoint).collect();
            let name = format!("{}.{}", instance.name, port.field());
            if feeds.len() > 1 {
                violations.push(format!("input {name} is fed {} times", feeds.len()));
            }
            if feeds.is_empty() && !port.info.attrs().optional {
                violations.push(format!("input {name} (stream {}) is not fed", port.stream));
            }
            for link in feeds {
                match (port.info.transport(), link.payload) {
                    (Transport::Raw, LinkPayload::Message(m)) if m == port.info.message() => {}
                    (Transport::Codec(want), LinkPayload::Encoded(got)) if want == got => {}
                    (want, got) => violations.push(format!(
                        "input {name} wants {want:?} but its link carries {got}"
                    )),
                }
                let Endpoint::Codec(source) = link.from else {
                    continue;
                };
                let Some(codec) = self.codec_node(source) else {
                    continue;
                };
                if port.info.attrs().lossless && !codec.fidelity.is_exact() {
                    violations.push(format!(
                        "lossless input {name} is fed by a {} decoder",
                        codec.fidelity
                    ));
                }
                if codec.kind == CodecKind::Decode && codec.placement != instance.placement {
                    violations.push(format!(
                        "input {name} is fed by a decoder of another process"
                    ));
                }
            }
        }
        for link in outgoing {
            if link.payload.is_encoded() {
                violations.push(format!(
                    "instance {} sends encoded bytes without an encode node",
                    instance.name
                ));
            }
        }
    }

    fn verify_codec(
        &self,
        codec: &CodecNode,
        incoming: &[&Link],
        outgoing: &[&Link],
        violations: &mut Vec<String>,
    ) {
        let label = codec_title(codec);
        if incoming.len() != 1 {
            violations.push(format!("{label} has {} inputs, not 1", incoming.len()));
        }
        if outgoing.is_empty() {
            violations.push(format!("{label} feeds nothing"));
        }
        let (want_in, want_out) = match codec.kind {
            CodecKind::Encode => (false, true),
            CodecKind::Decode => (true, false),
        };
        for link in incoming {
            if link.payload.is_encoded() != want_in {
                violations.push(format!("{label} receives the wrong payload"));
            }
            match (codec.kind, link.from) {
                (CodecKind::Encode, Endpoint::Port { instance, .. }) => {
                    if self.instance(instance).map(|i| &i.placement) != Some(&codec.placement) {
                        violations.push(format!("{label} is not in its producer's process"));
                    }
                }
                (CodecKind::Decode, Endpoint::Codec(source))
                    if self.codec_node(source).is_some_and(|encoder| {
                        encoder.kind == CodecKind::Encode
                            && encoder.codec == codec.codec
                            && encoder.params == codec.params
                    }) => {}
                _ => violations.push(format!("{label} is fed by the wrong kind of node")),
            }
            if let LinkPayload::Message(m) = link.payload
                && m != codec.codec.message()
            {
                violations.push(format!("{label} is fed {m}, not {}", codec.codec.message()));
            }
        }
        for link in outgoing {
            if link.payload.is_encoded() != want_out {
                violations.push(format!("{label} sends the wrong payload"));
            }
            if codec.kind == CodecKind::Decode && link.locality != Locality::InProcess {
                violations.push(format!("{label} feeds another process"));
            }
        }
    }
}

/// `decode jpeg of color_image`.
fn codec_title(codec: &CodecNode) -> String {
    format!("{} {} of {}", codec.kind, codec.codec.name(), codec.stream)
}

#[cfg(test)]
mod tests {
    use petgraph::visit::EdgeRef;
    use streamwire_core::{Compressed, In, Out};
    use streamwire_macros::Module;
    use streamwire_msgs::Image;

    use super::*;
    use crate::{Blueprint, Placement};

    #[derive(Module)]
    #[module(crate = streamwire_core)]
    struct Camera {
        color_image: Out<Compressed<Image>>,
    }

    #[derive(Module)]
    #[module(crate = streamwire_core)]
    struct Viewer {
        #[port(name = "color_image")]
        frames: In<Image>,
    }

    /// Camera in `main`, viewer in `laptop/ui` (cross-host): an encoder and a decoder.
    fn plan() -> Plan {
        let mut bp = Blueprint::new();
        bp.add(
            "cam",
            Camera {
                color_image: Out::new(),
            },
        );
        let viewer = bp.add("viewer", Viewer { frames: In::new() });
        bp.place(&viewer, Placement::process("ui").on_host("laptop"));
        let plan = bp.autoconnect().build().unwrap();
        assert_eq!(plan.verify(), Ok(()));
        plan
    }

    fn violations(plan: &Plan) -> String {
        plan.verify().unwrap_err().join("\n")
    }

    fn viewer_frames() -> Endpoint {
        Endpoint::Port {
            instance: InstanceIndex(1),
            port: PortIndex(0),
        }
    }

    #[test]
    fn ids_resolve_to_what_they_name() {
        let plan = plan();
        let feed = plan.feed(viewer_frames()).unwrap();
        assert_eq!(plan.endpoint_name(feed.to), "viewer.frames");
        let Endpoint::Codec(decoder) = feed.from else {
            panic!("the viewer is fed by {:?}", feed.from);
        };
        let decoder = plan.codec_node(decoder).unwrap();
        assert_eq!(decoder.kind, CodecKind::Decode);
        assert_eq!(
            decoder.placement,
            Placement::process("ui").on_host("laptop")
        );
        assert_eq!(plan.link(feed.id).map(|l| l.to), Some(viewer_frames()));
        assert_eq!(
            plan.feed_of("viewer", "frames").map(|l| l.id),
            Some(feed.id)
        );
        assert!(plan.instance(InstanceIndex(2)).is_none());
        assert_eq!(
            plan.port(InstanceIndex(0), PortIndex(0)).unwrap().stream,
            "color_image"
        );
    }

    #[test]
    fn an_unfed_input_is_caught() {
        let mut plan = plan();
        let to_viewer = plan
            .graph
            .edge_references()
            .find(|e| e.weight().to == viewer_frames())
            .map(|e| e.id())
            .unwrap();
        plan.graph.remove_edge(to_viewer);
        let found = violations(&plan);
        assert!(
            found.contains("viewer.frames (stream color_image) is not fed"),
            "{found}"
        );
    }

    #[test]
    fn a_duplicated_decoder_is_caught() {
        let mut plan = plan();
        let decoder = plan
            .codec_nodes()
            .find(|c| c.kind == CodecKind::Decode)
            .unwrap()
            .clone();
        let twin = CodecNodeId(plan.codec_nodes.len());
        plan.codec_nodes.push(CodecNode {
            id: twin,
            ..decoder.clone()
        });
        let twin_node = plan.graph.add_node(PlanNode::Codec(twin));
        let feed = plan.feed(Endpoint::Codec(decoder.id)).unwrap().clone();
        let encoder = plan.node_of(feed.from).unwrap();
        let id = LinkId(plan.graph.edge_count());
        plan.graph.add_edge(
            encoder,
            twin_node,
            Link {
                id,
                to: Endpoint::Codec(twin),
                ..feed
            },
        );
        let found = violations(&plan);
        assert!(
            found.contains("decode jpeg of color_image is duplicated"),
            "{found}"
        );
        assert!(
            found.contains("decode jpeg of color_image feeds nothing"),
            "{found}"
        );
    }

    #[test]
    fn pixels_sent_to_a_byte_input_are_caught() {
        let mut plan = plan();
        let edge = plan
            .graph
            .edge_references()
            .find(|e| e.weight().to == viewer_frames())
            .map(|e| e.id())
            .unwrap();
        let codec = plan.codec_nodes().next().unwrap().codec;
        plan.graph[edge].payload = LinkPayload::Encoded(codec);
        let found = violations(&plan);
        assert!(found.contains("input viewer.frames wants"), "{found}");
        assert!(found.contains("sends the wrong payload"), "{found}");
    }

    #[test]
    fn an_encoder_outside_its_producers_process_is_caught() {
        let mut plan = plan();
        for codec in &mut plan.codec_nodes {
            if codec.kind == CodecKind::Encode {
                codec.placement = Placement::process("elsewhere");
            }
        }
        assert!(violations(&plan).contains("is not in its producer's process"));
    }

    #[test]
    fn a_link_whose_ids_disagree_with_the_graph_is_caught() {
        let mut plan = plan();
        let edge = plan.graph.edge_indices().next().unwrap();
        plan.graph[edge].to = viewer_frames();
        assert!(violations(&plan).contains("does not match its graph edge"));
    }

    #[test]
    fn qos_origin_reads_as_where_values_came_from() {
        let kind = QosSource::Kind(MessageKind::Sensor);
        let all_kind = QosOrigin {
            reliability: kind,
            durability: kind,
            history: kind,
        };
        assert_eq!(all_kind.to_string(), "sensor defaults");
        let mixed = QosOrigin {
            history: QosSource::Port,
            ..all_kind
        };
        assert_eq!(
            mixed.to_string(),
            "#[port] depth; sensor defaults otherwise"
        );
        let all_port = QosOrigin {
            reliability: QosSource::Port,
            durability: QosSource::Port,
            history: QosSource::Port,
        };
        assert_eq!(all_port.to_string(), "#[port]");
    }
}
