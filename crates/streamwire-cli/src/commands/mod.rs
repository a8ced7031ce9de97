//! The commands: one module each, holding its arguments (a clap `Args` struct that
//! [`Command`] wraps) and its implementation.

pub(crate) mod check;
pub(crate) mod completions;
pub(crate) mod config;
pub(crate) mod graph;
pub(crate) mod list;
pub(crate) mod run;
pub(crate) mod topic;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use clap::{Parser, Subcommand};

use crate::Cli;

#[derive(Parser)]
#[command(version)]
pub(crate) struct Args {
    /// More logs: -v info, -vv debug, -vvv trace (`RUST_LOG` overrides).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub(crate) verbose: u8,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run a blueprint (registered name or file) and print its report.
    Run(run::Args),
    /// Print a blueprint's plan.
    Graph(graph::Args),
    /// List the registered blueprints and module types.
    List,
    /// Print a blueprint's effective configuration and where each value came from.
    Config(config::Args),
    /// Parse and build a blueprint file; report every problem (exit status 1 if any).
    Check(check::Args),
    /// Tools on a running blueprint's streams: bench (rate, bandwidth, latency), list,
    /// echo.
    Topic(topic::Args),
    /// Print a shell completion script.
    Completions(completions::Args),
}

/// What every command may use besides its arguments.
pub(crate) use crate::plugin::CommandContext as Context;

impl Command {
    /// Runs the command.
    /// `matches` are the command's own (`run` reads its plugins' flags from them).
    pub(crate) fn run(
        self,
        cli: &Cli,
        matches: Option<&clap::ArgMatches>,
        cx: &mut Context<'_>,
    ) -> anyhow::Result<ExitCode> {
        match self {
            Command::Run(args) => run::run(cli, args, matches, cx),
            Command::Graph(args) => graph::run(cli, &args, cx),
            Command::List => list::run(cli, cx),
            Command::Config(args) => config::run(cli, &args, cx),
            Command::Check(args) => check::run(cli, &args, cx),
            Command::Topic(args) => topic::run(cli, args, cx),
            Command::Completions(args) => completions::run(cli, &args, cx),
        }
    }
}

/// A number of seconds given with `flag`, as a duration (> 0).
pub fn seconds(flag: &str, s: f64) -> anyhow::Result<Duration> {
    if s.is_finite() && s > 0.0 {
        Ok(Duration::from_secs_f64(s))
    } else {
        bail!("{flag} {s}: expected a number of seconds > 0")
    }
}
