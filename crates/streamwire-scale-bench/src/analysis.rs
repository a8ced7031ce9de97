//! From the samples to growth per hour and the rules a soak must keep.
//!
//! **Growth per hour** is the slope of a least-squares line through a figure's samples
//! after the warm-up, times 3600. **Grew** (fds, threads, shared-memory segments: counts,
//! which a leak raises for good and a busy moment only for a while) means the smallest
//! value of the last quarter of the samples after the warm-up is above the largest of
//! their first quarter. **Private memory growth** is the fitted line's rise over the
//! samples after the warm-up, as a share of its value at the warm-up's end.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::procfs::ProcessSample;
use crate::status::Counters;

/// Every process of the run and the host's shared memory at one instant.
#[derive(Clone, Debug, Default)]
pub struct Tick {
    /// Seconds since the run was started.
    pub t_s: f64,
    /// The run's processes, coordinator first.
    pub processes: Vec<ProcessSample>,
    /// /dev/shm files mapped by any of them.
    pub shm_segments: u64,
    /// Their sizes, bytes.
    pub shm_bytes: u64,
    /// The last status line before the sample.
    pub counters: Option<Counters>,
}

/// One process's (or the run's) growth after the warm-up.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Growth {
    /// `coordinator`, a worker's process, or `run` (shared memory).
    pub role: String,
    /// Samples after the warm-up.
    pub samples: usize,
    /// PSS at the end of the warm-up (fitted), MB.
    pub pss_mb: f64,
    /// PSS growth, MB per hour.
    pub pss_mb_per_h: f64,
    /// PSS growth over the samples after the warm-up, percent of `pss_mb`.
    pub pss_growth_pct: f64,
    /// USS growth, MB per hour.
    pub uss_mb_per_h: f64,
    /// RSS growth, MB per hour.
    pub rss_mb_per_h: f64,
    /// Open fds: first and last after the warm-up, growth per hour, and whether they grew.
    pub fds: CountGrowth,
    /// Threads, the same.
    pub threads: CountGrowth,
}

/// A count's growth after the warm-up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CountGrowth {
    /// At the first sample after the warm-up.
    pub first: u64,
    /// At the last.
    pub last: u64,
    /// Fitted growth per hour.
    pub per_h: f64,
    /// The last quarter's smallest value is above the first quarter's largest.
    pub grew: bool,
}

