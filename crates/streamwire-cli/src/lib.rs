//! The `streamwire` command line as a library: a user's `main` gets the whole CLI with the
//! user's own modules and blueprints.
//!
//! ```no_run
//! use streamwire_cli::Cli;
//!
//! fn main() -> std::process::ExitCode {
//!     Cli::new("acme-robot", "The ACME robot's software")
//!         // A blueprint file shipped inside the binary (its modules register themselves
//!         // with `#[derive(Module)]`); files on disk are accepted too: `run robot.yaml`.
//!         .blueprint_file("robot", "The robot: camera, detector, logger", "instances: {}\n")
//!         .main()
//! }
//! ```
//!
//! Commands: `run <blueprint | FILE> [--duration S] [-o key=value]...`, `graph <blueprint>
//! [--format text|dot|mermaid|json]`, `list`, `config <blueprint> [-o ...]`, `check <FILE>`,
//! `completions <SHELL>`, and with [`Cli::distributed`] `worker`. Configuration keys and
//! sources: [`config`].
//!
//! **Where a plan runs.** A plan of one process runs in this process. A plan of several
//! runs, with [`Cli::distributed`] (the `zenoh` feature), as *workers*: `run` is the
//! coordinator and starts each process of the plan as a child process of the same binary
//! (`worker`), joined by zenoh; `--host NAME` starts only the processes of host `NAME`
//! here, and the others join by hand from their hosts (`worker --connect tcp/HOST:PORT
//! --process host/process <blueprint>`). Without it, or with `run --in-process`, every
//! process of the plan runs as a partition of this one process, joined by the loopback
//! transport (the same wire frames, no network).

mod commands;
pub mod config;
mod resolve;
mod status;
mod topic;
#[cfg(feature = "zenoh")]
mod workers;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::CommandFactory;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use streamwire_graph::Blueprint;

use commands::Command;
// The paths `workers` and `topic` take them by.
use commands::run::on_ctrl_c;
#[cfg(feature = "zenoh")]
use commands::{run::exit_code, worker::WorkerArgs};
pub use config::{ConfigError, Setting, Source};
use resolve::{Registered, RegisteredKind};
pub use status::status_line;
pub use topic::TopicStats;

/// The command line, with the blueprints a binary registers. Every module type linked
/// into the binary (`#[derive(Module)]`) is known by its tag, for blueprint files.
pub struct Cli {
    name: String,
    about: String,
    blueprints: Vec<Registered>,
    /// The blueprints `bench replay` runs, as the binary named them.
    bench_blueprints: Vec<String>,
    /// Plans of several processes run as worker processes on zenoh.
    distributed: bool,
}

impl Cli {
    /// The CLI of binary `name` (used in help and completions).
    pub fn new(name: &str, about: &str) -> Cli {
        Cli {
            name: name.to_owned(),
            about: about.to_owned(),
            blueprints: Vec::new(),
            bench_blueprints: Vec::new(),
            distributed: false,
        }
    }

    /// Runs plans of several processes as worker processes on zenoh (`run` coordinates,
    /// `worker` joins), instead of as partitions of one process. See the crate docs.
    #[cfg(feature = "zenoh")]
    pub fn distributed(mut self) -> Cli {
        self.distributed = true;
        self
    }

    /// Registers blueprint `name`, built by `build` from a config `C`: `C::default()`
    /// changed by `-o field=value` (each of `C`'s serde fields is a key; a field of a
    /// nested struct is `outer.inner`). The global keys (`compression`, `jpeg_quality`,
    /// `max_width`, `lossy_pixels`, `streams.*`) are applied to the blueprint `build`
    /// returns. `build` returns a `Blueprint`, or a `Result` whose error is shown.
    pub fn blueprint<C, F, R>(mut self, name: &str, about: &str, build: F) -> Cli
    where
        C: Serialize + DeserializeOwned + Default + 'static,
        F: Fn(C) -> R + 'static,
        R: IntoBlueprint,
    {
        let defaults = match serde_json::to_value(C::default()) {
            Ok(Value::Object(map)) => resolve::flatten(map),
            _ => serde_json::Map::new(),
        };
        let build = resolve::code_blueprint(name.to_owned(), defaults.clone(), build);
        self.blueprints.push(Registered {
            name: name.to_owned(),
            about: about.to_owned(),
            kind: RegisteredKind::Code { defaults, build },
        });
        self
    }

    /// Registers blueprint `name` given as YAML text (e.g. `include_str!("robot.yaml")`).
    pub fn blueprint_file(mut self, name: &str, about: &str, yaml: &str) -> Cli {
        self.blueprints.push(Registered {
            name: name.to_owned(),
            about: about.to_owned(),
            kind: RegisteredKind::File {
                text: yaml.to_owned(),
            },
        });
        self
    }

