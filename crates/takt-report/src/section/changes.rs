//! "What changed since the last run on this machine": `takt runs diff`'s
//! verdicts between the latest earlier report run whose documents name
//! the same machine and this run ([`Changes`], filled by takt-lab from
//! the run records) — a count per verdict first, then only the rows that
//! improved or regressed, in full.

use std::fmt::Write as _;

use crate::html::{esc, num, Cell, CellTable};
use crate::input::{ChangeSide, Changes, Comparison};

/// "12.4 ± 0.30", the bound, or "–".
fn side(s: &ChangeSide) -> String {
    match (s.median, s.ci95, &s.bound) {
        (Some(m), Some([lo, hi]), _) if lo.is_finite() && hi.is_finite() => {
            format!("{} ± {}", num(m), num((hi - lo) / 2.0))
        }
        (Some(m), _, _) => num(m),
        (None, _, Some(b)) => b.clone(),
        (None, _, None) => "–".into(),
    }
}

/// A percentage threshold as set: `5`, `2.5`.
fn pct(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        num(v)
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn compared(c: &Comparison) -> String {
    let n = &c.counts;
    let same = n.small + n.within_noise;
    let mut out = format!(
        "<p>This run (stored as run {}, commit <code>{}</code>) against run {} of {} (commit <code>{}</code>, \
         <code>{}</code>) on the same machine, {}: ",
        c.current.id,
        esc(&c.current.commit),
        c.earlier.id,
        esc(&c.earlier.started),
        esc(&c.earlier.commit),
        esc(&c.earlier.command),
        esc(&c.machine),
    );
    if n.improved + n.regressed == 0 {
        let _ = write!(
            out,
            "<strong>nothing changed beyond the runs' noise</strong> ({} the same",
            plural(same, "row", "rows")
        );
    } else {
        let _ = write!(
            out,
            "<strong>{} improved, {} regressed</strong>, {} the same",
            plural(n.improved, "row", "rows"),
            n.regressed,
            same
        );
    }
    let _ = write!(
        out,
        ": {} within noise, {} beyond it but under {}%",
        n.within_noise,
        n.small,
        pct(c.min_change_pct)
    );
    if n.improved + n.regressed == 0 {
        out.push(')');
    }
    let mut rest = Vec::new();
    if n.unjudged > 0 {
        rest.push(format!(
            "{} not judged (a bound, one repetition or a changed unit)",
            n.unjudged
        ));
    }
    if n.only_earlier > 0 {
        rest.push(format!("{} only in run {}", n.only_earlier, c.earlier.id));
    }
    if n.only_current > 0 {
        rest.push(format!("{} only in this run", n.only_current));
    }
    if !rest.is_empty() {
        let _ = write!(out, "; {}", rest.join(", "));
    }
    out.push_str(".</p>\n");
    for caution in &c.cautions {
        let _ = writeln!(
            out,
            "<p><span class=\"warn\">Caution:</span> {}.</p>",
            esc(caution)
        );
    }
    if !c.changed.is_empty() {
        let mut t = CellTable::new([
            "suite · row",
            "impl",
            "parameters",
            "unit",
            &format!("run {}", c.earlier.id),
            "this run",
            "change",
            "p",
            "verdict",
        ]);
        for r in &c.changed {
            t.row_class(
                vec![
                    Cell::text(format!("{} · {}", r.suite, r.name)),
                    Cell::text(&r.implementation),
                    Cell::text(&r.params),
                    Cell::text(&r.unit),
                    Cell::Num(side(&r.earlier)),
                    Cell::Num(side(&r.current)),
                    r.change_pct.map_or(Cell::Empty, |p| {
                        Cell::Num(format!("{p:+.1}%").replace('-', "−"))
                    }),
                    r.p_value
                        .map_or(Cell::Empty, |p| Cell::Num(format!("{p:.3}"))),
                    Cell::text(if r.improved { "improved" } else { "regressed" }),
                ],
                if r.improved { "" } else { "flag" },
            );
        }
        out.push_str(&t.render());
    }
    let _ = writeln!(
        out,
        "<div class=\"how\"><b>Reproduce:</b> <code>{}</code> (every row, the unchanged ones too).<br>\
         <b>Method:</b> rows matched by suite, name, implementation and parameters; {} ({}%). A change of the \
         machine's load or of the host between the runs moves figures too: the verdicts say what changed, not why.</div>",
        esc(&c.command),
        esc(&c.method),
        pct(c.min_change_pct)
    );
    out
}

/// The section's content.
pub(crate) fn render(changes: Option<&Changes>) -> String {
    match changes {
        Some(Changes::Compared(c)) => compared(c),
        Some(Changes::NoEarlierRun {
            machine,
            other_machines,
        }) => {
            let mut out = format!(
                "<p>No earlier report run from this machine ({}) is in the records: nothing to compare with. The \
                 next <code>takt report</code> here is compared with this one.",
                esc(machine)
            );
            if *other_machines > 0 {
                let _ = write!(
                    out,
                    " {} from other machines {} not compared: their figures say nothing about this one.",
                    plural(*other_machines, "report run", "report runs"),
                    if *other_machines == 1 { "is" } else { "are" }
                );
            }
            out.push_str("</p>\n");
            out
        }
        Some(Changes::NotCompared { reason }) => format!(
            "<p class=\"missing\"><strong>Not compared:</strong> {}.</p>\n",
            esc(reason)
        ),
        None => "<p class=\"missing\"><strong>Not compared:</strong> this report was not made by a measuring \
                 <code>takt report</code> (which compares its run with the last one on the same machine); \
                 <code>takt runs diff A B</code> compares any two stored runs.</p>\n"
            .into(),
    }
}
