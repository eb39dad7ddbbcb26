//! The agents section: takt beside the peer runtimes measured in the same
//! run (ratios within this document only), and the seed's SObjectizer 4.4
//! figures beside takt's rows.

use std::collections::BTreeSet;

use takt_measure::result::{Document, ResultRow};

use crate::html::{esc, Cell, CellTable};
use crate::provenance::{how, param, param_f64, params_text, rows_table, stat_cells, STAT_HEAD};
use crate::section::push_figure;
use takt_measure::chart::{Axis, Chart, Series};

/// The peer runtimes the agents suite knows; a missing one is named.
pub(crate) const PEERS: [(&str, &str); 5] = [
    ("actix", "build takt with the default `peers` feature"),
    ("kameo", "build takt with the default `peers` feature"),
    ("ractor", "build takt with the default `peers` feature"),
    ("crossbeam", "build takt with the default `peers` feature"),
    (
        "caf",
        "install libcaf-dev and g++ (scripts/setup.sh) and build takt with the default `caf` feature",
    ),
];

const METHOD: &str = "each row is the median of at least 5 runs after a warm-up run; peers run the same workload \
    (same messages, agents, tokens and placement) in the same process and run, so ratios compare like with like on \
    this machine at this time";

fn is_message_row(r: &ResultRow) -> bool {
    r.params.get("phase").is_none() || param(r, "phase") != "registration"
}

pub(crate) fn render(doc: &Document, command: &str) -> String {
    let mut out = String::new();
    let impls: BTreeSet<&str> = doc
        .results
        .iter()
        .map(|r| r.implementation.as_str())
        .collect();

    out.push_str("<h3>takt beside its peers</h3>\n");
    let peers_here: Vec<&str> = PEERS
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| impls.contains(p))
        .collect();
    let mut head = vec![
        "benchmark",
        "placement / workload",
        "threads",
        "takt (ns/msg or ms)",
    ];
    let peer_heads: Vec<String> = peers_here.iter().map(|p| format!("{p} (× takt)")).collect();
    head.extend(peer_heads.iter().map(String::as_str));
    let mut t = CellTable::new(head);
    for takt in doc
        .results
        .iter()
        .filter(|r| r.implementation == "takt" && is_message_row(r))
    {
        let peers: Vec<Option<&ResultRow>> = peers_here
            .iter()
            .map(|p| {
                doc.results.iter().find(|r| {
                    r.implementation == *p
                        && is_message_row(r)
                        && doc
                            .peer_of(r, "takt")
                            .is_some_and(|t| std::ptr::eq(t, takt))
                })
            })
            .collect();
        if peers.iter().all(Option::is_none) {
            continue;
        }
        let workload = match param(takt, "placement").as_str() {
            "" => params_text(takt)
                .split(' ')
                .filter(|kv| {
                    kv.starts_with("agents=")
                        || kv.starts_with("leaves=")
                        || kv.starts_with("tokens=")
                })
                .collect::<Vec<_>>()
                .join(" "),
            p => p.to_string(),
        };
        let mut cells = vec![
            Cell::text(&takt.name),
            Cell::text(workload),
            Cell::text(param(takt, "threads")),
            Cell::Num(format!("{} {}", takt.value_text(), takt.unit)),
        ];
        for p in peers {
            cells.push(match p {
                Some(p) => Cell::Num(match takt.advantage_over(p) {
                    Some(x) => format!("{} ({}×)", p.value_text(), crate::html::num(x)),
                    None => p.value_text(),
                }),
                None => Cell::Empty,
            });
        }
        t.row(cells);
    }
    if t.is_empty() {
        out.push_str(
            "<p class=\"missing\"><strong>Peers not measured:</strong> this run has no peer rows \
             (run <code>takt bench agents --peers</code>; the peers need the default <code>peers</code> feature).</p>\n",
        );
    } else {
        out.push_str(&t.render());
        out.push_str(
            "<p>Each peer cell is its median and, in brackets, how many times slower than takt it was on the same \
             workload (&gt; 1: takt is faster). Only rows of this one run are compared.</p>\n",
        );
    }
    let missing: Vec<String> = PEERS
        .iter()
        .filter(|(p, _)| !impls.contains(p))
        .map(|(p, why)| format!("<b>{p}</b>: not measured: {}", esc(why)))
        .collect();
    if !missing.is_empty() {
        out.push_str(&format!("<p>{}</p>\n", missing.join("; ")));
    }

    // customer_ring on one thread against ring size, takt and the peers.
    let series: Vec<Series> = impls
        .iter()
        .map(|imp| {
            Series::new(
                *imp,
                doc.results
                    .iter()
                    .filter(|r| {
                        r.implementation == *imp
                            && r.name == "customer_ring"
                            && r.unit == "ns/msg"
                            && param_f64(r, "threads") == Some(1.0)
                    })
                    .filter_map(|r| Some((param_f64(r, "agents")?, r.median()?))),
            )
        })
        .chain(std::iter::once(
            Series::new(
                "SObjectizer 4.4 (published, 2006)",
                doc.results
                    .iter()
                    .filter(|r| r.name == "customer_ring" && param(r, "dispatcher") == "one_thread")
                    .filter(|r| r.unit == "ns/msg")
                    .filter_map(|r| Some((param_f64(r, "agents")?, r.published?))),
            )
            .dashed(),
        ))
        .filter(|s| !s.points.is_empty())
        .map(|mut s| {
            s.points.sort_by(|a, b| a.x.total_cmp(&b.x));
            s
        })
        .collect();
    push_figure(&mut out, &Chart { series, ..Chart::new(Axis::log("agents in the ring"), Axis::log("ns per message")) }, "customer_ring on one thread: ns per message against ring size, every runtime of this run, \
             and the seed's SObjectizer 4.4 figure (dashed; a 1.5 GHz Pentium-M in 2006: distance travelled, not a \
             same-machine comparison). Log–log.");

    out.push_str("<h3>takt and the seed's SObjectizer 4.4 figures</h3>\n");
    let mut head = vec![
        "benchmark",
        "parameters",
        "takt",
        "unit",
        "SObjectizer 4.4",
        "takt ×",
    ];
    head.extend(STAT_HEAD);
    let mut t = CellTable::new(head);
    let seeded: Vec<&ResultRow> = doc
        .results
        .iter()
        .filter(|r| r.implementation == "takt" && r.published.is_some())
        .collect();
    let common = crate::provenance::common_params(&seeded);
    for r in seeded.iter().copied() {
        let published = r.published.unwrap_or(f64::NAN);
        let median = r.median().unwrap_or(f64::NAN);
        let advantage = match r.better {
            takt_measure::result::Better::Lower => published / median,
            takt_measure::result::Better::Higher => median / published,
        };
        let mut cells = vec![
            Cell::text(&r.name),
            Cell::text(crate::provenance::varying_params_text(r, &common)),
            crate::provenance::median_cell(r),
            Cell::text(&r.unit),
            Cell::num(published),
            Cell::Num(format!("{advantage:.0}×")),
        ];
        cells.extend(stat_cells(r));
        t.row(cells);
    }
    if t.is_empty() {
        out.push_str("<p>No row of this run has a published SObjectizer figure.</p>\n");
    } else {
        out.push_str(&t.render());
        out.push_str(&crate::provenance::common_params_note(&common));
    }

    out.push_str("<details><summary>Every row of the agents document</summary>\n");
    let all: Vec<&ResultRow> = doc.results.iter().collect();
    out.push_str(&rows_table(&all));
    out.push_str("</details>\n");
    out.push_str(&how(doc, command, METHOD));
    out
}
