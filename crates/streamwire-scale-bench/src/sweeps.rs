//! The sweeps (`streamwire bench scale`): how cost grows with consumers, streams and
//! processes. Each point is a real `streamwire run` of a blueprint file the sweep writes
//! ([`blueprints`]): the coordinator and its workers, as users run them, sampled from
//! /proc every second ([`point`]); each sweep gives rows, a CSV, a table and a chart
//! ([`rows`]).
//!
//! - **consumers**: one 1280x720 camera (`SimCamera`, 20 fps) in process `producer` to
//!   1..32 `RecordingSink`s spread round-robin over up to 8 consumer processes; series
//!   `raw` (pixels over shared memory) and `jpeg` (one encode, a decode per consumer
//!   process).
//! - **streams**: 1..1024 cameras of 5x4 rgb8 (60 B of pixels) at 100 Hz, each its own
//!   stream, in `producer`, each to one sink in `consumer`.
//! - **processes**: 2..32 workers: a 32x24 camera at 10 fps in one, a sink in each other
//!   (light traffic); the time from `run` to "every worker is ready", each worker's CPU
//!   and PSS, the coordinator's CPU.

pub mod blueprints;
pub mod cli;
pub mod point;
pub mod rows;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use crate::ScaleError;
use point::Measured;

/// Which sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Sweep {
    /// One 720p stream to more and more consumers.
    Consumers,
    /// More and more small streams between two workers.
    Streams,
    /// More and more workers with light traffic.
    Processes,
}

impl Sweep {
    /// Every sweep, in the order `--sweep all` runs them.
    pub const ALL: [Sweep; 3] = [Sweep::Consumers, Sweep::Streams, Sweep::Processes];

    /// Its name on the command line and in file names.
    pub fn name(self) -> &'static str {
        match self {
            Sweep::Consumers => "consumers",
            Sweep::Streams => "streams",
            Sweep::Processes => "processes",
        }
    }

    /// The sizes it runs unless `--sizes` says otherwise (issue 57's).
    pub fn default_sizes(self) -> &'static [u32] {
        match self {
            Sweep::Consumers => &[1, 2, 4, 8, 16, 32],
            Sweep::Streams => &[1, 16, 64, 256, 1024],
            Sweep::Processes => &[2, 4, 8, 16, 32],
        }
    }

    /// Its series: the consumers sweep runs raw pixels and JPEG, the others one series.
    pub fn series(self) -> &'static [&'static str] {
        match self {
            Sweep::Consumers => &["raw", "jpeg"],
            Sweep::Streams | Sweep::Processes => &["raw"],
        }
    }

    /// The smallest size that makes sense (a producer and one consumer).
    fn min_size(self) -> u32 {
        match self {
            Sweep::Processes => 2,
            Sweep::Consumers | Sweep::Streams => 1,
        }
    }
}

impl fmt::Display for Sweep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Sweep {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Sweep::ALL
            .into_iter()
            .find(|sweep| sweep.name() == s)
            .ok_or_else(|| format!("unknown sweep `{s}`: expected consumers, streams or processes"))
    }
}

/// One sweep to run.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepOptions {
    /// Which.
    pub sweep: Sweep,
    /// Its sizes, smallest first.
    pub sizes: Vec<u32>,
    /// Its series (none: all of [`Sweep::series`]).
    pub series: Vec<String>,
    /// How long each point's run runs once every worker is ready.
    pub duration: Duration,
    /// The most consumer processes of the consumers sweep.
    pub consumer_processes: u32,
    /// Where each point's folder, the CSV, the table and the chart go.
    pub out: PathBuf,
}

impl SweepOptions {
    /// `sweep` at its default sizes and series, 10 s a point, into `out`.
    pub fn new(sweep: Sweep, out: &Path) -> SweepOptions {
        SweepOptions {
            sweep,
            sizes: sweep.default_sizes().to_vec(),
            series: sweep.series().iter().map(|s| (*s).to_owned()).collect(),
            duration: Duration::from_secs(10),
            consumer_processes: 8,
            out: out.to_owned(),
        }
    }

    /// Checks sizes and series before anything runs.
    pub fn check(&self) -> Result<(), ScaleError> {
        if let Some(size) = self.sizes.iter().find(|s| **s < self.sweep.min_size()) {
            return Err(ScaleError::Run(format!(
                "size {size} is too small for the {} sweep (at least {})",
                self.sweep,
                self.sweep.min_size()
            )));
        }
        if self.sizes.is_empty() {
            return Err(ScaleError::Run("no sizes to run".to_owned()));
        }
        match self
            .series
            .iter()
            .find(|s| !self.sweep.series().contains(&s.as_str()))
        {
            Some(series) => Err(ScaleError::Run(format!(
                "the {} sweep has no series `{series}` (it has {})",
                self.sweep,
                self.sweep.series().join(", ")
            ))),
            None => Ok(()),
        }
    }
}

/// One point's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Its series.
    pub series: String,
    /// Its size (consumers, streams or workers).
    pub size: u32,
    /// What was measured.
    pub measured: Measured,
}

/// Runs every point of the sweep (`exe`: a program with `run`, the stock binary), each
/// series from the smallest size up; `stop` ends it after the point running; `progress`
/// hears a line per point. A point whose run fails is an error: a sweep is only
/// comparable whole.
pub fn run(
    options: &SweepOptions,
    exe: &Path,
    stop: &dyn Fn() -> bool,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Point>, ScaleError> {
    options.check()?;
    let mut points = Vec::new();
    for series in &options.series {
        for &size in &options.sizes {
            if stop() {
                return Ok(points);
            }
            let dir = options
                .out
                .join(format!("{}-{series}-{size}", options.sweep));
            let file = blueprints::write(options, series, size, &dir)?;
            let measured = point::measure(exe, &file, options.duration, &dir)?;
            progress(&format!(
                "{} {series} {size}: {}",
                options.sweep,
                measured.summary()
            ));
            points.push(Point {
                series: series.clone(),
                size,
                measured,
            });
        }
    }
    Ok(points)
}
