//! `streamwire-demo`: builds the demo blueprint and prints its plan (or DOT).

use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, ValueEnum};
use streamwire::prelude::*;
use streamwire_demo::{DemoOptions, Layout, demo_blueprint};

/// Build the streamwire demo blueprint (a built-in test-pattern camera feeding a detector,
/// a viewer, a web relay and a mapper) and print its plan.
#[derive(Debug, Parser)]
#[command(name = "streamwire-demo", version)]
struct Args {
    /// Where the instances run.
    #[arg(long, value_enum, default_value_t = LayoutArg::Robot)]
    layout: LayoutArg,
    /// Global compression of compressible streams.
    #[arg(long, value_enum, default_value_t = CompressionArg::Auto)]
    compression: CompressionArg,
    /// JPEG quality of the colour stream, 1 to 100 (default 75).
    #[arg(long)]
    jpeg_quality: Option<u8>,
    /// Downscale colour frames wider than this on compressed links.
    #[arg(long)]
    max_width: Option<u32>,
    /// What to do about inputs that receive lossy pixels.
    #[arg(long, value_enum, default_value_t = ReportArg::Warn)]
    lossy_pixels: ReportArg,
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

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LayoutArg {
    /// Everything in one process.
    OneProcess,
    /// Robot (camera, perception), laptop (viewer, web relay), base station (mapper).
    Robot,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum CompressionArg {
    Auto,
    On,
    Off,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ReportArg {
    Ignore,
    Warn,
    Error,
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
    let options = DemoOptions {
        layout: match args.layout {
            LayoutArg::OneProcess => Layout::OneProcess,
            LayoutArg::Robot => Layout::Robot,
        },
        compression: match args.compression {
            CompressionArg::Auto => Compression::Auto,
            CompressionArg::On => Compression::On,
            CompressionArg::Off => Compression::Off,
        },
        jpeg_quality: args.jpeg_quality,
        max_width: args.max_width,
        lossy_pixels: match args.lossy_pixels {
            ReportArg::Ignore => Report::Ignore,
            ReportArg::Warn => Report::Warn,
            ReportArg::Error => Report::Error,
        },
    };
    let blueprint = demo_blueprint(&options);
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
        "running for {:.1} s (every planned process inside this one; Ctrl+C stops sooner)",
        run_for.as_secs_f64()
    );
    let handle = blueprint
        .run(RunOptions::default())
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
