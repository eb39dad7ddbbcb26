//! The "beyond this machine" section: the scaling model's predictions,
//! its 2-thread check, and its assumptions.

use takt_measure::result::Document;

use crate::html::{esc, figure, num, Cell, CellTable};
use crate::scaling_model::{fit_agents, fit_sip, fit_sme, Fit, Growth, PREDICT_AT};
use takt_measure::chart::{Axis, Chart, Series};

const ASSUMPTIONS: &str = "<p><span class=\"model-label\">Model</span> These are predictions, not measurements. \
    For a workload whose unit of work is an item (a process step, a message), the time per item on <i>n</i> threads is \
    modelled as <code>t(n) = w/n + s + δ·g(n) + ω·u</code>: <i>w</i> is the work that divides over threads, <i>s</i> the \
    per-item cost that does not, <i>δ</i> the cost each extra thread adds — barrier arrivals and wake-ups for SME \
    (<code>g(n) = n − 1</code>, a central barrier on the critical path), cross-thread hand-offs for agents \
    (<code>g(n) = c(n)/n</code>: the share <i>c</i> of messages whose receiver runs elsewhere, each adding to work that \
    divides over n busy threads; <i>c</i>(2) counted in the 2-thread run, growing like an even spread beyond) — and, for \
    agents, <i>u</i> wake-ups of a parked thread per message at <i>ω</i> each. <i>w + s</i> is the workload's own \
    one-thread measurement; the costs come from other rows of the same run: SME's barrier cost per cycle against the \
    thread count (<code>sync_cost</code>, a least-squares line, δ ≥ 0); for agents, <i>δ</i> from \
    <code>ping_pong_in_flight</code> (100 messages in flight between two busy threads: a queue hand-off) and <i>ω</i> \
    from <code>ping_pong</code> (one message in flight, its receiver waiting: the excess per wake-up it counted, an \
    upper bound). <i>c</i>(2) and <i>u</i> are counts the pool's scheduling decided in the 2-thread run itself, not \
    times, so the wake term appears only where that run parked threads. Contention on a pool's shared run queue is \
    not in the model (thread_pool's one queue is touched by every hop): the error column shows what it costs. The \
    2-thread prediction is checked against the 2-thread measurement of the workload. \
    Assumed: one core per thread, the working set still fits the caches it had, memory bandwidth and NUMA distance \
    do not bind, wake-ups per message stay as counted at two threads, and this machine's \
    synchronization costs hold on the larger one. A virtual machine with two vCPUs is a poor witness for 64 cores: \
    read the curves as the shape the measured costs imply, not as a promise.</p>\n";

fn fits_table(fits: &[Fit]) -> CellTable {
    let mut head = vec![
        "workload".to_string(),
        "unit".into(),
        "measured 1 thread".into(),
        "s".into(),
        "δ".into(),
        "wake ω × u".into(),
        "predicted 2".into(),
        "measured 2".into(),
        "error".into(),
    ];
    head.extend(PREDICT_AT[1..].iter().map(|n| format!("speedup ×{n}")));
    let mut t = CellTable::new(head);
    for f in fits {
        let mut cells = vec![
            Cell::text(&f.label),
            Cell::text(&f.unit),
            Cell::num(f.t1),
            Cell::num(f.s),
            Cell::num(f.delta),
            match f.wake {
                Some(k) => Cell::Num(format!("{} × {}", num(k.cost), num(k.per_item))),
                None => Cell::Empty,
            },
            Cell::num(f.predict(2.0)),
            Cell::opt(f.measured_2_threads),
            match f.error_at_2_threads() {
                Some(e) => Cell::Num(format!("{:+.0}%", e * 100.0)),
                None => Cell::text("not checked"),
            },
        ];
        cells.extend(
            PREDICT_AT[1..]
                .iter()
                .map(|&n| Cell::num(f.speedup(f64::from(n)))),
        );
        t.row(cells);
    }
    t
}

/// Where each row's costs come from, one item per row below the table: a
/// source is a sentence or a paragraph, too long for a column of a table
/// this wide.
fn sources(fits: &[Fit]) -> String {
    let items: Vec<String> = fits
        .iter()
        .filter(|f| !f.source.is_empty())
        .map(|f| format!("<li><b>{}</b>: {}</li>", esc(&f.label), esc(&f.source)))
        .collect();
    if items.is_empty() {
        return String::new();
    }
    format!(
        "<details><summary>What each row is fitted from ({} rows)</summary><ul>\n{}\n</ul></details>\n",
        items.len(),
        items.join("\n")
    )
}

/// A 2-thread error beyond this (either way) is a miss the section explains.
const MISS: f64 = 0.25;

/// Why the 2-thread checks that missed by more than [`MISS`] missed, as
/// far as the rows tell.
fn misses(fits: &[Fit]) -> String {
    let why: Vec<String> = fits
        .iter()
        .filter_map(|f| {
            let e = f.error_at_2_threads()?;
            if e.abs() <= MISS {
                return None;
            }
            let mut reasons = Vec::new();
            let shared_queue = f.label.contains("thread_pool");
            if let Growth::Crossing { share2 } = f.growth {
                // a shared queue hands any ready agent to either thread: few
                // crossings there say nothing about where the ring stayed
                if share2 < 0.05 && !shared_queue {
                    reasons.push(format!(
                        "the pool kept the ring on the worker that sent each token ({:.2}% of messages crossed), \
                         so its work did not divide over two threads as the model assumes — the measured time \
                         is {} that of one thread",
                        share2 * 100.0,
                        f.measured_2_threads
                            .map_or_else(String::new, |m| format!("{:.1}×", m / f.t1))
                    ));
                }
            }
            if shared_queue {
                reasons.push(
                    "every hop passes the pool's one shared run queue, touched by both threads: contention the \
                     model leaves out"
                        .into(),
                );
            }
            if reasons.is_empty() {
                reasons.push("a cost none of the fitted rows measures".into());
            }
            Some(format!(
                "<li><b>{}</b>: predicted {:+.0}% off the measurement; {}.</li>",
                esc(&f.label),
                e * 100.0,
                esc(&reasons.join("; "))
            ))
        })
        .collect();
    if why.is_empty() {
        return String::new();
    }
    format!(
        "<p>Where the 2-thread check misses by more than {:.0}%:</p>\n<ul>\n{}\n</ul>\n",
        MISS * 100.0,
        why.join("\n")
    )
}

