//! The one chart model: series of points with optional error bars on
//! linear or logarithmic axes, reference lines, a title and a legend
//! placed beside the data (never over it), rendered to SVG with plotters.
//!
//! The legend has a box of its own ([`Chart::layout`]): a column right of
//! the plot when its labels are short, else rows of columns below the
//! plot. The SVG grows to hold it — taller when a right-hand legend has
//! more entries than the plot's height holds, taller by the legend's
//! rows below — so the plot keeps its size and no entry is cut off.
//!
//! A [`Chart`] is plain data; [`Chart::to_svg`] draws it into a string
//! (for an HTML page) and [`Chart::write_svg`] into a file. Every point is
//! a circle on top of its series' line, so a chart with data always has
//! `<circle>` elements, one per drawable point (the legend draws none);
//! a chart without a drawable point is an error rather than an empty
//! frame.
//!
//! ```
//! use takt_measure::chart::{Axis, Chart, Point, Series};
//!
//! let chart = Chart::new(Axis::log("working set").bytes(), Axis::log("ns per load"))
//!     .title("Memory latency")
//!     .series(Series::new("thp off", [(4096.0, 1.2), (65536.0, 4.0), (1e8, 90.0)]))
//!     .series(Series::from_points(
//!         "with 95% interval",
//!         vec![Point::new(4096.0, 1.3).error(1.1, 1.5)],
//!     ))
//!     .vertical("L1 48K", 49152.0);
//! let svg = chart.to_svg().unwrap();
//! assert!(svg.starts_with("<svg"));
//! assert_eq!(svg.matches("<circle").count(), 4);
//! ```

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::MeasureError;
use crate::table::fmt_num;

/// Axis scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Linear.
    Linear,
    /// Logarithmic (labels at 1, 2 and 5 of each decade); only values > 0
    /// are drawn.
    Log,
}

/// How an axis labels its ticks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ticks {
    /// Numbers with 3–4 significant digits; integers only when every
    /// value on the axis is an integer (thread counts).
    Numbers,
    /// Byte sizes (`4K`, `16M`, `2G`).
    Bytes,
    /// Categories: the value `i` (1-based) is labelled `names[i - 1]`,
    /// other ticks are blank.
    Names(Vec<String>),
}

/// One axis: its label (with the unit), scale, tick labels and range.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// The label, with its unit (`ns per dependent load`).
    pub label: String,
    /// Linear or logarithmic.
    pub scale: Scale,
    /// How ticks are labelled.
    pub ticks: Ticks,
    /// A fixed range; values beyond it are clipped to its ends. `None`:
    /// from the data (a linear y axis from 0 when the data is positive, a
    /// linear x axis from the data's smallest value).
    pub range: Option<(f64, f64)>,
}

impl Axis {
    /// A linear axis.
    pub fn linear(label: impl Into<String>) -> Self {
        Axis {
            label: label.into(),
            scale: Scale::Linear,
            ticks: Ticks::Numbers,
            range: None,
        }
    }

    /// A logarithmic axis.
    pub fn log(label: impl Into<String>) -> Self {
        Axis {
            scale: Scale::Log,
            ..Axis::linear(label)
        }
    }

    /// Ticks as byte sizes.
    pub fn bytes(mut self) -> Self {
        self.ticks = Ticks::Bytes;
        self
    }

    /// Ticks as category names (see [`Ticks::Names`]).
    pub fn names(mut self, names: Vec<String>) -> Self {
        self.ticks = Ticks::Names(names);
        self
    }

    /// A fixed range, `lo..hi`; values beyond it are clipped.
    pub fn range(mut self, lo: f64, hi: f64) -> Self {
        self.range = Some((lo, hi));
        self
    }

    fn usable(&self, v: f64) -> bool {
        v.is_finite() && (self.scale == Scale::Linear || v > 0.0)
    }

    fn clip(&self, v: f64) -> f64 {
        match self.range {
            Some((lo, hi)) => v.clamp(lo, hi),
            None => v,
        }
    }
}

/// One point, with an optional interval of its y value (an error bar).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// X value.
    pub x: f64,
    /// Y value.
    pub y: f64,
    /// The y interval drawn as an error bar (`lower`, `upper`).
    pub y_err: Option<(f64, f64)>,
}

