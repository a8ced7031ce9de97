//! One point of a sweep: `run` of its blueprint file, every process sampled from /proc
//! twice a second, the CPU of a steady window (from a second after every worker is ready
//! to the last sample), the report's counts and the sinks' arrivals.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use serde::Deserialize;
use streamwire_runtime::RunReport;

use super::blueprints::PRODUCER;
use crate::ScaleError;
use crate::analysis::Tick;
use crate::soak::{self, Run};

/// Between samples.
const INTERVAL: Duration = Duration::from_millis(500);
/// After every worker is ready, before the window starts (the first frames' set-up).
const SETTLE: Duration = Duration::from_secs(1);
/// How long past its duration a run may take (starting 32 closed workers on a loaded
/// machine included) before it is interrupted, and after that before it is killed.
const STOP_BOUND: Duration = Duration::from_secs(120);
const KILL_AFTER: Duration = Duration::from_secs(20);

/// What one point measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measured {
    /// From starting `run` to the coordinator's "every worker is ready", s.
    pub ready_s: Option<f64>,
    /// The steady window the CPU figures are over, s.
    pub window_s: f64,
    /// The run's elapsed time in its report, s.
    pub elapsed_s: f64,
    /// Messages the producers published (the report).
    pub published: u64,
    /// Messages the sinks took, all sinks (the report).
    pub delivered: u64,
    /// Messages dropped before a sink, any reason (the report).
    pub dropped: u64,
    /// Sinks (the report's inputs).
    pub consumers: u64,
    /// Producers' outputs, each its own stream (the report's).
    pub streams: u64,
    /// The report balances (every message delivered or counted with its reason).
    pub balanced: bool,
    /// CPU in the window, ms: the producer's process.
    pub producer_cpu_ms: u64,
    /// ... the coordinator.
    pub coordinator_cpu_ms: u64,
    /// ... every process of the run.
    pub total_cpu_ms: u64,
    /// Worker processes (the tree less the coordinator).
    pub workers: u64,
    /// Mean PSS of a worker that is not the producer (the producer, when it is the only
    /// worker), kB, at the window's end.
    pub worker_pss_kb: u64,
    /// RSS of every process, summed, kB (a shared-memory pool counts in each process
    /// that maps it).
    pub rss_kb: u64,
    /// Threads of every process.
    pub threads: u64,
    /// Bytes of the /dev/shm files the run's processes map, the most seen.
    pub shm_bytes: u64,
    /// Publish to arrival across the recording sinks, ms: (p50, p99).
    pub latency_ms: Option<(f64, f64)>,
    /// /dev/shm files the run mapped that outlived it (removed).
    pub segments_left: usize,
    /// Why the run wrote no report (it failed: its last log line), if it did not.
    pub failure: Option<String>,
}

impl Measured {
    /// Delivered as a percentage of what the sinks should have taken: every message of a
    /// stream by each of its sinks (the sinks spread evenly over the streams).
    pub fn delivered_pct(&self) -> f64 {
        let expected = self.published as f64 * self.consumers as f64 / self.streams.max(1) as f64;
        if expected <= 0.0 {
            return 0.0;
        }
        self.delivered as f64 / expected * 100.0
    }

    /// Messages published in the window, from the run's mean rate.
    pub fn published_in_window(&self) -> f64 {
        if self.elapsed_s <= 0.0 {
            return 0.0;
        }
        self.published as f64 * (self.window_s / self.elapsed_s).min(1.0)
    }

    /// `cpu_ms` per message published in the window, ms.
    pub fn per_message_ms(&self, cpu_ms: u64) -> f64 {
        let messages = self.published_in_window();
        if messages <= 0.0 {
            return 0.0;
        }
        cpu_ms as f64 / messages
    }

