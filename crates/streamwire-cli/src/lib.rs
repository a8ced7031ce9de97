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
//! `topic bench|list|echo`, `completions <SHELL>`; a binary adds more with
//! [`Cli::add_plugin`] (the stock binary: `worker` and `run`'s placement flags from
//! `streamwire_cluster::cli::Distributed`, `info` and `run --record` from
//! `streamwire_mcap::cli::Mcap`, `bench latency` and `bench replay` from the benchmark
//! crates). Configuration keys and sources: [`config`].
//!
//! **Where a plan runs.** A plan of one process runs in this process. A plan of several
//! runs with the [`Runner`] a plugin registered (`streamwire_cluster::cli::Distributed`:
//! as *workers*, `run` the coordinator starting each process of the plan as a child
//! process of the same binary, joined by zenoh). Without one, or with that plugin's
//! `run --in-process`, every process of the plan runs as a partition of this one process,
//! joined by the loopback transport (the same wire frames, no network).

mod commands;
pub mod config;
mod plugin;
mod resolve;
mod rosout;
mod status;
pub mod topic;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::{CommandFactory, FromArgMatches};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use streamwire_graph::Blueprint;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

pub use commands::run::{accounting, exit_code, on_ctrl_c};
pub use commands::seconds;
pub use config::{ConfigError, Setting, Source};
pub use plugin::{
    CommandContext, Handler, Plugin, PluginCommand, Ran, Remote, RemoteFeed, Resolved, RunFlags,
    RunRequest, Runner,
};
use resolve::{Registered, RegisteredKind};
pub use status::status_line;
pub use topic::TopicStats;

/// The command line, with the blueprints a binary registers. Every module type linked
/// into the binary (`#[derive(Module)]`) is known by its tag, for blueprint files.
pub struct Cli {
    name: String,
    about: String,
    blueprints: Vec<Registered>,
    /// Commands plugins added at the top.
    commands: Vec<PluginCommand>,
    /// `bench`'s subcommands (no `bench` without one).
    benches: Vec<PluginCommand>,
    /// Flags plugins added to `run`.
    run_flags: Vec<Box<dyn RunFlags>>,
    /// What runs a plan of several processes (none: partitions of this process).
    runner: Option<Box<dyn Runner>>,
    /// What `topic --connect` joins with (none: `--connect` says so).
    remote_feed: Option<Box<dyn RemoteFeed>>,
}

