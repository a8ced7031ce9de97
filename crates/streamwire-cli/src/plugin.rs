//! What a binary adds to its command line: [`Plugin`]s, each registering commands, `bench`
//! subcommands, flags of `run`, the runner of plans of several processes, or the feed of
//! `topic --connect` (bevy's `Plugin` and zenohd's statically linked plugins are the
//! model: the binary links each capability by type, so a CLI builds only what it asked
//! for).
//!
//! ```no_run
//! use std::process::ExitCode;
//! use streamwire_cli::{Cli, Plugin, PluginCommand};
//!
//! /// `hello`: a command of this binary's own.
//! struct Hello;
//!
//! impl Plugin for Hello {
//!     fn build(&self, cli: &mut Cli) {
//!         let command = clap::Command::new("hello").about("Say hello");
//!         cli.add_command(PluginCommand::new(command, |_cli, _matches, cx| {
//!             writeln!(cx.out, "hello")?;
//!             Ok(ExitCode::SUCCESS)
//!         }));
//!     }
//! }
//!
//! fn main() -> ExitCode {
//!     Cli::new("acme-robot", "The ACME robot's software").add_plugin(Hello).main()
//! }
//! ```

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clap::ArgMatches;
use streamwire_graph::{Blueprint, RunnablePlan};
use streamwire_runtime::RunReport;

use crate::Cli;
use crate::resolve::Built;
use crate::topic::{Feed, Membership, Requested};

/// A capability a binary adds to its [`Cli`] with [`Cli::add_plugin`].
pub trait Plugin {
    /// Registers the plugin's commands, flags, runner or feed on `cli`.
    fn build(&self, cli: &mut Cli);
}

/// What every command may use besides its arguments.
pub struct CommandContext<'a> {
    /// The environment, as [`Cli::run_args`] was given it.
    pub env: Vec<(String, String)>,
    /// Set to stop a run (the Ctrl+C handler sets it too).
    pub stop: &'a Arc<AtomicBool>,
    /// `-v` given this many times.
    pub verbose: u8,
    /// Where the command's output goes.
    pub out: &'a mut dyn Write,
}

