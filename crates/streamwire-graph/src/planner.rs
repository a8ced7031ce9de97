//! From a blueprint to a plan, in phases a reader can follow:
//!
//! 1. [`resolve_ports`]: every port's stream name (namespaces, remaps) and effective QoS.
//! 2. [`match_ports`]: which output feeds each input (explicit connections, then
//!    autoconnect by stream name and message type).
//! 3. [`resolve_settings`]: per stream, its compression mode, codec and parameters.
//! 4. [`insert_codec_nodes`]: the graph: instances, encode and decode nodes, links.
//! 5. [`check`]: QoS compatibility, lossy pixels, wire names, unfed optional inputs.
//!
//! Every phase records its problems and carries on, so one build reports every mistake;
//! a mistake already reported (a foreign handle, a bad stream name) is not reported again
//! as its consequence (an input fed by nobody).
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
use streamwire_core::{
    CodecError, CodecInfo, CodecParams, CodecSummary, Direction, Durability, History, MessageInfo,
    PortInfo, Qos, Reliability, Transport,
};

use crate::blueprint::Blueprint;
use crate::error::{BuildError, PortName, Problem, StreamSuggestion, SuggestionReason};
use crate::names::{self, resolve};
use crate::plan::{
    CodecKind, CodecNode, CodecNodeId, Endpoint, InstanceIndex, InstanceNode, Link, LinkId,
    LinkPayload, LinkReason, Note, Plan, PlanNode, PlanPort, PlanSettings, PortIndex, QosOrigin,
    QosSource, StreamSummary,
};
use crate::settings::{Compression, Locality, Placement, Report, WireFormat};

/// A port of an instance: (instance index, port index).
type PortKey = (usize, usize);

pub(crate) fn plan(bp: &Blueprint) -> Result<Plan, BuildError> {
    let mut problems = bp.problems.clone();
    problems.extend(settings_problems(bp));
    let ports = resolve_ports(bp, &mut problems);
    let matching = match_ports(bp, &ports, &mut problems);
    let streams = resolve_settings(bp, &ports, &matching, &mut problems);
    let wired = insert_codec_nodes(bp, &ports, &matching, &streams, &mut problems);
    let notes = check(bp, &ports, &matching, &wired, &mut problems);

    if !problems.is_empty() {
        return Err(BuildError { problems });
    }
    let instances = bp
        .instances
        .iter()
        .zip(ports.ports)
        .enumerate()
        .map(|(i, (entry, ports))| InstanceNode {
            id: InstanceIndex(i),
            name: entry.name.clone(),
            module_type: entry.module_type,
            placement: entry.placement.clone(),
            ports,
            settings: settings_of(&*entry.module),
            taps: entry.module.taps(),
        })
        .collect();
    Ok(Plan {
        instances,
        codec_nodes: wired.codec_nodes,
        graph: wired.graph,
        streams: wired.summaries,
        notes,
        settings: PlanSettings {
            compression: bp.settings.compression,
            auto_table: bp.settings.auto_table,
            lossy_pixels: bp.settings.lossy_pixels,
            unfed_optional: bp.settings.unfed_optional,
            incompatible_qos: bp.settings.incompatible_qos,
            supervision: bp.settings.supervision,
        },
    })
}

/// Every instance's settings against its module's declared ranges and own check, and
/// every placement's names against what zenoh key expressions reserve: what must hold
/// before any worker starts.
pub(crate) fn settings_problems(bp: &Blueprint) -> Vec<Problem> {
    let mut problems = Vec::new();
    for entry in &bp.instances {
        for problem in entry.module.check_config() {
            problems.push(Problem::InvalidConfig {
                instance: entry.name.clone(),
                module: entry.module_type,
                problem,
            });
        }
        if let Some(reason) = entry.placement.name_problem() {
            problems.push(Problem::InvalidPlacement {
                instance: entry.name.clone(),
                placement: entry.placement.to_string(),
                reason,
            });
        }
    }
    problems
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

// ---------------------------------------------------------------------------------------
// Phase 1: ports.

/// Every port of every instance, resolved.
struct Ports {
    /// Per instance, per port.
    ports: Vec<Vec<PlanPort>>,
    /// Ports whose stream name is invalid (already reported).
    invalid: BTreeSet<PortKey>,
}

impl Ports {
    fn get(&self, (i, p): PortKey) -> &PlanPort {
        &self.ports[i][p]
    }

    fn info(&self, key: PortKey) -> &'static PortInfo {
        self.get(key).info
    }

    fn stream(&self, key: PortKey) -> &str {
        &self.get(key).stream
    }

    fn keys(&self) -> impl Iterator<Item = PortKey> + '_ {
        self.ports
            .iter()
            .enumerate()
            .flat_map(|(i, ports)| (0..ports.len()).map(move |p| (i, p)))
    }

    fn outputs(&self) -> impl Iterator<Item = PortKey> + '_ {
        self.keys()
            .filter(|&k| self.info(k).direction() == Direction::Output)
    }

    fn inputs(&self) -> impl Iterator<Item = PortKey> + '_ {
        self.keys()
            .filter(|&k| self.info(k).direction() == Direction::Input)
    }
}

