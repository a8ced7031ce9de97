//! [`Plan::verify`]: the plan's invariants checked after the fact (every input fed once
//! with the payload it wants, every codec node between compatible ends and in the right
//! process, no duplicated encoder or decoder), so that tests catch a planner that breaks
//! a rule of RFC.md. Apart because it is test insurance, not part of building a plan.

use std::collections::{BTreeMap, BTreeSet};

use petgraph::Direction as EdgeDirection;
use petgraph::visit::EdgeRef;
use streamwire_core::{Direction, PayloadForm};

use super::{CodecKind, CodecNode, Endpoint, InstanceNode, Link, LinkPayload, Plan, PlanNode};
use crate::settings::Locality;

impl Plan {
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
                match (port.info.payload_form(), link.payload) {
                    (PayloadForm::Raw, LinkPayload::Message(m)) if m == port.info.message() => {}
                    (PayloadForm::Codec(want), LinkPayload::Encoded(got)) if want == got => {}
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
    use streamwire_core::{Compressed, In, Out};
    use streamwire_macros::Module;
    use streamwire_msgs::Image;

    use super::*;
    use crate::plan::{CodecNodeId, InstanceIndex, LinkId, PortIndex};
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
}
