//! Charts, each written as SVG and PNG: the benchmarks' shared charts
//! (`streamwire_benchkit::charts`: plotters, the shipped font, the palette), their errors
//! as this crate's.

pub use streamwire_benchkit::charts::{Bars, Lines, cdf};

use std::path::Path;

use streamwire_benchkit::charts::{self, ChartError};

use crate::BenchError;

impl From<ChartError> for BenchError {
    fn from(error: ChartError) -> Self {
        match error {
            ChartError::Io { path, source } => BenchError::Io { path, source },
            other => BenchError::Chart(other.to_string()),
        }
    }
}

/// Writes `stem.svg` and `stem.png` in `dir` for bars.
pub fn write_bars(dir: &Path, stem: &str, bars: &Bars<'_>) -> Result<(), BenchError> {
    Ok(charts::write_bars(dir, stem, bars)?)
}

/// Writes `stem.svg` and `stem.png` in `dir` for lines.
pub fn write_lines(dir: &Path, stem: &str, lines: &Lines<'_>) -> Result<(), BenchError> {
    Ok(charts::write_lines(dir, stem, lines)?)
}
