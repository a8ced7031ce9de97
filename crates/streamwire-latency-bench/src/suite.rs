//! The suite's run: each route's phases in this process, or against the peer process
//! over zenoh, and the bare baselines.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use streamwire_runtime::{Partitions, RunHandle, RunOptions, Runtime, StartGate};

use crate::bare::{self, Receive};
use crate::modules::{self, Job, Layout};
use crate::peer::{ClosedBench, Link, Peer, open_member, open_session, peer_args};
use crate::results::{Phase, PhaseKind, PhaseResult, rows_of};
use crate::{BenchError, CHAIN_HOPS, Options, Route, Suite};

/// The keep-all depth of the streamwire cells across zenoh: as deep as the FIFO channel
/// the bare zenoh baseline receives into (zenoh's default capacity, 256), so that both
/// buffer the same number of messages of a burst.
pub(crate) const ZENOH_KEEP_ALL_DEPTH: usize = 256;

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
/// peer's own (e.g. this binary and `bench peer`). The peer runs [`serve_peer`](crate::serve_peer).
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
    for transport in &options.routes {
        progress(&format!("measuring {}", transport.name()));
        match transport {
            Route::InProcess => {
                let results = in_this_process(&latency_phases, Layout::Together, 0)?;
                suite.rows.extend(rows_of("in-process", &results, 2));
                let results = bare::channel(&latency_phases)?;
                suite.rows.extend(rows_of("bare-channel", &results, 2));
            }
            Route::Loopback => {
                let results = in_this_process(&latency_phases, Layout::Apart, 0)?;
                suite.rows.extend(rows_of("loopback", &results, 2));
            }
            Route::Zenoh => {
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
            Route::ZenohClosed => {
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
            Route::ZenohShm => {
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
            Route::Chain => {
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
pub(crate) fn process_name(
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