impl Point {
    /// A point without error bar.
    pub fn new(x: f64, y: f64) -> Self {
        Point { x, y, y_err: None }
    }

    /// With an error bar from `lower` to `upper`.
    pub fn error(mut self, lower: f64, upper: f64) -> Self {
        self.y_err = Some((lower, upper));
        self
    }
}

impl From<(f64, f64)> for Point {
    fn from((x, y): (f64, f64)) -> Self {
        Point::new(x, y)
    }
}

/// One named series: a line through its points, a circle on each.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points, in the order the line joins them.
    pub points: Vec<Point>,
    /// Drawn dashed and lighter, with hollow circles: a model's
    /// prediction, a published figure, a ceiling.
    pub dashed: bool,
}

impl Series {
    /// A solid series of `(x, y)` points.
    pub fn new(label: impl Into<String>, points: impl IntoIterator<Item = (f64, f64)>) -> Self {
        Series::from_points(label, points.into_iter().map(Point::from).collect())
    }

    /// A solid series of points (with error bars where they have them).
    pub fn from_points(label: impl Into<String>, points: Vec<Point>) -> Self {
        Series {
            label: label.into(),
            points,
            dashed: false,
        }
    }

    /// Drawn dashed.
    pub fn dashed(mut self) -> Self {
        self.dashed = true;
        self
    }
}

/// A labelled reference line across the plot (grey, dashed): a cache
/// size, a threshold.
#[derive(Clone, Debug, PartialEq)]
pub enum RefLine {
    /// A vertical line at `x`.
    Vertical {
        /// Legend label.
        label: String,
        /// Where.
        x: f64,
    },
    /// A horizontal line at `y`.
    Horizontal {
        /// Legend label.
        label: String,
        /// Where.
        y: f64,
    },
}

/// A box in an SVG's pixels: left, top, width, height.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    /// Left edge.
    pub x: u32,
    /// Top edge.
    pub y: u32,
    /// Width.
    pub w: u32,
    /// Height.
    pub h: u32,
}

impl Rect {
    /// Whether the two boxes share any pixel.
    pub fn intersects(&self, o: &Rect) -> bool {
        self.x < o.x + o.w && o.x < self.x + self.w && self.y < o.y + o.h && o.y < self.y + self.h
    }

    /// Whether `o` lies inside this box.
    pub fn contains(&self, o: &Rect) -> bool {
        o.x >= self.x
            && o.y >= self.y
            && o.x + o.w <= self.x + self.w
            && o.y + o.h <= self.y + self.h
    }
}

/// Where a chart's parts go ([`Chart::layout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The SVG's width and height: the chart's size, grown to hold the
    /// legend.
    pub svg: (u32, u32),
    /// The plot: the data, its axes and their labels.
    pub plot: Rect,
    /// The legend's box, beside or below the plot; `None` without
    /// entries.
    pub legend: Option<Rect>,
    /// Legend entries per row: 1 for a column at the right.
    pub legend_columns: u32,
}

/// A chart: axes, series, reference lines, an optional title, a size.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// Drawn above the plot when set.
    pub title: Option<String>,
    /// The x axis.
    pub x: Axis,
    /// The y axis.
    pub y: Axis,
    /// The series, drawn in order, coloured from one palette.
    pub series: Vec<Series>,
    /// Reference lines, drawn under the series.
    pub lines: Vec<RefLine>,
    /// Width and height in pixels of the title and the plot; the SVG
    /// grows beyond it to hold the legend ([`Chart::layout`]).
    pub size: (u32, u32),
}

/// Default size (the report's figures).
pub const DEFAULT_SIZE: (u32, u32) = (720, 400);
/// Colour-blind-safe palette (Okabe–Ito), in the order series get it.
const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(230, 159, 0),
    RGBColor(0, 0, 0),
];
/// Reference lines' colour.
const GREY: RGBColor = RGBColor(140, 140, 140);
/// A dashed series' mix with white.
const LIGHT: f64 = 0.6;
/// Font size of labels and legend, px.
const FONT: u32 = 13;
/// Width of a legend's line sample, px.
const SAMPLE: i32 = 22;
/// Half the width of an error bar's caps, px.
const CAP: i32 = 4;
/// Legend row height, px.
const ROW: i32 = 18;
/// An estimate of a label character's width at [`FONT`], px.
const CHAR_W: f64 = 7.2;
/// Past this share of the width, the legend goes below the plot.
const LEGEND_MAX_SHARE: f64 = 0.32;
/// A log x axis of at most this many distinct whole numbers has its ticks
/// at those numbers.
const MAX_KEYS: usize = 12;
/// Height of the title's band, px.
const TITLE_BAND: u32 = 32;
/// Title font size, px.
const TITLE_FONT: u32 = 20;
/// Space above and below the legend's entries, px.
const LEGEND_PAD: u32 = 10;

