//! Charts, each written as SVG and PNG (plotters; text drawn with ab_glyph from the font
//! shipped in `fonts/`, so no system font library is needed; PNG through the png crate):
//! grouped bars, lines, a grid of line panels, and the font, palette and writer a bench's
//! own chart draws with.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

/// Why a chart could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChartError {
    /// Its file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It could not be drawn or encoded (or the font did not load).
    #[error("{0}")]
    Draw(String),
}

/// The size of a chart of bars or lines.
pub const SIZE: (u32, u32) = (960, 540);
/// The family the shipped font is registered under: every text of every chart.
pub const FONT: &str = "sans-serif";
static FONT_BYTES: &[u8] = include_bytes!("../fonts/DejaVuSansMono.ttf");

/// Colours of the series, in order (raw-shm, raw-tcp, codec, ...).
pub const PALETTE: [RGBColor; 6] = [
    RGBColor(214, 96, 77),
    RGBColor(244, 165, 130),
    RGBColor(67, 147, 195),
    RGBColor(90, 174, 97),
    RGBColor(153, 112, 171),
    RGBColor(120, 120, 120),
];

/// Registers the shipped font as [`FONT`] (once per process); call before drawing.
pub fn font() -> Result<(), ChartError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(ChartError::Draw(
            "the shipped font does not load".to_owned(),
        ))
    }
}

/// Grouped bars: one group per entry of `groups`, one bar per series.
pub struct Bars<'a> {
    /// The chart's title.
    pub title: &'a str,
    /// The y axis.
    pub y_label: &'a str,
    /// Group names, along x.
    pub groups: &'a [String],
    /// (series name, one value per group).
    pub series: &'a [(String, Vec<f64>)],
}

/// Lines: (name, points) each.
pub struct Lines<'a> {
    /// The chart's title.
    pub title: &'a str,
    /// The x axis.
    pub x_label: &'a str,
    /// The y axis.
    pub y_label: &'a str,
    /// (series name, points).
    pub series: &'a [(String, Vec<(f64, f64)>)],
    /// A logarithmic x axis (for lag distributions).
    pub log_x: bool,
    /// A vertical grey line at this x (e.g. where a warm-up ends), if any.
    pub marker_x: Option<f64>,
}

/// What drawing on an area gives.
pub type DrawResult<E> = Result<(), DrawingAreaErrorKind<E>>;

fn draw_bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    bars: &Bars<'_>,
) -> DrawResult<DB::ErrorType> {
    area.fill(&WHITE)?;
    let max = bars
        .series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.15;
    let n = bars.groups.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(bars.title, (FONT, 22))
        .margin(12)
        .x_label_area_size(60)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..n as f64, 0.0..max)?;
    let groups = bars.groups.to_vec();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&move |x| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 0.01 {
                // infallible: a tick between groups has no label
                groups.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(bars.y_label)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .draw()?;
    let k = bars.series.len().max(1) as f64;
    let width = 0.8 / k;
    for (s, (name, values)) in bars.series.iter().enumerate() {
        let colour = PALETTE[s % PALETTE.len()];
        let rects = values.iter().enumerate().map(move |(g, v)| {
            let x0 = g as f64 + 0.1 + s as f64 * width;
            Rectangle::new([(x0, 0.0), (x0 + width * 0.92, *v)], colour.filled())
        });
        chart
            .draw_series(rects)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, 14))
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    area.present()
}

fn draw_lines<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lines: &Lines<'_>,
) -> DrawResult<DB::ErrorType> {
    plot_lines(area, lines)?;
    area.present()
}

