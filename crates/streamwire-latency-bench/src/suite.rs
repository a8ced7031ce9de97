//! The suite's run: each route's phases in this process, or against the peer process
//! over zenoh, and the bare baselines.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use streamwire_cluster::{Access, Coordinator, CoordinatorOptions, Credential, WorkerOptions};
use streamwire_runtime::{Partitions, RunHandle, RunOptions, Runtime, StartGate};

use crate::bare::{self, Payloads, Receive};
use crate::iox::{self, Cleanup, Scope, Wait};
use crate::modules::{self, Job, Layout};
use crate::peer::{Peer, open_session, peer_args};
use crate::results::{Link, Phase, PhaseKind, PhaseResult, rows_of};
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
                suite
                    .rows
                    .extend(rows_of("in-process", Link::InProcess, &results, 2));
                let results = bare::channel(&latency_phases)?;
                suite
                    .rows
                    .extend(rows_of("bare-channel", Link::InProcess, &results, 2));
            }
            Route::Loopback => {
                let results = in_this_process(&latency_phases, Layout::Apart, 0)?;
                suite
                    .rows
                    .extend(rows_of("loopback", Link::Loopback, &results, 2));
            }
            Route::Zenoh => {
                for (label, access) in [
                    ("zenoh", Access::Closed),
                    ("zenoh-insecure", Access::Insecure),
                ] {
                    progress(&format!("measuring {label}"));
                    let results = over_cluster(
                        &latency_phases,
                        &format!("{run_id}{label}"),
                        peer,
                        access,
                        false,
                    )?;
                    suite
                        .rows
                        .extend(rows_of(label, link_of(access, false), &results, 2));
                }
                for (receive, label, mode) in [
                    (Receive::Fifo, "bare-zenoh-fifo", "bare-fifo"),
                    (Receive::Callback, "bare-zenoh-callback", "bare-callback"),
                ] {
                    progress(&format!("measuring {label}"));
                    let results = bare_zenoh(
                        &latency_phases,
                        (receive, Payloads::Heap),
                        mode,
                        &format!("{run_id}{mode}"),
                        peer,
                        false,
                    )?;
                    suite.rows.extend(rows_of(label, Link::Tcp, &results, 2));
                }
                suite.notes.push(
                    "zenoh, zenoh-shm: a real run of the pinger's and the echo's processes: \
                     the cluster's coordinator and two workers (`streamwire run`'s code), closed \
                     (mutual TLS, access control from the plan); *-insecure: the same run \
                     opened (`run --insecure`, TCP)"
                        .to_owned(),
                );
            }
            Route::ZenohDirect => {
                for (label, shm) in [("zenoh-direct", false), ("zenoh-shm-direct", true)] {
                    progress(&format!("measuring {label}"));
                    let link = if shm { Link::TcpShm } else { Link::Tcp };
                    let results =
                        over_zenoh(&latency_phases, 0, &format!("{run_id}{label}"), peer, shm)?;
                    suite.rows.extend(rows_of(label, link, &results, 2));
                }
                suite.notes.push(
                    "*-direct: the pinger's and the echo's runtimes on the zenoh transport \
                     directly, without the cluster's coordinator and workers: what the worker \
                     path adds, next to the *-insecure rows"
                        .to_owned(),
                );
            }
            Route::ZenohShm => {
                for (label, access) in [
                    ("zenoh-shm", Access::Closed),
                    ("zenoh-shm-insecure", Access::Insecure),
                ] {
                    progress(&format!("measuring {label}"));
                    let results = over_cluster(
                        &latency_phases,
                        &format!("{run_id}{label}"),
                        peer,
                        access,
                        true,
                    )?;
                    suite
                        .rows
                        .extend(rows_of(label, link_of(access, true), &results, 2));
                }
                for (label, payloads) in [
                    ("bare-zenoh-shm-fifo", Payloads::Heap),
                    ("bare-zenoh-shm-loan", Payloads::Loan),
                ] {
                    progress(&format!("measuring {label}"));
                    let results = bare_zenoh(
                        &latency_phases,
                        (Receive::Fifo, payloads),
                        "bare-fifo",
                        &format!("{run_id}{label}"),
                        peer,
                        true,
                    )?;
                    suite.rows.extend(rows_of(label, Link::TcpShm, &results, 2));
                }
                suite.notes.push(
                    "zenoh-shm: zenoh's shared memory on at both ends (each worker's pool sized \
                     from the plan; the bare rows' 64 MiB); payloads of 3 KiB and more travel \
                     through it, only a reference through the link. bare-zenoh-shm-fifo puts a \
                     heap buffer (zenoh copies it into its pool, inside the clock); \
                     bare-zenoh-shm-loan writes it into a loan of zenoh's provider before the \
                     clock, as the pinger does (under 3 KiB both put heap bytes, as the \
                     runtime does)"
                        .to_owned(),
                );
            }
            Route::Iceoryx2 => iceoryx2_rows(&mut suite, &latency_phases, peer, progress)?,
            Route::Chain => {
                let results = in_this_process(&chain_phases, Layout::Together, CHAIN_HOPS)?;
                suite
                    .rows
                    .extend(rows_of("chain16-in-process", Link::InProcess, &results, 1));
                progress("measuring chain16-zenoh");
                let results = over_zenoh(
                    &chain_phases,
                    CHAIN_HOPS,
                    &format!("{run_id}c"),
                    peer,
                    false,
                )?;
                suite
                    .rows
                    .extend(rows_of("chain16-zenoh", Link::Tcp, &results, 1));
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
    shm: bool,
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
    let transport = open_session(run_id, Vec::new(), shm)?;
    let args = peer_args(&transport, run_id, "streamwire", hops);
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
    (receive, payloads): (Receive, Payloads),
    mode: &str,
    run_id: &str,
    peer: PeerCommand<'_>,
    shm: bool,
) -> Result<Vec<PhaseResult>, BenchError> {
    let transport = open_session(run_id, Vec::new(), shm)?;
    let child = Peer::start(peer, &peer_args(&transport, run_id, mode, 0))?;
    let keys = bare::Keys::new(transport.prefix());
    let results = bare::measure(transport.session(), &keys, receive, payloads, phases);
    child.finish();
    streamwire_zenoh::remove_orphaned_shared_memory();
    results
}

