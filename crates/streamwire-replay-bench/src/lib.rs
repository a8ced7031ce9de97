//! The replay benchmark of streamwire (`streamwire bench replay`): real blueprints on real
//! frames, raw against compressed.
//!
//! **What a cell is.** One run of one blueprint (`replay-basic`, `replay-full`,
//! `replay-heavy` of the stock binary) in one *variant* (`raw-shm`: pixels between
//! processes over zenoh's shared memory; `raw-tcp`: pixels copied through TCP; `codec`:
//! JPEG q75, one encode in the camera's process and one decode in each process that wants
//! pixels; the only difference is the colour stream) and one *profile* (`all` cores, or
//! `constrained`: `taskset -c 0`, one core). Each cell runs in a network namespace of its
//! own (`unshare -n`), so the loopback counter sees only its traffic, with a host sampler
//! beside it ([`sampler`]: /proc, once a second) after an idle baseline. See [`cell`]
//! for what a cell leaves in its folder, [`analysis`] for what is computed from it.
//!
//! **The matrix** runs blueprint x profile x variant x repetitions, the variants rotated
//! from one repetition to the next so raw and codec interleave (a machine that drifts
//! shifts both), and prints medians over the repetitions as a table shaped like
//! REFERENCE.md section 1 ([`summary`]), with charts ([`charts`]) and a markdown summary.
//!
//! ```no_run
//! use streamwire_replay_bench::{Options, Variant, run};
//! let options = Options {
//!     blueprints: vec!["heavy".into()],
//!     variants: vec![Variant::RawShm, Variant::Codec],
//!     work_ms: vec![5.0],
//!     ..Options::default()
//! };
//! let exe = std::env::current_exe()?; // a program with `run` and `bench cell`
//! let outcome = run(&options, &exe, &mut |line| eprintln!("{line}"))?;
//! println!("{}", streamwire_replay_bench::summary::table(&outcome.rows));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod analysis;
pub mod cell;
pub mod charts;
pub mod cli;
pub mod link;
pub mod sampler;
pub mod summary;

use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::analysis::{Arrival, CellResult};
use crate::cell::{CellSpec, Profile};
use crate::link::LinkProfile;
use crate::sampler::Sample;
use crate::summary::Row;

/// Why the benchmark could not run or read its own results.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// A bad option.
    #[error("{0}")]
    Usage(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A cell could not start, or failed.
    #[error("{0}")]
    Cell(String),
    /// A file a cell left is not what it should be.
    #[error("malformed benchmark file {0}")]
    Malformed(String),
    /// A chart could not be drawn.
    #[error("chart: {0}")]
    Chart(String),
}

impl BenchError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> BenchError {
        BenchError::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// How the colour stream travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Pixels; the workers offer shared memory.
    RawShm,
    /// Pixels; the workers without shared memory (copied through TCP on loopback).
    RawTcp,
    /// JPEG.
    Codec,
    /// `auto`: pixels between the processes of one host (shared memory), JPEG across a
    /// link to another host.
    Auto,
    /// `auto` with a bit-rate budget on the colour stream (`max_bitrate`) of
    /// [`BUDGET_SHARE`] of the link's rate: only across a link.
    Budget,
}

/// The share of the link's rate a `budget` cell gives the colour stream.
pub const BUDGET_SHARE: f64 = 0.8;

impl Variant {
    /// The variants of a one-host cell, in table order.
    pub const ALL: [Variant; 3] = [Variant::RawShm, Variant::RawTcp, Variant::Codec];
    /// The variants of a cell across a link, in table order.
    pub const ACROSS_A_LINK: [Variant; 3] = [Variant::RawShm, Variant::Codec, Variant::Auto];

