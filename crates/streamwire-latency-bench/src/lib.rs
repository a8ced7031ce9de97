//! The latency and throughput suite of streamwire (`streamwire bench latency`).
//!
//! **Method.** A *pinger* module keeps one message in flight: it publishes a payload
//! (its sequence number in the first 8 bytes), an *echo* module publishes the same bytes
//! back, and the pinger records the round trip on its own clock (so two processes need no
//! shared clock) and sends the next. The latency reported is half the round trip (the
//! payload travels both ways, as zenoh's `z_ping` counts), after a warm-up of 20 round
//! trips per size that are not recorded. Throughput: a burst of messages
//! (keep-all, reliable), each acknowledged by an empty message; msg/s is the burst's
//! length over first send to last ack, and what never got its ack is reported as lost.
//!
//! **Routes**, each the same pinger and echo:
//! - `in-process`: one process, zero-copy hand-off between the two module threads;
//!   baseline `bare-channel`, the same round trip over a bounded std channel between two
//!   threads.
//! - `loopback`: pinger and echo in two partitions of one process, every message a wire
//!   frame through the loopback transport.
//! - `zenoh`: a real distributed run of the pinger's and the echo's processes, as
//!   `streamwire run` makes one: the cluster's coordinator in this process, the pinger's
//!   worker on a thread of it, the echo's worker in a second process (this binary,
//!   started as a peer), both joining through the coordinator and running the worker's
//!   code. Closed by default (`zenoh`: mutual TLS, access control from the plan) and open
//!   (`zenoh-insecure`, TCP), shared memory off; baselines in the same invocation: bare
//!   zenoh put/subscribe over TCP between the same two kinds of processes, receiving
//!   through zenoh's FIFO handler and `recv()` on a thread of its own
//!   (`bare-zenoh-fifo`), and in the callback (`bare-zenoh-callback`).
//! - `zenoh-shm`: the same runs with shared memory on at both ends (`zenoh-shm`,
//!   `zenoh-shm-insecure`): payloads of 3 KiB and more travel through a shared pool, only
//!   a reference through the link. Baselines: bare zenoh putting a heap buffer
//!   (`bare-zenoh-shm-fifo`: zenoh copies it into its pool, inside the clock) and putting
//!   a loan of its provider written before the clock (`bare-zenoh-shm-loan`), as the
//!   pinger does.
//! - `iceoryx2`: the physical-limit baseline, zero-copy IPC with iceoryx2 between the
//!   same two kinds of processes (no network stack, no serialization): a publish-subscribe
//!   service of byte slices per size, the payload written into a loan before the clock,
//!   the echo woken by iceoryx2's event service (`iceoryx2`) or busy-waiting
//!   (`iceoryx2-busy`). Every file it makes is named after the run and removed after it.
//! - `zenoh-direct`: the pinger's and the echo's runtimes on the zenoh transport
//!   directly, without coordinator or workers, over TCP (`zenoh-direct`) and with shared
//!   memory (`zenoh-shm-direct`): what the worker path adds.
//! - `chain`: the pinger, a chain of 16 pass-through modules and back: in one process
//!   (`chain16-in-process`) and with every hop crossing zenoh between two processes
//!   (`chain16-zenoh`). Reported as the whole loop, 17 links.

mod bare;
pub mod cli;
mod iox;
mod modules;
mod peer;
mod results;
mod suite;

pub use peer::serve_peer;
pub use results::{Latency, Link, Row, Suite, Throughput, size_label};
pub use suite::{PeerCommand, run};

pub(crate) use results::{Phase, PhaseKind, PhaseResult};

/// The 10 payload sizes from 0 B to 4 MB (4 MiB): powers of 4 and 8 from 64 B, and the
/// 2,764,800 bytes of a 1280x720 RGB image.
pub const SIZES: [usize; 10] = [
    0, 64, 512, 4096, 16_384, 65_536, 262_144, 1_048_576, 2_764_800, 4_194_304,
];

/// Payloads from this size up go through shared memory where it is on: zenoh's threshold,
/// and the size from which the runtime lends shared memory (a blob's
/// [`MIN_LEN`](streamwire_core::blob::MIN_LEN)); smaller ones travel inline, copied.
pub(crate) const SHM_FROM: usize = streamwire_core::blob::MIN_LEN;

/// Sizes of the 16-hop chain by default (a loop of 17 links per sample).
pub const CHAIN_SIZES: [usize; 3] = [0, 4096, 65_536];

/// Round trips per size by default: enough for p99.9 to be ten samples deep.
pub const DEFAULT_SAMPLES: usize = 10_000;

/// Pass-through modules of the chain.
pub const CHAIN_HOPS: usize = 16;

/// What the suite can measure: the route a message takes between the pinger and the echo
/// (`--transport` on the command line; not a transport of the runtime's: `in-process` has
/// none, and `chain` is a layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Route {
    /// One process, and the bare channel baseline.
    InProcess,
    /// Two partitions of one process over the loopback transport.
    Loopback,
    /// Two processes as a distributed run's workers over zenoh, closed and open, and the
    /// bare zenoh baselines.
    Zenoh,
    /// Two processes over the zenoh transport without the cluster's workers.
    ZenohDirect,
    /// The workers with shared memory at both ends, and the bare baselines.
    ZenohShm,
    /// iceoryx2 between two processes, event-driven and busy-waiting.
    Iceoryx2,
    /// The 16-hop chain, in one process and over zenoh.
    Chain,
}

impl Route {
    /// Every route, in the order they run.
    pub const ALL: [Route; 7] = [
        Route::InProcess,
        Route::Loopback,
        Route::Zenoh,
        Route::ZenohDirect,
        Route::ZenohShm,
        Route::Iceoryx2,
        Route::Chain,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Route::InProcess => "in-process",
            Route::Loopback => "loopback",
            Route::Zenoh => "zenoh",
            Route::ZenohDirect => "zenoh-direct",
            Route::ZenohShm => "zenoh-shm",
            Route::Iceoryx2 => "iceoryx2",
            Route::Chain => "chain",
        }
    }
}

impl std::str::FromStr for Route {
    type Err = String;

    fn from_str(s: &str) -> Result<Route, String> {
        Route::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Route::ALL.iter().map(|t| t.name()).collect();
                format!("unknown transport `{s}`: one of {}", names.join(", "))
            })
    }
}

/// Why the suite could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The benchmark's blueprint did not build or start.
    #[error("the benchmark's run: {0}")]
    Run(String),
    /// zenoh refused something.
    #[error("zenoh: {0}")]
    Zenoh(String),
    /// iceoryx2 refused something.
    #[error("iceoryx2: {0}")]
    Iceoryx2(String),
    /// The peer process could not start, or did not answer.
    #[error("the peer process: {0}")]
    Peer(String),
    /// The peer's command line was not understood.
    #[error("bench peer arguments: {0}")]
    Arguments(String),
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct Options {
    /// Round trips per size (after the warm-up).
    pub samples: usize,
    /// Payload sizes in bytes.
    pub sizes: Vec<usize>,
    /// Payload sizes of the chain.
    pub chain_sizes: Vec<usize>,
    /// What to run.
    pub routes: Vec<Route>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            samples: DEFAULT_SAMPLES,
            sizes: SIZES.to_vec(),
            chain_sizes: CHAIN_SIZES.to_vec(),
            routes: Route::ALL.to_vec(),
        }
    }
}
