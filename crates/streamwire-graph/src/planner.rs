//! From a blueprint to a plan: resolve names, match ports, insert codec nodes.
//!
//! The codec rules (also stated in RFC.md):
//! - Encode at most once per (stream, codec, parameters), in the producer's process; the
//!   bytes are shared by every byte consumer and every compressed link.
//! - A pixel input in the producer's process gets the producer's message directly
//!   (unless compression is `on`); in another process it gets pixels from one decoder
//!   per (receiving process, stream) when its link compresses, else the raw message.
//! - A byte input always gets its encoder, even behind a plain `Out<M>`.
//! - Settings only decide whether a pixel link carries bytes. The global setting applies
//!   to `Out<Compressed<..>>` outputs; a plain `Out<M>` compresses only when its stream's
//!   setting asks. Per-stream beats global.
//! - A `lossless` input never receives lossy or downscaled pixels: its link stays raw, or
//!   the build fails when a per-stream `on` forces compression.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use petgraph::graph::{DiGraph, NodeIndex};
use streamwire_core::{CodecInfo, CodecParams, CodecSummary, Direction, PortInfo, Transport};

use crate::blueprint::Blueprint;
use crate::error::{BuildError, PortName, Problem};
use crate::names::{self, resolve};
use crate::plan::{
    CodecKind, CodecNode, InstanceNode, Link, LinkPayload, LinkReason, Note, Plan, PlanNode,
    PlanNodeId, PlanSettings, StreamSummary,
};
use crate::settings::{Compression, Locality, Placement, Report, WireFormat};

/// A port of an instance: (instance index, port index).
type PortKey = (usize, usize);

/// Where a stream's mode comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ModeSource {
    Stream,
    Global,
    PlainOutput,
}

