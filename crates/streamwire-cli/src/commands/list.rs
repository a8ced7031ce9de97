//! `list`: the registered blueprints and the module tags, one line each.

use std::process::ExitCode;

use streamwire_core::registered_modules;

use super::Context;
use crate::Cli;
use crate::resolve::RegisteredKind;

/// Prints the list.
pub(crate) fn run(cli: &Cli, cx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    write!(cx.out, "{}", list(cli))?;
    Ok(ExitCode::SUCCESS)
}

/// The blueprints (with their config keys) and the module tags (with their config fields).
fn list(cli: &Cli) -> String {
    let mut out = String::from("blueprints:\n");
    if cli.blueprints.is_empty() {
        out.push_str("  (none registered; `run FILE` takes a blueprint file)\n");
    }
    let width = cli
        .blueprints
        .iter()
        .map(|b| b.name.len())
        .max()
        .unwrap_or(0);
    for b in &cli.blueprints {
        let keys = match &b.kind {
            RegisteredKind::Code { defaults, .. } if !defaults.is_empty() => {
                let keys: Vec<&str> = defaults.keys().map(String::as_str).collect();
                format!(" [config: {}]", keys.join(", "))
            }
            _ => String::new(),
        };
        out.push_str(&format!("  {:width$}  {}{keys}\n", b.name, b.about));
    }
    out.push_str("modules (the `type:` of a blueprint file's instance):\n");
    let modules = registered_modules();
    let width = modules.iter().map(|m| m.tag.len()).max().unwrap_or(0);
    for m in modules {
        let fields = if m.config_fields.is_empty() {
            String::new()
        } else {
            format!(" [config: {}]", m.config_fields.join(", "))
        };
        out.push_str(&format!("  {:width$}  {}{fields}\n", m.tag, m.doc));
    }
    out
}
