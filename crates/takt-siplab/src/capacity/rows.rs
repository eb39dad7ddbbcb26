//! The result rows of a finished search (conventions' result documents).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use takt_measure::result::{Better, ResultRow};

use super::PointDetail;
use crate::search::{Capacity, Phase, SearchResult};

/// The result rows of one target's finished search: `capacity` (cps;
/// `median` = the capacity or its bound, `min`/`max` = the capacity and the
/// first failing grid rate, the grid with its intervals and every trial's
/// record — phase, rate, outcome, the generator's saturation causes and
/// whether it was re-run — in `detail`),
/// `cpu_per_call` (µs at the capacity's grid rate, one sample per counted
/// grid repetition) and one `drop_rate` row per grid point (re-run
/// generator-bound trials are left out of both, as out of the grid), takt's
/// per-kind rows per grid point ([`kind_rows`]) and, when the search did
/// not finish (interrupted), one `drop_rate` row per ramp or bisection
/// trial (`phase` in params). `params` name the target's setting (`mode`,
/// `workers`, `model`, `sched`, `net`).
pub fn rows(
    target: &str,
    params: &Map<String, Value>,
    result: &SearchResult,
    points: &[PointDetail],
) -> Vec<ResultRow> {
    let cpu_s: f64 = points.iter().map(|p| p.server.cpu_s).sum();
    let mut out = Vec::new();
    if let Some(cap) = result.capacity {
        let cps = cap.cps();
        let mut row = ResultRow::new(
            "capacity",
            target,
            params.clone(),
            "cps",
            Better::Higher,
            vec![cps],
            cpu_s,
        );
        if let Capacity::Measured {
            first_failing_cps, ..
        } = cap
        {
            row.summary.max = first_failing_cps;
        }
        let shm_peak = points
            .iter()
            .filter_map(|p| p.shm)
            .map(|s| s.peak_fraction())
            .fold(None, |a: Option<f64>, f| Some(a.map_or(f, |a| a.max(f))));
        let mut d = Map::new();
        d.insert("capacity".into(), json!(cap.to_string()));
        d.insert("bound".into(), json!(cap));
        d.insert("zero_failure_cps".into(), json!(result.zero_failure_cps));
        d.insert("non_monotone_cps".into(), json!(result.non_monotone_cps));
        d.insert("trials".into(), json!(result.trials.len()));
        d.insert("trial_records".into(), json!(result.trials));
        d.insert("grid".into(), json!(result.grid));
        if let Some(f) = shm_peak {
            d.insert("shm_peak_fraction".into(), json!(f));
            d.insert("shm_limit_reached".into(), json!(f >= SHM_LIMIT_FRACTION));
        }
        out.push(row.with_detail(d));

        // CPU per call at the capacity's grid rate
        let at: Vec<f64> = result
            .trials
            .iter()
            .zip(points)
            .filter(|(t, _)| t.phase == Phase::Grid && !t.rerun && t.rate_cps == cps)
            .filter_map(|(_, p)| p.cpu_per_call_us)
            .collect();
        if !at.is_empty() {
            let mut p = params.clone();
            p.insert("rate_cps".into(), json!(cps));
            out.push(ResultRow::new(
                "cpu_per_call",
                target,
                p,
                "us",
                Better::Lower,
                at,
                cpu_s,
            ));
        }
    }
    let mut kinds = Vec::new();
    for g in &result.grid {
        let mut p = params.clone();
        p.insert("rate_cps".into(), json!(g.rate_cps));
        let mut d = Map::new();
        d.insert("sent".into(), json!(g.sent));
        d.insert("lost".into(), json!(g.lost));
        d.insert("pooled".into(), json!(g.drop_rate));
        d.insert("binomial_ci95".into(), json!(g.binomial_ci95));
        d.insert("reps_ci95".into(), json!(g.reps_ci95));
        d.insert("upper".into(), json!(g.upper));
        d.insert("verdict".into(), json!(g.verdict));
        let socket_drops: u64 = result
            .trials
            .iter()
            .zip(points)
            .filter(|(t, _)| t.phase == Phase::Grid && !t.rerun && t.rate_cps == g.rate_cps)
            .map(|(_, p)| p.server.socket_drops)
            .sum();
        d.insert("server_socket_drops".into(), json!(socket_drops));
        let shm = result
            .trials
            .iter()
            .zip(points)
            .filter(|(t, _)| t.phase == Phase::Grid && !t.rerun && t.rate_cps == g.rate_cps)
            .filter_map(|(_, p)| p.shm)
            .map(|s| s.peak_fraction())
            .fold(None, |a: Option<f64>, f| Some(a.map_or(f, |a| a.max(f))));
        if let Some(f) = shm {
            d.insert("shm_peak_fraction".into(), json!(f));
            d.insert("shm_limit_reached".into(), json!(f >= SHM_LIMIT_FRACTION));
        }
        let at: Vec<PointDetail> = result
            .trials
            .iter()
            .zip(points)
            .filter(|(t, _)| t.phase == Phase::Grid && !t.rerun && t.rate_cps == g.rate_cps)
            .map(|(_, p)| p.clone())
            .collect();
        kinds.extend(kind_rows(target, &p, &at));
        out.push(
            ResultRow::new(
                "drop_rate",
                target,
                p,
                "ratio",
                Better::Lower,
                g.rep_drop_rates.clone(),
                0.0,
            )
            .with_detail(d),
        );
    }
    out.extend(kinds);
    // An unfinished search (interrupted) keeps its single trials too.
    if !result.complete {
        for (t, pt) in result.trials.iter().zip(points) {
            if t.phase == Phase::Grid {
                continue;
            }
            let mut p = params.clone();
            p.insert("rate_cps".into(), json!(t.rate_cps));
            p.insert("phase".into(), json!(t.phase));
            let mut d = Map::new();
            d.insert("sent".into(), json!(t.outcome.sent));
            d.insert("lost".into(), json!(t.outcome.lost));
            d.insert("outcome".into(), json!(t.outcome));
            d.insert("rerun".into(), json!(t.rerun));
            d.insert("server_socket_drops".into(), json!(pt.server.socket_drops));
            out.push(
                ResultRow::new(
                    "drop_rate",
                    target,
                    p,
                    "ratio",
                    Better::Lower,
                    vec![t.outcome.drop_rate()],
                    pt.server.cpu_s,
                )
                .with_detail(d),
            );
        }
    }
    out
}

