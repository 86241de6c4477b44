//! The report's three charts, drawn with plotters onto any backend: SVG for
//! the page, a bitmap for the PNG.
//!
//! They draw what the Charts screen draws (colours included): the loss curve
//! (mean training loss per epoch, its dashed 3-epoch moving average, dots
//! coloured green / red / grey for update / rollback / no change, and the
//! held-out mean as a separate dotted orange line with diamonds), the
//! per-task loss (a min–max bar per epoch with the quartile box and the
//! median dot; held-out tasks as orange diamonds beside it), and the artifact
//! timeline (a row per artifact, a column per epoch, a circle per update and
//! a red × per rollback). All three put epoch N at the same x, so columns
//! line up when the charts are stacked.
//!
//! Data markers are the only circles and filled polygons in a chart; the
//! legend writes its symbols as text. That keeps a drawn SVG countable: one
//! `<circle>` per dot, one `<polygon>` per diamond or cross.

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::shape::{LossPoint, Move, SpreadPoint, TimelineMark};

pub const UPDATE: RGBColor = RGBColor(0x2e, 0x9d, 0x4f);
pub const ROLLBACK: RGBColor = RGBColor(0xd6, 0x45, 0x45);
pub const NO_CHANGE: RGBColor = RGBColor(0x9a, 0xa0, 0xa6);
pub const LINE: RGBColor = RGBColor(0x3b, 0x6f, 0xd8);
pub const AVERAGE: RGBColor = RGBColor(0x8a, 0x63, 0xd2);
pub const HOLDOUT: RGBColor = RGBColor(0xe0, 0x8a, 0x1e);
const TEXT: RGBColor = RGBColor(0x22, 0x25, 0x2b);
const MUTED: RGBColor = RGBColor(0x60, 0x66, 0x70);
const GRID: RGBColor = RGBColor(0xe6, 0xe8, 0xeb);

/// The font family every text uses; [`super::font`] registers the bundled
/// font under this name.
pub const FAMILY: &str = "sans-serif";

/// Room for the y axis labels (the timeline's are artifact names). The same
/// for every chart, so the plotting areas start at the same x.
const LEFT: u32 = 150;
const RIGHT: u32 = 28;
/// Title and legend rows above the plotting area.
const TOP: u32 = 58;
const BOTTOM: u32 = 44;
/// Longest artifact name shown in full on the timeline's axis.
const ROW_LABEL_CHARS: usize = 20;

type Outcome = Result<(), String>;

fn fail(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A chart: its pixel size and how it draws itself on any backend.
pub trait Chart {
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Outcome;
}

/// The epochs on the shared x axis: first and last finished epoch.
#[derive(Debug, Clone, Copy)]
pub struct Epochs {
    pub first: i64,
    pub last: i64,
    /// Finished epochs (columns).
    pub count: usize,
}

impl Epochs {
    fn range(&self) -> std::ops::Range<f64> {
        self.first as f64 - 0.5..self.last as f64 + 0.5
    }

    /// The chart width: about 16 px an epoch, within bounds a page and an
    /// image viewer can show (500 epochs get 6 px each).
    pub fn width(&self) -> u32 {
        let span = (self.last - self.first + 1).max(1) as u32;
        LEFT + RIGHT + span.saturating_mul(16).clamp(720, 3000)
    }

    fn column_px(&self) -> f64 {
        let span = (self.last - self.first + 1).max(1) as f64;
        f64::from(self.width() - LEFT - RIGHT) / span
    }

    /// Marker radius: big enough to see, small enough not to merge.
    fn marker_radius(&self) -> i32 {
        (self.column_px() * 0.32).clamp(2.0, 5.0).round() as i32
    }
}

/// Text of the given size in the bundled font.
fn font(size: f64, color: RGBColor) -> TextStyle<'static> {
    (FAMILY, size).into_font().color(&color)
}

/// The title row and the legend row above the plotting area. A legend entry
/// is (symbol, its colour, label); symbols are text, never data markers.
fn header<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    legend: &[(&str, RGBColor, &str)],
) -> Outcome {
    root.fill(&WHITE).map_err(fail)?;
    root.draw(&Text::new(title.to_string(), (12, 10), font(17.0, TEXT))).map_err(fail)?;
    let mut x = LEFT as i32;
    for (symbol, color, label) in legend {
        let sym = font(14.0, *color);
        root.draw(&Text::new(symbol.to_string(), (x, 34), sym.clone())).map_err(fail)?;
        x += root.estimate_text_size(symbol, &sym).map_err(fail)?.0 as i32 + 5;
        let text = font(13.0, MUTED);
        root.draw(&Text::new(label.to_string(), (x, 35), text.clone())).map_err(fail)?;
        x += root.estimate_text_size(label, &text).map_err(fail)?.0 as i32 + 18;
    }
    Ok(())
}

