//! From a cell's folder to its result: per sink, frames delivered, fps, lag, the longest
//! gap and drops by reason; for the run, CPU, RSS and wire traffic. Pure reading of the
//! files the cell left (see [`crate::cell`]), so it is tested on files written by hand.

use std::path::Path;

use serde::{Deserialize, Serialize};
use streamwire_core::Adaptation;
use streamwire_runtime::{RunReport, WireDirection};

use streamwire_graph::PlanSummary;

use crate::BenchError;
use crate::cell::{CellSpec, HostRecord, LinkRecord, WorkerRecord};
use crate::link::RelayStats;
use crate::sampler::Sample;

/// The colour stream: the one the modes differ in.
pub const IMAGE_STREAM: &str = "color_image";

/// A sink delivering at least this share of the frames published keeps up.
pub const KEEP_UP_PCT: f64 = 99.0;
/// ... and with its lag at the end under this.
pub const KEEP_UP_LAG_MS: f64 = 1000.0;

/// One arrival, as the built-in sinks record it (the fields read here).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arrival {
    /// The receiving instance.
    pub instance: String,
    /// Its stream.
    pub stream: String,
    /// The producer's sequence number.
    pub seq: u64,
    /// Published at, run-clock ns.
    pub publish_ns: u64,
    /// Taken from the sink's queue at, run-clock ns.
    pub arrival_ns: u64,
    /// Payload bytes.
    pub bytes: u64,
}

/// One colour consumer's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SinkResult {
    /// The instance.
    pub instance: String,
    /// Frames it received.
    pub delivered: u64,
    /// Of the frames published, percent.
    pub delivered_pct: f64,
    /// Frames per second over the run.
    pub fps: f64,
    /// Arrival minus publish, median, ms.
    pub lag_p50_ms: f64,
    /// ... 99th percentile, ms.
    pub lag_p99_ms: f64,
    /// ... median over the last second of arrivals, ms.
    pub lag_end_ms: f64,
    /// Longest time between two arrivals, ms (from the run's start for the first).
    pub longest_gap_ms: f64,
    /// Drops counted at its input, by reason (only reasons with drops).
    pub drops: Vec<(String, u64)>,
    /// Frames published that it neither received nor counted as dropped at its input
    /// (dropped upstream, lost on the wire, or still in flight at the stop).
    pub not_delivered: u64,
    /// Lag growth: the median lag of its last quarter of arrivals over that of its first
    /// quarter (1: steady; a queue that fills grows it).
    #[serde(default)]
    pub lag_growth: f64,
}

/// A colour consumer, as the run's report counts it (the detector, which records no
/// arrivals, included).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConsumerResult {
    /// The instance.
    pub instance: String,
    /// Its host.
    pub host: String,
    /// Frames its input delivered.
    pub delivered: u64,
}

/// What a cell across a link measured of the link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkResult {
    /// The profile, as it prints (`wifi (50 Mbit/s, 5 ± 2 ms)`).
    pub profile: String,
    /// How the link was made.
    pub description: String,
    /// The streams that crossed it, from the plan's cross-host links
    /// (`color_image/compressed (jpeg)`).
    pub crossing: Vec<String>,
    /// Robot to laptop over the run, Mbit/s (the robot's end's transmit counter).
    pub to_laptop_mbit_s: f64,
    /// Laptop to robot over the run, Mbit/s.
    pub to_robot_mbit_s: f64,
    /// Robot to laptop, the busiest second, Mbit/s.
    pub to_laptop_peak_mbit_s: f64,
    /// Robot to laptop, the busiest two seconds after the first two of traffic, Mbit/s:
    /// what a budget on the colour stream is judged against on the wire (every byte the
    /// link carried, headers and other streams included).
    #[serde(default)]
    pub to_laptop_worst_2s_mbit_s: Option<f64>,
    /// Frames the laptop's processes received across the link (not those its receiver of
    /// a stream handed on to the others).
    pub laptop_frames: u64,
    /// Of those, frames that arrived through shared memory (none can: another host).
    pub laptop_shared_memory_frames: u64,
    /// The shaping queues' overlimits, both directions.
    pub overlimits: u64,
    /// Packets the shaping queues dropped, both directions.
    pub qdisc_drops: u64,
    /// The relay that added the delay.
    pub relay: RelayStats,
    /// The laptop's workers and how each ended.
    pub workers: Vec<WorkerRecord>,
}

