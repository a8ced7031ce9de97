//! The commands: one module each, holding its arguments (a clap `Args` struct that
//! [`Command`] wraps) and its implementation.

pub(crate) mod bench;
pub(crate) mod check;
pub(crate) mod completions;
pub(crate) mod config;
pub(crate) mod graph;
pub(crate) mod info;
pub(crate) mod list;
pub(crate) mod run;
pub(crate) mod topic;
pub(crate) mod worker;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
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
    /// Run one process of a blueprint's plan as a worker of a distributed run (`run`
    /// starts its own; start one by hand on another host).
    Worker(worker::Args),
    /// Print a blueprint's plan.
    Graph(graph::Args),
    /// List the registered blueprints and module types.
    List,
    /// What an MCAP file holds (topics, types, counts, rates) and what a replay plays it
    /// as.
    Info(info::Args),
    /// Print a blueprint's effective configuration and where each value came from.
    Config(config::Args),
    /// Parse and build a blueprint file; report every problem (exit status 1 if any).
    Check(check::Args),
    /// Tools on a running blueprint's streams: bench (rate, bandwidth, latency), list,
    /// echo.
    Topic(topic::Args),
    /// Benchmarks of streamwire itself.
    Bench(bench::Args),
    /// Print a shell completion script.
    Completions(completions::Args),
}

/// What every command may use besides its arguments.
pub(crate) struct Context<'a> {
    /// The environment, as `run_args` was given it.
    pub(crate) env: Vec<(String, String)>,
    /// Set to stop a `run` (the Ctrl+C handler sets it too).
    pub(crate) stop: &'a Arc<AtomicBool>,
    /// `-v` given this many times.
    pub(crate) verbose: u8,
    /// Where the command's output goes.
    pub(crate) out: &'a mut dyn Write,
}

impl Command {
    /// Runs the command.
    pub(crate) fn run(self, cli: &Cli, cx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
        match self {
            Command::Run(args) => run::run(cli, args, cx),
            Command::Worker(args) => worker::run(cli, args, cx),
            Command::Graph(args) => graph::run(cli, &args, cx),
            Command::List => list::run(cli, cx),
            Command::Info(args) => info::run(cli, &args, cx),
            Command::Config(args) => config::run(cli, &args, cx),
            Command::Check(args) => check::run(cli, &args, cx),
            Command::Topic(args) => topic::run(cli, args, cx),
            Command::Bench(args) => bench::run(cli, args, cx),
            Command::Completions(args) => completions::run(cli, &args, cx),
        }
    }
}

/// A number of seconds given with `flag`, as a duration (> 0).
pub(crate) fn seconds(flag: &str, s: f64) -> anyhow::Result<Duration> {
    if s.is_finite() && s > 0.0 {
        Ok(Duration::from_secs_f64(s))
    } else {
        bail!("{flag} {s}: expected a number of seconds > 0")
    }
}
