//! `topic bench | list | echo`: the command; the tools themselves (feeds, statistics, the
//! live line) are `crate::topic`.

use std::process::ExitCode;

use anyhow::bail;
use streamwire_graph::Blueprint;

use super::{Context, seconds};
use crate::Cli;
use crate::topic::{self, TopicCommand};

/// `topic` arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: TopicCommand,
}

/// Runs the topic tool `args.command`.
pub(crate) fn run(cli: &Cli, args: Args, cx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    let env = &cx.env;
    let resolve = |target: &str, set: &[String]| -> anyhow::Result<Blueprint> {
        Ok(cli.resolve(target, env, set)?.blueprint)
    };
    let feed = cli.remote_feed.as_deref();
    let optional_seconds = |flag: &str, s: Option<f64>| s.map(|s| seconds(flag, s)).transpose();
    match args.command {
        TopicCommand::Bench {
            stream,
            join,
            duration,
            count,
            wait,
            report,
            qos,
            window,
        } => {
            if count == Some(0) {
                bail!("--count 0: expected at least 1 message");
            }
            let settings = topic::BenchSettings {
                stream,
                duration: optional_seconds("--duration", duration)?,
                count,
                wait: optional_seconds("--wait", wait)?,
                report,
                qos,
                window,
            };
            let report = topic::bench(join.target(&resolve, feed)?, &settings, cx.stop, cx.out)?;
            // Nothing received is an answer, not a failure of the tool; the report says
            // it plainly. Exit status 2 lets a script tell.
            Ok(if report.summary.count == 0 {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            })
        }
        TopicCommand::List { join } => {
            topic::list(join.target(&resolve, feed)?, cx.out)?;
            Ok(ExitCode::SUCCESS)
        }
        TopicCommand::Echo {
            stream,
            join,
            count,
            wait,
        } => {
            let wait = optional_seconds("--wait", wait)?;
            topic::echo(
                join.target(&resolve, feed)?,
                &stream,
                count,
                wait,
                cx.stop,
                cx.out,
            )?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
