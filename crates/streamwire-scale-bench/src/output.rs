//! What a soak writes and prints: the samples as CSV, the growth table, the final
//! report's balance and losses, and `summary.json`.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;
use streamwire_core::DropReason;
use streamwire_runtime::RunReport;

use crate::ScaleError;
use crate::analysis::{Growth, RUN_ROW, Tick};
use crate::soak::SoakOutcome;

/// The CSV's header: one row per process per sample; the run-wide columns (shared
/// memory, the status line's counters) repeat on each of a sample's rows.
pub const CSV_HEADER: &str =
    "t_s,pid,role,pss_kb,uss_kb,rss_kb,fds,threads,shm_segments,shm_bytes,messages_per_s,drops";

/// The samples as CSV.
pub fn csv(ticks: &[Tick]) -> String {
    let mut text = String::from(CSV_HEADER);
    text.push('\n');
    for tick in ticks {
        let (rate, drops) = tick.counters.map_or((String::new(), String::new()), |c| {
            (format!("{:.1}", c.messages_per_s), c.drops.to_string())
        });
        for p in &tick.processes {
            let _ = writeln!(
                text,
                "{:.1},{},{},{},{},{},{},{},{},{},{rate},{drops}",
                tick.t_s,
                p.pid,
                p.role,
                p.pss_kb,
                p.uss_kb,
                p.rss_kb,
                p.fds,
                p.threads,
                tick.shm_segments,
                tick.shm_bytes
            );
        }
    }
    text
}

/// The growth after the warm-up, one row per process and one for the run's segments.
pub fn table(rows: &[Growth]) -> String {
    let mut text = String::from(
        "| process | samples | PSS MB | PSS MB/h | PSS growth | USS MB/h | RSS MB/h | fds | fds/h | threads | threads/h |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in rows {
        let flag = |grew: bool| if grew { " (grew)" } else { "" };
        if row.role == RUN_ROW {
            let _ = writeln!(
                text,
                "| {} | {} | | | | | | {} -> {}{} | {:+.1} | | |",
                row.role,
                row.samples,
                row.fds.first,
                row.fds.last,
                flag(row.fds.grew),
                row.fds.per_h
            );
            continue;
        }
        let _ = writeln!(
            text,
            "| {} | {} | {:.1} | {:+.2} | {:+.2}% | {:+.2} | {:+.2} | {} -> {}{} | {:+.1} | {} -> {}{} | {:+.1} |",
            row.role,
            row.samples,
            row.pss_mb,
            row.pss_mb_per_h,
            row.pss_growth_pct,
            row.uss_mb_per_h,
            row.rss_mb_per_h,
            row.fds.first,
            row.fds.last,
            flag(row.fds.grew),
            row.fds.per_h,
            row.threads.first,
            row.threads.last,
            flag(row.threads.grew),
            row.threads.per_h
        );
    }
    text
}

/// Every input row's messages summed over the report, by term: what was delivered and
/// every loss with its reason.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Losses {
    /// Input rows.
    pub rows: usize,
    /// Delivered to their module.
    pub delivered: u64,
    /// Dropped, by reason (`DropReason::name`), the reasons with none left out.
    pub dropped: Vec<(String, u64)>,
    /// Not sent (no subscriber matched yet).
    pub not_sent: u64,
    /// Still queued at the stop.
    pub unprocessed_at_stop: u64,
    /// On the wire at the stop.
    pub in_flight_at_stop: u64,
}

/// The report's losses.
pub fn losses(report: &RunReport) -> Losses {
    let inputs = &report.stats.inputs;
    Losses {
        rows: inputs.len(),
        delivered: inputs.iter().map(|i| i.delivered).sum(),
        dropped: DropReason::ALL
            .iter()
            .map(|r| {
                (
                    r.name().to_owned(),
                    inputs.iter().map(|i| i.dropped.get(*r)).sum(),
                )
            })
            .filter(|(_, n)| *n > 0)
            .collect(),
        not_sent: inputs.iter().map(|i| i.unmatched).sum(),
        unprocessed_at_stop: inputs.iter().map(|i| i.unprocessed_at_stop).sum(),
        in_flight_at_stop: inputs.iter().map(|i| i.in_flight_at_stop).sum(),
    }
}

impl std::fmt::Display for Losses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dropped = if self.dropped.is_empty() {
            "none".to_owned()
        } else {
            self.dropped
                .iter()
                .map(|(reason, n)| format!("{reason} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        write!(
            f,
            "{} input rows: delivered {}, dropped {dropped}, not sent {}, unprocessed at stop {}, in flight at stop {}",
            self.rows,
            self.delivered,
            self.not_sent,
            self.unprocessed_at_stop,
            self.in_flight_at_stop
        )
    }
}

/// `summary.json`: what a test or a script reads back.
#[derive(Debug, Serialize)]
struct Summary<'a> {
    samples: usize,
    growth: &'a [Growth],
    balanced: bool,
    losses: Option<Losses>,
    exit_status: Option<i32>,
    ended: &'a str,
    segments_seen: Vec<String>,
    segments_left: Vec<String>,
    broken: &'a [String],
}

/// Writes `samples.csv` and `summary.json` into `dir`.
pub fn write(dir: &Path, outcome: &SoakOutcome) -> Result<(), ScaleError> {
    let csv_path = dir.join("samples.csv");
    std::fs::write(&csv_path, csv(&outcome.ticks)).map_err(|e| ScaleError::io(&csv_path, e))?;
    let mut seen: Vec<String> = outcome
        .ticks
        .iter()
        .flat_map(|t| t.processes.iter().flat_map(|p| p.shm_files.iter()))
        .map(|p| p.display().to_string())
        .collect();
    seen.sort();
    seen.dedup();
    let summary = Summary {
        samples: outcome.ticks.len(),
        growth: &outcome.growth,
        balanced: outcome
            .report
            .as_ref()
            .is_some_and(|r| streamwire_runtime::check_balance(r).is_ok()),
        losses: outcome.report.as_ref().map(losses),
        exit_status: outcome.status.code(),
        ended: outcome.ended,
        segments_seen: seen,
        segments_left: outcome
            .segments_left
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        broken: &outcome.broken,
    };
    let path = dir.join("summary.json");
    let json = serde_json::to_string_pretty(&summary)
        .map_err(|e| ScaleError::Run(format!("summary: {e}")))?;
    std::fs::write(&path, json + "\n").map_err(|e| ScaleError::io(&path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::ProcessSample;
    use crate::status::Counters;

    #[test]
    fn the_csv_has_a_row_per_process_per_sample() {
        let process = |role: &str, pid| ProcessSample {
            pid,
            role: role.to_owned(),
            pss_kb: 1,
            uss_kb: 2,
            rss_kb: 3,
            fds: 4,
            threads: 5,
            ..ProcessSample::default()
        };
        let tick = Tick {
            t_s: 10.0,
            processes: vec![process("coordinator", 7), process("robot/sensors", 8)],
            shm_segments: 2,
            shm_bytes: 4096,
            counters: Some(Counters {
                run_s: 9.0,
                messages_per_s: 80.0,
                drops: 3,
                streams: 2,
            }),
        };
        let text = csv(&[tick, Tick::default()]);
        assert_eq!(
            text,
            format!(
                "{CSV_HEADER}\n10.0,7,coordinator,1,2,3,4,5,2,4096,80.0,3\n\
                 10.0,8,robot/sensors,1,2,3,4,5,2,4096,80.0,3\n"
            )
        );
    }
}
