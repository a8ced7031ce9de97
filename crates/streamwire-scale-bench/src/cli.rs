//! `bench soak`: the soak on the command line, as a plugin of `streamwire-cli`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context as _;
use clap::{Args as _, FromArgMatches};
use streamwire_cli::{Cli, CommandContext, Plugin, PluginCommand, seconds};

use crate::analysis::Limits;
use crate::soak::{SoakOptions, soak};
use crate::sweeps::cli::ScaleArgs;

/// The blueprints of the stock binary whose web relay the soak moves to a free port
/// (`-o web.port=0`), so that a soak runs beside another run of them.
const STOCK_DEMOS: [&str; 2] = ["demo", "demo-split"];

/// `bench soak`, running the binary's own `run` (the stock `streamwire` binary: a
/// distributed run of its coordinator and workers, closed).
#[derive(Clone, Copy, Debug, Default)]
pub struct ScaleBench;

impl Plugin for ScaleBench {
    fn build(&self, cli: &mut Cli) {
        // The about after `augment_args`, which would take the `Args` struct's doc comment.
        let command = SoakArgs::augment_args(clap::Command::new("soak")).about(
            "The soak: a real `run` of a blueprint for --duration, each of its processes \
             sampled every --interval (private memory, RSS, fds, threads), its /dev/shm \
             segments and counters; growth per hour after a warm-up, the report's balance, \
             a CSV and a chart in --out; exit status 1 when a rule is broken (BENCHMARKS.md)",
        );
        cli.add_bench(PluginCommand::new(command, |cli, matches, cx| {
            let args = SoakArgs::from_arg_matches(matches)?;
            soak_command(cli, args, cx)
        }));
        let command = ScaleArgs::augment_args(clap::Command::new("scale")).about(
            "The sweeps: real runs of more and more consumers (one 720p stream, raw and JPEG), \
             streams (64 B at 100 Hz) and worker processes, --duration each; per sweep a CSV, \
             a table and a chart in --out (BENCHMARKS.md)",
        );
        cli.add_bench(PluginCommand::new(command, |_cli, matches, cx| {
            let args = ScaleArgs::from_arg_matches(matches)?;
            crate::sweeps::cli::scale_command(args, cx)
        }));
    }
}

/// `bench soak` arguments.
#[derive(clap::Args)]
struct SoakArgs {
    /// The blueprint to run (a registered name or a file).
    #[arg(long, value_name = "NAME", default_value = "demo-split")]
    blueprint: String,
    /// Seconds the run runs.
    #[arg(long, value_name = "S", default_value_t = 3600.0)]
    duration: f64,
    /// Seconds between samples.
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    interval: f64,
    /// Seconds of warm-up not judged (default: 300, or a fifth of a shorter run).
    #[arg(long, value_name = "S")]
    warmup: Option<f64>,
    /// The most a process's private memory (PSS) may grow after the warm-up, percent.
    #[arg(long, value_name = "PCT", default_value_t = 2.0)]
    max_private_growth: f64,
    /// A setting for `run`, `key=value` (repeatable; the stock demos get web.port=0
    /// unless one is given).
    #[arg(short = 'o', value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Where the log, report, CSV, summary and chart go.
    #[arg(long, value_name = "DIR", default_value = "target/bench-soak")]
    out: PathBuf,
    /// More flags for `run` (`-- --insecure`).
    #[arg(last = true, value_name = "RUN_FLAGS")]
    run_flags: Vec<String>,
}

fn soak_command(
    cli: &Cli,
    args: SoakArgs,
    cx: &mut CommandContext<'_>,
) -> anyhow::Result<ExitCode> {
    if !cli.has_blueprint(&args.blueprint) && !std::path::Path::new(&args.blueprint).is_file() {
        anyhow::bail!(
            "`{}` is neither a blueprint of this binary nor a file (`streamwire list` names them)",
            args.blueprint
        );
    }
    let duration = seconds("--duration", args.duration)?;
    let interval = seconds("--interval", args.interval)?;
    let warmup = args.warmup.map(|s| seconds("--warmup", s)).transpose()?;
    let mut settings = args.set;
    if STOCK_DEMOS.contains(&args.blueprint.as_str())
        && !settings.iter().any(|s| s.starts_with("web.port="))
    {
        settings.push("web.port=0".to_owned());
    }
    let options = SoakOptions {
        interval,
        warmup,
        settings,
        run_args: args.run_flags,
        limits: Limits {
            private_growth_pct: args.max_private_growth,
            ..Limits::default()
        },
        ..SoakOptions::new(&args.blueprint, duration, &args.out)
    };
    let exe = std::env::current_exe().context("cannot find this program to run the blueprint")?;
    eprintln!(
        "soak: `{}` for {} s, a sample every {} s, {} s of warm-up; log, report, CSV and chart in {}",
        options.blueprint,
        duration.as_secs_f64(),
        interval.as_secs_f64(),
        options.warmup().as_secs_f64(),
        options.out.display()
    );
    // Ctrl+C reaches this process (the run is in a process group of its own): the soak
    // hands it on, and judges the run that stopped.
    let ctrl_c = cx.stop.clone();
    streamwire_cli::on_ctrl_c(move || ctrl_c.store(true, Ordering::SeqCst));
    let stop = cx.stop.clone();
    let outcome = soak(
        &options,
        &exe,
        &|| stop.load(Ordering::SeqCst),
        &mut |line| {
            eprintln!("soak: {line}");
        },
    )?;
    crate::output::write(&options.out, &outcome)?;
    crate::charts::write(
        &options.out,
        "soak",
        &format!(
            "Soak of {}: {:.0} min",
            options.blueprint,
            duration.as_secs_f64() / 60.0
        ),
        &outcome.ticks,
        options.warmup().as_secs_f64(),
    )?;
    writeln!(cx.out, "{}", crate::output::table(&outcome.growth))?;
    match &outcome.report {
        Some(report) => {
            writeln!(cx.out, "report: {}", crate::output::losses(report))?;
            writeln!(cx.out, "{}", streamwire_cli::accounting(report))?;
        }
        None => writeln!(cx.out, "report: none")?,
    }
    if !outcome.segments_left.is_empty() {
        writeln!(
            cx.out,
            "shm: {} segment(s) the run mapped outlived it (removed)",
            outcome.segments_left.len()
        )?;
    }
    if outcome.broken.is_empty() {
        writeln!(
            cx.out,
            "soak: passed (chart: {})",
            options.out.join("soak.png").display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(cx.out, "soak: {} rule(s) broken:", outcome.broken.len())?;
    for line in &outcome.broken {
        writeln!(cx.out, "  {line}")?;
    }
    Ok(ExitCode::FAILURE)
}
