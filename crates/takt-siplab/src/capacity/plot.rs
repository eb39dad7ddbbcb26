//! An SVG plot of a capacity run: drop rate against offered call rate,
//! one line per searched case, with the threshold drawn across — the
//! picture behind each capacity row.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use takt_measure::chart::{Axis, Chart, Series};
use takt_measure::result::Document;

use crate::error::{Error, Result};

/// One case's curve: (offered cps, drop rate) ascending, the mean over the
/// counted trials at each rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// `takt stateful`, `null-relay`, …
    pub label: String,
    /// Points, ascending in rate.
    pub points: Vec<(f64, f64)>,
}

/// The curves of a `sip_capacity` document: from each `capacity` row's
/// `detail.trial_records`, every trial not re-run for a generator flag,
/// averaged per rate. Cases without a capacity row (an interrupted search)
/// have no curve.
pub fn curves(doc: &Document) -> Vec<Curve> {
    let mut out = Vec::new();
    for r in doc.results.iter().filter(|r| r.name == "capacity") {
        let Some(trials) = r.detail.get("trial_records").and_then(Value::as_array) else {
            continue;
        };
        let mut at: BTreeMap<u64, (f64, usize)> = BTreeMap::new();
        for t in trials {
            if t.get("rerun").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            let (Some(rate), Some(o)) =
                (t.get("rate_cps").and_then(Value::as_f64), t.get("outcome"))
            else {
                continue;
            };
            let n = |k: &str| o.get(k).and_then(Value::as_f64).unwrap_or(0.0);
            let (sent, lost) = (n("sent"), n("lost"));
            if sent <= 0.0 {
                continue;
            }
            let e = at.entry(rate.to_bits()).or_insert((0.0, 0));
            e.0 += lost / sent;
            e.1 += 1;
        }
        let mut points: Vec<(f64, f64)> = at
            .into_iter()
            .map(|(bits, (sum, n))| (f64::from_bits(bits), sum / n as f64))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let label = match r.params.get("mode").and_then(Value::as_str) {
            Some(m) if m != "none" => format!("{} {m}", r.implementation),
            _ => r.implementation.clone(),
        };
        if !points.is_empty() {
            out.push(Curve { label, points });
        }
    }
    out
}

/// Draws [`curves`] of `doc` into the SVG file `path`, the drop rate in
/// percent (clipped at 4 × the threshold, so the crossing stays readable)
/// against offered calls/s on a logarithmic axis (the ramp doubles the
/// rate), the threshold as a grey reference line; an error when there is
/// no point to draw.
pub fn drop_rate_svg(doc: &Document, threshold: f64, path: &Path) -> Result<()> {
    let curves = curves(doc);
    if curves.is_empty() {
        return Err(Error::Config("no capacity points to plot".into()));
    }
    let top = 400.0 * threshold;
    let mut chart = Chart::new(
        Axis::log("offered calls/s"),
        Axis::linear("drop rate, % of messages sent to the server").range(0.0, top),
    )
    .title("drop rate against offered call rate")
    .size(960, 600)
    .horizontal(
        format!("threshold {:.1}%", threshold * 100.0),
        threshold * 100.0,
    );
    for c in &curves {
        chart = chart.series(Series::new(
            c.label.clone(),
            c.points.iter().map(|&(x, y)| (x, (y * 100.0).min(top))),
        ));
    }
    Ok(chart.write_svg(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};
    use takt_measure::result::{Better, DocumentBuilder, ResultRow};

    fn doc() -> Document {
        let mut b = DocumentBuilder::start("sip_capacity");
        let mut params = Map::new();
        params.insert("mode".into(), json!("stateful"));
        let mut d = Map::new();
        let t = |rate: f64, lost: u64, rerun: bool| {
            json!({"phase": "grid", "rate_cps": rate, "rerun": rerun,
                   "outcome": {"sent": 1000, "lost": lost}})
        };
        d.insert(
            "trial_records".into(),
            json!([
                t(1000.0, 0, false),
                t(2000.0, 30, false),
                t(2000.0, 10, false),
                t(2000.0, 999, true),
                t(1500.0, 5, false)
            ]),
        );
        b.push(
            ResultRow::new(
                "capacity",
                "takt",
                params,
                "cps",
                Better::Higher,
                vec![1500.0],
                0.0,
            )
            .with_detail(d),
        );
        b.finish()
    }

    #[test]
    fn curves_average_counted_trials_per_rate() {
        let c = curves(&doc());
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].label, "takt stateful");
        // the re-run trial is left out; 2,000 cps is the mean of 3% and 1%
        assert_eq!(
            c[0].points,
            vec![(1000.0, 0.0), (1500.0, 0.005), (2000.0, 0.02)]
        );
    }

    #[test]
    fn the_plot_is_an_svg_file() {
        let path =
            std::env::temp_dir().join(format!("takt-siplab-plot-{}.svg", std::process::id()));
        drop_rate_svg(&doc(), 0.01, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("takt stateful"),
            "{svg:.200}"
        );
        let empty = DocumentBuilder::start("sip_capacity").finish();
        assert!(drop_rate_svg(&empty, 0.01, &path).is_err());
    }
}
