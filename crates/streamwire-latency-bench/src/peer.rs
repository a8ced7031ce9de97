//! The peer process (this binary again, `bench peer`) and the zenoh sessions of the
//! suite's two processes, open or as a closed run's members.

use std::io::Read;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use streamwire_cluster::{Credential, WorkerOptions};
use streamwire_runtime::{RunOptions, Runtime};
use streamwire_zenoh::{SharedMemory, ZenohOptions, ZenohTransport};

use crate::BenchError;
use crate::bare::{self, Receive};
use crate::iox::{self, Scope, Wait};
use crate::modules::{self, Job, Layout};
use crate::suite::{PeerCommand, ZENOH_KEEP_ALL_DEPTH, process_name};

/// A peer process, killed if still running when dropped; it stops when its standard
/// input closes.
pub(crate) struct Peer {
    child: Child,
}

impl Peer {
    pub(crate) fn start(peer: PeerCommand<'_>, args: &[String]) -> Result<Peer, BenchError> {
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
    pub(crate) fn finish(mut self) {
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

/// A session of the suite's direct rows and bare baselines: open, TCP on loopback,
/// shared memory (a 64 MiB pool) or not.
pub(crate) fn open_session(
    run_id: &str,
    connect: Vec<String>,
    shm: bool,
) -> Result<ZenohTransport, BenchError> {
    ZenohTransport::open(&ZenohOptions {
        run_id: run_id.to_owned(),
        connect,
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

pub(crate) fn peer_args(
    transport: &ZenohTransport,
    run_id: &str,
    mode: &str,
    hops: usize,
) -> Vec<String> {
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

/// What the peer process was told.
#[derive(Default)]
struct PeerArgs {
    connect: Vec<String>,
    run_id: Option<String>,
    mode: Option<String>,
    hops: usize,
    shm: bool,
    secret_file: Option<std::path::PathBuf>,
    process: Option<String>,
    sizes: Vec<usize>,
}

/// The peer process of [`run`](crate::run): `--connect ENDPOINT... --run-id ID --mode
/// streamwire|bare-fifo|bare-callback|worker|iceoryx2|iceoryx2-busy --hops N --shm
/// true|false`, a worker's `--process NAME [--secret-file FILE]`, iceoryx2's `--sizes
/// BYTES,..` (the pinger's, in its order). Serves until its standard input closes.
pub fn serve_peer(args: &[String]) -> Result<(), BenchError> {
    let PeerArgs {
        connect,
        run_id,
        mode,
        hops,
        shm,
        secret_file,
        process,
        sizes,
    } = peer_args_of(args)?;
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
    let stop = || stopped.load(Ordering::SeqCst);
    match mode.as_deref() {
        Some("iceoryx2") => return iox::serve(&Scope::new(&run_id), Wait::Event, &sizes, &stop),
        Some("iceoryx2-busy") => {
            return iox::serve(&Scope::new(&run_id), Wait::Busy, &sizes, &stop);
        }
        _ => {}
    }
    let runnable = modules::blueprint(Arc::new(Job::default()), Layout::Apart, hops)
        .into_runnable()
        .map_err(|e| BenchError::Run(e.to_string()))?;
    if mode.as_deref() == Some("worker") {
        let process =
            process.ok_or_else(|| BenchError::Arguments("--process is needed".to_owned()))?;
        let credential = secret_file
            .map(|file| Credential::read_file(&file))
            .transpose()
            .map_err(|e| BenchError::Arguments(format!("--secret-file: {e}")))?;
        let options = WorkerOptions {
            process,
            run_id: Some(run_id),
            connect,
            shared_memory: shm,
            credential,
            ..WorkerOptions::default()
        };
        let report = streamwire_cluster::run_worker(runnable, &options, &stopped, &mut |event| {
            tracing::debug!("bench echo: {event}");
        })
        .map_err(|e| BenchError::Run(e.to_string()))?;
        return report.failure.map_or(Ok(()), |f| Err(BenchError::Run(f)));
    }
    let transport = open_session(&run_id, connect, shm)?;
    serve_mode(mode.as_deref(), runnable, transport, &stopped)
}

/// The peer's arguments, read.
fn peer_args_of(args: &[String]) -> Result<PeerArgs, BenchError> {
    let mut out = PeerArgs::default();
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let value = rest
            .next()
            .ok_or_else(|| BenchError::Arguments(format!("{flag} needs a value")))?;
        match flag.as_str() {
            "--connect" => out.connect.push(value.clone()),
            "--run-id" => out.run_id = Some(value.clone()),
            "--mode" => out.mode = Some(value.clone()),
            "--shm" => out.shm = value == "true",
            "--secret-file" => out.secret_file = Some(std::path::PathBuf::from(value)),
            "--process" => out.process = Some(value.clone()),
            "--sizes" => {
                out.sizes = value
                    .split(',')
                    .map(|size| size.parse())
                    .collect::<Result<_, _>>()
                    .map_err(|_| BenchError::Arguments(format!("--sizes {value}")))?;
            }
            "--hops" => {
                out.hops = value
                    .parse()
                    .map_err(|_| BenchError::Arguments(format!("--hops {value}")))?;
            }
            other => return Err(BenchError::Arguments(format!("unknown flag {other}"))),
        }
    }
    Ok(out)
}

/// Serves a direct or bare peer on `transport` until `stopped`.
fn serve_mode(
    mode: Option<&str>,
    runnable: streamwire_graph::RunnablePlan,
    transport: ZenohTransport,
    stopped: &AtomicBool,
) -> Result<(), BenchError> {
    match mode {
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
            "--mode {}: one of streamwire, bare-fifo, bare-callback, worker, iceoryx2, \
             iceoryx2-busy",
            other.unwrap_or("(missing)")
        ))),
    }
}
