//! How a run behaves ([`RunOptions`]), and why it could not start ([`StartError`],
//! [`RunError`]).

use std::sync::Arc;
use std::time::Duration;

use streamwire_transport::{Transport, TransportError};

use crate::clock::{Clock, SystemClock};
use crate::partition::{Partitions, StartGate};

/// How a run behaves: its clock, queue bounds and deadlines.
#[derive(Clone)]
pub struct RunOptions {
    /// The run clock (default: wall time). Tests pass a [`ManualClock`](crate::ManualClock).
    pub clock: Arc<dyn Clock>,
    /// How long `stop` waits for threads to return before naming them (default 2 s).
    pub stop_deadline: Duration,
    /// Depth of a `keep_all` input's queue (default 10).
    pub keep_all_depth: usize,
    /// How long a producer waits on a full `keep_all` queue before dropping, run-clock
    /// time (default 100 ms).
    pub keep_all_deadline: Duration,
    /// A step running longer than this marks its instance `stalled` (default 1 s).
    pub stall_after: Duration,
    /// Depth of a tap's keep-last queue (default 16).
    pub tap_depth: usize,
    /// How the plan's processes run here (default: each is a partition, joined to the
    /// others by the loopback transport).
    pub partitions: Partitions,
    /// The transport joining partitions (default: a new
    /// [`Loopback`](streamwire_transport::Loopback) per run). Pass a clone of your own
    /// loopback to put frames on it from a test.
    pub transport: Option<Arc<dyn Transport>>,
    /// Run only this planned process (`host/process`, as the plan names it) here: its
    /// instances and codec nodes start, the rest of the plan runs elsewhere and is reached
    /// through [`transport`](RunOptions::transport) (a worker of a distributed run).
    /// Default: every process here.
    pub local: Option<String>,
    /// Hold the modules before their first step until this gate opens (default: start at
    /// once).
    pub start_gate: Option<StartGate>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            clock: Arc::new(SystemClock),
            stop_deadline: Duration::from_secs(2),
            keep_all_depth: 10,
            keep_all_deadline: Duration::from_millis(100),
            stall_after: Duration::from_secs(1),
            tap_depth: 16,
            partitions: Partitions::default(),
            transport: None,
            local: None,
            start_gate: None,
        }
    }
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("stop_deadline", &self.stop_deadline)
            .field("keep_all_depth", &self.keep_all_depth)
            .field("keep_all_deadline", &self.keep_all_deadline)
            .field("stall_after", &self.stall_after)
            .field("tap_depth", &self.tap_depth)
            .field("partitions", &self.partitions)
            .field("transport", &self.transport.as_ref().map(|t| t.name()))
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A module type has no `impl Node`: it describes ports but does nothing.
    #[error(
        "instance `{instance}` ({module_type}) has no behaviour: implement `streamwire::Node` for `{module_type}` (its `step` is what runs)"
    )]
    NoBehaviour {
        /// The instance.
        instance: String,
        /// Its module type.
        module_type: &'static str,
    },
    /// A module's trigger cannot fire.
    #[error("instance `{instance}` ({module_type}): {reason}")]
    BadTrigger {
        /// The instance.
        instance: String,
        /// Its module type.
        module_type: &'static str,
        /// What is wrong, and what to write instead.
        reason: String,
    },
    /// A codec node could not be built from the plan's parameters.
    #[error("codec node `{node}` cannot be built: {error}")]
    Codec {
        /// The node, e.g. `encode jpeg color_image`.
        node: String,
        /// The codec's error.
        #[source]
        error: streamwire_core::CodecError,
    },
    /// A port refused its binding.
    #[error("port `{port}` cannot be bound: {error}")]
    Bind {
        /// `instance.port`.
        port: String,
        /// Why.
        #[source]
        error: streamwire_core::PortError,
    },
    /// The transport refused a publisher or a subscription.
    #[error("stream `{stream}` cannot cross between partitions")]
    Transport {
        /// The stream.
        stream: String,
        /// Why.
        #[source]
        error: TransportError,
    },
    /// The process asked to run here is not one of the plan's.
    #[error("no process `{process}` in the plan (processes: {known})")]
    UnknownProcess {
        /// The name asked for.
        process: String,
        /// The plan's processes, comma separated.
        known: String,
    },
    /// The operating system refused a thread.
    #[error("cannot start the thread of `{name}`")]
    Spawn {
        /// The thread's name.
        name: String,
        /// The OS error.
        #[source]
        error: std::io::Error,
    },
}

/// Why `blueprint.run(..)` failed: the blueprint did not build, or the run did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The blueprint has problems (each named in the error).
    #[error(transparent)]
    Build(#[from] streamwire_graph::BuildError),
    /// The run could not start.
    #[error(transparent)]
    Start(#[from] StartError),
}
