//! SVG plots of the curves: the memory latency curve (log-log, with the
//! sysfs cache sizes as vertical lines, as the report's Figure 3), the
//! contention curve (readers against µs per block) and the file-cache sweep.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::{Ctx, Series};

fn human(bytes: f64) -> String {
    let b = bytes as u64;
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

fn bounds(series: &[Series]) -> Option<(f64, f64, f64, f64)> {
    let pts = series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|p| p.0.is_finite() && p.1.is_finite());
    let mut b: Option<(f64, f64, f64, f64)> = None;
    for &(x, y) in pts {
        b = Some(match b {
            None => (x, x, y, y),
            Some((x0, x1, y0, y1)) => (x0.min(x), x1.max(x), y0.min(y), y1.max(y)),
        });
    }
    b
}

/// Draws `series` into `path`; `log` makes both axes logarithmic;
/// `vlines` are labelled vertical markers.
#[allow(clippy::too_many_arguments)]
pub fn line_chart(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    log: bool,
    vlines: &[(f64, String)],
    bytes_axis: bool,
) -> Result<(), String> {
    let (x0, x1, y0, y1) = bounds(series).ok_or("no points to plot")?;
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let palette = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];
    let x_fmt = move |v: &f64| {
        if bytes_axis {
            human(*v)
        } else {
            format!("{v:.0}")
        }
    };
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc(y_desc)
                .x_label_formatter(&x_fmt)
                .draw()
                .map_err(|e| err(&e))?;
            for (x, label) in vlines {
                chart
                    .draw_series(LineSeries::new(
                        vec![(*x, y0.max(1e-9) * 0.9), (*x, y1 * 1.1)],
                        ShapeStyle::from(&RGBColor(150, 150, 150)).stroke_width(1),
                    ))
                    .map_err(|e| err(&e))?
                    .label(label.clone())
                    .legend(|(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], RGBColor(150, 150, 150))
                    });
            }
            for (i, s) in series.iter().enumerate() {
                let c = palette[i % palette.len()];
                chart
                    .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))
                    .map_err(|e| err(&e))?
                    .label(s.label.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                    });
                chart
                    .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))
                    .map_err(|e| err(&e))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(|e| err(&e))?;
        }};
    }
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72);
    if log {
        let c = builder
            .build_cartesian_2d(
                (x0 * 0.9..x1 * 1.1).log_scale(),
                (y0.max(1e-9) * 0.8..y1 * 1.25).log_scale(),
            )
            .map_err(|e| err(&e))?;
        draw!(c);
    } else {
        let pad = (x1 - x0).max(1.0) * 0.05;
        let c = builder
            .build_cartesian_2d(x0 - pad..x1 + pad, 0f64..y1 * 1.15)
            .map_err(|e| err(&e))?;
        draw!(c);
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// Writes every plot there is data for; one result per file.
pub(crate) fn write_all(ctx: &Ctx) -> Vec<Result<PathBuf, String>> {
    let dir = &ctx.cfg.out_dir;
    let mut out = Vec::new();
    if !ctx.latency_series.is_empty() {
        let path = dir.join("latency.svg");
        let vlines: Vec<(f64, String)> = ctx
            .desc
            .caches
            .iter()
            .filter(|c| c.holds_data() && c.size_bytes > 0)
            .map(|c| {
                (
                    c.size_bytes as f64,
                    format!("sysfs L{} {}", c.level, human(c.size_bytes as f64)),
                )
            })
            .collect();
        out.push(
            line_chart(
                &path,
                "Memory latency: random pointer chase",
                "working set",
                "ns per dependent load",
                &ctx.latency_series,
                true,
                &vlines,
                true,
            )
            .map(|_| path),
        );
    }
    if !ctx.contention_series.is_empty() {
        let path = dir.join("contention.svg");
        out.push(
            line_chart(
                &path,
                "File read contention: O_DIRECT 4 KiB, N readers",
                "concurrent readers",
                "us per block",
                &ctx.contention_series,
                false,
                &[],
                false,
            )
            .map(|_| path),
        );
    }
    if !ctx.filecache_series.is_empty() {
        let path = dir.join("filecache.svg");
        out.push(
            line_chart(
                &path,
                "File cache: sequential re-read time by file size",
                "file size (MiB)",
                "ns per 4 KiB block",
                &ctx.filecache_series,
                false,
                &[],
                false,
            )
            .map(|_| path),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_an_svg() {
        let dir = std::env::temp_dir().join(format!("takt-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.svg");
        let s = vec![Series {
            label: "curve".into(),
            points: vec![(1024.0, 1.1), (65536.0, 3.8), (1048576.0, 15.0)],
        }];
        line_chart(
            &path,
            "t",
            "x",
            "y",
            &s,
            true,
            &[(49152.0, "L1".into())],
            true,
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("<svg"), "{}", &text[..50.min(text.len())]);
        assert!(text.contains("curve"));
        line_chart(&path, "t", "x", "y", &s, false, &[], false).unwrap();
        assert!(line_chart(&path, "t", "x", "y", &[], false, &[], false).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
