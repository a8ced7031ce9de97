//! `worker`: one process of a blueprint's plan, joined to a distributed run (the zenoh side
//! is `crate::workers`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;

use super::{Context, seconds};
use crate::Cli;

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
#[cfg_attr(
    not(feature = "zenoh"),
    expect(dead_code, reason = "read by the zenoh workers")
)]
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

/// Runs process `args.process` of the plan in the run of the coordinator at `--connect`.
pub(crate) fn run(cli: &Cli, args: Args, cx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    let join_timeout = seconds("--join-timeout", args.join_timeout)?;
    let built = cli.resolve(&args.blueprint, &cx.env, &args.set)?;
    if !cli.distributed {
        bail!(
            "`{} worker`: this binary runs a plan's processes in one process (its `Cli` \
             has no `.distributed()`, from streamwire-cli's `zenoh` feature)",
            cli.name
        );
    }
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
    #[cfg(feature = "zenoh")]
    {
        crate::workers::work(built.blueprint, worker, cx.stop)
    }
    #[cfg(not(feature = "zenoh"))]
    {
        let _ = (built, worker);
        bail!("`worker` needs streamwire-cli's `zenoh` feature")
    }
}