/// The slope of the least-squares line through `points`, per unit of x (0 for fewer than
/// two distinct x), and its value at `at`.
pub fn fit(points: &[(f64, f64)], at: f64) -> (f64, f64) {
    let n = points.len() as f64;
    if points.len() < 2 {
        return (0.0, points.first().map_or(0.0, |p| p.1));
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (slope, mean_y + slope * (at - mean_x))
}

/// A count's growth from its samples `(t_s, value)` after the warm-up.
pub fn count_growth(points: &[(f64, u64)]) -> CountGrowth {
    let as_f64: Vec<(f64, f64)> = points.iter().map(|(t, v)| (*t, *v as f64)).collect();
    let (slope, _) = fit(&as_f64, 0.0);
    let quarter = (points.len() / 4).max(1);
    let values: Vec<u64> = points.iter().map(|p| p.1).collect();
    let first_max = values.iter().take(quarter).max();
    let last_min = values.iter().rev().take(quarter).min();
    CountGrowth {
        first: values.first().copied().unwrap_or(0),
        last: values.last().copied().unwrap_or(0),
        per_h: slope * 3600.0,
        grew: values.len() >= 2 && matches!((first_max, last_min), (Some(a), Some(b)) if b > a),
    }
}

/// Each process's growth after `warmup_s`, by role, coordinator first; then `run`, the
/// shared-memory segments the run maps (in `fds`: count; their bytes are not a rule).
pub fn growth(ticks: &[Tick], warmup_s: f64) -> Vec<Growth> {
    let after: Vec<&Tick> = ticks.iter().filter(|t| t.t_s >= warmup_s).collect();
    let mut roles: Vec<String> = Vec::new();
    for tick in &after {
        for p in &tick.processes {
            if !roles.contains(&p.role) {
                roles.push(p.role.clone());
            }
        }
    }
    let mut rows: Vec<Growth> = roles
        .iter()
        .map(|role| {
            let of = |f: &dyn Fn(&ProcessSample) -> u64| -> Vec<(f64, u64)> {
                after
                    .iter()
                    .filter_map(|t| {
                        let p = t.processes.iter().find(|p| &p.role == role)?;
                        Some((t.t_s, f(p)))
                    })
                    .collect()
            };
            let mb_per_h = |points: Vec<(f64, u64)>| -> (f64, f64, f64) {
                let mb: Vec<(f64, f64)> = points
                    .iter()
                    .map(|(t, kb)| (*t, *kb as f64 / 1e3))
                    .collect();
                let start = mb.first().map_or(warmup_s, |p| p.0);
                let end = mb.last().map_or(warmup_s, |p| p.0);
                let (slope, at_start) = fit(&mb, start);
                let pct = if at_start > 0.0 {
                    slope * (end - start) / at_start * 100.0
                } else {
                    0.0
                };
                (slope * 3600.0, at_start, pct)
            };
            let pss = of(&|p| p.pss_kb);
            let samples = pss.len();
            let (pss_mb_per_h, pss_mb, pss_growth_pct) = mb_per_h(pss);
            Growth {
                role: role.clone(),
                samples,
                pss_mb,
                pss_mb_per_h,
                pss_growth_pct,
                uss_mb_per_h: mb_per_h(of(&|p| p.uss_kb)).0,
                rss_mb_per_h: mb_per_h(of(&|p| p.rss_kb)).0,
                fds: count_growth(&of(&|p| p.fds)),
                threads: count_growth(&of(&|p| p.threads)),
            }
        })
        .collect();
    let segments: Vec<(f64, u64)> = after.iter().map(|t| (t.t_s, t.shm_segments)).collect();
    rows.push(Growth {
        role: RUN_ROW.to_owned(),
        samples: segments.len(),
        fds: count_growth(&segments),
        ..Growth::default()
    });
    rows
}

/// The row of [`growth`] that holds the run's shared-memory segments.
pub const RUN_ROW: &str = "run (shm segments)";

/// Processes that crashed: a role whose pid changed, or that was gone from a sample taken
/// before `stop_s` (when the run was still meant to run) after it had been seen.
pub fn vanished(ticks: &[Tick], stop_s: f64) -> Vec<String> {
    let mut pids: BTreeMap<&str, u32> = BTreeMap::new();
    let mut lost = Vec::new();
    for tick in ticks.iter().filter(|t| t.t_s < stop_s) {
        for (role, pid) in &pids {
            let now = tick.processes.iter().find(|p| p.role == *role);
            match now {
                None => lost.push(format!(
                    "`{role}` (pid {pid}) was gone at {:.0} s",
                    tick.t_s
                )),
                Some(p) if p.pid != *pid => lost.push(format!(
                    "`{role}` was pid {pid}, then pid {} at {:.0} s (restarted)",
                    p.pid, tick.t_s
                )),
                Some(_) => {}
            }
        }
        if !lost.is_empty() {
            return lost;
        }
        for p in &tick.processes {
            pids.entry(p.role.as_str()).or_insert(p.pid);
        }
    }
    lost
}

/// The limits a soak holds its run to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Private memory (PSS) growth after the warm-up, percent, per process.
    pub private_growth_pct: f64,
    /// Samples needed after the warm-up to judge growth at all.
    pub min_samples: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            private_growth_pct: 2.0,
            min_samples: 4,
        }
    }
}

