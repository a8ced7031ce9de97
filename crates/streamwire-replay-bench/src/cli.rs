//! `bench replay` and `bench cell`: the benchmark on the command line, as a plugin of
//! `streamwire-cli`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args as _, FromArgMatches};
use streamwire_cli::{Cli, CommandContext, Plugin, PluginCommand};

/// `bench replay` (and its hidden cell, `bench cell`, which the benchmark starts as this
/// binary again in each cell's namespace), running the blueprints the binary registers
/// under [`ReplayBench::new`]'s names (the stock binary: `streamwire_modules::replay_bench`'s
/// `BenchBlueprint::REGISTERED_NAMES`; the benchmark does not depend on the built-in
/// modules, so the two meet in the binary).
#[derive(Clone, Debug, Default)]
pub struct ReplayBench {
    blueprints: Vec<String>,
}

impl ReplayBench {
    /// The plugin running the blueprints registered as `blueprints`: `bench replay`
    /// refuses to start unless each is registered.
    pub fn new<S: AsRef<str>>(blueprints: &[S]) -> ReplayBench {
        ReplayBench {
            blueprints: blueprints.iter().map(|n| n.as_ref().to_owned()).collect(),
        }
    }
}

impl Plugin for ReplayBench {
    fn build(&self, cli: &mut Cli) {
        // The abouts after `augment_args`, which would take the `Args` structs' doc comments.
        let command = ReplayArgs::augment_args(clap::Command::new("replay")).about(
            "The replay benchmark: real blueprints on real frames, raw against JPEG, each run \
             in a network namespace of its own, with a host sampler; a table, charts and a \
             markdown summary in --out (BENCHMARKS.md says how to read them)",
        );
        let blueprints = self.blueprints.clone();
        cli.add_bench(PluginCommand::new(command, move |cli, matches, cx| {
            let args = ReplayArgs::from_arg_matches(matches)?;
            replay(cli, &blueprints, args, cx)
        }));
        let cell = CellArgs::augment_args(clap::Command::new("cell"))
            .about("One cell of `bench replay` (started by it, in its namespace)")
            .hide(true);
        cli.add_bench(PluginCommand::new(cell, |_cli, matches, _cx| {
            let args = CellArgs::from_arg_matches(matches)?;
            let exe =
                std::env::current_exe().context("cannot find this program to run the cell")?;
            crate::cell::serve(&args.spec, &exe)?;
            Ok(ExitCode::SUCCESS)
        }));
    }
}

/// `bench cell` arguments.
#[derive(clap::Args)]
struct CellArgs {
    /// The cell's spec.json.
    spec: PathBuf,
}

/// `bench replay` arguments.
#[derive(clap::Args)]
struct ReplayArgs {
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

/// `bench replay`: every cell of the options, then the table, the bars and the summary.
fn replay(
    cli: &Cli,
    blueprints: &[String],
    args: ReplayArgs,
    cx: &mut CommandContext<'_>,
) -> anyhow::Result<ExitCode> {
    if blueprints.is_empty() || !blueprints.iter().all(|name| cli.has_blueprint(name)) {
        let names = if blueprints.is_empty() {
            "(named with `ReplayBench::new`)".to_owned()
        } else {
            blueprints.join(", ")
        };
        anyhow::bail!(
            "`bench replay` runs the blueprints {names}, which this binary does not register \
             (the stock `streamwire` binary has them)"
        );
    }
    let base = if args.matrix {
        crate::Options::matrix()
    } else {
        crate::Options::default()
    };
    let replay = match (args.replay, args.sim) {
        (_, true) => None,
        (Some(dir), false) => Some(dir),
        (None, false) => Some(default_frames(&cx.env)?),
    };
    let options = crate::Options {
        blueprints: if args.matrix {
            base.blueprints
        } else {
            args.blueprint
        },
        variants: if args.mode.is_empty() && !args.link.is_empty() {
            crate::Variant::ACROSS_A_LINK.to_vec()
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
                .map(|p| crate::cell::Profile::parse(p))
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
            .map(|l| crate::link::LinkProfile::parse(l))
            .collect::<Result<Vec<_>, _>>()?,
        out: args.out,
    };
    let exe = std::env::current_exe().context("cannot find this program to run the cells")?;
    let outcome = crate::run(&options, &exe, &mut |line| {
        eprintln!("bench: {line}");
    })?;
    write!(
        cx.out,
        "{}{}{}\n{}\nsummary: {}\n",
        crate::summary::table(&outcome.rows),
        crate::summary::link_table(&outcome.rows),
        crate::summary::budget_table(&outcome.cells),
        crate::summary::bars(&outcome.rows),
        outcome.summary.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

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