/// Resolves every port's stream name (remaps, namespaces) and QoS, checking names and
/// that no two ports of one direction of one instance share a stream.
fn resolve_ports(bp: &Blueprint, problems: &mut Vec<Problem>) -> Ports {
    let mut all = Vec::with_capacity(bp.instances.len());
    let mut invalid = BTreeSet::new();
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
                invalid.insert((index, p));
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
            let (qos, qos_origin) = effective_qos(info);
            resolved.push(PlanPort {
                index: PortIndex(p),
                info,
                stream,
                qos,
                qos_origin,
            });
        }
        all.push(resolved);
    }
    Ports {
        ports: all,
        invalid,
    }
}

/// A port's QoS: its `#[port(..)]` values over the defaults of its message's kind (for
/// `Compressed<M>` ports, `M`'s kind: an encoded stream has its stream's QoS).
fn effective_qos(info: &PortInfo) -> (Qos, QosOrigin) {
    let kind = info.message().kind();
    let set = info.attrs().qos;
    let source = |is_set: bool| {
        if is_set {
            QosSource::Port
        } else {
            QosSource::Kind(kind)
        }
    };
    (
        set.over(kind.default_qos()),
        QosOrigin {
            reliability: source(set.reliability.is_some()),
            durability: source(set.durability.is_some()),
            history: source(set.history.is_some()),
        },
    )
}

// ---------------------------------------------------------------------------------------
// Phase 2: matching.

/// Which output feeds an input.
#[derive(Clone, Copy)]
struct Feed {
    from: PortKey,
    explicit: bool,
}

struct Matching {
    /// The producers of each stream.
    producers: BTreeMap<String, Vec<PortKey>>,
    /// Input -> its feed.
    feeds: BTreeMap<PortKey, Feed>,
    /// Optional inputs nobody feeds.
    unfed_optional: Vec<Note>,
}

impl Matching {
    /// The consumers of `output`, in input order.
    fn consumers(&self, output: PortKey) -> impl Iterator<Item = (PortKey, bool)> + '_ {
        self.feeds
            .iter()
            .filter(move |(_, feed)| feed.from == output)
            .map(|(&to, feed)| (to, feed.explicit))
    }
}

/// Explicit connections first, then autoconnect; reports two producers of one stream,
/// message mismatches and inputs nobody feeds.
fn match_ports(bp: &Blueprint, ports: &Ports, problems: &mut Vec<Problem>) -> Matching {
    let mut producers: BTreeMap<String, Vec<PortKey>> = BTreeMap::new();
    for key in ports.outputs() {
        producers
            .entry(ports.stream(key).to_owned())
            .or_default()
            .push(key);
    }
    for (stream, outputs) in &producers {
        if outputs.len() > 1 {
            problems.push(Problem::TwoProducers {
                stream: stream.clone(),
                producers: outputs.iter().map(|&k| port_name(bp, k)).collect(),
            });
        }
    }

    let mismatch = |from: PortKey, to: PortKey| Problem::MessageMismatch {
        stream: ports.stream(from).to_owned(),
        output: port_name(bp, from),
        output_message: ports.info(from).message().rust_name(),
        input: port_name(bp, to),
        input_message: ports.info(to).message().rust_name(),
    };

    let mut feeds: BTreeMap<PortKey, Feed> = BTreeMap::new();
    // Inputs whose explicit connection failed: reported once, as that failure.
    let mut attempted: BTreeSet<PortKey> = bp.failed_inputs.clone();
    for connection in &bp.connections {
        let (from, to) = (
            (connection.from.0 as usize, connection.from.1),
            (connection.to.0 as usize, connection.to.1),
        );
        attempted.insert(to);
        if let Some(first) = feeds.get(&to) {
            problems.push(Problem::InputConnectedTwice {
                input: port_name(bp, to),
                outputs: [port_name(bp, first.from), port_name(bp, from)],
            });
            continue;
        }
        // The compiler checked the message types of explicit connections; a hand-written
        // `Module` impl could still lie about them, so check again.
        if ports.info(from).message() != ports.info(to).message() {
            problems.push(mismatch(from, to));
            continue;
        }
        feeds.insert(
            to,
            Feed {
                from,
                explicit: true,
            },
        );
    }

    let mut unfed_optional = Vec::new();
    for key in ports.inputs() {
        if attempted.contains(&key) {
            continue;
        }
        let info = ports.info(key);
        let stream = ports.stream(key);
        let producer = if bp.autoconnect {
            find_producer(&producers, stream, info, key.0)
        } else {
            None
        };
        match producer {
            Some(Some(from)) if ports.info(from).message() == info.message() => {
                feeds.insert(
                    key,
                    Feed {
                        from,
                        explicit: false,
                    },
                );
            }
            Some(Some(from)) => problems.push(mismatch(from, key)),
            // Several producers: already reported.
            Some(None) => {}
            // A bad stream name: already reported.
            None if ports.invalid.contains(&key) => {}
            None => {
                let optional = info.attrs().optional;
                let instance = &bp.instances[key.0];
                if optional {
                    unfed_optional.push(Note::UnfedOptional {
                        input: format!("{}.{}", instance.name, info.field()),
                        stream: stream.to_owned(),
                    });
                }
                if !optional || bp.settings.unfed_optional == Report::Error {
                    problems.push(Problem::UnfedInput {
                        input: port_name(bp, key),
                        stream: stream.to_owned(),
                        suggestion: suggest_stream(bp, ports, &producers, key),
                        optional,
                    });
                }
            }
        }
    }
    Matching {
        producers,
        feeds,
        unfed_optional,
    }
}