/// The growth rules `rows` break, one line each.
pub fn broken_growth_rules(rows: &[Growth], limits: &Limits) -> Vec<String> {
    let mut broken = Vec::new();
    for row in rows {
        if row.samples < limits.min_samples {
            broken.push(format!(
                "{}: {} samples after the warm-up, fewer than {} (a longer --duration or a shorter --interval)",
                row.role, row.samples, limits.min_samples
            ));
            continue;
        }
        let what = if row.role == RUN_ROW {
            "segments"
        } else {
            "fds"
        };
        if row.fds.grew {
            broken.push(format!(
                "{}: {what} grew after the warm-up ({} -> {}, {:+.0}/h)",
                row.role, row.fds.first, row.fds.last, row.fds.per_h
            ));
        }
        if row.threads.grew {
            broken.push(format!(
                "{}: threads grew after the warm-up ({} -> {}, {:+.0}/h)",
                row.role, row.threads.first, row.threads.last, row.threads.per_h
            ));
        }
        if row.role != RUN_ROW && row.pss_growth_pct > limits.private_growth_pct {
            broken.push(format!(
                "{}: private memory (PSS) grew {:.1}% after the warm-up ({:.1} MB, {:+.1} MB/h), above {}%",
                row.role, row.pss_growth_pct, row.pss_mb, row.pss_mb_per_h, limits.private_growth_pct
            ));
        }
    }
    broken
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(role: &str, pid: u32, fds: u64, pss_kb: u64) -> ProcessSample {
        ProcessSample {
            pid,
            role: role.to_owned(),
            pss_kb,
            uss_kb: pss_kb / 2,
            rss_kb: pss_kb * 2,
            fds,
            threads: 12,
            ..ProcessSample::default()
        }
    }

    /// Samples every 10 s for 2 minutes: the worker's fds from `fds(t)`, its PSS flat at
    /// 40 MB plus `pss_kb(t)`.
    fn ticks(fds: impl Fn(f64) -> u64, pss_kb: impl Fn(f64) -> u64) -> Vec<Tick> {
        (0..=12)
            .map(|i| {
                let t = f64::from(i) * 10.0;
                Tick {
                    t_s: t,
                    processes: vec![
                        process("coordinator", 1, 20, 30_000),
                        process("robot/sensors", 2, fds(t), 40_000 + pss_kb(t)),
                    ],
                    shm_segments: 4,
                    shm_bytes: 1 << 20,
                    counters: None,
                }
            })
            .collect()
    }

    #[test]
    fn a_flat_run_breaks_no_rule() {
        // A busy moment (one fd more for a sample) is not growth.
        let rows = growth(&ticks(|t| if t == 70.0 { 31 } else { 30 }, |_| 0), 24.0);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].role, "robot/sensors");
        assert_eq!(rows[1].samples, 10);
        assert!(!rows[1].fds.grew);
        assert_eq!(rows[2].role, RUN_ROW);
        assert_eq!(
            broken_growth_rules(&rows, &Limits::default()),
            Vec::<String>::new()
        );
    }

    #[test]
    fn an_fd_a_second_breaks_the_fd_rule() {
        let rows = growth(&ticks(|t| 30 + t as u64, |_| 0), 24.0);
        let broken = broken_growth_rules(&rows, &Limits::default());
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(
            broken[0].starts_with("robot/sensors: fds grew after the warm-up (60 -> 150, +3600/h)"),
            "{broken:?}"
        );
    }

    #[test]
    fn private_memory_growth_is_a_share_of_the_value_after_the_warm_up() {
        // 40 MB growing 10 kB a second: 0.9 MB over the 90 s after the warm-up, from 40.3 MB.
        let rows = growth(&ticks(|_| 30, |t| (t * 10.0) as u64), 24.0);
        let sensors = &rows[1];
        assert!((sensors.pss_mb_per_h - 36.0).abs() < 1e-6, "{sensors:?}");
        assert!(
            (sensors.pss_growth_pct - 0.9 / 40.3 * 100.0).abs() < 1e-6,
            "{sensors:?}"
        );
        let broken = broken_growth_rules(&rows, &Limits::default());
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(
            broken[0].contains("private memory (PSS) grew 2.2%"),
            "{broken:?}"
        );
        let lenient = Limits {
            private_growth_pct: 5.0,
            ..Limits::default()
        };
        assert!(broken_growth_rules(&rows, &lenient).is_empty());
    }

    #[test]
    fn too_few_samples_are_no_verdict() {
        let rows = growth(&ticks(|_| 30, |_| 0), 100.0);
        let broken = broken_growth_rules(&rows, &Limits::default());
        assert_eq!(broken.len(), 3, "{broken:?}");
        assert!(broken[0].contains("3 samples after the warm-up, fewer than 4"));
    }

    #[test]
    fn a_worker_gone_or_restarted_before_the_stop_crashed() {
        let mut run = ticks(|_| 30, |_| 0);
        assert!(vanished(&run, 120.0).is_empty());
        run[5].processes.pop();
        assert_eq!(
            vanished(&run, 120.0),
            ["`robot/sensors` (pid 2) was gone at 50 s"]
        );
        // Gone once the run was asked to stop: that is its end, not a crash.
        assert!(vanished(&run, 45.0).is_empty());
        run[5]
            .processes
            .push(process("robot/sensors", 9, 30, 40_000));
        assert!(vanished(&run, 120.0)[0].contains("then pid 9 at 50 s (restarted)"));
    }

    #[test]
    fn the_fit_is_least_squares() {
        let (slope, at) = fit(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)], 10.0);
        assert!((slope - 2.0).abs() < 1e-12 && (at - 21.0).abs() < 1e-12);
        assert_eq!(fit(&[(5.0, 7.0)], 0.0), (0.0, 7.0));
        assert_eq!(fit(&[], 0.0), (0.0, 0.0));
    }
}
