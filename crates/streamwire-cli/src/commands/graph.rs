//! `graph`: a blueprint's plan as text, DOT, Mermaid or JSON.

use std::process::ExitCode;

use clap::ValueEnum;

use super::Context;
use crate::Cli;

/// `graph` arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// A registered blueprint's name, or a blueprint file.
    blueprint: String,
    /// text (for people), dot (Graphviz), mermaid, json (a plan summary for tools).
    #[arg(long, value_enum, default_value = "text")]
    format: GraphFormat,
    /// A setting, `key=value` (repeatable).
    #[arg(short = 'o', value_name = "KEY=VALUE")]
    set: Vec<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum GraphFormat {
    Text,
    Dot,
    Mermaid,
    Json,
}

/// Prints the plan of `args.blueprint`.
pub(crate) fn run(cli: &Cli, args: &Args, cx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    let built = cli.resolve(&args.blueprint, &cx.env, &args.set)?;
    let plan = built.blueprint.build()?;
    let text = match args.format {
        GraphFormat::Text => plan.to_string(),
        GraphFormat::Dot => plan.to_dot(),
        GraphFormat::Mermaid => plan.to_mermaid(),
        GraphFormat::Json => serde_json::to_string_pretty(&plan.summary())? + "\n",
    };
    write!(cx.out, "{text}")?;
    Ok(ExitCode::SUCCESS)
}
