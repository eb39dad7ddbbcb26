//! The SIP capacity section: the 1%-drop capacity of every target and
//! mode of a `takt sip capacity` document (takt, the null relay,
//! Kamailio), a table and a plot of drop rate against offered calls per
//! second with the threshold line.
//!
//! Rows read (takt-siplab's capacity rows): `capacity` (cps; `max` is the
//! first failing grid rate, `detail.capacity` says whether it is a bound),
//! `cpu_per_call` (µs at the capacity's rate) and one `drop_rate` row per
//! grid rate (`params.rate_cps`; `detail.pooled` the pooled drop rate).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::Value;
use takt_measure::result::{Document, ResultRow};

use crate::html::{esc, num, Cell, CellTable};
use crate::provenance::{how, param, param_f64};
use crate::section::push_figure;
use takt_measure::chart::{Axis, Chart, Series};

const METHOD: &str = "takt's native generator (UAC and UAS, Poisson arrivals, no retransmissions) offers calls \
    through each target in turn, point by point; a search ramps the rate up until a trial drops more than the \
    threshold, bisects, then runs a grid of rates around the crossing with repetitions: the capacity is the highest \
    grid rate whose pooled drop rate stays below the threshold with its upper confidence bound, and a trial the \
    generator could not keep up with is re-run and, if still generator-bound, only bounds the capacity from below";

/// The drop-rate threshold when the document does not name one.
const DEFAULT_THRESHOLD: f64 = 0.01;

/// Drop rates of 0 are drawn at this rate on the log axis.
const ZERO_AT: f64 = 1e-4;

/// The case a row belongs to: target, mode (empty for the null relay's
/// `none`), workers.
fn case(r: &ResultRow) -> (String, String, String) {
    let mode = param(r, "mode");
    let mode = if mode == "none" { String::new() } else { mode };
    (r.implementation.clone(), mode, param(r, "workers"))
}

fn case_label(c: &(String, String, String)) -> String {
    if c.1.is_empty() {
        c.0.clone()
    } else {
        format!("{} {}", c.0, c.1)
    }
}

/// The threshold of the search: a `threshold` parameter if the rows carry
/// one, else 1%.
fn threshold(doc: &Document) -> f64 {
    doc.results
        .iter()
        .find_map(|r| param_f64(r, "threshold"))
        .unwrap_or(DEFAULT_THRESHOLD)
}

/// The pooled drop rate of a grid point (the samples' mean when the row
/// has no pooled rate).
fn pooled(r: &ResultRow) -> f64 {
    r.detail
        .get("pooled")
        .and_then(Value::as_f64)
        .or_else(|| r.summary.as_ref().map(|s| s.mean))
        .unwrap_or(f64::NAN)
}

/// The capacity row's bound ("≥ 5,400 (generator)", "< 500 (rate floor)")
/// when the search found no crossing: the row's `bound`, or in a document
/// written before rows had one, the bound its detail spelled out.
fn is_bound(r: &ResultRow) -> Option<String> {
    if let Some(b) = &r.bound {
        return Some(b.to_string());
    }
    r.detail
        .get("capacity")
        .and_then(Value::as_str)
        .filter(|s| s.starts_with('≥') || s.starts_with('<'))
        .map(str::to_string)
}

