//! The one table model for everything takt prints for people.
//!
//! A [`Table`] has typed columns: [`Align::Left`] for text, [`Align::Right`]
//! for numbers, so every table aligns the same way. Units belong in the
//! headers (`median (ns/msg)`), parameters get a column each, and columns
//! that stay empty in every row are left out. Rendering is comfy-table's,
//! with a plain style (no borders, a `-` rule under the header, two spaces
//! between columns) that reads well in a terminal and in a pipe.
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
    rows: Vec<Vec<String>>,
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
