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
//! **Transports**, each the same pinger and echo:
//! - `in-process`: one process, zero-copy hand-off between the two module threads;
//!   baseline `bare-channel`, the same round trip over a bounded std channel between two
//!   threads.
//! - `loopback`: pinger and echo in two partitions of one process, every message a wire
//!   frame through the loopback transport.
//! - `zenoh`: the echo in a second process (this binary, started as a peer), over the zenoh
//!   transport on 127.0.0.1; baselines in the same invocation: bare zenoh put/subscribe
//!   between the same two kinds of processes, receiving through zenoh's FIFO handler and
//!   `recv()` on a thread of its own (`bare-zenoh-fifo`), and in the callback
//!   (`bare-zenoh-callback`).
//! - `zenoh-closed`: the `zenoh` row's two processes as a closed run's workers (mutual
//!   TLS with a certificate each, and zenoh's access control generated from the plan):
//!   what closing a run costs, next to the open `zenoh` row.
//! - `zenoh-shm`: the same two processes with zenoh's shared memory on at both ends
//!   (`zenoh-shm`, and its bare baseline `bare-zenoh-shm-fifo`): payloads of 3 KB and more
//!   travel through a shared pool, only a reference through TCP.
//! - `chain`: the pinger, a chain of 16 pass-through modules and back: in one process
//!   (`chain16-in-process`) and with every hop crossing zenoh between two processes
//!   (`chain16-zenoh`). Reported as the whole loop, 17 links.

mod bare;
mod modules;

use std::fmt::Write as _;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use streamwire_cluster::{AccessRules, Credential, RunAuthority, access};
use streamwire_runtime::{Partitions, RunHandle, RunOptions, Runtime, StartGate};
use streamwire_zenoh::{SharedMemory, ZenohOptions, ZenohTransport};

/// The keep-all depth of the streamwire cells across zenoh: as deep as the FIFO channel
/// the bare zenoh baseline receives into (zenoh's default capacity, 256), so that both
/// buffer the same number of messages of a burst.
const ZENOH_KEEP_ALL_DEPTH: usize = 256;

use crate::bare::Receive;
use crate::modules::{Job, Layout};

/// The 10 payload sizes from 0 B to 4 MB (4 MiB): powers of 4 and 8 from 64 B, and the
/// 2,764,800 bytes of a 1280x720 RGB image.
pub const SIZES: [usize; 10] = [
    0, 64, 512, 4096, 16_384, 65_536, 262_144, 1_048_576, 2_764_800, 4_194_304,
];

/// Sizes of the 16-hop chain by default (a loop of 17 links per sample).
pub const CHAIN_SIZES: [usize; 3] = [0, 4096, 65_536];

/// Round trips per size by default: enough for p99.9 to be ten samples deep.
pub const DEFAULT_SAMPLES: usize = 10_000;

/// Pass-through modules of the chain.
pub const CHAIN_HOPS: usize = 16;

/// What the suite can measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Transport {
    /// One process, and the bare channel baseline.
    InProcess,
    /// Two partitions of one process over the loopback transport.
    Loopback,
    /// Two processes over zenoh, and the bare zenoh baselines.
    Zenoh,
    /// Two processes over zenoh as a closed run's workers: mutual TLS with a certificate
    /// each, and the access control generated from the plan.
    ZenohClosed,
    /// Two processes over zenoh with shared memory at both ends, and the bare baseline.
    ZenohShm,
    /// The 16-hop chain, in one process and over zenoh.
    Chain,
}

impl Transport {
    /// Every transport, in the order they run.
    pub const ALL: [Transport; 6] = [
        Transport::InProcess,
        Transport::Loopback,
        Transport::Zenoh,
        Transport::ZenohClosed,
        Transport::ZenohShm,
        Transport::Chain,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Transport::InProcess => "in-process",
            Transport::Loopback => "loopback",
            Transport::Zenoh => "zenoh",
            Transport::ZenohClosed => "zenoh-closed",
            Transport::ZenohShm => "zenoh-shm",
            Transport::Chain => "chain",
        }
    }
}

impl std::str::FromStr for Transport {
    type Err = String;

