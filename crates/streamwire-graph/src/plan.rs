//! The wired graph: instances, codec nodes and the links between them, each with the
//! reason it carries what it carries.//!
//! This module holds the plan itself, its ids and its accessors; its parts are apart:
//! [`nodes`] (instances, ports, codec nodes), [`links`], [`crossings`] (each stream carried
//! once to another host), [`notes`], and [`verify`] (the invariants, a test helper). Printing is in `crate::render`.

mod crossings;
mod links;
mod nodes;
mod notes;
mod verify;

pub use crossings::{Crossing, FORWARDED_PREFIX, forwarded_key};
pub use links::{Endpoint, Link, LinkPayload, LinkReason};
pub use nodes::{CodecKind, CodecNode, InstanceNode, PlanPort, QosOrigin, QosSource};
pub use notes::Note;

use std::fmt;

use petgraph::graph::{DiGraph, EdgeIndex, NodeIndex};
use serde::{Deserialize, Serialize};
use streamwire_core::{CodecInfo, MessageInfo};

use crate::settings::{AutoTable, Compression, Placement, Report};

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
/// A node of the plan graph: an instance or a codec node, by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PlanNode {
    Instance(InstanceIndex),
    Codec(CodecNodeId),
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
}
