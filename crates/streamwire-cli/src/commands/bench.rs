//! `bench latency` and `bench replay`: the command-line side of `streamwire_latency_bench` and
//! `streamwire_replay_bench` (the `bench` feature; without it, `bench` says so).

use std::path::PathBuf;
#[cfg(feature = "bench")]
use std::process::Command;
use std::process::ExitCode;

#[cfg(feature = "bench")]
use anyhow::Context as _;

use clap::Subcommand;

use super::Context;
use crate::Cli;

/// `bench` arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: BenchCommand,
}

/// `bench` and its subcommands.
#[derive(Subcommand)]
pub(crate) enum BenchCommand {
    /// Latency and throughput across payload sizes and transports, against bare zenoh
    /// and a bare channel (`BENCH_CSV=1`: CSV on stdout, the table on stderr).
    Latency(LatencyArgs),
    /// The replay benchmark: real blueprints on real frames, raw against JPEG, each run
    /// in a network namespace of its own, with a host sampler; a table, charts and a
    /// markdown summary in --out (BENCHMARKS.md says how to read them).
    Replay(ReplayArgs),
    /// One cell of `bench replay` (started by it, in its namespace).
    #[command(hide = true)]
    Cell {
        /// The cell's spec.json.
        spec: PathBuf,
    },
    /// The far side of `bench latency` (started by it).
    #[command(hide = true)]
    Peer {
        /// The peer's own arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// `bench latency` arguments.
#[derive(clap::Args)]
pub(crate) struct LatencyArgs {
    /// Round trips per size.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    samples: usize,
    /// Payload sizes in bytes, comma-separated (default: 10 sizes from 0 B to 4 MiB).
    #[arg(long, value_name = "BYTES,..", value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Payload sizes of the 16-hop chain (default: 0, 4096, 65536).
    #[arg(long, value_name = "BYTES,..", value_delimiter = ',')]
    chain_sizes: Vec<usize>,
    /// What to measure, comma-separated: in-process, loopback, zenoh, zenoh-closed (a
    /// closed run's TLS and access control), zenoh-shm, chain (default: all).
    #[arg(long, value_name = "NAME,..", value_delimiter = ',')]
    transport: Vec<String>,
}

/// `bench replay` arguments.
#[derive(clap::Args)]
pub(crate) struct ReplayArgs {
    /// basic, full or heavy (comma-separated for several).
    #[arg(
        long,
        value_name = "NAME,..",
        value_delimiter = ',',
        default_value = "heavy"
    )]
    blueprint: Vec<String>,
    /// raw (pixels, shared memory on), raw-tcp (pixels, shared memory off), codec
    /// (JPEG q75), auto (pixels within a host, JPEG across a link), budget (auto with the
    /// colour stream's max_bitrate at 80% of the link's rate; with --link), comma-separated
    /// (default: raw, raw-tcp and codec; with --link raw, codec and auto).
    #[arg(long, value_name = "MODE,..", value_delimiter = ',')]
    mode: Vec<String>,
    /// Split each blueprint between a robot and an operator's laptop joined by a shaped
    /// link: wifi (50 Mbit/s, 5 ± 2 ms), weak-wifi (8 Mbit/s, 20 ± 10 ms), or
    /// rate=MBIT,delay=MS,jitter=MS (repeatable: each). Needs root (network namespaces,
    /// tc).
    #[arg(long, value_name = "PROFILE")]
    link: Vec<String>,
    /// all (every core) or constrained (`taskset -c 0`), comma-separated (default
    /// all; --matrix: both).
    #[arg(long, value_name = "NAME,..", value_delimiter = ',')]
    profile: Vec<String>,
    /// Busy sinks (default: the blueprint's own, 1 / 0 / 4).
    #[arg(long, value_name = "N")]
    sinks: Option<usize>,
    /// CPU-ms of real image work per frame, each busy sink (comma-separated: each).
    #[arg(long, value_name = "MS,..", value_delimiter = ',')]
    work_ms: Vec<f64>,
    /// Seconds each run lasts.
    #[arg(long, value_name = "S", default_value_t = 20.0)]
    duration: f64,
    /// Where the results, charts and summary go.
    #[arg(long, value_name = "DIR", default_value = "target/bench-replay")]
    out: PathBuf,
    /// The folder of frames, or an MCAP file whose colour topic is the camera (default:
    /// $STREAMWIRE_DATA/cockatoo_720p, or ../shared/data/cockatoo_720p).
    #[arg(long, value_name = "DIR|FILE.mcap", conflicts_with = "sim")]
    replay: Option<PathBuf>,
    /// Use the simulated camera instead of recorded frames.
    #[arg(long)]
    sim: bool,
    /// The camera's frame rate (default: as recorded).
    #[arg(long, value_name = "F")]
    fps: Option<f64>,
    /// Every blueprint, both profiles, every mode, 3 repetitions (unless given).
    #[arg(long)]
    matrix: bool,
    /// Repetitions of each cell (default 1; --matrix 3).
    #[arg(long, value_name = "N")]
    reps: Option<usize>,
    /// Run in this machine's network namespace (no root needed; the loopback
    /// counter then sees everything on it).
    #[arg(long)]
    no_netns: bool,
}