/// Everything one cell measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// What ran.
    pub spec: CellSpec,
    /// Its name.
    pub label: String,
    /// `raw-shm`, `raw-tcp` or `codec`.
    pub variant: String,
    /// Cores the run had.
    pub cores: usize,
    /// The run's own elapsed time (start barrier to stop), s.
    pub elapsed_s: f64,
    /// Frames the camera published.
    pub published: u64,
    /// ... per second.
    pub published_fps: f64,
    /// Frames the camera skipped because it fell behind its schedule.
    pub camera_skipped: u64,
    /// Every colour consumer that records.
    pub sinks: Vec<SinkResult>,
    /// Every colour consumer, from the report.
    #[serde(default)]
    pub consumers: Vec<ConsumerResult>,
    /// Across a link: the link's figures.
    #[serde(default)]
    pub link: Option<LinkResult>,
    /// The colour encoder's bit-rate budget, where it stood at the end (the `budget`
    /// mode): quality, changes, its windows, and its settings over time.
    #[serde(default)]
    pub adaptation: Option<Adaptation>,
    /// Colour-stream drops before the sinks, by where and why (`wire lost at robot/ui`,
    /// `encode dropped`, ...).
    pub upstream_drops: Vec<(String, u64)>,
    /// CPU of the run's process tree over its wall time, percent of one core (exact:
    /// the kernel's account of the reaped processes).
    pub cpu_pct: f64,
    /// Median of the per-second samples of the same, for comparison.
    pub cpu_pct_sampled: f64,
    /// The machine's CPU over its idle baseline, median of the samples, percent of all
    /// cores.
    pub host_cpu_over_idle_pct: f64,
    /// Peak of the tree's summed RSS, MB.
    pub rss_mb: f64,
    /// Loopback traffic over the run, minus the idle baseline, Mbit/s.
    pub lo_mbit_s: f64,
    /// Bytes the transport sent, all streams, Mbit/s.
    pub transport_mbit_s: f64,
    /// Bytes the transport sent for the colour stream, per frame it sent, KB.
    pub image_wire_kb_per_frame: f64,
    /// How the run ended: `stopped`, `finished`, `failed: ...`, `no report (...)`.
    pub ended: String,
    /// Every sink kept up: at least [`KEEP_UP_PCT`] delivered, lag at the end under
    /// [`KEEP_UP_LAG_MS`], and the run stopped within its bound.
    pub kept_up: bool,
    /// One line for the table: `kept up`, or what went wrong.
    pub verdict: String,
}

impl CellResult {
    /// The median of the sinks' fps (0 without sinks).
    pub fn median_sink_fps(&self) -> f64 {
        median(self.sinks.iter().map(|s| s.fps).collect())
    }

    /// The worst sink's lag growth (1 without sinks).
    pub fn worst_lag_growth(&self) -> f64 {
        self.sinks.iter().map(|s| s.lag_growth).fold(1.0, f64::max)
    }

    /// The worst sink's delivered percent (100 without sinks).
    pub fn worst_delivered_pct(&self) -> f64 {
        self.sinks
            .iter()
            .map(|s| s.delivered_pct)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.min(v))))
            .unwrap_or(100.0)
    }
}

