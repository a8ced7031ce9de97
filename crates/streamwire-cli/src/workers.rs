//! `run` as the coordinator of worker processes, and `worker`: the command-line side of
//! [`streamwire_cluster`].

use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use streamwire_cluster::{
    Access, Coordinator, CoordinatorOptions, Credential, Launch, SilentLinks, StartHint,
    WorkerOptions, run_worker,
};
use streamwire_graph::{Blueprint, RunnablePlan};
use streamwire_runtime::RunReport;

use crate::{WorkerArgs, exit_code, on_ctrl_c};

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
    let mut report = coordinator.run_observed(
        &command,
        stop,
        &mut |event| eprintln!("coordinator: {event}"),
        &mut |stats| {
            if let Some(previous) = &previous {
                eprintln!("{}", crate::status_line(previous, stats));
            }
            for link in silent.observe(stats, std::time::Instant::now()) {
                eprintln!("warning: silent link: {link}");
            }
            previous = Some(stats.clone());
        },
    )?;
    println!("{report}");
    let silences = silent.episodes();
    for link in &silences {
        println!("silent: {link}");
    }
    // In the JSON report too (`--report`).
    report.report.silent_links = silences.iter().map(ToString::to_string).collect();
    println!("{}", crate::commands::run::accounting(&report.report));
    let code = with_silences(exit_code(&report.report), silences.len(), run.allow_silent);
    Ok((code, report.report, Some(report.access)))
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

/// `worker`: run one process of the plan in the run of the coordinator at `--connect`.
pub(crate) fn work(
    blueprint: Blueprint,
    args: WorkerArgs,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<ExitCode> {
    let runnable = blueprint.into_runnable()?;
    let credential = worker_credential(&args)?;
    if credential.is_none() && args.zenoh_config.is_none() {
        eprintln!(
            "[{}] INSECURE: this worker joins without a credential (--insecure): any process \
             that reaches its endpoints may read, write and stop the run",
            args.process
        );
    }
    let defaults = WorkerOptions::default();
    let options = WorkerOptions {
        credential,
        process: args.process.clone(),
        run_id: args.run_id,
        connect: args.connect,
        listen: if args.listen.is_empty() {
            defaults.listen.clone()
        } else {
            args.listen
        },
        join_timeout: args.join_timeout,
        watch_stdin: args.supervised,
        shared_memory: args.shared_memory,
        zenoh_config: args.zenoh_config,
        ..defaults
    };
    let ctrl_c = stop.clone();
    on_ctrl_c(move || ctrl_c.store(true, Ordering::SeqCst));
    let name = args.process;
    let report = run_worker(runnable, &options, stop, &mut |event| {
        eprintln!("[{name}] {event}");
    })?;
    if !args.supervised {
        // Started by hand: its own report is its output (the coordinator prints the
        // merged one).
        println!("{report}");
        println!("{}", crate::commands::run::accounting(&report));
    }
    Ok(exit_code(&report))
}

/// A worker's credential: from its standard input (started by a coordinator of a closed
/// run), its `--secret-file`, or the run's folder on this host; none with `--insecure` or
/// `--zenoh-config`.
fn worker_credential(args: &WorkerArgs) -> anyhow::Result<Option<Credential>> {
    if args.credential_on_stdin {
        let credential = Credential::read_from(&mut std::io::stdin().lock())
            .context("cannot read the credential the coordinator gave on standard input")?;
        return Ok(Some(credential));
    }
    if args.insecure || args.zenoh_config.is_some() {
        return Ok(None);
    }
    let file = match (&args.secret_file, &args.run_id) {
        (Some(file), _) => file.clone(),
        (None, Some(run_id)) => streamwire_cluster::access::secret_file(
            &streamwire_cluster::access::run_folder(run_id),
            &args.process,
        ),
        (None, None) => anyhow::bail!(
            "a closed run needs this worker's credential: give --secret-file (the coordinator \
             printed its path) or, for a run started with --insecure, --insecure"
        ),
    };
    let credential = Credential::read_file(&file).with_context(|| {
        format!(
            "cannot read this worker's secret file {} (give the one the coordinator printed \
             with --secret-file, or --insecure for a run started with --insecure)",
            file.display()
        )
    })?;
    Ok(Some(credential))
}
