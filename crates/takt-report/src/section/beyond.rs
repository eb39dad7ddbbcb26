//! The "beyond this machine" section: the scaling model's predictions,
//! its 2-thread check, and its assumptions.

use takt_measure::result::Document;

use crate::html::{figure, num, Cell, Table};
use crate::model::{fit_agents, fit_sip, fit_sme, Fit, PREDICT_AT};
use crate::plot::{Chart, Scale, Series};

const ASSUMPTIONS: &str = "<p><span class=\"model-label\">Model</span> These are predictions, not measurements. \
    For a workload whose unit of work is an item (a process step, a message), the time per item on <i>n</i> threads is \
    modelled as <code>t(n) = w/n + s + δ·g(n)</code>: <i>w</i> is the work that divides over threads, <i>s</i> the \
    per-item cost that does not, <i>δ</i> the cost each extra thread adds — barrier arrivals and wake-ups for SME \
    (<code>g(n) = n − 1</code>, a central barrier), cross-thread hand-offs for agents (<code>g(n) = (n − 1)/n</code>, \
    the share of messages whose receiver runs elsewhere). <i>w + s</i> is the workload's own one-thread measurement; \
    <i>s</i> and <i>δ</i> come from other rows of the same run — least-squares lines, <i>δ</i> ≥ 0: SME's barrier cost \
    per cycle against the thread count (<code>sync_cost</code>), agents' time per message against the share of \
    messages that crossed threads (<code>ping_pong</code>'s placements) — so the 2-thread prediction is checked \
    against the 2-thread measurement of the workload. The agents' <i>δ</i> is the cost of a crossing whose receiver \
    waits for it (a ping-pong has one message in flight, so every crossing wakes a thread); in a ring with many \
    tokens in flight the receiving thread is mostly awake and a crossing costs far less, so for such workloads the \
    model overstates the time per message and understates the speedup — the 2-thread error shows by how much. Assumed: one core per thread, the working set still fits the caches it \
    had, memory bandwidth and NUMA distance do not bind, and this machine's synchronization costs hold on the larger \
    one. A virtual machine with two vCPUs is a poor witness for 64 cores: read the curves as the shape the measured \
    costs imply, not as a promise.</p>\n";

fn fits_table(fits: &[Fit]) -> Table {
    let mut head = vec![
        "workload".to_string(),
        "unit".into(),
        "measured 1 thread".into(),
        "s".into(),
        "δ".into(),
        "predicted 2".into(),
        "measured 2".into(),
        "error".into(),
    ];
    head.extend(PREDICT_AT[1..].iter().map(|n| format!("speedup ×{n}")));
    head.push("fitted from".into());
    let mut t = Table::new(head);
    for f in fits {
        let mut cells = vec![
            Cell::text(&f.label),
            Cell::text(&f.unit),
            Cell::num(f.t1),
            Cell::num(f.s),
            Cell::num(f.delta),
            Cell::num(f.predict(2.0)),
            Cell::opt(f.measured2),
            match f.error2() {
                Some(e) => Cell::Num(format!("{:+.0}%", e * 100.0)),
                None => Cell::text("not checked"),
            },
        ];
        cells.extend(
            PREDICT_AT[1..]
                .iter()
                .map(|&n| Cell::num(f.speedup(f64::from(n)))),
        );
        cells.push(Cell::text(&f.source));
        t.row(cells);
    }
    t
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
        series.push(Series {
            label: format!("{} (model)", f.label),
            points: pts,
            dashed: true,
        });
        if let Some(m) = f.measured2 {
            series.push(Series {
                label: format!("{} (measured)", f.label),
                points: vec![(1.0, 1.0), (2.0, f.t1 / m)],
                dashed: false,
            });
        }
    }
    Chart {
        x_desc: "threads (cores)",
        y_desc: "speedup over one thread",
        x_scale: Scale::Log,
        y_scale: Scale::Log,
        x_bytes: false,
        x_names: Vec::new(),
        series,
    }
    .to_svg()
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
            out.push_str("<p class=\"missing\"><strong>Not modelled:</strong> the document lacks the one-thread rows or the synchronization rows the model is fitted on.</p>\n");
            continue;
        }
        if let Some(svg) = speedup_chart(&fits) {
            out.push_str(&figure(
                &svg,
                &format!("{title}: predicted speedup to 64 threads (dashed) and the measured 2-thread speedup (solid). Log–log."),
            ));
        }
        out.push_str(&fits_table(&fits).render());
    }
    out.push_str("<h3>SIP</h3>\n");
    match sip.map(fit_sip) {
        None => out.push_str("<p class=\"missing\"><strong>Not modelled:</strong> the SIP stage was not measured in this run.</p>\n"),
        Some(fits) if fits.is_empty() => out.push_str("<p class=\"missing\"><strong>Not modelled:</strong> the SIP document has no CPU-per-call rows.</p>\n"),
        Some(fits) => {
            out.push_str("<p>Calls per second the proxy's CPU would carry on <i>n</i> cores: one core carries 10⁶ / (CPU µs per call); the share of messages that found a lock taken is treated as serialized (Amdahl). Not checked: <code>sip load</code> runs one worker count, and its call rate is fixed below capacity.</p>\n");
            let mut head = vec!["case".to_string(), "CPU per call (µs)".into(), "serialized share".into()];
            head.extend([1u32, 4, 8, 16, 32, 64].iter().map(|n| format!("calls/s ×{n}")));
            let mut t = Table::new(head);
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
