//! What the coordinator answers its workers.

use serde::{Deserialize, Serialize};

/// The answer to a [`JoinRequest`](super::JoinRequest).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JoinReply {
    /// The protocol version the coordinator speaks ([`super::VERSION`]).
    #[serde(default)]
    pub version: u32,
    /// Whether the worker may run its process.
    pub accepted: bool,
    /// Why not, naming both sides (empty when accepted).
    pub reason: String,
    /// The run's id (a worker that asked any run learns which one answered).
    pub run_id: String,
}

/// The answer to a [`StateRequest`](super::StateRequest): the run's state.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StateReply {
    /// Every process is ready: open the start gate.
    pub go: bool,
    /// The run is over: stop and report.
    pub stop: bool,
    /// Taps of the worker (numbers of its taps table) whose own ingress the coordinator
    /// found silent: the worker declares their subscriptions again (issue 50). Told once
    /// per silence; absent from an older coordinator's replies.
    #[serde(default)]
    pub resubscribe_taps: Vec<u64>,
}
