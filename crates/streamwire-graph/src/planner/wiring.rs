//! Phase 4: the graph. One node per instance, then per stream its links: a raw link, or
//! through the stream's encoder and a decoder per receiving process, by the codec rules
//! of the planner's module doc. Apart from [`super::codec_nodes`], which makes the codec
//! nodes themselves and names and tunes them once the graph is whole.

use std::collections::{BTreeSet, HashMap};

use petgraph::graph::{DiGraph, NodeIndex};
use streamwire_core::{CodecInfo, CodecParams, PayloadForm, PortInfo};

use super::codec_nodes::{name_encoded_streams, serve_consumers_qos};
use super::matching::Matching;
use super::ports::Ports;
use super::stream_plan::{ModeSource, StreamPlan};
use super::{PortKey, port_name};
use crate::blueprint::Blueprint;
use crate::error::Problem;
use crate::plan::{
    CodecNode, CodecNodeId, Endpoint, InstanceIndex, Link, LinkId, LinkPayload, LinkReason, Note,
    PlanNode, PortIndex, StreamSummary,
};
use crate::settings::{Compression, Locality, Placement, WireFormat};

/// The wired graph.
pub(super) struct Wired {
    pub(super) graph: DiGraph<PlanNode, Link>,
    pub(super) codec_nodes: Vec<CodecNode>,
    pub(super) summaries: Vec<StreamSummary>,
    /// Inputs receiving lossy pixels, for the check phase.
    pub(super) lossy: Vec<(PortKey, Note)>,
}

/// The graph under construction, with the codec nodes made so far.
pub(super) struct GraphBuilder {
    pub(super) graph: DiGraph<PlanNode, Link>,
    pub(super) codec_nodes: Vec<CodecNode>,
    /// Graph node of each codec node.
    codec_graph_nodes: Vec<NodeIndex>,
    /// (producer, codec name, message type name, params) -> encoder.
    pub(super) encoders: HashMap<(PortKey, &'static str, &'static str, CodecParams), CodecNodeId>,
    /// (producer, placement) -> decoder: one per receiving process and stream.
    pub(super) decoders: HashMap<(PortKey, Placement), CodecNodeId>,
    /// Encoders of a stream's own wire codec and parameters.
    pub(super) primary_encoders: BTreeSet<CodecNodeId>,
}

/// A link before it has an id.
pub(super) struct NewLink {
    pub(super) stream: String,
    pub(super) payload: LinkPayload,
    pub(super) locality: Locality,
    pub(super) reason: LinkReason,
    pub(super) explicit: bool,
}

impl GraphBuilder {
    pub(super) fn node(&self, endpoint: Endpoint) -> NodeIndex {
        match endpoint {
            // Instance `i` is graph node `i`: instances are added first.
            Endpoint::Port { instance, .. } => NodeIndex::new(instance.0),
            Endpoint::Codec(id) => self.codec_graph_nodes[id.0],
        }
    }

    pub(super) fn add_link(&mut self, from: Endpoint, to: Endpoint, link: NewLink) {
        let id = LinkId(self.graph.edge_count());
        let (a, b) = (self.node(from), self.node(to));
        self.graph.add_edge(
            a,
            b,
            Link {
                id,
                from,
                to,
                stream: link.stream,
                payload: link.payload,
                locality: link.locality,
                reason: link.reason,
                explicit: link.explicit,
            },
        );
    }

    pub(super) fn add_codec(&mut self, make: impl FnOnce(CodecNodeId) -> CodecNode) -> CodecNodeId {
        let id = CodecNodeId(self.codec_nodes.len());
        self.codec_nodes.push(make(id));
        self.codec_graph_nodes
            .push(self.graph.add_node(PlanNode::Codec(id)));
        id
    }
}

pub(super) fn port_endpoint((i, p): PortKey) -> Endpoint {
    Endpoint::Port {
        instance: InstanceIndex(i),
        port: PortIndex(p),
    }
}