    fn mode(self) -> &'static str {
        match self {
            Variant::Codec => "codec",
            Variant::Auto | Variant::Budget => "auto",
            Variant::RawShm | Variant::RawTcp => "raw",
        }
    }

    fn shared_memory(self) -> bool {
        self != Variant::RawTcp
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Variant::RawShm => "raw-shm",
            Variant::RawTcp => "raw-tcp",
            Variant::Codec => "codec",
            Variant::Auto => "auto",
            Variant::Budget => "budget",
        })
    }
}

impl FromStr for Variant {
    type Err = BenchError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "raw" | "raw-shm" => Ok(Variant::RawShm),
            "raw-tcp" => Ok(Variant::RawTcp),
            "codec" => Ok(Variant::Codec),
            "auto" => Ok(Variant::Auto),
            "budget" => Ok(Variant::Budget),
            _ => Err(BenchError::Usage(format!(
                "unknown mode `{s}`: expected raw (raw-shm), raw-tcp, codec, auto or budget"
            ))),
        }
    }
}

/// The blueprints the benchmark knows.
pub const BLUEPRINTS: [&str; 3] = ["basic", "full", "heavy"];

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Of [`BLUEPRINTS`].
    pub blueprints: Vec<String>,
    /// Variants.
    pub variants: Vec<Variant>,
    /// Profiles.
    pub profiles: Vec<Profile>,
    /// Repetitions of every cell.
    pub reps: usize,
    /// Busy sinks (none: each blueprint's own).
    pub sinks: Option<usize>,
    /// CPU-ms of image work per frame, each busy sink (several: the matrix runs each).
    pub work_ms: Vec<f64>,
    /// Seconds each run lasts.
    pub duration_s: f64,
    /// The folder of frames, or an MCAP file (none: the simulated camera).
    pub replay: Option<PathBuf>,
    /// The camera's rate (none: as recorded).
    pub fps: Option<f64>,
    /// Each cell in a network namespace of its own (needs `unshare -n`: root).
    pub netns: bool,
    /// Links between the robot and the operator's laptop (none: every process on one
    /// host). With one, each cell splits the blueprint over two hosts, each in a network
    /// namespace, joined by the link ([`link`]).
    pub links: Vec<LinkProfile>,
    /// Where everything is written.
    pub out: PathBuf,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            blueprints: vec!["heavy".to_owned()],
            variants: Variant::ALL.to_vec(),
            profiles: vec![Profile::all()],
            reps: 1,
            sinks: None,
            work_ms: vec![20.0],
            duration_s: 20.0,
            replay: None,
            fps: None,
            netns: true,
            links: Vec::new(),
            out: PathBuf::from("target/bench-replay"),
        }
    }
}

impl Options {
    /// The matrix: every blueprint, both profiles, every variant, 3 repetitions.
    pub fn matrix() -> Options {
        Options {
            blueprints: BLUEPRINTS.iter().map(|b| (*b).to_owned()).collect(),
            profiles: vec![Profile::all(), Profile::constrained()],
            reps: 3,
            ..Options::default()
        }
    }

    /// Every cell, in the order they run: repetition by repetition, and within one the
    /// variants rotated by the repetition's index.
    pub fn cells(&self) -> Vec<CellSpec> {
        let mut cells = Vec::new();
        let links: Vec<Option<&LinkProfile>> = if self.links.is_empty() {
            vec![None]
        } else {
            self.links.iter().map(Some).collect()
        };
        for rep in 0..self.reps {
            for blueprint in &self.blueprints {
                for &work_ms in &self.work_ms {
                    for (profile, link) in self
                        .profiles
                        .iter()
                        .flat_map(|p| links.iter().map(move |l| (p, *l)))
                    {
                        let n = self.variants.len().max(1);
                        for k in 0..self.variants.len() {
                            let variant = self.variants[(k + rep) % n];
                            let mut spec = CellSpec {
                                blueprint: blueprint.clone(),
                                mode: variant.mode().to_owned(),
                                shared_memory: variant.shared_memory(),
                                profile: profile.clone(),
                                sinks: self.sinks,
                                work_ms,
                                duration_s: self.duration_s,
                                replay: self.replay.clone(),
                                fps: self.fps,
                                rep,
                                netns: self.netns,
                                link: link.cloned(),
                                place: None,
                                max_bitrate: link
                                    .filter(|_| variant == Variant::Budget)
                                    .map(|l| (l.rate_mbit_s * 1e6 * BUDGET_SHARE).round() as u64),
                                dir: PathBuf::new(),
                            };
                            let work = if self.work_ms.len() > 1 {
                                format!("-w{work_ms}")
                            } else {
                                String::new()
                            };
                            spec.dir = self
                                .out
                                .join("cells")
                                .join(format!("{}{work}", spec.label()));
                            cells.push(spec);
                        }
                    }
                }
            }
        }
        cells
    }

