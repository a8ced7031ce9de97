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
        render_settings(&args.blueprint, &built.settings, &built.accepts)
    )?;
    Ok(ExitCode::SUCCESS)
}

/// One line per key: its value, where it came from, and what it accepts when that is
/// declared (a module's `#[config(range = ..)]`, a global key's values).
pub(crate) fn render_settings(
    target: &str,
    settings: &[Setting],
    accepts: &BTreeMap<String, &'static str>,
) -> String {
    let mut rows: BTreeMap<&str, (&Setting, String)> = BTreeMap::new();
    for s in settings {
        rows.insert(&s.key, (s, format!("({})", s.source)));
    }
    let key_width = rows.keys().map(|k| k.len()).max().unwrap_or(0);
    let value_width = rows.values().map(|(s, _)| s.value.len()).max().unwrap_or(0);
    let source_width = rows.values().map(|(_, f)| f.len()).max().unwrap_or(0);
    let mut out = format!("configuration of `{target}` (lowest to highest: file, env, -o):\n");
    for (key, (s, from)) in rows {
        let line = match accepts.get(key) {
            Some(range) => format!(
                "  {key:key_width$} = {:value_width$}  {from:source_width$}  accepts {range}",
                s.value
            ),
            None => format!("  {key:key_width$} = {:value_width$}  {from}", s.value),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}
