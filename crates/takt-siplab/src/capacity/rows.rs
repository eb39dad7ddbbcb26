//! The result rows of a finished search (conventions' result documents).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use takt_measure::result::{Better, Bound, BoundKind, ResultRow};

use super::PointDetail;
use crate::fleet::detail::points_detail;
use crate::search::{Capacity, Limit, Phase, SearchResult};

/// The result rows of one target's finished search: `capacity` (cps; a
/// measured capacity has `median` = the capacity and `min`/`max` = the
/// capacity and the first failing grid rate; a capacity the search only
/// bounded — "≥ L" when the generator or the search's range stopped it,
/// "< L" when even the lowest rate failed — has no statistics and a
/// `bound` with its limit (`generator`, `rate_ceiling`, `rate_floor`); the
/// grid with its intervals and every trial's record — phase, rate,
/// outcome, the generator's saturation causes and whether it was re-run —
/// in `detail`), `cpu_per_call` (µs at the capacity's grid rate, one
/// sample per counted grid repetition; see [`cpu_row`] for bounds) and one
/// `drop_rate` row per grid point (re-run generator-bound trials are left
/// out of both, as out of the grid), takt's per-kind rows per grid point
/// ([`kind_rows`]) and, when the search did not finish (interrupted), one
/// `drop_rate` row per ramp or bisection trial (`phase` in params).
/// `params` name the target's setting (`mode`, `workers`, `model`,
/// `sched`, `cpus`, `net`). Under a fleet, the `capacity` row's detail
/// has `fleet`, index-aligned with `trial_records`, and each `drop_rate`
/// row's the `fleet` of its trials: each one's agents and void attempts
/// ([`crate::fleet::detail`]).
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
        let mut row = match cap {
            Capacity::Measured {
                cps,
                first_failing_cps,
            } => {
                let mut row = ResultRow::new(
                    "capacity",
                    target,
                    params.clone(),
                    "cps",
                    Better::Higher,
                    vec![cps],
                    cpu_s,
                );
                if let Some(s) = row.summary.as_mut() {
                    s.max = first_failing_cps;
                }
                row
            }
            Capacity::AtLeast { .. } | Capacity::Below { .. } => ResultRow::bounded(
                "capacity",
                target,
                params.clone(),
                "cps",
                Better::Higher,
                capacity_bound(cap).expect("a bound"),
                cpu_s,
            ),
        };
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
        if let Some(f) = points_detail(points.iter().map(|p| p.fleet.as_ref())) {
            d.insert("fleet".into(), f);
        }
        d.insert("grid".into(), json!(result.grid));
        if let Some(f) = shm_peak {
            d.insert("shm_peak_fraction".into(), json!(f));
            d.insert("shm_limit_reached".into(), json!(f >= SHM_LIMIT_FRACTION));
        }
        row.detail = d;
        out.push(row);

        // CPU per call at the capacity's grid rate
        let at: Vec<&PointDetail> = result
            .trials
            .iter()
            .zip(points)
            .filter(|(t, _)| t.phase == Phase::Grid && !t.rerun && t.rate_cps == cps)
            .map(|(_, p)| p)
            .collect();
        let mut p = params.clone();
        p.insert("rate_cps".into(), json!(cps));
        out.extend(cpu_row(target, p, cap, &at, cpu_s));
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
        if let Some(f) = points_detail(at.iter().map(|p| p.fleet.as_ref())) {
            d.insert("fleet".into(), f);
        }
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
            if let Some(f) = points_detail([pt.fleet.as_ref()]) {
                d.insert("fleet".into(), f);
            }
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

/// A capacity the search only bounded, as the document's [`Bound`]: "≥ L"
/// (`generator` or `rate_ceiling`) or "< L" (`generator` when the lowest
/// rate could not be offered, else `rate_floor`); `None` for a measured
/// capacity.
pub fn capacity_bound(cap: Capacity) -> Option<Bound> {
    match cap {
        Capacity::Measured { .. } => None,
        Capacity::AtLeast { cps, limit } => Some(Bound::new(
            BoundKind::Lower,
            cps,
            match limit {
                Limit::Generator => "generator",
                Limit::SearchCeiling => "rate_ceiling",
            },
        )),
        Capacity::Below { cps, limit } => Some(Bound::new(BoundKind::Upper, cps, limit.name())),
    }
}