    fn check(&self) -> Result<(), BenchError> {
        let usage = |m: String| Err(BenchError::Usage(m));
        if let Some(b) = self
            .blueprints
            .iter()
            .find(|b| !BLUEPRINTS.contains(&b.as_str()))
        {
            return usage(format!(
                "unknown blueprint `{b}`: expected basic, full or heavy"
            ));
        }
        if self.blueprints.is_empty() || self.variants.is_empty() || self.profiles.is_empty() {
            return usage("nothing to run: no blueprint, mode or profile".to_owned());
        }
        if self.links.is_empty() && self.variants.contains(&Variant::Budget) {
            return usage(
                "mode budget gives the colour stream a share of a link's rate: it needs --link"
                    .to_owned(),
            );
        }
        if !self.links.is_empty() && !self.netns {
            return usage(
                "--link puts the laptop's workers in a network namespace of their own: it \
                 cannot run with --no-netns"
                    .to_owned(),
            );
        }
        if self.reps == 0 {
            return usage("--reps 0: expected at least 1".to_owned());
        }
        if !(self.duration_s.is_finite() && self.duration_s > 0.0) {
            return usage(format!(
                "--duration {}: expected seconds > 0",
                self.duration_s
            ));
        }
        if self.work_ms.iter().any(|w| !(w.is_finite() && *w >= 0.0)) {
            return usage("--work-ms: expected milliseconds >= 0".to_owned());
        }
        if let Some(fps) = self.fps
            && !(fps.is_finite() && fps > 0.0)
        {
            return usage(format!("--fps {fps}: expected frames per second > 0"));
        }
        if let Some(path) = &self.replay
            && !(path.is_dir() || is_mcap_file(path))
        {
            return usage(format!(
                "--replay {}: neither a folder nor an MCAP file",
                path.display()
            ));
        }
        Ok(())
    }
}

/// Whether `path` is a file named `*.mcap` (an MCAP recording the blueprints replay).
fn is_mcap_file(path: &std::path::Path) -> bool {
    path.is_file()
        && path
            .extension()
            .is_some_and(|extension| extension.eq_ignore_ascii_case("mcap"))
}

/// What a benchmark run produced.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Every cell, in the order they ran.
    pub cells: Vec<CellResult>,
    /// Medians over repetitions.
    pub rows: Vec<Row>,
    /// The markdown summary.
    pub summary: PathBuf,
    /// The charts, without extension (each is `.svg` and `.png`).
    pub charts: Vec<PathBuf>,
}

