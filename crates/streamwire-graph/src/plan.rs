//! The wired graph: instances, codec nodes and the links between them, each with the
//! reason it carries what it carries.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use petgraph::Direction as EdgeDirection;
use petgraph::graph::{DiGraph, EdgeIndex, NodeIndex};
use petgraph::visit::EdgeRef;
use streamwire_core::{
    CodecInfo, CodecParams, Direction, Fidelity, MessageInfo, PortInfo, Transport,
};

use crate::settings::{AutoTable, Compression, Locality, Placement, Report, WireFormat};

/// Identifies a node of one [`Plan`]. Only valid with the plan that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PlanNodeId(pub(crate) NodeIndex);

/// A module instance in a plan.
#[derive(Clone, Debug)]
pub struct InstanceNode {
    /// Full name, namespaces included.
    pub name: String,
    /// The module type.
    pub module_type: &'static str,
    /// Where it runs.
    pub placement: Placement,
    pub(crate) ports: &'static [PortInfo],
    /// Per port: its resolved stream name.
    pub(crate) streams: Vec<String>,
}

impl InstanceNode {
    /// Each port with its resolved stream name.
    pub fn ports(&self) -> impl Iterator<Item = (&'static PortInfo, &str)> {
        self.ports
            .iter()
            .zip(self.streams.iter().map(String::as_str))
    }
}

/// Encode or decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
    /// Encode or decode.
    pub kind: CodecKind,
    /// The stream it encodes or decodes (`color_image`).
    pub stream: String,
    /// The encoded stream's name (`color_image/compressed`).
    pub encoded_stream: String,
    /// The codec.
    pub codec: CodecInfo,
    /// Every parameter, defaults included.
    pub params: CodecParams,
    /// What the codec does to the message with these parameters.
    pub fidelity: Fidelity,
    /// Where it runs.
    pub placement: Placement,
}

/// What a link carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// A link between two nodes.
#[derive(Clone, Debug)]
pub struct Link {
    /// The name of what travels: the stream, or the encoded stream.
    pub stream: String,
    /// Message or encoded message.
    pub payload: LinkPayload,
    /// How far apart its ends are.
    pub locality: Locality,
    /// Why it carries what it carries.
    pub reason: LinkReason,
    /// The producer's port, when the link starts at an instance.
    pub from_port: Option<&'static str>,
    /// The consumer's port, when the link ends at an instance.
    pub to_port: Option<&'static str>,
    /// Made by `connect` rather than autoconnect.
    pub explicit: bool,
}

/// A node of the plan graph.
#[derive(Clone, Debug)]
pub(crate) enum PlanNode {
    Instance(InstanceNode),
    Codec(CodecNode),
}

/// One end of a link, as the public API shows it.
#[derive(Clone, Copy, Debug)]
pub enum Endpoint<'a> {
    /// A port of an instance.
    Port {
        /// The instance.
        instance: &'a InstanceNode,
        /// The port's field.
        port: &'static str,
    },
    /// A codec node.
    Codec(&'a CodecNode),
}

impl Endpoint<'_> {
    /// The instance, for a port end.
    pub fn instance_name(&self) -> Option<&str> {
        match self {
            Endpoint::Port { instance, .. } => Some(&instance.name),
            Endpoint::Codec(_) => None,
        }
    }
}

/// A link with its two ends.
#[derive(Clone, Copy, Debug)]
pub struct LinkView<'a> {
    /// Where it starts.
    pub from: Endpoint<'a>,
    /// Where it ends.
    pub to: Endpoint<'a>,
    /// The link.
    pub link: &'a Link,
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
}

/// How one stream is carried, for printing.
#[derive(Clone, Debug)]
pub(crate) struct StreamSummary {
    pub(crate) name: String,
    pub(crate) message: MessageInfo,
    pub(crate) producer: PlanNodeId,
    pub(crate) producer_port: &'static PortInfo,
    /// `auto (global)`, `on (stream setting)`, `off (plain output)`...
    pub(crate) mode: String,
    pub(crate) wire_codec: Option<CodecInfo>,
}

