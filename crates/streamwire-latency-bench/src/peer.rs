//! The peer process (this binary again, `bench peer`) and the zenoh sessions of the
//! suite's two processes, open or as a closed run's members.

use std::io::Read;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use streamwire_cluster::{AccessRules, Credential, RunAuthority, access};
use streamwire_runtime::{RunOptions, Runtime};
use streamwire_zenoh::{SharedMemory, ZenohOptions, ZenohTransport};

use crate::BenchError;
use crate::bare::{self, Receive};
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

/// How the suite's two processes are joined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Link {
    /// TCP, no access control.
    Open,
    /// TCP, shared memory at both ends.
    Shm,
    /// A closed run: mutual TLS and the plan's access control.
    Closed,
}

pub(crate) fn open_session(
    run_id: &str,
    connect: Vec<String>,
    shm: bool,
) -> Result<ZenohTransport, BenchError> {
    open_member(run_id, connect, shm, None)
}

/// A session, as a closed run's member with `member` (its credential and the run's
/// rules).
pub(crate) fn open_member(
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
pub(crate) struct ClosedBench {
    pub(crate) home: Credential,
    pub(crate) rules: AccessRules,
    pub(crate) peer_file: std::path::PathBuf,
}

impl ClosedBench {
    pub(crate) fn new(
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

/// The peer process of [`run`](crate::run): `--connect ENDPOINT... --run-id ID --mode
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
