//! The soak's chart, through the benchmarks' shared charts (`streamwire_benchkit::charts`:
//! a grid of line panels, SVG and PNG): four panels over time, private memory (PSS), fds
//! and threads per process, and the run's shared-memory segments, with the end of the
//! warm-up marked by a grey line.

use std::path::Path;

use streamwire_benchkit::charts::{self as kit, Lines, Panels};

use crate::ScaleError;
use crate::analysis::Tick;
use crate::procfs::ProcessSample;

/// A panel's series: (name, points of (minutes, value)).
type Series = Vec<(String, Vec<(f64, f64)>)>;

/// One series per process role, `value` of its sample at each tick it was sampled.
fn per_process(ticks: &[Tick], value: fn(&ProcessSample) -> f64) -> Series {
    let mut roles: Vec<&str> = Vec::new();
    for p in ticks.iter().flat_map(|t| &t.processes) {
        if !roles.contains(&p.role.as_str()) {
            roles.push(&p.role);
        }
    }
    roles
        .iter()
        .map(|role| {
            let points = ticks
                .iter()
                .filter_map(|t| {
                    let p = t.processes.iter().find(|p| p.role == *role)?;
                    Some((t.t_s / 60.0, value(p)))
                })
                .collect();
            ((*role).to_owned(), points)
        })
        .collect()
}

/// Writes `stem.svg` and `stem.png` in `dir`: the four panels of `ticks`, the warm-up's
/// end at `warmup_s` marked by a grey line.
pub fn write(
    dir: &Path,
    stem: &str,
    title: &str,
    ticks: &[Tick],
    warmup_s: f64,
) -> Result<(), ScaleError> {
    let segments: Series = vec![(
        "segments".to_owned(),
        ticks
            .iter()
            .map(|t| (t.t_s / 60.0, t.shm_segments as f64))
            .collect(),
    )];
    let series = [
        (
            "Private memory (PSS) per process",
            "MB",
            per_process(ticks, |p| p.pss_kb as f64 / 1e3),
        ),
        (
            "Open fds per process",
            "fds",
            per_process(ticks, |p| p.fds as f64),
        ),
        (
            "Threads per process",
            "threads",
            per_process(ticks, |p| p.threads as f64),
        ),
        ("Shared-memory segments the run maps", "segments", segments),
    ];
    let panels: Vec<Lines<'_>> = series
        .iter()
        .map(|(panel_title, y_label, series)| Lines {
            title: panel_title,
            x_label: "minutes since the run started",
            y_label,
            series,
            log_x: false,
            marker_x: Some(warmup_s / 60.0),
        })
        .collect();
    kit::write_panels(
        dir,
        stem,
        &Panels {
            title,
            grid: (2, 2),
            panels: &panels,
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_is_well_formed_svg_and_png() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ticks: Vec<Tick> = (1..=6u32)
            .map(|i| Tick {
                t_s: f64::from(i) * 10.0,
                processes: vec![ProcessSample {
                    pid: 1,
                    role: "robot/sensors".to_owned(),
                    pss_kb: 40_000,
                    fds: 30 + u64::from(i),
                    threads: 12,
                    ..ProcessSample::default()
                }],
                shm_segments: 3,
                ..Tick::default()
            })
            .collect();
        write(dir.path(), "soak", "soak of demo-split", &ticks, 20.0).expect("chart");
        let svg = std::fs::read_to_string(dir.path().join("soak.svg")).expect("svg");
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{}",
            &svg[..svg.len().min(300)]
        );
        assert!(svg.contains("robot/sensors") && svg.contains("Open fds per process"));
        assert!(svg.contains("Shared-memory segments the run maps"));
        let png = std::fs::read(dir.path().join("soak.png")).expect("png");
        let reader = png::Decoder::new(std::io::Cursor::new(png))
            .read_info()
            .expect("a PNG");
        assert!(reader.info().width > 1000 && reader.info().height > 600);
    }
}