/// A wired blueprint: every instance, every codec node the rules inserted, and every
/// link, each with why it is raw or compressed. `Display` prints it for a person;
/// [`Plan::to_dot`] draws it.
#[derive(Clone, Debug)]
pub struct Plan {
    pub(crate) graph: DiGraph<PlanNode, Link>,
    pub(crate) streams: Vec<StreamSummary>,
    pub(crate) notes: Vec<Note>,
    pub(crate) settings: PlanSettings,
}

impl Plan {
    /// The instances, in the order they were added.
    pub fn instances(&self) -> impl Iterator<Item = &InstanceNode> {
        self.graph.node_weights().filter_map(|n| match n {
            PlanNode::Instance(i) => Some(i),
            PlanNode::Codec(_) => None,
        })
    }

    /// The codec nodes.
    pub fn codec_nodes(&self) -> impl Iterator<Item = &CodecNode> {
        self.graph.node_weights().filter_map(|n| match n {
            PlanNode::Codec(c) => Some(c),
            PlanNode::Instance(_) => None,
        })
    }

    /// Every link with its ends.
    pub fn links(&self) -> impl Iterator<Item = LinkView<'_>> {
        self.graph.edge_indices().filter_map(|e| self.link_view(e))
    }

    /// The link that feeds input `port` of `instance`, if any.
    pub fn feed_of(&self, instance: &str, port: &str) -> Option<LinkView<'_>> {
        self.links().find(|l| {
            matches!(l.to, Endpoint::Port { instance: i, port: p } if i.name == instance && p == port)
        })
    }

    /// Lossy inputs and unfed optional inputs.
    pub fn notes(&self) -> &[Note] {
        &self.notes
    }

    pub(crate) fn link_view(&self, edge: EdgeIndex) -> Option<LinkView<'_>> {
        let (a, b) = self.graph.edge_endpoints(edge)?;
        let link = self.graph.edge_weight(edge)?;
        Some(LinkView {
            from: self.endpoint(a, link.from_port)?,
            to: self.endpoint(b, link.to_port)?,
            link,
        })
    }

    fn endpoint(&self, node: NodeIndex, port: Option<&'static str>) -> Option<Endpoint<'_>> {
        match self.graph.node_weight(node)? {
            PlanNode::Instance(instance) => Some(Endpoint::Port {
                instance,
                port: port?,
            }),
            PlanNode::Codec(codec) => Some(Endpoint::Codec(codec)),
        }
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

        for node in g.node_indices() {
            let incoming: Vec<_> = g.edges_directed(node, EdgeDirection::Incoming).collect();
            let outgoing: Vec<_> = g.edges_directed(node, EdgeDirection::Outgoing).collect();
            match &g[node] {
                PlanNode::Instance(instance) => {
                    for (port, stream) in instance.ports() {
                        if port.direction() != Direction::Input {
                            continue;
                        }
                        let feeds: Vec<_> = incoming
                            .iter()
                            .filter(|e| e.weight().to_port == Some(port.field()))
                            .collect();
                        let name = format!("{}.{}", instance.name, port.field());
                        if feeds.len() > 1 {
                            violations.push(format!("input {name} is fed {} times", feeds.len()));
                        }
                        if feeds.is_empty() && !port.attrs().optional {
                            violations.push(format!("input {name} (stream {stream}) is not fed"));
                        }
                        for feed in feeds {
                            let link = feed.weight();
                            match (port.transport(), link.payload) {
                                (Transport::Raw, LinkPayload::Message(m))
                                    if m == port.message() => {}
                                (Transport::Codec(want), LinkPayload::Encoded(got))
                                    if want == got => {}
                                (want, got) => violations.push(format!(
                                    "input {name} wants {want:?} but its link carries {got}"
                                )),
                            }
                            if port.attrs().lossless
                                && let PlanNode::Codec(codec) = &g[feed.source()]
                                && !codec.fidelity.is_exact()
                            {
                                violations.push(format!(
                                    "lossless input {name} is fed by a {} decoder",
                                    codec.fidelity
                                ));
                            }
                            if let PlanNode::Codec(codec) = &g[feed.source()]
                                && codec.kind == CodecKind::Decode
                                && codec.placement != instance.placement
                            {
                                violations.push(format!(
                                    "input {name} is fed by a decoder of another process"
                                ));
                            }
                        }
                    }
                    for edge in &outgoing {
                        if edge.weight().payload.is_encoded() {
                            violations.push(format!(
                                "instance {} sends encoded bytes without an encode node",
                                instance.name
                            ));
                        }
                    }
                }
                PlanNode::Codec(codec) => {
                    let label =
                        format!("{} {} of {}", codec.kind, codec.codec.name(), codec.stream);
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
                    for edge in &incoming {
                        if edge.weight().payload.is_encoded() != want_in {
                            violations.push(format!("{label} receives the wrong payload"));
                        }
                        let source = &g[edge.source()];
                        match (codec.kind, source) {
                            (CodecKind::Encode, PlanNode::Instance(producer)) => {
                                if producer.placement != codec.placement {
                                    violations
                                        .push(format!("{label} is not in its producer's process"));
                                }
                            }
                            (CodecKind::Decode, PlanNode::Codec(encoder))
                                if encoder.kind == CodecKind::Encode
                                    && encoder.codec == codec.codec
                                    && encoder.params == codec.params => {}
                            _ => {
                                violations.push(format!("{label} is fed by the wrong kind of node"))
                            }
                        }
                        if let LinkPayload::Message(m) = edge.weight().payload
                            && m != codec.codec.message()
                        {
                            violations
                                .push(format!("{label} is fed {m}, not {}", codec.codec.message()));
                        }
                    }
                    for edge in &outgoing {
                        if edge.weight().payload.is_encoded() != want_out {
                            violations.push(format!("{label} sends the wrong payload"));
                        }
                        if codec.kind == CodecKind::Decode
                            && edge.weight().locality != Locality::InProcess
                        {
                            violations.push(format!("{label} feeds another process"));
                        }
                    }
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
                        violations.push(format!("{label} is duplicated"));
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

    /// Camera in `main`, viewer in `ui`: an encoder and a decoder.
    fn plan() -> Plan {
        let mut bp = Blueprint::new();
        bp.add(
            "cam",
            Camera {
                color_image: Out::new(),
            },
        );
        let viewer = bp.add("viewer", Viewer { frames: In::new() });
        bp.place(&viewer, Placement::process("ui"));
        let plan = bp.autoconnect().build().unwrap();
        assert_eq!(plan.verify(), Ok(()));
        plan
    }

    fn violations(plan: &Plan) -> String {
        plan.verify().unwrap_err().join("\n")
    }

    #[test]
    fn an_unfed_input_is_caught() {
        let mut plan = plan();
        let to_viewer = plan
            .graph
            .edge_references()
            .find(|e| e.weight().to_port == Some("frames"))
            .map(|e| e.id())
            .unwrap();
        plan.graph.remove_edge(to_viewer);
        assert!(violations(&plan).contains("viewer.frames (stream color_image) is not fed"));
    }

    #[test]
    fn a_duplicated_decoder_is_caught() {
        let mut plan = plan();
        let decoder = plan
            .graph
            .node_indices()
            .find(|&n| matches!(&plan.graph[n], PlanNode::Codec(c) if c.kind == CodecKind::Decode))
            .unwrap();
        let copy = plan.graph[decoder].clone();
        let twin = plan.graph.add_node(copy);
        let encoder = plan
            .graph
            .neighbors_directed(decoder, EdgeDirection::Incoming)
            .next()
            .unwrap();
        let link = plan
            .graph
            .edges_connecting(encoder, decoder)
            .next()
            .unwrap()
            .weight()
            .clone();
        plan.graph.add_edge(encoder, twin, link);
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
            .find(|e| e.weight().to_port == Some("frames"))
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
        for node in plan.graph.node_weights_mut() {
            if let PlanNode::Codec(codec) = node
                && codec.kind == CodecKind::Encode
            {
                codec.placement = Placement::process("elsewhere");
            }
        }
        assert!(violations(&plan).contains("is not in its producer's process"));
    }
}