    fn from_str(s: &str) -> Result<Transport, String> {
        Transport::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Transport::ALL.iter().map(|t| t.name()).collect();
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
    pub transports: Vec<Transport>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            samples: DEFAULT_SAMPLES,
            sizes: SIZES.to_vec(),
            chain_sizes: CHAIN_SIZES.to_vec(),
            transports: Transport::ALL.to_vec(),
        }
    }
}

/// One measurement the pinger (or a baseline) asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Phase {
    pub(crate) size: usize,
    pub(crate) kind: PhaseKind,
    /// Round trips, or the burst's messages.
    pub(crate) samples: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PhaseKind {
    Latency,
    Throughput,
}

/// What one phase measured.
#[derive(Clone, Debug)]
pub(crate) struct PhaseResult {
    phase: Phase,
    /// Round trips in nanoseconds (latency phases).
    round_trips: Vec<u64>,
    /// Round trips given up, or burst messages never acknowledged.
    lost: u64,
    /// The phase's wall time (latency), first send to last ack (throughput).
    elapsed: Duration,
    /// Acks received (throughput).
    acks: u64,
}

impl PhaseResult {
    pub(crate) fn latency(
        phase: Phase,
        round_trips: Vec<u64>,
        elapsed: Duration,
        lost: u64,
    ) -> PhaseResult {
        PhaseResult {
            phase,
            round_trips,
            lost,
            elapsed,
            acks: 0,
        }
    }

    pub(crate) fn throughput(phase: Phase, acks: u64, elapsed: Duration) -> PhaseResult {
        PhaseResult {
            phase,
            round_trips: Vec::new(),
            lost: (phase.samples as u64).saturating_sub(acks),
            elapsed,
            acks,
        }
    }
}

/// Latency figures of one row, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latency {
    /// Samples.
    pub n: usize,
    /// Mean.
    pub avg: u64,
    /// Median.
    pub p50: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Smallest.
    pub min: u64,
    /// Largest.
    pub max: u64,
    /// Round trips given up after a second (counted, then sent again).
    pub lost: u64,
}

impl Latency {
    /// The figures of `samples` (nanoseconds), each divided by `divisor` (2: one way of
    /// a round trip). Percentiles by nearest rank. `None` without samples.
    pub fn of(samples: &[u64], divisor: u64, lost: u64) -> Option<Latency> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted: Vec<u64> = samples.iter().map(|s| s / divisor.max(1)).collect();
        sorted.sort_unstable();
        let n = sorted.len();
        let rank = |q: f64| {
            let index = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
            sorted[index]
        };
        let sum: u128 = sorted.iter().map(|&s| u128::from(s)).sum();
        Some(Latency {
            n,
            avg: u64::try_from(sum / n as u128).unwrap_or(u64::MAX),
            p50: rank(0.50),
            p95: rank(0.95),
            p99: rank(0.99),
            p999: rank(0.999),
            min: sorted[0],
            max: sorted[n - 1],
            lost,
        })
    }
}

/// Throughput figures of one row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Throughput {
    /// Messages acknowledged.
    pub n: u64,
    /// Messages of the burst never acknowledged.
    pub lost: u64,
    /// Acknowledged messages per second.
    pub msg_per_sec: f64,
    /// First send to last ack.
    pub elapsed: Duration,
}

/// One payload size through one transport.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The transport's label (`zenoh`, `bare-zenoh-fifo`, ...).
    pub label: String,
    /// Payload bytes.
    pub size: usize,
    /// Latency (one way, or the chain's whole loop).
    pub latency: Option<Latency>,
    /// Throughput, where measured.
    pub throughput: Option<Throughput>,
}

/// What the suite measured.
#[derive(Clone, Debug, Default)]
pub struct Suite {
    /// Round trips asked for per size.
    pub samples: usize,
    /// One per (label, size), in the order measured.
    pub rows: Vec<Row>,
    /// What was not measured, and why.
    pub notes: Vec<String>,
}