/// The median of `values` (0 for none).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The `q` quantile (0..=1) of sorted `values`, nearest rank.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Reads a JSON-lines file of `T`; a partial last line (a killed writer) is skipped, any
/// other bad line is an error naming it.
pub fn read_lines<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, BenchError> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::io(path, e))?;
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(v) => out.push(v),
            Err(_) if i + 1 == lines.len() && !complete => {}
            Err(e) => {
                return Err(BenchError::Malformed(format!(
                    "{}:{}: {e}",
                    path.display(),
                    i + 1
                )));
            }
        }
    }
    Ok(out)
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, BenchError> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::io(path, e))?;
    serde_json::from_str(&text)
        .map_err(|e| BenchError::Malformed(format!("{}: {e}", path.display())))
}

/// The result of the cell in `dir`. A run that left no report (killed) still gets a
/// result, from its arrivals and samples, with the reason in `ended`.
pub fn analyze(dir: &Path) -> Result<CellResult, BenchError> {
    let spec: CellSpec = read_json(&dir.join("spec.json"))?;
    let host: HostRecord = read_json(&dir.join("host.json"))?;
    let samples: Vec<Sample> = match dir.join("samples.jsonl") {
        p if p.exists() => read_lines(&p)?,
        _ => Vec::new(),
    };
    let report: Option<RunReport> = match dir.join("report.json") {
        p if p.exists() => Some(read_json(&p)?),
        _ => None,
    };
    let mut arrivals: Vec<(String, Vec<Arrival>)> = Vec::new();
    let folder = dir.join("arrivals");
    if folder.is_dir() {
        let mut files: Vec<_> = std::fs::read_dir(&folder)
            .map_err(|e| BenchError::io(&folder, e))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        for file in files {
            let name = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                // infallible: files come from `read_dir` and have names
                .unwrap_or_default();
            let lines: Vec<Arrival> = read_lines(&file)?;
            arrivals.push((
                name,
                lines
                    .into_iter()
                    .filter(|a| a.stream == IMAGE_STREAM)
                    .collect(),
            ));
        }
    }
    let link = match dir.join("link.json") {
        p if p.exists() => Some(LinkFiles {
            record: read_json(&p)?,
            plan: match dir.join("plan.json") {
                p if p.exists() => Some(read_json(&p)?),
                _ => None,
            },
        }),
        _ => None,
    };
    Ok(result(
        &spec,
        &host,
        &samples,
        report.as_ref(),
        &arrivals,
        link.as_ref(),
    ))
}

/// What a cell across a link left of it: `link.json` (the driver's) and `plan.json`.
#[derive(Clone, Debug)]
pub struct LinkFiles {
    /// The link's counters, queues and relay.
    pub record: LinkRecord,
    /// The plan that ran.
    pub plan: Option<PlanSummary>,
}

