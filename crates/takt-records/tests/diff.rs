//! `compare`: regressions and improvements beyond both runs' noise, and
//! nothing flagged within it.

mod common;

use common::{diff_runs as runs, document, row, TempDir};
use serde_json::json;
use takt_records::compare::DEFAULT_MIN_CHANGE_PCT;
use takt_records::{compare, record, RunMeta, Store, Verdict};

#[test]
fn diff_flags_changes_beyond_both_intervals_and_nothing_within_them() {
    let dir = TempDir::new("diff");
    let (a, b) = runs();
    let ia = record(dir.db(), &RunMeta::from_documents(&a).unwrap(), &a).unwrap();
    let ib = record(dir.db(), &RunMeta::from_documents(&b).unwrap(), &b).unwrap();
    let store = Store::open_existing(dir.db()).unwrap();
    let d = compare(
        &store.run(ia).unwrap(),
        &store.run(ib).unwrap(),
        DEFAULT_MIN_CHANGE_PCT,
    );
    let verdict = |name: &str, threads: u32| {
        d.rows
            .iter()
            .find(|r| r.name == name && r.params["threads"] == threads)
            .unwrap_or_else(|| panic!("no row {name}/{threads}"))
    };

    let steady = verdict("steady", 1);
    assert_eq!(steady.verdict, Verdict::WithinNoise);
    assert_eq!(steady.intervals_disjoint, Some(false));

    let slower = verdict("slower", 1);
    assert_eq!(slower.verdict, Verdict::Regression);
    assert!((slower.change_pct.unwrap() - 20.0).abs() < 1e-9);
    assert!(slower.p_value.unwrap() < 0.01);
    // Same name, other params: matched separately, and unchanged.
    assert_eq!(verdict("slower", 2).verdict, Verdict::WithinNoise);

    assert_eq!(verdict("throughput", 1).verdict, Verdict::Improvement);

    let crafted = verdict("crafted", 1);
    assert_eq!(crafted.intervals_disjoint, Some(true));
    assert!(crafted.p_value.unwrap() >= 0.05, "{:?}", crafted.p_value);
    assert_eq!(
        crafted.verdict,
        Verdict::WithinNoise,
        "both tests must agree"
    );

    let bare = verdict("bare", 1);
    assert_eq!(bare.p_value, None);
    assert_eq!(
        bare.verdict,
        Verdict::Regression,
        "without samples the intervals decide"
    );

    let single = verdict("single", 1);
    assert_eq!(single.verdict, Verdict::Unjudged);
    assert_eq!(single.reason.as_deref(), Some("fewer than 2 repetitions"));

    let slight = verdict("slight", 1);
    assert_eq!(slight.intervals_disjoint, Some(true));
    assert!(slight.p_value.unwrap() < 0.05);
    assert_eq!(slight.verdict, Verdict::Small, "2% is under the 5% minimum");

    assert_eq!(verdict("retired", 1).verdict, Verdict::OnlyInA);
    assert_eq!(verdict("newcomer", 1).verdict, Verdict::OnlyInB);
    assert_eq!(
        d.rows.last().unwrap().name,
        "newcomer",
        "B-only rows come last"
    );

    let c = &d.counts;
    assert_eq!(
        (
            c.regressions,
            c.improvements,
            c.within_noise,
            c.unjudged,
            c.only_in_a,
            c.only_in_b
        ),
        (2, 1, 3, 1, 1, 1)
    );
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v["rows"][1]["verdict"], "regression");
    assert_eq!(v["a"]["id"], ia);
    assert!(v["method"].as_str().unwrap().contains("Mann-Whitney"));
}

#[test]
fn a_unit_change_is_not_judged() {
    let (a, _) = runs();
    let mut b = a.clone();
    b[0]["results"][0]["unit"] = json!("us");
    b[0]["machine"]["profile"] = json!("debug");
    b[0]["machine"]["cpu"] = json!("another CPU");
    b[0]["machine"]["steal_pct"] = json!(7.5);
    let dir = TempDir::new("unit");
    let ia = record(dir.db(), &RunMeta::from_documents(&a).unwrap(), &a).unwrap();
    let ib = record(dir.db(), &RunMeta::from_documents(&b).unwrap(), &b).unwrap();
    let store = Store::open_existing(dir.db()).unwrap();
    let d = compare(
        &store.run(ia).unwrap(),
        &store.run(ib).unwrap(),
        DEFAULT_MIN_CHANGE_PCT,
    );
    assert_eq!(d.rows[0].verdict, Verdict::Unjudged);
    assert_eq!(
        d.rows[0].reason.as_deref(),
        Some("unit changed: ns/msg -> us")
    );
    let cautions = d.cautions.join("\n");
    assert!(cautions.contains("different machines"), "{cautions}");
    assert!(
        cautions.contains("different build profiles: A release, B debug"),
        "{cautions}"
    );
    assert!(cautions.contains("lost 7.5% of its CPU time"), "{cautions}");
    // A run against itself: nothing moved.
    let same = compare(&store.run(ia).unwrap(), &store.run(ia).unwrap(), 0.0);
    assert_eq!(same.counts.regressions + same.counts.improvements, 0);
}