    /// Names the blueprints `bench replay` runs (`streamwire_modules::replay_bench`'s,
    /// which a binary registers with [`Cli::blueprint`]): the CLI does not depend on the
    /// built-in modules (an application's CLI registers its own), so it learns them from
    /// the binary. `bench replay` refuses to start unless each is registered.
    pub fn bench_blueprints<S: AsRef<str>>(mut self, names: &[S]) -> Cli {
        self.bench_blueprints = names.iter().map(|n| n.as_ref().to_owned()).collect();
        self
    }

    /// Runs the command line of this process and returns its exit status: 0 when
    /// everything went well, 1 with the error (a failing module named) otherwise.
    pub fn main(self) -> ExitCode {
        let stop = Arc::new(AtomicBool::new(false));
        let code = self.run_args(std::env::args_os(), std::env::vars(), &stop);
        match code {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        }
    }

    /// Runs the command line `args` (the first is the program name) with environment
    /// `env`. `stop` stops a `run` when set (the Ctrl+C handler sets it too).
    pub fn run_args<I, T>(
        &self,
        args: I,
        env: impl IntoIterator<Item = (String, String)>,
        stop: &Arc<AtomicBool>,
    ) -> anyhow::Result<ExitCode>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = match self.command().try_get_matches_from(args) {
            Ok(m) => m,
            Err(e) => {
                // Help and version are not errors.
                let code = if e.use_stderr() {
                    ExitCode::FAILURE
                } else {
                    ExitCode::SUCCESS
                };
                let _ = e.print();
                return Ok(code);
            }
        };
        let args = <commands::Args as clap::FromArgMatches>::from_arg_matches(&matches)?;
        // A worker plans what its coordinator planned and already warned about: its
        // planner's warnings would repeat them once per worker.
        let quiet_planner = matches!(args.command, Command::Worker(_));
        init_logging(args.verbose, quiet_planner);
        let mut context = commands::Context {
            env: env.into_iter().collect(),
            stop,
            verbose: args.verbose,
            out: &mut std::io::stdout(),
        };
        args.command.run(self, &mut context)
    }

    /// The clap command, with the binary's name and the commands and flags that do not
    /// apply to it hidden.
    pub(crate) fn command(&self) -> clap::Command {
        let mut command = commands::Args::command()
            .name(self.name.clone())
            .bin_name(self.name.clone())
            .about(self.about.clone())
            .mut_subcommand("config", |c| c.after_long_help(config::help_text()));
        // The latency suite starts zenoh peers: shown where zenoh workers are (and the
        // suite is built in), so an application's help does not change with the
        // features a workspace build happens to unify.
        if !(self.distributed && cfg!(feature = "bench")) {
            command = command.mut_subcommand("bench", |c| c.hide(true));
        }
        if self.distributed {
            return command;
        }
        // Without workers every plan runs in this process: the worker command and the
        // placement flags would only mislead.
        command
            .mut_subcommand("worker", |c| c.hide(true))
            .mut_subcommand("run", |c| {
                commands::run::PLACEMENT_FLAGS
                    .into_iter()
                    .fold(c, |c, arg| c.mut_arg(arg, |a| a.hide(true)))
            })
    }
}

/// What a registered blueprint's builder returns: a blueprint, or a result of one.
pub trait IntoBlueprint {
    /// The blueprint, or why it could not be made.
    fn into_blueprint(self) -> Result<Blueprint, Box<dyn std::error::Error + Send + Sync>>;
}

impl IntoBlueprint for Blueprint {
    fn into_blueprint(self) -> Result<Blueprint, Box<dyn std::error::Error + Send + Sync>> {
        Ok(self)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> IntoBlueprint for Result<Blueprint, E> {
    fn into_blueprint(self) -> Result<Blueprint, Box<dyn std::error::Error + Send + Sync>> {
        self.map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
    }
}

fn init_logging(verbose: u8, quiet_planner: bool) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    // A closed run's peers are checked by their certificates (mutual TLS, the run's own
    // CA, access control by common name), never by host name, as a worker's address is
    // not known when its certificate is made: zenoh's warning, on every TLS link, that
    // it skips name verification says nothing a user must act on. Nor does the warning
    // of zenoh's admin space about a link event of a transport already gone, which
    // closing a session with links still going down can print.
    let mut directives = format!("{level},zenoh_link_tls::utils=error,zenoh::api::admin=error");
    if quiet_planner {
        directives.push_str(",streamwire_graph::planner=error");
    }
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&directives));
    // A second CLI in one process (tests) keeps the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}
