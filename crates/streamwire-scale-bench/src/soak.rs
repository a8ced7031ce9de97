//! The soak: a real `streamwire run` (its coordinator and workers, as users run them),
//! sampled per process every interval until it ends, then judged.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use parking_lot::Mutex;
use streamwire_runtime::RunReport;

use crate::analysis::{self, Growth, Limits, Tick};
use crate::status::{self, Counters};
use crate::{ScaleError, procfs};

/// What to soak.
#[derive(Clone, Debug, PartialEq)]
pub struct SoakOptions {
    /// The blueprint `run` runs (a registered name or a file).
    pub blueprint: String,
    /// How long the run runs.
    pub duration: Duration,
    /// Time between samples.
    pub interval: Duration,
    /// Samples before this are not judged (`None`: 5 minutes, or a fifth of a run shorter
    /// than 25 minutes).
    pub warmup: Option<Duration>,
    /// `-o` settings for `run`.
    pub settings: Vec<String>,
    /// More arguments for `run` (`--insecure`, ...), before the blueprint.
    pub run_args: Vec<String>,
    /// The rules' limits.
    pub limits: Limits,
    /// Where the log, report, CSV, summary and chart go.
    pub out: PathBuf,
}

impl SoakOptions {
    /// The soak of `blueprint` for `duration`, every 10 s, into `out`.
    pub fn new(blueprint: &str, duration: Duration, out: &Path) -> SoakOptions {
        SoakOptions {
            blueprint: blueprint.to_owned(),
            duration,
            interval: Duration::from_secs(10),
            warmup: None,
            settings: Vec::new(),
            run_args: Vec::new(),
            limits: Limits::default(),
            out: out.to_owned(),
        }
    }

    /// The warm-up: as given, else 5 minutes, or a fifth of a shorter run.
    pub fn warmup(&self) -> Duration {
        self.warmup
            .unwrap_or_else(|| Duration::from_secs(300).min(self.duration / 5))
    }

    /// `run`'s arguments.
    fn run_command_args(&self, report: &Path) -> Vec<String> {
        let mut args = vec![
            "run".to_owned(),
            "--duration".to_owned(),
            self.duration.as_secs_f64().to_string(),
            "--report".to_owned(),
            report.display().to_string(),
        ];
        args.extend(self.run_args.iter().cloned());
        args.push(self.blueprint.clone());
        for setting in &self.settings {
            args.push("-o".to_owned());
            args.push(setting.clone());
        }
        args
    }
}

/// What a soak found.
#[derive(Debug)]
pub struct SoakOutcome {
    /// Every sample.
    pub ticks: Vec<Tick>,
    /// Growth after the warm-up per process, then the run's segments.
    pub growth: Vec<Growth>,
    /// The final report, when the run wrote one.
    pub report: Option<RunReport>,
    /// `run`'s exit status.
    pub status: ExitStatus,
    /// How the run ended: `exited`, `interrupted` (past its bound), `killed`.
    pub ended: &'static str,
    /// Shared-memory files the run's processes mapped that were still in /dev/shm after
    /// it ended (removed by the soak).
    pub segments_left: Vec<PathBuf>,
    /// Every rule the run broke, one line each (none: it passed).
    pub broken: Vec<String>,
}

/// How long past its duration a run may take to stop before it is interrupted, and how
/// long after that before it is killed.
const STOP_BOUND: Duration = Duration::from_secs(60);
const KILL_AFTER: Duration = Duration::from_secs(30);

/// Runs the soak: `exe run ...` (`exe` a program with `run`, the stock binary), sampled
/// until it ends; `stop` set from outside interrupts it; `progress` hears one line per
/// sample.
pub fn soak(
    options: &SoakOptions,
    exe: &Path,
    stop: &dyn Fn() -> bool,
    progress: &mut dyn FnMut(&str),
) -> Result<SoakOutcome, ScaleError> {
    std::fs::create_dir_all(&options.out).map_err(|e| ScaleError::io(&options.out, e))?;
    let report_path = options.out.join("report.json");
    // A report left by an earlier soak in this folder is not this run's.
    let _ = std::fs::remove_file(&report_path);
    let mut run = Run::start(exe, &options.run_command_args(&report_path), &options.out)?;
    let (ticks, status, ended) = sample_until_end(options, &mut run, stop, progress)?;
    run.join_log();
    let report = read_report(&report_path);
    let segments_left = remove_segments_left(&ticks);
    let warmup_s = options.warmup().as_secs_f64();
    let growth = analysis::growth(&ticks, warmup_s);
    let mut broken = analysis::broken_growth_rules(&growth, &options.limits);
    broken.extend(crashes(&ticks, options, status, ended, report.as_ref()));
    match report.as_ref().map(streamwire_runtime::check_balance) {
        Some(Ok(_)) => {}
        Some(Err(error)) => broken.push(error.to_string()),
        None => broken.push(format!(
            "the run wrote no readable report ({})",
            report_path.display()
        )),
    }
    Ok(SoakOutcome {
        ticks,
        growth,
        report,
        status,
        ended,
        segments_left,
        broken,
    })
}