pub(crate) fn plan(bp: &Blueprint) -> Result<Plan, BuildError> {
    let mut problems = bp.problems.clone();
    let streams = resolve_streams(bp, &mut problems);
    let port = |(i, p): PortKey| &bp.instances[i].ports[p];
    let port_name = |key: PortKey| port_name(bp, key);

    // Producers of each stream.
    let mut producers: BTreeMap<&str, Vec<PortKey>> = BTreeMap::new();
    for (i, instance) in bp.instances.iter().enumerate() {
        for (p, info) in instance.ports.iter().enumerate() {
            if info.direction() == Direction::Output {
                producers
                    .entry(streams[i][p].as_str())
                    .or_default()
                    .push((i, p));
            }
        }
    }
    for (stream, outputs) in &producers {
        if outputs.len() > 1 {
            problems.push(Problem::TwoProducers {
                stream: (*stream).to_owned(),
                producers: outputs.iter().map(|&k| port_name(k)).collect(),
            });
        }
    }

    // Which output feeds each input: explicit connections first, then autoconnect.
    let mut feeds: BTreeMap<PortKey, (PortKey, bool)> = BTreeMap::new();
    for connection in &bp.connections {
        let (from, to) = (
            (connection.from.0 as usize, connection.from.1),
            (connection.to.0 as usize, connection.to.1),
        );
        if let Some(&(first, _)) = feeds.get(&to) {
            problems.push(Problem::InputConnectedTwice {
                input: port_name(to),
                outputs: [port_name(first), port_name(from)],
            });
            continue;
        }
        // The compiler checked the message types of explicit connections; a hand-written
        // `Module` impl could still lie about them, so check again.
        if port(from).message() != port(to).message() {
            problems.push(mismatch(
                &streams[from.0][from.1],
                port_name(from),
                port(from),
                port_name(to),
                port(to),
            ));
            continue;
        }
        feeds.insert(to, (from, true));
    }
    let mut unfed_optional = Vec::new();
    for (i, instance) in bp.instances.iter().enumerate() {
        for (p, info) in instance.ports.iter().enumerate() {
            if info.direction() != Direction::Input || feeds.contains_key(&(i, p)) {
                continue;
            }
            let stream = streams[i][p].as_str();
            let producer = if bp.autoconnect {
                find_producer(&producers, stream, info, i)
            } else {
                None
            };
            match producer {
                Some(Some(from)) if port(from).message() == info.message() => {
                    feeds.insert((i, p), (from, false));
                }
                Some(Some(from)) => problems.push(mismatch(
                    &streams[from.0][from.1],
                    port_name(from),
                    port(from),
                    port_name((i, p)),
                    info,
                )),
                // Several producers: already reported.
                Some(None) => {}
                None => {
                    let suggestion = names::did_you_mean(
                        stream,
                        producers
                            .iter()
                            .filter(|(_, outs)| {
                                outs.iter().any(|&o| port(o).message() == info.message())
                            })
                            .map(|(s, _)| *s),
                    )
                    .map(str::to_owned);
                    let optional = info.attrs().optional;
                    if optional {
                        unfed_optional.push(Note::UnfedOptional {
                            input: format!("{}.{}", instance.name, info.field()),
                            stream: stream.to_owned(),
                        });
                    }
                    if !optional || bp.settings.unfed_optional == Report::Error {
                        problems.push(Problem::UnfedInput {
                            input: port_name((i, p)),
                            stream: stream.to_owned(),
                            suggestion,
                            optional,
                        });
                    }
                }
            }
        }
    }

    // Per-stream settings must name produced streams.
    for stream in bp.stream_settings.keys() {
        if !producers.contains_key(stream.as_str()) {
            problems.push(Problem::UnknownStreamSetting {
                stream: stream.clone(),
                suggestion: names::did_you_mean(stream, producers.keys().copied())
                    .map(str::to_owned),
            });
        }
    }

    // The graph: one node per instance, then codec nodes per stream.
    let mut builder = GraphBuilder {
        graph: DiGraph::new(),
        instance_nodes: Vec::new(),
        encoders: HashMap::new(),
        decoders: HashMap::new(),
        primary_encoders: BTreeSet::new(),
    };
    for (i, instance) in bp.instances.iter().enumerate() {
        let node = builder.graph.add_node(PlanNode::Instance(InstanceNode {
            name: instance.name.clone(),
            module_type: instance.module_type,
            placement: instance.placement.clone(),
            ports: instance.ports,
            streams: streams[i].clone(),
        }));
        builder.instance_nodes.push(node);
    }

    // Group the consumers of each output.
    let mut consumers: BTreeMap<PortKey, Vec<(PortKey, bool)>> = BTreeMap::new();
    for (&to, &(from, explicit)) in &feeds {
        consumers.entry(from).or_default().push((to, explicit));
    }
    let mut lossy = Vec::new();
    let mut summaries = Vec::new();
    for (i, instance) in bp.instances.iter().enumerate() {
        for (p, info) in instance.ports.iter().enumerate() {
            if info.direction() != Direction::Output {
                continue;
            }
            let stream = StreamPlanner {
                bp,
                producer: (i, p),
                name: &streams[i][p],
                info,
                placement: &instance.placement,
            };
            let empty = Vec::new();
            let summary = stream.plan(
                consumers.get(&(i, p)).unwrap_or(&empty),
                &mut builder,
                &mut problems,
                &mut lossy,
            );
            summaries.push(summary);
        }
    }
    name_encoded_streams(&mut builder, &producers, &port_name, &mut problems);

    // Lossy inputs: listed always; logged with Warn; errors with Error.
    let mut notes = Vec::with_capacity(lossy.len() + unfed_optional.len());
    for (key, note) in lossy {
        if let Note::LossyPixels {
            stream,
            codec,
            fidelity,
            ..
        } = &note
        {
            match bp.settings.lossy_pixels {
                Report::Ignore => {}
                Report::Warn => tracing::warn!(stream = %stream, codec, "{note}"),
                Report::Error => problems.push(Problem::LossyPixels {
                    input: port_name(key),
                    stream: stream.clone(),
                    codec,
                    fidelity: fidelity.to_string(),
                }),
            }
        }
        notes.push(note);
    }
    if bp.settings.unfed_optional == Report::Warn {
        for note in &unfed_optional {
            tracing::warn!("{note}");
        }
    }
    notes.extend(unfed_optional);

    if !problems.is_empty() {
        return Err(BuildError { problems });
    }
    Ok(Plan {
        graph: builder.graph,
        streams: summaries,
        notes,
        settings: PlanSettings {
            compression: bp.settings.compression,
            auto_table: bp.settings.auto_table,
            lossy_pixels: bp.settings.lossy_pixels,
            unfed_optional: bp.settings.unfed_optional,
        },
    })
}

