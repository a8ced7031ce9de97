//! A sweep's points as rows of figures: the table a person reads, the CSV, the chart and
//! the cost per unit at the largest size against the smallest.

use std::fmt::Write as _;
use std::path::Path;

use streamwire_benchkit::charts::{self, Lines, Panels};

use super::{Point, Sweep};
use crate::ScaleError;

/// A column: its name (with its unit) and decimals in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// Header, unit included.
    pub name: &'static str,
    /// Decimals in the table (the CSV has every digit).
    pub decimals: usize,
}

const fn column(name: &'static str, decimals: usize) -> Column {
    Column { name, decimals }
}

/// One row: series, size, a value per column (`None`: not measured).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Its series.
    pub series: String,
    /// Its size.
    pub size: u32,
    /// A value per column.
    pub values: Vec<Option<f64>>,
}

/// A sweep's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Which sweep.
    pub sweep: Sweep,
    /// Its columns (after series and size).
    pub columns: Vec<Column>,
    /// Its rows, as measured.
    pub rows: Vec<Row>,
}

fn columns(sweep: Sweep) -> Vec<Column> {
    match sweep {
        Sweep::Consumers => vec![
            column("frames", 0),
            column("delivered %", 1),
            column("producer ms/frame", 2),
            column("run ms/frame", 2),
            column("marginal ms/frame/consumer", 3),
            column("consumer-side ms/frame/consumer", 3),
            column("p50 ms", 1),
            column("p99 ms", 1),
            column("shm MB", 1),
        ],
        Sweep::Streams => vec![
            column("msg/s", 0),
            column("delivered %", 1),
            column("CPU % core", 1),
            column("us/msg", 1),
            column("p50 ms", 2),
            column("p99 ms", 2),
            column("RSS MB", 1),
            column("threads", 0),
        ],
        Sweep::Processes => vec![
            column("ready s", 2),
            column("delivered %", 1),
            column("CPU %/worker", 2),
            column("PSS MB/worker", 1),
            column("coordinator CPU %", 2),
            column("threads", 0),
        ],
    }
}

/// The values of one point; `smallest`: the smallest size of its series, for the
/// marginal cost.
fn values(sweep: Sweep, point: &Point, smallest: Option<&Point>) -> Vec<Option<f64>> {
    let m = &point.measured;
    if m.failure.is_some() {
        // A run that failed measured nothing but, perhaps, its start.
        let mut none = vec![None; columns(sweep).len()];
        if sweep == Sweep::Processes {
            none[0] = m.ready_s;
        }
        return none;
    }
    let latency = |i: usize| m.latency_ms.map(|l| if i == 0 { l.0 } else { l.1 });
    match sweep {
        Sweep::Consumers => {
            let run = m.per_message_ms(m.total_cpu_ms);
            let producer = m.per_message_ms(m.producer_cpu_ms);
            let marginal = smallest.filter(|s| s.size < point.size).map(|s| {
                (run - s.measured.per_message_ms(s.measured.total_cpu_ms))
                    / f64::from(point.size - s.size)
            });
            vec![
                Some(m.published as f64),
                Some(m.delivered_pct()),
                Some(producer),
                Some(run),
                marginal,
                Some((run - producer) / f64::from(point.size.max(1))),
                latency(0),
                latency(1),
                Some(m.shm_bytes as f64 / 1e6),
            ]
        }
        Sweep::Streams => vec![
            Some(m.delivered as f64 / m.elapsed_s.max(1e-9)),
            Some(m.delivered_pct()),
            Some(m.core_pct(m.total_cpu_ms)),
            Some(m.per_message_ms(m.total_cpu_ms) * 1e3),
            latency(0),
            latency(1),
            Some(m.rss_kb as f64 / 1e3),
            Some(m.threads as f64),
        ],
        Sweep::Processes => vec![
            m.ready_s,
            Some(m.delivered_pct()),
            Some(m.core_pct(m.total_cpu_ms - m.coordinator_cpu_ms) / m.workers.max(1) as f64),
            Some(m.worker_pss_kb as f64 / 1e3),
            Some(m.core_pct(m.coordinator_cpu_ms)),
            Some(m.threads as f64),
        ],
    }
}

/// The sweep's table of `points`.
pub fn table(sweep: Sweep, points: &[Point]) -> Table {
    let rows = points
        .iter()
        .map(|point| {
            let smallest = points
                .iter()
                .filter(|p| p.series == point.series && p.measured.failure.is_none())
                .min_by_key(|p| p.size);
            Row {
                series: point.series.clone(),
                size: point.size,
                values: values(sweep, point, smallest),
            }
        })
        .collect();
    Table {
        sweep,
        columns: columns(sweep),
        rows,
    }
}

