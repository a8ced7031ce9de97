//! `completions`: a shell completion script.

use std::process::ExitCode;

use super::Context;
use crate::Cli;

/// `completions` arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The shell.
    shell: clap_complete::Shell,
}

/// Prints the script for `args.shell`.
pub(crate) fn run(cli: &Cli, args: &Args, cx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    let mut command = cli.command();
    clap_complete::generate(args.shell, &mut command, cli.name.clone(), &mut *cx.out);
    Ok(ExitCode::SUCCESS)
}