/// The result from what was read (see [`analyze`]).
#[expect(
    clippy::too_many_lines,
    reason = "one pass over a cell's records filling every column of its row in the table's \
              order; each column is a few lines"
)]
pub fn result(
    spec: &CellSpec,
    host: &HostRecord,
    samples: &[Sample],
    report: Option<&RunReport>,
    arrivals: &[(String, Vec<Arrival>)],
    link: Option<&LinkFiles>,
) -> CellResult {
    let elapsed_s = report
        .map(|r| r.stats.elapsed.as_secs_f64())
        .filter(|s| *s > 0.0)
        .unwrap_or(host.wall_s.max(1e-3));
    let published = report
        .and_then(|r| {
            r.stats
                .outputs
                .iter()
                .find(|o| o.stream == IMAGE_STREAM)
                .map(|o| o.published)
        })
        // Without a report: the highest sequence number seen, plus one.
        .unwrap_or_else(|| {
            arrivals
                .iter()
                .flat_map(|(_, a)| a.iter().map(|a| a.seq + 1))
                .max()
                .unwrap_or(0)
        });
    let camera_skipped = report
        .and_then(|r| r.stats.instances.iter().find(|i| i.name == "camera"))
        .and_then(|i| i.counters.iter().find(|(k, _)| k == "skipped_late"))
        .map_or(0, |(_, n)| *n);
    // Run-clock time of the start: the earliest publish seen, so the first gap counts
    // from the first frame out.
    let start_ns = arrivals
        .iter()
        .flat_map(|(_, a)| a.iter().map(|a| a.publish_ns))
        .min();
    let sinks: Vec<SinkResult> = arrivals
        .iter()
        .map(|(instance, arrivals)| {
            sink_result(instance, arrivals, published, elapsed_s, start_ns, report)
        })
        .collect();

    let mut upstream_drops = Vec::new();
    if let Some(r) = report {
        for w in &r.stats.wire {
            if !w.key.starts_with(IMAGE_STREAM) {
                continue;
            }
            let at = &w.partition;
            for (what, n) in [
                ("wire lost", w.lost),
                ("sender dropped", w.sender_dropped),
                ("rejected", w.rejected_total()),
            ] {
                if n > 0 {
                    upstream_drops.push((format!("{what} at {at}"), n));
                }
            }
        }
        for c in &r.stats.codecs {
            if c.stream != IMAGE_STREAM {
                continue;
            }
            let role = format!("{:?}", c.role).to_lowercase();
            for (what, n) in [("dropped", c.dropped), ("failed", c.failed)] {
                if n > 0 {
                    upstream_drops.push((format!("{role} {what} at {}", c.placement), n));
                }
            }
        }
    }
    if camera_skipped > 0 {
        upstream_drops.push(("camera skipped (late)".to_owned(), camera_skipped));
    }

    let (transport_bytes, image_bytes, image_frames) = report.map_or((0, 0, 0), |r| {
        r.stats
            .wire
            .iter()
            .filter(|w| w.direction == WireDirection::Out)
            .fold((0, 0, 0), |(all, image, frames), w| {
                let is_image = w.key.starts_with(IMAGE_STREAM);
                (
                    all + w.wire_bytes,
                    image + if is_image { w.wire_bytes } else { 0 },
                    frames + if is_image { w.frames } else { 0 },
                )
            })
    });
    let wall_s = host.wall_s.max(1e-3);
    let lo_bytes = samples.last().map_or(0, |s| s.lo_bytes) as f64;
    let lo_mbit_s = ((lo_bytes / wall_s - host.idle_lo_bytes_per_s) * 8.0 / 1e6).max(0.0);
    let ended = match (report, host.ended.as_str()) {
        (_, "killed") => "killed past its bound (no clean stop)".to_owned(),
        (None, how) => format!("no report (run {how}, exit {:?})", host.exit_code),
        (Some(r), how) => {
            let mut text = r.reason.to_string();
            if let Some(failure) = &r.failure {
                text.push_str(&format!(": {failure}"));
            }
            if how != "exited" {
                text.push_str(&format!(" ({how} past its bound)"));
            }
            if !r.stragglers.is_empty() {
                text.push_str(&format!(", stragglers: {}", r.stragglers.join(", ")));
            }
            text
        }
    };
    let workers_failed: Vec<&WorkerRecord> = host
        .workers
        .iter()
        .filter(|w| w.exit_code != Some(0))
        .collect();
    let ended = if workers_failed.is_empty() {
        ended
    } else {
        let named: Vec<String> = workers_failed
            .iter()
            .map(|w| format!("{} {} ({:?})", w.process, w.ended, w.exit_code))
            .collect();
        format!("{ended}; laptop workers: {}", named.join(", "))
    };
    let clean = report.is_some_and(|r| r.failure.is_none())
        && host.ended == "exited"
        && workers_failed.is_empty();
    let behind: Vec<&SinkResult> = sinks
        .iter()
        .filter(|s| s.delivered_pct < KEEP_UP_PCT || s.lag_end_ms >= KEEP_UP_LAG_MS)
        .collect();
    let kept_up = clean && behind.is_empty() && published > 0;
    let verdict = if !clean {
        ended.clone()
    } else if published == 0 {
        "nothing published".to_owned()
    } else if let Some(worst) = behind
        .iter()
        .min_by(|a, b| a.delivered_pct.total_cmp(&b.delivered_pct))
    {
        format!(
            "behind: {} of {} sinks; worst {} {:.0}%, lag {:.0} ms at the end",
            behind.len(),
            sinks.len(),
            worst.instance,
            worst.delivered_pct,
            worst.lag_end_ms
        )
    } else {
        "kept up".to_owned()
    };
    CellResult {
        spec: spec.clone(),
        label: spec.label(),
        variant: spec.variant(),
        cores: spec.profile.cores(host.host_cores),
        elapsed_s,
        published,
        published_fps: published as f64 / elapsed_s,
        camera_skipped,
        sinks,
        // infallible: without a report there is no consumer to list
        consumers: report.map(consumers).unwrap_or_default(),
        link: link.map(|l| link_result(l, host, samples, report)),
        adaptation: report.and_then(colour_adaptation),
        upstream_drops,
        cpu_pct: host.tree_cpu_s / wall_s * 100.0,
        cpu_pct_sampled: median(samples.iter().map(|s| s.tree_cpu_pct).collect()),
        host_cpu_over_idle_pct: median(
            samples
                .iter()
                .map(|s| (s.host_cpu_pct - host.idle_host_cpu_pct).max(0.0))
                .collect(),
        ),
        rss_mb: samples.iter().map(|s| s.tree_rss_mb).fold(0.0, f64::max),
        lo_mbit_s,
        transport_mbit_s: transport_bytes as f64 * 8.0 / 1e6 / elapsed_s,
        image_wire_kb_per_frame: if image_frames > 0 {
            image_bytes as f64 / image_frames as f64 / 1e3
        } else {
            0.0
        },
        ended,
        kept_up,
        verdict,
    }
}

