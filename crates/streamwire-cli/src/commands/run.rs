//! `run`: a blueprint's plan started here (its processes as partitions of this one), or
//! coordinated as worker processes on zenoh; the status line, then the report.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use streamwire_graph::RunnablePlan;
use streamwire_runtime::{EndReason, RunOptions, RunReport, Runtime};

use super::{Context, seconds};
use crate::{Cli, status_line};

/// `run` arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// A registered blueprint's name, or a blueprint file (.yaml, .yml, .json).
    blueprint: String,
    /// Stop after this many seconds (default: until Ctrl+C or every module finished).
    #[arg(long, value_name = "S")]
    duration: Option<f64>,
    /// A setting, `key=value` (repeatable); `streamwire config` lists the keys.
    #[arg(short = 'o', value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Replay this folder of frames, or this MCAP file (a recording, or a rosbag2 bag's
    /// `.mcap`): short for `-o replay.dir=PATH` (blueprints with a replay source, like
    /// `demo`).
    #[arg(long, value_name = "DIR|FILE.mcap")]
    replay: Option<PathBuf>,
    /// The replay's frame rate when the folder has no timestamps: short for
    /// `-o replay.fps=N`.
    #[arg(long, value_name = "N", requires = "replay")]
    fps: Option<f64>,
    /// An MCAP file's topic to play on a replay output, `TOPIC=OUTPUT` (repeatable or
    /// comma separated; the rest map by name and type, `info FILE.mcap` shows how): short
    /// for `-o replay.map=...`.
    #[arg(long, value_name = "TOPIC=OUTPUT", requires = "replay")]
    replay_map: Vec<String>,
    /// The replay's speed (2: twice as fast): short for `-o replay.rate=R`.
    #[arg(long, value_name = "R", requires = "replay")]
    rate: Option<f64>,
    /// Play the replay again from its start at its end: short for
    /// `-o replay.looping=true` (the built-in blueprints loop by default;
    /// `-o replay.looping=false` plays once).
    #[arg(long = "loop", requires = "replay")]
    looping: bool,
    /// Skip the MCAP file's first S seconds: short for `-o replay.start_s=S`.
    #[arg(long, value_name = "S", requires = "replay")]
    start: Option<f64>,
    #[command(flatten)]
    placement: RunPlacement,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    #[command(flatten)]
    record: crate::record::RecordArgs,
}

/// Where `run` runs a plan of several processes.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct RunPlacement {
    /// Run every process of the plan as a partition of this one process, joined by the
    /// loopback transport (no workers).
    #[arg(long)]
    in_process: bool,
    /// Start only the processes placed on this host; the others join by hand (`worker
    /// --connect`). Default: every process of the plan, on this machine.
    #[arg(long, value_name = "NAME")]
    host: Option<String>,
    /// Where the coordinator listens for workers (repeatable; default
    /// `tcp/127.0.0.1:0`, a free port on loopback).
    #[arg(long, value_name = "ENDPOINT")]
    listen: Vec<String>,
    /// How long to wait for every worker to be ready.
    #[arg(long, value_name = "S", default_value_t = 30.0)]
    join_timeout: f64,
    /// The run's id, the first chunk of its zenoh keys (default `run<pid>`).
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
    /// A zenoh configuration file (JSON5) for the coordinator and the workers it starts:
    /// TLS or mTLS endpoints, user/password authentication, access control.
    #[arg(long, value_name = "FILE")]
    zenoh_config: Option<PathBuf>,
    /// Open the run to every process that reaches its endpoints: no credentials, no
    /// access control (said on every screen and in the report). Without it a run is
    /// closed: a certificate per process, mutual TLS, zenoh access control from the plan.
    #[arg(long)]
    insecure: bool,
    /// Start the workers without shared memory (`worker --no-shared-memory`): large frames
    /// between the processes of a host are then copied through TCP.
    #[arg(long)]
    no_shared_memory: bool,
    /// A planned link between processes that received nothing for this long while its
    /// sender sent is *silent*: named with a warning and in the report, exit status 3.
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    silent_link: f64,
    /// A silent link is warned about and reported, but the exit status stays the run's.
    #[arg(long)]
    allow_silent: bool,
    /// A worker not heard from for this long (stopped, cut off from the network) is
    /// treated as dead: one started here is killed and the blueprint's `supervision`
    /// applies; one started by hand is named and the run stops.
    #[arg(long, value_name = "S", default_value_t = 30.0)]
    peer_timeout: f64,
}

/// The placement flags' ids, hidden from `run`'s help in a binary without workers.
pub(crate) const PLACEMENT_FLAGS: [&str; 11] = [
    "in_process",
    "host",
    "listen",
    "join_timeout",
    "run_id",
    "zenoh_config",
    "insecure",
    "no_shared_memory",
    "silent_link",
    "allow_silent",
    "peer_timeout",
];