/// How errors name port `key`: `instance.field` and its type.
fn port_name(bp: &Blueprint, (i, p): PortKey) -> PortName {
    let instance = &bp.instances[i];
    PortName {
        instance: instance.name.clone(),
        port: instance.ports[p].field(),
        type_name: instance.ports[p].type_name(),
    }
}

/// Resolves every port's stream name (remaps, namespaces), checking names and that no
/// two ports of one direction of one instance share a stream.
fn resolve_streams(bp: &Blueprint, problems: &mut Vec<Problem>) -> Vec<Vec<String>> {
    let mut all = Vec::with_capacity(bp.instances.len());
    for (index, instance) in bp.instances.iter().enumerate() {
        let mut resolved = Vec::with_capacity(instance.ports.len());
        let mut seen: BTreeMap<(bool, String), usize> = BTreeMap::new();
        for (p, (info, remap)) in instance.ports.iter().zip(&instance.remaps).enumerate() {
            let raw = remap.as_deref().unwrap_or(info.stream());
            let name = port_name(bp, (index, p));
            if let Some(reason) = names::stream_name_problem(raw) {
                problems.push(Problem::InvalidStreamName {
                    port: name.clone(),
                    name: raw.to_owned(),
                    reason,
                });
            }
            let stream = resolve(&instance.namespace, raw);
            let is_input = info.direction() == Direction::Input;
            if let Some(&first) = seen.get(&(is_input, stream.clone())) {
                problems.push(Problem::DuplicatePortStream {
                    instance: instance.name.clone(),
                    direction: info.direction(),
                    stream: stream.clone(),
                    ports: [port_name(bp, (index, first)), name],
                });
            } else {
                seen.insert((is_input, stream.clone()), p);
            }
            resolved.push(stream);
        }
        all.push(resolved);
    }
    all
}

/// The producer an input autoconnects to: `Some(Some(port))`, `Some(None)` when the
/// stream has several producers (reported elsewhere), `None` when it has none. A byte
/// input named `<stream>/<suffix>` (`color_image/compressed`) listens to `<stream>`.
/// An instance never feeds its own input (a filter with one name in and out).
fn find_producer(
    producers: &BTreeMap<&str, Vec<PortKey>>,
    stream: &str,
    input: &PortInfo,
    instance: usize,
) -> Option<Option<PortKey>> {
    let mut candidates: Vec<&str> = vec![stream];
    if let Transport::Codec(codec) = input.transport()
        && let Some(base) = stream.strip_suffix(&format!("/{}", codec.stream_suffix()))
    {
        candidates.push(base);
    }
    for name in candidates {
        if let Some(outputs) = producers.get(name) {
            let others: Vec<PortKey> = outputs
                .iter()
                .copied()
                .filter(|o| o.0 != instance)
                .collect();
            return match others.as_slice() {
                [] => None,
                [one] => Some(Some(*one)),
                _ => Some(None),
            };
        }
    }
    None
}

fn mismatch(
    stream: &str,
    output: PortName,
    output_info: &PortInfo,
    input: PortName,
    input_info: &PortInfo,
) -> Problem {
    Problem::MessageMismatch {
        stream: stream.to_owned(),
        output,
        output_message: output_info.message().rust_name(),
        input,
        input_message: input_info.message().rust_name(),
    }
}

/// The graph under construction, with the codec nodes made so far.
struct GraphBuilder {
    graph: DiGraph<PlanNode, Link>,
    instance_nodes: Vec<NodeIndex>,
    /// (producer, codec name, message type name, params) -> encoder.
    encoders: HashMap<(PortKey, &'static str, &'static str, CodecParams), NodeIndex>,
    /// (producer, placement) -> decoder: one per receiving process and stream.
    decoders: HashMap<(PortKey, Placement), NodeIndex>,
    /// Encoders of a stream's own wire codec and parameters.
    primary_encoders: BTreeSet<NodeIndex>,
}

/// Plans one output's stream.
struct StreamPlanner<'a> {
    bp: &'a Blueprint,
    producer: PortKey,
    name: &'a str,
    info: &'static PortInfo,
    placement: &'a Placement,
}

