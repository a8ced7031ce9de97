//! `worker`: one process of a blueprint's plan, joined to a distributed run.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use clap::FromArgMatches;
use streamwire_cli::{Cli, CommandContext, exit_code, on_ctrl_c, seconds};
use streamwire_graph::Blueprint;

use crate::{Credential, WorkerOptions, run_worker};

/// `worker` arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The same blueprint as the coordinator's (registered name or file).
    blueprint: String,
    /// The process to run, `host/process` as `graph` shows it (or the process alone
    /// when unique).
    #[arg(long, value_name = "NAME")]
    process: String,
    /// The coordinator's endpoint, e.g. `tcp/192.168.1.10:7447` (repeatable).
    #[arg(long, value_name = "ENDPOINT", required = true)]
    connect: Vec<String>,
    /// Where this worker listens for the other workers (repeatable; default
    /// `tcp/127.0.0.1:0`; on another host, an address the others can reach).
    #[arg(long, value_name = "ENDPOINT")]
    listen: Vec<String>,
    /// The run to join (default: whichever coordinator answers).
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
    /// How long to look for the coordinator.
    #[arg(long, value_name = "S", default_value_t = 30.0)]
    join_timeout: f64,
    /// A setting, `key=value` (repeatable): the same as the coordinator's.
    #[arg(short = 'o', value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Started by a coordinator: stop when standard input closes, report to it only.
    #[arg(long, hide = true)]
    supervised: bool,
    /// A zenoh configuration file (JSON5) for this worker's session: TLS or mTLS
    /// endpoints, user/password authentication, access control.
    #[arg(long, value_name = "FILE")]
    zenoh_config: Option<PathBuf>,
    /// This worker's credential in a closed run: the secret file the coordinator wrote
    /// (it prints the path; copy the file to this host). Default on the coordinator's
    /// host with --run-id: the run's own file.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["insecure", "zenoh_config"])]
    secret_file: Option<PathBuf>,
    /// Join a run started with `run --insecure`: no credential, no access control.
    #[arg(long)]
    insecure: bool,
    /// Started by a coordinator of a closed run: read the credential from standard input.
    #[arg(long, hide = true, requires = "supervised")]
    credential_on_stdin: bool,
    /// Do not offer shared memory to the workers of this host (their large frames
    /// are then copied through TCP; the coordinator warns about it).
    #[arg(long)]
    no_shared_memory: bool,
}

/// What `worker` was given, checked: what the zenoh side reads.
pub(crate) struct WorkerArgs {
    pub(crate) process: String,
    pub(crate) connect: Vec<String>,
    pub(crate) listen: Vec<String>,
    pub(crate) run_id: Option<String>,
    pub(crate) join_timeout: Duration,
    pub(crate) supervised: bool,
    pub(crate) zenoh_config: Option<PathBuf>,
    pub(crate) secret_file: Option<PathBuf>,
    pub(crate) insecure: bool,
    pub(crate) credential_on_stdin: bool,
    pub(crate) shared_memory: bool,
}

/// Runs process `--process` of the plan in the run of the coordinator at `--connect`.
pub(crate) fn run(
    cli: &Cli,
    matches: &clap::ArgMatches,
    cx: &mut CommandContext<'_>,
) -> anyhow::Result<ExitCode> {
    let args = Args::from_arg_matches(matches)?;
    let join_timeout = seconds("--join-timeout", args.join_timeout)?;
    let mut resolved = cli.resolve_blueprint(&args.blueprint, &cx.env, &args.set)?;
    cli.extend_worker(matches, &args.blueprint, &mut resolved)?;
    let worker = WorkerArgs {
        process: args.process,
        connect: args.connect,
        listen: args.listen,
        run_id: args.run_id,
        join_timeout,
        supervised: args.supervised,
        zenoh_config: args.zenoh_config,
        secret_file: args.secret_file,
        insecure: args.insecure,
        credential_on_stdin: args.credential_on_stdin,
        shared_memory: !args.no_shared_memory,
    };
    work(resolved.into_blueprint(), worker, cx.stop)
}

/// `worker`: run one process of the plan in the run of the coordinator at `--connect`.
fn work(
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
        println!("{}", streamwire_cli::accounting(&report));
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
        (None, Some(run_id)) => {
            crate::access::secret_file(&crate::access::run_folder(run_id), &args.process)
        }
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