/// Runs `args.blueprint` until its end, prints the report, and writes it to `--report`.
pub(crate) fn run(cli: &Cli, mut args: Args, cx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    if let Some(dir) = &args.replay {
        args.set.push(format!("replay.dir={}", dir.display()));
    }
    if let Some(fps) = args.fps {
        args.set.push(format!("replay.fps={fps}"));
    }
    if !args.replay_map.is_empty() {
        args.set
            .push(format!("replay.map={}", args.replay_map.join(",")));
    }
    if let Some(rate) = args.rate {
        args.set.push(format!("replay.rate={rate}"));
    }
    if args.looping {
        args.set.push("replay.looping=true".to_owned());
    }
    if let Some(start) = args.start {
        args.set.push(format!("replay.start_s={start}"));
    }
    let mut built = cli.resolve(&args.blueprint, &cx.env, &args.set)?;
    let duration = args
        .duration
        .map(|s| seconds("--duration", s))
        .transpose()?;
    let join_timeout = seconds("--join-timeout", args.placement.join_timeout)?;
    args.record.add_recorder(&args.blueprint, &mut built)?;
    let runnable = built.blueprint.into_runnable()?;
    let processes = runnable.plan().processes().len();
    let (code, report, access) = if cli.distributed && processes > 1 && !args.placement.in_process {
        let coordinate = Distributed {
            args: &args,
            verbose: cx.verbose,
            join_timeout,
            duration,
        };
        run_distributed(&coordinate, runnable, cx.stop)?
    } else {
        let (code, report) = run_here(runnable, duration, cx.stop)?;
        (code, report, None)
    };
    if let Some(path) = &args.report {
        let mut json = serde_json::to_value(&report)?;
        // Who could join the run, as the screen said it (`closed: ...`, `INSECURE: ...`);
        // absent for a run in one process, which no other process can reach.
        if let (Some(access), Some(object)) = (access, json.as_object_mut()) {
            object.insert("access".to_owned(), access.into());
        }
        let json = serde_json::to_string_pretty(&json)?;
        std::fs::write(path, json + "\n")
            .with_context(|| format!("cannot write the report to {}", path.display()))?;
    }
    Ok(code)
}

/// A `run` of a plan of several processes as workers, as the command line gave it.
struct Distributed<'a> {
    args: &'a Args,
    verbose: u8,
    join_timeout: Duration,
    duration: Option<Duration>,
}

