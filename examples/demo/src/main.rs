//! `streamwire-demo`: builds the demo blueprint and prints its plan (or DOT).

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
    /// Print the plan as Graphviz DOT instead of text.
    #[arg(long)]
    dot: bool,
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
    let plan = demo_blueprint(&options)
        .build()
        .context("the demo blueprint does not build")?;
    if args.dot {
        print!("{}", plan.to_dot());
    } else {
        print!("{plan}");
    }
    Ok(())
}