/// `4096` → `4K`.
pub fn human_bytes(b: f64) -> String {
    let b = b.max(0.0) as u64;
    if b >= 1 << 30 {
        format!("{}G", b >> 30)
    } else if b >= 1 << 20 {
        format!("{}M", b >> 20)
    } else if b >= 1 << 10 {
        format!("{}K", b >> 10)
    } else {
        format!("{b}")
    }
}

impl Chart {
    /// An empty chart over these axes.
    pub fn new(x: Axis, y: Axis) -> Self {
        Chart {
            title: None,
            x,
            y,
            series: Vec::new(),
            lines: Vec::new(),
            size: DEFAULT_SIZE,
        }
    }

    /// With a title above the plot.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds a series.
    pub fn series(mut self, s: Series) -> Self {
        self.series.push(s);
        self
    }

    /// Adds a vertical reference line.
    pub fn vertical(mut self, label: impl Into<String>, x: f64) -> Self {
        self.lines.push(RefLine::Vertical {
            label: label.into(),
            x,
        });
        self
    }

    /// Adds a horizontal reference line.
    pub fn horizontal(mut self, label: impl Into<String>, y: f64) -> Self {
        self.lines.push(RefLine::Horizontal {
            label: label.into(),
            y,
        });
        self
    }

    /// With this size in pixels.
    pub fn size(mut self, width: u32, height: u32) -> Self {
        self.size = (width, height);
        self
    }

    fn usable(&self, p: &Point) -> bool {
        self.x.usable(p.x) && self.y.usable(p.y)
    }

    /// The drawable points of a series, clipped to fixed ranges.
    fn points(&self, s: &Series) -> Vec<Point> {
        s.points
            .iter()
            .filter(|p| self.usable(p))
            .map(|p| Point {
                x: self.x.clip(p.x),
                y: self.y.clip(p.y),
                y_err: p.y_err.map(|(lo, hi)| {
                    let lo = if self.y.usable(lo) { lo } else { p.y };
                    (self.y.clip(lo), self.y.clip(hi))
                }),
            })
            .collect()
    }

    /// The data's bounds (x0, x1, y0, y1), error bars included.
    fn bounds(&self) -> Option<(f64, f64, f64, f64)> {
        let mut b: Option<(f64, f64, f64, f64)> = None;
        for p in self.series.iter().flat_map(|s| self.points(s)) {
            let (lo, hi) = p.y_err.map_or((p.y, p.y), |(lo, hi)| {
                (lo.min(p.y), if hi.is_finite() { hi.max(p.y) } else { p.y })
            });
            b = Some(match b {
                None => (p.x, p.x, lo, hi),
                Some((x0, x1, y0, y1)) => (x0.min(p.x), x1.max(p.x), y0.min(lo), y1.max(hi)),
            });
        }
        b
    }