/// Runs every cell of `options` with `exe` (a program with `run`, the `replay-*`
/// blueprints and `bench cell`), writes the results, summary and charts in
/// `options.out`, and reports progress through `progress`.
pub fn run(
    options: &Options,
    exe: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<Outcome, BenchError> {
    options.check()?;
    let out = &options.out;
    std::fs::create_dir_all(out).map_err(|e| BenchError::io(out, e))?;
    let specs = options.cells();
    let results_path = out.join("results.jsonl");
    let mut results_file =
        std::fs::File::create(&results_path).map_err(|e| BenchError::io(&results_path, e))?;
    let mut cells = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        if spec.dir.exists() {
            std::fs::remove_dir_all(&spec.dir).map_err(|e| BenchError::io(&spec.dir, e))?;
        }
        progress(&format!(
            "cell {}/{}: {} ({} s)",
            i + 1,
            specs.len(),
            spec.label(),
            spec.duration_s
        ));
        cell::launch(spec, exe)?;
        let result = analysis::analyze(&spec.dir)?;
        progress(&format!(
            "  published {} ({:.1}/s), sinks' median {:.1} fps, worst {:.1}%, CPU {:.0}% of a core, loopback {:.1} Mbit/s: {}",
            result.published,
            result.published_fps,
            result.median_sink_fps(),
            result.worst_delivered_pct(),
            result.cpu_pct,
            result.lo_mbit_s,
            result.verdict
        ));
        if let Some(link) = &result.link {
            progress(&format!(
                "  link {}: {:.1} Mbit/s to the laptop (busiest second {:.1}), {:.1} back; \
                 lag growth {:.2}; laptop frames through shared memory {} of {}; crossing: {}",
                link.profile,
                link.to_laptop_mbit_s,
                link.to_laptop_peak_mbit_s,
                link.to_robot_mbit_s,
                result.worst_lag_growth(),
                link.laptop_shared_memory_frames,
                link.laptop_frames,
                link.crossing.join(", ")
            ));
        }
        let line = serde_json::to_string(&result).map_err(|e| BenchError::Cell(e.to_string()))?;
        writeln!(results_file, "{line}").map_err(|e| BenchError::io(&results_path, e))?;
        cells.push(result);
    }
    let rows = summary::rows(&cells);
    let charts = write_charts(out, &rows, &cells)?;
    let chart_names: Vec<String> = charts
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let mut context = context(options);
    if let Some(link) = cells.iter().find_map(|c| c.link.as_ref()) {
        context.push_str(&format!(
            " Across a link, the operator's processes (on host `laptop`: the detector, the \
             viewer, the logger and the busy sinks placed with them) run in a network \
             namespace of their own, without shared memory, their workers joining the \
             coordinator in the robot's namespace across the link: {} Link Mbit/s is the \
             robot's end of the veth (its transmit counter: to the laptop) over the run; lag \
             growth the last quarter's median lag over the first quarter's, the worst sink.",
            link.description
        ));
    }
    let text = summary::markdown("Replay benchmark", &context, &rows, &cells, &chart_names);
    let summary_path = out.join("summary.md");
    std::fs::write(&summary_path, text).map_err(|e| BenchError::io(&summary_path, e))?;
    let rows_path = out.join("rows.json");
    cell::write_json(&rows_path, &rows)?;
    Ok(Outcome {
        cells,
        rows,
        summary: summary_path,
        charts,
    })
}

/// What ran where, for the summary's head.
fn context(options: &Options) -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let source = match &options.replay {
        Some(dir) => format!("frames of `{}`", dir.display()),
        None => "the simulated camera".to_owned(),
    };
    format!(
        "{} repetition(s) of {} s per cell, {source}{}, on a machine with {cores} cores; each cell {}. \
         CPU is the run's whole process tree (coordinator and workers), percent of one core, \
         from the kernel's account of the reaped processes; RSS the peak of the tree's summed \
         resident sets (sysinfo, once a second; a shared-memory pool counts in each process \
         that maps it); loopback the `lo` rx counter of the cell's namespace over the run, \
         minus the idle baseline; transport the bytes streamwire's zenoh transport sent, all \
         streams. A cell keeps up when every sink got at least 99% of the frames published \
         with under 1 s of lag at the end.",
        options.reps,
        options.duration_s,
        options
            .fps
            .map(|f| format!(" at {f} fps"))
            // infallible: no rate asked is no rate to print
            .unwrap_or_default(),
        if options.netns {
            "in a network namespace of its own (`unshare -n`)"
        } else {
            "in the machine's network namespace (`--no-netns`: loopback counts everything on it)"
        }
    )
}

