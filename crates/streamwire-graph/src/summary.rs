//! A serializable summary of a plan, for tools (`graph --format json`) and files.

use serde::{Deserialize, Serialize};
use streamwire_core::{CodecParams, Direction, Fidelity, Qos, Taps};

use crate::plan::{
    CodecKind, CodecNodeId, Endpoint, InstanceIndex, LinkId, LinkPayload, Plan, PlanNode,
    PortIndex, QosOrigin,
};

/// Everything a plan says, as plain data: instances with their ports, codec nodes and
/// links by id (with names alongside), notes. Serialize it with any serde format.
///
/// ```
/// # use streamwire_graph::Blueprint;
/// # use streamwire_core::{In, Out};
/// # use streamwire_macros::Module;
/// # use streamwire_msgs::Image;
/// # #[derive(Module)] #[module(crate = streamwire_core)]
/// # struct Camera { color_image: Out<Image> }
/// let mut blueprint = Blueprint::new();
/// blueprint.add("cam", Camera { color_image: Out::new() });
/// let summary = blueprint.build()?.summary();
/// assert_eq!(summary.instances[0].ports[0].stream, "color_image");
/// # Ok::<(), streamwire_graph::BuildError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PlanSummary {
    /// The instances, in plan order.
    pub instances: Vec<InstanceSummary>,
    /// The codec nodes, in plan order.
    pub codec_nodes: Vec<CodecNodeSummary>,
    /// The links, in plan order.
    pub links: Vec<LinkSummary>,
    /// The notes, as the plan prints them.
    pub notes: Vec<String>,
}

/// An instance of a [`PlanSummary`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InstanceSummary {
    /// Its id.
    pub id: InstanceIndex,
    /// Its node in every rendering (`instance:camera`): the identity DOT, Mermaid and this
    /// summary share, which links name in `from_node` and `to_node`.
    #[serde(default)]
    pub node: String,
    /// Full name.
    pub name: String,
    /// Module type.
    pub module_type: String,
    /// `host/process`.
    pub placement: String,
    /// Its ports, in field order.
    pub ports: Vec<PortSummary>,
    /// The streams it taps while it runs (left out when none).
    #[serde(default, skip_serializing_if = "Taps::is_none")]
    pub taps: Taps,
}

/// A port of an [`InstanceSummary`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PortSummary {
    /// Its index.
    pub index: PortIndex,
    /// The field.
    pub field: String,
    /// Input or output.
    pub direction: Direction,
    /// The resolved stream.
    pub stream: String,
    /// The type as written (`In<Compressed<Image>>`).
    pub type_name: String,
    /// The message's wire name.
    pub message: String,
    /// The codec of a `Compressed<..>` port.
    pub codec: Option<String>,
    /// `#[port(optional)]`.
    pub optional: bool,
    /// `#[port(lossless)]`.
    pub lossless: bool,
    /// Effective QoS.
    pub qos: Qos,
    /// Where each QoS value came from.
    pub qos_origin: QosOrigin,
}

/// A codec node of a [`PlanSummary`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CodecNodeSummary {
    /// Its id.
    pub id: CodecNodeId,
    /// Its node in every rendering (`decode:color_image/compressed@laptop/ui`): unique
    /// per codec node, as links name it in `from_node` and `to_node`.
    #[serde(default)]
    pub node: String,
    /// Encode or decode.
    pub kind: CodecKind,
    /// The codec's name.
    pub codec: String,
    /// The stream.
    pub stream: String,
    /// The encoded stream.
    pub encoded_stream: String,
    /// Every parameter.
    pub params: CodecParams,
    /// The parameters the blueprint set.
    pub user_params: CodecParams,
    /// Those of `user_params` that came from the blueprint-wide defaults.
    #[serde(default, skip_serializing_if = "CodecParams::is_empty")]
    pub blueprint_params: CodecParams,
    /// What decoding gives back.
    pub fidelity: Fidelity,
    /// `host/process`.
    pub placement: String,
    /// QoS of what it sends.
    pub qos: Qos,
}

/// A link of a [`PlanSummary`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LinkSummary {
    /// Its id.
    pub id: LinkId,
    /// Where it starts.
    pub from: Endpoint,
    /// Where it ends.
    pub to: Endpoint,
    /// `from` as plans print it.
    pub from_name: String,
    /// The node it leaves (an instance's or codec node's `node`).
    #[serde(default)]
    pub from_node: String,
    /// The node it enters.
    #[serde(default)]
    pub to_node: String,
    /// `to` as plans print it.
    pub to_name: String,
    /// The stream or encoded stream.
    pub stream: String,
    /// Wire name of the message that travels.
    pub message: String,
    /// The codec, when it carries encoded bytes.
    pub codec: Option<String>,
    /// `in-process`, `same-host`, `cross-host`.
    pub locality: String,
    /// Why it carries what it carries.
    pub reason: String,
    /// Made by `connect`.
    pub explicit: bool,
}

impl Plan {
    /// The plan as plain, serializable data.
    pub fn summary(&self) -> PlanSummary {
        PlanSummary {
            instances: self
                .instances()
                .map(|i| InstanceSummary {
                    id: i.id,
                    node: self.node_key(PlanNode::Instance(i.id)),
                    name: i.name.clone(),
                    module_type: i.module_type.to_owned(),
                    placement: i.placement.to_string(),
                    ports: i
                        .ports()
                        .map(|p| PortSummary {
                            index: p.index,
                            field: p.field().to_owned(),
                            direction: p.direction(),
                            stream: p.stream.clone(),
                            type_name: p.info.type_name().to_owned(),
                            message: p.info.message().name().to_owned(),
                            codec: p.info.payload_form().codec().map(|c| c.name().to_owned()),
                            optional: p.info.attrs().optional,
                            lossless: p.info.attrs().lossless,
                            qos: p.qos,
                            qos_origin: p.qos_origin,
                        })
                        .collect(),
                    taps: i.taps.clone(),
                })
                .collect(),
            codec_nodes: self
                .codec_nodes()
                .map(|c| CodecNodeSummary {
                    id: c.id,
                    node: self.node_key(PlanNode::Codec(c.id)),
                    kind: c.kind,
                    codec: c.codec.name().to_owned(),
                    stream: c.stream.clone(),
                    encoded_stream: c.encoded_stream.clone(),
                    params: c.params.clone(),
                    user_params: c.user_params.clone(),
                    blueprint_params: c.blueprint_params.clone(),
                    fidelity: c.fidelity,
                    placement: c.placement.to_string(),
                    qos: c.qos,
                })
                .collect(),
            links: self
                .links()
                .map(|l| {
                    let (message, codec) = match l.payload {
                        LinkPayload::Message(m) => (m.name(), None),
                        LinkPayload::Encoded(c) => (c.encoded().name(), Some(c.name().to_owned())),
                    };
                    LinkSummary {
                        id: l.id,
                        from: l.from,
                        to: l.to,
                        from_name: self.endpoint_name(l.from),
                        from_node: self.endpoint_key(l.from),
                        to_node: self.endpoint_key(l.to),
                        to_name: self.endpoint_name(l.to),
                        stream: l.stream.clone(),
                        message: message.to_owned(),
                        codec,
                        locality: l.locality.to_string(),
                        reason: l.reason.to_string(),
                        explicit: l.explicit,
                    }
                })
                .collect(),
            notes: self.notes().iter().map(ToString::to_string).collect(),
        }
    }
}
