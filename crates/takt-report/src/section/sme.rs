//! The SME section: speedup per executor and thread count for each ring
//! benchmark, the thesis's figures beside, the plain-loop floor, and the
//! price of one cycle's synchronization.

use std::collections::BTreeSet;

use takt_measure::result::{Document, ResultRow};

use crate::html::{esc, Cell, CellTable};
use crate::provenance::{how, param, param_f64, rows_table, stat_cells, STAT_HEAD};
use crate::section::push_figure;
use takt_measure::chart::{Axis, Chart, Series};

const METHOD: &str = "each configuration runs a fresh network: a minimum warm-up, then at least 5 measured runs; \
    speedup = the sequential executor's median / this run; the floor is the same ring as a plain loop over an array";

/// The benchmarks whose speedups are plotted, in the thesis's order.
const RINGS: [&str; 3] = ["sync_ring", "compute_ring", "uneven"];

pub(crate) fn render(doc: &Document, command: &str) -> String {
    let mut out = String::new();
    for name in RINGS {
        let rows: Vec<&ResultRow> = doc.results.iter().filter(|r| r.name == name).collect();
        if rows.is_empty() {
            continue;
        }
        let shapes: BTreeSet<(u64, u64)> = rows
            .iter()
            .filter_map(|r| {
                Some((
                    param_f64(r, "processes")? as u64,
                    param_f64(r, "cycles")? as u64,
                ))
            })
            .collect();
        out.push_str(&format!("<h3>{}</h3>\n", esc(name)));
        for (p, c) in shapes {
            let of_shape = |r: &&&ResultRow| {
                param_f64(r, "processes") == Some(p as f64)
                    && param_f64(r, "cycles") == Some(c as f64)
            };
            let speedups: Vec<&ResultRow> = rows
                .iter()
                .filter(of_shape)
                .filter(|r| r.unit == "speedup")
                .copied()
                .collect();
            let executors: BTreeSet<String> =
                speedups.iter().map(|r| param(r, "executor")).collect();
            let mut series: Vec<Series> = executors
                .iter()
                .map(|e| {
                    Series::new(
                        e.clone(),
                        speedups
                            .iter()
                            .filter(|r| &param(r, "executor") == e)
                            .filter_map(|r| Some((param_f64(r, "threads")?, r.median()?))),
                    )
                })
                .collect();
            for e in &executors {
                let published: Vec<(f64, f64)> = speedups
                    .iter()
                    .filter(|r| &param(r, "executor") == e)
                    .filter_map(|r| Some((param_f64(r, "threads")?, r.published?)))
                    .collect();
                if !published.is_empty() {
                    // The thesis's 1-thread run is its reference: speedup 1.
                    let mut pts = vec![(1.0, 1.0)];
                    pts.extend(published);
                    series.push(Series::new(format!("{e}, thesis"), pts).dashed());
                }
            }
            push_figure(&mut out, &Chart { series, ..Chart::new(Axis::linear("threads"), Axis::linear("speedup over sequential")) }, &format!(
                        "{name}, {p} processes × {c} cycles: speedup per executor and thread count \
                         (solid), the thesis's C++SME figures (dashed, its 1-thread time over its 2-thread time)."
                    ));
            let mut head = vec![
                "executor",
                "threads",
                "ns/step",
                "speedup",
                "thesis speedup",
                "thesis ns/step",
            ];
            head.extend(STAT_HEAD);
            let mut t = CellTable::new(head);
            for r in rows.iter().filter(of_shape).filter(|r| r.unit == "ns/step") {
                let speedup = speedups.iter().find(|s| s.params == r.params);
                let mut cells = vec![
                    Cell::text(if r.implementation == "floor" {
                        "floor (plain loop)".to_string()
                    } else {
                        param(r, "executor")
                    }),
                    Cell::text(param(r, "threads")),
                    crate::provenance::median_cell(r),
                    Cell::opt(speedup.and_then(|r| r.median())),
                    Cell::opt(speedup.and_then(|s| s.published)),
                    Cell::opt(r.published),
                ];
                cells.extend(stat_cells(r));
                if r.implementation == "floor" {
                    t.row_class(cells, "model");
                } else {
                    t.row(cells);
                }
            }
            out.push_str(&t.render());
        }
    }

    let sync: Vec<&ResultRow> = doc
        .results
        .iter()
        .filter(|r| r.name == "sync_cost")
        .collect();
    if !sync.is_empty() {
        out.push_str("<h3>The price of synchronization</h3>\n<p>Wall time of one cycle of a ring with about one trivial process per thread: almost nothing but the barrier.</p>\n");
        let mut head = vec!["executor", "threads", "µs per cycle"];
        head.extend(STAT_HEAD);
        let mut t = CellTable::new(head);
        for r in sync {
            let mut cells = vec![
                Cell::text(param(r, "executor")),
                Cell::text(param(r, "threads")),
                crate::provenance::median_cell(r),
            ];
            cells.extend(stat_cells(r));
            t.row(cells);
        }
        out.push_str(&t.render());
    }
    let weak: Vec<&ResultRow> = doc
        .results
        .iter()
        .filter(|r| r.name == "weak_scaling")
        .collect();
    if !weak.is_empty() {
        out.push_str("<details><summary>Weak scaling rows</summary>\n");
        out.push_str(&rows_table(&weak));
        out.push_str("</details>\n");
    }
    out.push_str(&how(doc, command, METHOD));
    out
}
