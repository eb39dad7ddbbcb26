//! Inline SVG line charts (plotters' SVG backend, rendered to a string).
//!
//! Every point is drawn as a circle on top of its line, so a chart with
//! data always contains `<circle>` elements; a chart without finite points
//! is not drawn at all (the caller says why instead).

use plotters::coord::Shift;
use plotters::prelude::*;

/// One named curve.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// (x, y) points, in x order.
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed and lighter: a model's prediction, a published figure.
    pub dashed: bool,
}

/// Axis scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Linear from the data's minimum (or 0) to its maximum.
    Linear,
    /// Logarithmic (base 10 ticks); every value must be > 0.
    Log,
}

/// A chart to draw.
#[derive(Clone, Debug)]
pub struct Chart<'a> {
    /// X axis label with its unit.
    pub x_desc: &'a str,
    /// Y axis label with its unit.
    pub y_desc: &'a str,
    /// X scale.
    pub x_scale: Scale,
    /// Y scale.
    pub y_scale: Scale,
    /// X tick labels as byte sizes (`4K`, `16M`).
    pub x_bytes: bool,
    /// Categorical x axis: point `x = i` (1-based) is labelled `x_names[i - 1]`;
    /// other ticks are blank.
    pub x_names: Vec<String>,
    /// The curves.
    pub series: Vec<Series>,
}

const WIDTH: u32 = 720;
const HEIGHT: u32 = 400;
/// Colour-blind-safe palette (Okabe–Ito).
const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(230, 159, 0),
    RGBColor(0, 0, 0),
];

/// `4096` -> `4K`.
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

impl<'a> Chart<'a> {
    /// A chart of `series` with numeric x ticks (neither byte sizes nor
    /// names).
    pub fn new(
        x_desc: &'a str,
        y_desc: &'a str,
        x_scale: Scale,
        y_scale: Scale,
        series: Vec<Series>,
    ) -> Self {
        Chart {
            x_desc,
            y_desc,
            x_scale,
            y_scale,
            x_bytes: false,
            x_names: Vec::new(),
            series,
        }
    }

    fn usable(&self, p: &(f64, f64)) -> bool {
        p.0.is_finite()
            && p.1.is_finite()
            && (self.x_scale == Scale::Linear || p.0 > 0.0)
            && (self.y_scale == Scale::Linear || p.1 > 0.0)
    }

