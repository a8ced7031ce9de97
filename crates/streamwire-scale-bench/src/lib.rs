//! How streamwire's cost grows with the work: the soak (`streamwire bench soak`), a run
//! that must grow nothing and lose nothing uncounted over an hour, and the sweeps
//! (`streamwire bench scale`, [`sweeps`]), runs of more and more consumers, streams and
//! processes.
//!
//! **What the soak runs.** A real `streamwire run` of a blueprint (the stock binary's
//! `demo-split` by default: six workers, closed), as users run it: the binary's `run`
//! started as a child process with `--duration` and `--report`, in a process group of its
//! own. Every `--interval` it samples each process of the run's tree (the coordinator and
//! its workers) from /proc ([`procfs`]): private memory (PSS and USS from
//! `smaps_rollup`; RSS counts a shared-memory pool in every process that maps it), RSS,
//! open fds and threads; the /dev/shm files the run's processes map (count and bytes);
//! and the run's counters from its status line ([`status`]).
//!
//! **What it judges** ([`analysis`]): after a warm-up (5 minutes, or a fifth of a shorter
//! run) fds, threads and segments must not grow, private memory must not grow more than
//! a limit (2% by default), no process may crash, and the final report must balance. It
//! writes `samples.csv`, `summary.json` and a chart (`soak.svg`, `soak.png`) ([`output`],
//! [`charts`]).
//!
//! ```no_run
//! use std::time::Duration;
//! use streamwire_scale_bench::soak::{SoakOptions, soak};
//! let options = SoakOptions::new("demo-split", Duration::from_secs(120), "soak".as_ref());
//! let exe = std::env::current_exe()?; // a program with `run`: the stock binary
//! let outcome = soak(&options, &exe, &|| false, &mut |line| eprintln!("{line}"))?;
//! println!("{}", streamwire_scale_bench::output::table(&outcome.growth));
//! assert!(outcome.broken.is_empty(), "{:?}", outcome.broken);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod analysis;
pub mod charts;
pub mod cli;
pub mod output;
pub mod soak;
pub mod status;
pub mod sweeps;

use std::path::{Path, PathBuf};

/// A run's processes read from /proc: the benchmarks' shared sampler.
pub use streamwire_benchkit::procfs;

/// Why a measurement could not run or write its results.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScaleError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The run could not be started or waited for.
    #[error("{0}")]
    Run(String),
    /// A chart could not be drawn.
    #[error("chart: {0}")]
    Chart(String),
}

impl From<streamwire_benchkit::charts::ChartError> for ScaleError {
    fn from(error: streamwire_benchkit::charts::ChartError) -> Self {
        match error {
            streamwire_benchkit::charts::ChartError::Io { path, source } => {
                ScaleError::Io { path, source }
            }
            other => ScaleError::Chart(other.to_string()),
        }
    }
}

impl ScaleError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> ScaleError {
        ScaleError::Io {
            path: path.to_owned(),
            source,
        }
    }
}