/// The producer an input autoconnects to: `Some(Some(port))`, `Some(None)` when the
/// stream has several producers (reported elsewhere), `None` when it has none. A byte
/// input named `<stream>/<suffix>` (`color_image/compressed`) listens to `<stream>`.
/// An instance never feeds its own input (a filter with one name in and out).
fn find_producer(
    producers: &BTreeMap<String, Vec<PortKey>>,
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

/// A stream an unfed input probably meant, among the streams of its message type (by
/// the names it would listen to: a byte input also under `<stream>/<suffix>`): a close
/// name, else the same name under another namespace, else the only stream of its type.
fn suggest_stream(
    bp: &Blueprint,
    ports: &Ports,
    producers: &BTreeMap<String, Vec<PortKey>>,
    input: PortKey,
) -> Option<StreamSuggestion> {
    let info = ports.info(input);
    let stream = ports.stream(input);
    let suffix = info.transport().codec().map(|c| c.stream_suffix());
    if !bp.autoconnect && producers.contains_key(stream) {
        return Some(StreamSuggestion {
            stream: stream.to_owned(),
            remap: stream.to_owned(),
            reason: SuggestionReason::AutoconnectOff,
        });
    }
    let same_type: Vec<&str> = producers
        .iter()
        .filter(|(_, outputs)| {
            outputs
                .iter()
                .any(|&o| o.0 != input.0 && ports.info(o).message() == info.message())
        })
        .filter(|(s, _)| s.as_str() != stream)
        .map(|(s, _)| s.as_str())
        .collect();
    // What the input could write to listen to each of them.
    let names: Vec<String> = same_type
        .iter()
        .flat_map(|s| {
            let encoded = suffix.map(|suffix| format!("{s}/{suffix}"));
            std::iter::once((*s).to_owned()).chain(encoded)
        })
        .collect();
    let namespace = &bp.instances[input.0].namespace;
    let suggestion = |stream: &str, reason| {
        Some(StreamSuggestion {
            stream: stream.to_owned(),
            remap: if namespace.is_empty() {
                stream.to_owned()
            } else {
                format!("/{stream}")
            },
            reason,
        })
    };
    if let Some(close) = names::did_you_mean(stream, names.iter().map(String::as_str)) {
        return suggestion(close, SuggestionReason::CloseName);
    }
    // The name the input gave, without the instance's namespace.
    let relative = stream
        .strip_prefix(namespace.as_str())
        .and_then(|s| s.strip_prefix('/'))
        .unwrap_or(stream);
    let tail = format!("/{relative}");
    let elsewhere: Vec<&String> = names
        .iter()
        .filter(|n| n.as_str() != stream && (n.as_str() == relative || n.ends_with(&tail)))
        .collect();
    if let [one] = elsewhere.as_slice() {
        return suggestion(one, SuggestionReason::OtherNamespace);
    }
    if let [only] = same_type.as_slice() {
        let only = match suffix {
            Some(suffix) => format!("{only}/{suffix}"),
            None => (*only).to_owned(),
        };
        return suggestion(
            &only,
            SuggestionReason::OnlyStreamOfType {
                message: info.message().rust_name(),
            },
        );
    }
    None
}

// ---------------------------------------------------------------------------------------
// Phase 3: settings.

/// Where a stream's mode comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ModeSource {
    Stream,
    Global,
    PlainOutput,
}