/// Writes every chart and returns their paths (without extension).
fn write_charts(
    out: &Path,
    rows: &[Row],
    cells: &[CellResult],
) -> Result<Vec<PathBuf>, BenchError> {
    let mut written = Vec::new();
    let mut groups: Vec<String> = Vec::new();
    let mut variants: Vec<String> = Vec::new();
    for r in rows {
        let g = group_of(&r.blueprint, &r.profile, &r.link, r.work_ms);
        if !groups.contains(&g) {
            groups.push(g);
        }
        if !variants.contains(&r.variant) {
            variants.push(r.variant.clone());
        }
    }
    let series = |f: &dyn Fn(&Row) -> f64| -> Vec<(String, Vec<f64>)> {
        variants
            .iter()
            .map(|v| {
                let values = groups
                    .iter()
                    .map(|g| {
                        rows.iter()
                            .find(|r| {
                                &r.variant == v
                                    && &group_of(&r.blueprint, &r.profile, &r.link, r.work_ms) == g
                            })
                            .map_or(0.0, f)
                    })
                    .collect();
                (v.clone(), values)
            })
            .collect()
    };
    let mut bar_charts = vec![
        (
            "fps",
            "Frames delivered per second (median sink, median of repetitions)",
            "fps",
            series(&|r| r.delivered_fps),
        ),
        (
            "cpu",
            "Process-tree CPU (median of repetitions)",
            "% of one core",
            series(&|r| r.cpu_pct),
        ),
        (
            "wire",
            "Loopback traffic (median of repetitions)",
            "Mbit/s",
            series(&|r| r.lo_mbit_s),
        ),
    ];
    if rows.iter().any(|r| !r.link.is_empty()) {
        bar_charts.push((
            "link",
            "Across the link, robot to laptop (median of repetitions)",
            "Mbit/s",
            series(&|r| r.link_to_laptop_mbit_s),
        ));
    }
    for (stem, title, y_label, values) in bar_charts {
        charts::write_bars(
            out,
            stem,
            &charts::Bars {
                title,
                y_label,
                groups: &groups,
                series: &values,
            },
        )?;
        written.push(out.join(stem));
    }
    // Over time and distributions: the first repetition of each group, every variant.
    for g in &groups {
        let of_group: Vec<&CellResult> = cells
            .iter()
            .filter(|c| c.spec.rep == 0 && &cell_group(c) == g)
            .collect();
        written.extend(write_group_charts(out, g, &of_group)?);
    }
    Ok(written)
}

/// A chart group's name: `heavy all 5ms`, or across a link `heavy all wifi 5ms`.
fn group_of(blueprint: &str, profile: &str, link: &str, work_ms: f64) -> String {
    if link.is_empty() {
        format!("{blueprint} {profile} {work_ms}ms")
    } else {
        format!("{blueprint} {profile} {link} {work_ms}ms")
    }
}

/// The chart group of a cell.
fn cell_group(c: &CellResult) -> String {
    let link = c.spec.link.as_ref().map_or("", |l| l.name.as_str());
    group_of(
        &c.spec.blueprint,
        &c.spec.profile.name,
        link,
        c.spec.work_ms,
    )
}