/// Kamailio's shared memory counts as exhausted from this fraction of its
/// limit on: its allocator then fails to find room for a transaction now
/// and then, and the point measures memory, not CPU.
pub const SHM_LIMIT_FRACTION: f64 = 0.95;

/// A note when a target's shared memory reached [`SHM_LIMIT_FRACTION`] of
/// its limit: the first trial (in the order run; the peak is since start,
/// so every later point carries it too) at which the peak was seen.
pub fn shm_note(label: &str, points: &[PointDetail]) -> Option<String> {
    let (i, p, shm) = points.iter().enumerate().find_map(|(i, p)| {
        let s = p.shm?;
        (s.peak_fraction() >= SHM_LIMIT_FRACTION).then_some((i, p, s))
    })?;
    Some(format!(
        "{label}: shared memory reached {:.0}% of its {} MB limit by trial {} ({:.0} cps); \
         points from there on may be limited by memory, not CPU (shm_limit_reached)",
        shm.peak_fraction() * 100.0,
        shm.total >> 20,
        i + 1,
        p.rate_cps
    ))
}

/// takt's per-kind rows over `points` (one setting and rate, given in
/// `params`): `t_sip` and `k_rcv` (ns) per message kind, one sample per
/// point (the mean over that point's messages of the kind; see
/// [`super::KindWindow`]), `kind` in params and the messages counted in
/// `detail.messages`. Nothing for targets without per-kind statistics.
pub fn kind_rows(
    target: &str,
    params: &Map<String, Value>,
    points: &[PointDetail],
) -> Vec<ResultRow> {
    let mut by_kind: BTreeMap<&str, (Vec<f64>, Vec<f64>, u64)> = BTreeMap::new();
    for k in points.iter().filter_map(|p| p.takt_kinds.as_ref()) {
        for (kind, w) in k {
            let e = by_kind.entry(kind.as_str()).or_default();
            e.0.extend(w.t_sip_mean_ns);
            e.1.extend(w.k_rcv_mean_ns);
            e.2 += w.count;
        }
    }
    let mut out = Vec::new();
    for (kind, (t_sip, k_rcv, n)) in by_kind {
        for (name, samples) in [("t_sip", t_sip), ("k_rcv", k_rcv)] {
            if samples.is_empty() {
                continue;
            }
            let mut p = params.clone();
            p.insert("kind".into(), json!(kind));
            let mut d = Map::new();
            d.insert("messages".into(), json!(n));
            d.insert("statistic".into(), json!("mean per point"));
            out.push(
                ResultRow::new(name, target, p, "ns", Better::Lower, samples, 0.0).with_detail(d),
            );
        }
    }
    out
}