fn rows_of(label: &str, results: &[PhaseResult], divisor: u64) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for result in results {
        let index = match rows.iter().position(|r| r.size == result.phase.size) {
            Some(index) => index,
            None => {
                rows.push(Row {
                    label: label.to_owned(),
                    size: result.phase.size,
                    latency: None,
                    throughput: None,
                });
                rows.len() - 1
            }
        };
        let row = &mut rows[index];
        match result.phase.kind {
            PhaseKind::Latency => {
                row.latency = Latency::of(&result.round_trips, divisor, result.lost);
            }
            PhaseKind::Throughput => {
                let seconds = result.elapsed.as_secs_f64();
                row.throughput = Some(Throughput {
                    n: result.acks,
                    lost: result.lost,
                    msg_per_sec: if seconds > 0.0 {
                        result.acks as f64 / seconds
                    } else {
                        0.0
                    },
                    elapsed: result.elapsed,
                });
            }
        }
    }
    rows
}

/// Messages of a size's throughput burst: at most `samples`, at most 256 MiB, at least
/// 50 (or `samples`, if fewer).
fn burst_len(size: usize, samples: usize) -> usize {
    ((256 << 20) / size.max(1)).max(50).min(samples)
}

fn phases(sizes: &[usize], samples: usize, throughput: bool) -> Vec<Phase> {
    let mut phases = Vec::new();
    for &size in sizes {
        phases.push(Phase {
            size,
            kind: PhaseKind::Latency,
            samples,
        });
        if throughput {
            phases.push(Phase {
                size,
                kind: PhaseKind::Throughput,
                samples: burst_len(size, samples),
            });
        }
    }
    phases
}

/// How the suite starts its peer process: the program and the arguments before the
/// peer's own (e.g. this binary and `bench peer`). The peer runs [`serve_peer`].
pub type PeerCommand<'a> = &'a dyn Fn() -> Command;