impl Table {
    /// Column `name`'s values of `series`, as (size, value) points.
    pub fn series_points(&self, series: &str, name: &str) -> Vec<(f64, f64)> {
        let Some(i) = self.columns.iter().position(|c| c.name == name) else {
            return Vec::new();
        };
        self.rows
            .iter()
            .filter(|r| r.series == series)
            .filter_map(|r| Some((f64::from(r.size), r.values.get(i).copied().flatten()?)))
            .collect()
    }

    fn series_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for row in &self.rows {
            if !names.contains(&row.series) {
                names.push(row.series.clone());
            }
        }
        names
    }

    /// The table a person reads: one line per row, columns aligned.
    pub fn text(&self) -> String {
        let mut header = vec!["series".to_owned(), self.sweep.name().to_owned()];
        header.extend(self.columns.iter().map(|c| c.name.to_owned()));
        let mut cells = vec![header];
        for row in &self.rows {
            let mut line = vec![row.series.clone(), row.size.to_string()];
            line.extend(
                self.columns
                    .iter()
                    .zip(&row.values)
                    .map(|(c, v)| v.map_or("-".to_owned(), |v| format!("{v:.*}", c.decimals))),
            );
            cells.push(line);
        }
        let widths: Vec<usize> = (0..cells[0].len())
            .map(|i| cells.iter().map(|l| l[i].len()).max().unwrap_or(0))
            .collect();
        let mut text = String::new();
        for line in &cells {
            let padded: Vec<String> = line
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (cell, w))| match i {
                    0 => format!("{cell:<w$}"),
                    _ => format!("{cell:>w$}"),
                })
                .collect();
            let _ = writeln!(text, "{}", padded.join("  ").trim_end());
        }
        text
    }

    /// The CSV: a header, then a row per point, every digit.
    pub fn csv(&self) -> String {
        let mut text = format!("series,{}", self.sweep.name());
        for c in &self.columns {
            let _ = write!(text, ",{}", c.name);
        }
        text.push('\n');
        for row in &self.rows {
            let _ = write!(text, "{},{}", row.series, row.size);
            for v in &row.values {
                let _ = write!(text, ",{}", v.map_or(String::new(), |v| v.to_string()));
            }
            text.push('\n');
        }
        text
    }

    /// The cost per unit whose growth issue 57 bounds (largest size over smallest, goal
    /// <= 1.5), per series: (what, ratio, smallest's, largest's).
    pub fn unit_cost_growth(&self) -> Vec<(String, f64, f64, f64)> {
        let unit = match self.sweep {
            Sweep::Consumers => "consumer-side ms/frame/consumer",
            Sweep::Streams => "us/msg",
            Sweep::Processes => "CPU %/worker",
        };
        let mut growth = Vec::new();
        let mut names = vec![unit];
        if self.sweep == Sweep::Processes {
            names.push("PSS MB/worker");
        }
        for series in self.series_names() {
            for name in &names {
                let points = self.series_points(&series, name);
                if let (Some(first), Some(last)) = (points.first(), points.last())
                    && points.len() > 1
                    && first.1 > 0.0
                {
                    growth.push((
                        format!("{series} {name}"),
                        last.1 / first.1,
                        first.1,
                        last.1,
                    ));
                }
            }
        }
        growth
    }
}

/// The panels of a sweep's chart: (title, y axis, columns drawn).
fn panels(sweep: Sweep) -> [(&'static str, &'static str, &'static [&'static str]); 4] {
    match sweep {
        Sweep::Consumers => [
            (
                "CPU of the run per frame",
                "ms",
                &["run ms/frame", "producer ms/frame"],
            ),
            (
                "Consumer-side CPU per consumer per frame",
                "ms",
                &["consumer-side ms/frame/consumer"],
            ),
            ("Latency, publish to arrival", "ms", &["p50 ms", "p99 ms"]),
            ("Delivered", "%", &["delivered %"]),
        ],
        Sweep::Streams => [
            ("CPU of the run", "% of a core", &["CPU % core"]),
            ("CPU per message", "us", &["us/msg"]),
            ("Latency, publish to arrival", "ms", &["p50 ms", "p99 ms"]),
            ("Memory and threads", "MB | threads", &["RSS MB", "threads"]),
        ],
        Sweep::Processes => [
            ("From `run` to every worker ready", "s", &["ready s"]),
            (
                "CPU per worker, and the coordinator's",
                "% of a core",
                &["CPU %/worker", "coordinator CPU %"],
            ),
            ("Private memory (PSS) per worker", "MB", &["PSS MB/worker"]),
            ("Delivered", "%", &["delivered %"]),
        ],
    }
}