/// A server's CPU per call at a rate it did not saturate counts as its cost
/// at capacity only from this busy fraction of its CPUs on: below it, idle
/// time and per-wakeup overheads weigh on each call and the figure is not
/// comparable with a saturated server's.
pub const COMPARABLE_BUSY_FRACTION: f64 = 0.9;

/// The `cpu_per_call` row at the capacity's grid rate (`points`, `params`
/// with `rate_cps`), one sample per point; `None` when no point gave a
/// figure. At a measured capacity the server is saturated by definition;
/// at a lower bound (the generator's ceiling, the search's range) the
/// figure counts only when the server was at least
/// [`COMPARABLE_BUSY_FRACTION`] busy there (`busy_fraction` in detail:
/// CPU per call × achieved calls/s over the server's CPUs), and at an
/// upper bound (even the lowest rate failed) never: those rows have no
/// value and say "not comparable" in their note.
pub fn cpu_row(
    target: &str,
    params: Map<String, Value>,
    cap: Capacity,
    points: &[&PointDetail],
    cpu_s: f64,
) -> Option<ResultRow> {
    let samples: Vec<f64> = points.iter().filter_map(|p| p.cpu_per_call_us).collect();
    if samples.is_empty() {
        return None;
    }
    let cpus = server_cpus(&params);
    let busy: Vec<f64> = points
        .iter()
        .filter_map(|p| Some(p.cpu_per_call_us? * p.load.achieved_cps / 1e6 / cpus as f64))
        .collect();
    let busy = takt_measure::stats::median(&busy);
    let mut d = Map::new();
    d.insert("busy_fraction".into(), json!(busy));
    d.insert("server_cpus".into(), json!(cpus));
    let not_comparable = |why: String| {
        let mut d = d.clone();
        d.insert("cpu_per_call_us_samples".into(), json!(samples));
        ResultRow::unmeasured(
            "cpu_per_call",
            target,
            params.clone(),
            "us",
            Better::Lower,
            format!("not comparable: {why}"),
        )
        .with_detail(d)
    };
    Some(match cap {
        Capacity::Measured { .. } => ResultRow::new(
            "cpu_per_call",
            target,
            params,
            "us",
            Better::Lower,
            samples,
            cpu_s,
        )
        .with_detail(d),
        Capacity::AtLeast { .. } if busy >= COMPARABLE_BUSY_FRACTION => {
            let at = capacity_bound(cap).map_or_else(String::new, |b| b.limit_text());
            ResultRow::new(
                "cpu_per_call",
                target,
                params,
                "us",
                Better::Lower,
                samples,
                cpu_s,
            )
            .with_detail(d)
            .with_note(format!(
                "at the {at}'s ceiling, the server {:.0}% busy",
                busy * 100.0
            ))
        }
        Capacity::AtLeast { .. } => not_comparable(format!(
            "the capacity is a lower bound and the server was {:.0}% busy at it \
             (a cost at capacity needs at least {:.0}%)",
            busy * 100.0,
            COMPARABLE_BUSY_FRACTION * 100.0
        )),
        Capacity::Below { .. } => {
            not_comparable("even the lowest rate failed: no capacity to take the cost at".into())
        }
    })
}

