//! MCAP on the command line, as a plugin of `streamwire-cli`: `run --record FILE.mcap`
//! (a recorder added to the run), `run --replay FILE.mcap`'s flags (`--replay-map`,
//! `--start`: which topic plays on which output, where to start) and the `info` command.
//! A blueprint's replay of an MCAP file is the blueprint's own (the stock binary hands
//! the built-in demo a replay format for it).
//!
//! ```no_run
//! use streamwire_cli::Cli;
//! use streamwire_mcap::cli::Mcap;
//!
//! fn main() -> std::process::ExitCode {
//!     Cli::new("acme-robot", "The ACME robot's software")
//!         .add_plugin(Mcap)
//!         .main()
//! }
//! ```

mod info;
mod record;

use clap::{Args as _, FromArgMatches};
use streamwire_cli::{Cli, Plugin, PluginCommand, RunFlags};

/// `run --record`, the MCAP flags of `run --replay`, and `info`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mcap;

impl Plugin for Mcap {
    fn build(&self, cli: &mut Cli) {
        cli.add_run_flags(Replay);
        cli.add_run_flags(record::Record);
        // The about after `augment_args`, which would take the `Args` struct's doc comment.
        let command = info::Args::augment_args(clap::Command::new("info")).about(
            "What an MCAP file holds (topics, types, counts, rates) and what a replay plays \
             it as",
        );
        cli.add_command(
            PluginCommand::new(command, |cli, matches, cx| {
                info::run(cli, &info::Args::from_arg_matches(matches)?, cx)
            })
            .after("list"),
        );
    }
}

/// `run --replay FILE.mcap`'s own flags.
#[derive(clap::Args)]
struct ReplayArgs {
    /// An MCAP file's topic to play on a replay output, `TOPIC=OUTPUT` (repeatable or
    /// comma separated; the rest map by name and type, `info FILE.mcap` shows how): short
    /// for `-o replay.map=...`.
    #[arg(long, value_name = "TOPIC=OUTPUT", requires = "replay")]
    replay_map: Vec<String>,
    /// Skip the MCAP file's first S seconds: short for `-o replay.start_s=S`.
    #[arg(long, value_name = "S", requires = "replay")]
    start: Option<f64>,
}

/// `--replay` takes an MCAP file too, and its topics' flags.
struct Replay;

impl RunFlags for Replay {
    fn args(&self, command: clap::Command) -> clap::Command {
        let command = command.mut_arg("replay", |arg| {
            arg.value_name("DIR|FILE.mcap").help(
                "Replay this folder of frames, or this MCAP file (a recording, or a rosbag2 \
                 bag's `.mcap`): short for `-o replay.dir=PATH` (blueprints with a replay \
                 source, like `demo`)",
            )
        });
        ReplayArgs::augment_args(command)
    }

    fn settings(&self, matches: &clap::ArgMatches, set: &mut Vec<String>) -> anyhow::Result<()> {
        let args = ReplayArgs::from_arg_matches(matches)?;
        if !args.replay_map.is_empty() {
            set.push(format!("replay.map={}", args.replay_map.join(",")));
        }
        if let Some(start) = args.start {
            set.push(format!("replay.start_s={start}"));
        }
        Ok(())
    }
}
