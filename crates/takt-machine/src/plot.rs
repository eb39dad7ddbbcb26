//! SVG plots of the curves, drawn with [`takt_measure::chart`]: the
//! memory latency curve (log-log, with the sysfs cache sizes as vertical
//! lines, as the report's Figure 3), the contention curve (readers
//! against µs per block) and the file-cache sweep.

use std::path::PathBuf;

use takt_measure::chart::{self, human_bytes, Axis, Chart};
use takt_measure::error::MeasureError;

use crate::{Ctx, Series};

/// The size the plots are drawn at, px.
const SIZE: (u32, u32) = (960, 600);

fn chart(title: &str, x: Axis, y: Axis, series: &[Series]) -> Chart {
    series.iter().fold(
        Chart::new(x, y).title(title).size(SIZE.0, SIZE.1),
        |c, s| {
            c.series(chart::Series::new(
                s.label.clone(),
                s.points.iter().copied(),
            ))
        },
    )
}

/// The charts there is data for, each with its file name.
pub(crate) fn charts(ctx: &Ctx) -> Vec<(&'static str, Chart)> {
    let mut out = Vec::new();
    if !ctx.latency_series.is_empty() {
        let lines = ctx
            .desc
            .caches
            .iter()
            .filter(|c| c.holds_data() && c.size_bytes > 0)
            .map(|c| {
                let size = c.size_bytes as f64;
                (format!("sysfs L{} {}", c.level, human_bytes(size)), size)
            });
        let c = lines.fold(
            chart(
                "Memory latency: random pointer chase",
                Axis::log("working set").bytes(),
                Axis::log("ns per dependent load"),
                &ctx.latency_series,
            ),
            |c, (label, x)| c.vertical(label, x),
        );
        out.push(("latency.svg", c));
    }
    if !ctx.contention_series.is_empty() {
        out.push((
            "contention.svg",
            chart(
                "File read contention: O_DIRECT 4 KiB, N readers",
                Axis::linear("concurrent readers"),
                Axis::linear("us per block"),
                &ctx.contention_series,
            ),
        ));
    }
    if !ctx.filecache_series.is_empty() {
        out.push((
            "filecache.svg",
            chart(
                "File cache: sequential re-read time by file size",
                Axis::linear("file size (MiB)"),
                Axis::linear("ns per 4 KiB block"),
                &ctx.filecache_series,
            ),
        ));
    }
    out
}

/// Writes every plot there is data for into the output directory; one
/// result per file.
pub(crate) fn write_all(ctx: &Ctx) -> Vec<Result<PathBuf, MeasureError>> {
    charts(ctx)
        .into_iter()
        .map(|(name, c)| {
            let path = ctx.cfg.out_dir.join(name);
            c.write_svg(&path).map(|()| path)
        })
        .collect()
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
        chart("t", Axis::log("x").bytes(), Axis::log("y"), &s)
            .vertical("L1", 49152.0)
            .write_svg(&path)
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("<svg"), "{}", &text[..50.min(text.len())]);
        assert!(text.contains("curve"));
        assert_eq!(text.matches("<circle").count(), 3);
        chart("t", Axis::linear("x"), Axis::linear("y"), &s)
            .write_svg(&path)
            .unwrap();
        assert!(chart("t", Axis::linear("x"), Axis::linear("y"), &[])
            .write_svg(&path)
            .is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
