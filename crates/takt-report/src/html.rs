//! HTML building blocks: escaping, numbers, tables with units, and the
//! page around the sections (inline CSS; no scripts, no external resources).

use takt_measure::table::{Align, Table, TableRow};

/// Escapes text for element content and attribute values.
pub fn esc(s: &str) -> String {
    takt_measure::table::html_escape(s)
}

/// A number with 3–4 significant digits, plainly (`0.359`, `12.4`, `1.23e6`).
pub fn num(v: f64) -> String {
    takt_measure::table::fmt_num(v)
}

/// One table cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Left-aligned text (escaped when rendered).
    Text(String),
    /// Right-aligned number text (escaped when rendered).
    Num(String),
    /// Pre-rendered HTML, left-aligned.
    Html(String),
    /// Nothing to show.
    Empty,
}

impl Cell {
    /// A number formatted by [`num`].
    pub fn num(v: f64) -> Cell {
        Cell::Num(num(v))
    }

    /// A count or another whole number as such (`5`, not `5.00`); other
    /// values as [`Cell::num`].
    pub fn whole(v: f64) -> Cell {
        if v.fract() == 0.0 && v.abs() < 1e15 {
            Cell::Num(format!("{}", v as i64))
        } else {
            Cell::num(v)
        }
    }

    /// A number or an empty cell.
    pub fn opt(v: Option<f64>) -> Cell {
        v.map_or(Cell::Empty, Cell::num)
    }

    /// Text.
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    /// Whether the cell shows nothing.
    fn is_blank(&self) -> bool {
        match self {
            Cell::Text(s) | Cell::Num(s) | Cell::Html(s) => s.trim().is_empty(),
            Cell::Empty => true,
        }
    }
}

/// Past this many characters a text cell is a note: it keeps a readable
/// width (`span.long`, at least 15rem) instead of wrapping at every word.
pub const LONG_TEXT: usize = 60;

