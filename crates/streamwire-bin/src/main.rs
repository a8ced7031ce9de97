//! The stock `streamwire` binary: the CLI library with the built-in modules and
//! blueprints. A robot application is its own binary calling `streamwire::cli::Cli` the
//! same way, with its own modules (see `examples/app`).

use std::process::ExitCode;

use serde::{Deserialize, Serialize};
use streamwire::cli::Cli;
use streamwire_demo::{DemoOptions, Layout, demo_blueprint};

/// The demo's own knobs (`-o one_process=true`); compression, `jpeg_quality`,
/// `max_width` and `streams.*` are the CLI's global keys.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct DemoConfig {
    /// Everything in one process (no codec nodes) instead of the robot layout.
    one_process: bool,
}

fn main() -> ExitCode {
    // Built-in blueprints, each by name with its serde config type.
    Cli::new(
        "streamwire",
        "Typed robot dataflow: run, inspect and configure blueprints",
    )
    .blueprint(
        "demo",
        "test-pattern camera -> detector, viewer, web relay, mapper on three hosts",
        |cfg: DemoConfig| {
            demo_blueprint(&DemoOptions {
                layout: if cfg.one_process {
                    Layout::OneProcess
                } else {
                    Layout::Robot
                },
                ..DemoOptions::default()
            })
        },
    )
    .main()
}