/// The iceoryx2 rows, event-driven and busy-waiting, and their note.
fn iceoryx2_rows(
    suite: &mut Suite,
    phases: &[Phase],
    peer: PeerCommand<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    for (label, wait) in [("iceoryx2", Wait::Event), ("iceoryx2-busy", Wait::Busy)] {
        progress(&format!("measuring {label}"));
        let results = iceoryx2(phases, wait, peer)?;
        suite.rows.extend(rows_of(label, Link::Shm, &results, 2));
    }
    suite.notes.push(
        "iceoryx2: zero-copy IPC between the same two kinds of processes, shared \
         memory alone (no network stack, no serialization): the payload written \
         into a loan before the clock, the echo answering with a loan written \
         before the ping came; iceoryx2 wakes the receiver with its event \
         service (as our receive blocks), iceoryx2-busy busy-waits (a core \
         spinning on each side)"
            .to_owned(),
    );
    Ok(())
}

/// iceoryx2 between this process and a peer; the run's files removed after it, however
/// it ended.
fn iceoryx2(
    phases: &[Phase],
    wait: Wait,
    peer: PeerCommand<'_>,
) -> Result<Vec<PhaseResult>, BenchError> {
    // Short: iceoryx2's event sockets are files under the run's root whose names carry the
    // run's prefix, and a socket's path has at most 107 bytes.
    let run_id = format!("sw{}{}", std::process::id(), wait.tag());
    let scope = Scope::new(&run_id);
    // Declared before the peer: dropped after it, once the peer has ended.
    let _cleanup = Cleanup(scope.clone());
    let sizes: Vec<String> = iox::sizes_of(phases)
        .iter()
        .map(ToString::to_string)
        .collect();
    let args = [
        "--run-id".to_owned(),
        run_id,
        "--mode".to_owned(),
        wait.mode().to_owned(),
        "--sizes".to_owned(),
        sizes.join(","),
    ];
    let child = Peer::start(peer, &args)?;
    let results = iox::measure(&scope, wait, phases);
    child.finish();
    results
}

/// The link of a cluster run's rows.
fn link_of(access: Access, shm: bool) -> Link {
    match (access, shm) {
        (Access::Insecure, false) => Link::Tcp,
        (Access::Insecure, true) => Link::TcpShm,
        (_, false) => Link::Tls,
        (_, true) => Link::TlsShm,
    }
}

/// A host of no process of the plan: the coordinator starts no worker itself (the suite
/// starts them, the pinger's in this process, so that its results are at hand).
const NO_HOST: &str = "bench-starts-its-own";

