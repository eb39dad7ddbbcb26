//! What every figure carries: the command that reproduces it, the method,
//! the spread, the sample count, the CPU time, and a flag when the host
//! stole time or work other than the run's own ran during the measurement.

use std::fmt::Write as _;

use serde_json::Value;
use takt_measure::result::{Document, ResultRow};

use crate::html::{esc, num, Cell, CellTable};

/// Why the figures of `doc` may be disturbed, if they may be: work that was
/// not the run's own plus the hypervisor's steal exceeded
/// [`takt_measure::env::DISTURBED_PCT`] of the machine's CPU time over the
/// run (see [`MachineBlock::others_pct`](takt_measure::env::MachineBlock)).
/// The load average is not used: it counts the run's own server and
/// generator. A document that predates the measurement is not flagged.
pub fn disturbance(doc: &Document) -> Option<String> {
    let m = &doc.machine;
    let total = m.disturbed_pct()?;
    Some(format!(
        "{total:.1}% of the machine's CPU time went to other work ({:.1}% ran outside this run's processes, {:.1}% was stolen by the hypervisor; flagged above {}%)",
        m.others_pct.unwrap_or(0.0),
        m.steal_pct,
        takt_measure::env::DISTURBED_PCT
    ))
}

/// The `params` of a row as `key=value` text.
pub fn params_text(row: &ResultRow) -> String {
    takt_measure::result::params_text(&row.params)
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
         <b>Conditions:</b> {} ({} CPUs{}), kernel {}, {} build of {}, started {}; steal {:.1}%, other work {}, load {:.2} / {:.2} / {:.2}.",
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
        m.others_pct
            .map_or_else(|| "not recorded".to_string(), |o| format!("{o:.1}%")),
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

    fn doc(steal: f64, others: Option<f64>) -> Document {
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
        d.machine.others_pct = others;
        // The run's own server and generator keep the load at 2 on 2 CPUs:
        // that alone flags nothing.
        d.machine.load = [2.2, 2.0, 1.0];
        d
    }

    #[test]
    fn other_work_and_steal_flag_a_document() {
        assert!(disturbance(&doc(0.2, Some(1.5))).is_none());
        assert!(disturbance(&doc(3.0, Some(2.5)))
            .unwrap()
            .starts_with("5.5%"));
        assert!(disturbance(&doc(0.0, Some(30.0)))
            .unwrap()
            .contains("30.0% ran outside this run's processes"));
        // A document from before the measurement: not flagged.
        assert!(disturbance(&doc(0.5, None)).is_none());
        let h = how(&doc(0.0, Some(30.0)), "takt x --json", "m");
        assert!(h.contains("Disturbed"), "{h}");
        assert!(h.contains("5 measured repetitions"), "{h}");
        assert!(h.contains("other work 30.0%"), "{h}");
        let quiet = how(&doc(0.1, Some(0.4)), "takt x --json", "m");
        assert!(!quiet.contains("Disturbed"), "{quiet}");
    }
}