/// Samples every interval until the run exits; past its bound it is interrupted, then
/// killed (its whole process group).
fn sample_until_end(
    options: &SoakOptions,
    run: &mut Run,
    stop: &dyn Fn() -> bool,
    progress: &mut dyn FnMut(&str),
) -> Result<(Vec<Tick>, ExitStatus, &'static str), ScaleError> {
    let proc = Path::new("/proc");
    let mut ticks = Vec::new();
    let mut next = options.interval;
    let interrupt_at = options.duration + STOP_BOUND;
    let mut ended = "exited";
    let mut forwarded_stop = false;
    loop {
        if let Some(status) = run
            .child
            .try_wait()
            .map_err(|e| ScaleError::Run(format!("cannot wait for the run: {e}")))?
        {
            return Ok((ticks, status, ended));
        }
        let elapsed = run.started.elapsed();
        if elapsed >= next {
            let tick = run.tick(proc, elapsed.as_secs_f64());
            progress(&progress_line(&tick));
            ticks.push(tick);
            next += options.interval;
        }
        if stop() && !forwarded_stop {
            // Ctrl+C reached this process only: the run is in a group of its own.
            let _ = killpg(run.group, Signal::SIGINT);
            forwarded_stop = true;
        }
        if elapsed > interrupt_at && ended == "exited" {
            progress(&format!(
                "the run is still going {} s past its duration: SIGINT",
                STOP_BOUND.as_secs()
            ));
            let _ = killpg(run.group, Signal::SIGINT);
            ended = "interrupted";
        } else if elapsed > interrupt_at + KILL_AFTER && ended == "interrupted" {
            progress("the run did not stop after SIGINT: SIGKILL");
            let _ = killpg(run.group, Signal::SIGKILL);
            ended = "killed";
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One line of progress: time, processes, their PSS, fds and threads summed, segments.
fn progress_line(tick: &Tick) -> String {
    let sum = |f: fn(&procfs::ProcessSample) -> u64| tick.processes.iter().map(f).sum::<u64>();
    format!(
        "{:.0} s: {} processes, PSS {:.1} MB, fds {}, threads {}, shm {} ({:.1} MB){}",
        tick.t_s,
        tick.processes.len(),
        sum(|p| p.pss_kb) as f64 / 1e3,
        sum(|p| p.fds),
        sum(|p| p.threads),
        tick.shm_segments,
        tick.shm_bytes as f64 / 1e6,
        tick.counters.map_or(String::new(), |c| format!(
            ", {:.0} msg/s, drops {}",
            c.messages_per_s, c.drops
        )),
    )
}

/// Why the run counts as crashed, if it does.
fn crashes(
    ticks: &[Tick],
    options: &SoakOptions,
    status: ExitStatus,
    ended: &str,
    report: Option<&RunReport>,
) -> Vec<String> {
    let mut crashed: Vec<String> = analysis::vanished(ticks, options.duration.as_secs_f64())
        .into_iter()
        .map(|line| format!("a process crashed: {line}"))
        .collect();
    if !status.success() {
        crashed.push(format!("`run` ended with {status} ({ended})"));
    }
    if let Some(failure) = report.and_then(|r| r.failure.as_deref()) {
        crashed.push(format!("the run failed: {failure}"));
    }
    crashed
}

pub(crate) fn read_report(path: &Path) -> Option<RunReport> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Removes the /dev/shm files the run's processes mapped that outlived it; their paths.
pub(crate) fn remove_segments_left(ticks: &[Tick]) -> Vec<PathBuf> {
    let mut seen: Vec<&PathBuf> = ticks
        .iter()
        .flat_map(|t| t.processes.iter().flat_map(|p| p.shm_files.iter()))
        .collect();
    seen.sort();
    seen.dedup();
    seen.into_iter()
        .filter(|path| std::fs::remove_file(path).is_ok())
        .cloned()
        .collect()
}

/// What the coordinator says once every worker is ready (the sources start).
const EVERY_WORKER_READY: &str = "every worker is ready";

/// The run: `run` in a process group of its own (its workers are in it too), its log
/// read by a thread that keeps the last status line and when every worker was ready.
pub(crate) struct Run {
    pub(crate) child: Child,
    pub(crate) group: Pid,
    pub(crate) started: Instant,
    counters: Arc<Mutex<Option<Counters>>>,
    ready: Arc<Mutex<Option<Instant>>>,
    log: Option<JoinHandle<()>>,
}

impl Run {
    /// `exe` with `args` (`run ...`), its standard output in `out/run.out`, its log in
    /// `out/run.log`.
    pub(crate) fn start(exe: &Path, args: &[String], out: &Path) -> Result<Run, ScaleError> {
        let out_path = out.join("run.out");
        let out_file =
            std::fs::File::create(&out_path).map_err(|e| ScaleError::io(&out_path, e))?;
        let log_path = out.join("run.log");
        let mut log = std::fs::File::create(&log_path).map_err(|e| ScaleError::io(&log_path, e))?;
        let mut command = Command::new(exe);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(out_file)
            .stderr(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .spawn()
            .map_err(|e| ScaleError::Run(format!("cannot start `{} run`: {e}", exe.display())))?;
        let group = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        let counters = Arc::new(Mutex::new(None));
        let ready = Arc::new(Mutex::new(None));
        let stderr = child.stderr.take();
        let kept = counters.clone();
        let ready_at = ready.clone();
        let log = std::thread::Builder::new()
            .name("soak-log".to_owned())
            .spawn(move || {
                let Some(stderr) = stderr else { return };
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    // The log is for reading afterwards: a failed write loses only it.
                    let _ = writeln!(log, "{line}");
                    if let Some(parsed) = status::parse(&line) {
                        *kept.lock() = Some(parsed);
                    } else if line.contains(EVERY_WORKER_READY) {
                        ready_at.lock().get_or_insert_with(Instant::now);
                    }
                }
            })
            .map_err(|e| ScaleError::Run(format!("cannot start the log reader: {e}")))?;
        Ok(Run {
            child,
            group,
            started: Instant::now(),
            counters,
            ready,
            log: Some(log),
        })
    }

    /// When the coordinator said every worker was ready, if it has.
    pub(crate) fn ready_at(&self) -> Option<Instant> {
        *self.ready.lock()
    }

    /// Every process of the run's tree now, and the /dev/shm files they map.
    pub(crate) fn tick(&self, proc: &Path, t_s: f64) -> Tick {
        let processes: Vec<procfs::ProcessSample> = procfs::tree(proc, self.child.id())
            .into_iter()
            .filter_map(|pid| procfs::sample(proc, pid))
            .collect();
        let mut files: Vec<&PathBuf> = processes.iter().flat_map(|p| p.shm_files.iter()).collect();
        files.sort();
        files.dedup();
        let shm_bytes = files
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum();
        Tick {
            t_s,
            shm_segments: files.len() as u64,
            shm_bytes,
            counters: *self.counters.lock(),
            processes,
        }
    }

    /// Waits for the log reader (the run has exited: its pipe ends when the last process
    /// holding it has), at most 10 s: a process of the run that outlived it must not
    /// hold the soak.
    pub(crate) fn join_log(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.log.as_ref().is_some_and(|log| !log.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if let Some(log) = self.log.take_if(|log| log.is_finished()) {
            let _ = log.join();
        }
    }
}

impl Drop for Run {
    /// A soak that fails half-way leaves no run behind.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = killpg(self.group, Signal::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warm_up_is_five_minutes_or_a_fifth_of_a_short_run() {
        let hour = SoakOptions::new("demo-split", Duration::from_secs(3600), Path::new("/o"));
        assert_eq!(hour.warmup(), Duration::from_secs(300));
        let short = SoakOptions::new("demo-split", Duration::from_secs(120), Path::new("/o"));
        assert_eq!(short.warmup(), Duration::from_secs(24));
        let given = SoakOptions {
            warmup: Some(Duration::from_secs(7)),
            ..short
        };
        assert_eq!(given.warmup(), Duration::from_secs(7));
    }

    #[test]
    fn run_gets_its_duration_report_flags_blueprint_and_settings() {
        let options = SoakOptions {
            settings: vec!["web.port=0".into()],
            run_args: vec!["--insecure".into()],
            ..SoakOptions::new("demo-split", Duration::from_secs(90), Path::new("/o"))
        };
        assert_eq!(
            options
                .run_command_args(Path::new("/o/report.json"))
                .join(" "),
            "run --duration 90 --report /o/report.json --insecure demo-split -o web.port=0"
        );
    }
}
