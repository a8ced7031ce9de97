//! `run` as the coordinator of worker processes: its placement flags, the command line
//! that starts each worker, the status line and the silent links.

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use streamwire_cli::{exit_code, on_ctrl_c};
use streamwire_graph::RunnablePlan;
use streamwire_runtime::RunReport;

use crate::{
    Access, Coordinator, CoordinatorOptions, Launch, Resubscriber, SilentLinks, StartHint,
};

/// Where `run` runs a plan of several processes.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct RunPlacement {
    /// Run every process of the plan as a partition of this one process, joined by the
    /// loopback transport (no workers).
    #[arg(long)]
    pub(crate) in_process: bool,
    /// Start only the processes placed on this host; the others join by hand (`worker
    /// --connect`). Default: every process of the plan, on this machine.
    #[arg(long, value_name = "NAME")]
    pub(crate) host: Option<String>,
    /// Where the coordinator listens for workers (repeatable; default
    /// `tcp/127.0.0.1:0`, a free port on loopback).
    #[arg(long, value_name = "ENDPOINT")]
    pub(crate) listen: Vec<String>,
    /// How long to wait for every worker to be ready.
    #[arg(long, value_name = "S", default_value_t = 30.0)]
    pub(crate) join_timeout: f64,
    /// The run's id, the first chunk of its zenoh keys (default `run<pid>`).
    #[arg(long, value_name = "ID")]
    pub(crate) run_id: Option<String>,
    /// A zenoh configuration file (JSON5) for the coordinator and the workers it starts:
    /// TLS or mTLS endpoints, user/password authentication, access control.
    #[arg(long, value_name = "FILE")]
    pub(crate) zenoh_config: Option<PathBuf>,
    /// Open the run to every process that reaches its endpoints: no credentials, no
    /// access control (said on every screen and in the report). Without it a run is
    /// closed: a certificate per process, mutual TLS, zenoh access control from the plan.
    #[arg(long)]
    pub(crate) insecure: bool,
    /// Start the workers without shared memory (`worker --no-shared-memory`): large frames
    /// between the processes of a host are then copied through TCP.
    #[arg(long)]
    pub(crate) no_shared_memory: bool,
    /// A planned link between processes (or a tap's own ingress, while its tap is
    /// attached) that received nothing for this long while its sender sent is *silent*:
    /// named with a warning and in the report, exit status 3.
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    pub(crate) silent_link: f64,
    /// A silent link is warned about and reported, but the exit status stays the run's.
    #[arg(long)]
    pub(crate) allow_silent: bool,
    /// A worker not heard from for this long (stopped, cut off from the network) is
    /// treated as dead: one started here is killed and the blueprint's `supervision`
    /// applies; one started by hand is named and the run stops.
    #[arg(long, value_name = "S", default_value_t = 30.0)]
    pub(crate) peer_timeout: f64,
}

/// What the coordinator passes on to its workers, and how it listens.
pub(crate) struct Coordinate<'a> {
    /// The blueprint as `run` was given it (a registered name or a file).
    pub(crate) target: &'a str,
    /// Every `-o` setting of `run` (`--replay` and `--fps` included), in order.
    pub(crate) set: &'a [String],
    /// `run`'s recording flags (`--record`, ...), which each worker repeats.
    pub(crate) record: Vec<String>,
    pub(crate) verbose: u8,
    pub(crate) host: Option<String>,
    pub(crate) listen: Vec<String>,
    pub(crate) run_id: Option<String>,
    pub(crate) join_timeout: Duration,
    pub(crate) duration: Option<Duration>,
    pub(crate) zenoh_config: Option<std::path::PathBuf>,
    /// `--insecure`: no credentials, no access control.
    pub(crate) insecure: bool,
    /// Whether the workers offer shared memory.
    pub(crate) shared_memory: bool,
    /// `--silent-link`: a link that received nothing this long while its sender sent.
    pub(crate) silent_link: Duration,
    /// `--allow-silent`: a silent link does not change the exit status.
    pub(crate) allow_silent: bool,
    /// `--peer-timeout`: a worker not heard from this long is treated as dead.
    pub(crate) peer_timeout: Duration,
}

/// The exit status of a run with a silent link (without `--allow-silent`).
pub(crate) const EXIT_SILENT: u8 = 3;

