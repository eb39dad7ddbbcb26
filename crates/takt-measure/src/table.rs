//! The one table model for everything takt prints for people.
//!
//! A [`Table`] has typed columns: [`Align::Left`] for text, [`Align::Right`]
//! for numbers, so every table aligns the same way. Units belong in the
//! headers (`median (ns/msg)`), parameters get a column each, and columns
//! that stay empty in every row are left out.
//!
//! One model, three renderers:
//! - [`Table::render`]: text for a terminal or a pipe (comfy-table, a plain
//!   style: no borders, a `-` rule under the header, a space between
//!   columns, no trailing spaces);
//! - [`Table::to_markdown`]: a GitHub-flavoured Markdown table (the title
//!   as a bold line above it; `|` escaped, numbers right-aligned);
//! - [`Table::to_html`]: an HTML table for the report (every cell escaped
//!   unless it was given as HTML with [`TableRow::html`]; number cells
//!   carry `class="n"`, a row its [`TableRow::class`]).
//!
//! ```
//! use takt_measure::table::{Table, TableRow};
//!
//! let mut t = Table::titled("ping_pong").text("impl").number("median (ns)");
//! t.push(vec!["takt".into(), "9.5".into()]);
//! t.push_row(TableRow::new(vec!["a<b".into(), "12".into()]).class("flag"));
//! assert!(t.render().lines().any(|l| l.starts_with("takt ") && l.ends_with(" 9.5")));
//! assert!(t.to_markdown().contains("| takt | 9.5 |"));
//! assert!(t.to_html().contains("<tr class=\"flag\"><td>a&lt;b</td><td class=\"n\">12</td></tr>"));
//! ```
//!
//! [`group_rows`] splits result rows into groups that share a section and
//! a unit, with the union of their parameter names: the shape every
//! document table is built from.

use std::fmt;

use comfy_table::{CellAlignment, ColumnConstraint, ContentLineStyle, LineStyle, TableStyle};
use serde_json::Value;

use crate::result::ResultRow;

/// How a column's cells align.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text: names, parameters, verdicts.
    Left,
    /// Numbers.
    Right,
}

/// A table of strings with a title, headers and per-column alignment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    title: Option<String>,
    columns: Vec<(String, Align)>,
    /// Every row has exactly one cell per column.
    rows: Vec<Vec<String>>,
    /// Per row (same length as `rows`): its HTML class and HTML cells.
    html: Vec<RowHtml>,
}

/// What a row adds for the HTML renderer.
#[derive(Clone, Debug, Default, PartialEq)]
struct RowHtml {
    class: Option<String>,
    /// (column, pre-rendered HTML) replacing the escaped text there.
    cells: Vec<(usize, String)>,
}

/// A row with what only the HTML renderer uses: a CSS class for the row,
/// cells given as HTML (links, markup). The text renderers show the cells'
/// text.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableRow {
    cells: Vec<String>,
    html: RowHtml,
}

impl TableRow {
    /// A row of text cells.
    pub fn new(cells: Vec<String>) -> Self {
        TableRow {
            cells,
            html: RowHtml::default(),
        }
    }

    /// The row's CSS class in HTML (`flag`, `model`).
    pub fn class(mut self, class: impl Into<String>) -> Self {
        self.html.class = Some(class.into());
        self
    }

    /// Cell `column` in HTML is `html`, written as given (not escaped);
    /// its text (for the other renderers) stays the row's cell.
    pub fn html(mut self, column: usize, html: impl Into<String>) -> Self {
        self.html.cells.push((column, html.into()));
        self
    }
}

const STYLE: TableStyle = TableStyle::new()
    .header_lines(ContentLineStyle::none().junction(' '))
    .header_separator(LineStyle::none().fill('-').junction(' '))
    .content_lines(ContentLineStyle::none().junction(' '));

impl Table {
    /// An empty table without title.
    pub fn new() -> Self {
        Table::default()
    }

    /// An empty table printed under `title`.
    pub fn titled(title: impl Into<String>) -> Self {
        Table {
            title: Some(title.into()),
            ..Table::default()
        }
    }