/// A table of typed cells, rendered with takt-measure's one table model
/// ([`takt_measure::table::Table::to_html`]): headers carry their units
/// (`median (ns/msg)`); a column with a number cell is a number column
/// (right-aligned), and a text cell in it stays left-aligned.
#[derive(Clone, Debug, Default)]
pub struct CellTable {
    head: Vec<String>,
    rows: Vec<(Vec<Cell>, &'static str)>,
}

impl CellTable {
    /// A table with these column headers.
    pub fn new<S: Into<String>>(head: impl IntoIterator<Item = S>) -> CellTable {
        CellTable {
            head: head.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (as many cells as headers; missing cells are empty).
    pub fn row(&mut self, cells: Vec<Cell>) {
        self.row_class(cells, "");
    }

    /// Adds a row with a CSS class (`flag`, `model`).
    pub fn row_class(&mut self, mut cells: Vec<Cell>, class: &'static str) {
        cells.resize(self.head.len(), Cell::Empty);
        self.rows.push((cells, class));
    }

    /// Whether no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table in takt-measure's model. A column with no cell to show
    /// is left out (an empty column only widens the table), and a text
    /// longer than [`LONG_TEXT`] characters keeps a readable width (CSS
    /// class `long`) rather than one word per line.
    pub fn to_table(&self) -> Table {
        let shown: Vec<usize> = (0..self.head.len())
            .filter(|&c| {
                self.rows.is_empty() || self.rows.iter().any(|(cells, _)| !cells[c].is_blank())
            })
            .collect();
        let numeric: Vec<bool> = shown
            .iter()
            .map(|&c| {
                self.rows
                    .iter()
                    .any(|(cells, _)| matches!(cells[c], Cell::Num(_)))
            })
            .collect();
        let mut t = Table::new();
        for (&c, &n) in shown.iter().zip(&numeric) {
            // `± ci95` stays one word when headers wrap
            t = t.column(
                self.head[c].replace("± ", "±\u{a0}"),
                if n { Align::Right } else { Align::Left },
            );
        }
        for (cells, class) in &self.rows {
            let cells: Vec<&Cell> = shown.iter().map(|&c| &cells[c]).collect();
            let text = cells
                .iter()
                .map(|c| match c {
                    Cell::Text(s) | Cell::Num(s) => s.clone(),
                    Cell::Html(_) | Cell::Empty => String::new(),
                })
                .collect();
            let mut row = TableRow::new(text);
            if !class.is_empty() {
                row = row.class(*class);
            }
            for (i, c) in cells.iter().enumerate() {
                match c {
                    Cell::Html(h) => row = row.html(i, h.clone()),
                    Cell::Text(s) if s.chars().count() > LONG_TEXT => {
                        row = row.html(i, format!("<span class=\"long\">{}</span>", esc(s)))
                    }
                    // text in a number column stays left-aligned
                    Cell::Text(s) if numeric[i] && !s.is_empty() => row = row.html(i, esc(s)),
                    _ => {}
                }
            }
            t.push_row(row);
        }
        t
    }

    /// The table as HTML.
    pub fn render(&self) -> String {
        self.to_table().to_html()
    }
}

/// A figure: an inline SVG chart with its caption.
pub fn figure(svg: &str, caption: &str) -> String {
    format!(
        "<figure class=\"plot\">{svg}<figcaption>{}</figcaption></figure>\n",
        esc(caption)
    )
}

/// The inline style sheet.
const CSS: &str = r#"
:root { --ink: #1d2330; --muted: #5b6474; --rule: #dde1e8; --accent: #0072b2; --warn: #a14a00; --bg: #fbfbfc; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 16px/1.55 "Iowan Old Style", "Palatino Linotype", Palatino, Georgia, serif; }
/* 77rem: at a 1280-pixel window the widest tables fit beside the margins */
main { max-width: 77rem; margin: 0 auto; padding: 2rem 1.5rem 4rem; }
h1, h2, h3 { font-family: "Helvetica Neue", Helvetica, Arial, sans-serif; line-height: 1.2; }
h1 { font-size: 2rem; margin: 0 0 .25rem; }
h2 { font-size: 1.45rem; margin: 2.75rem 0 .5rem; padding-top: .75rem; border-top: 2px solid var(--ink); }
h3 { font-size: 1.1rem; margin: 1.75rem 0 .4rem; }
p { max-width: 46rem; }
.lede { color: var(--muted); margin-top: 0; }
nav ul { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: .5rem 1.25rem;
  font-family: "Helvetica Neue", Helvetica, Arial, sans-serif; font-size: .95rem; }
a { color: var(--accent); }
/* a table wider than the page scrolls in its own box, never the page */
.scroll { overflow-x: auto; max-width: 100%; margin: .75rem 0 1rem; }
table { border-collapse: collapse; font: 13px/1.4 "Helvetica Neue", Helvetica, Arial, sans-serif;
  font-variant-numeric: tabular-nums; }
/* headers wrap between words, so a number column is as wide as its numbers */
th { text-align: left; font-weight: 600; border-bottom: 1.5px solid var(--ink); padding: .3rem .4rem; vertical-align: bottom; }
td { border-bottom: 1px solid var(--rule); padding: .25rem .4rem; vertical-align: top; }
td.n { text-align: right; white-space: nowrap; }
/* a long text (a note) keeps a readable width instead of one word per line */
td .long { display: inline-block; min-width: 15rem; }
tr.flag td { background: #fff4e8; }
tr.model td { color: var(--muted); font-style: italic; }
figure.plot { margin: 1rem 0 1.5rem; }
figure.plot svg { max-width: 100%; height: auto; border: 1px solid var(--rule); background: #fff; }
figcaption { font-size: .9rem; color: var(--muted); max-width: 46rem; }
.how { font: 13px/1.5 "Helvetica Neue", Helvetica, Arial, sans-serif; color: var(--muted);
  border-left: 3px solid var(--rule); padding: .2rem 0 .2rem .8rem; margin: .5rem 0 1.25rem; max-width: 52rem; }
.how code, code { font: 12.5px/1.4 "SFMono-Regular", Menlo, Consolas, monospace; background: #eef1f5; padding: 0 .25rem; border-radius: 3px; }
.warn { color: var(--warn); font-weight: 600; }
.missing { border: 1.5px dashed var(--warn); background: #fff8f0; padding: .75rem 1rem; border-radius: 4px; max-width: 46rem; }
.missing strong { color: var(--warn); }
.model-label { display: inline-block; font: 600 12px "Helvetica Neue", Helvetica, Arial, sans-serif;
  text-transform: uppercase; letter-spacing: .06em; color: #fff; background: var(--muted); padding: .1rem .45rem; border-radius: 3px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; font-size: .95rem; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; }
details { margin: .5rem 0; font-size: .92rem; }
summary { cursor: pointer; color: var(--muted); }
footer { margin-top: 3rem; color: var(--muted); font-size: .9rem; }
"#;

/// Wraps the sections into one self-contained page.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n{body}</main>\n</body>\n</html>\n",
        esc(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_numbers_align_right() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let mut t = CellTable::new(["name", "median (ns)"]);
        t.row(vec![Cell::text("<b>"), Cell::num(12.345)]);
        t.row(vec![Cell::text("short row")]);
        let h = t.render();
        assert!(
            h.contains("<td>&lt;b&gt;</td><td class=\"n\">12.3</td>"),
            "{h}"
        );
        assert_eq!(h.matches("<td").count(), 4);
    }

    #[test]
    fn empty_columns_are_left_out_and_long_text_keeps_a_width() {
        let mut t = CellTable::new(["name", "nothing", "value", "note"]);
        let note = "a note long enough to need a column of its own width, not one word per line";
        t.row(vec![
            Cell::text("a"),
            Cell::Empty,
            Cell::num(1.0),
            Cell::text(note),
        ]);
        t.row(vec![Cell::text("b"), Cell::text(" "), Cell::num(2.0)]);
        let h = t.render();
        assert!(!h.contains("nothing"), "{h}");
        assert_eq!(h.matches("<th>").count(), 3, "{h}");
        assert_eq!(h.matches("<td").count(), 6, "{h}");
        assert!(
            h.contains(&format!("<span class=\"long\">{note}</span>")),
            "{h}"
        );
        assert!(h.contains("<td>a</td><td class=\"n\">1.00</td>"), "{h}");
        // a table without rows keeps its headers
        assert_eq!(
            CellTable::new(["x", "y"]).render().matches("<th>").count(),
            2
        );
    }
}
