//! `streamwire-demo`: builds the demo blueprint (`streamwire_modules::demo`), prints its
//! plan (or DOT), runs it and prints the runtime's report.

use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use streamwire::prelude::*;
use streamwire_modules::demo::{DemoConfig, demo_blueprint};

/// Build and run the streamwire demo: a camera (the simulated world's, or a replay of
/// recorded frames), depth, lidar and odometry feeding a detector, a mapper, a byte
/// consumer and two busy sinks over three processes on two hosts.
#[derive(Debug, Parser)]
#[command(name = "streamwire-demo", version)]
struct Args {
    /// Replay this folder of numbered JPEG/PNG frames instead of the simulated camera
    /// (sets `replay.dir`).
    #[arg(long, value_name = "DIR")]
    replay: Option<std::path::PathBuf>,
    /// Frames per second of a replayed folder without timestamps.txt (sets `replay.fps`).
    #[arg(long, value_name = "N", requires = "replay")]
    fps: Option<f64>,
    /// Set a demo key, e.g. `-o camera.fps=10 -o busy.work_ms=5`, or the colour stream's
    /// codec setting `jpeg_quality` or `max_width` (repeatable; an unknown key lists the
    /// valid ones).
    #[arg(short = 'o', value_name = "KEY=VALUE")]
    options: Vec<String>,
    /// Print the plan as Graphviz DOT instead of text (and do not run).
    #[arg(long)]
    dot: bool,
    /// Print the plan and stop there, without running the blueprint.
    #[arg(long)]
    plan_only: bool,
    /// How long to run the blueprint after printing its plan, in seconds (Ctrl+C stops
    /// it sooner).
    #[arg(long, default_value_t = 3.0)]
    run_for: f64,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut config = DemoConfig::default();
    if let Some(dir) = &args.replay {
        config.replay.dir = Some(dir.clone());
    }
    if let Some(fps) = args.fps {
        config.replay.fps = Some(fps);
    }
    // The codec settings have the names the `streamwire` command line gives them.
    let mut color = StreamSettings::new();
    let mut color_set = false;
    for option in &args.options {
        let (key, value) = option
            .split_once('=')
            .with_context(|| format!("`-o {option}`: write -o key=value"))?;
        match key.trim() {
            codec_key @ ("jpeg_quality" | "max_width") => {
                color = color.param(codec_key, value.trim());
                color_set = true;
            }
            key => config.set(key, value)?,
        }
    }
    let mut blueprint = demo_blueprint(&config)?;
    if color_set {
        blueprint.stream("color_image", color);
    }
    let plan = blueprint
        .build()
        .context("the demo blueprint does not build")?;
    if args.dot {
        print!("{}", plan.to_dot());
        return Ok(());
    }
    print!("{plan}");
    if args.plan_only {
        return Ok(());
    }
    let run_for = Duration::try_from_secs_f64(args.run_for)
        .context("--run-for takes a number of seconds, like 3 or 0.5")?;
    println!();
    println!(
        "running for {:.1} s (each planned process a partition of this one, joined by the \
         loopback transport; Ctrl+C stops sooner)",
        run_for.as_secs_f64()
    );
    let handle = blueprint
        // Each planned process runs as a partition, its streams to the others crossing
        // the loopback transport as serialized frames, until worker processes exist.
        .run(RunOptions {
            partitions: Partitions::PerProcess,
            ..RunOptions::default()
        })
        .context("the demo did not start")?;
    let stop = handle.stop_flag();
    ctrlc::set_handler(move || stop.stop()).context("cannot install the Ctrl+C handler")?;
    let report = handle.wait_timeout(run_for);
    println!();
    print!("{report}");
    if let Some(failure) = &report.failure {
        anyhow::bail!("the demo failed: {failure}");
    }
    Ok(())
}