/// The pinger and the echo as a real distributed run: the cluster's coordinator here,
/// the pinger's worker on a thread of this process and the echo's worker in a peer
/// process, each joining as `streamwire worker` does (closed: its credential from the
/// run's secret file).
fn over_cluster(
    phases: &[Phase],
    run_id: &str,
    peer: PeerCommand<'_>,
    access: Access,
    shm: bool,
) -> Result<Vec<PhaseResult>, BenchError> {
    let job = Arc::new(Job {
        phases: phases.to_vec(),
        ..Job::default()
    });
    let runnable = modules::blueprint(job.clone(), Layout::Apart, 0)
        .into_runnable()
        .map_err(|e| BenchError::Run(e.to_string()))?;
    let home = process_name(&runnable, modules::HOME)?;
    let far = process_name(&runnable, modules::PEER)?;
    let cluster = |e: streamwire_cluster::ClusterError| BenchError::Run(e.to_string());
    let coordinator = Coordinator::start(
        runnable.plan(),
        CoordinatorOptions {
            run_id: run_id.to_owned(),
            host: Some(NO_HOST.to_owned()),
            access,
            ..CoordinatorOptions::default()
        },
    )
    .map_err(cluster)?;
    let connect = coordinator.endpoints();
    let credential = coordinator
        .secret_file(&home)
        .map(Credential::read_file)
        .transpose()
        .map_err(cluster)?;
    let mut args = worker_args(run_id, &far, &connect, shm);
    if let Some(file) = coordinator.secret_file(&far) {
        args.extend(["--secret-file".to_owned(), file.display().to_string()]);
    }
    let child = Peer::start(peer, &args)?;
    let options = WorkerOptions {
        process: home,
        run_id: Some(run_id.to_owned()),
        connect,
        shared_memory: shm,
        credential,
        ..WorkerOptions::default()
    };
    let outcome = drive_cluster(coordinator, runnable, &options, &job);
    child.finish();
    streamwire_zenoh::remove_orphaned_shared_memory();
    outcome?;
    Ok(take_results(&job))
}

/// Runs the coordinator and the pinger's worker until the pinger has done its job, then
/// stops the run; its failure, or a worker's, is the error.
fn drive_cluster(
    coordinator: Coordinator,
    runnable: streamwire_graph::RunnablePlan,
    options: &WorkerOptions,
    job: &Job,
) -> Result<(), BenchError> {
    let cluster = |e: streamwire_cluster::ClusterError| BenchError::Run(e.to_string());
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let pinger = scope.spawn(|| {
            streamwire_cluster::run_worker(runnable, options, &stop, &mut |event| {
                tracing::debug!("bench pinger: {event}");
            })
        });
        let run = scope.spawn(|| {
            // Never called: every process's host is another than the coordinator's
            // (`NO_HOST`), the suite starts the workers.
            coordinator.run(&|_| Command::new("false"), &stop, &mut |event| {
                tracing::debug!("bench coordinator: {event}");
            })
        });
        let waited = wait_cluster(job, &|| pinger.is_finished() || run.is_finished());
        stop.store(true, Ordering::SeqCst);
        let report = run.join();
        let pinger = pinger.join();
        match (report, pinger) {
            (Ok(Ok(report)), Ok(Ok(_))) => waited.and_then(|()| {
                report
                    .report
                    .failure
                    .map_or(Ok(()), |f| Err(BenchError::Run(f)))
            }),
            (Ok(Err(e)), _) | (_, Ok(Err(e))) => Err(cluster(e)),
            _ => Err(BenchError::Run("a thread of the run panicked".to_owned())),
        }
    })
}

/// `bench peer` arguments of the echo's worker.
fn worker_args(run_id: &str, process: &str, connect: &[String], shm: bool) -> Vec<String> {
    let mut args = vec![
        "--mode".to_owned(),
        "worker".to_owned(),
        "--run-id".to_owned(),
        run_id.to_owned(),
        "--process".to_owned(),
        process.to_owned(),
        "--shm".to_owned(),
        shm.to_string(),
    ];
    for endpoint in connect {
        args.extend(["--connect".to_owned(), endpoint.clone()]);
    }
    args
}

/// Waits until the pinger has done its job, or the run `ended`, or a phase took too long.
fn wait_cluster(job: &Job, ended: &dyn Fn() -> bool) -> Result<(), BenchError> {
    let mut done_phases = 0;
    let mut since = Instant::now();
    while !job.done.load(Ordering::SeqCst) {
        if ended() {
            return Err(BenchError::Run(
                "the run ended before the measurements did".to_owned(),
            ));
        }
        let now_done = job.results.lock().len();
        if now_done != done_phases {
            done_phases = now_done;
            since = Instant::now();
        } else if since.elapsed() > PHASE_TIMEOUT + Duration::from_secs(30) {
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
