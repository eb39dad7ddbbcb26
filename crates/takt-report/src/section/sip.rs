//! The SIP section: per-message costs of the in-process proxy under SIPp
//! load (T_sip in the proxy, K_rcv and K_snd in the kernel), per mode,
//! worker model and message kind, with the paper's figures where the rows
//! carry them.

use std::collections::BTreeSet;

use takt_measure::result::{Document, ResultRow};

use crate::html::{Cell, CellTable};
use crate::provenance::{how, param, rows_table};
use crate::section::push_figure;
use takt_measure::chart::{Axis, Chart, Series};

const METHOD: &str = "SIPp (UAC and UAS) drives calls through the in-process proxy at a fixed call rate; \
    T_sip is the proxy's time per message from its own timestamps, K_rcv and K_snd the kernel's receive and send \
    paths around it; each row is the median over the measured runs after a warm-up run";

/// The per-message quantities, in the table's column order.
const COSTS: [(&str, &str); 3] = [
    ("t_sip", "T_sip (µs)"),
    ("k_rcv", "K_rcv (µs)"),
    ("k_snd", "K_snd (µs)"),
];

fn case(r: &ResultRow) -> (String, String, String) {
    (param(r, "mode"), param(r, "model"), param(r, "workers"))
}

pub(crate) fn render(doc: &Document, command: &str) -> String {
    let mut out = String::from("<h3>Per-message costs</h3>\n");
    let cost_rows: Vec<&ResultRow> = doc
        .results
        .iter()
        .filter(|r| COSTS.iter().any(|(n, _)| *n == r.name))
        .collect();
    let cases: BTreeSet<(String, String, String)> = cost_rows.iter().map(|r| case(r)).collect();
    let mut head = vec!["mode", "worker model", "workers", "message"];
    head.extend(COSTS.iter().map(|(_, h)| *h));
    head.extend(["paper T_sip (µs)", "runs", "CPU s/run"]);
    let mut t = CellTable::new(head);
    let mut series = Vec::new();
    let mut kind_names: Vec<String> = Vec::new();
    for c in &cases {
        let in_case: Vec<&&ResultRow> = cost_rows.iter().filter(|r| &case(r) == c).collect();
        let mut kinds: Vec<String> = Vec::new();
        for r in &in_case {
            let k = param(r, "message");
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        let mut points = Vec::new();
        for kind in &kinds {
            let x = match kind_names.iter().position(|k| k == kind) {
                Some(i) => i + 1,
                None => {
                    kind_names.push(kind.clone());
                    kind_names.len()
                }
            };
            let of = |name: &str| {
                in_case
                    .iter()
                    .find(|r| r.name == name && &param(r, "message") == kind)
                    .copied()
            };
            let mut cells = vec![
                Cell::text(&c.0),
                Cell::text(&c.1),
                Cell::text(&c.2),
                Cell::text(kind),
            ];
            for (name, _) in COSTS {
                cells.push(match of(name) {
                    Some(r) => crate::provenance::median_ci_cell(r),
                    None => Cell::Empty,
                });
            }
            let t_sip = of("t_sip");
            cells.push(Cell::opt(t_sip.and_then(|r| r.published)));
            cells.push(Cell::opt(t_sip.map(|r| crate::provenance::runs(r) as f64)));
            cells.push(Cell::opt(t_sip.map(|r| r.cpu_s)));
            t.row(cells);
            if let Some(m) = t_sip.and_then(|r| r.median()) {
                points.push((x as f64, m));
            }
        }
        series.push(Series::new(format!("{} {} ×{}", c.0, c.1, c.2), points));
    }
    if t.is_empty() {
        out.push_str("<p>The document has no per-message cost rows.</p>\n");
    } else {
        push_figure(&mut out, &Chart { series, ..Chart::new(Axis::linear("message kind").names(kind_names), Axis::linear("T_sip (µs)")) }, "T_sip per message kind for every mode and worker model: the proxy's own time per message.");
        out.push_str(&t.render());
        out.push_str("<p>Cells are median ± half the 95% interval over the measured runs.</p>\n");
    }
    let rest: Vec<&ResultRow> = doc
        .results
        .iter()
        .filter(|r| !COSTS.iter().any(|(n, _)| *n == r.name))
        .collect();
    if !rest.is_empty() {
        out.push_str(&format!(
            "<details><summary>Calls, drops, CPU per call and contention ({} rows)</summary>\n",
            rest.len()
        ));
        out.push_str(&rows_table(&rest));
        out.push_str("</details>\n");
    }
    out.push_str(&how(doc, command, METHOD));
    out
}