type Plot<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The plotting area over the epochs and a y range, with its axes drawn.
fn plot<'a, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    epochs: &Epochs,
    y: std::ops::Range<f64>,
    y_desc: &str,
    y_labels: usize,
    y_label: &dyn Fn(&f64) -> String,
    light_x_grid: bool,
) -> Result<Plot<'a, DB>, String> {
    let mut chart = ChartBuilder::on(root)
        .margin_top(TOP)
        .margin_right(RIGHT)
        .margin_bottom(6)
        .x_label_area_size(BOTTOM)
        .y_label_area_size(LEFT)
        .build_cartesian_2d(epochs.range(), y)
        .map_err(fail)?;
    let x_labels = (epochs.width() as usize / 70).clamp(2, 40).min(epochs.count.max(2));
    let whole = |x: &f64| if (x - x.round()).abs() < 1e-9 { format!("{}", x.round() as i64) } else { String::new() };
    let mut mesh = chart.configure_mesh();
    mesh.x_labels(x_labels)
        .y_labels(y_labels)
        .x_label_formatter(&whole)
        .y_label_formatter(y_label)
        .x_desc("epoch")
        .y_desc(y_desc)
        .label_style(font(12.0, MUTED))
        .axis_desc_style(font(13.0, MUTED))
        .bold_line_style(GRID)
        .light_line_style(GRID.mix(0.4))
        .axis_style(MUTED);
    if !light_x_grid {
        mesh.x_max_light_lines(0);
    }
    mesh.draw().map_err(fail)?;
    Ok(chart)
}

/// A y range around the values with a little air; a flat series gets a band.
fn padded(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) =
        values.filter(|v| v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    let pad = ((hi - lo) * 0.08).max(0.02);
    lo - pad..hi + pad
}

/// Decimals that tell the y ticks of a range apart.
fn loss_label(range: &std::ops::Range<f64>) -> impl Fn(&f64) -> String + use<> {
    let span = range.end - range.start;
    let decimals = if span >= 0.5 {
        1
    } else if span >= 0.05 {
        2
    } else {
        3
    };
    move |y: &f64| format!("{y:.decimals$}")
}