/// One group's charts over time and of lag, every variant of `cells` (its first
/// repetition).
fn write_group_charts(
    out: &Path,
    g: &str,
    cells: &[&CellResult],
) -> Result<Vec<PathBuf>, BenchError> {
    let mut written = Vec::new();
    let mut cpu_series = Vec::new();
    let mut lag_series = Vec::new();
    for c in cells {
        let samples = cell_samples(c)?;
        cpu_series.push((
            c.variant.clone(),
            samples.iter().map(|s| (s.t_s, s.tree_cpu_pct)).collect(),
        ));
        let mut lags = Vec::new();
        let folder = c.spec.dir.join("arrivals");
        if folder.is_dir() {
            for entry in std::fs::read_dir(&folder)
                .map_err(|e| BenchError::io(&folder, e))?
                .flatten()
            {
                let arrivals: Vec<Arrival> = analysis::read_lines(&entry.path())?;
                lags.extend(
                    arrivals
                        .iter()
                        .filter(|a| a.stream == analysis::IMAGE_STREAM)
                        .map(|a| a.arrival_ns.saturating_sub(a.publish_ns) as f64 / 1e6),
                );
            }
        }
        lag_series.push((c.variant.clone(), charts::cdf(lags, 400)));
    }
    let slug = g.replace(' ', "-");
    if cells.iter().any(|c| c.variant == "budget") {
        written.extend(write_budget_charts(out, g, &slug, cells)?);
    }
    let stem = format!("cpu-over-time-{slug}");
    charts::write_lines(
        out,
        &stem,
        &charts::Lines {
            title: &format!("Process-tree CPU over time: {g}"),
            x_label: "s since the run started",
            y_label: "% of one core",
            series: &cpu_series,
            log_x: false,
            marker_x: None,
        },
    )?;
    written.push(out.join(stem));
    let stem = format!("lag-{slug}");
    charts::write_lines(
        out,
        &stem,
        &charts::Lines {
            title: &format!("Lag (arrival - publish), every sink: {g}"),
            x_label: "lag, ms (log)",
            y_label: "% of frames at or below",
            series: &lag_series,
            log_x: true,
            marker_x: None,
        },
    )?;
    written.push(out.join(stem));
    Ok(written)
}

/// A cell's host samples (none if it left no file).
fn cell_samples(c: &CellResult) -> Result<Vec<Sample>, BenchError> {
    let path = c.spec.dir.join("samples.jsonl");
    if path.exists() {
        analysis::read_lines(&path)
    } else {
        Ok(Vec::new())
    }
}

