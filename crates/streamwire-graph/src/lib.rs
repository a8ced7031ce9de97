//! Blueprints: module instances wired into a plan.
//!
//! A [`Blueprint`] holds named module instances (in namespaces, placed into processes
//! and hosts), explicit typed connections and settings. [`Blueprint::build`] matches ports
//! (`autoconnect()`: by stream name and message type), inserts encode and decode nodes
//! exactly where the codec rules say, checks everything, and returns a [`Plan`] that
//! prints for a person (`Display`) and draws as Graphviz ([`Plan::to_dot`]). Every problem
//! comes back at once in a [`BuildError`], naming instances, ports and types.
//!
//! The graph is a petgraph graph kept private: the API speaks of instances, ports,
//! streams, codec nodes and links.

mod blueprint;
mod error;
mod names;
mod plan;
mod planner;
mod process;
mod render;
mod settings;
mod summary;

pub use blueprint::{Blueprint, Instance, Namespace};
pub use error::{BuildError, PortName, Problem, StreamSuggestion, SuggestionReason};
pub use plan::{
    CodecKind, CodecNode, CodecNodeId, Endpoint, InstanceIndex, InstanceNode, Link, LinkId,
    LinkPayload, LinkReason, Note, Plan, PlanPort, PortIndex, QosOrigin, QosSource,
};
pub use process::ProcessView;
pub use settings::{
    AutoTable, Compression, Locality, Placement, Report, StreamSettings, WireFormat,
};
pub use summary::{CodecNodeSummary, InstanceSummary, LinkSummary, PlanSummary, PortSummary};