    /// The chart as an SVG document. An error when no series has a point
    /// that can be drawn on these scales.
    pub fn to_svg(&self) -> Result<String, MeasureError> {
        let (x0, x1, y0, y1) = self
            .bounds()
            .ok_or_else(|| self.error("no points to plot"))?;
        let layout = self.layout();
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, layout.svg).into_drawing_area();
            self.draw(&root, &layout, (x0, x1), (y0, y1))
                .map_err(|e| self.error(&e.to_string()))?;
            root.present().map_err(|e| self.error(&e.to_string()))?;
        }
        Ok(svg)
    }

    /// Writes [`to_svg`](Self::to_svg) to `path`.
    pub fn write_svg(&self, path: &Path) -> Result<(), MeasureError> {
        let svg = self.to_svg()?;
        std::fs::write(path, svg).map_err(|source| MeasureError::Write {
            path: path.to_path_buf(),
            source,
        })
    }

    fn error(&self, reason: &str) -> MeasureError {
        MeasureError::Chart {
            chart: self
                .title
                .clone()
                .unwrap_or_else(|| format!("{} against {}", self.y.label, self.x.label)),
            reason: reason.to_string(),
        }
    }

    /// The ticks of a log x axis over a few whole numbers (thread counts
    /// 2, 4, 8, 16): the data's own values, since ticks at 1, 2 and 5 of
    /// each decade would label few of them or none.
    fn x_keys(&self) -> Option<Vec<f64>> {
        if self.x.scale != Scale::Log || self.x.ticks != Ticks::Numbers || self.x.range.is_some() {
            return None;
        }
        let mut xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| self.points(s))
            .map(|p| p.x)
            .collect();
        if xs.iter().any(|x| x.fract() != 0.0) {
            return None;
        }
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        (xs.len() <= MAX_KEYS).then_some(xs)
    }

    fn legend_entries(&self) -> Vec<(&str, ShapeStyle, bool)> {
        let mut out = Vec::new();
        for l in &self.lines {
            let label = match l {
                RefLine::Vertical { label, .. } | RefLine::Horizontal { label, .. } => label,
            };
            out.push((
                label.as_str(),
                ShapeStyle::from(&GREY).stroke_width(1),
                true,
            ));
        }
        for (i, s) in self.series.iter().enumerate() {
            out.push((s.label.as_str(), self.style(i, s), s.dashed));
        }
        out
    }

    fn style(&self, i: usize, s: &Series) -> ShapeStyle {
        let colour = PALETTE[i % PALETTE.len()];
        if s.dashed {
            ShapeStyle::from(&colour.mix(LIGHT)).stroke_width(2)
        } else {
            ShapeStyle::from(&colour).stroke_width(2)
        }
    }

    /// Where the title band, the plot and the legend go. The title and
    /// the plot fill [`size`](Chart::size); a legend whose widest entry
    /// takes at most a third of the width is a column right of the plot
    /// (the SVG taller if its entries need it), a wider one rows of
    /// columns below the plot (the SVG taller by those rows).
    pub fn layout(&self) -> Layout {
        let (width, height) = self.size;
        let top = if self.title.is_some() {
            TITLE_BAND.min(height / 2)
        } else {
            0
        };
        let plot_h = height - top;
        let entries = self.legend_entries();
        let Some(longest) = entries.iter().map(|e| e.0.chars().count()).max() else {
            return Layout {
                svg: (width, height),
                plot: Rect {
                    x: 0,
                    y: top,
                    w: width,
                    h: plot_h,
                },
                legend: None,
                legend_columns: 0,
            };
        };
        let n = entries.len() as u32;
        let entry_w = (longest as f64 * CHAR_W) as u32 + SAMPLE as u32 + 24;
        let rows_h = |rows: u32| rows * ROW as u32 + 2 * LEGEND_PAD;
        if f64::from(entry_w) <= f64::from(width) * LEGEND_MAX_SHARE {
            let plot_w = width - entry_w;
            let legend_h = rows_h(n).max(plot_h);
            Layout {
                svg: (width, top + legend_h),
                plot: Rect {
                    x: 0,
                    y: top,
                    w: plot_w,
                    h: plot_h,
                },
                legend: Some(Rect {
                    x: plot_w,
                    y: top,
                    w: entry_w,
                    h: legend_h,
                }),
                legend_columns: 1,
            }
        } else {
            let columns = (width / entry_w.min(width)).clamp(1, n);
            let legend_h = rows_h(n.div_ceil(columns));
            Layout {
                svg: (width, height + legend_h),
                plot: Rect {
                    x: 0,
                    y: top,
                    w: width,
                    h: plot_h,
                },
                legend: Some(Rect {
                    x: 0,
                    y: height,
                    w: width,
                    h: legend_h,
                }),
                legend_columns: columns,
            }
        }
    }

    fn draw(
        &self,
        root: &DrawingArea<SVGBackend<'_>, Shift>,
        layout: &Layout,
        (x0, x1): (f64, f64),
        (y0, y1): (f64, f64),
    ) -> Result<(), Box<dyn std::error::Error + '_>> {
        root.fill(&WHITE)?;
        if let Some(t) = &self.title {
            let font = ("sans-serif", TITLE_FONT)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Center));
            let (w, _) = layout.svg;
            root.draw(&Text::new(
                t.clone(),
                (w as i32 / 2, TITLE_BAND as i32 / 2),
                font,
            ))?;
        }
        let part = |r: &Rect| root.clone().shrink((r.x, r.y), (r.w, r.h));
        let plot = part(&layout.plot);
        if let Some(l) = &layout.legend {
            draw_legend(&part(l), &self.legend_entries(), layout.legend_columns)?;
        }
        let (xa, xb) = match (self.x.range, self.x.scale) {
            (Some(r), _) => r,
            (None, Scale::Log) => pad_log(x0, x1),
            (None, Scale::Linear) => {
                // the x axis starts at the data (thread counts start at 1)
                let span = if x1 > x0 { x1 - x0 } else { 1.0 };
                (x0 - 0.05 * span, x1 + 0.05 * span)
            }
        };
        let (ya, yb) = match (self.y.range, self.y.scale) {
            (Some(r), _) => r,
            (None, Scale::Log) => pad_log(y0, y1),
            (None, Scale::Linear) => {
                let lo = y0.min(0.0);
                let span = if y1 > lo { y1 - lo } else { y1.abs().max(1.0) };
                (lo, y1 + 0.08 * span)
            }
        };
        let x_integer = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .all(|p| p.x.fract() == 0.0);
        let keys = self.x_keys();
        let keyed = |v: &f64| number(*v);
        let ticks = tick_format(&self.x, x_integer);
        let x_fmt: &dyn Fn(&f64) -> String = if keys.is_some() { &keyed } else { &ticks };
        let y_fmt = tick_format(&self.y, false);
        macro_rules! body {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(self.x.label.as_str())
                    .y_desc(self.y.label.as_str())
                    .x_labels(12)
                    .y_labels(8)
                    .x_label_formatter(x_fmt)
                    .y_label_formatter(&y_fmt)
                    .light_line_style(RGBColor(235, 235, 235))
                    .bold_line_style(RGBColor(215, 215, 215))
                    .label_style(("sans-serif", FONT))
                    .draw()?;
                let grey = ShapeStyle::from(&GREY).stroke_width(1);
                for l in &self.lines {
                    let (a, b) = match *l {
                        RefLine::Vertical { x, .. } if x >= xa && x <= xb => ((x, ya), (x, yb)),
                        RefLine::Horizontal { y, .. } if y >= ya && y <= yb => ((xa, y), (xb, y)),
                        _ => continue,
                    };
                    chart.draw_series(DashedLineSeries::new(vec![a, b], 6, 4, grey))?;
                }
                for (i, s) in self.series.iter().enumerate() {
                    let style = self.style(i, s);
                    let pts = self.points(s);
                    let xy: Vec<(f64, f64)> = pts.iter().map(|p| (p.x, p.y)).collect();
                    if s.dashed {
                        chart.draw_series(DashedLineSeries::new(xy.clone(), 8, 5, style))?;
                    } else {
                        chart.draw_series(LineSeries::new(xy.clone(), style))?;
                    }
                    let bars = ShapeStyle::from(&style.color).stroke_width(1);
                    for p in &pts {
                        let Some((lo, hi)) = p.y_err else { continue };
                        chart.draw_series(std::iter::once(PathElement::new(
                            vec![(p.x, lo), (p.x, hi)],
                            bars,
                        )))?;
                        // caps: CAP px either side, in pixels at each end
                        let cap = |y: f64| {
                            EmptyElement::at((p.x, y))
                                + PathElement::new(vec![(-CAP, 0), (CAP, 0)], bars)
                        };
                        chart.draw_series([cap(lo), cap(hi)])?;
                    }
                    let marker = if s.dashed {
                        ShapeStyle::from(&style.color).stroke_width(1)
                    } else {
                        ShapeStyle::from(&style.color).filled()
                    };
                    chart.draw_series(xy.iter().map(|&p| Circle::new(p, 3, marker)))?;
                }
            }};
        }
        let mut builder = ChartBuilder::on(&plot);
        builder
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64);
        match (self.x.scale, self.y.scale) {
            (Scale::Linear, Scale::Linear) => body!(builder.build_cartesian_2d(xa..xb, ya..yb)?),
            (Scale::Log, Scale::Linear) => {
                match keys {
                    Some(k) => body!(builder.build_cartesian_2d(
                        (xa..xb).log_scale().base(base(&self.x)).with_key_points(k),
                        ya..yb
                    )?),
                    None => body!(builder
                        .build_cartesian_2d((xa..xb).log_scale().base(base(&self.x)), ya..yb)?),
                }
            }
            (Scale::Linear, Scale::Log) => {
                body!(builder.build_cartesian_2d(xa..xb, (ya..yb).log_scale().base(base(&self.y)))?)
            }
            (Scale::Log, Scale::Log) => match keys {
                Some(k) => body!(builder.build_cartesian_2d(
                    (xa..xb).log_scale().base(base(&self.x)).with_key_points(k),
                    (ya..yb).log_scale().base(base(&self.y))
                )?),
                None => body!(builder.build_cartesian_2d(
                    (xa..xb).log_scale().base(base(&self.x)),
                    (ya..yb).log_scale().base(base(&self.y))
                )?),
            },
        }
        Ok(())
    }
}