/// What runs a plugin's command: the CLI, the command's own matches, the context.
pub type Handler =
    Box<dyn Fn(&Cli, &ArgMatches, &mut CommandContext<'_>) -> anyhow::Result<ExitCode>>;

/// A command a plugin adds: at the top (`worker`, `info`) or under `bench`.
pub struct PluginCommand {
    pub(crate) command: clap::Command,
    pub(crate) handler: Handler,
    pub(crate) after: Option<&'static str>,
    pub(crate) quiet_planner: bool,
    pub(crate) worker_flags: bool,
}

impl PluginCommand {
    /// The clap command `command`, run by `handler` on its matches.
    pub fn new(
        command: clap::Command,
        handler: impl Fn(&Cli, &ArgMatches, &mut CommandContext<'_>) -> anyhow::Result<ExitCode>
        + 'static,
    ) -> PluginCommand {
        PluginCommand {
            command,
            handler: Box::new(handler),
            after: None,
            quiet_planner: false,
            worker_flags: false,
        }
    }

    /// Shown in the help right after command `name` (default: after the others).
    pub fn after(mut self, name: &'static str) -> PluginCommand {
        self.after = Some(name);
        self
    }

    /// The planner's warnings are not logged (a worker plans what its coordinator
    /// planned and already warned about).
    pub fn quiet_planner(mut self) -> PluginCommand {
        self.quiet_planner = true;
        self
    }

    /// Takes the flags of `run` that workers repeat ([`RunFlags::on_workers`], e.g.
    /// `--record`): read them with [`Cli::extend_worker`].
    pub fn with_worker_flags(mut self) -> PluginCommand {
        self.worker_flags = true;
        self
    }
}

/// Flags a plugin adds to `run`: settings they stand for, instances they add to the
/// blueprint, and what a worker started for the run repeats.
pub trait RunFlags {
    /// Adds the flags to `command` (`run`, and `worker` when [`RunFlags::on_workers`]).
    fn args(&self, command: clap::Command) -> clap::Command;

    /// The `-o` settings the flags given in `matches` stand for, pushed onto `set`.
    fn settings(&self, matches: &ArgMatches, set: &mut Vec<String>) -> anyhow::Result<()> {
        let _ = (matches, set);
        Ok(())
    }

    /// Adds to the resolved blueprint of `target` what the flags ask for (a recorder).
    fn extend(
        &self,
        matches: &ArgMatches,
        target: &str,
        resolved: &mut Resolved,
    ) -> anyhow::Result<()> {
        let _ = (matches, target, resolved);
        Ok(())
    }

    /// Whether a worker takes these flags too (so that its plan is the coordinator's).
    fn on_workers(&self) -> bool {
        false
    }

    /// The flags as given in `matches`, for a worker's command line.
    fn repeated(&self, matches: &ArgMatches) -> Vec<String> {
        let _ = matches;
        Vec::new()
    }
}

/// Runs plans of several processes (as worker processes, in the cluster's plugin); a CLI
/// without one runs every plan in its own process, its processes as partitions joined by
/// the loopback transport.
pub trait Runner {
    /// Adds the runner's flags to `run` (placement, timeouts, access).
    fn args(&self, run: clap::Command) -> clap::Command;

    /// Checks the runner's flags in `run`'s matches, and says whether it takes a plan of
    /// several processes (`false`: run it here, as `--in-process` asks).
    fn takes(&self, matches: &ArgMatches) -> anyhow::Result<bool>;

    /// Runs `runnable`, a plan of several processes, as `request` asks.
    fn run(
        &self,
        runnable: RunnablePlan,
        request: &RunRequest<'_>,
        cx: &mut CommandContext<'_>,
    ) -> anyhow::Result<Ran>;
}

/// A `run` as the command line gave it, for a [`Runner`].
pub struct RunRequest<'a> {
    /// The blueprint as given (a registered name or a file).
    pub target: &'a str,
    /// Every `-o` setting, the ones flags stand for included, in order.
    pub set: &'a [String],
    /// The flags of `run` that workers repeat ([`RunFlags::repeated`]).
    pub repeated: Vec<String>,
    /// `-v` given this many times.
    pub verbose: u8,
    /// `--duration`.
    pub duration: Option<Duration>,
    /// `run`'s matches, for the runner's own flags.
    pub matches: &'a ArgMatches,
}

/// How a run ended.
pub struct Ran {
    /// The exit status.
    pub code: ExitCode,
    /// The (merged) report.
    pub report: RunReport,
    /// Who could join the run, as its screens said it (`closed: ...`, `INSECURE: ...`);
    /// `None` for a run in one process.
    pub access: Option<String>,
}

/// Where `topic --connect` joins a run of other processes.
#[derive(Clone, Debug)]
pub struct Remote {
    /// The endpoints to connect to.
    pub connect: Vec<String>,
    /// The run to join.
    pub run_id: Option<String>,
    /// How the tool joins (its credential, or none).
    pub membership: Membership,
    /// `--ros2`: the ROS 2 topics of this domain over rmw_zenoh (through the router at
    /// `connect`), not a run's streams.
    pub ros2_domain: Option<u32>,
}

/// The feed of `topic --connect`: a stream of a run in other processes.
pub trait RemoteFeed {
    /// Subscribes to `stream` of the run at `remote`; with the warnings of what it could
    /// not grant. With `stats`, the feed publishes `<stream>_stats`.
    fn open(
        &self,
        remote: &Remote,
        stream: &str,
        requested: Requested,
        stats: bool,
    ) -> anyhow::Result<(Box<dyn Feed>, Vec<String>)>;

    /// Writes the streams of the run at `remote` (`topic list`).
    fn list(&self, remote: &Remote, out: &mut dyn Write) -> anyhow::Result<()>;
}

/// A blueprint resolved from the command line (a registered name or a file, with its
/// settings applied), and the settings it was resolved with.
pub struct Resolved {
    pub(crate) built: Built,
}

impl Resolved {
    /// The blueprint.
    pub fn blueprint(&self) -> &Blueprint {
        &self.built.blueprint
    }

    /// The blueprint, to add instances to.
    pub fn blueprint_mut(&mut self) -> &mut Blueprint {
        &mut self.built.blueprint
    }

    /// The blueprint, taken.
    pub fn into_blueprint(self) -> Blueprint {
        self.built.blueprint
    }

    /// The resolved configuration as `config` prints it for `target`.
    pub fn configuration(&self, target: &str) -> String {
        crate::commands::config::render_settings(target, &self.built.settings, &self.built.accepts)
    }
}

impl Cli {
    /// Adds `plugin`'s capabilities (see [`Plugin`]).
    pub fn add_plugin(mut self, plugin: impl Plugin) -> Cli {
        plugin.build(&mut self);
        self
    }

    /// Adds a command at the top level.
    pub fn add_command(&mut self, command: PluginCommand) -> &mut Cli {
        self.commands.push(command);
        self
    }

    /// Adds a subcommand of `bench`, which exists once a plugin added one.
    pub fn add_bench(&mut self, command: PluginCommand) -> &mut Cli {
        self.benches.push(command);
        self
    }

    /// Adds flags to `run`.
    pub fn add_run_flags(&mut self, flags: impl RunFlags + 'static) -> &mut Cli {
        self.run_flags.push(Box::new(flags));
        self
    }

    /// Runs plans of several processes with `runner` (one runner per CLI: the last set).
    pub fn set_runner(&mut self, runner: impl Runner + 'static) -> &mut Cli {
        self.runner = Some(Box::new(runner));
        self
    }

    /// Joins runs of other processes with `feed` for `topic --connect`.
    pub fn set_remote_feed(&mut self, feed: impl RemoteFeed + 'static) -> &mut Cli {
        self.remote_feed = Some(Box::new(feed));
        self
    }

    /// The binary's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether blueprint `name` is registered.
    pub fn has_blueprint(&self, name: &str) -> bool {
        self.blueprints.iter().any(|b| b.name == name)
    }

    /// Resolves `target` (a registered name or a file) with the environment `env` and the
    /// settings `set`, as `run` does.
    pub fn resolve_blueprint(
        &self,
        target: &str,
        env: &[(String, String)],
        set: &[String],
    ) -> anyhow::Result<Resolved> {
        Ok(Resolved {
            built: self.resolve(target, env, set)?,
        })
    }

    /// Applies to a worker's `resolved` blueprint the flags of `run` that workers repeat,
    /// as given in the worker command's `matches` (see [`PluginCommand::with_worker_flags`]).
    pub fn extend_worker(
        &self,
        matches: &ArgMatches,
        target: &str,
        resolved: &mut Resolved,
    ) -> anyhow::Result<()> {
        for flags in self.run_flags.iter().filter(|f| f.on_workers()) {
            flags.extend(matches, target, resolved)?;
        }
        Ok(())
    }
}
