//! The scheduler study section, from a `takt sip sweep` document (suite
//! `sip_sweep`): capacity versus worker threads per scheduler profile,
//! per target and mode, and each profile against `default`.
//!
//! The rows are read as the capacity laboratory writes them:
//! - `capacity` rows (cps, `impl` the target) with `params.mode`, the
//!   thread count in `params.workers` (or `params.m`) and the scheduler
//!   profile in `params.profile`;
//! - any other rows (the paper's Tables I–III quantities: `t_sip`,
//!   `k_rcv`, `drop_rate` per load) are listed side by side per target.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use takt_measure::result::{Document, ResultRow};

use crate::html::{esc, Cell, CellTable};
use crate::provenance::{how, param, param_f64};
use crate::section::push_figure;
use takt_measure::chart::{Axis, Chart, Series};

const METHOD: &str = "the capacity laboratory's search (1%-drop capacity, grid with repetitions) per target, mode, \
    worker-thread count m and scheduler profile, the targets taking turns point by point; each profile is applied \
    per thread through takt-sched and read back from the kernel";

/// The thread count of a row: `workers`, or `m`.
fn threads(r: &ResultRow) -> Option<f64> {
    param_f64(r, "workers").or_else(|| param_f64(r, "m"))
}

fn profile(r: &ResultRow) -> String {
    let p = param(r, "profile");
    if p.is_empty() {
        "default".into()
    } else {
        p
    }
}

/// A case's capacity rows: profile -> [(m, row)].
type Profiles<'a> = BTreeMap<String, Vec<(f64, &'a ResultRow)>>;

pub(crate) fn render(doc: &Document, command: &str) -> String {
    let mut out = String::new();
    let caps: Vec<&ResultRow> = doc
        .results
        .iter()
        .filter(|r| r.name == "capacity" && threads(r).is_some())
        .collect();
    let mut cases: BTreeMap<(String, String), Profiles<'_>> = BTreeMap::new();
    for r in &caps {
        cases
            .entry((r.implementation.clone(), param(r, "mode")))
            .or_default()
            .entry(profile(r))
            .or_default()
            .push((threads(r).unwrap_or(0.0), r));
    }
    if cases.is_empty() {
        out.push_str("<p class=\"missing\"><strong>No capacity rows:</strong> the document has no capacity per thread count and profile.</p>\n");
    }
    for ((target, mode), profiles) in &mut cases {
        let _ = writeln!(out, "<h3>{} {}</h3>", esc(target), esc(mode));
        let ms: BTreeSet<u64> = profiles
            .values()
            .flat_map(|v| v.iter().map(|(m, _)| *m as u64))
            .collect();
        let names: Vec<String> = profiles.keys().cloned().collect();
        let mut head = vec!["m (threads)".to_string()];
        head.extend(names.iter().map(|p| format!("{p} (cps)")));
        head.extend(
            names
                .iter()
                .filter(|p| *p != "default")
                .map(|p| format!("{p} vs default")),
        );
        let mut t = CellTable::new(head);
        let mut series = Vec::new();
        for (p, pts) in profiles.iter_mut() {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            series.push(Series::new(
                p.clone(),
                // a bound is not a point on the curve
                pts.iter().filter_map(|(m, r)| Some((*m, r.median()?))),
            ));
        }
        for m in &ms {
            let at = |p: &str| {
                profiles
                    .get(p)
                    .and_then(|v| v.iter().find(|(x, _)| *x as u64 == *m))
                    .map(|(_, r)| *r)
            };
            let mut cells = vec![Cell::Num(m.to_string())];
            cells.extend(
                names
                    .iter()
                    .map(|p| at(p).map_or(Cell::Empty, crate::provenance::median_ci_cell)),
            );
            let base = at("default").and_then(|r| r.median());
            cells.extend(names.iter().filter(|p| *p != "default").map(|p| {
                match (at(p).and_then(|r| r.median()), base) {
                    (Some(m), Some(b)) if b > 0.0 => {
                        Cell::Num(format!("{:+.0}%", (m / b - 1.0) * 100.0))
                    }
                    _ => Cell::Empty,
                }
            }));
            t.row(cells);
        }
        push_figure(&mut out, &Chart { series, ..Chart::new(Axis::log("worker threads m"), Axis::linear("1%-drop capacity (calls/s)")) }, &format!(
                    "{target} {mode}: capacity against the number of worker threads, one line per scheduler profile \
                     (the paper's figure, on today's kernel)."
                ));
        out.push_str(&t.render());
    }
    if !caps.is_empty() {
        out.push_str(
            "<p>Cells are median ± half the 95% interval; <i>vs default</i> is the profile's capacity over the \
             default profile's at the same m (Table III's comparison, on capacity).</p>\n",
        );
    }
    let rest: Vec<&ResultRow> = doc
        .results
        .iter()
        .filter(|r| !(r.name == "capacity" && threads(r).is_some()))
        .collect();
    if !rest.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>The per-load quantities (Tables I–II: T_sip, K_rcv, drop rate; {} rows)</summary>\n{}</details>",
            rest.len(),
            crate::section::robustness::side_by_side(&rest).render()
        );
    }
    out.push_str(&how(doc, command, METHOD));
    out
}