impl StreamPlanner<'_> {
    fn plan(
        &self,
        consumers: &[(PortKey, bool)],
        builder: &mut GraphBuilder,
        problems: &mut Vec<Problem>,
        lossy: &mut Vec<(PortKey, Note)>,
    ) -> StreamSummary {
        let settings = self.bp.stream_settings.get(self.name);
        let producer_codec = self.info.transport().codec();
        let (mode, source) = match settings.and_then(|s| s.compression) {
            Some(mode) => (mode, ModeSource::Stream),
            None if producer_codec.is_some() => (self.bp.settings.compression, ModeSource::Global),
            None => (Compression::Off, ModeSource::PlainOutput),
        };

        // The codec of compressed pixel links and its parameters.
        let mut wire_codec = producer_codec;
        // A codec named in text is looked up among the codecs the stream's ports name and
        // the registered ones (`register_codec!`).
        let known: Vec<CodecInfo> =
            producer_codec
                .into_iter()
                .chain(consumers.iter().filter_map(|&((ci, cp), _)| {
                    self.bp.instances[ci].ports[cp].transport().codec()
                }))
                .chain(streamwire_core::registered_codecs())
                .collect();
        let mut unknown_codec = false;
        let chosen = match settings.map(|s| s.resolve_codec(self.info.message(), &known)) {
            Some(Ok(codec)) => codec,
            Some(Err(unknown)) => {
                unknown_codec = true;
                problems.push(Problem::UnknownCodec {
                    stream: self.name.to_owned(),
                    codec: unknown.name,
                    message: unknown.message,
                    known: unknown.known,
                    suggestion: unknown.suggestion,
                });
                wire_codec = None;
                None
            }
            None => None,
        };
        if let Some(codec) = chosen {
            if codec.message() == self.info.message() {
                wire_codec = Some(codec);
            } else {
                problems.push(Problem::CodecForOtherMessage {
                    stream: self.name.to_owned(),
                    codec: codec.name(),
                    codec_message: codec.message().rust_name(),
                    stream_message: self.info.message().rust_name(),
                });
                wire_codec = None;
            }
        }
        let stream_params = settings.map(|s| s.params.clone()).unwrap_or_default();
        let wire = match wire_codec {
            Some(codec) => match codec.summarize(&stream_params) {
                Ok(summary) => Some((codec, summary)),
                Err(e) => {
                    problems.push(Problem::InvalidCodecParams {
                        stream: self.name.to_owned(),
                        codec: codec.name(),
                        reason: e.to_string(),
                    });
                    None
                }
            },
            None => {
                // Parameters of a codec named wrongly are that one mistake, not a second.
                if !stream_params.is_empty() && !unknown_codec {
                    problems.push(Problem::ParamsWithoutCodec {
                        stream: self.name.to_owned(),
                        params: stream_params.to_string(),
                        producer: port_name(self.bp, self.producer),
                        message: self.info.message().rust_name(),
                    });
                }
                None
            }
        };

        let mut reported_no_codec = false;
        let producer_node = builder.instance_nodes[self.producer.0];
        for &((ci, cp), explicit) in consumers {
            let consumer = &self.bp.instances[ci];
            let input = &consumer.ports[cp];
            let consumer_node = builder.instance_nodes[ci];
            let locality = self.placement.locality_to(&consumer.placement);
            match input.transport() {
                Transport::Codec(codec) => {
                    // A byte input gets its encoder whatever the settings say.
                    let summary = match &wire {
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
                            continue;
                        }
                    };
                    let primary =
                        matches!(&wire, Some((w, s)) if *w == codec && s.params == summary.params);
                    let encoder = self.encoder(builder, codec, &summary, primary);
                    builder.graph.add_edge(
                        encoder,
                        consumer_node,
                        Link {
                            stream: String::new(),
                            payload: LinkPayload::Encoded(codec),
                            locality,
                            reason: LinkReason::BytesRequested {
                                input_type: input.type_name(),
                            },
                            from_port: None,
                            to_port: Some(input.field()),
                            explicit,
                        },
                    );
                }
                Transport::Raw => {
                    let (mut compress, mut reason) = match (mode, source) {
                        (Compression::Auto, _) => {
                            let format = self.bp.settings.auto_table.format(locality);
                            (
                                format == WireFormat::Compressed,
                                LinkReason::Auto { locality, format },
                            )
                        }
                        (mode, ModeSource::Stream) => {
                            (mode == Compression::On, LinkReason::Stream(mode))
                        }
                        (mode, ModeSource::Global) => {
                            (mode == Compression::On, LinkReason::Global(mode))
                        }
                        (_, ModeSource::PlainOutput) => (
                            false,
                            LinkReason::PlainOutput {
                                output_type: self.info.type_name(),
                            },
                        ),
                    };
                    if compress && wire.is_none() {
                        if wire_codec.is_none() && !reported_no_codec && !unknown_codec {
                            problems.push(Problem::NoCodec {
                                stream: self.name.to_owned(),
                                producer: port_name(self.bp, self.producer),
                                message: self.info.message().rust_name(),
                            });
                            reported_no_codec = true;
                        }
                        compress = false;
                    }
                    if let (true, Some((codec, summary))) = (compress, &wire)
                        && input.attrs().lossless
                        && !summary.fidelity.is_exact()
                    {
                        if source == ModeSource::Stream && mode == Compression::On {
                            problems.push(Problem::LosslessConflict {
                                input: port_name(self.bp, (ci, cp)),
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
                    match (compress, &wire) {
                        (true, Some((codec, summary))) => {
                            let encoder = self.encoder(builder, *codec, summary, true);
                            let decoder = self.decoder(
                                builder,
                                encoder,
                                *codec,
                                summary,
                                &consumer.placement,
                                reason,
                            );
                            builder.graph.add_edge(
                                decoder,
                                consumer_node,
                                Link {
                                    stream: self.name.to_owned(),
                                    payload: LinkPayload::Message(self.info.message()),
                                    locality: Locality::InProcess,
                                    reason: LinkReason::Decoded {
                                        placement: consumer.placement.clone(),
                                    },
                                    from_port: None,
                                    to_port: Some(input.field()),
                                    explicit,
                                },
                            );
                            if !summary.fidelity.is_exact() {
                                lossy.push((
                                    (ci, cp),
                                    Note::LossyPixels {
                                        input: format!("{}.{}", consumer.name, input.field()),
                                        stream: self.name.to_owned(),
                                        codec: codec.name(),
                                        fidelity: summary.fidelity,
                                    },
                                ));
                            }
                        }
                        _ => {
                            builder.graph.add_edge(
                                producer_node,
                                consumer_node,
                                Link {
                                    stream: self.name.to_owned(),
                                    payload: LinkPayload::Message(self.info.message()),
                                    locality,
                                    reason,
                                    from_port: Some(self.info.field()),
                                    to_port: Some(input.field()),
                                    explicit,
                                },
                            );
                        }
                    }
                }
            }
        }

        let mode_text = match source {
            ModeSource::Stream => format!("{mode} (stream setting)"),
            ModeSource::Global => format!("{mode} (global setting)"),
            ModeSource::PlainOutput => "off (plain output)".to_owned(),
        };
        StreamSummary {
            name: self.name.to_owned(),
            message: self.info.message(),
            producer: PlanNodeId(producer_node),
            producer_port: self.info,
            mode: mode_text,
            wire_codec: wire.map(|(c, _)| c),
        }
    }

    /// The encoder of (this stream, codec, params), made on first use in the producer's
    /// process, fed by the producer. `primary` marks the stream's own wire codec, whose
    /// encoded stream gets the plain `<stream>/compressed` name.
    fn encoder(
        &self,
        builder: &mut GraphBuilder,
        codec: CodecInfo,
        summary: &CodecSummary,
        primary: bool,
    ) -> NodeIndex {
        let key = (
            self.producer,
            codec.name(),
            codec.message().name(),
            summary.params.clone(),
        );
        if let Some(&node) = builder.encoders.get(&key) {
            return node;
        }
        let node = builder.graph.add_node(PlanNode::Codec(CodecNode {
            kind: CodecKind::Encode,
            stream: self.name.to_owned(),
            // Named once every encoder of the stream is known.
            encoded_stream: String::new(),
            codec,
            params: summary.params.clone(),
            fidelity: summary.fidelity,
            placement: self.placement.clone(),
        }));
        let producer_node = builder.instance_nodes[self.producer.0];
        builder.graph.add_edge(
            producer_node,
            node,
            Link {
                stream: self.name.to_owned(),
                payload: LinkPayload::Message(self.info.message()),
                locality: Locality::InProcess,
                reason: LinkReason::ToEncoder,
                from_port: Some(self.info.field()),
                to_port: None,
                explicit: false,
            },
        );
        builder.encoders.insert(key, node);
        if primary {
            builder.primary_encoders.insert(node);
        }
        node
    }

    /// The decoder of this stream in `placement`, made on first use and fed by `encoder`.
    fn decoder(
        &self,
        builder: &mut GraphBuilder,
        encoder: NodeIndex,
        codec: CodecInfo,
        summary: &CodecSummary,
        placement: &Placement,
        reason: LinkReason,
    ) -> NodeIndex {
        let key = (self.producer, placement.clone());
        if let Some(&node) = builder.decoders.get(&key) {
            return node;
        }
        let node = builder.graph.add_node(PlanNode::Codec(CodecNode {
            kind: CodecKind::Decode,
            stream: self.name.to_owned(),
            encoded_stream: String::new(),
            codec,
            params: summary.params.clone(),
            fidelity: summary.fidelity,
            placement: placement.clone(),
        }));
        builder.graph.add_edge(
            encoder,
            node,
            Link {
                stream: String::new(),
                payload: LinkPayload::Encoded(codec),
                locality: self.placement.locality_to(placement),
                reason,
                from_port: None,
                to_port: None,
                explicit: false,
            },
        );
        builder.decoders.insert(key, node);
        node
    }
}

/// Names encoded streams `<stream>/<suffix>` (`color_image/compressed`), ROS style. When
/// one stream has several encoders, the stream's own wire codec keeps that name and the
/// others get `/<codec>` appended.
fn name_encoded_streams(
    builder: &mut GraphBuilder,
    producers: &BTreeMap<&str, Vec<PortKey>>,
    port_name: &dyn Fn(PortKey) -> PortName,
    problems: &mut Vec<Problem>,
) {
    let mut encoders: Vec<(PortKey, NodeIndex)> = builder
        .encoders
        .iter()
        .map(|(key, &node)| (key.0, node))
        .collect();
    // The stream's own codec first, then in creation order (node indices grow with it).
    encoders.sort_by_key(|&(_, node)| (!builder.primary_encoders.contains(&node), node));
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut names_of: HashMap<NodeIndex, String> = HashMap::new();
    for &(_, node) in &encoders {
        let PlanNode::Codec(codec) = &builder.graph[node] else {
            continue;
        };
        let base = format!("{}/{}", codec.stream, codec.codec.stream_suffix());
        let mut name = base.clone();
        if taken.contains(&name) {
            name = format!("{base}/{}", codec.codec.name());
            let mut n = 2;
            while taken.contains(&name) {
                name = format!("{base}/{}_{n}", codec.codec.name());
                n += 1;
            }
        }
        if let Some(outputs) = producers.get(name.as_str())
            && let Some(&first) = outputs.first()
        {
            problems.push(Problem::EncodedNameTaken {
                stream: codec.stream.clone(),
                encoded: name.clone(),
                producer: port_name(first),
            });
        }
        taken.insert(name.clone());
        names_of.insert(node, name);
    }
    // Decoders take the name of their encoder; links carrying bytes too.
    let edges: Vec<_> = builder.graph.edge_indices().collect();
    for edge in edges {
        let Some((from, to)) = builder.graph.edge_endpoints(edge) else {
            continue;
        };
        let Some(name) = names_of.get(&from).cloned() else {
            continue;
        };
        builder.graph[edge].stream.clone_from(&name);
        if let PlanNode::Codec(decoder) = &mut builder.graph[to] {
            decoder.encoded_stream.clone_from(&name);
        }
    }
    for (node, name) in names_of {
        if let PlanNode::Codec(encoder) = &mut builder.graph[node] {
            encoder.encoded_stream = name;
        }
    }
}
