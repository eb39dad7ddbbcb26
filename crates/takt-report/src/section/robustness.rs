//! The SIP robustness section, from a `takt sip torture` document
//! (suite `sip_torture`): overload and fault scenarios per target, takt
//! beside Kamailio.
//!
//! The renderer reads the document loosely, so rows it does not know
//! still show:
//! - every row goes into one side-by-side table: a line per (row name,
//!   parameters other than the target, unit), a column per target
//!   (`impl`), so takt-sip and Kamailio read across;
//! - `goodput` rows with an `offered` parameter (the offered load as a
//!   multiple of the target's 1%-drop capacity: 1.5, 2) and unit `ratio`
//!   (completed calls/s over the capacity) are drawn against the offered
//!   load, with the goodput targets (≥ 0.9 at 1.5×, ≥ 0.8 at 2×);
//! - `recovery_s` rows (seconds until the drop rate is back to 0) are
//!   checked against 5 s.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use takt_measure::result::{Document, ResultRow};

use crate::html::{figure, Cell, CellTable};
use crate::provenance::{how, param_f64};
use takt_measure::chart::{Axis, Chart, Series};

const METHOD: &str = "takt's native generator offers calls above the target's measured 1%-drop capacity \
    (where the generator cannot, the target's CPU is limited with CFS bandwidth control and its capacity \
    measured under the same limit), then drops back to half of it; fault scenarios restart the UAS, send \
    garbage and malformed requests, and hold idle TCP connections while calls go on";

/// The goodput targets at each offered load (multiple of capacity).
const GOODPUT_TARGETS: [(f64, f64); 2] = [(1.5, 0.9), (2.0, 0.8)];

/// Seconds the drop rate may take to return to 0 once the load falls.
const RECOVERY_TARGET_S: f64 = 5.0;

/// The parameters of `r` other than the target, as `key=value` text.
fn scenario(params: &Map<String, Value>) -> String {
    params
        .iter()
        .filter(|(k, _)| *k != "target")
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One table with a line per (name, scenario, unit) and a column per
/// implementation (target), cells median ± half the 95% interval.
pub(crate) fn side_by_side(rows: &[&ResultRow]) -> CellTable {
    let mut targets: Vec<&str> = Vec::new();
    let mut lines: BTreeMap<(String, String, String), BTreeMap<&str, &ResultRow>> = BTreeMap::new();
    for r in rows {
        if !targets.contains(&r.implementation.as_str()) {
            targets.push(&r.implementation);
        }
        lines
            .entry((r.name.clone(), scenario(&r.params), r.unit.clone()))
            .or_default()
            .insert(&r.implementation, r);
    }
    let mut head = vec!["quantity".to_string(), "scenario".into(), "unit".into()];
    head.extend(targets.iter().map(|t| t.to_string()));
    head.push("runs".into());
    let mut t = CellTable::new(head);
    for ((name, sc, unit), by) in &lines {
        let mut cells = vec![Cell::text(name), Cell::text(sc), Cell::text(unit)];
        cells.extend(targets.iter().map(|tg| match by.get(tg) {
            Some(r) if crate::provenance::runs(r) > 1 => crate::provenance::median_ci_cell(r),
            Some(r) => crate::provenance::median_cell(r),
            None => Cell::Empty,
        }));
        cells.push(
            by.values()
                .map(|r| crate::provenance::runs(r))
                .max()
                .map_or(Cell::Empty, |n| Cell::Num(n.to_string())),
        );
        t.row(cells);
    }
    t
}

fn goodput_chart(doc: &Document) -> Option<String> {
    let rows: Vec<&ResultRow> = doc
        .results
        .iter()
        .filter(|r| r.name == "goodput" && r.unit == "ratio")
        .collect();
    let mut by: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for r in &rows {
        if let (Some(x), Some(m)) = (param_f64(r, "offered"), r.median()) {
            by.entry(&r.implementation).or_default().push((x, m));
        }
    }
    let mut series: Vec<Series> = by
        .into_iter()
        .map(|(k, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series::new(k.to_string(), points)
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    series.push(Series::new("goodput targets", GOODPUT_TARGETS.to_vec()).dashed());
    let svg = Chart {
        series,
        ..Chart::new(
            Axis::linear("offered load (× the 1%-drop capacity)"),
            Axis::linear("goodput (× the capacity)"),
        )
    }
    .to_svg()
    .ok()?;
    Some(figure(
        &svg,
        "Goodput (completed calls/s over the capacity) under overload, per target, with the targets takt-sip \
         holds itself to (dashed: ≥ 0.9 at 1.5×, ≥ 0.8 at 2×).",
    ))
}

pub(crate) fn render(doc: &Document, command: &str) -> String {
    let mut out = String::new();
    if let Some(fig) = goodput_chart(doc) {
        out.push_str(&fig);
    }
    let rows: Vec<&ResultRow> = doc.results.iter().collect();
    if rows.is_empty() {
        out.push_str("<p>The document has no rows.</p>\n");
    } else {
        out.push_str(&side_by_side(&rows).render());
    }
    let slow: Vec<String> = doc
        .results
        .iter()
        .filter(|r| r.name == "recovery_s" && r.median().is_some_and(|m| m > RECOVERY_TARGET_S))
        .map(|r| format!("{} {} s", r.implementation, r.value_text()))
        .collect();
    if !slow.is_empty() {
        out.push_str(&format!(
            "<p class=\"warn\">Recovery slower than {RECOVERY_TARGET_S} s: {}.</p>\n",
            crate::html::esc(&slow.join(", "))
        ));
    }
    out.push_str(&how(doc, command, METHOD));
    out
}