/// A fraction as a percentage without trailing zeros (`0.01` -> `1`).
fn pct(f: f64) -> String {
    let s = format!("{:.3}", f * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The document's `cpu_per_call_ratio` rows: takt's CPU per call at
/// capacity over the better peer server's and over the null relay's, per
/// mode (nothing when the run measured no peer to compare with).
fn cpu_comparison(doc: &Document) -> String {
    let ratios: Vec<&ResultRow> = doc
        .results
        .iter()
        .filter(|r| r.name == "cpu_per_call_ratio")
        .collect();
    if ratios.is_empty() {
        return String::new();
    }
    let mut t = CellTable::new([
        "mode",
        "model",
        "against",
        "takt (µs/call)",
        "other (µs/call)",
        "takt ÷ other",
    ]);
    for r in ratios {
        let d = |k: &str| r.detail.get(k).and_then(Value::as_f64);
        let peer = r.detail.get("peer").and_then(Value::as_str).unwrap_or("?");
        let against = match r.params.get("vs").and_then(Value::as_str) {
            Some("best_peer") => format!("better peer server ({peer})"),
            _ => peer.to_string(),
        };
        t.row(vec![
            Cell::text(param(r, "mode")),
            Cell::text(param(r, "model")),
            Cell::text(against),
            Cell::opt(d("takt_us")),
            Cell::opt(d("peer_us")),
            Cell::Num(
                r.median()
                    .map_or_else(|| r.value_text(), |m| format!("{m:.2}")),
            ),
        ]);
    }
    format!(
        "<p>CPU per completed call at capacity, takt against the better of the peer SIP servers \
         measured in this run (per mode) and against the null relay (a generator-bound target counts only \
         when its server was at least 90% busy at the generator's ceiling):</p>\n{}",
        t.render()
    )
}

pub(crate) fn render(doc: &Document, command: &str) -> String {
    let mut out = String::new();
    let thr = threshold(doc);
    let cases: BTreeSet<(String, String, String)> = doc
        .results
        .iter()
        .filter(|r| ["capacity", "drop_rate"].contains(&r.name.as_str()))
        .map(case)
        .collect();
    if cases.is_empty() {
        out.push_str("<p class=\"missing\"><strong>No capacity rows:</strong> the document holds no finished search.</p>\n");
        out.push_str(&how(doc, command, METHOD));
        return out;
    }
    let mut t = CellTable::new([
        "target",
        "mode",
        "workers",
        "capacity (cps)",
        "first failing (cps)",
        "CPU per call at capacity (µs)",
        "× null relay",
        "grid points",
        "CPU s",
        "note",
    ]);
    let relay_row = doc
        .results
        .iter()
        .find(|r| r.name == "capacity" && r.implementation == "null-relay");
    let relay = relay_row.and_then(|r| r.median());
    // a bound is no base for a ratio
    let relay_bound = relay_row.is_some_and(|r| is_bound(r).is_some());
    let mut series = Vec::new();
    let (mut x_lo, mut x_hi) = (f64::INFINITY, 0.0f64);
    for c in &cases {
        let of = |name: &'static str| {
            doc.results
                .iter()
                .filter(move |r| r.name == name && &case(r) == c)
        };
        let cap = of("capacity").next();
        let cpu = of("cpu_per_call").next();
        let mut grid: Vec<&ResultRow> = of("drop_rate").collect();
        grid.sort_by(|a, b| {
            param_f64(a, "rate_cps")
                .unwrap_or(0.0)
                .total_cmp(&param_f64(b, "rate_cps").unwrap_or(0.0))
        });
        // "≥ 5400 (generator-bound)", "< 500": not a measured capacity
        let bound = cap.and_then(is_bound);
        let mut note = match (cap, &bound) {
            (None, _) => "no capacity: the search did not finish its grid".to_string(),
            (Some(_), Some(b)) => format!("a bound, not a crossing: {b}"),
            (Some(_), None) => String::new(),
        };
        // a cost at a bound that is not a cost at capacity says why
        if let Some(n) = cpu
            .filter(|r| r.median().is_none())
            .and_then(|r| r.note.as_deref())
        {
            if !note.is_empty() {
                note.push_str("; ");
            }
            note.push_str("CPU per call ");
            note.push_str(n);
        }
        t.row(vec![
            Cell::text(&c.0),
            Cell::text(&c.1),
            Cell::text(&c.2),
            match &bound {
                Some(b) => Cell::Num(b.clone()),
                None => Cell::opt(cap.and_then(|r| r.median())),
            },
            Cell::opt(
                cap.filter(|_| bound.is_none())
                    .and_then(|r| r.summary.as_ref())
                    .filter(|s| s.max > s.median)
                    .map(|s| s.max),
            ),
            Cell::opt(cpu.and_then(|r| r.median())),
            match (cap.and_then(|r| r.median()), relay) {
                (Some(m), Some(n))
                    if n > 0.0 && c.0 != "null-relay" && bound.is_none() && !relay_bound =>
                {
                    Cell::Num(format!("{:.2}", m / n))
                }
                _ => Cell::Empty,
            },
            Cell::Num(grid.len().to_string()),
            Cell::opt(cap.map(|r| r.cpu_s)),
            Cell::text(note),
        ]);
        let points: Vec<(f64, f64)> = grid
            .iter()
            .filter_map(|r| Some((param_f64(r, "rate_cps")?, pooled(r).max(ZERO_AT))))
            .collect();
        for p in &points {
            x_lo = x_lo.min(p.0);
            x_hi = x_hi.max(p.0);
        }
        if !points.is_empty() {
            series.push(Series::new(case_label(c), points));
        }
    }
    if !series.is_empty() && x_hi > 0.0 {
        series.push(
            Series::new(
                format!("{}% threshold", pct(thr)),
                vec![(x_lo, thr), (x_hi, thr)],
            )
            .dashed(),
        );
        push_figure(&mut out, &Chart { series, ..Chart::new(Axis::log("offered calls/s"), Axis::log("drop rate (pooled over repetitions)")) }, &format!(
                    "Drop rate against offered load at each target's grid of rates around its capacity, with the {}% \
                     line (dashed): the capacity is the highest rate below it. Log–log; a drop rate of 0 is drawn at {}.",
                    pct(thr),
                    num(ZERO_AT)
                ));
    }
    out.push_str(&t.render());
    let _ = writeln!(
        out,
        "<p>Capacity: the highest grid rate whose pooled drop rate stays below {}% with its confidence bound; \
         <i>first failing</i> the next grid rate; <i>CPU per call</i> is all of the server's threads' CPU time per \
         completed call at the capacity's rate (the load it was measured at matters: per-wake-up costs dominate at \
         low load); <i>× null relay</i> compares with a relay that forwards without parsing, on the same \
         generator and CPUs — the ceiling of this machine's network path.</p>",
        pct(thr)
    );
    out.push_str(&cpu_comparison(doc));
    let modes: BTreeSet<&str> = cases
        .iter()
        .map(|c| c.1.as_str())
        .filter(|m| !m.is_empty())
        .collect();
    let targets: BTreeSet<&str> = cases.iter().map(|c| c.0.as_str()).collect();
    if !targets.contains("kamailio") || modes.len() < 2 {
        let _ = writeln!(
            out,
            "<p class=\"how\">This run measured {} in {} mode{}; <code>takt sip capacity --quick</code> measures takt \
             and Kamailio in both modes beside the null relay.</p>",
            esc(&targets.iter().copied().collect::<Vec<_>>().join(", ")),
            esc(&modes.iter().copied().collect::<Vec<_>>().join(" and ")),
            if modes.len() == 1 { "" } else { "s" }
        );
    }
    out.push_str(&how(doc, command, METHOD));
    out
}
