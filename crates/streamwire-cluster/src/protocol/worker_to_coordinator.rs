//! What a worker asks of its coordinator.

use serde::{Deserialize, Serialize};
use streamwire_runtime::{RunReport, RunStats};

/// "May I run this process of your plan?" Sent until the coordinator answers, for at most
/// the join timeout.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JoinRequest {
    /// The protocol version the worker speaks ([`super::VERSION`]; a worker too old to
    /// say is version 1).
    #[serde(default = "version_one")]
    pub version: u32,
    /// The process it runs, `host/process`.
    pub process: String,
    /// Its plan's [hash](crate::plan_hash).
    pub plan_hash: String,
    /// Its process id (for the coordinator's messages).
    pub pid: u32,
    /// Whether the worker's session offers shared memory (a worker that does not say,
    /// does not).
    #[serde(default)]
    pub shared_memory: bool,
    /// The wire frame format versions the worker reads
    /// ([`FORMAT_VERSIONS`](streamwire_transport::FORMAT_VERSIONS); a worker that does not
    /// say reads version 1 only).
    #[serde(default = "frame_version_one")]
    pub frame_versions: Vec<u16>,
}

fn version_one() -> u32 {
    1
}

fn frame_version_one() -> Vec<u16> {
    vec![1]
}

/// "This is where I am": sent about every 100 ms while the worker runs, and after its
/// report until the coordinator says stop.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StateRequest {
    /// The worker's process, `host/process`.
    pub process: String,
    /// Every stream it sends to another process has a subscriber.
    pub ready: bool,
    /// A snapshot of the worker's counters, about once a second (for the coordinator's
    /// status line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<RunStats>,
    /// Lines its modules announced since its last state (`Context::announce`: a relay's
    /// address), for the coordinator to print (a coordinator too old to know the field
    /// ignores it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

/// "My part of the run ended; here is its report."
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReportRequest {
    /// The worker's process, `host/process`.
    pub process: String,
    /// Its report.
    pub report: RunReport,
}
