//! The soak's chart, written as SVG and PNG through the benchmarks' shared charts
//! (`streamwire_benchkit::charts`: plotters, the shipped font, the palette): four panels over time, private memory (PSS), fds and threads per process,
//! and the run's shared-memory segments, with the end of the warm-up marked.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use streamwire_benchkit::charts::{self as kit, FONT, PALETTE, chart_error};

use crate::ScaleError;
use crate::analysis::Tick;

const SIZE: (u32, u32) = (1280, 800);

/// The colour of the `s`th process (the coordinator, first, in black; then the palette).
fn colour(s: usize) -> RGBColor {
    match s {
        0 => BLACK,
        s => PALETTE[(s - 1) % PALETTE.len()],
    }
}

/// One panel: its title, y axis and series (name, points).
struct Panel {
    title: String,
    y_label: &'static str,
    series: Vec<(String, Vec<(f64, f64)>)>,
}

/// The four panels of `ticks`.
fn panels(ticks: &[Tick]) -> Vec<Panel> {
    let mut roles: Vec<&str> = Vec::new();
    for p in ticks.iter().flat_map(|t| &t.processes) {
        if !roles.contains(&p.role.as_str()) {
            roles.push(&p.role);
        }
    }
    let per_process = |title: &str, y_label, f: fn(&crate::procfs::ProcessSample) -> f64| Panel {
        title: title.to_owned(),
        y_label,
        series: roles
            .iter()
            .map(|role| {
                let points = ticks
                    .iter()
                    .filter_map(|t| {
                        let p = t.processes.iter().find(|p| p.role == *role)?;
                        Some((t.t_s / 60.0, f(p)))
                    })
                    .collect();
                ((*role).to_owned(), points)
            })
            .collect(),
    };
    vec![
        per_process("Private memory (PSS) per process", "MB", |p| {
            p.pss_kb as f64 / 1e3
        }),
        per_process("Open fds per process", "fds", |p| p.fds as f64),
        per_process("Threads per process", "threads", |p| p.threads as f64),
        Panel {
            title: "Shared-memory segments the run maps".to_owned(),
            y_label: "segments",
            series: vec![(
                "segments".to_owned(),
                ticks
                    .iter()
                    .map(|t| (t.t_s / 60.0, t.shm_segments as f64))
                    .collect(),
            )],
        },
    ]
}

type DrawResult<E> = Result<(), DrawingAreaErrorKind<E>>;

fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    ticks: &[Tick],
    warmup_s: f64,
) -> DrawResult<DB::ErrorType> {
    area.fill(&WHITE)?;
    let area = area.titled(title, (FONT, 22))?;
    let x_max = ticks
        .iter()
        .map(|t| t.t_s / 60.0)
        .fold(0.0, f64::max)
        .max(1e-3);
    for (panel, cell) in panels(ticks).iter().zip(area.split_evenly((2, 2))) {
        let y_max = panel
            .series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|p| p.1))
            .fold(0.0, f64::max)
            .max(1.0)
            * 1.15;
        let mut chart = ChartBuilder::on(&cell)
            .caption(&panel.title, (FONT, 17))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
        chart
            .configure_mesh()
            .x_desc("minutes since the run started")
            .y_desc(panel.y_label)
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .draw()?;
        let warm = warmup_s / 60.0;
        chart.draw_series(LineSeries::new(
            [(warm, 0.0), (warm, y_max)],
            RGBColor(180, 180, 180).stroke_width(1),
        ))?;
        for (s, (name, points)) in panel.series.iter().enumerate() {
            let colour = colour(s);
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    colour.stroke_width(2),
                ))?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(3))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FONT, 11))
            .position(SeriesLabelPosition::LowerRight)
            .draw()?;
    }
    area.present()
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
    kit::font()?;
    kit::write_both(
        dir,
        stem,
        SIZE,
        |svg| draw(svg, title, ticks, warmup_s).map_err(chart_error),
        |png| draw(png, title, ticks, warmup_s).map_err(chart_error),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::ProcessSample;

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
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("robot/sensors") && svg.contains("Open fds per process"));
        let png = std::fs::read(dir.path().join("soak.png")).expect("png");
        let reader = png::Decoder::new(std::io::Cursor::new(png))
            .read_info()
            .expect("a PNG");
        assert_eq!((reader.info().width, reader.info().height), SIZE);
    }
}