/// One node per instance, then each stream's links and codec nodes; then the encoded
/// streams' names.
pub(super) fn insert_codec_nodes(
    bp: &Blueprint,
    ports: &Ports,
    matching: &Matching,
    streams: &[StreamPlan],
    problems: &mut Vec<Problem>,
) -> Wired {
    let mut builder = GraphBuilder {
        graph: DiGraph::new(),
        codec_nodes: Vec::new(),
        codec_graph_nodes: Vec::new(),
        encoders: HashMap::new(),
        decoders: HashMap::new(),
        primary_encoders: BTreeSet::new(),
    };
    for i in 0..bp.instances.len() {
        builder.graph.add_node(PlanNode::Instance(InstanceIndex(i)));
    }
    let mut lossy = Vec::new();
    let mut summaries = Vec::new();
    for plan in streams {
        let stream = StreamWiring {
            bp,
            ports,
            plan,
            name: ports.stream(plan.producer),
            info: ports.info(plan.producer),
            placement: &bp.instances[plan.producer.0].placement,
        };
        let consumers: Vec<(PortKey, bool)> = matching.consumers(plan.producer).collect();
        summaries.push(stream.wire(&consumers, &mut builder, problems, &mut lossy));
    }
    name_encoded_streams(bp, &mut builder, &matching.producers, problems);
    serve_consumers_qos(&mut builder, ports);
    Wired {
        graph: builder.graph,
        codec_nodes: builder.codec_nodes,
        summaries,
        lossy,
    }
}

/// Wires one output's stream to its consumers.
pub(super) struct StreamWiring<'a> {
    pub(super) bp: &'a Blueprint,
    pub(super) ports: &'a Ports,
    pub(super) plan: &'a StreamPlan,
    pub(super) name: &'a str,
    pub(super) info: &'static PortInfo,
    pub(super) placement: &'a Placement,
}