/// Consecutive runs of present values: a missing loss breaks a line.
fn segments(values: impl Iterator<Item = (f64, Option<f64>)>) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for (x, v) in values {
        match v.filter(|v| v.is_finite()) {
            Some(y) => out.last_mut().map_or((), |s| s.push((x, y))),
            None if out.last().is_some_and(|s| !s.is_empty()) => out.push(Vec::new()),
            None => {}
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

fn diamond(r: i32) -> Vec<(i32, i32)> {
    vec![(0, -r - 1), (r + 1, 0), (0, r + 1), (-r - 1, 0)]
}

/// A filled × the size of a marker (the Charts screen's cross, scaled).
fn cross(r: i32) -> Vec<(i32, i32)> {
    let s = f64::from(r + 1) / 10.0;
    [(3, 0), (10, 7), (17, 0), (20, 3), (13, 10), (20, 17), (17, 20), (10, 13), (3, 20), (0, 17), (7, 10), (0, 3)]
        .iter()
        .map(|&(x, y)| (((x - 10) as f64 * s).round() as i32, ((y - 10) as f64 * s).round() as i32))
        .collect()
}

fn move_color(m: Move) -> RGBColor {
    match m {
        Move::Update => UPDATE,
        Move::Rollback => ROLLBACK,
        Move::None => NO_CHANGE,
    }
}

/// Mean training loss per epoch with its moving average and the held-out mean.
pub struct LossCurve<'a> {
    pub title: String,
    pub epochs: Epochs,
    pub points: &'a [LossPoint],
}

impl Chart for LossCurve<'_> {
    fn size(&self) -> (u32, u32) {
        (self.epochs.width(), 440)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Outcome {
        let has_holdout = self.points.iter().any(|p| p.holdout.is_some());
        let mut legend = vec![("━", LINE, "mean training loss"), ("╌╌", AVERAGE, "3-epoch average")];
        if has_holdout {
            legend.push(("◆", HOLDOUT, "held-out mean"));
        }
        legend.extend([("●", UPDATE, "update"), ("●", ROLLBACK, "rollback"), ("●", NO_CHANGE, "no change")]);
        header(root, &self.title, &legend)?;

        let values = self.points.iter().flat_map(|p| [p.loss, p.average, p.holdout]).flatten();
        let y = padded(values);
        let label = loss_label(&y);
        let mut chart = plot(root, &self.epochs, y, "loss", 6, &label, self.epochs.count <= 60)?;
        let r = self.epochs.marker_radius();
        let x = |p: &LossPoint| p.epoch as f64;

        if has_holdout {
            for seg in segments(self.points.iter().map(|p| (x(p), p.holdout))) {
                chart.draw_series(DashedLineSeries::new(seg, 2, 4, HOLDOUT.stroke_width(2))).map_err(fail)?;
            }
        }
        for seg in segments(self.points.iter().map(|p| (x(p), p.loss))) {
            chart.draw_series(LineSeries::new(seg, LINE.stroke_width(2))).map_err(fail)?;
        }
        for seg in segments(self.points.iter().map(|p| (x(p), p.average))) {
            chart.draw_series(DashedLineSeries::new(seg, 7, 5, AVERAGE.stroke_width(2))).map_err(fail)?;
        }
        if has_holdout {
            chart
                .draw_series(self.points.iter().filter_map(|p| {
                    let h = p.holdout.filter(|h| h.is_finite())?;
                    Some(EmptyElement::at((x(p), h)) + Polygon::new(diamond(r), HOLDOUT.filled()))
                }))
                .map_err(fail)?;
        }
        chart
            .draw_series(self.points.iter().filter_map(|p| {
                let l = p.loss.filter(|l| l.is_finite())?;
                Some(Circle::new((x(p), l), r, move_color(p.movement).filled()))
            }))
            .map_err(fail)?;
        Ok(())
    }
}

/// Per epoch, the spread of the task losses.
pub struct TaskSpread<'a> {
    pub title: String,
    pub epochs: Epochs,
    pub points: &'a [SpreadPoint],
}

impl Chart for TaskSpread<'_> {
    fn size(&self) -> (u32, u32) {
        (self.epochs.width(), 440)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Outcome {
        let has_holdout = self.points.iter().any(|p| !p.holdout.is_empty());
        let mut legend = vec![("▮", LINE, "min–max of the training tasks"), ("●", LINE, "median")];
        if has_holdout {
            legend.push(("◆", HOLDOUT, "held-out task"));
        }
        header(root, &self.title, &legend)?;

        let values = self.points.iter().flat_map(|p| [p.min, p.max].into_iter().chain(p.holdout.iter().map(|h| h.1)));
        let y = padded(values);
        let label = loss_label(&y);
        let mut chart = plot(root, &self.epochs, y, "loss", 6, &label, self.epochs.count <= 60)?;
        let r = self.epochs.marker_radius();
        // Bars take 60% of a column, and at most 14 px (as on the screen).
        let half = (0.3f64).min(7.0 / self.epochs.column_px());
        let x = |p: &SpreadPoint| p.epoch as f64;

        chart
            .draw_series(
                self.points
                    .iter()
                    .map(|p| Rectangle::new([(x(p) - half, p.min), (x(p) + half, p.max)], LINE.mix(0.25).filled())),
            )
            .map_err(fail)?;
        chart
            .draw_series(
                self.points
                    .iter()
                    .map(|p| Rectangle::new([(x(p) - half, p.q1), (x(p) + half, p.q3)], LINE.mix(0.5).filled())),
            )
            .map_err(fail)?;
        chart.draw_series(self.points.iter().map(|p| Circle::new((x(p), p.median), r, LINE.filled()))).map_err(fail)?;
        if has_holdout {
            let d = (r - 1).max(2);
            chart
                .draw_series(self.points.iter().flat_map(|p| {
                    p.holdout.iter().filter(|h| h.1.is_finite()).map(move |h| {
                        EmptyElement::at((x(p) + half * 1.6, h.1)) + Polygon::new(diamond(d), HOLDOUT.filled())
                    })
                }))
                .map_err(fail)?;
        }
        Ok(())
    }
}

/// A row per artifact that moved, a mark per update or rollback.
pub struct Timeline<'a> {
    pub title: String,
    pub epochs: Epochs,
    pub rows: &'a [String],
    pub marks: &'a [TimelineMark],
}