impl Cli {
    /// The CLI of binary `name` (used in help and completions).
    pub fn new(name: &str, about: &str) -> Cli {
        Cli {
            name: name.to_owned(),
            about: about.to_owned(),
            blueprints: Vec::new(),
            commands: Vec::new(),
            benches: Vec::new(),
            run_flags: Vec::new(),
            runner: None,
            remote_feed: None,
        }
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

    /// Registers blueprint `name`, built by `build` with no config type of its own: its
    /// keys are its instances' `#[config]` fields, `<instance>.<field>` (`camera.fps`), as
    /// in a blueprint file. Each starts at the value `build` gave the module (its declared
    /// `#[config(default = ..)]` where `build` took that), `-o` and the environment change
    /// the module value before anything runs, every field is checked against its declared
    /// `range` before any worker starts, and `config` lists each with what it accepts. The
    /// global keys apply as for [`Cli::blueprint`].
    ///
    /// ```no_run
    /// # use streamwire_cli::Cli;
    /// # use streamwire_graph::Blueprint;
    /// fn robot() -> Blueprint {
    ///     let blueprint = Blueprint::new();
    ///     // blueprint.add("camera", Camera::default()); ...
    ///     blueprint
    /// }
    /// Cli::new("acme-robot", "The ACME robot").blueprint_fn("robot", "camera -> detector", robot);
    /// ```
    pub fn blueprint_fn<F, R>(mut self, name: &str, about: &str, build: F) -> Cli
    where
        F: Fn() -> R + 'static,
        R: IntoBlueprint,
    {
        self.blueprints.push(Registered {
            name: name.to_owned(),
            about: about.to_owned(),
            kind: RegisteredKind::Code {
                defaults: serde_json::Map::new(),
                build: resolve::modules_blueprint(name.to_owned(), build),
            },
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
        let verbose = matches.get_count("verbose");
        let mut context = CommandContext {
            env: env.into_iter().collect(),
            stop,
            verbose,
            out: &mut std::io::stdout(),
        };
        if let Some((name, sub)) = matches.subcommand()
            && let Some(command) = self.plugin_command(name, sub)
        {
            // A worker plans what its coordinator planned and already warned about: its
            // planner's warnings would repeat them once per worker.
            init_logging(verbose, command.quiet_planner);
            let sub = match name {
                "bench" => sub.subcommand().map_or(sub, |(_, m)| m),
                _ => sub,
            };
            return (command.handler)(self, sub, &mut context);
        }
        init_logging(verbose, false);
        let args = commands::Args::from_arg_matches(&matches)?;
        let sub = matches.subcommand().map(|(_, m)| m);
        args.command.run(self, sub, &mut context)
    }

    /// The plugin's command the command line names: `name` itself, or for `bench` the
    /// subcommand of it given in `sub`.
    fn plugin_command(&self, name: &str, sub: &clap::ArgMatches) -> Option<&PluginCommand> {
        let (list, name) = match name {
            "bench" => (&self.benches, sub.subcommand_name()?),
            _ => (&self.commands, name),
        };
        list.iter().find(|c| c.command.get_name() == name)
    }

    /// The clap command: the CLI's own commands and the plugins', in their help order,
    /// with the binary's name.
    pub(crate) fn command(&self) -> clap::Command {
        let command = commands::Args::command();
        // The declared order, read before `mut_subcommand` (which moves the command it
        // changes to the end) reorders them.
        let mut order: Vec<String> = command
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .collect();
        let mut command = command
            .name(self.name.clone())
            .bin_name(self.name.clone())
            .about(self.about.clone())
            .mut_subcommand("config", |c| c.after_long_help(config::help_text()))
            .mut_subcommand("run", |run| self.run_command(run));
        let mut place = |name: &str, after: Option<&str>| {
            let at = after
                .and_then(|a| order.iter().position(|n| n == a))
                .map_or(order.len(), |i| i + 1);
            order.insert(at, name.to_owned());
        };
        for plugin in &self.commands {
            place(plugin.command.get_name(), plugin.after);
        }
        if !self.benches.is_empty() {
            place("bench", Some("topic"));
        }
        for plugin in &self.commands {
            let mut sub = plugin.command.clone();
            if plugin.worker_flags {
                sub = keeping_about(sub, |sub| {
                    self.run_flags
                        .iter()
                        .filter(|f| f.on_workers())
                        .fold(sub, |c, f| f.args(c))
                });
            }
            command = command.subcommand(sub);
        }
        if !self.benches.is_empty() {
            command = command.subcommand(
                self.benches.iter().fold(
                    clap::Command::new("bench")
                        .about("Benchmarks of streamwire itself")
                        .subcommand_required(true)
                        .arg_required_else_help(true),
                    |bench, c| bench.subcommand(c.command.clone()),
                ),
            );
        }
        for (index, name) in order.iter().enumerate() {
            command = command.mut_subcommand(name, |c| c.display_order(index));
        }
        command
    }

    /// `run` with the runner's flags and the plugins' flags; the replay's short flags
    /// (`--replay`, `--fps`, `--rate`, `--loop`) only in the help of a binary with a
    /// blueprint that has a replay source (they still work for a file that has one).
    fn run_command(&self, run: clap::Command) -> clap::Command {
        let run = if self.offers_replay() {
            run
        } else {
            ["replay", "fps", "rate", "looping"]
                .into_iter()
                .fold(run, |run, id| run.mut_arg(id, |arg| arg.hide(true)))
        };
        keeping_about(run, |run| {
            let run = match &self.runner {
                Some(runner) => runner.args(run),
                None => run,
            };
            self.run_flags.iter().fold(run, |run, f| f.args(run))
        })
    }
}

impl Cli {
    /// Whether a registered blueprint has a replay source: a `replay.*` key of a code
    /// blueprint, or an instance `replay` of a file.
    fn offers_replay(&self) -> bool {
        self.blueprints.iter().any(|b| match &b.kind {
            RegisteredKind::Code { defaults, .. } => {
                defaults.keys().any(|k| k.starts_with("replay."))
            }
            RegisteredKind::File { text } => text.lines().any(|l| l.trim_end() == "  replay:"),
        })
    }
}

/// `add` applied to `command`, which keeps its own about texts: a plugin's flags are often
/// a clap `Args` struct, whose doc comment `augment_args` would make the command's about.
fn keeping_about(
    command: clap::Command,
    add: impl FnOnce(clap::Command) -> clap::Command,
) -> clap::Command {
    let about = command.get_about().cloned();
    let long_about = command.get_long_about().cloned();
    let command = add(command);
    let command = match about {
        Some(about) => command.about(about),
        None => command,
    };
    match long_about {
        Some(long_about) => command.long_about(long_about),
        None => command,
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
    let mut quiet = ",zenoh_link_tls::utils=error,zenoh::api::admin=error".to_owned();
    if quiet_planner {
        quiet.push_str(",streamwire_graph::planner=error");
    }
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("{level}{quiet}")));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(filter);
    // Warnings and above also go to `/rosout` (the process's log hub), whatever
    // `--verbose` or `RUST_LOG` print.
    let hub = rosout::ToHub.with_filter(rosout::filter(&quiet));
    // A second CLI in one process (tests) keeps the first subscriber.
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(hub)
        .try_init();
}