impl StreamWiring<'_> {
    pub(super) fn wire(
        &self,
        consumers: &[(PortKey, bool)],
        builder: &mut GraphBuilder,
        problems: &mut Vec<Problem>,
        lossy: &mut Vec<(PortKey, Note)>,
    ) -> StreamSummary {
        let mut reported_no_codec = false;
        for &(consumer, explicit) in consumers {
            let input = self.ports.info(consumer);
            let placement = &self.bp.instances[consumer.0].placement;
            let locality = self.placement.locality_to(placement);
            match input.payload_form() {
                PayloadForm::Codec(codec) => {
                    self.wire_bytes(builder, problems, consumer, codec, locality, explicit);
                }
                PayloadForm::Raw => {
                    let (compress, reason) =
                        self.link_format(consumer, locality, problems, &mut reported_no_codec);
                    match (compress, &self.plan.wire) {
                        (true, Some((codec, summary))) => {
                            let encoder = self.encoder(builder, *codec, summary, true);
                            let decoder =
                                self.decoder(builder, encoder, *codec, summary, placement, reason);
                            builder.add_link(
                                Endpoint::Codec(decoder),
                                port_endpoint(consumer),
                                NewLink {
                                    stream: self.name.to_owned(),
                                    payload: LinkPayload::Message(self.info.message()),
                                    locality: Locality::InProcess,
                                    reason: LinkReason::Decoded {
                                        placement: placement.clone(),
                                    },
                                    explicit,
                                },
                            );
                            if !summary.fidelity.is_exact() {
                                lossy.push((
                                    consumer,
                                    Note::LossyPixels {
                                        input: format!(
                                            "{}.{}",
                                            self.bp.instances[consumer.0].name,
                                            input.field()
                                        ),
                                        stream: self.name.to_owned(),
                                        codec: codec.name(),
                                        fidelity: summary.fidelity,
                                    },
                                ));
                            }
                        }
                        _ => builder.add_link(
                            port_endpoint(self.plan.producer),
                            port_endpoint(consumer),
                            NewLink {
                                stream: self.name.to_owned(),
                                payload: LinkPayload::Message(self.info.message()),
                                locality,
                                reason,
                                explicit,
                            },
                        ),
                    }
                }
            }
        }

        let mode = self.plan.mode;
        StreamSummary {
            name: self.name.to_owned(),
            message: self.info.message(),
            producer: InstanceIndex(self.plan.producer.0),
            producer_port: PortIndex(self.plan.producer.1),
            mode: match self.plan.source {
                ModeSource::Stream => format!("{mode} (stream setting)"),
                ModeSource::Global => format!("{mode} (global setting)"),
                ModeSource::PlainOutput => "off (plain output)".to_owned(),
            },
            wire_codec: self.plan.wire.as_ref().map(|(c, _)| *c),
        }
    }

    /// A byte input gets its encoder whatever the settings say.
    fn wire_bytes(
        &self,
        builder: &mut GraphBuilder,
        problems: &mut Vec<Problem>,
        consumer: PortKey,
        codec: CodecInfo,
        locality: Locality,
        explicit: bool,
    ) {
        let summary = match &self.plan.wire {
            Some((w, s)) if *w == codec => Ok(s.clone()),
            _ => codec.summarize(&CodecParams::new()),
        };
        let summary = match summary {
            Ok(s) => s,
            Err(e) => {
                problems.push(Problem::InvalidCodecParams {
                    stream: self.name.to_owned(),
                    codec: codec.name(),
                    reason: e.to_string(),
                });
                return;
            }
        };
        let primary =
            matches!(&self.plan.wire, Some((w, s)) if *w == codec && s.params == summary.params);
        let encoder = self.encoder(builder, codec, &summary, primary);
        builder.add_link(
            Endpoint::Codec(encoder),
            port_endpoint(consumer),
            NewLink {
                stream: String::new(),
                payload: LinkPayload::Encoded(codec),
                locality,
                reason: LinkReason::BytesRequested {
                    input_type: self.ports.info(consumer).type_name(),
                },
                explicit,
            },
        );
    }

    /// Whether the pixel link to `consumer` compresses, and why. Reports a compressed
    /// stream without a codec (once per stream) and a lossless input forced to compress.
    fn link_format(
        &self,
        consumer: PortKey,
        locality: Locality,
        problems: &mut Vec<Problem>,
        reported_no_codec: &mut bool,
    ) -> (bool, LinkReason) {
        let plan = self.plan;
        let (mut compress, mut reason) = match (plan.mode, plan.source) {
            (Compression::Auto, _) => {
                let format = self.bp.settings.auto_table.format(locality);
                (
                    format == WireFormat::Compressed,
                    LinkReason::Auto { locality, format },
                )
            }
            (mode, ModeSource::Stream) => (mode == Compression::On, LinkReason::Stream(mode)),
            (mode, ModeSource::Global) => (mode == Compression::On, LinkReason::Global(mode)),
            (_, ModeSource::PlainOutput) => (
                false,
                LinkReason::PlainOutput {
                    output_type: self.info.type_name(),
                },
            ),
        };
        if compress && plan.wire.is_none() {
            if plan.wire_codec.is_none() && !*reported_no_codec && !plan.codec_refused {
                problems.push(Problem::NoCodec {
                    stream: self.name.to_owned(),
                    producer: port_name(self.bp, plan.producer),
                    message: self.info.message().rust_name(),
                });
                *reported_no_codec = true;
            }
            compress = false;
        }
        if let (true, Some((codec, summary))) = (compress, &plan.wire)
            && self.ports.info(consumer).attrs().lossless
            && !summary.fidelity.is_exact()
        {
            if plan.source == ModeSource::Stream && plan.mode == Compression::On {
                problems.push(Problem::LosslessConflict {
                    input: port_name(self.bp, consumer),
                    stream: self.name.to_owned(),
                    codec: codec.name(),
                    fidelity: summary.fidelity.to_string(),
                    locality,
                });
            }
            compress = false;
            reason = LinkReason::LosslessInput {
                codec: codec.name(),
            };
        }
        (compress, reason)
    }
}
