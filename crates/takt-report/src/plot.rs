//! Line charts described by their axes' labels and scales, drawn with
//! takt-measure's one chart model ([`takt_measure::chart`]).
//!
//! The report's sections draw with [`takt_measure::chart`] directly; this
//! module keeps the shape other callers (the sweep's plots) describe their
//! charts in, and hands the drawing to the same model, so every chart of
//! takt looks alike. New code should use [`takt_measure::chart`].

use takt_measure::chart::{self, Axis};

pub use takt_measure::chart::human_bytes;

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
    /// Linear.
    Linear,
    /// Logarithmic; only values > 0 are drawn.
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

fn axis(label: &str, scale: Scale) -> Axis {
    match scale {
        Scale::Linear => Axis::linear(label),
        Scale::Log => Axis::log(label),
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

    /// The chart in takt-measure's model.
    pub fn to_chart(&self) -> chart::Chart {
        let mut x = axis(self.x_desc, self.x_scale);
        if self.x_bytes {
            x = x.bytes();
        }
        if !self.x_names.is_empty() {
            x = x.names(self.x_names.clone());
        }
        let mut c = chart::Chart::new(x, axis(self.y_desc, self.y_scale));
        for s in &self.series {
            let mut series = chart::Series::new(s.label.clone(), s.points.iter().copied());
            if s.dashed {
                series = series.dashed();
            }
            c = c.series(series);
        }
        c
    }

    /// The chart as an SVG element (no XML prolog), or `None` when no
    /// series has a point the axes can show.
    pub fn to_svg(&self) -> Option<String> {
        self.to_chart().to_svg().ok()
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
