//! Medians over repetitions, the table shaped like REFERENCE.md section 1, per-sink
//! detail, ASCII bars for the terminal and the markdown summary.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::analysis::{CellResult, median};

/// One row of the table: one blueprint, profile and variant, medians over its cells.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `basic`, `full`, `heavy`.
    pub blueprint: String,
    /// `all` or `constrained`.
    pub profile: String,
    /// Cores.
    pub cores: usize,
    /// `raw-shm`, `raw-tcp`, `codec`.
    pub variant: String,
    /// Busy sinks' work, CPU-ms per frame.
    pub work_ms: f64,
    /// Cells (repetitions).
    pub reps: usize,
    /// Frames published per second.
    pub published_fps: f64,
    /// Frames delivered per second: median over the sinks, then over the repetitions.
    pub delivered_fps: f64,
    /// The worst sink's share of the frames published, %.
    pub worst_delivered_pct: f64,
    /// Process-tree CPU, % of one core.
    pub cpu_pct: f64,
    /// Peak summed RSS, MB.
    pub rss_mb: f64,
    /// Loopback Mbit/s.
    pub lo_mbit_s: f64,
    /// Transport Mbit/s (what streamwire sent, all streams).
    pub transport_mbit_s: f64,
    /// The colour stream's wire KB per frame.
    pub image_kb_per_frame: f64,
    /// Lag p50, median of the sinks, ms.
    pub lag_p50_ms: f64,
    /// Lag p99, the worst sink, ms.
    pub lag_p99_ms: f64,
    /// Longest gap between frames, the worst sink, ms.
    pub longest_gap_ms: f64,
    /// Cells that kept up.
    pub kept_up: usize,
    /// The verdicts of the cells that did not.
    pub problems: Vec<String>,
}

/// Groups `cells` into rows (blueprint, profile, work, variant order: raw-shm, raw-tcp,
/// codec), medians over repetitions.
pub fn rows(cells: &[CellResult]) -> Vec<Row> {
    let order = |variant: &str| match variant {
        "raw-shm" => 0,
        "raw-tcp" => 1,
        _ => 2,
    };
    let blueprint_order = |b: &str| match b {
        "basic" => 0,
        "full" => 1,
        _ => 2,
    };
    let mut groups: BTreeMap<(u8, String, u64, u8, String), Vec<&CellResult>> = BTreeMap::new();
    for c in cells {
        groups
            .entry((
                blueprint_order(&c.spec.blueprint),
                c.spec.profile.name.clone(),
                (c.spec.work_ms * 1000.0) as u64,
                order(&c.variant),
                c.variant.clone(),
            ))
            .or_default()
            .push(c);
    }
    groups
        .into_values()
        .map(|cells| {
            let first = cells[0];
            let m = |f: &dyn Fn(&CellResult) -> f64| median(cells.iter().map(|c| f(c)).collect());
            Row {
                blueprint: first.spec.blueprint.clone(),
                profile: first.spec.profile.name.clone(),
                cores: first.cores,
                variant: first.variant.clone(),
                work_ms: first.spec.work_ms,
                reps: cells.len(),
                published_fps: m(&|c| c.published_fps),
                delivered_fps: m(&|c| c.median_sink_fps()),
                worst_delivered_pct: m(&|c| c.worst_delivered_pct()),
                cpu_pct: m(&|c| c.cpu_pct),
                rss_mb: m(&|c| c.rss_mb),
                lo_mbit_s: m(&|c| c.lo_mbit_s),
                transport_mbit_s: m(&|c| c.transport_mbit_s),
                image_kb_per_frame: m(&|c| c.image_wire_kb_per_frame),
                lag_p50_ms: m(&|c| median(c.sinks.iter().map(|s| s.lag_p50_ms).collect())),
                lag_p99_ms: m(&|c| worst(c, |s| s.lag_p99_ms)),
                longest_gap_ms: m(&|c| worst(c, |s| s.longest_gap_ms)),
                kept_up: cells.iter().filter(|c| c.kept_up).count(),
                problems: cells
                    .iter()
                    .filter(|c| !c.kept_up)
                    .map(|c| format!("{}: {}", c.label, c.verdict))
                    .collect(),
            }
        })
        .collect()
}