fn speedup_chart(fits: &[Fit]) -> Option<String> {
    let mut series = Vec::new();
    for f in fits.iter().take(6) {
        let mut pts = vec![(1.0, 1.0)];
        pts.extend(
            PREDICT_AT
                .iter()
                .map(|&n| (f64::from(n), f.speedup(f64::from(n)))),
        );
        series.push(Series::new(format!("{} (model)", f.label), pts).dashed());
        if let Some(m) = f.measured_2_threads {
            series.push(Series::new(
                format!("{} (measured)", f.label),
                vec![(1.0, 1.0), (2.0, f.t1 / m)],
            ));
        }
    }
    Chart {
        series,
        ..Chart::new(
            Axis::log("threads (cores)"),
            Axis::log("speedup over one thread"),
        )
    }
    .to_svg()
    .ok()
}

pub(crate) fn render(
    sme: Option<&Document>,
    agents: Option<&Document>,
    sip: Option<&Document>,
) -> String {
    let mut out = String::from(ASSUMPTIONS);
    for (title, doc, fit) in [
        ("SME", sme, fit_sme as fn(&Document) -> Vec<Fit>),
        ("Agents", agents, fit_agents),
    ] {
        out.push_str(&format!("<h3>{title}</h3>\n"));
        let Some(doc) = doc else {
            out.push_str("<p class=\"missing\"><strong>Not modelled:</strong> its stage was not measured in this run.</p>\n");
            continue;
        };
        let fits = fit(doc);
        if fits.is_empty() {
            out.push_str("<p class=\"missing\"><strong>Not modelled:</strong> the document lacks the one-thread rows or the synchronization rows the model is fitted on (SME: <code>sync_cost</code>; agents: <code>ping_pong</code> and <code>ping_pong_in_flight</code>, on one thread and a thread per agent).</p>\n");
            continue;
        }
        if let Some(svg) = speedup_chart(&fits) {
            out.push_str(&figure(
                &svg,
                &format!("{title}: predicted speedup to 64 threads (dashed) and the measured 2-thread speedup (solid). Log–log."),
            ));
        }
        out.push_str(&fits_table(&fits).render());
        out.push_str(&sources(&fits));
        out.push_str(&misses(&fits));
    }
    out.push_str("<h3>SIP</h3>\n");
    match sip.map(fit_sip) {
        None => out.push_str("<p class=\"missing\"><strong>Not modelled:</strong> the SIP stage was not measured in this run.</p>\n"),
        Some(fits) if fits.is_empty() => out.push_str("<p class=\"missing\"><strong>Not modelled:</strong> the SIP document has no CPU-per-call rows.</p>\n"),
        Some(fits) => {
            out.push_str("<p>Calls per second the proxy's CPU would carry on <i>n</i> cores: one core carries 10⁶ / (CPU µs per call); the share of messages that found a lock taken is treated as serialized (Amdahl). Not checked: <code>sip load</code> runs one worker count, and its call rate is fixed below capacity.</p>\n");
            let mut head = vec!["case".to_string(), "CPU per call (µs)".into(), "serialized share".into()];
            head.extend([1u32, 4, 8, 16, 32, 64].iter().map(|n| format!("calls/s ×{n}")));
            let mut t = CellTable::new(head);
            for f in &fits {
                let mut cells = vec![Cell::text(&f.label), Cell::num(f.cpu_per_call_us), Cell::Num(format!("{:.3}", f.serial))];
                cells.extend([1u32, 4, 8, 16, 32, 64].iter().map(|&n| Cell::Num(num(f.capacity(f64::from(n))))));
                t.row_class(cells, "model");
            }
            out.push_str(&t.render());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaling_model::Wake;

    fn fit(label: &str, share2: f64, measured_2_threads: f64) -> Fit {
        Fit {
            label: label.into(),
            unit: "ns/msg".into(),
            t1: 10.0,
            s: 0.0,
            delta: 200.0,
            growth: Growth::Crossing { share2 },
            wake: None::<Wake>,
            measured_2_threads: Some(measured_2_threads),
            source: String::new(),
        }
    }

    /// A check within 25% says nothing; a miss names what the rows show.
    #[test]
    fn misses_are_explained_from_the_rows() {
        // 5 + 200·0.5/2 = 55: on the mark
        assert_eq!(
            misses(&[fit("agents customer_ring, thread_pool", 0.5, 55.0)]),
            ""
        );
        let m = misses(&[
            fit("agents customer_ring, work_stealing", 0.001, 15.0),
            fit("agents customer_ring, thread_pool", 0.01, 300.0),
        ]);
        assert!(m.contains("kept the ring") && m.contains("1.5×"), "{m}");
        assert!(m.contains("shared run queue") && m.contains("-98%"), "{m}");
        assert_eq!(m.matches("kept the ring").count(), 1, "{m}");
    }
}
