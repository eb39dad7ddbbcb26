//! A sweep's outcome for tests of what is built from it (tune, render,
//! the document-shape snapshot).

use crate::profile::ReadBack;
use crate::search::{Capacity, SearchResult};
use crate::sweep::paper_tables::{compare, Crossing, CrossingColumn, PairSide};
use crate::sweep::{CaseKey, CaseOutcome, ComparisonOutcome, SweepOutcome};

/// A finished case of Kamailio with 8 workers, capacity `cps`.
pub(crate) fn case(profile: &str, policy: &str, cps: f64) -> CaseOutcome {
    CaseOutcome {
        key: CaseKey {
            target: "kamailio",
            mode: "stateful",
            model: "processes",
            workers: 8,
            profile: profile.into(),
        },
        label: profile.into(),
        policy: policy.into(),
        readback: ReadBack {
            applied: policy.into(),
            processes: 1,
            threads: 1,
            vanished: 0,
            seen: Vec::new(),
            all_match: true,
        },
        enhanced: None,
        result: SearchResult {
            capacity: Some(Capacity::Measured {
                cps,
                first_failing_cps: cps * 1.03,
            }),
            zero_failure_cps: None,
            grid: Vec::new(),
            non_monotone_cps: Vec::new(),
            trials: Vec::new(),
            complete: true,
        },
        points: Vec::new(),
        extras: Vec::new(),
        crossing: Crossing {
            below: Some(CrossingColumn {
                rate_cps: cps,
                arrival_pps: cps * 6.0,
                t_sip_us: None,
                k_rcv_us: Some(900.0),
                k_rcv_estimated: true,
                cpu_per_msg_us: Some(80.0),
                rcv_errors: 40.0,
                total_messages: cps * 12.0,
                drop_rate: 0.006,
                reps: 5,
            }),
            above: None,
        },
    }
}

/// default (2,000 cps), enhanced (`best_cps`) and batch, with enhanced
/// compared with default over `drops` (default's, enhanced's) per pair.
pub(crate) fn outcome(drops: &[(f64, f64)], best_cps: f64) -> SweepOutcome {
    let cases = vec![
        case("default", "other", 2_000.0),
        case("enhanced", "other:slice=300us", best_cps),
        case("batch", "batch", 1_900.0),
    ];
    let side = |d| PairSide {
        drop_rate: d,
        k_rcv_us: Some(d * 50_000.0),
        estimated: true,
    };
    let pairs: Vec<_> = drops.iter().map(|&(a, b)| (side(a), side(b))).collect();
    SweepOutcome {
        comparisons: vec![ComparisonOutcome {
            key: cases[1].key.clone(),
            label: "enhanced".into(),
            baseline: "default".into(),
            comparison: compare(2_060.0, &pairs),
            pairs,
            fleet: Vec::new(),
        }],
        cases,
        system: serde_json::Value::Null,
        truesize: 1280.0,
        notes: Vec::new(),
        interrupted: false,
    }
}
