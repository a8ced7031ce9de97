//! `config`: a blueprint's effective configuration, each value with where it came from.

use std::collections::BTreeMap;
use std::process::ExitCode;

use super::Context;
use crate::Cli;
use crate::config::Setting;

/// `config` arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// A registered blueprint's name, or a blueprint file.
    blueprint: String,
    /// A setting, `key=value` (repeatable).
    #[arg(short = 'o', value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// Prints the configuration of `args.blueprint`.
pub(crate) fn run(cli: &Cli, args: &Args, cx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    let built = cli.resolve(&args.blueprint, &cx.env, &args.set)?;
    write!(
        cx.out,
        "{}",
        render_settings(&args.blueprint, &built.settings)
    )?;
    Ok(ExitCode::SUCCESS)
}

/// One line per key, its value and where it came from.
pub(crate) fn render_settings(target: &str, settings: &[Setting]) -> String {
    let mut rows: BTreeMap<&str, &Setting> = BTreeMap::new();
    for s in settings {
        rows.insert(&s.key, s);
    }
    let key_width = rows.keys().map(|k| k.len()).max().unwrap_or(0);
    let value_width = rows.values().map(|s| s.value.len()).max().unwrap_or(0);
    let mut out = format!("configuration of `{target}` (lowest to highest: file, env, -o):\n");
    for (key, s) in rows {
        out.push_str(&format!(
            "  {key:key_width$} = {:value_width$}  ({})\n",
            s.value, s.source
        ));
    }
    out
}