    /// `cpu_ms` over the window as percent of one core.
    pub fn core_pct(&self, cpu_ms: u64) -> f64 {
        if self.window_s <= 0.0 {
            return 0.0;
        }
        cpu_ms as f64 / (self.window_s * 1e3) * 100.0
    }

    /// One line for the progress.
    pub fn summary(&self) -> String {
        if let Some(failure) = &self.failure {
            return format!("FAILED: {failure}");
        }
        format!(
            "ready {} s, {} published, {:.1}% delivered, CPU {:.0}% of a core, {}{}",
            self.ready_s.map_or("-".to_owned(), |s| format!("{s:.2}")),
            self.published,
            self.delivered_pct(),
            self.core_pct(self.total_cpu_ms),
            if self.balanced {
                "balanced"
            } else {
                "NOT balanced"
            },
            self.latency_ms.map_or(String::new(), |(p50, p99)| format!(
                ", latency p50 {p50:.1} ms p99 {p99:.1} ms"
            )),
        )
    }
}

/// Runs `file` for `duration` (from when every worker is ready) with `exe run`, its
/// report, log and arrivals in `dir`; the arrival files are removed once read.
pub fn measure(
    exe: &Path,
    file: &Path,
    duration: Duration,
    dir: &Path,
) -> Result<Measured, ScaleError> {
    let report_path = dir.join("report.json");
    let _ = std::fs::remove_file(&report_path);
    let args: Vec<String> = vec![
        "run".to_owned(),
        "--duration".to_owned(),
        duration.as_secs_f64().to_string(),
        "--report".to_owned(),
        report_path.display().to_string(),
        file.display().to_string(),
    ];
    let mut run = Run::start(exe, &args, dir)?;
    let (ticks, window_start) = sample_until_end(&mut run, duration)?;
    run.join_log();
    // The run's group is its own: nothing of it may outlive the point.
    let _ = killpg(run.group, Signal::SIGKILL);
    let mut measured = from_ticks(&ticks, window_start);
    measured.ready_s = run
        .ready_at()
        .map(|at| at.duration_since(run.started).as_secs_f64());
    match soak::read_report(&report_path) {
        Some(report) => counts(&report, &mut measured),
        // A failed point is a row of the sweep (what failed, at which size), not its end.
        None => measured.failure = Some(last_error(&dir.join("run.log"))),
    }
    measured.latency_ms = latency(dir)?;
    measured.segments_left = soak::remove_segments_left(&ticks).len();
    write_counts(dir, &measured, &ticks)?;
    Ok(measured)
}

/// The run's last `error:` line in its log (else its last line): why it failed.
fn last_error(log: &Path) -> String {
    let text = match std::fs::read_to_string(log) {
        Ok(text) => text,
        Err(error) => return format!("its log {} could not be read: {error}", log.display()),
    };
    let lines: Vec<&str> = text.lines().collect();
    lines
        .iter()
        .rev()
        .find(|l| l.starts_with("error:"))
        .or(lines.last())
        .map_or_else(
            || format!("no report and no log ({})", log.display()),
            |l| (*l).to_owned(),
        )
}

/// `dir/point.json`: the point's counts, its balance and the /dev/shm files its run
/// mapped (for a test to check that none outlived it).
fn write_counts(dir: &Path, measured: &Measured, ticks: &[Tick]) -> Result<(), ScaleError> {
    let mut segments: Vec<String> = ticks
        .iter()
        .flat_map(|t| t.processes.iter().flat_map(|p| p.shm_files.iter()))
        .map(|path| path.display().to_string())
        .collect();
    segments.sort();
    segments.dedup();
    let counts = serde_json::json!({
        "published": measured.published,
        "consumers": measured.consumers,
        "streams": measured.streams,
        "delivered": measured.delivered,
        "dropped": measured.dropped,
        "balanced": measured.balanced,
        "workers": measured.workers,
        "ready_s": measured.ready_s,
        "segments_seen": segments,
        "segments_left": measured.segments_left,
        "failure": measured.failure,
    });
    let path = dir.join("point.json");
    std::fs::write(&path, counts.to_string()).map_err(|e| ScaleError::io(&path, e))
}