/// Every colour consumer's delivered frames, from the report's inputs.
fn consumers(report: &RunReport) -> Vec<ConsumerResult> {
    report
        .stats
        .inputs
        .iter()
        .filter(|i| i.stream == IMAGE_STREAM)
        .map(|i| {
            let instance = i.port.split('.').next().unwrap_or(&i.port).to_owned();
            let host = report
                .stats
                .instances
                .iter()
                .find(|s| s.name == instance)
                .map(|s| s.host.clone())
                // An input's instance is in the report; an empty host only blanks a column.
                // infallible: see above
                .unwrap_or_default();
            ConsumerResult {
                instance,
                host,
                delivered: i.delivered,
            }
        })
        .collect()
}

/// The link's figures: the sampled counters of the robot's end, the driver's record of
/// the queues and the relay, the plan's cross-host links, the laptop's receptions.
fn link_result(
    files: &LinkFiles,
    host: &HostRecord,
    samples: &[Sample],
    report: Option<&RunReport>,
) -> LinkResult {
    let wall_s = host.wall_s.max(1e-3);
    let mbit = |bytes: u64, s: f64| bytes as f64 * 8.0 / 1e6 / s.max(1e-3);
    let last = samples.last();
    let mut peak: f64 = 0.0;
    for pair in samples.windows(2) {
        let bytes = pair[1].link_tx_bytes.saturating_sub(pair[0].link_tx_bytes);
        peak = peak.max(mbit(bytes, pair[1].t_s - pair[0].t_s));
    }
    let mut crossing: Vec<String> = files
        .plan
        .iter()
        .flat_map(|plan| plan.links.iter())
        .filter(|l| l.locality == "cross-host")
        .map(|l| match &l.codec {
            Some(codec) => format!("{} ({codec})", l.stream),
            None => l.stream.clone(),
        })
        .collect();
    crossing.sort();
    crossing.dedup();
    let laptop_in = || {
        report.into_iter().flat_map(|r| {
            r.stats
                .wire
                .iter()
                // The planned links (a tap's own ingress is a row too since issue 50), off
                // the link: not what the laptop's receiver of a stream hands on to its
                // neighbours (`@host/laptop/<stream>`, issue 53).
                .filter(|w| {
                    w.direction == WireDirection::In
                        && w.tap.is_none()
                        && w.partition.starts_with("laptop/")
                        && !w.key.starts_with(streamwire_graph::FORWARDED_PREFIX)
                })
        })
    };
    LinkResult {
        profile: files.record.profile.to_string(),
        description: files.record.description.clone(),
        crossing,
        to_laptop_mbit_s: mbit(last.map_or(0, |s| s.link_tx_bytes), wall_s),
        to_robot_mbit_s: mbit(last.map_or(0, |s| s.link_rx_bytes), wall_s),
        to_laptop_peak_mbit_s: peak,
        to_laptop_worst_2s_mbit_s: worst_two_seconds(samples),
        laptop_frames: laptop_in().map(|w| w.frames).sum(),
        laptop_shared_memory_frames: laptop_in().map(|w| w.shared_memory).sum(),
        overlimits: files.record.qdiscs.iter().map(|q| q.overlimits).sum(),
        qdisc_drops: files.record.qdiscs.iter().map(|q| q.drops).sum(),
        relay: files.record.relay,
        workers: host.workers.clone(),
    }
}