/// Runs `bench latency`, `bench replay` (or their hidden peer and cell).
#[cfg(feature = "bench")]
pub(crate) fn run(cli: &Cli, args: Args, cx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    match args.command {
        BenchCommand::Cell { spec } => {
            let exe =
                std::env::current_exe().context("cannot find this program to run the cell")?;
            streamwire_replay_bench::cell::serve(&spec, &exe)?;
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Peer { args } => {
            streamwire_latency_bench::serve_peer(&args)?;
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Replay(args) => replay(cli, args, cx),
        BenchCommand::Latency(args) => latency(args, cx),
    }
}

/// Without the `bench` feature: says where it is.
#[cfg(not(feature = "bench"))]
pub(crate) fn run(_cli: &Cli, args: Args, _cx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    let _ = args.command;
    anyhow::bail!(
        "`bench` needs streamwire-cli's `bench` feature (the stock `streamwire` binary has it)"
    )
}

/// Whether every blueprint `bench replay` runs is registered (the binary names them with
/// [`Cli::bench_blueprints`]).
#[cfg(feature = "bench")]
fn replay_blueprints_registered(cli: &Cli) -> bool {
    !cli.bench_blueprints.is_empty()
        && cli
            .bench_blueprints
            .iter()
            .all(|name| cli.blueprints.iter().any(|b| b.name == *name))
}

/// `bench replay`: every cell of the options, then the table, the bars and the summary.
#[cfg(feature = "bench")]
fn replay(cli: &Cli, args: ReplayArgs, cx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    if !replay_blueprints_registered(cli) {
        let names = if cli.bench_blueprints.is_empty() {
            "(named with `Cli::bench_blueprints`)".to_owned()
        } else {
            cli.bench_blueprints.join(", ")
        };
        anyhow::bail!(
            "`bench replay` runs the blueprints {names}, which this binary does not register \
             (the stock `streamwire` binary has them)"
        );
    }
    let base = if args.matrix {
        streamwire_replay_bench::Options::matrix()
    } else {
        streamwire_replay_bench::Options::default()
    };
    let replay = match (args.replay, args.sim) {
        (_, true) => None,
        (Some(dir), false) => Some(dir),
        (None, false) => Some(default_frames(&cx.env)?),
    };
    let options = streamwire_replay_bench::Options {
        blueprints: if args.matrix {
            base.blueprints
        } else {
            args.blueprint
        },
        variants: if args.mode.is_empty() && !args.link.is_empty() {
            streamwire_replay_bench::Variant::ACROSS_A_LINK.to_vec()
        } else if args.mode.is_empty() {
            base.variants
        } else {
            args.mode
                .iter()
                .map(|m| m.parse())
                .collect::<Result<Vec<_>, _>>()?
        },
        profiles: if args.profile.is_empty() {
            base.profiles
        } else {
            args.profile
                .iter()
                .map(|p| streamwire_replay_bench::cell::Profile::parse(p))
                .collect::<Result<Vec<_>, _>>()?
        },
        reps: args.reps.unwrap_or(base.reps),
        sinks: args.sinks,
        work_ms: if args.work_ms.is_empty() {
            base.work_ms
        } else {
            args.work_ms
        },
        duration_s: args.duration,
        replay,
        fps: args.fps,
        netns: !args.no_netns,
        links: args
            .link
            .iter()
            .map(|l| streamwire_replay_bench::link::LinkProfile::parse(l))
            .collect::<Result<Vec<_>, _>>()?,
        out: args.out,
    };
    let exe = std::env::current_exe().context("cannot find this program to run the cells")?;
    let outcome = streamwire_replay_bench::run(&options, &exe, &mut |line| {
        eprintln!("bench: {line}");
    })?;
    write!(
        cx.out,
        "{}{}{}\n{}\nsummary: {}\n",
        streamwire_replay_bench::summary::table(&outcome.rows),
        streamwire_replay_bench::summary::link_table(&outcome.rows),
        streamwire_replay_bench::summary::budget_table(&outcome.cells),
        streamwire_replay_bench::summary::bars(&outcome.rows),
        outcome.summary.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `bench latency`: the suite against its peer (this program's `bench peer`).
#[cfg(feature = "bench")]
fn latency(args: LatencyArgs, cx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    use streamwire_latency_bench::{Options, Transport};
    if args.samples == 0 {
        anyhow::bail!("--samples 0: expected at least 1");
    }
    let defaults = Options::default();
    let transports = if args.transport.is_empty() {
        defaults.transports.clone()
    } else {
        args.transport
            .iter()
            .map(|t| t.parse::<Transport>().map_err(anyhow::Error::msg))
            .collect::<anyhow::Result<Vec<_>>>()?
    };
    let options = Options {
        samples: args.samples,
        sizes: if args.sizes.is_empty() {
            defaults.sizes
        } else {
            args.sizes
        },
        chain_sizes: if args.chain_sizes.is_empty() {
            defaults.chain_sizes
        } else {
            args.chain_sizes
        },
        transports,
    };
    let exe = std::env::current_exe().context("cannot find this program to start the peer")?;
    let peer = move || {
        let mut c = Command::new(&exe);
        c.arg("bench").arg("peer");
        c
    };
    let suite =
        streamwire_latency_bench::run(&options, &peer, &mut |line| eprintln!("bench: {line}"))?;
    let csv = cx
        .env
        .iter()
        .any(|(k, v)| k == "BENCH_CSV" && !v.is_empty());
    if csv {
        // Machine-readable on stdout, the table for people on stderr.
        write!(cx.out, "{}", suite.to_csv())?;
        eprint!("{suite}");
    } else {
        write!(cx.out, "{suite}")?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "bench")]
/// The recorded frames the benchmark plays by default.
fn default_frames(env: &[(String, String)]) -> anyhow::Result<PathBuf> {
    let from_env = env
        .iter()
        .find(|(k, v)| k == "STREAMWIRE_DATA" && !v.is_empty())
        .map(|(_, v)| PathBuf::from(v).join("cockatoo_720p"));
    let candidates: Vec<PathBuf> = from_env
        .into_iter()
        .chain([PathBuf::from("../shared/data/cockatoo_720p")])
        .collect();
    candidates
        .iter()
        .find(|p| p.is_dir())
        // Absolute, so the summary and every cell's spec say where the frames were.
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .with_context(|| {
            format!(
                "no recorded frames at {}: pass --replay DIR (a folder of numbered frames), or \
                 --sim for the simulated camera",
                candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" or ")
            )
        })
}