/// Samples until the run exits (bounded); the samples and the index of the first one in
/// the steady window.
fn sample_until_end(run: &mut Run, duration: Duration) -> Result<(Vec<Tick>, usize), ScaleError> {
    let proc = Path::new("/proc");
    let mut ticks = Vec::new();
    let mut window_start = None;
    let mut interrupted = None;
    let bound = duration + STOP_BOUND;
    loop {
        if run
            .child
            .try_wait()
            .map_err(|e| ScaleError::Run(format!("cannot wait for the run: {e}")))?
            .is_some()
        {
            return Ok((ticks, window_start.unwrap_or(0)));
        }
        let elapsed = run.started.elapsed();
        let tick = run.tick(proc, elapsed.as_secs_f64());
        if window_start.is_none() && run.ready_at().is_some_and(|at| at.elapsed() >= SETTLE) {
            window_start = Some(ticks.len());
        }
        // A tick after the workers began to stop has lost some of them: keep the last
        // one with as many processes as the window's first.
        let full = window_start
            .and_then(|i| ticks.get(i))
            .is_none_or(|first: &Tick| tick.processes.len() >= first.processes.len());
        if full {
            ticks.push(tick);
        }
        match interrupted {
            None if elapsed > bound => {
                let _ = killpg(run.group, Signal::SIGINT);
                interrupted = Some(Instant::now());
            }
            Some(at) if at.elapsed() > KILL_AFTER => {
                let _ = killpg(run.group, Signal::SIGKILL);
            }
            _ => {}
        }
        std::thread::sleep(INTERVAL);
    }
}

/// CPU over the window, and memory, threads and shared memory at its end.
fn from_ticks(ticks: &[Tick], window_start: usize) -> Measured {
    let mut measured = Measured::default();
    let (Some(first), Some(last)) = (ticks.get(window_start), ticks.last()) else {
        return measured;
    };
    measured.window_s = last.t_s - first.t_s;
    let before: BTreeMap<u32, u64> = first.processes.iter().map(|p| (p.pid, p.cpu_ms)).collect();
    let mut worker_pss = Vec::new();
    for p in &last.processes {
        let cpu = p
            .cpu_ms
            .saturating_sub(before.get(&p.pid).copied().unwrap_or(0));
        measured.total_cpu_ms += cpu;
        measured.rss_kb += p.rss_kb;
        measured.threads += p.threads;
        if p.role == "coordinator" {
            measured.coordinator_cpu_ms += cpu;
            continue;
        }
        measured.workers += 1;
        if p.role.ends_with(PRODUCER) {
            measured.producer_cpu_ms += cpu;
        } else {
            worker_pss.push(p.pss_kb);
        }
    }
    if worker_pss.is_empty() {
        worker_pss.extend(
            last.processes
                .iter()
                .filter(|p| p.role.ends_with(PRODUCER))
                .map(|p| p.pss_kb),
        );
    }
    measured.worker_pss_kb = worker_pss.iter().sum::<u64>() / (worker_pss.len().max(1) as u64);
    measured.shm_bytes = ticks.iter().map(|t| t.shm_bytes).max().unwrap_or(0);
    measured
}

/// The report's counts: published by the producers, delivered to and dropped before the
/// sinks, and its balance.
fn counts(report: &RunReport, measured: &mut Measured) {
    let stats = &report.stats;
    measured.elapsed_s = stats.elapsed.as_secs_f64();
    let producers = || stats.outputs.iter().filter(|o| o.port.starts_with("cam"));
    measured.published = producers().map(|o| o.published).sum();
    measured.streams = producers().count() as u64;
    let sinks = || stats.inputs.iter().filter(|i| i.port.starts_with("sink_"));
    measured.consumers = sinks().count() as u64;
    measured.delivered = sinks().map(|i| i.delivered).sum();
    measured.dropped = sinks().map(|i| i.dropped.total()).sum();
    measured.balanced = streamwire_runtime::check_balance(report).is_ok();
}

