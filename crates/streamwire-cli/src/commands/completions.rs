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

/// Prints the script for `args.shell`. A reader that stops early (`| head -3`) ends it
/// quietly: the script is made first (clap_complete panics on a failed write), and a
/// closed pipe is not an error.
pub(crate) fn run(cli: &Cli, args: &Args, cx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    let mut command = cli.command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, cli.name.clone(), &mut script);
    match cx.out.write_all(&script).and_then(|()| cx.out.flush()) {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        other => {
            other?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
