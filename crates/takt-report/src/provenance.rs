//! What every figure carries: the command that reproduces it, the method,
//! the spread, the sample count, the CPU time, and a flag when the host
//! stole time or other load ran during the measurement.

use std::fmt::Write as _;

use serde_json::Value;
use takt_measure::result::{Document, ResultRow};

use crate::html::{esc, num, Cell, CellTable};

/// Steal time above this share of CPU time flags a document (percent).
pub const STEAL_FLAG_PCT: f64 = 1.0;
/// A 1-minute load average above this many runnable threads per CPU flags
/// a document: other work competed with the measurement.
pub const LOAD_FLAG_PER_CPU: f64 = 1.0;

/// Why the figures of `doc` may be disturbed, if they may be.
pub fn disturbance(doc: &Document) -> Option<String> {
    let m = &doc.machine;
    let mut why = Vec::new();
    if m.steal_pct > STEAL_FLAG_PCT {
        why.push(format!(
            "the hypervisor stole {:.1}% of CPU time",
            m.steal_pct
        ));
    }
    let cpus = m.cpus.max(1) as f64;
    if m.load[0] > LOAD_FLAG_PER_CPU * cpus {
        why.push(format!(
            "the 1-minute load was {:.1} on {} CPUs (other work ran)",
            m.load[0], m.cpus
        ));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// The `params` of a row as `key=value` text.
pub fn params_text(row: &ResultRow) -> String {
    row.params
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The parameters every row of `rows` has with the same value.
pub fn common_params(rows: &[&ResultRow]) -> serde_json::Map<String, Value> {
    let mut common = rows.first().map(|r| r.params.clone()).unwrap_or_default();
    if rows.len() < 2 {
        return serde_json::Map::new();
    }
    common.retain(|k, v| rows.iter().all(|r| r.params.get(k) == Some(v)));
    common
}

/// The parameters of `row` that are not in `common`, as `key=value` text.
pub fn varying_params_text(row: &ResultRow, common: &serde_json::Map<String, Value>) -> String {
    row.params
        .iter()
        .filter(|(k, _)| !common.contains_key(*k))
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A sentence naming the parameters shared by every row of a table.
pub fn common_params_note(common: &serde_json::Map<String, Value>) -> String {
    if common.is_empty() {
        return String::new();
    }
    let list = common
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "<p class=\"how\">Every row above: <code>{}</code></p>\n",
        crate::html::esc(&list)
    )
}

/// A parameter as text (`2`, `one_thread`), or empty.
pub fn param(row: &ResultRow, key: &str) -> String {
    match row.params.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    }
}

/// A numeric parameter.
pub fn param_f64(row: &ResultRow, key: &str) -> Option<f64> {
    row.params.get(key).and_then(Value::as_f64)
}

/// Half the width of the 95% interval; `None` for a bound.
pub fn ci_half(row: &ResultRow) -> Option<f64> {
    row.summary.as_ref().map(|s| (s.ci95[1] - s.ci95[0]) / 2.0)
}

/// The median as a cell: the number, or for a bound the relation, value
/// and limit ("≥ 35,000 (generator)"), never the bound as a bare number.
pub fn median_cell(row: &ResultRow) -> Cell {
    Cell::Num(row.value_text())
}

/// "median ± half-interval" as a cell, or for a bound the bound's text.
pub fn median_ci_cell(row: &ResultRow) -> Cell {
    match (row.median(), ci_half(row)) {
        (Some(m), Some(h)) => Cell::Num(format!("{} ± {}", num(m), num(h))),
        _ => median_cell(row),
    }
}

/// The median as text: [`median_cell`]'s.
pub fn median_text(row: &ResultRow) -> String {
    row.value_text()
}

/// Repetitions behind a row's statistics (0 for a bound).
pub fn runs(row: &ResultRow) -> usize {
    row.summary.as_ref().map_or(0, |s| s.runs)
}

/// The statistics columns every row table ends with.
pub const STAT_HEAD: [&str; 5] = ["± ci95", "min … max", "runs", "CPU s/run", "note"];

/// The statistics cells of `row` (see [`STAT_HEAD`]).
pub fn stat_cells(row: &ResultRow) -> Vec<Cell> {
    let Some(sum) = row.summary.as_ref() else {
        return vec![
            Cell::Empty,
            Cell::Empty,
            Cell::Num("0".into()),
            Cell::num(row.cpu_s),
            row.note.clone().map_or(Cell::Empty, Cell::Text),
        ];
    };
    vec![
        Cell::opt(ci_half(row)),
        Cell::Num(format!("{} … {}", num(sum.min), num(sum.max))),
        Cell::Num(sum.runs.to_string()),
        Cell::num(row.cpu_s),
        row.note.clone().map_or(Cell::Empty, Cell::Text),
    ]
}

/// A generic table of rows: benchmark, impl, the parameters that vary
/// between rows, median with unit, the published figure when any row has
/// one, and the statistics; then the parameters all rows share.
pub fn rows_table(rows: &[&ResultRow]) -> String {
    let common = common_params(rows);
    let published = rows.iter().any(|r| r.published.is_some());
    let mut head = vec!["benchmark", "impl", "parameters", "median", "unit"];
    if published {
        head.push("published");
    }
    head.extend(STAT_HEAD);
    let mut t = CellTable::new(head);
    for r in rows {
        let mut cells = vec![
            Cell::text(&r.name),
            Cell::text(&r.implementation),
            Cell::text(varying_params_text(r, &common)),
            median_cell(r),
            Cell::text(&r.unit),
        ];
        if published {
            cells.push(Cell::opt(r.published));
        }
        cells.extend(stat_cells(r));
        t.row(cells);
    }
    let mut out = t.render();
    out.push_str(&common_params_note(&common));
    out
}

/// The "how this was measured" block under a section's figures: the exact
/// command, the method, the samples and CPU time in total, and the
/// disturbance flag.
pub fn how(doc: &Document, command: &str, method: &str) -> String {
    let runs_total: u64 = doc.results.iter().map(|r| runs(r) as u64).sum();
    let cpu: f64 = doc.results.iter().map(|r| r.cpu_s * runs(r) as f64).sum();
    let m = &doc.machine;
    let mut out = String::from("<div class=\"how\">");
    let _ = write!(
        out,
        "<b>Reproduce:</b> <code>{}</code><br><b>Method:</b> {}<br>\
         <b>Samples:</b> {} rows, {} measured repetitions in all, {} s of CPU time measured \
         (each row's <i>CPU s/run</i> is user + system time of all threads per repetition); \
         <i>± ci95</i> is the Student-t 95% interval of the mean, <i>min … max</i> the spread of the repetitions.<br>\
         <b>Conditions:</b> {} ({} CPUs{}), kernel {}, {} build of {}, started {}; steal {:.1}%, load {:.2} / {:.2} / {:.2}.",
        esc(command),
        esc(method),
        doc.results.len(),
        runs_total,
        num(cpu),
        esc(&m.cpu),
        m.cpus,
        if m.virtualized { ", virtual machine" } else { "" },
        esc(&m.kernel),
        esc(&m.profile),
        esc(&m.commit),
        esc(&doc.started),
        m.steal_pct,
        m.load[0],
        m.load[1],
        m.load[2],
    );
    if let Some(why) = disturbance(doc) {
        let _ = write!(
            out,
            "<br><span class=\"warn\">⚠ Disturbed: {}.</span> Treat these figures as upper bounds for latency and lower bounds for throughput.",
            esc(&why)
        );
    }
    for note in &doc.notes {
        let _ = write!(out, "<br>Note: {}", esc(note));
    }
    out.push_str("</div>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use takt_measure::result::{Better, DocumentBuilder};

    fn doc(steal: f64, load: f64) -> Document {
        let mut b = DocumentBuilder::start("t");
        b.push(ResultRow::new(
            "x",
            "takt",
            takt_measure::params![("threads", 1)],
            "ns",
            Better::Lower,
            vec![1.0, 2.0, 3.0, 2.0, 2.0],
            0.5,
        ));
        let mut d = b.finish();
        d.machine.cpus = 2;
        d.machine.steal_pct = steal;
        d.machine.load = [load, 0.0, 0.0];
        d
    }

    #[test]
    fn steal_and_load_flag_a_document() {
        assert!(disturbance(&doc(0.2, 1.5)).is_none());
        assert!(disturbance(&doc(3.0, 0.1)).unwrap().contains("stole 3.0%"));
        assert!(disturbance(&doc(0.0, 6.0))
            .unwrap()
            .contains("load was 6.0 on 2"));
        let h = how(&doc(0.0, 6.0), "takt x --json", "m");
        assert!(h.contains("Disturbed"), "{h}");
        assert!(h.contains("5 measured repetitions"), "{h}");
    }
}
