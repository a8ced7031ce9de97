//! `run`: a blueprint's plan started here (its processes as partitions of this one), or
//! handed to the runner a plugin registered (worker processes on zenoh); the status line,
//! then the report.

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
use crate::{Cli, Ran, RunRequest, status_line};

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
    /// Replay this folder of frames: short for `-o replay.dir=DIR` (blueprints with a
    /// replay source, like `demo`).
    #[arg(long, value_name = "DIR")]
    replay: Option<PathBuf>,
    /// The replay's frame rate when the folder has no timestamps: short for
    /// `-o replay.fps=N`.
    #[arg(long, value_name = "N", requires = "replay")]
    fps: Option<f64>,
    /// The replay's speed (2: twice as fast): short for `-o replay.rate=R`.
    #[arg(long, value_name = "R", requires = "replay")]
    rate: Option<f64>,
    /// Play the replay again from its start at its end: short for
    /// `-o replay.looping=true` (the built-in blueprints loop by default;
    /// `-o replay.looping=false` plays once).
    #[arg(long = "loop", requires = "replay")]
    looping: bool,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
}

/// Runs `args.blueprint` until its end, prints the report, and writes it to `--report`;
/// `matches` holds the flags plugins added.
pub(crate) fn run(
    cli: &Cli,
    mut args: Args,
    matches: Option<&clap::ArgMatches>,
    cx: &mut Context<'_>,
) -> anyhow::Result<ExitCode> {
    let empty = clap::ArgMatches::default();
    let matches = matches.unwrap_or(&empty);
    if let Some(dir) = &args.replay {
        args.set.push(format!("replay.dir={}", dir.display()));
    }
    if let Some(fps) = args.fps {
        args.set.push(format!("replay.fps={fps}"));
    }
    if let Some(rate) = args.rate {
        args.set.push(format!("replay.rate={rate}"));
    }
    if args.looping {
        args.set.push("replay.looping=true".to_owned());
    }
    for flags in &cli.run_flags {
        flags.settings(matches, &mut args.set)?;
    }
    let mut resolved = cli.resolve_blueprint(&args.blueprint, &cx.env, &args.set)?;
    let duration = args
        .duration
        .map(|s| seconds("--duration", s))
        .transpose()?;
    let runner = match &cli.runner {
        Some(runner) if runner.takes(matches)? => Some(runner),
        _ => None,
    };
    for flags in &cli.run_flags {
        flags.extend(matches, &args.blueprint, &mut resolved)?;
    }
    let runnable = resolved.into_blueprint().into_runnable()?;
    let ran = match runner {
        Some(runner) if runnable.plan().processes().len() > 1 => {
            let request = RunRequest {
                target: &args.blueprint,
                set: &args.set,
                repeated: cli
                    .run_flags
                    .iter()
                    .flat_map(|f| f.repeated(matches))
                    .collect(),
                verbose: cx.verbose,
                duration,
                matches,
            };
            runner.run(runnable, &request, cx)?
        }
        _ => run_here(runnable, duration, cx.stop)?,
    };
    if let Some(path) = &args.report {
        let mut json = serde_json::to_value(&ran.report)?;
        // Who could join the run, as the screen said it (`closed: ...`, `INSECURE: ...`);
        // absent for a run in one process, which no other process can reach.
        if let (Some(access), Some(object)) = (ran.access, json.as_object_mut()) {
            object.insert("access".to_owned(), access.into());
        }
        let json = serde_json::to_string_pretty(&json)?;
        std::fs::write(path, json + "\n")
            .with_context(|| format!("cannot write the report to {}", path.display()))?;
    }
    Ok(ran.code)
}

/// The line under a report that says whether it balances (RFC.md section 9): every
/// consumer row's messages on exactly one counter, or the rows that are not.
pub fn accounting(report: &RunReport) -> String {
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

/// The exit status of a run that ended with `report` (its failure printed).
pub fn exit_code(report: &RunReport) -> ExitCode {
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
pub fn on_ctrl_c(f: impl Fn() + Send + 'static) {
    let _ = ctrlc::set_handler(f);
}

/// Starts the plan here, shows the status line, stops on `--duration`, Ctrl+C or when
/// every module finished, prints the report; a failed module is the exit status.
fn run_here(
    runnable: RunnablePlan,
    duration: Option<Duration>,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<Ran> {
    // Each planned process a partition of this one, joined by the loopback.
    let mut handle = Runtime::start(
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
    let ask_stop = watch(&mut handle, duration, stop);
    if ask_stop {
        handle.stop();
    }
    let report: RunReport = handle.wait();
    println!("{report}");
    println!("{}", accounting(&report));
    Ok(Ran {
        code: exit_code(&report),
        report,
        access: None,
    })
}

/// Shows the status line (a spinner on a terminal, a plain line a second otherwise) and
/// what the modules announce until the run should stop (`true`: `--duration` or Ctrl+C)
/// or ended by itself (`false`: every module finished, or one failed past the blueprint's
/// supervision).
fn watch(
    handle: &mut streamwire_runtime::RunHandle,
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
        for notice in handle.take_notices() {
            say(bar.as_ref(), &notice);
        }
        if handle.poll_end().is_some() {
            break false;
        }
        let stats = handle.stats();
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

/// One line for the person running it, above the spinner when there is one.
fn say(bar: Option<&indicatif::ProgressBar>, line: &str) {
    match bar {
        Some(bar) => bar.suspend(|| eprintln!("{line}")),
        None => eprintln!("{line}"),
    }
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
