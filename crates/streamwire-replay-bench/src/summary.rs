//! Medians over repetitions, the table shaped like REFERENCE.md section 1, per-sink
//! detail, ASCII bars for the terminal and the markdown summary.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::analysis::{CellResult, LinkResult, median};

/// One row of the table: one blueprint, profile and variant, medians over its cells.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `basic`, `full`, `heavy`.
    pub blueprint: String,
    /// `all` or `constrained`.
    pub profile: String,
    /// Cores.
    pub cores: usize,
    /// `raw-shm`, `raw-tcp`, `codec`, `auto`.
    pub variant: String,
    /// The link's profile name, across a link (empty: one host).
    #[serde(default)]
    pub link: String,
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
    /// Lag growth (last quarter's median lag over the first's), the worst sink.
    #[serde(default)]
    pub lag_growth: f64,
    /// Every colour consumer's frames delivered, percent of those published:
    /// (`instance@host`, median over the repetitions).
    #[serde(default)]
    pub consumers: Vec<(String, f64)>,
    /// Across a link: the streams that crossed it.
    #[serde(default)]
    pub crossing: Vec<String>,
    /// Across a link: robot to laptop, Mbit/s.
    #[serde(default)]
    pub link_to_laptop_mbit_s: f64,
    /// ... its busiest second.
    #[serde(default)]
    pub link_peak_mbit_s: f64,
    /// ... laptop to robot.
    #[serde(default)]
    pub link_to_robot_mbit_s: f64,
    /// Across a link: frames the laptop received through shared memory (the most of the
    /// repetitions; none can).
    #[serde(default)]
    pub link_shared_memory_frames: u64,
    /// Cells that kept up.
    pub kept_up: usize,
    /// The verdicts of the cells that did not.
    pub problems: Vec<String>,
}