/// A link group with a `budget` cell: the JPEG quality over time, and the link's traffic
/// to the laptop each second against the budget, the `budget` cells beside the `auto`
/// ones (fixed quality 75) of the same run.
fn write_budget_charts(
    out: &Path,
    g: &str,
    slug: &str,
    cells: &[&CellResult],
) -> Result<Vec<PathBuf>, BenchError> {
    let compared: Vec<&&CellResult> = cells
        .iter()
        .filter(|c| c.variant == "budget" || c.variant == "auto")
        .collect();
    let mut quality = Vec::new();
    let mut traffic = Vec::new();
    let mut budget_bits = None;
    for c in &compared {
        let end = c.elapsed_s;
        let steps: Vec<(f64, f64)> = match &c.adaptation {
            Some(a) => {
                budget_bits = Some(a.budget_bitrate);
                let start = a.history.first().map_or(0, |h| h.stamp_nanos);
                let mut points: Vec<(f64, f64)> = Vec::new();
                for h in &a.history {
                    let t = h.stamp_nanos.saturating_sub(start) as f64 / 1e9;
                    if let Some(&(_, before)) = points.last() {
                        points.push((t, before));
                    }
                    points.push((t, f64::from(h.quality)));
                }
                if let Some(&(_, last)) = points.last() {
                    points.push((end, last));
                }
                points
            }
            None => vec![(0.0, 75.0), (end, 75.0)],
        };
        quality.push((c.variant.clone(), steps));
        let per_second = cell_samples(c)?
            .windows(2)
            .map(|pair| {
                let bytes = pair[1].link_tx_bytes.saturating_sub(pair[0].link_tx_bytes);
                (
                    pair[1].t_s,
                    bytes as f64 * 8.0 / 1e6 / (pair[1].t_s - pair[0].t_s).max(1e-3),
                )
            })
            .collect();
        traffic.push((c.variant.clone(), per_second));
    }
    if let Some(bits) = budget_bits {
        let end = compared.iter().map(|c| c.elapsed_s).fold(0.0, f64::max);
        traffic.push((
            "budget".to_owned() + " (max_bitrate)",
            vec![(0.0, bits as f64 / 1e6), (end, bits as f64 / 1e6)],
        ));
    }
    let mut written = Vec::new();
    let stem = format!("quality-over-time-{slug}");
    charts::write_lines(
        out,
        &stem,
        &charts::Lines {
            title: &format!("JPEG quality of the colour stream over time: {g}"),
            x_label: "s since the first frame (budget) or the run's start (auto)",
            y_label: "JPEG quality",
            series: &quality,
            log_x: false,
            marker_x: None,
        },
    )?;
    written.push(out.join(stem));
    let stem = format!("link-over-time-{slug}");
    charts::write_lines(
        out,
        &stem,
        &charts::Lines {
            title: &format!("Link traffic to the laptop, each second: {g}"),
            x_label: "s since the run started",
            y_label: "Mbit/s",
            series: &traffic,
            log_x: false,
            marker_x: None,
        },
    )?;
    written.push(out.join(stem));
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_interleaves_variants_and_rotates_them() {
        let options = Options {
            out: "/o".into(),
            ..Options::matrix()
        };
        let cells = options.cells();
        assert_eq!(cells.len(), 3 * 2 * 3 * 3);
        let first: Vec<String> = cells[..3].iter().map(CellSpec::variant).collect();
        assert_eq!(first, ["raw-shm", "raw-tcp", "codec"]);
        let second_rep = cells.iter().find(|c| c.rep == 1).map(CellSpec::variant);
        assert_eq!(second_rep.as_deref(), Some("raw-tcp"));
        assert_eq!(cells[0].dir, PathBuf::from("/o/cells/basic-all-raw-shm-r0"));
    }

    #[test]
    fn a_budget_cell_gives_the_colour_stream_four_fifths_of_its_link() {
        let options = Options {
            variants: vec![Variant::Auto, "budget".parse().unwrap()],
            links: vec![LinkProfile::weak_wifi()],
            blueprints: vec!["basic".into()],
            out: "/o".into(),
            ..Options::default()
        };
        assert!(options.check().is_ok());
        let cells = options.cells();
        let variants: Vec<String> = cells.iter().map(CellSpec::variant).collect();
        assert_eq!(variants, ["auto", "budget"]);
        assert_eq!(cells[0].max_bitrate, None);
        assert_eq!(cells[1].max_bitrate, Some(6_400_000));
        assert_eq!(cells[1].mode, "auto");
        assert!(
            cells[1]
                .settings()
                .contains(&"max_bitrate=6400000".to_owned())
        );
        assert_eq!(
            cells[1].dir,
            PathBuf::from("/o/cells/basic-all-weak-wifi-budget-r0")
        );
        // Without a link there is no rate to take a share of.
        let one_host = Options {
            links: vec![],
            ..options
        };
        assert!(matches!(one_host.check(), Err(BenchError::Usage(m)) if m.contains("--link")));
    }

    #[test]
    fn bad_options_are_refused() {
        for (options, text) in [
            (
                Options {
                    blueprints: vec!["medium".into()],
                    ..Options::default()
                },
                "unknown blueprint",
            ),
            (
                Options {
                    reps: 0,
                    ..Options::default()
                },
                "--reps 0",
            ),
            (
                Options {
                    duration_s: 0.0,
                    ..Options::default()
                },
                "--duration",
            ),
            (
                Options {
                    replay: Some("/no/such/dir".into()),
                    ..Options::default()
                },
                "--replay /no/such/dir: neither a folder nor an MCAP file",
            ),
        ] {
            let e = options.check().expect_err(text);
            assert!(e.to_string().contains(text), "{e}");
        }
        assert!("jpeg".parse::<Variant>().is_err());
        assert_eq!("raw".parse::<Variant>().ok(), Some(Variant::RawShm));
    }
}