/// A line of a panel: its label and its (size, value) points.
type Series = (String, Vec<(f64, f64)>);

/// Writes `<sweep>.svg` and `<sweep>.png` in `dir`: four panels against the size.
pub fn chart(dir: &Path, table: &Table, title: &str) -> Result<(), ScaleError> {
    let series_names = table.series_names();
    let several = series_names.len() > 1;
    let all: Vec<(&str, &str, Vec<Series>)> = panels(table.sweep)
        .iter()
        .map(|(panel_title, y_label, names)| {
            let series = series_names
                .iter()
                .flat_map(|s| {
                    names.iter().map(move |name| {
                        let label = if several {
                            format!("{s} {name}")
                        } else {
                            (*name).to_owned()
                        };
                        (label, table.series_points(s, name))
                    })
                })
                .collect();
            (*panel_title, *y_label, series)
        })
        .collect();
    let lines: Vec<Lines<'_>> = all
        .iter()
        .map(|(panel_title, y_label, series)| Lines {
            title: panel_title,
            x_label: table.sweep.name(),
            y_label,
            series,
            log_x: table.rows.iter().any(|r| r.size > 1),
            marker_x: None,
        })
        .collect();
    charts::write_panels(
        dir,
        table.sweep.name(),
        &Panels {
            title,
            grid: (2, 2),
            panels: &lines,
        },
    )?;
    Ok(())
}

/// A table of made-up points (for the snapshot and tests).
#[cfg(test)]
pub(crate) fn example(sweep: Sweep) -> Table {
    use crate::sweeps::point::Measured;
    let points: Vec<Point> = [1u32, 2, 4]
        .iter()
        .map(|&size| Point {
            series: "raw".to_owned(),
            size,
            measured: Measured {
                ready_s: Some(0.5 + f64::from(size) * 0.1),
                window_s: 8.0,
                elapsed_s: 10.0,
                published: 200,
                consumers: u64::from(size),
                delivered: 200 * u64::from(size) - u64::from(size - 1),
                balanced: true,
                producer_cpu_ms: 1_600,
                coordinator_cpu_ms: 40,
                total_cpu_ms: 1_700 + 100 * u64::from(size),
                workers: u64::from(size) + 1,
                worker_pss_kb: 30_000,
                rss_kb: 100_000 * u64::from(size),
                threads: 20 + 4 * u64::from(size),
                shm_bytes: 48_000_000,
                latency_ms: Some((1.0 + f64::from(size), 3.0 + f64::from(size))),
                ..Measured::default()
            },
        })
        .collect();
    table(sweep, &points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_read_as_they_should() {
        for sweep in Sweep::ALL {
            let table = example(sweep);
            insta::assert_snapshot!(format!("table_{sweep}"), table.text());
        }
    }

    #[test]
    fn the_csv_has_a_header_and_a_row_per_point() {
        let csv = example(Sweep::Consumers).csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 4, "{csv}");
        assert!(
            lines[0].starts_with("series,consumers,frames,delivered %"),
            "{csv}"
        );
        assert!(lines[1].starts_with("raw,1,200,100,"), "{csv}");
        // The smallest size has no marginal cost.
        assert_eq!(lines[1].split(',').nth(6), Some(""), "{csv}");
    }

    #[test]
    fn marginal_and_unit_costs_are_against_the_smallest_size() {
        let table = example(Sweep::Consumers);
        // run ms/frame: (1700 + 100 n) / 160 frames in the window.
        let marginal = table.series_points("raw", "marginal ms/frame/consumer");
        assert_eq!(marginal.len(), 2);
        assert!(
            (marginal[1].1 - 300.0 / 160.0 / 3.0).abs() < 1e-9,
            "{marginal:?}"
        );
        let growth = table.unit_cost_growth();
        assert_eq!(growth.len(), 1, "{growth:?}");
        assert!(growth[0].1 < 1.0, "{growth:?}");
        let processes = example(Sweep::Processes).unit_cost_growth();
        assert_eq!(processes.len(), 2, "{processes:?}");
    }

    #[test]
    fn the_chart_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        for sweep in Sweep::ALL {
            chart(dir.path(), &example(sweep), "example").expect("chart");
            let svg =
                std::fs::read_to_string(dir.path().join(format!("{sweep}.svg"))).expect("svg");
            assert!(
                svg.starts_with("<svg") && svg.contains("Delivered") == (sweep != Sweep::Streams)
            );
            assert!(dir.path().join(format!("{sweep}.png")).is_file());
        }
    }
}
