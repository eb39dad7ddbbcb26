//! The shape of every suite's result document — (suite, row name, impl,
//! parameter keys, unit) — built from each suite's own row builders on
//! fixed synthetic inputs (nothing is measured or started), compared with
//! the committed snapshot `document_shapes.snapshot` beside this file.
//!
//! A change that alters a document updates the snapshot deliberately, in
//! the same commit: `TAKT_UPDATE_SNAPSHOT=1 cargo test -p takt --test
//! document_shapes` rewrites it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use takt_measure::result::{DocumentBuilder, ResultRow};
use takt_siplab::tune::{self, gain_row};

const HEADER: &str = "\
# The shape of every suite's result document, one line per distinct row shape:
# suite<TAB>name<TAB>impl<TAB>sorted,param,keys<TAB>unit (sorted, deduplicated).
# Built by crates/takt/tests/document_shapes.rs from each suite's row builders
# (`synthetic_rows`, and `tune::gain_row` for the `sip_tune tune_gain` lines)
# on fixed synthetic inputs, without measuring.
# A change to a document updates this file in the same commit:
#   TAKT_UPDATE_SNAPSHOT=1 cargo test -p takt --test document_shapes
";

fn snapshot_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/document_shapes.snapshot")
}

/// Every suite's synthetic rows, by the suite name its document carries.
fn suites() -> Vec<(&'static str, Vec<ResultRow>)> {
    vec![
        ("agents", takt_bench_agents::synthetic_rows()),
        ("sme", takt_bench_sme::SmeBench::synthetic_rows()),
        ("remote", takt_bench_remote::synthetic_rows()),
        ("sip_load", takt_siplab::load::synthetic_rows()),
        (
            "sip_capacity",
            stamped(takt_siplab::capacity::synthetic_rows()),
        ),
        ("sip_sweep", stamped(takt_siplab::sweep::synthetic_rows())),
        (
            "sip_gen",
            stamped(takt_siplab::gen::GenReport::synthetic_rows()),
        ),
        (
            "sip_torture",
            stamped(takt_siplab::torture::synthetic_rows()),
        ),
        // a sweep's document, and the `tune_gain` rows beside it
        ("sip_tune", stamped(tune_rows())),
        // every row kind of `takt machine` (all modes, `--compare` included)
        ("machine", takt_machine::synthetic_rows()),
    ]
}

/// A recommendation for `target` with the given gain, the rest empty.
fn recommendation(target: &'static str, gain_pct: Option<f64>) -> tune::Recommendation {
    tune::Recommendation {
        target,
        mode: "stateful",
        workers: 8,
        capacities: Vec::new(),
        best: None,
        gain_pct,
        ab: None,
        ab_rate_cps: None,
        verdict: tune::Verdict::KeepDefault,
    }
}

/// `takt sip tune`'s rows: a sweep's, and a `tune_gain` row for each
/// target whose recommendation gains something (`tune::gain_row`).
fn tune_rows() -> Vec<ResultRow> {
    let mut rows = takt_siplab::sweep::synthetic_rows();
    rows.extend(
        ["takt", "kamailio"]
            .into_iter()
            .filter_map(|t| gain_row(&recommendation(t, Some(5.0)))),
    );
    rows
}

/// `rows` as the SIP laboratory's commands emit them: with the load
/// generator's scheduling policy stamped on every row (`gen_sched`).
fn stamped(rows: Vec<ResultRow>) -> Vec<ResultRow> {
    let policy = takt_siplab::gen::GenPolicy {
        policy: None,
        applied: takt_sched::SchedPolicy::DEFAULT,
        source: takt_siplab::gen::PolicySource::Given,
        reason: None,
        shared: None,
    };
    let mut doc = DocumentBuilder::start("stamped");
    for r in rows {
        doc.push(r);
    }
    let mut doc = doc.finish();
    policy.stamp(&mut doc);
    doc.results
}

fn shape(suite: &str, row: &ResultRow) -> String {
    let keys: Vec<&str> = row.params.keys().map(String::as_str).collect();
    let mut keys = keys;
    keys.sort_unstable();
    format!(
        "{suite}\t{}\t{}\t{}\t{}",
        row.name,
        row.implementation,
        keys.join(","),
        row.unit
    )
}

fn shapes() -> BTreeSet<String> {
    suites()
        .iter()
        .flat_map(|(suite, rows)| rows.iter().map(move |r| shape(suite, r)))
        .collect()
}

#[test]
fn every_suite_yields_rows() {
    for (suite, rows) in suites() {
        assert!(!rows.is_empty(), "{suite}: no synthetic rows");
    }
}

#[test]
fn a_recommendation_without_a_gain_has_no_gain_row() {
    assert!(gain_row(&recommendation("takt", None)).is_none());
}

#[test]
fn document_shapes_match_the_snapshot() {
    let now = shapes();
    let path = snapshot_path();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    if std::env::var_os("TAKT_UPDATE_SNAPSHOT").is_some_and(|v| v == "1") {
        let mut text = HEADER.to_string();
        for line in &now {
            text.push_str(line);
            text.push('\n');
        }
        std::fs::write(&path, text).expect("write the snapshot");
        return;
    }
    let committed: BTreeSet<String> = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    if committed != now {
        let mut msg = format!(
            "document shapes differ from {} (a deliberate change: rerun with TAKT_UPDATE_SNAPSHOT=1 and commit the file)\n",
            path.display()
        );
        for l in committed.difference(&now) {
            msg.push_str(&format!("only in the snapshot: {l}\n"));
        }
        for l in now.difference(&committed) {
            msg.push_str(&format!("only in the code:     {l}\n"));
        }
        panic!("{msg}");
    }
}