    fn bounds(&self) -> Option<(f64, f64, f64, f64)> {
        let mut b: Option<(f64, f64, f64, f64)> = None;
        for &(x, y) in self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| self.usable(p))
        {
            b = Some(match b {
                None => (x, x, y, y),
                Some((x0, x1, y0, y1)) => (x0.min(x), x1.max(x), y0.min(y), y1.max(y)),
            });
        }
        b
    }

    /// The chart as an SVG document, or `None` when no series has a point
    /// that can be drawn on these scales.
    pub fn to_svg(&self) -> Option<String> {
        let (x0, x1, y0, y1) = self.bounds()?;
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
            // Drawing into a String cannot fail for I/O; a plotters error
            // here is a layout bug, and the chart is left out.
            self.draw(&root, x0, x1, y0, y1).ok()?;
            root.present().ok()?;
        }
        Some(svg)
    }

    fn draw(
        &self,
        root: &DrawingArea<SVGBackend<'_>, Shift>,
        x0: f64,
        x1: f64,
        y0: f64,
        y1: f64,
    ) -> Result<(), Box<dyn std::error::Error + '_>> {
        root.fill(&WHITE)?;
        let pad = |lo: f64, hi: f64, scale: Scale| -> (f64, f64) {
            match scale {
                Scale::Log => {
                    let (lo, hi) = if hi > lo {
                        (lo, hi)
                    } else {
                        (lo / 2.0, hi * 2.0)
                    };
                    (lo / 1.25, hi * 1.25)
                }
                Scale::Linear => {
                    let lo = if lo >= 0.0 { 0.0 } else { lo };
                    let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
                    (lo, hi + 0.08 * span)
                }
            }
        };
        // The x axis starts at the data, not at 0 (thread counts start at 1).
        let (xa, xb) = match self.x_scale {
            Scale::Log => pad(x0, x1, Scale::Log),
            Scale::Linear => {
                let span = if x1 > x0 { x1 - x0 } else { 1.0 };
                (x0 - 0.05 * span, x1 + 0.05 * span)
            }
        };
        // Integer data (thread counts, categories) gets integer ticks only.
        let x_integer = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .all(|p| p.0.fract() == 0.0);
        let (ya, yb) = pad(y0, y1, self.y_scale);
        let x_bytes = self.x_bytes;
        let x_log = self.x_scale == Scale::Log;
        let names = &self.x_names;
        let x_fmt = move |v: &f64| {
            if x_bytes {
                human_bytes(*v)
            } else if x_log {
                // Decades and their 2× and 5× only: plotters puts a tick on
                // every integer multiple, far too many to label.
                let mantissa = *v / 10f64.powf(v.log10().floor());
                if [1.0, 2.0, 5.0].iter().any(|m| (mantissa - m).abs() < 1e-6) {
                    crate::html::num(*v)
                } else {
                    String::new()
                }
            } else if !names.is_empty() || x_integer {
                if (v - v.round()).abs() > 1e-9 {
                    return String::new();
                }
                let i = v.round() as i64;
                if names.is_empty() {
                    return i.to_string();
                }
                usize::try_from(i - 1)
                    .ok()
                    .and_then(|i| names.get(i))
                    .cloned()
                    .unwrap_or_default()
            } else {
                crate::html::num(*v)
            }
        };
        let y_fmt = |v: &f64| crate::html::num(*v);
        macro_rules! body {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(self.x_desc)
                    .y_desc(self.y_desc)
                    .x_labels(12)
                    .y_labels(8)
                    .x_label_formatter(&x_fmt)
                    .y_label_formatter(&y_fmt)
                    .light_line_style(RGBColor(235, 235, 235))
                    .bold_line_style(RGBColor(215, 215, 215))
                    .label_style(("sans-serif", 13))
                    .draw()?;
                for (i, s) in self.series.iter().enumerate() {
                    let colour = PALETTE[i % PALETTE.len()];
                    let pts: Vec<(f64, f64)> = s
                        .points
                        .iter()
                        .copied()
                        .filter(|p| self.usable(p))
                        .collect();
                    let line = if s.dashed {
                        ShapeStyle::from(&colour.mix(0.6)).stroke_width(2)
                    } else {
                        ShapeStyle::from(&colour).stroke_width(2)
                    };
                    let legend = chart.draw_series(LineSeries::new(pts.clone(), line))?;
                    legend.label(s.label.as_str()).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
                    });
                    let marker = if s.dashed {
                        ShapeStyle::from(&colour.mix(0.6)).stroke_width(1)
                    } else {
                        ShapeStyle::from(&colour).filled()
                    };
                    chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, marker)))?;
                }
                chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::UpperLeft)
                    .background_style(WHITE.mix(0.85))
                    .border_style(RGBColor(200, 200, 200))
                    .label_font(("sans-serif", 13))
                    .draw()?;
            }};
        }
        let mut builder = ChartBuilder::on(root);
        builder
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64);
        match (self.x_scale, self.y_scale) {
            (Scale::Linear, Scale::Linear) => {
                body!(builder.build_cartesian_2d(xa..xb, ya..yb)?)
            }
            (Scale::Log, Scale::Linear) => {
                body!(builder.build_cartesian_2d((xa..xb).log_scale(), ya..yb)?)
            }
            (Scale::Linear, Scale::Log) => {
                body!(builder.build_cartesian_2d(xa..xb, (ya..yb).log_scale())?)
            }
            (Scale::Log, Scale::Log) => {
                body!(builder.build_cartesian_2d((xa..xb).log_scale(), (ya..yb).log_scale())?)
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(points: Vec<(f64, f64)>, scale: Scale) -> Chart<'static> {
        Chart {
            x_desc: "working set",
            y_desc: "ns per load",
            x_scale: scale,
            y_scale: scale,
            x_bytes: true,
            x_names: Vec::new(),
            series: vec![Series {
                label: "thp off".into(),
                points,
                dashed: false,
            }],
        }
    }

    #[test]
    fn a_chart_has_one_circle_per_point() {
        let svg = chart(vec![(4096.0, 1.2), (65536.0, 4.0), (1e8, 90.0)], Scale::Log)
            .to_svg()
            .unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..60]);
        assert_eq!(svg.matches("<circle").count(), 3);
    }

    #[test]
    fn nothing_drawable_is_no_chart() {
        assert!(chart(vec![], Scale::Linear).to_svg().is_none());
        // zero and negative values cannot sit on a log axis
        assert!(chart(vec![(0.0, 1.0), (1.0, -1.0)], Scale::Log)
            .to_svg()
            .is_none());
        let one = chart(vec![(2.0, 5.0)], Scale::Linear).to_svg().unwrap();
        assert_eq!(one.matches("<circle").count(), 1);
    }
}