/// The colour stream's encoder's adaptation, when it keeps a budget.
fn colour_adaptation(report: &RunReport) -> Option<Adaptation> {
    report
        .stats
        .codecs
        .iter()
        .filter(|c| c.stream == IMAGE_STREAM)
        .find_map(|c| c.adaptation.clone())
}

/// Robot to laptop over the busiest window of two seconds (between samples about two
/// seconds apart), from two seconds after the first sample that saw traffic, Mbit/s.
fn worst_two_seconds(samples: &[Sample]) -> Option<f64> {
    let first_traffic = samples.iter().find(|s| s.link_tx_bytes > 0)?.t_s;
    let mut worst: Option<f64> = None;
    for (i, start) in samples.iter().enumerate() {
        if start.t_s < first_traffic + 2.0 {
            continue;
        }
        let Some(end) = samples[i + 1..].iter().find(|e| e.t_s - start.t_s >= 1.95) else {
            break;
        };
        let bytes = end.link_tx_bytes.saturating_sub(start.link_tx_bytes);
        let rate = bytes as f64 * 8.0 / 1e6 / (end.t_s - start.t_s);
        worst = Some(worst.map_or(rate, |w| w.max(rate)));
    }
    worst
}

/// The median lag of the last quarter of `arrivals` (in arrival order) over that of the
/// first quarter; 1 with fewer than 8 arrivals.
fn lag_growth(arrivals: &[Arrival]) -> f64 {
    if arrivals.len() < 8 {
        return 1.0;
    }
    let mut ordered: Vec<&Arrival> = arrivals.iter().collect();
    ordered.sort_by_key(|a| a.arrival_ns);
    let quarter = ordered.len() / 4;
    let lag = |part: &[&Arrival]| {
        median(
            part.iter()
                .map(|a| a.arrival_ns.saturating_sub(a.publish_ns) as f64 / 1e6)
                .collect(),
        )
    };
    let first = lag(&ordered[..quarter]);
    let last = lag(&ordered[ordered.len() - quarter..]);
    // A first quarter under a microsecond (in one process) says nothing of growth.
    last / first.max(1e-3)
}