    /// Adds a column.
    pub fn column(mut self, header: impl Into<String>, align: Align) -> Self {
        self.columns.push((header.into(), align));
        self
    }

    /// Adds a left-aligned (text) column.
    pub fn text(self, header: impl Into<String>) -> Self {
        self.column(header, Align::Left)
    }

    /// Adds a right-aligned (number) column.
    pub fn number(self, header: impl Into<String>) -> Self {
        self.column(header, Align::Right)
    }

    /// Appends a row. Missing cells are empty; cells beyond the columns are
    /// dropped (a caller's bug, which shows as a short row rather than a
    /// panic in the middle of a report).
    pub fn push(&mut self, mut cells: Vec<String>) {
        debug_assert!(
            cells.len() <= self.columns.len(),
            "{} cells for {} columns",
            cells.len(),
            self.columns.len()
        );
        cells.resize(self.columns.len(), String::new());
        self.rows.push(cells);
        self.html.push(RowHtml::default());
    }

    /// Appends a row with its HTML extras (see [`Table::push`] for short
    /// and long rows).
    pub fn push_row(&mut self, row: TableRow) {
        self.push(row.cells);
        if let Some(last) = self.html.last_mut() {
            *last = row.html;
        }
    }

    /// The title, if any.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The headers, in order.
    pub fn headers(&self) -> impl Iterator<Item = &str> {
        self.columns.iter().map(|(h, _)| h.as_str())
    }

    /// The cells of row `i`.
    pub fn row(&self, i: usize) -> Option<&[String]> {
        self.rows.get(i).map(Vec::as_slice)
    }

    /// Removes the columns whose cells are empty in every row.
    pub fn drop_empty_columns(&mut self) {
        let keep: Vec<bool> = (0..self.columns.len())
            .map(|c| self.rows.iter().any(|r| !r[c].is_empty()))
            .collect();
        let mut k = keep.iter();
        self.columns.retain(|_| *k.next().unwrap_or(&true));
        for r in &mut self.rows {
            let mut k = keep.iter();
            r.retain(|_| *k.next().unwrap_or(&true));
        }
        // Renumber the HTML cells' columns to the kept ones.
        let new_index: Vec<Option<usize>> = keep
            .iter()
            .scan(0, |n, &k| {
                let i = k.then_some(*n);
                *n += usize::from(k);
                Some(i)
            })
            .collect();
        for h in &mut self.html {
            h.cells = std::mem::take(&mut h.cells)
                .into_iter()
                .filter_map(|(c, html)| Some((new_index.get(c).copied().flatten()?, html)))
                .collect();
        }
    }