/// The largest of `f` over the cell's sinks (0 without sinks).
fn worst(cell: &CellResult, f: impl Fn(&crate::analysis::SinkResult) -> f64) -> f64 {
    cell.sinks.iter().map(f).fold(0.0, f64::max)
}

/// The table, in markdown, shaped like REFERENCE.md section 1 (plus the columns it
/// lacked: the worst sink, lag, gaps, the transport's own bytes, shared memory).
pub fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    out.push_str(
        "| blueprint | CPUs | work ms | mode | shm | fps delivered (of published) | worst sink % | \
         process-tree CPU % of one core | RSS MB | loopback Mbit/s | transport Mbit/s | \
         image KB/frame | lag p50 / p99 ms | longest gap ms | kept up |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        let (mode, shm) = match r.variant.as_str() {
            "raw-shm" => ("raw", "on"),
            "raw-tcp" => ("raw", "off"),
            other => (other, "on"),
        };
        let _ = writeln!(
            out,
            "| {} | {} ({}) | {} | {mode} | {shm} | {:.1} (of {:.1}) | {:.1} | {:.0} | {:.0} | {:.1} | {:.1} | {:.0} | {:.0} / {:.0} | {:.0} | {}/{} |",
            r.blueprint,
            r.cores,
            r.profile,
            r.work_ms,
            r.delivered_fps,
            r.published_fps,
            r.worst_delivered_pct,
            r.cpu_pct,
            r.rss_mb,
            r.lo_mbit_s,
            r.transport_mbit_s,
            r.image_kb_per_frame,
            r.lag_p50_ms,
            r.lag_p99_ms,
            r.longest_gap_ms,
            r.kept_up,
            r.reps,
        );
    }
    out
}

/// Every cell's sinks, one line each (markdown).
pub fn sink_table(cells: &[CellResult]) -> String {
    let mut out = String::from(
        "| cell | sink | delivered | % | fps | lag p50 / p99 / end ms | longest gap ms | drops at the sink | not delivered |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for c in cells {
        for s in &c.sinks {
            let drops = if s.drops.is_empty() {
                "-".to_owned()
            } else {
                s.drops
                    .iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} of {} | {:.1} | {:.1} | {:.0} / {:.0} / {:.0} | {:.0} | {drops} | {} |",
                c.label,
                s.instance,
                s.delivered,
                c.published,
                s.delivered_pct,
                s.fps,
                s.lag_p50_ms,
                s.lag_p99_ms,
                s.lag_end_ms,
                s.longest_gap_ms,
                s.not_delivered
            );
        }
        if !c.upstream_drops.is_empty() {
            let drops: Vec<String> = c
                .upstream_drops
                .iter()
                .map(|(k, n)| format!("{k}: {n}"))
                .collect();
            let _ = writeln!(
                out,
                "| {} | (upstream) | | | | | | {} | |",
                c.label,
                drops.join(", ")
            );
        }
    }
    out
}

/// ASCII bars of delivered fps and CPU, one line per row, for the terminal.
pub fn bars(rows: &[Row]) -> String {
    const WIDTH: f64 = 30.0;
    let max_cpu = rows.iter().map(|r| r.cpu_pct).fold(1.0, f64::max);
    let bar = |value: f64, max: f64| {
        let n = ((value / max.max(1e-9)) * WIDTH).round().clamp(0.0, WIDTH) as usize;
        format!("{}{}", "#".repeat(n), ".".repeat(WIDTH as usize - n))
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<34} {:<30} {:>13}   {:<30} {:>6}",
        "cell (medians)", "fps delivered", "", "process-tree CPU", ""
    );
    for r in rows {
        let name = format!(
            "{} {} {}ms {}",
            r.blueprint, r.profile, r.work_ms, r.variant
        );
        let _ = writeln!(
            out,
            "{name:<34} {} {:>5.1}/{:<5.1}{:>2}   {} {:>5.0}%",
            bar(r.delivered_fps, r.published_fps),
            r.delivered_fps,
            r.published_fps,
            if r.kept_up == r.reps { "" } else { " !" },
            bar(r.cpu_pct, max_cpu),
            r.cpu_pct
        );
    }
    out
}