/// A point with every figure [`rows`] and [`kind_rows`] read (per-kind
/// statistics when `takt_kinds`, as only takt gives): a synthetic input of
/// the document-shape snapshot test.
pub(super) fn synthetic_point(rate_cps: f64, takt_kinds: bool) -> PointDetail {
    use crate::server_stats::{ServerSample, ServerWindow};
    let sample = || ServerSample {
        at: std::time::Instant::now(),
        sockets: Vec::new(),
        cpu_ticks: 0,
        threads: Vec::new(),
        host: takt_sip::stats::snmp::UdpCounters::default(),
    };
    let kinds = takt_kinds.then(|| {
        let w = super::KindWindow {
            count: 100,
            t_sip_mean_ns: Some(1_000.0),
            k_rcv_mean_ns: Some(500.0),
        };
        BTreeMap::from([("invite".to_string(), w)])
    });
    PointDetail {
        rate_cps,
        load: super::LoadOutcome {
            achieved_cps: rate_cps,
            sent_to_server: 1_000,
            completed_calls: 100,
            ..super::LoadOutcome::default()
        },
        server: ServerWindow::between(&sample(), &sample()),
        cpu_per_call_us: Some(10.0),
        shm: Some(crate::target::ShmUsage {
            total: 1 << 20,
            free: 0,
            real_used: 0,
            max_used: 1 << 19,
        }),
        takt_kinds: kinds,
        stats_error: None,
    }
}