/// Groups `cells` into rows (blueprint, profile, link, work, variant order: raw-shm,
/// raw-tcp, codec, auto), medians over repetitions.
pub fn rows(cells: &[CellResult]) -> Vec<Row> {
    let order = |variant: &str| match variant {
        "raw-shm" => 0,
        "raw-tcp" => 1,
        "codec" => 2,
        _ => 3,
    };
    let link_of = |c: &CellResult| c.spec.link.as_ref().map(|l| l.name.clone());
    let blueprint_order = |b: &str| match b {
        "basic" => 0,
        "full" => 1,
        _ => 2,
    };
    type Key = (u8, String, Option<String>, u64, u8, String);
    let mut groups: BTreeMap<Key, Vec<&CellResult>> = BTreeMap::new();
    for c in cells {
        groups
            .entry((
                blueprint_order(&c.spec.blueprint),
                c.spec.profile.name.clone(),
                link_of(c),
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
            let link = |f: &dyn Fn(&LinkResult) -> f64| {
                median(
                    cells
                        .iter()
                        .filter_map(|c| c.link.as_ref().map(f))
                        .collect(),
                )
            };
            Row {
                blueprint: first.spec.blueprint.clone(),
                profile: first.spec.profile.name.clone(),
                cores: first.cores,
                variant: first.variant.clone(),
                // infallible: a cell without a link has no link name
                link: link_of(first).unwrap_or_default(),
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
                lag_growth: m(&|c| c.worst_lag_growth()),
                consumers: first
                    .consumers
                    .iter()
                    .map(|k| {
                        let pct = m(&|c| {
                            c.consumers
                                .iter()
                                .find(|o| o.instance == k.instance)
                                .map_or(0.0, |o| {
                                    o.delivered as f64 / c.published.max(1) as f64 * 100.0
                                })
                        });
                        (format!("{}@{}", k.instance, k.host), pct)
                    })
                    .collect(),
                crossing: first
                    .link
                    .as_ref()
                    .map(|l| l.crossing.clone())
                    // infallible: one host, nothing crosses
                    .unwrap_or_default(),
                link_to_laptop_mbit_s: link(&|l| l.to_laptop_mbit_s),
                link_peak_mbit_s: link(&|l| l.to_laptop_peak_mbit_s),
                link_to_robot_mbit_s: link(&|l| l.to_robot_mbit_s),
                link_shared_memory_frames: cells
                    .iter()
                    .filter_map(|c| c.link.as_ref().map(|l| l.laptop_shared_memory_frames))
                    .max()
                    .unwrap_or(0),
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

/// The table of the one-host rows, in markdown, shaped like REFERENCE.md section 1 (plus
/// the columns it lacked: the worst sink, lag, gaps, the transport's own bytes, shared
/// memory). Empty without such rows.
pub fn table(rows: &[Row]) -> String {
    let rows: Vec<&Row> = rows.iter().filter(|r| r.link.is_empty()).collect();
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
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

/// The table of the rows across a link, in markdown: what crossed, what each consumer
/// got, lag and its growth, the link's own throughput, and the frames the laptop got
/// through shared memory (none can). Empty without such rows.
pub fn link_table(rows: &[Row]) -> String {
    let rows: Vec<&Row> = rows.iter().filter(|r| !r.link.is_empty()).collect();
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    out.push_str(
        "| blueprint | CPUs | link | mode | crossing the link | fps delivered (of published) | \
         delivered per consumer % | lag p50 / p99 ms | lag growth | link Mbit/s to laptop \
         (busiest s) / back | laptop frames by shm | CPU % of one core | kept up |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        let mode = if r.variant == "raw-shm" {
            "raw"
        } else {
            &r.variant
        };
        let consumers: Vec<String> = r
            .consumers
            .iter()
            .map(|(name, pct)| format!("{name} {pct:.1}"))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} ({}) | {} | {mode} | {} | {:.1} (of {:.1}) | {} | {:.0} / {:.0} | {:.2} | {:.1} ({:.1}) / {:.1} | {} | {:.0} | {}/{} |",
            r.blueprint,
            r.cores,
            r.profile,
            r.link,
            if r.crossing.is_empty() {
                "-".to_owned()
            } else {
                r.crossing.join(", ")
            },
            r.delivered_fps,
            r.published_fps,
            consumers.join(", "),
            r.lag_p50_ms,
            r.lag_p99_ms,
            r.lag_growth,
            r.link_to_laptop_mbit_s,
            r.link_peak_mbit_s,
            r.link_to_robot_mbit_s,
            r.link_shared_memory_frames,
            r.cpu_pct,
            r.kept_up,
            r.reps,
        );
    }
    out
}

/// The bit-rate budget, cell by cell (markdown): every `budget` cell beside the `auto`
/// cells (fixed quality) on the same links; empty without a `budget` cell.
pub fn budget_table(cells: &[CellResult]) -> String {
    let mut out = String::new();
    if !cells.iter().any(|c| c.variant == "budget") {
        return out;
    }
    out.push_str(
        "| cell | budget Mbit/s | JPEG quality at the end (lowest-highest) | width | changes | \
         encoded, worst 2 s after the first, Mbit/s | link to laptop, worst 2 s, Mbit/s | \
         frames delivered per consumer % |\n|---|---|---|---|---|---|---|---|\n",
    );
    let mbit = |bits: u64| format!("{:.2}", bits as f64 / 1e6);
    for c in cells
        .iter()
        .filter(|c| c.link.is_some() && (c.variant == "budget" || c.variant == "auto"))
    {
        let delivered: Vec<String> = c
            .consumers
            .iter()
            .map(|k| {
                let pct = k.delivered as f64 / c.published.max(1) as f64 * 100.0;
                format!("{}@{} {pct:.1}", k.instance, k.host)
            })
            .collect();
        let link_worst = c
            .link
            .as_ref()
            .and_then(|l| l.to_laptop_worst_2s_mbit_s)
            .map_or_else(|| "-".to_owned(), |m| format!("{m:.2}"));
        let (budget, quality, width, changes, worst) = match &c.adaptation {
            Some(a) => {
                let qualities = a.history.iter().map(|h| h.quality);
                let (low, high) = (
                    qualities.clone().min().unwrap_or(a.quality),
                    qualities.max().unwrap_or(a.quality),
                );
                (
                    mbit(a.budget_bitrate),
                    format!("{} ({low}-{high})", a.quality),
                    a.width.map_or_else(|| "full".to_owned(), |w| w.to_string()),
                    a.changes.to_string(),
                    a.worst_window_bitrate.map_or_else(|| "-".to_owned(), mbit),
                )
            }
            None => (
                "none".to_owned(),
                "75 (fixed)".to_owned(),
                "full".to_owned(),
                "-".to_owned(),
                "-".to_owned(),
            ),
        };
        let _ = writeln!(
            out,
            "| {} | {budget} | {quality} | {width} | {changes} | {worst} | {link_worst} | {} |",
            c.label,
            delivered.join(", ")
        );
    }
    out
}

/// Every cell's sinks, one line each (markdown).
pub fn sink_table(cells: &[CellResult]) -> String {
    let mut out = String::from(
        "| cell | sink | delivered | % | fps | lag p50 / p99 / end ms | lag growth | longest gap ms | drops at the sink | not delivered |\n|---|---|---|---|---|---|---|---|---|---|\n",
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
                "| {} | {} | {} of {} | {:.1} | {:.1} | {:.0} / {:.0} / {:.0} | {:.2} | {:.0} | {drops} | {} |",
                c.label,
                s.instance,
                s.delivered,
                c.published,
                s.delivered_pct,
                s.fps,
                s.lag_p50_ms,
                s.lag_p99_ms,
                s.lag_end_ms,
                s.lag_growth,
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
                "| {} | (upstream) | | | | | | | {} | |",
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
        let link = if r.link.is_empty() {
            String::new()
        } else {
            format!("{} ", r.link)
        };
        let name = format!(
            "{} {} {link}{}ms {}",
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
    let mut out = format!(
        "# {title}\n\n{context}\n\n## Medians\n\n{}",
        table(rows) + &link_table(rows)
    );
    let budgets = budget_table(cells);
    if !budgets.is_empty() {
        let _ = write!(out, "\n## Bit-rate budget, cell by cell\n\n{budgets}");
    }
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
            link: None,
            place: None,
            max_bitrate: None,
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
                lag_growth: 1.1,
            }],
            adaptation: None,
            consumers: vec![],
            link: None,
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
        assert_eq!(link_table(&rows), "", "no link, no link table");
    }

    #[test]
    fn cells_across_a_link_get_the_link_table() {
        use crate::analysis::{ConsumerResult, LinkResult};
        use crate::link::{LinkProfile, RelayStats};
        let across = |variant: &str, rep: usize, mbit: f64, growth: f64| {
            let mut c = cell(variant, rep, 20.0, 80.0);
            c.spec.link = Some(LinkProfile::wifi());
            c.sinks[0].lag_growth = growth;
            c.consumers = vec![
                ConsumerResult {
                    instance: "viewer".into(),
                    host: "laptop".into(),
                    delivered: 199,
                },
                ConsumerResult {
                    instance: "busy_3".into(),
                    host: "robot".into(),
                    delivered: 200,
                },
            ];
            c.link = Some(LinkResult {
                profile: LinkProfile::wifi().to_string(),
                description: "tbf and a relay".into(),
                crossing: vec!["color_image/compressed (jpeg)".into()],
                to_laptop_mbit_s: mbit,
                to_robot_mbit_s: 0.5,
                to_laptop_peak_mbit_s: mbit * 1.5,
                to_laptop_worst_2s_mbit_s: Some(mbit * 1.2),
                laptop_frames: 600,
                laptop_shared_memory_frames: 0,
                overlimits: 10,
                qdisc_drops: 0,
                relay: RelayStats::default(),
                workers: vec![],
            });
            c
        };
        let cells = vec![
            cell("codec", 0, 20.0, 60.0),
            across("codec", 0, 20.0, 1.3),
            across("codec", 1, 22.0, 1.1),
            across("codec", 2, 21.0, 1.0),
        ];
        let rows = rows(&cells);
        assert_eq!(rows.len(), 2, "one host and the link are rows of their own");
        assert_eq!(rows[1].link, "wifi");
        assert_eq!(rows[1].link_to_laptop_mbit_s, 21.0);
        assert_eq!(rows[1].lag_growth, 1.1);
        assert_eq!(rows[1].consumers[0], ("viewer@laptop".to_owned(), 99.5));
        insta::assert_snapshot!(table(&rows));
        insta::assert_snapshot!(link_table(&rows));
        assert_eq!(budget_table(&cells), "", "no budget cell, no budget table");
        // A budget cell beside the auto cell: its quality, range, changes and windows.
        let mut fixed = across("codec", 0, 7.9, 1.0);
        fixed.variant = "auto".into();
        let mut budget = across("codec", 0, 6.0, 1.0);
        budget.variant = "budget".into();
        budget.adaptation = Some(streamwire_core::Adaptation {
            quality: 40,
            changes: 2,
            budget_bitrate: 6_400_000,
            worst_window_bitrate: Some(5_690_000),
            history: [(0, 75), (50, 46), (9_000, 40)]
                .into_iter()
                .map(|(ms, quality)| streamwire_core::AdaptationStep {
                    stamp_nanos: ms * 1_000_000,
                    quality,
                    width: None,
                })
                .collect(),
            ..streamwire_core::Adaptation::default()
        });
        let text = budget_table(&[cell("codec", 0, 20.0, 60.0), fixed, budget]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.len(),
            4,
            "a header, its rule, then the auto and budget cells: {text}"
        );
        assert!(lines[2].contains("| none | 75 (fixed) |"), "{text}");
        assert!(
            lines[3].contains("| 6.40 | 40 (40-75) | full | 2 | 5.69 | 7.20 |"),
            "{text}"
        );
    }
}