/// The markdown summary: the table, what did not keep up, the charts, every sink.
pub fn markdown(
    title: &str,
    context: &str,
    rows: &[Row],
    cells: &[CellResult],
    charts: &[String],
) -> String {
    let mut out = format!("# {title}\n\n{context}\n\n## Medians\n\n{}", table(rows));
    let problems: Vec<&String> = rows.iter().flat_map(|r| &r.problems).collect();
    out.push_str("\n## Cells that did not keep up\n\n");
    if problems.is_empty() {
        out.push_str("None: every sink of every cell got at least 99% of the frames, with under 1 s of lag at the end.\n");
    } else {
        for p in problems {
            let _ = writeln!(out, "- {p}");
        }
    }
    out.push_str("\n## Charts\n\n");
    for chart in charts {
        let _ = writeln!(
            out,
            "- [{chart}.svg]({chart}.svg) ([png]({chart}.png))\n\n  ![{chart}]({chart}.png)"
        );
    }
    let _ = write!(
        out,
        "\n## Every sink of every cell\n\n{}",
        sink_table(cells)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::SinkResult;
    use crate::cell::{CellSpec, Profile};

    fn cell(variant: &str, rep: usize, fps: f64, cpu: f64) -> CellResult {
        let (mode, shm) = match variant {
            "raw-tcp" => ("raw", false),
            "raw-shm" => ("raw", true),
            _ => ("codec", true),
        };
        let spec = CellSpec {
            blueprint: "heavy".into(),
            mode: mode.into(),
            shared_memory: shm,
            profile: Profile::constrained(),
            sinks: None,
            work_ms: 5.0,
            duration_s: 10.0,
            replay: None,
            fps: None,
            rep,
            netns: true,
            dir: "/x".into(),
        };
        CellResult {
            label: spec.label(),
            variant: spec.variant(),
            spec,
            cores: 1,
            elapsed_s: 10.0,
            published: 200,
            published_fps: 20.0,
            camera_skipped: 0,
            sinks: vec![SinkResult {
                instance: "busy_0".into(),
                delivered: (fps * 10.0) as u64,
                delivered_pct: fps / 20.0 * 100.0,
                fps,
                lag_p50_ms: 12.0,
                lag_p99_ms: 40.0,
                lag_end_ms: 11.0,
                longest_gap_ms: 90.0,
                drops: if fps < 20.0 {
                    vec![("queue full".into(), 20)]
                } else {
                    vec![]
                },
                not_delivered: 0,
            }],
            upstream_drops: vec![],
            cpu_pct: cpu,
            cpu_pct_sampled: cpu,
            host_cpu_over_idle_pct: cpu / 2.0,
            rss_mb: 120.0,
            lo_mbit_s: 40.0,
            transport_mbit_s: 42.0,
            image_wire_kb_per_frame: 51.0,
            ended: "stopped".into(),
            kept_up: fps >= 19.8,
            verdict: if fps >= 19.8 {
                "kept up".into()
            } else {
                "behind: 1 of 1 sinks; worst busy_0 90%, lag 11 ms at the end".into()
            },
        }
    }

    #[test]
    fn rows_take_medians_and_the_table_reads() {
        let cells = vec![
            cell("codec", 0, 20.0, 60.0),
            cell("raw-shm", 0, 18.0, 90.0),
            cell("codec", 1, 20.0, 64.0),
            cell("raw-shm", 1, 17.0, 80.0),
            cell("codec", 2, 19.0, 70.0),
            cell("raw-shm", 2, 20.0, 85.0),
        ];
        let rows = rows(&cells);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].variant, "raw-shm");
        assert_eq!(rows[0].delivered_fps, 18.0);
        assert_eq!(rows[0].cpu_pct, 85.0);
        assert_eq!(rows[0].kept_up, 1);
        assert_eq!(rows[1].cpu_pct, 64.0);
        insta::assert_snapshot!(table(&rows));
        insta::assert_snapshot!(bars(&rows));
        insta::assert_snapshot!(sink_table(&cells[..2]));
    }
}