/// Runs the suite; `progress` hears a line as each transport starts.
pub fn run(
    options: &Options,
    peer: PeerCommand<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<Suite, BenchError> {
    let mut suite = Suite {
        samples: options.samples,
        ..Suite::default()
    };
    let latency_phases = phases(&options.sizes, options.samples, true);
    let chain_phases = phases(&options.chain_sizes, options.samples, false);
    let run_id = format!("bench{}", std::process::id());
    for transport in &options.transports {
        progress(&format!("measuring {}", transport.name()));
        match transport {
            Transport::InProcess => {
                let results = in_this_process(&latency_phases, Layout::Together, 0)?;
                suite.rows.extend(rows_of("in-process", &results, 2));
                let results = bare::channel(&latency_phases)?;
                suite.rows.extend(rows_of("bare-channel", &results, 2));
            }
            Transport::Loopback => {
                let results = in_this_process(&latency_phases, Layout::Apart, 0)?;
                suite.rows.extend(rows_of("loopback", &results, 2));
            }
            Transport::Zenoh => {
                let results =
                    over_zenoh(&latency_phases, 0, &format!("{run_id}z"), peer, Link::Open)?;
                suite.rows.extend(rows_of("zenoh", &results, 2));
                for (receive, label, mode) in [
                    (Receive::Fifo, "bare-zenoh-fifo", "bare-fifo"),
                    (Receive::Callback, "bare-zenoh-callback", "bare-callback"),
                ] {
                    progress(&format!("measuring {label}"));
                    let results = bare_zenoh(
                        &latency_phases,
                        receive,
                        mode,
                        &format!("{run_id}{mode}"),
                        peer,
                        false,
                    )?;
                    suite.rows.extend(rows_of(label, &results, 2));
                }
            }
            Transport::ZenohClosed => {
                let results = over_zenoh(
                    &latency_phases,
                    0,
                    &format!("{run_id}t"),
                    peer,
                    Link::Closed,
                )?;
                suite.rows.extend(rows_of("zenoh-closed", &results, 2));
                suite.notes.push(
                    "zenoh-closed: the zenoh row's two processes as a closed run's: mutual TLS \
                     (a certificate each, from a run authority) and zenoh's access control \
                     generated from the plan"
                        .to_owned(),
                );
            }
            Transport::ZenohShm => {
                let results =
                    over_zenoh(&latency_phases, 0, &format!("{run_id}s"), peer, Link::Shm)?;
                suite.rows.extend(rows_of("zenoh-shm", &results, 2));
                progress("measuring bare-zenoh-shm-fifo");
                let results = bare_zenoh(
                    &latency_phases,
                    Receive::Fifo,
                    "bare-fifo",
                    &format!("{run_id}sb"),
                    peer,
                    true,
                )?;
                suite
                    .rows
                    .extend(rows_of("bare-zenoh-shm-fifo", &results, 2));
                suite.notes.push(
                    "zenoh-shm: zenoh's shared memory on at both ends (a 64 MiB pool each); \
                     zenoh makes the pool on the first large payload, so the warm-up round \
                     trips cover it"
                        .to_owned(),
                );
            }
            Transport::Chain => {
                let results = in_this_process(&chain_phases, Layout::Together, CHAIN_HOPS)?;
                suite
                    .rows
                    .extend(rows_of("chain16-in-process", &results, 1));
                progress("measuring chain16-zenoh");
                let results = over_zenoh(
                    &chain_phases,
                    CHAIN_HOPS,
                    &format!("{run_id}c"),
                    peer,
                    Link::Open,
                )?;
                suite.rows.extend(rows_of("chain16-zenoh", &results, 1));
            }
        }
    }
    Ok(suite)
}

/// How long the suite waits for a phase to end before it gives up.
const PHASE_TIMEOUT: Duration = Duration::from_secs(600);

/// Waits until the pinger has done its job (or the run ended, or a phase took too long).
fn wait_job(job: &Job, handle: &mut RunHandle) -> Result<(), BenchError> {
    let mut done_phases = 0;
    let mut since = Instant::now();
    while !job.done.load(Ordering::SeqCst) {
        if let Some(reason) = handle.poll_end() {
            return Err(BenchError::Run(format!(
                "the run ended ({reason:?}) before the measurements did"
            )));
        }
        let now_done = job.results.lock().len();
        if now_done != done_phases {
            done_phases = now_done;
            since = Instant::now();
        } else if since.elapsed() > PHASE_TIMEOUT {
            return Err(BenchError::Run(format!(
                "phase {} did not end within {} s",
                done_phases + 1,
                PHASE_TIMEOUT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn take_results(job: &Job) -> Vec<PhaseResult> {
    std::mem::take(&mut *job.results.lock())
}

/// The pinger and the echo (or chain) in this process: one partition (`Together`) or
/// two joined by the loopback (`Apart`).
fn in_this_process(
    phases: &[Phase],
    layout: Layout,
    hops: usize,
) -> Result<Vec<PhaseResult>, BenchError> {
    let job = Arc::new(Job {
        phases: phases.to_vec(),
        ..Job::default()
    });
    let runnable = modules::blueprint(job.clone(), layout, hops)
        .into_runnable()
        .map_err(|e| BenchError::Run(e.to_string()))?;
    let mut handle = Runtime::start(
        runnable,
        RunOptions {
            partitions: Partitions::PerProcess,
            ..RunOptions::default()
        },
    )
    .map_err(|e| BenchError::Run(e.to_string()))?;
    let outcome = wait_job(&job, &mut handle);
    handle.stop();
    let report = handle.wait_timeout(Duration::from_secs(5));
    outcome?;
    if let Some(failure) = report.failure {
        return Err(BenchError::Run(failure));
    }
    Ok(take_results(&job))
}

/// A peer process, killed if still running when dropped; it stops when its standard
/// input closes.
struct Peer {
    child: Child,
}

impl Peer {
    fn start(peer: PeerCommand<'_>, args: &[String]) -> Result<Peer, BenchError> {
        let mut command = peer();
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null());
        let child = command
            .spawn()
            .map_err(|e| BenchError::Peer(format!("cannot start {command:?}: {e}")))?;
        Ok(Peer { child })
    }

    /// Closes its standard input and waits up to 5 s for it to exit.
    fn finish(mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// How the suite's two processes are joined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    /// TCP, no access control.
    Open,
    /// TCP, shared memory at both ends.
    Shm,
    /// A closed run: mutual TLS and the plan's access control.
    Closed,
}

fn open_session(
    run_id: &str,
    connect: Vec<String>,
    shm: bool,
) -> Result<ZenohTransport, BenchError> {
    open_member(run_id, connect, shm, None)
}

/// A session, as a closed run's member with `member` (its credential and the run's
/// rules).
fn open_member(
    run_id: &str,
    connect: Vec<String>,
    shm: bool,
    member: Option<(&Credential, &AccessRules)>,
) -> Result<ZenohTransport, BenchError> {
    let (listen, connect, settings) = match member {
        Some((credential, rules)) => (
            access::closed_endpoints(&ZenohOptions::default().listen),
            access::closed_endpoints(&connect),
            streamwire_zenoh::Settings(credential.zenoh_settings(rules)),
        ),
        None => (ZenohOptions::default().listen, connect, Default::default()),
    };
    ZenohTransport::open(&ZenohOptions {
        run_id: run_id.to_owned(),
        listen,
        connect,
        settings,
        shared_memory: if shm {
            SharedMemory {
                enabled: true,
                pool_bytes: 64 << 20,
            }
        } else {
            SharedMemory::off()
        },
        ..ZenohOptions::default()
    })
    .map_err(|e| BenchError::Zenoh(e.to_string()))
}

/// A closed run's credentials for the suite's two processes: the home's, the rules, and
/// the peer's secret file (0600, removed with it).
struct ClosedBench {
    home: Credential,
    rules: AccessRules,
    peer_file: std::path::PathBuf,
}

impl ClosedBench {
    fn new(
        runnable: &streamwire_graph::RunnablePlan,
        run_id: &str,
        home: &str,
    ) -> Result<ClosedBench, BenchError> {
        let credential = |e: streamwire_cluster::ClusterError| BenchError::Zenoh(e.to_string());
        let authority = RunAuthority::new(run_id).map_err(credential)?;
        let peer = process_name(runnable, modules::PEER)?;
        let peer_file = access::secret_file(&access::run_folder(run_id), &peer);
        authority
            .issue(&peer)
            .and_then(|c| c.write_file(&peer_file))
            .map_err(credential)?;
        Ok(ClosedBench {
            home: authority.issue(home).map_err(credential)?,
            rules: AccessRules::from_plan(runnable.plan(), run_id),
            peer_file,
        })
    }
}

impl Drop for ClosedBench {
    fn drop(&mut self) {
        if let Some(folder) = self.peer_file.parent() {
            let _ = std::fs::remove_dir_all(folder);
        }
    }
}

fn peer_args(transport: &ZenohTransport, run_id: &str, mode: &str, hops: usize) -> Vec<String> {
    let mut args = vec![
        "--shm".to_owned(),
        transport.shared_memory().to_string(),
        "--run-id".to_owned(),
        run_id.to_owned(),
        "--mode".to_owned(),
        mode.to_owned(),
        "--hops".to_owned(),
        hops.to_string(),
    ];
    for locator in transport.locators() {
        args.push("--connect".to_owned());
        args.push(locator);
    }
    args
}

/// The pinger here, the echo (or the odd hops) in a peer process, over zenoh.
fn over_zenoh(
    phases: &[Phase],
    hops: usize,
    run_id: &str,
    peer: PeerCommand<'_>,
    link: Link,
) -> Result<Vec<PhaseResult>, BenchError> {
    let job = Arc::new(Job {
        phases: phases.to_vec(),
        ..Job::default()
    });
    let bp = modules::blueprint(job.clone(), Layout::Apart, hops);
    let runnable = bp
        .into_runnable()
        .map_err(|e| BenchError::Run(e.to_string()))?;
    let home = process_name(&runnable, modules::HOME)?;
    let closed = (link == Link::Closed)
        .then(|| ClosedBench::new(&runnable, run_id, &home))
        .transpose()?;
    let transport = open_member(
        run_id,
        Vec::new(),
        link == Link::Shm,
        closed.as_ref().map(|c| (&c.home, &c.rules)),
    )?;
    let mut args = peer_args(&transport, run_id, "streamwire", hops);
    if let Some(closed) = &closed {
        args.extend([
            "--secret-file".to_owned(),
            closed.peer_file.display().to_string(),
        ]);
    }
    let child = Peer::start(peer, &args)?;
    let gate = StartGate::closed();
    let mut handle = Runtime::start(
        runnable,
        RunOptions {
            transport: Some(Arc::new(transport)),
            local: Some(home),
            start_gate: Some(gate.clone()),
            keep_all_depth: ZENOH_KEEP_ALL_DEPTH,
            ..RunOptions::default()
        },
    )
    .map_err(|e| BenchError::Run(e.to_string()))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !handle.unmatched_links().is_empty() {
        if Instant::now() > deadline {
            let unmatched = handle.unmatched_links();
            handle.stop();
            let _ = handle.wait_timeout(Duration::from_secs(5));
            return Err(BenchError::Peer(format!(
                "its subscriptions never reached us within 30 s: {}",
                unmatched.join(", ")
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    gate.open();
    let outcome = wait_job(&job, &mut handle);
    handle.stop();
    let report = handle.wait_timeout(Duration::from_secs(5));
    child.finish();
    // The peer's shared-memory segments, now that it has ended.
    streamwire_zenoh::remove_orphaned_shared_memory();
    outcome?;
    if let Some(failure) = report.failure {
        return Err(BenchError::Run(failure));
    }
    Ok(take_results(&job))
}

/// The plan's name of process `process` (`localhost/bench`).
fn process_name(
    runnable: &streamwire_graph::RunnablePlan,
    process: &str,
) -> Result<String, BenchError> {
    runnable
        .plan()
        .processes()
        .iter()
        .map(|p| p.placement().to_string())
        .find(|name| name.rsplit('/').next() == Some(process))
        .ok_or_else(|| BenchError::Run(format!("the plan has no process `{process}`")))
}

/// Bare zenoh between this process and a peer.
fn bare_zenoh(
    phases: &[Phase],
    receive: Receive,
    mode: &str,
    run_id: &str,
    peer: PeerCommand<'_>,
    shm: bool,
) -> Result<Vec<PhaseResult>, BenchError> {
    let transport = open_session(run_id, Vec::new(), shm)?;
    let child = Peer::start(peer, &peer_args(&transport, run_id, mode, 0))?;
    let keys = bare::Keys::new(transport.prefix());
    let results = bare::measure(transport.session(), &keys, receive, phases);
    child.finish();
    streamwire_zenoh::remove_orphaned_shared_memory();
    results
}

/// The peer process of [`run`]: `--connect ENDPOINT... --run-id ID --mode
/// streamwire|bare-fifo|bare-callback --hops N --shm true|false`. Serves until its
/// standard input closes.
pub fn serve_peer(args: &[String]) -> Result<(), BenchError> {
    let mut connect = Vec::new();
    let mut run_id = None;
    let mut mode = None;
    let mut hops = 0;
    let mut shm = false;
    let mut secret_file = None;
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let value = rest
            .next()
            .ok_or_else(|| BenchError::Arguments(format!("{flag} needs a value")))?;
        match flag.as_str() {
            "--connect" => connect.push(value.clone()),
            "--run-id" => run_id = Some(value.clone()),
            "--mode" => mode = Some(value.clone()),
            "--shm" => shm = value == "true",
            "--secret-file" => secret_file = Some(std::path::PathBuf::from(value)),
            "--hops" => {
                hops = value
                    .parse()
                    .map_err(|_| BenchError::Arguments(format!("--hops {value}")))?;
            }
            other => return Err(BenchError::Arguments(format!("unknown flag {other}"))),
        }
    }
    let run_id = run_id.ok_or_else(|| BenchError::Arguments("--run-id is needed".to_owned()))?;
    let stopped = Arc::new(AtomicBool::new(false));
    {
        let stopped = stopped.clone();
        std::thread::Builder::new()
            .name("bench-peer-stdin".to_owned())
            .spawn(move || {
                let mut sink = Vec::new();
                let _ = std::io::stdin().read_to_end(&mut sink);
                stopped.store(true, Ordering::SeqCst);
            })
            .map_err(|e| BenchError::Peer(format!("stdin thread: {e}")))?;
    }
    let runnable = modules::blueprint(Arc::new(Job::default()), Layout::Apart, hops)
        .into_runnable()
        .map_err(|e| BenchError::Run(e.to_string()))?;
    let member = secret_file
        .map(|file| {
            Credential::read_file(&file)
                .map(|c| (c, AccessRules::from_plan(runnable.plan(), &run_id)))
                .map_err(|e| BenchError::Arguments(format!("--secret-file: {e}")))
        })
        .transpose()?;
    let transport = open_member(&run_id, connect, shm, member.as_ref().map(|(c, r)| (c, r)))?;
    match mode.as_deref() {
        Some("streamwire") => {
            let local = process_name(&runnable, modules::PEER)?;
            let mut handle = Runtime::start(
                runnable,
                RunOptions {
                    transport: Some(Arc::new(transport)),
                    local: Some(local),
                    keep_all_depth: ZENOH_KEEP_ALL_DEPTH,
                    ..RunOptions::default()
                },
            )
            .map_err(|e| BenchError::Run(e.to_string()))?;
            while !stopped.load(Ordering::SeqCst) && handle.poll_end().is_none() {
                std::thread::sleep(Duration::from_millis(20));
            }
            handle.stop();
            let report = handle.wait_timeout(Duration::from_secs(5));
            if let Some(failure) = report.failure {
                return Err(BenchError::Run(failure));
            }
            Ok(())
        }
        Some(mode @ ("bare-fifo" | "bare-callback")) => {
            let receive = if mode == "bare-fifo" {
                Receive::Fifo
            } else {
                Receive::Callback
            };
            let keys = bare::Keys::new(transport.prefix());
            bare::serve(transport.session(), &keys, receive, &|| {
                stopped.load(Ordering::SeqCst)
            })
        }
        other => Err(BenchError::Arguments(format!(
            "--mode {}: one of streamwire, bare-fifo, bare-callback",
            other.unwrap_or("(missing)")
        ))),
    }
}

fn micros(nanos: u64) -> String {
    format!("{:.1}", nanos as f64 / 1000.0)
}

/// A size for people: `0 B`, `64 B`, `4 KiB`, `2.76 MB` (the image), `4 MiB`.
pub fn size_label(size: usize) -> String {
    match size {
        2_764_800 => "2.76 MB".to_owned(),
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 && s % (1 << 10) == 0 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

impl Suite {
    /// The rows as CSV in the format of the reference method: a `latency` line per row
    /// with latency and a `throughput` line per row with throughput.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        for row in &self.rows {
            if let Some(l) = &row.latency {
                let _ = writeln!(
                    out,
                    "latency,{},{},{},{},{},{},{},{},{},{}",
                    row.size, row.label, l.n, l.avg, l.p50, l.p95, l.p99, l.p999, l.min, l.max
                );
            }
        }
        for row in &self.rows {
            if let Some(t) = &row.throughput {
                let _ = writeln!(
                    out,
                    "throughput,{},{},{},{:.1},{},0,0,0,0,0",
                    row.size,
                    row.label,
                    t.n,
                    t.msg_per_sec,
                    t.elapsed.as_nanos()
                );
            }
        }
        out
    }

    fn find(&self, label: &str, size: usize) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.label == label && r.size == size)
    }

    /// `label`'s p50 over `baseline`'s, per size both measured.
    fn ratios(&self, label: &str, baseline: &str) -> Vec<(usize, f64)> {
        let mut sizes: Vec<usize> = self.rows.iter().map(|r| r.size).collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
            .into_iter()
            .filter_map(|size| {
                let ours = self.find(label, size)?.latency?.p50;
                let theirs = self.find(baseline, size)?.latency?.p50;
                (theirs > 0).then(|| (size, ours as f64 / theirs as f64))
            })
            .collect()
    }

    fn throughput_ratios(&self, label: &str, baseline: &str) -> Vec<(usize, f64)> {
        let mut out = Vec::new();
        for row in self.rows.iter().filter(|r| r.label == label) {
            let (Some(ours), Some(theirs)) = (
                row.throughput,
                self.find(baseline, row.size).and_then(|r| r.throughput),
            ) else {
                continue;
            };
            if theirs.msg_per_sec > 0.0 {
                out.push((row.size, ours.msg_per_sec / theirs.msg_per_sec));
            }
        }
        out
    }
}

impl std::fmt::Display for Suite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "latency in us: one way (half a round trip, the payload travelling both ways), \
             chain16: the whole loop (17 links); {} samples per size asked, after {} warm-up \
             round trips",
            self.samples,
            modules::WARMUP
        )?;
        writeln!(
            f,
            "{:>8}  {:<20} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>5}",
            "size",
            "transport",
            "n",
            "avg",
            "p50",
            "p95",
            "p99",
            "p99.9",
            "min",
            "max",
            "msg/s",
            "lost"
        )?;
        for row in &self.rows {
            let (n, cells, lost_rt) = match &row.latency {
                Some(l) => (
                    l.n.to_string(),
                    [l.avg, l.p50, l.p95, l.p99, l.p999, l.min, l.max].map(micros),
                    l.lost,
                ),
                None => ("-".to_owned(), std::array::from_fn(|_| "-".to_owned()), 0),
            };
            let (rate, lost) = match &row.throughput {
                Some(t) => (format!("{:.0}", t.msg_per_sec), t.lost + lost_rt),
                None => ("-".to_owned(), lost_rt),
            };
            writeln!(
                f,
                "{:>8}  {:<20} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>5}",
                size_label(row.size),
                row.label,
                n,
                cells[0],
                cells[1],
                cells[2],
                cells[3],
                cells[4],
                cells[5],
                cells[6],
                rate,
                lost
            )?;
        }
        writeln!(
            f,
            "lost: round trips given up after 1 s (sent again) plus burst messages never acknowledged"
        )?;
        let pairs = [
            (
                "zenoh",
                "bare-zenoh-fifo",
                "p50 zenoh / bare zenoh (FIFO + recv thread)",
            ),
            (
                "zenoh",
                "bare-zenoh-callback",
                "p50 zenoh / bare zenoh (callback only)",
            ),
            (
                "zenoh-shm",
                "bare-zenoh-shm-fifo",
                "p50 zenoh-shm / bare zenoh-shm (FIFO + recv thread)",
            ),
            ("zenoh-shm", "zenoh", "p50 zenoh-shm / zenoh"),
            (
                "zenoh-closed",
                "zenoh",
                "p50 zenoh-closed / zenoh (TLS and access control / neither)",
            ),
            (
                "in-process",
                "bare-channel",
                "p50 in-process / bare channel",
            ),
            ("loopback", "in-process", "p50 loopback / in-process"),
            (
                "chain16-zenoh",
                "chain16-in-process",
                "p50 chain16 zenoh / in-process",
            ),
        ];
        for (label, baseline, title) in pairs {
            let ratios = self.ratios(label, baseline);
            if ratios.is_empty() {
                continue;
            }
            let cells: Vec<String> = ratios
                .iter()
                .map(|(size, r)| format!("{} {r:.2}x", size_label(*size)))
                .collect();
            writeln!(f, "{title}: {}", cells.join(", "))?;
        }
        let tput = self.throughput_ratios("zenoh", "bare-zenoh-fifo");
        if !tput.is_empty() {
            let cells: Vec<String> = tput
                .iter()
                .map(|(size, r)| format!("{} {r:.2}x", size_label(*size)))
                .collect();
            writeln!(f, "msg/s zenoh / bare zenoh (FIFO): {}", cells.join(", "))?;
        }
        for note in &self.notes {
            writeln!(f, "note: {note}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let samples: Vec<u64> = (1..=1000).map(|i| i * 2).collect();
        let l = Latency::of(&samples, 2, 3).expect("samples");
        assert_eq!((l.n, l.min, l.max, l.lost), (1000, 1, 1000, 3));
        assert_eq!((l.p50, l.p95, l.p99, l.p999), (500, 950, 990, 999));
        assert_eq!(l.avg, 500);
        assert!(Latency::of(&[], 2, 0).is_none());
    }

    #[test]
    fn ten_sizes_from_nothing_to_four_megabytes() {
        assert_eq!(SIZES.len(), 10);
        assert_eq!(SIZES[0], 0);
        assert_eq!(SIZES[9], 4 << 20);
        assert!(SIZES.contains(&2_764_800));
        assert!(SIZES.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn csv_lines_have_the_reference_columns() {
        let suite = Suite {
            samples: 3,
            rows: rows_of(
                "zenoh",
                &[
                    PhaseResult::latency(
                        Phase {
                            size: 64,
                            kind: PhaseKind::Latency,
                            samples: 3,
                        },
                        vec![2000, 4000, 6000],
                        Duration::from_millis(1),
                        0,
                    ),
                    PhaseResult::throughput(
                        Phase {
                            size: 64,
                            kind: PhaseKind::Throughput,
                            samples: 10,
                        },
                        10,
                        Duration::from_millis(2),
                    ),
                ],
                2,
            ),
            notes: Vec::new(),
        };
        assert_eq!(
            suite.to_csv(),
            "latency,64,zenoh,3,2000,2000,3000,3000,3000,1000,3000\n\
             throughput,64,zenoh,10,5000.0,2000000,0,0,0,0,0\n"
        );
    }
}
