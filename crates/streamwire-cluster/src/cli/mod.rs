//! The command line's distributed runs, as a plugin of `streamwire-cli`: the `worker`
//! command, `run`'s placement flags and the coordinator behind them (a plan of several
//! processes started as worker processes of the same binary, joined by zenoh), and
//! `topic --connect`'s feed over zenoh, and `topic --ros2`'s of ROS 2 topics over rmw_zenoh.
//!
//! ```no_run
//! use streamwire_cli::Cli;
//! use streamwire_cluster::cli::Distributed;
//!
//! fn main() -> std::process::ExitCode {
//!     Cli::new("acme-robot", "The ACME robot's software")
//!         .add_plugin(Distributed)
//!         .main()
//! }
//! ```

mod coordinate;
mod feed;
mod ros2;
mod worker;

use std::time::Duration;

use clap::{Args as _, FromArgMatches};
use streamwire_cli::{
    Cli, CommandContext, Plugin, PluginCommand, Ran, RunRequest, Runner, seconds,
};
use streamwire_graph::RunnablePlan;

use coordinate::{Coordinate, RunPlacement};

/// Distributed runs: `run` of a plan of several processes coordinates worker processes
/// (this binary's `worker`, one per process of the plan; `--host` starts only one host's,
/// the others join by hand), `run --in-process` runs them as partitions of one process,
/// and `topic --connect` joins a run over zenoh.
#[derive(Clone, Copy, Debug, Default)]
pub struct Distributed;

impl Plugin for Distributed {
    fn build(&self, cli: &mut Cli) {
        // The about after `augment_args`, which would take the `Args` struct's doc comment.
        let command = worker::Args::augment_args(clap::Command::new("worker")).about(
            "Run one process of a blueprint's plan as a worker of a distributed run (`run` \
             starts its own; start one by hand on another host)",
        );
        cli.add_command(
            PluginCommand::new(command, worker::run)
                .after("run")
                // A worker plans what its coordinator planned and already warned about.
                .quiet_planner()
                // `run --record`'s flags: each worker adds the same recorder.
                .with_worker_flags(),
        );
        cli.set_runner(Workers);
        cli.set_remote_feed(feed::ZenohFeeds);
    }
}

/// The runner of plans of several processes: worker processes on zenoh.
struct Workers;

impl Runner for Workers {
    fn args(&self, run: clap::Command) -> clap::Command {
        RunPlacement::augment_args(run)
    }

    fn takes(&self, matches: &clap::ArgMatches) -> anyhow::Result<bool> {
        let placement = RunPlacement::from_arg_matches(matches)?;
        seconds("--join-timeout", placement.join_timeout)?;
        Ok(!placement.in_process)
    }

    fn run(
        &self,
        runnable: RunnablePlan,
        request: &RunRequest<'_>,
        cx: &mut CommandContext<'_>,
    ) -> anyhow::Result<Ran> {
        let placement = RunPlacement::from_arg_matches(request.matches)?;
        let run = Coordinate {
            target: request.target,
            set: request.set,
            record: request.repeated.clone(),
            verbose: request.verbose,
            host: placement.host.clone(),
            listen: placement.listen.clone(),
            run_id: placement.run_id.clone(),
            join_timeout: seconds("--join-timeout", placement.join_timeout)?,
            duration: request.duration,
            zenoh_config: placement.zenoh_config.clone(),
            insecure: placement.insecure,
            shared_memory: !placement.no_shared_memory,
            silent_link: non_negative("--silent-link", placement.silent_link)?,
            allow_silent: placement.allow_silent,
            peer_timeout: non_negative("--peer-timeout", placement.peer_timeout)?,
        };
        let (code, report, access) = coordinate::coordinate(&run, runnable, cx.stop)?;
        Ok(Ran {
            code,
            report,
            access,
        })
    }
}

/// A number of seconds given with `flag`, 0 or more.
fn non_negative(flag: &str, seconds: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| anyhow::anyhow!("{flag} {seconds}: give a number of seconds, 0 or more"))
}
