//! The machine section: the memory latency curve and the CSE 221 table
//! with each quantity's estimate from documented hardware figures.

use serde::Deserialize;
use serde_json::Value;
use takt_measure::result::Document;

use crate::html::{esc, figure, num, Cell, CellTable};
use crate::provenance::{how, params_text, stat_cells, STAT_HEAD};
use takt_measure::chart::{Axis, Chart, Series};

/// One point of the machine document's `latency_curve`.
#[derive(Deserialize)]
struct CurvePoint {
    bytes: u64,
    ns: f64,
    thp: bool,
}

/// A measurement the suite did not take (`skipped`).
#[derive(Deserialize)]
struct Skipped {
    name: String,
    reason: String,
}

const METHOD: &str = "the CSE 221 suite: each quantity timed with the TSC around many back-to-back operations per sample, \
    far-out outliers (Tukey, 3 IQR) dropped and counted; the estimate is the figure predicted from documented hardware \
    costs at the measured clock (its model is given per row)";

pub(crate) fn render(value: &Value, doc: &Document, command: &str) -> String {
    let mut out = String::new();
    let curve: Vec<CurvePoint> = value
        .get("latency_curve")
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    let series: Vec<Series> = [false, true]
        .into_iter()
        .map(|thp| {
            Series::new(
                if thp {
                    "huge pages (THP advised)"
                } else {
                    "4 KiB pages"
                },
                curve
                    .iter()
                    .filter(|p| p.thp == thp)
                    .map(|p| (p.bytes as f64, p.ns)),
            )
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    out.push_str("<h3>Memory latency</h3>\n");
    let chart = Chart {
        series,
        ..Chart::new(
            Axis::log("working set (bytes)").bytes(),
            Axis::log("ns per dependent load"),
        )
    };
    match chart.to_svg().ok() {
        Some(svg) => out.push_str(&figure(
            &svg,
            "Random pointer chase, one dependent load per cache line: each plateau is a cache level, \
             the last one main memory. Both page sizes; log–log.",
        )),
        None => out.push_str(
            "<p class=\"missing\"><strong>Not measured:</strong> the document has no latency curve \
             (the <code>latency</code> family was not run).</p>\n",
        ),
    }

    out.push_str("<h3>The CSE 221 quantities</h3>\n");
    let mut head = vec![
        "quantity",
        "parameters",
        "median",
        "unit",
        "estimate",
        "measured / estimate",
        "CSE 221 (published)",
        "measured / published",
    ];
    head.extend(STAT_HEAD);
    let mut t = CellTable::new(head);
    let mut methods: Vec<(String, String)> = Vec::new();
    for r in &doc.results {
        let estimate = r.detail.get("estimate").and_then(Value::as_f64);
        let model = r
            .detail
            .get("estimate_model")
            .and_then(Value::as_str)
            .unwrap_or("");
        let method = r.detail.get("method").and_then(Value::as_str).unwrap_or("");
        if !method.is_empty() && !methods.iter().any(|(n, _)| n == &r.name) {
            methods.push((r.name.clone(), method.to_string()));
        }
        let mut cells = vec![
            Cell::Html(format!(
                "<span title=\"{}\">{}</span>",
                esc(method),
                esc(&r.name)
            )),
            Cell::text(params_text(r)),
            crate::provenance::median_cell(r),
            Cell::text(&r.unit),
            match estimate {
                Some(e) => Cell::Html(format!(
                    "<span title=\"{}\">{}</span>",
                    esc(model),
                    esc(&num(e))
                )),
                None => Cell::Empty,
            },
            Cell::opt(
                estimate
                    .filter(|e| *e > 0.0)
                    .and_then(|e| Some(r.median()? / e)),
            ),
            Cell::opt(r.published),
            // the published figure is converted to the row's unit
            Cell::opt(
                r.published
                    .filter(|p| *p != 0.0 && p.is_finite())
                    .and_then(|p| Some(r.median()? / p)),
            ),
        ];
        cells.extend(stat_cells(r));
        t.row(cells);
    }
    out.push_str(&t.render());
    if !methods.is_empty() {
        out.push_str(
            "<details><summary>How each quantity is measured</summary><dl class=\"meta\">\n",
        );
        for (name, method) in &methods {
            out.push_str(&format!("<dt>{}</dt><dd>{}</dd>\n", esc(name), esc(method)));
        }
        out.push_str("</dl></details>\n");
    }
    out.push_str(
        "<p>Hover an estimate for the hardware model behind it. A ratio near 1 means the machine behaves as \
         documented; far above 1 points at virtualization, mitigations or contention. <i>CSE 221 \
         (published)</i> is the CSE 221 report's figure for the same quantity on its own machine, converted \
         to the row's unit: distance travelled since, not a same-machine comparison.</p>\n",
    );
    let skipped: Vec<Skipped> = value
        .get("skipped")
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    if !skipped.is_empty() {
        out.push_str("<p>Not measured in this run:</p><ul>\n");
        for s in &skipped {
            out.push_str(&format!(
                "<li><b>{}</b>: {}</li>\n",
                esc(&s.name),
                esc(&s.reason)
            ));
        }
        out.push_str("</ul>\n");
    }
    out.push_str(&how(doc, command, METHOD));
    out
}