fn sink_result(
    instance: &str,
    arrivals: &[Arrival],
    published: u64,
    elapsed_s: f64,
    start_ns: Option<u64>,
    report: Option<&RunReport>,
) -> SinkResult {
    let delivered = arrivals.len() as u64;
    let mut lags: Vec<f64> = arrivals
        .iter()
        .map(|a| a.arrival_ns.saturating_sub(a.publish_ns) as f64 / 1e6)
        .collect();
    let last_arrival = arrivals.iter().map(|a| a.arrival_ns).max();
    let lag_end_ms = last_arrival.map_or(0.0, |last| {
        median(
            arrivals
                .iter()
                .filter(|a| a.arrival_ns + 1_000_000_000 >= last)
                .map(|a| a.arrival_ns.saturating_sub(a.publish_ns) as f64 / 1e6)
                .collect(),
        )
    });
    lags.sort_by(f64::total_cmp);
    let mut times: Vec<u64> = arrivals.iter().map(|a| a.arrival_ns).collect();
    times.sort_unstable();
    let mut longest_gap_ns = match (start_ns, times.first()) {
        (Some(start), Some(first)) => first.saturating_sub(start),
        _ => 0,
    };
    for pair in times.windows(2) {
        longest_gap_ns = longest_gap_ns.max(pair[1] - pair[0]);
    }
    let mut drops = Vec::new();
    if let Some(input) = report.and_then(|r| {
        r.stats
            .inputs
            .iter()
            .find(|i| i.port.split('.').next() == Some(instance) && i.stream == IMAGE_STREAM)
    }) {
        let d = input.dropped;
        for (reason, n) in [
            ("queue full", d.queue_full),
            ("decode failed", d.decode_failed),
            ("deserialize failed", d.deserialize_failed),
            ("unpaired", d.unpaired),
        ] {
            if n > 0 {
                drops.push((reason.to_owned(), n));
            }
        }
    }
    let counted: u64 = drops.iter().map(|(_, n)| n).sum();
    SinkResult {
        instance: instance.to_owned(),
        delivered,
        delivered_pct: if published > 0 {
            delivered as f64 / published as f64 * 100.0
        } else {
            0.0
        },
        fps: delivered as f64 / elapsed_s,
        lag_p50_ms: quantile(&lags, 0.5),
        lag_p99_ms: quantile(&lags, 0.99),
        lag_end_ms,
        longest_gap_ms: longest_gap_ns as f64 / 1e6,
        drops,
        not_delivered: published.saturating_sub(delivered + counted),
        lag_growth: lag_growth(arrivals),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::Profile;

    fn spec() -> CellSpec {
        CellSpec {
            blueprint: "basic".into(),
            mode: "codec".into(),
            shared_memory: true,
            profile: Profile::constrained(),
            sinks: None,
            work_ms: 5.0,
            duration_s: 2.0,
            replay: None,
            fps: None,
            rep: 0,
            netns: true,
            link: None,
            place: None,
            max_bitrate: None,
            dir: "/nowhere".into(),
        }
    }

    fn host(ended: &str) -> HostRecord {
        HostRecord {
            idle_host_cpu_pct: 3.0,
            idle_lo_bytes_per_s: 0.0,
            wall_s: 2.0,
            tree_cpu_s: 1.0,
            exit_code: Some(0),
            ended: ended.into(),
            netns: true,
            host_cores: 2,
            workers: Vec::new(),
        }
    }

    /// Frames every 50 ms from t = 1 s, each arriving `lag_ms` later; `skip` left out.
    fn arrivals(n: u64, lag_ms: u64, skip: &[u64]) -> Vec<Arrival> {
        (0..n)
            .filter(|seq| !skip.contains(seq))
            .map(|seq| {
                let publish_ns = 1_000_000_000 + seq * 50_000_000;
                Arrival {
                    instance: "busy_0".into(),
                    stream: IMAGE_STREAM.into(),
                    seq,
                    publish_ns,
                    arrival_ns: publish_ns + lag_ms * 1_000_000,
                    bytes: 100,
                }
            })
            .collect()
    }

    #[test]
    fn a_sink_that_got_everything_keeps_up() {
        let samples = vec![Sample {
            t_s: 1.0,
            tree_cpu_pct: 40.0,
            tree_rss_mb: 80.0,
            processes: 3,
            host_cpu_pct: 25.0,
            lo_bytes: 2_000_000,
            link_tx_bytes: 0,
            link_rx_bytes: 0,
        }];
        let r = result(
            &spec(),
            &host("exited"),
            &samples,
            None,
            &[("busy_0".into(), arrivals(40, 7, &[]))],
            None,
        );
        // No report: published is inferred from the sequence numbers, and the verdict
        // says the run left no report.
        assert_eq!(r.published, 40);
        assert!(!r.kept_up);
        assert!(r.verdict.starts_with("no report"), "{}", r.verdict);
        let s = &r.sinks[0];
        assert_eq!(s.delivered, 40);
        assert_eq!(s.lag_p50_ms, 7.0);
        assert_eq!(s.lag_end_ms, 7.0);
        assert_eq!(s.longest_gap_ms, 50.0);
        assert_eq!(r.cpu_pct, 50.0);
        assert_eq!(r.rss_mb, 80.0);
        assert_eq!(r.host_cpu_over_idle_pct, 22.0);
        assert_eq!(r.lo_mbit_s, 8.0);
    }

    #[test]
    fn gaps_and_lag_show() {
        let mut a = arrivals(40, 7, &[10, 11, 12, 13]);
        for late in a.iter_mut().filter(|a| a.seq >= 30) {
            late.arrival_ns += 2_000_000_000;
        }
        let r = result(
            &spec(),
            &host("exited"),
            &[],
            None,
            &[("busy_0".into(), a)],
            None,
        );
        let s = &r.sinks[0];
        assert_eq!(s.delivered, 36);
        assert_eq!(s.delivered_pct, 90.0);
        assert_eq!(s.not_delivered, 4);
        assert_eq!(s.longest_gap_ms, 2050.0);
        assert_eq!(s.lag_end_ms, 2007.0);
        assert_eq!(s.lag_p99_ms, 2007.0);
        // The last quarter (seq 30..39) is 2 s late, the first 7 ms.
        assert_eq!(s.lag_growth, 2007.0 / 7.0);
    }

    #[test]
    fn the_links_worst_two_seconds_start_two_seconds_into_its_traffic() {
        let at = |t_s: f64, mbit_so_far: f64| Sample {
            t_s,
            tree_cpu_pct: 0.0,
            tree_rss_mb: 0.0,
            processes: 0,
            host_cpu_pct: 0.0,
            lo_bytes: 0,
            link_tx_bytes: (mbit_so_far * 1e6 / 8.0) as u64,
            link_rx_bytes: 0,
        };
        // Silent for a second, a burst of 36 Mbit in the first two seconds of traffic (not
        // judged), then 6 Mbit/s, then 8 Mbit/s over the last two seconds.
        let samples = [
            at(0.0, 0.0),
            at(1.0, 0.0),
            at(2.0, 10.0),
            at(3.0, 40.0),
            at(4.0, 46.0),
            at(5.0, 52.0),
            at(6.0, 60.0),
            at(7.0, 68.0),
        ];
        let worst = worst_two_seconds(&samples).unwrap();
        assert!((worst - 8.0).abs() < 1e-6, "{worst}");
        assert_eq!(
            worst_two_seconds(&samples[..2]),
            None,
            "no traffic, no window"
        );
    }

    #[test]
    fn quantiles_and_medians() {
        assert_eq!(median(vec![]), 0.0);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&sorted, 0.5), 50.0);
        assert_eq!(quantile(&sorted, 0.99), 99.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }

    #[test]
    fn a_partial_last_line_is_skipped_and_a_bad_one_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.jsonl");
        let good = serde_json::to_string(&arrivals(1, 1, &[])[0]).expect("json");
        std::fs::write(&path, format!("{good}\n{{\"instance\":")).expect("write");
        assert_eq!(read_lines::<Arrival>(&path).expect("read").len(), 1);
        std::fs::write(&path, format!("{{\"x\":1}}\n{good}\n")).expect("write");
        let e = read_lines::<Arrival>(&path).expect_err("bad line");
        assert!(e.to_string().contains("a.jsonl:1"), "{e}");
    }
}