    /// The table as text: the title line, headers, a rule, the rows; no
    /// trailing spaces; ends with a newline.
    pub fn render(&self) -> String {
        let mut t = comfy_table::Table::new();
        t.load_style(STYLE);
        t.set_header(self.columns.iter().map(|(h, _)| h.clone()));
        for r in &self.rows {
            t.add_row(r.clone());
        }
        for (i, (_, align)) in self.columns.iter().enumerate() {
            if let Some(c) = t.column_mut(i) {
                c.set_padding((0, 1));
                c.set_cell_alignment(match align {
                    Align::Left => CellAlignment::Left,
                    Align::Right => CellAlignment::Right,
                });
                c.set_constraint(ColumnConstraint::ContentWidth);
            }
        }
        let mut out = String::new();
        if let Some(title) = &self.title {
            out.push_str(title);
            out.push('\n');
        }
        for line in t.lines() {
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

impl Table {
    /// The table as GitHub-flavoured Markdown: the title as a bold line
    /// and a blank line, the header row, the alignment row (`---` text,
    /// `--:` numbers), one line per row. Cells are escaped (`|`, `\`,
    /// line breaks as `<br>`); ends with a newline. A table without
    /// columns is its title only.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        if let Some(title) = &self.title {
            out.push_str(&format!("**{}**\n\n", md_escape(title)));
        }
        if self.columns.is_empty() {
            return out;
        }
        let line = |cells: &mut dyn Iterator<Item = String>| {
            let mut l = String::from("|");
            for c in cells {
                l.push(' ');
                l.push_str(&c);
                l.push_str(" |");
            }
            l.push('\n');
            l
        };
        out.push_str(&line(&mut self.columns.iter().map(|(h, _)| md_escape(h))));
        out.push_str(&line(&mut self.columns.iter().map(|(_, a)| {
            match a {
                Align::Left => "---",
                Align::Right => "--:",
            }
            .to_string()
        })));
        for r in &self.rows {
            out.push_str(&line(&mut r.iter().map(|c| md_escape(c))));
        }
        out
    }

    /// The table as HTML: `<div class="scroll"><table>` with the title as
    /// its `<caption>`, a `<thead>` of the headers and a `<tbody>`; every
    /// text escaped ([`html_escape`]) except cells given with
    /// [`TableRow::html`]; non-empty cells of number columns carry
    /// `class="n"` (right-aligned by the report's style sheet), rows their
    /// [`TableRow::class`]. Ends with a newline.
    pub fn to_html(&self) -> String {
        let mut out = String::from("<div class=\"scroll\"><table>\n");
        if let Some(title) = &self.title {
            out.push_str(&format!("<caption>{}</caption>\n", html_escape(title)));
        }
        out.push_str("<thead><tr>");
        for (h, _) in &self.columns {
            out.push_str(&format!("<th>{}</th>", html_escape(h)));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for (r, extra) in self.rows.iter().zip(&self.html) {
            match &extra.class {
                Some(class) => out.push_str(&format!("<tr class=\"{}\">", html_escape(class))),
                None => out.push_str("<tr>"),
            }
            for (i, (cell, (_, align))) in r.iter().zip(&self.columns).enumerate() {
                let html = extra.cells.iter().rev().find(|(c, _)| *c == i);
                match (html, align) {
                    (Some((_, h)), _) => out.push_str(&format!("<td>{h}</td>")),
                    (None, _) if cell.is_empty() => out.push_str("<td></td>"),
                    (None, Align::Right) => {
                        out.push_str(&format!("<td class=\"n\">{}</td>", html_escape(cell)))
                    }
                    (None, Align::Left) => out.push_str(&format!("<td>{}</td>", html_escape(cell))),
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table></div>\n");
        out
    }
}

/// Escapes text for HTML element content and attribute values (`&`, `<`,
/// `>`, `"`, `'`).
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes text for a Markdown table cell: `\` and `|` get a backslash,
/// a line break becomes `<br>`.
fn md_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '|' => out.push_str("\\|"),
            '\n' => out.push_str("<br>"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

/// Formats a value with 3–4 significant digits, plainly (`1.23e6` from a
/// million on).
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a >= 1e6 {
        format!("{v:.3e}")
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

/// A parameter value as a cell: strings without quotes, numbers plainly.
pub fn fmt_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A row's parameters as one `key=value key=value` label, in order: for
/// naming a row in running text, not for table columns.
pub fn params_label(row: &ResultRow) -> String {
    row.params
        .iter()
        .map(|(k, v)| format!("{k}={}", fmt_value(v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Rows that share a section and a unit: one table.
#[derive(Clone, Debug)]
pub struct RowGroup<'a> {
    /// The section (the benchmark name, a measurement family, ...).
    pub section: String,
    /// The unit every row of the group has.
    pub unit: String,
    /// The parameter names of the rows, in first-seen order.
    pub params: Vec<String>,
    /// The rows, in document order.
    pub rows: Vec<&'a ResultRow>,
}

impl RowGroup<'_> {
    /// Whether every row's value of parameter `key` is a number (or absent),
    /// so its column aligns right.
    pub fn numeric_param(&self, key: &str) -> bool {
        self.rows
            .iter()
            .all(|r| r.params.get(key).is_none_or(Value::is_number))
    }

    /// Removes from [`params`](Self::params) every parameter that has the
    /// same value in every row of the group and returns them as
    /// `key=value` labels in order, for the table's title: a column that
    /// never changes says nothing a title line cannot.
    pub fn lift_constants(&mut self) -> Vec<String> {
        let mut lifted = Vec::new();
        let rows = &self.rows;
        self.params.retain(|k| {
            let first = rows.first().and_then(|r| r.params.get(k));
            let constant = first.is_some() && rows.iter().all(|r| r.params.get(k) == first);
            if constant {
                lifted.push(format!("{k}={}", fmt_value(first.expect("checked"))));
            }
            !constant
        });
        lifted
    }

    /// The group's title: the section, then the lifted constant
    /// parameters, if any, in parentheses.
    pub fn title(&self, lifted: &[String]) -> String {
        if lifted.is_empty() {
            self.section.clone()
        } else {
            format!("{} ({})", self.section, lifted.join(", "))
        }
    }

    /// Adds one column per parameter to `table`.
    pub fn param_columns(&self, mut table: Table) -> Table {
        for k in &self.params {
            let align = if self.numeric_param(k) {
                Align::Right
            } else {
                Align::Left
            };
            table = table.column(k.clone(), align);
        }
        table
    }

    /// `row`'s parameter cells, in the group's parameter order.
    pub fn param_cells(&self, row: &ResultRow) -> Vec<String> {
        self.params
            .iter()
            .map(|k| row.params.get(k).map(fmt_value).unwrap_or_default())
            .collect()
    }
}

/// Splits `rows` into groups by `(section(row), unit)`, groups in order of
/// first appearance, rows in document order within each.
pub fn group_rows<'a>(
    rows: impl IntoIterator<Item = &'a ResultRow>,
    section: impl Fn(&ResultRow) -> String,
) -> Vec<RowGroup<'a>> {
    let mut groups: Vec<RowGroup<'a>> = Vec::new();
    for r in rows {
        let s = section(r);
        let g = match groups
            .iter_mut()
            .position(|g| g.section == s && g.unit == r.unit)
        {
            Some(i) => &mut groups[i],
            None => {
                groups.push(RowGroup {
                    section: s,
                    unit: r.unit.clone(),
                    params: Vec::new(),
                    rows: Vec::new(),
                });
                groups.last_mut().expect("just pushed")
            }
        };
        for k in r.params.keys() {
            if !g.params.contains(k) {
                g.params.push(k.clone());
            }
        }
        g.rows.push(r);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Better;

    #[test]
    fn text_left_numbers_right_no_trailing_space() {
        let mut t = Table::titled("ping_pong")
            .text("impl")
            .number("median (ns)");
        t.push(vec!["takt".into(), "9.5".into()]);
        t.push(vec!["kameo".into(), "1234".into()]);
        let s = t.render();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "ping_pong");
        assert_eq!(lines[1], "impl   median (ns)");
        assert_eq!(lines[2], "------ ------------");
        assert_eq!(lines[3], "takt           9.5");
        assert_eq!(lines[4], "kameo         1234");
        assert!(s.lines().all(|l| l == l.trim_end()), "{s}");
    }

    #[test]
    fn empty_columns_are_dropped_and_short_rows_padded() {
        let mut t = Table::new().text("a").number("b").text("c");
        t.push(vec!["x".into(), String::new(), "z".into()]);
        t.push(vec!["y".into()]);
        t.drop_empty_columns();
        assert_eq!(t.headers().collect::<Vec<_>>(), ["a", "c"]);
        assert_eq!(t.row(0).unwrap(), ["x", "z"]);
        assert_eq!(t.row(1).unwrap(), ["y", ""]);
    }

    #[test]
    fn groups_split_by_section_and_unit_with_param_union() {
        let row = |name: &str, unit: &str, p: serde_json::Map<String, Value>| {
            ResultRow::new(name, "takt", p, unit, Better::Lower, vec![1.0], 0.0)
        };
        let rows = [
            row("a", "ns", crate::params![("threads", 1)]),
            row("b", "ns", crate::params![("mode", "x")]),
            row("a", "ns", crate::params![("threads", 2), ("spin", "0")]),
            row("a", "us", crate::params![]),
        ];
        let g = group_rows(&rows, |r| r.name.clone());
        assert_eq!(g.len(), 3);
        assert_eq!((g[0].section.as_str(), g[0].unit.as_str()), ("a", "ns"));
        assert_eq!(g[0].params, ["threads", "spin"]);
        assert_eq!(g[0].rows.len(), 2);
        assert!(g[0].numeric_param("threads"));
        assert!(!g[0].numeric_param("spin"));
        assert_eq!(g[0].param_cells(g[0].rows[0]), ["1", ""]);
        assert_eq!(g[2].unit, "us");
        assert_eq!(params_label(&rows[2]), "spin=0 threads=2");
        let mut g0 = g[0].clone();
        assert!(
            g0.lift_constants().is_empty(),
            "threads differs, spin is absent once"
        );
        let mut g1 = g[1].clone();
        let lifted = g1.lift_constants();
        assert_eq!(lifted, ["mode=x"]);
        assert!(g1.params.is_empty());
        assert_eq!(g1.title(&lifted), "b (mode=x)");
    }

    #[test]
    fn markdown_aligns_numbers_and_escapes_cells() {
        let mut t = Table::titled("a | b").text("name").number("median (ns)");
        t.push(vec!["x|y".into(), "1.5".into()]);
        t.push(vec!["two\nlines".into(), String::new()]);
        let md = t.to_markdown();
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines[0], "**a \\| b**");
        assert_eq!(lines[1], "");
        assert_eq!(lines[2], "| name | median (ns) |");
        assert_eq!(lines[3], "| --- | --: |");
        assert_eq!(lines[4], "| x\\|y | 1.5 |");
        assert_eq!(lines[5], "| two<br>lines |  |");
        assert!(md.ends_with('\n'));
        assert_eq!(Table::titled("only").to_markdown(), "**only**\n\n");
    }

    #[test]
    fn html_escapes_text_and_keeps_given_html() {
        assert_eq!(
            html_escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let mut t = Table::new().text("name").number("median (ns)").text("link");
        t.push(vec!["<b>".into(), "12.3".into()]);
        t.push_row(
            TableRow::new(vec!["short row".into()])
                .class("flag")
                .html(2, "<a href=\"#x\">x</a>"),
        );
        let h = t.to_html();
        assert!(
            h.starts_with("<div class=\"scroll\"><table>\n<thead><tr><th>name</th>"),
            "{h}"
        );
        assert!(
            h.contains("<tr><td>&lt;b&gt;</td><td class=\"n\">12.3</td><td></td></tr>"),
            "{h}"
        );
        assert!(
            h.contains(
                "<tr class=\"flag\"><td>short row</td><td></td><td><a href=\"#x\">x</a></td></tr>"
            ),
            "{h}"
        );
        assert_eq!(h.matches("<td").count(), 6);
        assert!(h.ends_with("</tbody></table></div>\n"));
        // the text renderers show the cell's text, not the HTML
        assert!(!t.render().contains("href"));
        // dropping an empty column keeps the HTML cells on their columns
        let mut t = Table::titled("t<1>").text("a").number("b").text("c");
        t.push_row(TableRow::new(vec!["x".into(), String::new(), "y".into()]).html(2, "<i>y</i>"));
        t.drop_empty_columns();
        let h = t.to_html();
        assert!(h.contains("<caption>t&lt;1&gt;</caption>"), "{h}");
        assert!(h.contains("<tr><td>x</td><td><i>y</i></td></tr>"), "{h}");
    }

    #[test]
    fn numbers_keep_three_or_four_digits() {
        assert_eq!(fmt_num(0.012345), "0.012");
        assert_eq!(fmt_num(1.2345), "1.23");
        assert_eq!(fmt_num(12.345), "12.3");
        assert_eq!(fmt_num(1234.4), "1234");
        assert_eq!(fmt_num(2.5e7), "2.500e7");
        assert_eq!(fmt_num(f64::NAN), "NaN");
    }
}