/// Draws `lines` on `area` without presenting it: a panel of a grid is one of several
/// drawings on one area, and the SVG backend's `present` closes the document (a panel
/// presenting its own cell ended the SVG after the first panel).
fn plot_lines<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lines: &Lines<'_>,
) -> DrawResult<DB::ErrorType> {
    area.fill(&WHITE)?;
    let points = || lines.series.iter().flat_map(|(_, p)| p.iter().copied());
    let x_max = points().map(|p| p.0).fold(f64::MIN, f64::max);
    let y_max = points().map(|p| p.1).fold(0.0, f64::max).max(1e-9) * 1.1;
    let x_min_pos = points()
        .map(|p| p.0)
        .filter(|x| *x > 0.0)
        .fold(f64::MAX, f64::min);
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(lines.title, (FONT, 22))
        .margin(12)
        .x_label_area_size(50)
        .y_label_area_size(70);
    macro_rules! plot {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(lines.x_label)
                .y_desc(lines.y_label)
                .label_style((FONT, 13))
                .axis_desc_style((FONT, 15))
                .draw()?;
            if let Some(x) = lines.marker_x {
                chart.draw_series(LineSeries::new(
                    [(x, 0.0), (x, y_max)],
                    RGBColor(180, 180, 180).stroke_width(1),
                ))?;
            }
            for (s, (name, pts)) in lines.series.iter().enumerate() {
                let colour = PALETTE[s % PALETTE.len()];
                chart
                    .draw_series(LineSeries::new(
                        pts.iter().copied().filter(|p| !lines.log_x || p.0 > 0.0),
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
                .label_font((FONT, 14))
                .position(SeriesLabelPosition::LowerRight)
                .draw()?;
        }};
    }
    if lines.log_x && x_min_pos < f64::MAX {
        let hi = (x_max * 1.2).max(x_min_pos * 10.0);
        plot!(builder.build_cartesian_2d((x_min_pos * 0.8..hi).log_scale(), 0.0..y_max)?);
    } else {
        let hi = if x_max > 0.0 { x_max } else { 1.0 };
        plot!(builder.build_cartesian_2d(0.0..hi, 0.0..y_max)?);
    }
    Ok(())
}

/// Writes `stem.svg` and `stem.png` in `dir` for bars.
pub fn write_bars(dir: &Path, stem: &str, bars: &Bars<'_>) -> Result<(), ChartError> {
    font()?;
    write_both(
        dir,
        stem,
        SIZE,
        |svg| draw_bars(svg, bars).map_err(chart_error),
        |png| draw_bars(png, bars).map_err(chart_error),
    )
}

/// Writes `stem.svg` and `stem.png` in `dir` for lines.
pub fn write_lines(dir: &Path, stem: &str, lines: &Lines<'_>) -> Result<(), ChartError> {
    font()?;
    write_both(
        dir,
        stem,
        SIZE,
        |svg| draw_lines(svg, lines).map_err(chart_error),
        |png| draw_lines(png, lines).map_err(chart_error),
    )
}

/// Lines in a grid of panels under one title (a sweep's metrics against its sizes).
pub struct Panels<'a> {
    /// The title above the grid.
    pub title: &'a str,
    /// (rows, columns).
    pub grid: (usize, usize),
    /// One panel each, row by row.
    pub panels: &'a [Lines<'a>],
}

fn draw_panels<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panels: &Panels<'_>,
) -> DrawResult<DB::ErrorType> {
    area.fill(&WHITE)?;
    let area = area.titled(panels.title, (FONT, 24))?;
    for (lines, cell) in panels.panels.iter().zip(area.split_evenly(panels.grid)) {
        plot_lines(&cell, lines)?;
    }
    area.present()
}

/// Writes `stem.svg` and `stem.png` in `dir` for a grid of panels, each panel the size
/// of a chart of lines.
pub fn write_panels(dir: &Path, stem: &str, panels: &Panels<'_>) -> Result<(), ChartError> {
    font()?;
    let (rows, columns) = panels.grid;
    let size = (
        SIZE.0 * u32::try_from(columns.max(1)).unwrap_or(1) * 3 / 4,
        SIZE.1 * u32::try_from(rows.max(1)).unwrap_or(1) * 3 / 4 + 40,
    );
    write_both(
        dir,
        stem,
        size,
        |svg| draw_panels(svg, panels).map_err(chart_error),
        |png| draw_panels(png, panels).map_err(chart_error),
    )
}

/// A drawing error as a [`ChartError`].
pub fn chart_error<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> ChartError {
    ChartError::Draw(e.to_string())
}

/// Writes `stem.svg` and `stem.png` of `size` in `dir`, each drawn by its function (the
/// same drawing on two backends).
pub fn write_both(
    dir: &Path,
    stem: &str,
    size: (u32, u32),
    svg: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), ChartError>,
    png: impl FnOnce(&DrawingArea<BitMapBackend<'_>, Shift>) -> Result<(), ChartError>,
) -> Result<(), ChartError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ChartError::Io { path, source }
    };
    let mut text = String::new();
    {
        let area = SVGBackend::with_string(&mut text, size).into_drawing_area();
        svg(&area)?;
    }
    let svg_path = dir.join(format!("{stem}.svg"));
    std::fs::write(&svg_path, text).map_err(io(&svg_path))?;
    let mut pixels = vec![255u8; size.0 as usize * size.1 as usize * 3];
    {
        let area = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
        png(&area)?;
    }
    let png_path = dir.join(format!("{stem}.png"));
    let png_error =
        |e: png::EncodingError| ChartError::Draw(format!("{}: {e}", png_path.display()));
    let file = std::fs::File::create(&png_path).map_err(io(&png_path))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), size.0, size.1);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(png_error)?;
    writer.write_image_data(&pixels).map_err(png_error)?;
    writer.finish().map_err(png_error)
}