/// Starts the workers and coordinates them (the `zenoh` feature); without it, runs here
/// (`Cli::distributed`, which alone asks for workers, needs the feature). With the report,
/// the run's access as its screens said it.
fn run_distributed(
    run: &Distributed<'_>,
    runnable: RunnablePlan,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<(ExitCode, RunReport, Option<String>)> {
    #[cfg(feature = "zenoh")]
    {
        let placement = &run.args.placement;
        crate::workers::coordinate(
            &crate::workers::Coordinate {
                target: &run.args.blueprint,
                set: &run.args.set,
                record: run.args.record.to_args(),
                verbose: run.verbose,
                host: placement.host.clone(),
                listen: placement.listen.clone(),
                run_id: placement.run_id.clone(),
                join_timeout: run.join_timeout,
                duration: run.duration,
                zenoh_config: placement.zenoh_config.clone(),
                insecure: placement.insecure,
                shared_memory: !placement.no_shared_memory,
                silent_link: Duration::try_from_secs_f64(placement.silent_link).map_err(|_| {
                    anyhow::anyhow!(
                        "--silent-link {}: give a number of seconds, 0 or more",
                        placement.silent_link
                    )
                })?,
                allow_silent: placement.allow_silent,
                peer_timeout: Duration::try_from_secs_f64(placement.peer_timeout).map_err(
                    |_| {
                        anyhow::anyhow!(
                            "--peer-timeout {}: give a number of seconds, 0 or more",
                            placement.peer_timeout
                        )
                    },
                )?,
            },
            runnable,
            stop,
        )
    }
    #[cfg(not(feature = "zenoh"))]
    {
        // Only the zenoh coordinator reads the rest.
        let _ = (&run.args.placement, run.verbose, run.join_timeout);
        let (code, report) = run_here(runnable, run.duration, stop)?;
        Ok((code, report, None))
    }
}

/// The line under a report that says whether it balances (RFC.md section 9): every
/// consumer row's messages on exactly one counter, or the rows that are not.
pub(crate) fn accounting(report: &RunReport) -> String {
    match streamwire_runtime::check_balance(report) {
        Ok(balanced) if balanced.elsewhere.is_empty() => format!(
            "accounting: balanced ({}: published = delivered + dropped + not sent + \
             unprocessed at stop + in flight at stop)",
            rows(balanced.rows)
        ),
        Ok(balanced) => format!(
            "accounting: balanced ({}; {} fed from another process's report: {})",
            rows(balanced.rows),
            balanced.elsewhere.len(),
            balanced.elsewhere.join(", ")
        ),
        Err(error) => format!("accounting: {error}"),
    }
}

/// `1 consumer row`, `3 consumer rows`.
fn rows(n: usize) -> String {
    format!("{n} consumer row{}", if n == 1 { "" } else { "s" })
}

/// The exit status of a run that ended with `report`.
pub(crate) fn exit_code(report: &RunReport) -> ExitCode {
    match report.reason {
        EndReason::Failed => {
            eprintln!(
                "error: {}",
                report
                    .failure
                    .as_deref()
                    .unwrap_or("a module failed (no message)")
            );
            ExitCode::FAILURE
        }
        _ => match report.stop_overrun() {
            Some(overrun) => {
                eprintln!("error: {overrun}");
                ExitCode::FAILURE
            }
            None => ExitCode::SUCCESS,
        },
    }
}

/// Runs `f` once on Ctrl+C: only the first handler of a process is installed (a second
/// `run` in one process keeps it), so `stop` is polled as well.
pub(crate) fn on_ctrl_c(f: impl Fn() + Send + 'static) {
    let _ = ctrlc::set_handler(f);
}

/// Starts the plan here, shows the status line, stops on `--duration`, Ctrl+C or when
/// every module finished, prints the report; a failed module is the exit status.
fn run_here(
    runnable: RunnablePlan,
    duration: Option<Duration>,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<(ExitCode, RunReport)> {
    // Each planned process a partition of this one, joined by the loopback.
    let handle = Runtime::start(
        runnable,
        RunOptions {
            partitions: streamwire_runtime::Partitions::PerProcess,
            ..RunOptions::default()
        },
    )?;
    let flag = handle.stop_flag();
    let ctrl_c = stop.clone();
    on_ctrl_c(move || {
        ctrl_c.store(true, Ordering::SeqCst);
        flag.stop();
    });
    // Stopped from outside (duration, Ctrl+C), or ended by itself (every module finished,
    // or one failed and the runtime stopped the rest): only the former asks for a stop,
    // so a failure is reported as one.
    let ask_stop = watch(&handle, duration, stop);
    if ask_stop {
        handle.stop();
    }
    let report: RunReport = handle.wait();
    println!("{report}");
    println!("{}", accounting(&report));
    Ok((exit_code(&report), report))
}

/// Shows the status line (a spinner on a terminal, a plain line a second otherwise) until
/// the run should stop (`true`: `--duration` or Ctrl+C) or ended by itself (`false`).
fn watch(
    handle: &streamwire_runtime::RunHandle,
    duration: Option<Duration>,
    stop: &Arc<AtomicBool>,
) -> bool {
    let started = Instant::now();
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar
    });
    let mut previous = handle.stats();
    let mut last_plain = Instant::now();
    let ask_stop = loop {
        std::thread::sleep(Duration::from_millis(200));
        if stop.load(Ordering::SeqCst) || duration.is_some_and(|d| started.elapsed() >= d) {
            break true;
        }
        let stats = handle.stats();
        if !stats.instances.is_empty() && stats.instances.iter().all(|i| i.finished) {
            break false;
        }
        let line = status_line(&previous, &stats);
        match &bar {
            Some(bar) => {
                bar.set_message(line);
                bar.tick();
            }
            None if last_plain.elapsed() >= Duration::from_secs(1) => {
                eprintln!("{line}");
                last_plain = Instant::now();
            }
            None => {}
        }
        if last_plain.elapsed() >= Duration::from_secs(1) || bar.is_some() {
            previous = stats;
        }
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    ask_stop
}

#[cfg(test)]
mod tests {
    use streamwire_runtime::{EndReason, InputStats, OutputStats, RunReport, RunStats};

    use super::accounting;

    /// A camera's 40 frames, as one consumer's row reads them: 38 delivered, 1 dropped
    /// when its queue was full, and `unprocessed` still queued when the run stopped.
    fn report(unprocessed: u64) -> RunReport {
        let mut stats = RunStats::default();
        let mut output = OutputStats::default();
        output.port = "camera.color_image".into();
        output.stream = "color_image".into();
        output.published = 40;
        stats.outputs = vec![output];
        let mut input = InputStats::default();
        input.port = "detector.frames".into();
        input.stream = "color_image".into();
        input.delivered = 38;
        input.dropped.queue_full = 1;
        input.unprocessed_at_stop = unprocessed;
        stats.inputs = vec![input];
        RunReport::new(EndReason::Stopped, None, Vec::new(), stats)
    }

    /// The line under the report, balanced and not.
    #[test]
    fn the_accounting_line_under_a_report() {
        insta::assert_snapshot!("balanced", accounting(&report(1)));
        insta::assert_snapshot!("unbalanced", accounting(&report(0)));
    }
}