#[test]
fn one_quantity_in_several_units_pairs_by_unit_whatever_the_order() {
    let quantity = |unit: &str, scale: f64| {
        let samples: Vec<f64> = [100.0, 101.0, 99.0, 100.5, 99.5]
            .iter()
            .map(|v| v * scale)
            .collect();
        let mut r = row("q", "takt", json!({}), "lower", &samples);
        r["unit"] = json!(unit);
        r
    };
    let a = vec![document(
        "sme",
        vec![quantity("ns/step", 1.0), quantity("us", 0.001)],
    )];
    // B lists the units the other way round, and only its `us` row is 50%
    // slower.
    let b = vec![document(
        "sme",
        vec![quantity("us", 0.0015), quantity("ns/step", 1.0)],
    )];
    let dir = TempDir::new("units");
    let ia = record(dir.db(), &RunMeta::from_documents(&a).unwrap(), &a).unwrap();
    let ib = record(dir.db(), &RunMeta::from_documents(&b).unwrap(), &b).unwrap();
    let store = Store::open_existing(dir.db()).unwrap();
    let d = compare(
        &store.run(ia).unwrap(),
        &store.run(ib).unwrap(),
        DEFAULT_MIN_CHANGE_PCT,
    );
    let by_unit = |u: &str| d.rows.iter().find(|r| r.unit == u).unwrap();
    assert_eq!(by_unit("ns/step").verdict, Verdict::WithinNoise);
    assert_eq!(by_unit("us").verdict, Verdict::Regression);
    assert_eq!(d.rows.len(), 2);
}

/// A capacity bound ("≥ 35,000 (generator)") against a measured value:
/// stored and read back as a bound, and the diff says so instead of
/// taking a change.
#[test]
fn a_bound_round_trips_and_a_diff_with_it_takes_no_change() {
    let bound = json!({
        "name": "capacity", "impl": "kamailio", "params": {"mode": "stateless"},
        "unit": "cps", "better": "higher",
        "median": null, "min": null, "max": null, "mean": null, "stddev": null,
        "ci95": null, "runs": 0, "cpu_s": 1.5, "samples": [],
        "bound": {"kind": "lower", "value": 35000.0, "limit": "generator"}
    });
    let mut measured = row(
        "capacity",
        "kamailio",
        json!({"mode": "stateless"}),
        "higher",
        &[9000.0, 9100.0, 9050.0],
    );
    measured["unit"] = json!("cps");
    let a = vec![document("sip_capacity", vec![bound.clone()])];
    let b = vec![document("sip_capacity", vec![measured])];
    let dir = TempDir::new("bound");
    let ia = record(dir.db(), &RunMeta::from_documents(&a).unwrap(), &a).unwrap();
    let ib = record(dir.db(), &RunMeta::from_documents(&b).unwrap(), &b).unwrap();
    let store = Store::open_existing(dir.db()).unwrap();
    let run_a = store.run(ia).unwrap();
    let row = &run_a.documents[0].rows[0];
    assert_eq!(
        (row.median, row.min, row.max, row.mean),
        (None, None, None, None)
    );
    let b = row.bound.as_ref().unwrap();
    assert_eq!(
        (b.kind.as_str(), b.value, b.limit.as_str()),
        ("lower", 35000.0, "generator")
    );
    assert_eq!(row.value_text(), "≥ 35,000 (generator)");
    assert_eq!(run_a.documents[0].body["results"][0], bound);
    let d = compare(&run_a, &store.run(ib).unwrap(), 0.0);
    assert_eq!(d.rows[0].verdict, Verdict::Unjudged);
    assert_eq!(d.rows[0].change_pct, None);
    let reason = d.rows[0].reason.as_deref().unwrap();
    assert!(
        reason.contains("A is a bound (≥ 35,000 (generator))") && reason.contains("no change"),
        "{reason}"
    );
    // a null median needs a bound or a note saying why
    let mut bare = bound.clone();
    bare["bound"] = json!(null);
    let bad = vec![document("sip_capacity", vec![bare])];
    let e = record(dir.db(), &RunMeta::from_documents(&bad).unwrap(), &bad).unwrap_err();
    assert!(e.to_string().contains("without a bound or a note"), "{e}");
}

#[test]
fn other_work_is_judged_by_others_pct_not_by_the_load_the_run_made() {
    let dir = TempDir::new("diff-others");
    let (mut a, mut b) = runs();
    // A: a load of 8 on the machine, all of it the run's own; B: a fifth
    // of the CPU time taken by work that was not the run's
    for (docs, others) in [(&mut a, 0.0), (&mut b, 20.0)] {
        for d in docs.iter_mut() {
            d["machine"]["load"] = json!([8.0, 8.0, 8.0]);
            d["machine"]["others_pct"] = json!(others);
        }
    }
    let ia = record(dir.db(), &RunMeta::from_documents(&a).unwrap(), &a).unwrap();
    let ib = record(dir.db(), &RunMeta::from_documents(&b).unwrap(), &b).unwrap();
    let store = Store::open_existing(dir.db()).unwrap();
    let d = compare(
        &store.run(ia).unwrap(),
        &store.run(ib).unwrap(),
        DEFAULT_MIN_CHANGE_PCT,
    );
    assert!(
        !d.cautions.iter().any(|c| c.contains("saw load")),
        "{:?}",
        d.cautions
    );
    assert!(
        d.cautions
            .iter()
            .any(|c| c.starts_with("run B") && c.contains("other work took 20.0%")),
        "{:?}",
        d.cautions
    );
    assert!(
        !d.cautions.iter().any(|c| c.starts_with("run A")),
        "{:?}",
        d.cautions
    );
}