/// An arrival as a recording sink writes it (the fields the latency needs).
#[derive(Deserialize)]
struct Arrival {
    publish_ns: u64,
    arrival_ns: u64,
}

/// Publish-to-arrival percentiles (p50, p99) over every `*.jsonl` in `dir`, ms; the
/// files are removed once read (a sweep writes many).
fn latency(dir: &Path) -> Result<Option<(f64, f64)>, ScaleError> {
    let mut lags: Vec<f64> = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| ScaleError::io(dir, e))?;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.extension() != Some(std::ffi::OsStr::new("jsonl")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|e| ScaleError::io(&path, e))?;
        lags.extend(
            text.lines()
                .filter_map(|line| serde_json::from_str::<Arrival>(line).ok())
                .map(|a| a.arrival_ns.saturating_sub(a.publish_ns) as f64 / 1e6),
        );
        let _ = std::fs::remove_file(&path);
    }
    Ok(percentiles(lags))
}

/// (p50, p99) of `values` (nearest rank), `None` when empty.
fn percentiles(mut values: Vec<f64>) -> Option<(f64, f64)> {
    values.sort_by(f64::total_cmp);
    let rank = |q: f64| {
        let i = ((values.len() as f64 * q).ceil() as usize).clamp(1, values.len()) - 1;
        values[i]
    };
    (!values.is_empty()).then(|| (rank(0.50), rank(0.99)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::ProcessSample;

    fn process(pid: u32, role: &str, cpu_ms: u64, pss_kb: u64) -> ProcessSample {
        ProcessSample {
            pid,
            role: role.to_owned(),
            cpu_ms,
            pss_kb,
            threads: 3,
            ..ProcessSample::default()
        }
    }

    #[test]
    fn the_window_splits_cpu_by_role_and_averages_the_consumers_pss() {
        let tick = |t_s, extra: u64| Tick {
            t_s,
            processes: vec![
                process(1, "coordinator", 100 + extra, 9_000),
                process(2, "localhost/producer", 1_000 + 10 * extra, 50_000),
                process(3, "localhost/worker_1", 10 + extra, 20_000),
                process(4, "localhost/worker_2", 10 + 2 * extra, 30_000),
            ],
            ..Tick::default()
        };
        let ticks = [tick(0.5, 0), tick(1.0, 0), tick(3.0, 100)];
        let m = from_ticks(&ticks, 1);
        assert_eq!(m.window_s, 2.0);
        assert_eq!(
            (m.coordinator_cpu_ms, m.producer_cpu_ms, m.total_cpu_ms),
            (100, 1_000, 1_400)
        );
        assert_eq!((m.workers, m.worker_pss_kb, m.threads), (3, 25_000, 12));
        assert_eq!(m.core_pct(m.total_cpu_ms), 70.0);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        assert_eq!(percentiles(vec![]), None);
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentiles(values), Some((50.0, 99.0)));
        assert_eq!(percentiles(vec![3.0]), Some((3.0, 3.0)));
    }

    #[test]
    fn delivered_and_per_message_figures_come_from_the_counts() {
        let m = Measured {
            published: 100,
            consumers: 4,
            delivered: 396,
            elapsed_s: 10.0,
            window_s: 5.0,
            ..Measured::default()
        };
        assert_eq!(m.delivered_pct(), 99.0);
        // Four streams of one sink each: every message once.
        let streams = Measured {
            streams: 4,
            delivered: 99,
            ..m.clone()
        };
        assert_eq!(streams.delivered_pct(), 99.0);
        assert_eq!(m.published_in_window(), 50.0);
        assert_eq!(m.per_message_ms(100), 2.0);
    }
}
