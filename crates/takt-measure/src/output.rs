//! Printing result documents: a human table by default, exactly one JSON
//! document on stdout with `--json`.

use std::io::Write;

use serde_json::Value;

use crate::result::{Document, ResultRow};

/// Formats a value with 3–4 significant digits, plainly.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.3e}", v)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// `key=value` pairs of a row's params, in order.
pub fn fmt_params(row: &ResultRow) -> String {
    row.params
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Renders the rows as an aligned text table. The `vs takt` column gives,
/// for every peer row, how many times better the takt row with the same
/// name and params is (> 1: takt is better).
pub fn render_table(doc: &Document) -> String {
    let header = [
        "benchmark",
        "impl",
        "params",
        "median",
        "ci95 ±",
        "min..max",
        "unit",
        "cpu s/run",
        "published",
        "takt ×",
    ];
    let mut rows: Vec<[String; 10]> = Vec::new();
    for r in &doc.results {
        let ci = (r.summary.ci95[1] - r.summary.ci95[0]) / 2.0;
        let vs = if r.implementation != "takt" {
            doc.peer_of(r, "takt")
                .map(|t| format!("{:.2}", t.advantage_over(r)))
                .unwrap_or_default()
        } else {
            String::new()
        };
        rows.push([
            r.name.clone(),
            r.implementation.clone(),
            fmt_params(r),
            fmt_num(r.summary.median),
            fmt_num(ci),
            format!("{}..{}", fmt_num(r.summary.min), fmt_num(r.summary.max)),
            r.unit.clone(),
            fmt_num(r.cpu_s),
            r.published.map(fmt_num).unwrap_or_default(),
            vs,
        ]);
    }
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: &[String], out: &mut String| {
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            let pad = w - c.chars().count();
            // Numbers right-aligned, text left-aligned.
            if (3..=5).contains(&i) || (7..=9).contains(&i) {
                out.push_str(&" ".repeat(pad));
                out.push_str(c);
            } else {
                out.push_str(c);
                out.push_str(&" ".repeat(pad));
            }
            out.push_str("  ");
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
    };
    line(&header.map(String::from), &mut out);
    line(&widths.map(|w| "-".repeat(w)), &mut out);
    for row in &rows {
        line(row, &mut out);
    }
    let m = &doc.machine;
    out.push_str(&format!(
        "\n{} · {} CPUs · kernel {} · {} · commit {} · steal {:.1}% · load {:.2}\n",
        m.cpu, m.cpus, m.kernel, m.profile, m.commit, m.steal_pct, m.load[0]
    ));
    for n in &doc.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// Writes the document to stdout: JSON if `json`, else the table. A closed
/// pipe is not an error.
pub fn emit(doc: &Document, json: bool) -> std::io::Result<()> {
    let text = if json {
        let mut s = serde_json::to_string_pretty(doc).map_err(std::io::Error::other)?;
        s.push('\n');
        s
    } else {
        render_table(doc)
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{Better, DocumentBuilder};

    #[test]
    fn table_shows_ratio_against_takt() {
        let mut b = DocumentBuilder::start("test");
        b.push(ResultRow::new(
            "ping_pong",
            "takt",
            crate::params![("threads", 1)],
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
        let t = render_table(&doc);
        assert!(t.contains("10.00"), "{t}");
        let json = serde_json::to_value(&doc).unwrap();
        assert_eq!(json["results"][0]["impl"], "takt");
        assert_eq!(json["results"][0]["median"], 10.0);
        assert_eq!(json["results"][0]["runs"], 5);
        assert!(json["results"][0]["ci95"].is_array());
        let back: Document = serde_json::from_value(json).unwrap();
        assert_eq!(back, doc);
    }
}