/// A log axis' padded range: a quarter beyond the data each way (a
/// decade around a single value).
fn pad_log(lo: f64, hi: f64) -> (f64, f64) {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo / 2.0, hi * 2.0)
    };
    (lo / 1.25, hi * 1.25)
}

/// The tick label function of `axis`.
fn tick_format(axis: &Axis, integer: bool) -> impl Fn(&f64) -> String + '_ {
    move |v: &f64| match &axis.ticks {
        // a log axis of bytes has its ticks at powers of two (see `base`);
        // its light lines between are left unlabelled
        Ticks::Bytes if axis.scale == Scale::Log && v.log2().fract().abs() > 1e-9 => String::new(),
        Ticks::Bytes => human_bytes(*v),
        Ticks::Names(names) => {
            if (v - v.round()).abs() > 1e-9 {
                return String::new();
            }
            usize::try_from(v.round() as i64 - 1)
                .ok()
                .and_then(|i| names.get(i))
                .cloned()
                .unwrap_or_default()
        }
        Ticks::Numbers if axis.scale == Scale::Log => {
            // Decades and their 2× and 5× only: plotters puts a tick on
            // every integer multiple, far too many to label.
            let mantissa = *v / 10f64.powf(v.log10().floor());
            if [1.0, 2.0, 5.0].iter().any(|m| (mantissa - m).abs() < 1e-6) {
                number(*v)
            } else {
                String::new()
            }
        }
        Ticks::Numbers if integer => {
            if (v - v.round()).abs() > 1e-9 {
                String::new()
            } else {
                format!("{}", v.round() as i64)
            }
        }
        Ticks::Numbers => number(*v),
    }
}