impl Chart for Timeline<'_> {
    fn size(&self) -> (u32, u32) {
        (self.epochs.width(), TOP + BOTTOM + 30 + 34 * self.rows.len().max(1) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Outcome {
        header(root, &self.title, &[("●", UPDATE, "update"), ("✖", ROLLBACK, "rollback")])?;
        let n = self.rows.len().max(1);
        // Row 0 is drawn on top: y counts up from the last row.
        let y_of = |row: usize| (n - 1 - row.min(n - 1)) as f64;
        let rows = self.rows;
        let label = move |y: &f64| {
            if (y - y.round()).abs() > 1e-9 || *y < 0.0 {
                return String::new();
            }
            let row = n - 1 - (y.round() as usize).min(n - 1);
            rows.get(row).map(|name| shorten(name)).unwrap_or_default()
        };
        let mut chart = plot(root, &self.epochs, -0.5..n as f64 - 0.5, "", n, &label, self.epochs.count <= 60)?;
        if self.rows.is_empty() {
            let (xs, ys) = chart.plotting_area().get_pixel_range();
            root.draw(&Text::new(
                "no artifact changed (the baseline optimizer never moves one)",
                (xs.start + 12, (ys.start + ys.end) / 2 - 7),
                font(13.0, MUTED),
            ))
            .map_err(fail)?;
            return Ok(());
        }
        let r = self.epochs.marker_radius().max(3);
        chart
            .draw_series(
                self.marks
                    .iter()
                    .filter(|m| !m.rollback)
                    .map(|m| Circle::new((m.epoch as f64, y_of(m.row)), r, UPDATE.filled())),
            )
            .map_err(fail)?;
        chart
            .draw_series(
                self.marks.iter().filter(|m| m.rollback).map(|m| {
                    EmptyElement::at((m.epoch as f64, y_of(m.row))) + Polygon::new(cross(r), ROLLBACK.filled())
                }),
            )
            .map_err(fail)?;
        Ok(())
    }
}

/// An artifact name cut to fit the axis (the table below has it whole).
fn shorten(name: &str) -> String {
    if name.chars().count() <= ROW_LABEL_CHARS {
        name.to_string()
    } else {
        let head: String = name.chars().take(ROW_LABEL_CHARS - 1).collect();
        format!("{head}…")
    }
}

/// The chart as an SVG document.
pub fn svg<C: Chart>(chart: &C) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, chart.size()).into_drawing_area();
        chart.draw(&root)?;
        root.present().map_err(fail)?;
    }
    Ok(out)
}

/// The chart as a PNG image (8-bit RGB).
pub fn png<C: Chart>(chart: &C) -> Result<Vec<u8>, String> {
    let (w, h) = chart.size();
    let mut pixels = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (w, h)).into_drawing_area();
        chart.draw(&root)?;
        root.present().map_err(fail)?;
    }
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, w, h);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        // Flat colours compress well even at the fast setting.
        encoder.set_compression(png::Compression::Fast);
        let mut writer = encoder.write_header().map_err(fail)?;
        writer.write_image_data(&pixels).map_err(fail)?;
        writer.finish().map_err(fail)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_loss_breaks_the_line_into_segments() {
        let segs = segments([(1.0, Some(0.5)), (2.0, None), (3.0, Some(0.4)), (4.0, Some(0.3))].into_iter());
        assert_eq!(segs, vec![vec![(1.0, 0.5)], vec![(3.0, 0.4), (4.0, 0.3)]]);
        assert!(segments([(1.0, None)].into_iter()).is_empty());
    }

    #[test]
    fn long_histories_get_wider_charts_up_to_a_bound() {
        let w = |n: i64| Epochs { first: 1, last: n, count: n as usize }.width();
        assert_eq!(w(8), LEFT + RIGHT + 720);
        assert!(w(100) > w(8));
        assert_eq!(w(500), LEFT + RIGHT + 3000);
        assert_eq!(w(5000), w(500), "bounded");
        assert!(Epochs { first: 1, last: 500, count: 500 }.marker_radius() >= 2);
    }

    #[test]
    fn a_flat_series_still_gets_a_y_range() {
        let r = padded([0.3, 0.3].into_iter());
        assert!(r.start < 0.3 && r.end > 0.3);
        assert_eq!(padded(std::iter::empty()), 0.0..1.0);
        assert_eq!(shorten("a_very_long_artifact_name_indeed"), "a_very_long_artifac…");
    }
}