/// A scripted search (drops above 5,000 calls/s) and its points, finished
/// or stopped after its first three trials: synthetic inputs of the
/// document-shape snapshot test. Nothing runs but the search's arithmetic.
pub(crate) fn synthetic_search(
    finished: bool,
    takt_kinds: bool,
) -> (SearchResult, Vec<PointDetail>) {
    use crate::search::{run, Search, SearchConfig, Trial, TrialOutcome};
    struct Scripted {
        points: Vec<PointDetail>,
        limit: Option<usize>,
        takt_kinds: bool,
    }
    impl Trial for Scripted {
        type Error = ();
        fn trial(&mut self, rate: f64) -> Result<TrialOutcome, ()> {
            if self.limit.is_some_and(|n| self.points.len() >= n) {
                return Err(());
            }
            self.points.push(synthetic_point(rate, self.takt_kinds));
            Ok(TrialOutcome {
                offered_cps: rate,
                achieved_cps: rate,
                sent: 10_000,
                lost: if rate > 5_000.0 { 500 } else { 0 },
                ..TrialOutcome::default()
            })
        }
    }
    let mut s = Scripted {
        points: Vec::new(),
        limit: (!finished).then_some(3),
        takt_kinds,
    };
    let mut search = Search::new(SearchConfig::default()).expect("the default search");
    let _ = run(&mut search, &mut s);
    (search.result(), s.points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::LoadOutcome;
    use crate::search::{run, Search, SearchConfig};
    use crate::search::{Trial, TrialOutcome};
    use crate::server_stats::ServerSample;
    use crate::server_stats::ServerWindow;
    use crate::target::ShmUsage;
    use std::time::Instant;
    use takt_sip::stats::snmp::UdpCounters;

    /// A search over a scripted server, with invented server-side details.
    #[test]
    fn rows_of_a_search() {
        struct S(Vec<PointDetail>);
        impl Trial for S {
            type Error = std::convert::Infallible;
            fn trial(&mut self, rate: f64) -> std::result::Result<TrialOutcome, Self::Error> {
                let lost = if rate > 5_000.0 { 500 } else { 0 };
                let sample = |cpu_ticks| ServerSample {
                    at: Instant::now(),
                    sockets: Vec::new(),
                    cpu_ticks,
                    threads: Vec::new(),
                    host: UdpCounters::default(),
                };
                self.0.push(PointDetail {
                    rate_cps: rate,
                    load: LoadOutcome::default(),
                    server: ServerWindow::between(&sample(0), &sample(10)),
                    cpu_per_call_us: Some(rate / 100.0),
                    // shared memory filling as the rate grows: the limit
                    // is reached from 6,000 cps on
                    shm: Some(ShmUsage {
                        total: 1 << 20,
                        free: 0,
                        real_used: 0,
                        max_used: ((rate / 6_000.0).min(1.0) * (1u64 << 20) as f64) as u64,
                    }),
                    takt_kinds: None,
                    stats_error: None,
                });
                Ok(TrialOutcome {
                    offered_cps: rate,
                    achieved_cps: rate,
                    sent: 10_000,
                    lost,
                    ..TrialOutcome::default()
                })
            }
        }
        let mut s = S(Vec::new());
        let mut search = Search::new(SearchConfig::default()).unwrap();
        let r = run(&mut search, &mut s).unwrap();
        let mut params = Map::new();
        params.insert("mode".into(), json!("stateless"));
        let rows = rows("takt", &params, &r, &s.0);
        let cap = &rows[0];
        assert_eq!((cap.name.as_str(), cap.unit.as_str()), ("capacity", "cps"));
        let c = r.capacity.unwrap().cps();
        assert_eq!(cap.summary.median, c);
        assert!(cap.summary.max > c && c <= 5_000.0, "{:?}", cap.summary);
        assert_eq!(cap.detail["zero_failure_cps"], json!(r.zero_failure_cps));
        let records = cap.detail["trial_records"].as_array().unwrap();
        assert_eq!(records.len(), r.trials.len());
        assert_eq!(records[0]["outcome"]["generator_causes"], json!([]));
        assert_eq!(records[0]["rerun"], json!(false));
        let cpu = &rows[1];
        assert_eq!(cpu.name, "cpu_per_call");
        assert_eq!(cpu.params["rate_cps"], json!(c));
        assert_eq!(cpu.samples.len(), 5);
        assert!((cpu.summary.median - c / 100.0).abs() < 1e-9);
        let drops: Vec<_> = rows.iter().filter(|r| r.name == "drop_rate").collect();
        assert_eq!(drops.len(), r.grid.len());
        assert!(drops.iter().all(|d| d.params["mode"] == json!("stateless")));
        // the grid stays below 6,000 cps, but the ramp went past it
        assert!(drops
            .iter()
            .all(|d| d.detail["shm_limit_reached"] == json!(false)
                && d.detail["shm_peak_fraction"].as_f64().unwrap() < SHM_LIMIT_FRACTION));
        let note = shm_note("kamailio stateful", &s.0).unwrap();
        assert!(
            note.contains("100% of its 1 MB limit") && note.contains("8000 cps"),
            "{note}"
        );
        assert!(shm_note("kamailio stateful", &s.0[..3]).is_none());
    }
}
