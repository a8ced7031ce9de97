//! `check`: parse and build a blueprint file, reporting every problem.

use std::path::PathBuf;
use std::process::ExitCode;

use super::Context;
use crate::Cli;

/// `check` arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The blueprint file.
    file: PathBuf,
    /// A setting, `key=value` (repeatable), checked with the file as `run` would take it.
    #[arg(short = 'o', value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// Builds the plan of `args.file`: its counts, or the error and exit status 1.
pub(crate) fn run(cli: &Cli, args: &Args, cx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    let target = args.file.to_string_lossy().into_owned();
    let plan = match cli
        .resolve(&target, &cx.env, &args.set)
        .and_then(|b| b.blueprint.build().map_err(anyhow::Error::from))
    {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let count =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    writeln!(
        cx.out,
        "ok: {}, {}, {}",
        count(plan.instances().count(), "instance", "instances"),
        count(plan.codec_nodes().count(), "codec node", "codec nodes"),
        count(plan.links().count(), "link", "links")
    )?;
    Ok(ExitCode::SUCCESS)
}