/// The empirical CDF of `values` (sorted here) as points (value, percent at or below),
/// at most `max_points` of them.
pub fn cdf(mut values: Vec<f64>, max_points: usize) -> Vec<(f64, f64)> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return Vec::new();
    }
    let step = n.div_ceil(max_points.max(1)).max(1);
    let mut points: Vec<(f64, f64)> = (0..n)
        .step_by(step)
        .map(|i| (values[i], (i + 1) as f64 / n as f64 * 100.0))
        .collect();
    if points.last().is_some_and(|p| p.1 < 100.0) {
        points.push((values[n - 1], 100.0));
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_well_formed_svg_and_png() {
        let dir = tempfile::tempdir().expect("tempdir");
        let groups = vec!["heavy constrained".to_owned(), "basic all".to_owned()];
        let series = vec![
            ("raw-shm".to_owned(), vec![12.0, 20.0]),
            ("codec".to_owned(), vec![20.0, 20.0]),
        ];
        write_bars(
            dir.path(),
            "fps",
            &Bars {
                title: "delivered fps",
                y_label: "fps",
                groups: &groups,
                series: &series,
            },
        )
        .expect("bars");
        let lines = vec![("codec".to_owned(), cdf(vec![3.0, 1.0, 2.0, 40.0], 100))];
        write_lines(
            dir.path(),
            "lag",
            &Lines {
                title: "lag",
                x_label: "ms",
                y_label: "% of frames",
                series: &lines,
                log_x: true,
                marker_x: Some(2.0),
            },
        )
        .expect("lines");
        for stem in ["fps", "lag"] {
            let svg = std::fs::read_to_string(dir.path().join(format!("{stem}.svg"))).expect("svg");
            assert!(
                svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
                "{stem}"
            );
            let png = std::fs::read(dir.path().join(format!("{stem}.png"))).expect("png");
            let decoder = png::Decoder::new(std::io::Cursor::new(png));
            let reader = decoder.read_info().expect("a PNG");
            assert_eq!((reader.info().width, reader.info().height), SIZE);
        }
        let svg = std::fs::read_to_string(dir.path().join("fps.svg")).expect("svg");
        assert!(
            svg.contains("raw-shm") && svg.contains("heavy constrained"),
            "labels drawn as text"
        );
    }

    /// A grid of panels is one SVG document: every panel's text inside it, one closing
    /// tag, at the end (each panel presenting its own cell once closed it after the first).
    #[test]
    fn panels_are_one_svg_document() {
        let dir = tempfile::tempdir().expect("tempdir");
        let series = vec![("a".to_owned(), vec![(1.0, 1.0), (2.0, 3.0)])];
        let panel = |title| Lines {
            title,
            x_label: "x",
            y_label: "y",
            series: &series,
            log_x: false,
            marker_x: None,
        };
        let panels = [panel("first panel"), panel("second panel")];
        write_panels(
            dir.path(),
            "grid",
            &Panels {
                title: "grid",
                grid: (1, 2),
                panels: &panels,
            },
        )
        .expect("panels");
        let svg = std::fs::read_to_string(dir.path().join("grid.svg")).expect("svg");
        assert_eq!(svg.matches("</svg>").count(), 1, "one closing tag");
        assert!(svg.trim_end().ends_with("</svg>"));
        let closing = svg.find("</svg>").expect("closed");
        assert!(svg.find("second panel").is_some_and(|at| at < closing));
    }

    #[test]
    fn cdf_points_end_at_100() {
        assert_eq!(cdf(vec![], 10), vec![]);
        assert_eq!(cdf(vec![2.0, 1.0], 10), vec![(1.0, 50.0), (2.0, 100.0)]);
        let many = cdf((0..1000).map(f64::from).collect(), 10);
        assert!(many.len() <= 11);
        assert_eq!(many.last(), Some(&(999.0, 100.0)));
    }
}
