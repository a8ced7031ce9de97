//! Blueprints: module instances wired into a plan.
//!
//! A [`Blueprint`] holds named module instances (in namespaces, placed into processes
//! and hosts), explicit typed connections and settings. [`Blueprint::build`] matches ports
//! (`autoconnect()`: by stream name and message type), inserts encode and decode nodes
//! exactly where the codec rules say, checks everything, and returns a [`Plan`] that
//! prints for a person (`Display`) and draws as Graphviz ([`Plan::to_dot`]). Every problem
//! comes back at once in a [`BuildError`], naming instances, ports and types.
//!
//! A plan is the runtime's input, and speaks in ids: [`InstanceIndex`] (instance `i` of
//! the blueprint), [`PortIndex`] (field order), [`CodecNodeId`] and [`LinkId`]; every
//! [`Link`] joins two [`Endpoint`]s. Each port carries its resolved stream and effective
//! QoS ([`PlanPort`]: `#[port(..)]` values over its message kind's defaults). A plan splits
//! per process ([`Plan::processes`], [`ProcessView`]: what runs there, which links enter
//! or leave it) and serializes ([`Plan::summary`], [`PlanSummary`]).
//!
//! A blueprint's global keys (`compression`, `jpeg_quality`, ...) are one table,
//! [`keys`]: a blueprint file's top level, and the command line's `-o`, environment and
//! `config`, read each key from its row.
//!
//! The graph is a petgraph graph kept private: the API speaks of instances, ports,
//! streams, codec nodes and links.

mod blueprint;
mod error;
pub mod file;
pub mod keys;
mod names;
mod plan;
mod planner;
mod process;
mod render;
mod runnable;
mod settings;
mod summary;

pub use blueprint::{Blueprint, Instance, Namespace};
pub use error::{BuildError, PortName, Problem, StreamSuggestion, SuggestionReason};
pub use file::{
    BlueprintFile, FileError, FileFormat, FileProblem, Instances, KeyLines, NamedConnection,
};
pub use keys::{GlobalKey, GlobalValues, global_key, global_keys};
pub use plan::{
    CodecKind, CodecNode, CodecNodeId, Crossing, Endpoint, FORWARDED_PREFIX, InstanceIndex,
    InstanceNode, Link, LinkId, LinkPayload, LinkReason, Note, Plan, PlanPort, PortIndex,
    QosOrigin, QosSource, forwarded_key,
};
pub use process::ProcessView;
pub use runnable::RunnablePlan;
pub use settings::{
    AutoTable, Compression, Locality, Placement, Report, StreamSettings, Supervision, WireFormat,
};
pub use summary::{CodecNodeSummary, InstanceSummary, LinkSummary, PlanSummary, PortSummary};