/// How one output's stream is carried, from the settings.
struct StreamPlan {
    producer: PortKey,
    mode: Compression,
    source: ModeSource,
    /// The codec of compressed pixel links, if any (even when its parameters were bad).
    wire_codec: Option<CodecInfo>,
    /// That codec with its validated parameters. With bad parameters (reported), its
    /// defaults, so that the other checks (a lossless conflict) still run.
    wire: Option<(CodecInfo, CodecSummary)>,
    /// The parameters the blueprint set.
    user_params: CodecParams,
    /// Those of them that came from the blueprint-wide defaults (`codec_default`), not
    /// from the stream's own settings: shown apart in the plan.
    global_params: CodecParams,
    /// The stream's codec setting was refused (unknown name, another message's codec):
    /// already reported, so a missing codec is not reported again.
    codec_refused: bool,
}

/// Per output: compression mode, codec, parameters. Reports settings for unknown
/// streams, codecs for another message, bad or codec-less parameters.
fn resolve_settings(
    bp: &Blueprint,
    ports: &Ports,
    matching: &Matching,
    problems: &mut Vec<Problem>,
) -> Vec<StreamPlan> {
    for stream in bp.stream_settings.keys() {
        if !matching.producers.contains_key(stream) {
            problems.push(Problem::UnknownStreamSetting {
                stream: stream.clone(),
                suggestion: names::did_you_mean(
                    stream,
                    matching.producers.keys().map(String::as_str),
                )
                .map(str::to_owned),
            });
        }
    }
    ports
        .outputs()
        .map(|producer| {
            let info = ports.info(producer);
            let name = ports.stream(producer);
            let settings = bp.stream_settings.get(name);
            let producer_codec = info.transport().codec();
            let (mode, source) = match settings.and_then(|s| s.compression) {
                Some(mode) => (mode, ModeSource::Stream),
                None if producer_codec.is_some() => (bp.settings.compression, ModeSource::Global),
                None => (Compression::Off, ModeSource::PlainOutput),
            };
            let mut wire_codec = producer_codec;
            let mut codec_refused = false;
            // A codec named in text is looked up among the codecs the stream's ports
            // name and the registered ones (`register_codec!`).
            let known: Vec<CodecInfo> = producer_codec
                .into_iter()
                .chain(
                    matching
                        .consumers(producer)
                        .filter_map(|(consumer, _)| ports.info(consumer).transport().codec()),
                )
                .chain(streamwire_core::registered_codecs())
                .collect();
            let chosen = match settings.map(|s| s.resolve_codec(info.message(), &known)) {
                Some(Ok(codec)) => codec,
                Some(Err(unknown)) => {
                    problems.push(Problem::UnknownCodec {
                        stream: name.to_owned(),
                        codec: unknown.name,
                        message: unknown.message,
                        known: unknown.known,
                        suggestion: unknown.suggestion,
                    });
                    wire_codec = None;
                    // Its parameters and a missing codec are that one mistake, not more.
                    codec_refused = true;
                    None
                }
                None => None,
            };
            if let Some(codec) = chosen {
                if codec.message() == info.message() {
                    wire_codec = Some(codec);
                } else {
                    problems.push(Problem::CodecForOtherMessage {
                        stream: name.to_owned(),
                        codec: codec.name(),
                        codec_message: codec.message().rust_name(),
                        stream_message: info.message().rust_name(),
                    });
                    wire_codec = None;
                    codec_refused = true;
                }
            }
            // infallible: a stream without settings has no parameters of its own
            let stream_params = settings.map(|s| s.params.clone()).unwrap_or_default();
            // Blueprint-wide defaults apply to the parameters this stream's codec has
            // (`max_width` means nothing to zstd); the stream's own settings beat them.
            let mut global_params = CodecParams::new();
            let user_params = match wire_codec {
                Some(codec) => {
                    // A key the codec knows: listed among its defaults, or one it lists only
                    // when set (`max_bitrate`), which it then does not refuse as unknown (a
                    // bad value is still reported, below, with the stream's name).
                    let known = codec.summarize(&CodecParams::new()).ok();
                    let knows = |key: &str, value: &str| {
                        known.as_ref().is_some_and(|k| k.params.get(key).is_some())
                            || !matches!(
                                codec.summarize(&CodecParams::new().with(key, value)),
                                Err(CodecError::UnknownParam { .. })
                            )
                    };
                    for (key, value) in bp.settings.codec_defaults.iter() {
                        if knows(key, value) && stream_params.get(key).is_none() {
                            global_params.set(key, value);
                        }
                    }
                    global_params.merged(&stream_params)
                }
                None => stream_params,
            };
            let wire = match wire_codec {
                Some(codec) => match codec.summarize(&user_params) {
                    Ok(summary) => Some((codec, summary)),
                    Err(e) => {
                        problems.push(Problem::InvalidCodecParams {
                            stream: name.to_owned(),
                            codec: codec.name(),
                            reason: e.to_string(),
                        });
                        codec
                            .summarize(&CodecParams::new())
                            .ok()
                            .map(|summary| (codec, summary))
                    }
                },
                None => {
                    if !user_params.is_empty() && !codec_refused {
                        problems.push(Problem::ParamsWithoutCodec {
                            stream: name.to_owned(),
                            params: user_params.to_string(),
                            producer: port_name(bp, producer),
                            message: info.message().rust_name(),
                        });
                    }
                    None
                }
            };
            StreamPlan {
                producer,
                mode,
                source,
                wire_codec,
                wire,
                user_params,
                global_params,
                codec_refused,
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Phase 4: the graph.

/// The wired graph.
struct Wired {
    graph: DiGraph<PlanNode, Link>,
    codec_nodes: Vec<CodecNode>,
    summaries: Vec<StreamSummary>,
    /// Inputs receiving lossy pixels, for the check phase.
    lossy: Vec<(PortKey, Note)>,
}

/// The graph under construction, with the codec nodes made so far.
struct GraphBuilder {
    graph: DiGraph<PlanNode, Link>,
    codec_nodes: Vec<CodecNode>,
    /// Graph node of each codec node.
    codec_graph_nodes: Vec<NodeIndex>,
    /// (producer, codec name, message type name, params) -> encoder.
    encoders: HashMap<(PortKey, &'static str, &'static str, CodecParams), CodecNodeId>,
    /// (producer, placement) -> decoder: one per receiving process and stream.
    decoders: HashMap<(PortKey, Placement), CodecNodeId>,
    /// Encoders of a stream's own wire codec and parameters.
    primary_encoders: BTreeSet<CodecNodeId>,
}

/// A link before it has an id.
struct NewLink {
    stream: String,
    payload: LinkPayload,
    locality: Locality,
    reason: LinkReason,
    explicit: bool,
}

impl GraphBuilder {
    fn node(&self, endpoint: Endpoint) -> NodeIndex {
        match endpoint {
            // Instance `i` is graph node `i`: instances are added first.
            Endpoint::Port { instance, .. } => NodeIndex::new(instance.0),
            Endpoint::Codec(id) => self.codec_graph_nodes[id.0],
        }
    }

    fn add_link(&mut self, from: Endpoint, to: Endpoint, link: NewLink) {
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

    fn add_codec(&mut self, make: impl FnOnce(CodecNodeId) -> CodecNode) -> CodecNodeId {
        let id = CodecNodeId(self.codec_nodes.len());
        self.codec_nodes.push(make(id));
        self.codec_graph_nodes
            .push(self.graph.add_node(PlanNode::Codec(id)));
        id
    }
}

fn port_endpoint((i, p): PortKey) -> Endpoint {
    Endpoint::Port {
        instance: InstanceIndex(i),
        port: PortIndex(p),
    }
}

/// One node per instance, then each stream's links and codec nodes; then the encoded
/// streams' names.
fn insert_codec_nodes(
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
struct StreamWiring<'a> {
    bp: &'a Blueprint,
    ports: &'a Ports,
    plan: &'a StreamPlan,
    name: &'a str,
    info: &'static PortInfo,
    placement: &'a Placement,
}

impl StreamWiring<'_> {
    fn wire(
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
            match input.transport() {
                Transport::Codec(codec) => {
                    self.wire_bytes(builder, problems, consumer, codec, locality, explicit);
                }
                Transport::Raw => {
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

    /// The parameters of `summary` that came from the blueprint-wide defaults.
    fn global_params(&self, summary: &CodecSummary) -> CodecParams {
        let mut set = CodecParams::new();
        for (key, _) in self.plan.global_params.iter() {
            if let Some(value) = summary.params.get(key) {
                set.set(key, value);
            }
        }
        set
    }

    /// The parameters of `summary` that the blueprint set (the rest are defaults).
    fn user_params(&self, codec: CodecInfo, summary: &CodecSummary) -> CodecParams {
        let mut set = CodecParams::new();
        if matches!(&self.plan.wire, Some((w, _)) if *w == codec) {
            for (key, _) in self.plan.user_params.iter() {
                if let Some(value) = summary.params.get(key) {
                    set.set(key, value);
                }
            }
        }
        set
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
    ) -> CodecNodeId {
        let key = (
            self.plan.producer,
            codec.name(),
            codec.message().name(),
            summary.params.clone(),
        );
        if let Some(&id) = builder.encoders.get(&key) {
            return id;
        }
        let user_params = self.user_params(codec, summary);
        let id = builder.add_codec(|id| CodecNode {
            id,
            kind: CodecKind::Encode,
            stream: self.name.to_owned(),
            // Named once every encoder of the stream is known.
            encoded_stream: String::new(),
            codec,
            params: summary.params.clone(),
            user_params,
            blueprint_params: self.global_params(summary),
            fidelity: summary.fidelity,
            placement: self.placement.clone(),
            qos: self.ports.get(self.plan.producer).qos,
        });
        builder.add_link(
            port_endpoint(self.plan.producer),
            Endpoint::Codec(id),
            NewLink {
                stream: self.name.to_owned(),
                payload: LinkPayload::Message(self.info.message()),
                locality: Locality::InProcess,
                reason: LinkReason::ToEncoder,
                explicit: false,
            },
        );
        builder.encoders.insert(key, id);
        if primary {
            builder.primary_encoders.insert(id);
        }
        id
    }

    /// The decoder of this stream in `placement`, made on first use and fed by `encoder`.
    fn decoder(
        &self,
        builder: &mut GraphBuilder,
        encoder: CodecNodeId,
        codec: CodecInfo,
        summary: &CodecSummary,
        placement: &Placement,
        reason: LinkReason,
    ) -> CodecNodeId {
        let key = (self.plan.producer, placement.clone());
        if let Some(&id) = builder.decoders.get(&key) {
            return id;
        }
        let user_params = self.user_params(codec, summary);
        let id = builder.add_codec(|id| CodecNode {
            id,
            kind: CodecKind::Decode,
            stream: self.name.to_owned(),
            encoded_stream: String::new(),
            codec,
            params: summary.params.clone(),
            user_params,
            blueprint_params: self.global_params(summary),
            fidelity: summary.fidelity,
            placement: placement.clone(),
            qos: self.ports.get(self.plan.producer).qos,
        });
        builder.add_link(
            Endpoint::Codec(encoder),
            Endpoint::Codec(id),
            NewLink {
                stream: String::new(),
                payload: LinkPayload::Encoded(codec),
                locality: self.placement.locality_to(placement),
                reason,
                explicit: false,
            },
        );
        builder.decoders.insert(key, id);
        id
    }
}

/// Gives each codec node the QoS of the strictest consumer it serves (RFC.md section 9):
/// its queue (and, for an encoder, its encoded stream's sender and wire) keeps what that
/// consumer keeps, so that a `keep_all` input behind an encode and a decode node loses
/// nothing there. History: keep-all over any depth, the deeper depth; reliability:
/// reliable over best effort. Durability stays the output's (a codec node keeps no
/// history of its own).
fn serve_consumers_qos(builder: &mut GraphBuilder, ports: &Ports) {
    // A decoder's consumers are ports; an encoder's are ports and decoders: two passes
    // reach every encoder through its decoders, a third finds nothing to change.
    let mut changed = true;
    while changed {
        changed = false;
        for link in builder.graph.edge_weights() {
            let Endpoint::Codec(from) = link.from else {
                continue;
            };
            let served = match link.to {
                Endpoint::Port { instance, port } => ports.get((instance.0, port.0)).qos,
                Endpoint::Codec(to) => builder.codec_nodes[to.0].qos,
            };
            let node = &mut builder.codec_nodes[from.0];
            let raised = stricter(node.qos, served);
            if raised != node.qos {
                node.qos = raised;
                changed = true;
            }
        }
    }
}

/// `kept`, raised to keep and deliver at least what `served` asks for.
fn stricter(kept: Qos, served: Qos) -> Qos {
    Qos {
        history: kept.history.strictest(served.history),
        reliability: if served.reliability == Reliability::Reliable {
            Reliability::Reliable
        } else {
            kept.reliability
        },
        durability: kept.durability,
    }
}

/// Names encoded streams `<stream>/<suffix>` (`color_image/compressed`), ROS style. When
/// one stream has several encoders, the stream's own wire codec keeps that name and the
/// others get `/<codec>` appended.
fn name_encoded_streams(
    bp: &Blueprint,
    builder: &mut GraphBuilder,
    producers: &BTreeMap<String, Vec<PortKey>>,
    problems: &mut Vec<Problem>,
) {
    let mut encoders: Vec<CodecNodeId> = builder.encoders.values().copied().collect();
    // The stream's own codec first, then in creation order.
    encoders.sort_by_key(|&id| (!builder.primary_encoders.contains(&id), id));
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut names_of: HashMap<CodecNodeId, String> = HashMap::new();
    for id in encoders {
        let codec = &builder.codec_nodes[id.0];
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
        if let Some(&first) = producers.get(&name).and_then(|outputs| outputs.first()) {
            problems.push(Problem::EncodedNameTaken {
                stream: codec.stream.clone(),
                encoded: name.clone(),
                producer: port_name(bp, first),
            });
        }
        taken.insert(name.clone());
        names_of.insert(id, name);
    }
    // Decoders take the name of their encoder; links carrying bytes too.
    for link in builder.graph.edge_weights_mut() {
        let Endpoint::Codec(from) = link.from else {
            continue;
        };
        let Some(name) = names_of.get(&from) else {
            continue;
        };
        link.stream.clone_from(name);
        if let Endpoint::Codec(decoder) = link.to {
            builder.codec_nodes[decoder.0]
                .encoded_stream
                .clone_from(name);
        }
    }
    for (id, name) in names_of {
        builder.codec_nodes[id.0].encoded_stream = name;
    }
}

// ---------------------------------------------------------------------------------------
// Phase 5: checks.

/// QoS of every feed, lossy pixels, wire names, unfed optional inputs: problems for
/// what is an error, notes (and log lines with `Warn`) for the rest.
fn check(
    bp: &Blueprint,
    ports: &Ports,
    matching: &Matching,
    wired: &Wired,
    problems: &mut Vec<Problem>,
) -> Vec<Note> {
    let mut notes = Vec::new();
    check_qos(bp, ports, matching, problems, &mut notes);
    check_lossy_path(bp, ports, matching, problems, &mut notes);
    check_blocking_fan_out(bp, ports, matching, &mut notes);

    // Lossy inputs: listed always; logged with Warn; errors with Error.
    for (key, note) in &wired.lossy {
        if let Note::LossyPixels {
            stream,
            codec,
            fidelity,
            ..
        } = note
        {
            match bp.settings.lossy_pixels {
                Report::Ignore => {}
                Report::Warn => tracing::warn!(stream = %stream, codec, "{note}"),
                Report::Error => problems.push(Problem::LossyPixels {
                    input: port_name(bp, *key),
                    stream: stream.clone(),
                    codec,
                    fidelity: fidelity.to_string(),
                }),
            }
        }
        notes.push(note.clone());
    }

    if bp.settings.unfed_optional == Report::Warn {
        for note in &matching.unfed_optional {
            tracing::warn!("{note}");
        }
    }
    notes.extend(matching.unfed_optional.iter().cloned());

    check_wire_names(ports, wired, problems);
    notes
}

/// What keeps output QoS `output` from satisfying input QoS `input`, as ROS 2 matches
/// them: a best-effort output cannot feed a reliable input, a volatile output cannot
/// feed a transient-local input. Queue depths may differ.
pub(crate) fn qos_mismatches(output: &Qos, input: &Qos) -> Vec<String> {
    let mut reasons = Vec::new();
    if output.reliability == Reliability::BestEffort && input.reliability == Reliability::Reliable {
        reasons.push(
            "the output is best_effort (it may drop messages) and the input wants reliable \
             delivery"
                .to_owned(),
        );
    }
    if output.durability == Durability::Volatile && input.durability == Durability::TransientLocal {
        reasons.push(
            "the output is volatile (it keeps nothing for late joiners) and the input wants \
             transient_local"
                .to_owned(),
        );
    }
    reasons
}

fn check_qos(
    bp: &Blueprint,
    ports: &Ports,
    matching: &Matching,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<Note>,
) {
    for (&to, feed) in &matching.feeds {
        let (output, input) = (ports.get(feed.from), ports.get(to));
        let reasons = qos_mismatches(&output.qos, &input.qos);
        if reasons.is_empty() {
            continue;
        }
        if bp.settings.incompatible_qos == Report::Error {
            problems.push(Problem::IncompatibleQos {
                stream: output.stream.clone(),
                output: port_name(bp, feed.from),
                output_qos: output.qos,
                output_origin: output.qos_origin,
                input: port_name(bp, to),
                input_qos: input.qos,
                input_origin: input.qos_origin,
                reasons,
            });
            continue;
        }
        let short =
            |key: PortKey| format!("{}.{}", bp.instances[key.0].name, ports.info(key).field());
        let note = Note::IncompatibleQos {
            output: short(feed.from),
            input: short(to),
            stream: output.stream.clone(),
            reasons,
        };
        if bp.settings.incompatible_qos == Report::Warn {
            tracing::warn!("{note}");
        }
        notes.push(note);
    }
}

/// A `keep_all` input fed from another process by a `best_effort` output: every queue on
/// the way keeps all for it, but the wire may lose what nothing resends. (A reliable
/// input there is already an incompatible QoS.)
fn check_lossy_path(
    bp: &Blueprint,
    ports: &Ports,
    matching: &Matching,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<Note>,
) {
    for (&to, feed) in &matching.feeds {
        let (output, input) = (ports.get(feed.from), ports.get(to));
        let crosses = bp.instances[feed.from.0].placement != bp.instances[to.0].placement;
        let lossy = crosses
            && input.qos.history == History::KeepAll
            && input.qos.reliability == Reliability::BestEffort
            && output.qos.reliability == Reliability::BestEffort;
        if !lossy {
            continue;
        }
        match bp.settings.lossy_path {
            Report::Error => problems.push(Problem::LossyPath {
                stream: output.stream.clone(),
                output: port_name(bp, feed.from),
                input: port_name(bp, to),
            }),
            report => {
                let short = |key: PortKey| {
                    format!("{}.{}", bp.instances[key.0].name, ports.info(key).field())
                };
                let note = Note::LossyPath {
                    output: short(feed.from),
                    input: short(to),
                    stream: output.stream.clone(),
                };
                if report == Report::Warn {
                    tracing::warn!("{note}");
                }
                notes.push(note);
            }
        }
    }
}

/// A keep-all input on a stream with other consumers: listed (and logged) so that a
/// stalled consumer holding back the others is not a surprise at run time.
fn check_blocking_fan_out(
    bp: &Blueprint,
    ports: &Ports,
    matching: &Matching,
    notes: &mut Vec<Note>,
) {
    let mut consumers: BTreeMap<PortKey, Vec<PortKey>> = BTreeMap::new();
    for (&to, feed) in &matching.feeds {
        consumers.entry(feed.from).or_default().push(to);
    }
    for (from, inputs) in consumers {
        if inputs.len() < 2 {
            continue;
        }
        for &input in &inputs {
            if ports.get(input).qos.history != History::KeepAll {
                continue;
            }
            let note = Note::BlockingFanOut {
                input: format!(
                    "{}.{}",
                    bp.instances[input.0].name,
                    ports.info(input).field()
                ),
                stream: ports.get(from).stream.clone(),
                others: inputs.len() - 1,
            };
            tracing::warn!("{note}");
            notes.push(note);
        }
    }
}

/// Two message types with one wire name: received bytes could not be told apart.
fn check_wire_names(ports: &Ports, wired: &Wired, problems: &mut Vec<Problem>) {
    let mut messages: Vec<MessageInfo> = Vec::new();
    for key in ports.keys() {
        let info = ports.info(key);
        messages.push(info.message());
        if let Some(codec) = info.transport().codec() {
            messages.push(codec.encoded());
        }
    }
    messages.extend(wired.codec_nodes.iter().map(|c| c.codec.encoded()));
    let mut by_name: BTreeMap<&'static str, Vec<MessageInfo>> = BTreeMap::new();
    for message in messages {
        let same = by_name.entry(message.name()).or_default();
        if !same.contains(&message) {
            same.push(message);
        }
    }
    for (name, types) in by_name {
        if let [first, second, ..] = types.as_slice() {
            problems.push(Problem::DuplicateWireName {
                name,
                types: [first.rust_name(), second.rust_name()],
            });
        }
    }
}

/// The `#[config]` fields of `module` as (field, value as JSON text), as a blueprint file
/// holds them; empty for a module without file support. A value that does not serialize
/// leaves the list empty: the settings are shown to people, the run does not need them.
fn settings_of(module: &dyn streamwire_core::ModuleValue) -> Vec<(String, String)> {
    let Some(config) = module.as_config() else {
        return Vec::new();
    };
    match serde_json::to_value(config) {
        Ok(serde_json::Value::Object(fields)) => fields
            .into_iter()
            // The module's tag is its type, shown apart.
            .filter(|(field, _)| field != "type")
            .map(|(field, value)| (field, value.to_string()))
            .collect(),
        Ok(_) | Err(_) => Vec::new(),
    }
}
