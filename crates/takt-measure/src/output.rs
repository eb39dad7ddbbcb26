//! Printing result documents: human tables by default, exactly one JSON
//! document on stdout with `--json`.

use std::io::Write;

use crate::result::Document;
use crate::table::{fmt_num, group_rows, Table};

/// The document as tables: one per benchmark and unit, with a column per
/// parameter that varies (the constant ones in the title), the unit in the
/// headers, then the machine line and the
/// notes. The `takt ×` column gives, for every peer row, how many times
/// better the takt row with the same name and parameters is (> 1: takt is
/// better).
pub fn render(doc: &Document) -> String {
    let mut out = String::new();
    for mut g in group_rows(&doc.results, |r| r.name.clone()) {
        let lifted = g.lift_constants();
        let mut t = g.param_columns(Table::titled(g.title(&lifted)).text("impl"));
        t = t
            .number(format!("median ({})", g.unit))
            .number("± ci95")
            .number("min")
            .number("max")
            .number("runs")
            .number("cpu s/run")
            .number("published")
            .number("takt ×");
        for r in &g.rows {
            let vs = if r.implementation != "takt" {
                doc.peer_of(r, "takt")
                    .and_then(|t| t.advantage_over(r))
                    .map(|x| format!("{x:.2}"))
                    .unwrap_or_default()
            } else {
                String::new()
            };
            let mut cells = vec![r.implementation.clone()];
            cells.extend(g.param_cells(r));
            // a bound shows in the median's column, with no spread
            let stat = |f: fn(&crate::stats::Summary) -> f64| {
                r.summary
                    .as_ref()
                    .map(|s| fmt_num(f(s)))
                    .unwrap_or_default()
            };
            cells.extend([
                r.value_text(),
                stat(|s| (s.ci95[1] - s.ci95[0]) / 2.0),
                stat(|s| s.min),
                stat(|s| s.max),
                r.summary.as_ref().map_or(0, |s| s.runs).to_string(),
                fmt_num(r.cpu_s),
                r.published.map(fmt_num).unwrap_or_default(),
                vs,
            ]);
            t.push(cells);
        }
        t.drop_empty_columns();
        out.push_str(&t.render());
        out.push('\n');
    }
    out.push_str(&machine_line(doc));
    for n in &doc.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// The one-line summary of the machine block.
pub fn machine_line(doc: &Document) -> String {
    let m = &doc.machine;
    format!(
        "{} · {} CPUs · kernel {} · {} · commit {} · steal {:.1}% · load {:.2}\n",
        m.cpu, m.cpus, m.kernel, m.profile, m.commit, m.steal_pct, m.load[0]
    )
}

/// Writes `text` to stdout; a closed pipe is not an error.
pub fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// `value` as pretty JSON with a final newline.
pub fn to_json<T: serde::Serialize>(value: &T) -> std::io::Result<String> {
    let mut s = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    s.push('\n');
    Ok(s)
}

/// Writes the document to stdout: JSON if `json`, else the tables. A
/// closed pipe is not an error.
pub fn emit(doc: &Document, json: bool) -> std::io::Result<()> {
    let text = if json { to_json(doc)? } else { render(doc) };
    print(&text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{Better, DocumentBuilder, ResultRow};

    #[test]
    fn table_shows_params_as_columns_and_ratio_against_takt() {
        let mut b = DocumentBuilder::start("test");
        b.push(ResultRow::new(
            "ping_pong",
            "takt",
            crate::params![("threads", 1), ("spin", "20us")],
            "ns/msg",
            Better::Lower,
            vec![10.0, 11.0, 12.0, 10.0, 10.0],
            0.1,
        ));
        b.push(ResultRow::new(
            "ping_pong",
            "actix",
            crate::params![("threads", 1)],
            "ns/msg",
            Better::Lower,
            vec![100.0; 5],
            0.1,
        ));
        let doc = b.finish();
        let t = render(&doc);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "ping_pong (threads=1)");
        for h in ["impl", "spin", "median (ns/msg)", "takt ×"] {
            assert!(lines[1].contains(h), "{h}: {t}");
        }
        assert!(!lines[1].contains("published"), "empty column kept: {t}");
        assert!(
            lines[4].starts_with("actix") && lines[4].ends_with("10.00"),
            "{t}"
        );
        let json = serde_json::to_value(&doc).unwrap();
        assert_eq!(json["results"][0]["impl"], "takt");
        assert_eq!(json["results"][0]["median"], 10.0);
        assert_eq!(json["results"][0]["runs"], 5);
        assert!(json["results"][0]["ci95"].is_array());
        let back: Document = serde_json::from_value(json).unwrap();
        assert_eq!(back, doc);
    }
}
