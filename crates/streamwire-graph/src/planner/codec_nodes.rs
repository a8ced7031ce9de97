//! Phase 4, the codec nodes: an encoder per (stream, codec, parameters) in the producer's
//! process and a decoder per (stream, receiving process), each made on first use; then,
//! once the graph is whole, the QoS each serves and the names of the encoded streams.
//! Apart from [`super::wiring`], which decides which links need them.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use streamwire_core::{CodecInfo, CodecParams, CodecSummary, Qos, Reliability};

use super::ports::Ports;
use super::wiring::{GraphBuilder, NewLink, StreamWiring, port_endpoint};
use super::{PortKey, port_name};
use crate::blueprint::Blueprint;
use crate::error::Problem;
use crate::plan::{CodecKind, CodecNode, CodecNodeId, Endpoint, LinkPayload, LinkReason};
use crate::settings::{Locality, Placement};

impl StreamWiring<'_> {
    /// The parameters of `summary` that came from the blueprint-wide defaults.
    pub(super) fn global_params(&self, summary: &CodecSummary) -> CodecParams {
        let mut set = CodecParams::new();
        for (key, _) in self.plan.global_params.iter() {
            if let Some(value) = summary.params.get(key) {
                set.set(key, value);
            }
        }
        set
    }

    /// The parameters of `summary` that the blueprint set (the rest are defaults).
    pub(super) fn user_params(&self, codec: CodecInfo, summary: &CodecSummary) -> CodecParams {
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
    pub(super) fn encoder(
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
    pub(super) fn decoder(
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
pub(super) fn serve_consumers_qos(builder: &mut GraphBuilder, ports: &Ports) {
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
pub(super) fn name_encoded_streams(
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
