//! The remote agents section: round trips between two takt-remote nodes
//! over NATS beside bare async-nats and raw TCP, from a `takt bench
//! remote` document.
//!
//! Rows read: `paced_rtt` (µs; `params.pace_ms`, `params.quantile` —
//! p50, p99, p99.9, max — per implementation), `saturated` (round trips/s;
//! `params.in_flight`) and `rtt` (µs back to back; `params.bytes`). Rows of
//! other names are listed as they are.

use std::collections::BTreeSet;

use takt_measure::result::{Document, ResultRow};

use crate::html::{num, Cell, CellTable};
use crate::provenance::{how, param, param_f64, rows_table};
use crate::section::push_figure;
use takt_measure::chart::{human_bytes, Axis, Chart, Point, Series};

const METHOD: &str = "two takt-remote nodes in one process (two NATS connections, two bridge threads) exchange \
    64-byte requests through a nats-server the run starts; the asking side is a plain thread calling ask, the \
    answering side an agent on a one_thread dispatcher. Paced: one round trip every 75, 80 and 100 ms for every \
    implementation at once, the quantiles taken per fifth of the window; saturated: a fixed number of round trips \
    kept in flight; bare async-nats request/reply, raw TCP (TCP_NODELAY, and Nagle with split writes) and \
    ractor_cluster (ractor's own remoting over direct TCP, both nodes in processes of the separately built \
    takt-peer-ractor; absent when it is not built) run beside takt in the \
    same run";

/// The quantiles of the paced rows, in column order.
const QUANTILES: [&str; 4] = ["p50", "p99", "p99.9", "max"];

fn median_ci(r: &ResultRow) -> Cell {
    crate::provenance::median_ci_cell(r)
}

/// Distinct values of a numeric parameter over `rows`, ascending.
fn values(rows: &[&ResultRow], key: &str) -> Vec<f64> {
    let mut v: Vec<f64> = rows.iter().filter_map(|r| param_f64(r, key)).collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// Implementations in the order they first appear.
fn impls(rows: &[&ResultRow]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rows {
        if !out.contains(&r.implementation) {
            out.push(r.implementation.clone());
        }
    }
    out
}

fn paced(doc: &Document) -> String {
    let rows: Vec<&ResultRow> = doc
        .results
        .iter()
        .filter(|r| r.name == "paced_rtt")
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h3>Paced round trips</h3>\n");
    let paces = values(&rows, "pace_ms");
    let names = impls(&rows);
    let mut head = vec!["implementation".to_string(), "pace (ms)".into()];
    head.extend(QUANTILES.iter().map(|q| format!("{q} (µs)")));
    head.push("runs".into());
    let mut t = CellTable::new(head);
    let mut series = Vec::new();
    for name in &names {
        let mut points = Vec::new();
        for (i, pace) in paces.iter().enumerate() {
            let at = |q: &str| {
                rows.iter().find(|r| {
                    &r.implementation == name
                        && param_f64(r, "pace_ms") == Some(*pace)
                        && param(r, "quantile") == q
                })
            };
            if QUANTILES.iter().all(|q| at(q).is_none()) {
                continue;
            }
            let mut cells = vec![Cell::text(name), Cell::whole(*pace)];
            cells.extend(
                QUANTILES
                    .iter()
                    .map(|q| at(q).map_or(Cell::Empty, |r| median_ci(r))),
            );
            cells.push(at("p50").map_or(Cell::Empty, |r| {
                Cell::whole(crate::provenance::runs(r) as f64)
            }));
            t.row(cells);
            if let Some(m) = at("p99").and_then(|r| r.median()) {
                points.push(((i + 1) as f64, m));
            }
        }
        series.push(Series::new(name.clone(), points));
    }
    push_figure(&mut out, &Chart { series, ..Chart::new(Axis::linear("pace (one round trip every … ms)").names(paces.iter().map(|p| format!("{} ms", num(*p))).collect()), Axis::log("p99 round trip (µs)")) }, "p99 of a 64-byte round trip sent every 75, 80 or 100 ms — the seed's case, where a transport that \
             batches or sleeps shows stalls — per implementation, all measured at once.");
    out.push_str(&t.render());
    out.push_str(
        "<p>Cells are the median over the run's fifths of the window ± half the 95% interval; \
         with short windows p99.9 is the maximum of fewer than 1,000 round trips.</p>\n",
    );
    out
}

fn saturated(doc: &Document) -> String {
    let rows: Vec<&ResultRow> = doc
        .results
        .iter()
        .filter(|r| r.name == "saturated")
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h3>Saturation</h3>\n");
    let depths = values(&rows, "in_flight");
    let names = impls(&rows);
    let mut head = vec!["in flight".to_string()];
    head.extend(names.iter().map(|n| format!("{n} (round trips/s)")));
    let mut t = CellTable::new(head);
    let mut series: Vec<Series> = names
        .iter()
        .map(|n| Series::new(n.clone(), Vec::new()))
        .collect();
    for d in &depths {
        let mut cells = vec![Cell::whole(*d)];
        for (i, n) in names.iter().enumerate() {
            let r = rows
                .iter()
                .find(|r| &r.implementation == n && param_f64(r, "in_flight") == Some(*d));
            cells.push(r.map_or(Cell::Empty, |r| median_ci(r)));
            if let Some(m) = r.and_then(|r| r.median()) {
                series[i].points.push(Point::new(*d, m));
            }
        }
        t.row(cells);
    }
    push_figure(&mut out, &Chart { series, ..Chart::new(Axis::log("round trips in flight"), Axis::log("round trips per second")) }, "Round trips per second with a fixed number in flight: takt-remote against bare async-nats through \
             the same server. Log–log.");
    out.push_str(&t.render());
    out
}

fn back_to_back(doc: &Document) -> String {
    let rows: Vec<&ResultRow> = doc.results.iter().filter(|r| r.name == "rtt").collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h3>Back-to-back round trips</h3>\n");
    let sizes = values(&rows, "bytes");
    let names = impls(&rows);
    let mut head = vec!["payload".to_string()];
    head.extend(names.iter().map(|n| format!("{n} (µs)")));
    let mut t = CellTable::new(head);
    for s in &sizes {
        let mut cells = vec![Cell::text(human_bytes(*s))];
        cells.extend(names.iter().map(|n| {
            rows.iter()
                .find(|r| &r.implementation == n && param_f64(r, "bytes") == Some(*s))
                .map_or(Cell::Empty, |r| median_ci(r))
        }));
        t.row(cells);
    }
    out.push_str(&t.render());
    out
}

pub(crate) fn render(doc: &Document, command: &str) -> String {
    let mut out = String::new();
    out.push_str(&paced(doc));
    out.push_str(&saturated(doc));
    out.push_str(&back_to_back(doc));
    let known: BTreeSet<&str> = ["paced_rtt", "saturated", "rtt"].into_iter().collect();
    let rest: Vec<&ResultRow> = doc
        .results
        .iter()
        .filter(|r| !known.contains(r.name.as_str()))
        .collect();
    if !rest.is_empty() {
        out.push_str(&format!(
            "<details><summary>Other rows ({})</summary>\n{}</details>\n",
            rest.len(),
            rows_table(&rest)
        ));
    }
    if out.is_empty() {
        out.push_str("<p>The document has no rows.</p>\n");
    }
    out.push_str(&how(doc, command, METHOD));
    out
}