/// A tick's number: whole numbers as such (`0`, `10`, `5000`), others
/// with 3–4 significant digits.
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e6 {
        format!("{}", v as i64)
    } else {
        fmt_num(v)
    }
}

/// The base of a log axis' ticks: 2 for bytes, else 10.
fn base(axis: &Axis) -> f64 {
    if axis.ticks == Ticks::Bytes {
        2.0
    } else {
        10.0
    }
}

/// Draws the legend's entries (a line sample, the label) in `area`, row
/// by row, `columns` to a row.
fn draw_legend(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    entries: &[(&str, ShapeStyle, bool)],
    columns: u32,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let font = ("sans-serif", FONT)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let columns = columns.max(1) as usize;
    let column_w = (area.dim_in_pixel().0 / columns as u32) as i32;
    for (i, (label, style, dashed)) in entries.iter().enumerate() {
        let y = LEGEND_PAD as i32 + ROW / 2 + (i / columns) as i32 * ROW;
        let x = 8 + (i % columns) as i32 * column_w;
        if *dashed {
            for k in 0..3 {
                let a = x + k * 8;
                area.draw(&PathElement::new(vec![(a, y), (a + 5, y)], *style))?;
            }
        } else {
            area.draw(&PathElement::new(vec![(x, y), (x + SAMPLE, y)], *style))?;
        }
        area.draw(&Text::new(
            label.to_string(),
            (x + SAMPLE + 6, y),
            font.clone(),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(points: Vec<(f64, f64)>, scale: Scale) -> Chart {
        let axis = |l: &str| Axis {
            label: l.into(),
            scale,
            ticks: Ticks::Numbers,
            range: None,
        };
        Chart::new(axis("working set").bytes(), axis("ns per load"))
            .series(Series::new("thp off", points))
    }

    #[test]
    fn a_chart_has_one_circle_per_point() {
        let svg = chart(vec![(4096.0, 1.2), (65536.0, 4.0), (1e8, 90.0)], Scale::Log)
            .to_svg()
            .unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..60]);
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("thp off"));
    }

    #[test]
    fn nothing_drawable_is_an_error() {
        let e = chart(vec![], Scale::Linear).to_svg().unwrap_err();
        assert!(e.to_string().contains("no points to plot"), "{e}");
        // zero and negative values cannot sit on a log axis
        assert!(chart(vec![(0.0, 1.0), (1.0, -1.0)], Scale::Log)
            .to_svg()
            .is_err());
        let one = chart(vec![(2.0, 5.0)], Scale::Linear).to_svg().unwrap();
        assert_eq!(one.matches("<circle").count(), 1);
    }

    #[test]
    fn error_bars_titles_lines_and_clipping() {
        let c = Chart::new(Axis::linear("m"), Axis::linear("cps").range(0.0, 100.0))
            .title("capacity <m>")
            .series(Series::from_points(
                "takt",
                vec![
                    Point::new(1.0, 50.0).error(40.0, 60.0),
                    Point::new(2.0, 500.0),
                ],
            ))
            .series(Series::new("paper", [(1.0, 30.0), (2.0, 35.0)]).dashed())
            .horizontal("threshold", 10.0)
            .vertical("outside", 50.0)
            .size(960, 600);
        let svg = c.to_svg().unwrap();
        assert!(svg.contains("width=\"960\""), "{}", &svg[..120]);
        assert_eq!(svg.matches("<circle").count(), 4);
        assert!(svg.contains("capacity &lt;m&gt;"), "the title, escaped");
        for label in ["takt", "paper", "threshold", "outside"] {
            assert!(svg.contains(label), "legend {label}");
        }
        // a long label sends the legend below the plot; still drawn
        let long = chart(vec![(1.0, 1.0), (2.0, 3.0)], Scale::Linear)
            .series(Series::new("x".repeat(120), [(1.0, 2.0)]));
        assert!(long.to_svg().unwrap().contains(&"x".repeat(120)));
    }

    #[test]
    fn ticks_say_what_the_axis_counts() {
        let bytes = Axis::log("b").bytes();
        assert_eq!(tick_format(&bytes, false)(&4096.0), "4K");
        assert_eq!(tick_format(&bytes, false)(&5000.0), "");
        assert_eq!(
            tick_format(&Axis::linear("b").bytes(), false)(&5000.0),
            "4K"
        );
        let log = Axis::log("y");
        assert_eq!(tick_format(&log, false)(&200.0), "200");
        assert_eq!(tick_format(&log, false)(&300.0), "");
        let lin = Axis::linear("m");
        assert_eq!(tick_format(&lin, true)(&3.0), "3");
        assert_eq!(tick_format(&lin, true)(&3.5), "");
        assert_eq!(tick_format(&lin, false)(&3.5), "3.50");
        assert_eq!(tick_format(&lin, false)(&0.0), "0");
        assert_eq!(tick_format(&lin, false)(&5000.0), "5000");
        let names = Axis::linear("p").names(vec!["a".into(), "b".into()]);
        assert_eq!(tick_format(&names, true)(&2.0), "b");
        assert_eq!(tick_format(&names, true)(&3.0), "");
        assert_eq!(human_bytes(3.0 * 1024.0 * 1024.0 * 1024.0), "3G");
    }

    /// A log axis of thread counts is labelled at the counts; one of many
    /// values or of fractions keeps the decade ticks.
    #[test]
    fn a_log_axis_of_few_counts_is_labelled_at_them() {
        let threads = Chart::new(Axis::log("worker threads m"), Axis::linear("cps")).series(
            Series::new("default", [(2.0, 10.0), (4.0, 12.0), (16.0, 11.0)]),
        );
        assert_eq!(threads.x_keys(), Some(vec![2.0, 4.0, 16.0]));
        let svg = threads.to_svg().unwrap();
        for label in ["2", "4", "16"] {
            assert!(
                svg.contains(&format!(">\n{label}\n</text>")),
                "no tick {label}: {svg}"
            );
        }
        let many = Chart::new(Axis::log("n"), Axis::log("t"))
            .series(Series::new("s", (1..=20).map(|i| (f64::from(i), 1.0))));
        assert_eq!(many.x_keys(), None);
        let fractions = Chart::new(Axis::log("n"), Axis::linear("t"))
            .series(Series::new("s", [(0.5, 1.0), (2.0, 2.0)]));
        assert_eq!(fractions.x_keys(), None);
        assert!(many.to_svg().is_ok() && fractions.to_svg().is_ok());
    }

    /// The SVG's `width` and `height` attributes.
    fn svg_size(svg: &str) -> (u32, u32) {
        let attr = |name: &str| -> u32 {
            let at = svg.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
            svg[at..at + svg[at..].find('"').unwrap()].parse().unwrap()
        };
        (attr("width"), attr("height"))
    }

    /// Charts with short and long labels, few and many entries, with and
    /// without a title: the legend's box never meets the plot's, both lie
    /// inside the SVG, every entry has its row, and the SVG drawn is the
    /// size the layout says.
    #[test]
    fn the_legend_stays_outside_the_plot() {
        let line = |label: String, k: f64| Series::new(label, [(1.0, k), (2.0, k + 1.0)]);
        let mut cases = Vec::new();
        for (n, label_len, titled) in [
            (1, 6, false),
            (4, 12, true),
            (30, 10, false),
            (3, 60, false),
            (24, 35, true),
            (2, 200, false),
        ] {
            let mut c = Chart::new(Axis::linear("m"), Axis::linear("cps"));
            if titled {
                c = c.title("capacity");
            }
            for i in 0..n {
                let label = format!("{i:02}{}", "x".repeat(label_len - 2));
                c = c.series(line(label, i as f64));
            }
            cases.push(c.horizontal("1% line", 1.5));
        }
        for c in &cases {
            let l = c.layout();
            let entries = c.series.len() + c.lines.len();
            let legend = l.legend.expect("a chart with series has a legend");
            let svg = Rect {
                x: 0,
                y: 0,
                w: l.svg.0,
                h: l.svg.1,
            };
            assert!(!legend.intersects(&l.plot), "{l:?}");
            assert!(svg.contains(&legend) && svg.contains(&l.plot), "{l:?}");
            // rows of ROW px each, within the legend's box
            let rows = entries.div_ceil(l.legend_columns as usize) as u32;
            assert!(
                rows * ROW as u32 + 2 * LEGEND_PAD <= legend.h,
                "{entries} entries in {l:?}"
            );
            // the plot keeps the chart's size less the title, the legend
            // takes a third of the width at most or goes below
            assert_eq!(
                l.plot.h,
                c.size.1 - if c.title.is_some() { TITLE_BAND } else { 0 }
            );
            if l.legend_columns == 1 && legend.y < l.plot.y + l.plot.h {
                assert!(
                    f64::from(legend.w) <= f64::from(c.size.0) * LEGEND_MAX_SHARE,
                    "{l:?}"
                );
                assert_eq!(legend.x, l.plot.x + l.plot.w);
            } else {
                assert_eq!(legend.y, l.plot.y + l.plot.h, "below the plot: {l:?}");
                assert_eq!(l.plot.w, c.size.0);
            }
            let svg_text = c.to_svg().unwrap();
            assert_eq!(svg_size(&svg_text), l.svg);
            assert_eq!(svg_text.matches("<circle").count(), 2 * c.series.len());
        }
        // 30 short entries: a column at the right, the SVG taller than the
        // chart's 400 px to hold them
        let tall = cases[2].layout();
        assert_eq!(tall.legend_columns, 1);
        assert!(tall.svg.1 > DEFAULT_SIZE.1, "{tall:?}");
        // 24 long labels: below the plot, in more than one column
        let below = cases[4].layout();
        assert!(
            below.legend_columns > 1 && below.svg.1 > DEFAULT_SIZE.1,
            "{below:?}"
        );
        // a chart without series has no legend and its own size
        let bare = Chart::new(Axis::linear("m"), Axis::linear("cps")).layout();
        assert_eq!((bare.legend, bare.svg), (None, DEFAULT_SIZE));
    }
}