/// `run` of a plan of several processes: start the workers, supervise, merge the reports;
/// the run's access (`closed: ...`, `INSECURE: ...`) with them.
pub(crate) fn coordinate(
    run: &Coordinate<'_>,
    runnable: RunnablePlan,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<(ExitCode, RunReport, Option<String>)> {
    let defaults = CoordinatorOptions::default();
    let options = CoordinatorOptions {
        run_id: run.run_id.clone().unwrap_or(defaults.run_id),
        listen: if run.listen.is_empty() {
            defaults.listen
        } else {
            run.listen.clone()
        },
        host: run.host.clone(),
        join_timeout: run.join_timeout,
        peer_timeout: run.peer_timeout,
        duration: run.duration,
        zenoh_config: run.zenoh_config.clone(),
        access: if run.insecure {
            Access::Insecure
        } else {
            Access::Closed
        },
        start_hint: Some(StartHint::new(|launch: &Launch| {
            // The secret file's path, never the secret: the operator copies the file.
            let secret = launch.secret_file.as_ref().map_or_else(
                || " --insecure".to_owned(),
                |file| format!(" --secret-file {}", file.display()),
            );
            format!(
                "start it there with `worker --connect {} --process {}{secret} <blueprint>`",
                launch.connect.join(" --connect "),
                launch.process
            )
        })),
        ..defaults
    };
    let (plan, _modules) = runnable.into_parts();
    if let Some(host) = &options.host
        && !plan
            .processes()
            .iter()
            .any(|p| p.placement().host() == host)
    {
        let hosts: std::collections::BTreeSet<String> = plan
            .processes()
            .iter()
            .map(|p| p.placement().host().to_owned())
            .collect();
        anyhow::bail!(
            "--host {host}: the plan places nothing on host `{host}` (its hosts: {})",
            hosts.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    let run_id = options.run_id.clone();
    let coordinator = Coordinator::start(&plan, options)?;
    eprintln!(
        "coordinator: run `{run_id}`, {} processes, listening on {}",
        plan.processes().len(),
        coordinator.endpoints().join(", ")
    );
    eprintln!("coordinator: access {}", coordinator.access_summary());
    for (process, host) in plan
        .processes()
        .iter()
        .map(|p| (p.placement().to_string(), p.placement().host().to_owned()))
    {
        if let Some(file) = coordinator.secret_file(&process) {
            eprintln!(
                "coordinator: the secret file of `{process}` is {}: copy it to host `{host}` \
                 (e.g. `scp {} {host}:`) and give it to its worker as --secret-file",
                file.display(),
                file.display()
            );
        }
    }
    if let Some(file) = coordinator.tool_secret_file() {
        eprintln!(
            "coordinator: tools on this host join with `topic ... --connect {} --run-id \
             {run_id}` (their secret file, found by the run id, is {})",
            coordinator.endpoints().first().map_or("", String::as_str),
            file.display()
        );
    }
    let exe = std::env::current_exe().context("cannot find this program to start workers")?;
    let target = run.target.to_owned();
    let set: Vec<String> = run.set.to_vec();
    let record = run.record.clone();
    let verbose = run.verbose;
    let zenoh_config = run.zenoh_config.clone();
    let insecure = run.insecure;
    let shared_memory = run.shared_memory;
    let command = move |launch: &Launch| {
        let mut c = Command::new(&exe);
        c.arg("worker")
            .arg("--supervised")
            .arg("--process")
            .arg(&launch.process)
            .arg("--run-id")
            .arg(&launch.run_id)
            .arg("--join-timeout")
            .arg(launch.join_timeout.as_secs_f64().to_string());
        for endpoint in &launch.connect {
            c.arg("--connect").arg(endpoint);
        }
        if let Some(file) = &zenoh_config {
            c.arg("--zenoh-config").arg(file);
        }
        if launch.credential_on_stdin {
            c.arg("--credential-on-stdin");
        } else if insecure {
            c.arg("--insecure");
        }
        if !shared_memory {
            c.arg("--no-shared-memory");
        }
        for _ in 0..verbose {
            c.arg("-v");
        }
        c.args(&record);
        c.arg(&target);
        for setting in &set {
            c.arg("-o").arg(setting);
        }
        c
    };
    let ctrl_c = stop.clone();
    on_ctrl_c(move || ctrl_c.store(true, Ordering::SeqCst));
    // A plain status line once a second, from the workers' counters; the same counters
    // tell the links that went silent.
    let mut previous: Option<streamwire_runtime::RunStats> = None;
    let mut silent = SilentLinks::new(run.silent_link);
    let resubscriber = coordinator.resubscriber();
    let mut report = coordinator.run_observed(
        &command,
        stop,
        &mut |event| eprintln!("coordinator: {event}"),
        &mut |stats| {
            progress(&resubscriber, &mut silent, previous.as_ref(), stats);
            previous = Some(stats.clone());
        },
        // What the workers' modules announce (the viewer's address), as `run` prints it
        // in one process.
        &mut |line| eprintln!("{line}"),
    )?;
    println!("{report}");
    let silences = silent.episodes();
    for link in &silences {
        println!("silent: {link}");
    }
    // In the JSON report too (`--report`).
    report.report.silent_links = silences.iter().map(ToString::to_string).collect();
    println!("{}", streamwire_cli::accounting(&report.report));
    let code = with_silences(exit_code(&report.report), silences.len(), run.allow_silent);
    Ok((code, report.report, Some(report.access)))
}

/// Once a second, from the workers' counters `stats` (and the `previous` ones): the status
/// line, and the links (taps' ingresses included) that went silent or receive again; a
/// silent tap's worker is asked to subscribe again.
fn progress(
    resubscriber: &Resubscriber,
    silent: &mut SilentLinks,
    previous: Option<&streamwire_runtime::RunStats>,
    stats: &streamwire_runtime::RunStats,
) {
    let newly = silent.observe(stats, std::time::Instant::now());
    if let Some(previous) = previous {
        let mut line = streamwire_cli::status_line(previous, stats);
        // Silent links stay on the line while they last.
        if silent.ongoing() > 0 {
            line.push_str(&format!(" | silent links {}", silent.ongoing()));
        }
        eprintln!("{line}");
    }
    for link in newly {
        eprintln!("warning: silent link: {link}");
        resubscriber.ask(&link);
    }
    for link in silent.recovered() {
        eprintln!("silent link receives again: {link}");
    }
}

/// The exit status of a run that ended with `code` and had `silences` silent links: 3
/// for a run that went well otherwise, unless they are allowed.
fn with_silences(code: ExitCode, silences: usize, allowed: bool) -> ExitCode {
    if silences == 0 || code != ExitCode::SUCCESS {
        return code;
    }
    if allowed {
        eprintln!("warning: silent links allowed (--allow-silent): exit status 0");
        return code;
    }
    eprintln!(
        "error: {silences} silent link{} (--allow-silent accepts them): exit status {EXIT_SILENT}",
        if silences == 1 { "" } else { "s" }
    );
    ExitCode::from(EXIT_SILENT)
}