/// How many CPUs the server's setting (`cpus` in params: a CPU list or
/// `any`) gives it.
fn server_cpus(params: &Map<String, Value>) -> usize {
    params
        .get("cpus")
        .and_then(Value::as_str)
        .and_then(|c| c.parse::<takt_sched::CpuSet>().ok())
        .map(|c| c.len())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The SIP servers takt's CPU per call is compared with: the better
/// (lower) of them, per mode.
pub const PEER_SERVERS: [&str; 2] = ["kamailio", "opensips"];

/// The relay that parses nothing: the floor of a server's CPU per call.
pub const NULL_RELAY: &str = "null-relay";

/// The comparison of a capacity document's CPU per call at capacity
/// (`rows` are one document's: ratios never cross documents): for every
/// takt `cpu_per_call` row with a value, a `cpu_per_call_ratio` row (unit
/// `ratio`, takt's median over the other's) against the better of the
/// [`PEER_SERVERS`] in the same mode (`vs` = `best_peer`, which one in
/// `detail.peer`) and one against the [`NULL_RELAY`] (`vs` =
/// `null_relay`), each only when that row is in the document with a value
/// (a missing or not comparable peer gives no ratio row). Rows match on
/// every setting parameter but `mode`, `workers`, `model` and `rate_cps`;
/// peers also on `mode` and `workers`.
pub fn cpu_comparison_rows(rows: &[ResultRow]) -> Vec<ResultRow> {
    const FREE: [&str; 4] = ["mode", "workers", "model", "rate_cps"];
    let setting = |r: &ResultRow| -> Map<String, Value> {
        r.params
            .iter()
            .filter(|(k, _)| !FREE.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let cpu = |r: &&ResultRow| r.name == "cpu_per_call" && r.unit == "us" && r.median().is_some();
    let mut out = Vec::new();
    for t in rows
        .iter()
        .filter(cpu)
        .filter(|r| r.implementation == "takt")
    {
        let m = t.median().expect("filtered");
        let same = |r: &&ResultRow| setting(r) == setting(t);
        let best = rows
            .iter()
            .filter(cpu)
            .filter(same)
            .filter(|r| PEER_SERVERS.contains(&r.implementation.as_str()))
            .filter(|r| r.params.get("mode") == t.params.get("mode"))
            .filter(|r| r.params.get("workers") == t.params.get("workers"))
            .min_by(|a, b| {
                a.median()
                    .expect("filtered")
                    .total_cmp(&b.median().expect("filtered"))
            });
        let relay = rows
            .iter()
            .filter(cpu)
            .filter(same)
            .find(|r| r.implementation == NULL_RELAY);
        for (vs, other) in [("best_peer", best), ("null_relay", relay)] {
            let Some(o) = other else { continue };
            let om = o.median().expect("filtered");
            if om <= 0.0 {
                continue;
            }
            let mut p = t.params.clone();
            p.remove("rate_cps");
            p.insert("vs".into(), json!(vs));
            let mut d = Map::new();
            d.insert("peer".into(), json!(o.implementation));
            d.insert("takt_us".into(), json!(m));
            d.insert("peer_us".into(), json!(om));
            d.insert(
                "takt_rate_cps".into(),
                t.params.get("rate_cps").cloned().unwrap_or(Value::Null),
            );
            d.insert(
                "peer_rate_cps".into(),
                o.params.get("rate_cps").cloned().unwrap_or(Value::Null),
            );
            d.insert("statistic".into(), json!("ratio of medians"));
            out.push(
                ResultRow::new(
                    "cpu_per_call_ratio",
                    "takt",
                    p,
                    "ratio",
                    Better::Lower,
                    vec![m / om],
                    0.0,
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
        fleet: None,
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
    use crate::search::{run, BelowLimit, Search, SearchConfig};
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
                    fleet: None,
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
        let sum = cap.summary.as_ref().expect("a measured capacity");
        assert_eq!(sum.median, c);
        assert!(sum.max > c && c <= 5_000.0, "{sum:?}");
        assert_eq!(cap.bound, None);
        assert_eq!(cap.detail["zero_failure_cps"], json!(r.zero_failure_cps));
        let records = cap.detail["trial_records"].as_array().unwrap();
        assert_eq!(records.len(), r.trials.len());
        assert_eq!(records[0]["outcome"]["generator_causes"], json!([]));
        assert_eq!(records[0]["rerun"], json!(false));
        let cpu = &rows[1];
        assert_eq!(cpu.name, "cpu_per_call");
        assert_eq!(cpu.params["rate_cps"], json!(c));
        assert_eq!(cpu.samples.len(), 5);
        assert!((cpu.median().unwrap() - c / 100.0).abs() < 1e-9);
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

    fn point(rate: f64, cpu_us: f64) -> PointDetail {
        let mut p = synthetic_point(rate, false);
        p.cpu_per_call_us = Some(cpu_us);
        p.load.achieved_cps = rate;
        p
    }

    fn one_cpu() -> Map<String, Value> {
        let mut p = Map::new();
        p.insert("mode".into(), json!("stateful"));
        p.insert("cpus".into(), json!("0"));
        p
    }

    /// "< L" and "≥ L" are bounds, never a number in `median`.
    #[test]
    fn a_bounded_capacity_has_no_median_and_says_its_limit() {
        let (mut r, points) = synthetic_search(true, false);
        r.capacity = Some(Capacity::AtLeast {
            cps: 35_000.0,
            limit: Limit::Generator,
        });
        let out = rows("kamailio", &one_cpu(), &r, &points);
        let cap = &out[0];
        assert_eq!(cap.summary, None);
        let v = serde_json::to_value(cap).unwrap();
        assert_eq!(v["median"], Value::Null);
        assert_eq!(v["ci95"], Value::Null);
        assert_eq!(
            v["bound"],
            json!({"kind": "lower", "value": 35000.0, "limit": "generator"})
        );
        assert_eq!(cap.value_text(), "≥ 35,000 (generator)");
        r.capacity = Some(Capacity::Below {
            cps: 50.0,
            limit: BelowLimit::RateFloor,
        });
        let out = rows("kamailio", &one_cpu(), &r, &points);
        let b = out[0].bound.as_ref().unwrap();
        assert_eq!(
            (b.kind, b.value, b.limit.as_str()),
            (BoundKind::Upper, 50.0, "rate_floor")
        );
        assert_eq!(out[0].median(), None);
    }

    /// At a generator-bound capacity the cost counts only from 90% busy.
    #[test]
    fn cpu_per_call_at_a_lower_bound_needs_a_busy_server() {
        let cap = Capacity::AtLeast {
            cps: 10_000.0,
            limit: Limit::Generator,
        };
        // 95 µs per call at 10,000 calls/s on one CPU: 95% busy
        let busy = [point(10_000.0, 95.0), point(10_000.0, 95.0)];
        let at: Vec<&PointDetail> = busy.iter().collect();
        let row = cpu_row("takt", one_cpu(), cap, &at, 1.0).unwrap();
        assert_eq!(row.median(), Some(95.0));
        assert!((row.detail["busy_fraction"].as_f64().unwrap() - 0.95).abs() < 1e-9);
        assert!(
            row.note.as_deref().unwrap().contains("generator's ceiling"),
            "{row:?}"
        );
        // 30 µs per call: 30% busy, not a cost at capacity
        let idle = [point(10_000.0, 30.0)];
        let at: Vec<&PointDetail> = idle.iter().collect();
        let row = cpu_row("takt", one_cpu(), cap, &at, 1.0).unwrap();
        assert_eq!((row.median(), row.bound.as_ref()), (None, None));
        let note = row.note.as_deref().unwrap();
        assert!(
            note.starts_with("not comparable") && note.contains("30% busy"),
            "{note}"
        );
        assert_eq!(serde_json::to_value(&row).unwrap()["median"], Value::Null);
        // a capacity below the lowest rate has no cost at capacity at all
        let below = Capacity::Below {
            cps: 50.0,
            limit: BelowLimit::RateFloor,
        };
        let row = cpu_row("takt", one_cpu(), below, &at, 1.0).unwrap();
        assert!(row.note.as_deref().unwrap().starts_with("not comparable"));
    }

    fn cost(target: &str, mode: &str, us: f64) -> ResultRow {
        let mut p = one_cpu();
        p.insert("mode".into(), json!(mode));
        p.insert("rate_cps".into(), json!(5_000.0));
        ResultRow::new(
            "cpu_per_call",
            target,
            p,
            "us",
            Better::Lower,
            vec![us],
            0.0,
        )
    }

    #[test]
    fn takt_is_compared_with_the_better_peer_and_the_relay_of_the_same_document() {
        let rows = vec![
            cost("takt", "stateful", 36.0),
            cost("kamailio", "stateful", 158.0),
            cost("opensips", "stateful", 134.0),
            cost("takt", "stateless", 28.0),
            cost("kamailio", "stateless", 93.0),
            cost("null-relay", "none", 20.0),
        ];
        let cmp = cpu_comparison_rows(&rows);
        let find = |mode: &str, vs: &str| {
            cmp.iter()
                .find(|r| r.params["mode"] == json!(mode) && r.params["vs"] == json!(vs))
        };
        let best = find("stateful", "best_peer").unwrap();
        assert_eq!(best.detail["peer"], json!("opensips"));
        assert!((best.median().unwrap() - 36.0 / 134.0).abs() < 1e-12);
        assert_eq!(best.unit, "ratio");
        assert!(best.params.get("rate_cps").is_none());
        let relay = find("stateless", "null_relay").unwrap();
        assert!((relay.median().unwrap() - 28.0 / 20.0).abs() < 1e-12);
        assert_eq!(
            find("stateless", "best_peer").unwrap().detail["peer"],
            json!("kamailio")
        );
        assert_eq!(cmp.len(), 4);
        // a missing peer, or one without a comparable cost, gives no row
        let alone = vec![
            cost("takt", "stateful", 36.0),
            ResultRow::unmeasured(
                "cpu_per_call",
                "kamailio",
                one_cpu(),
                "us",
                Better::Lower,
                "not comparable: x",
            ),
        ];
        assert!(cpu_comparison_rows(&alone).is_empty());
    }
}
