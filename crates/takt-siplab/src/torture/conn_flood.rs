//! The conn-flood scenario: many TCP connections held against the server
//! while UDP calls go on, and fresh TCP clients probe it
//! ([`crate::tcp_flood`] does the flood).
//!
//! The server is started with TCP on its listen port
//! ([`TargetSetup::tcp`](crate::target::TargetSetup::tcp)), its table
//! sized for the flood plus [`TABLE_SLACK`] connections: the scenario
//! measures what held connections cost and whether new clients are still
//! served, not a full table (takt's eviction has its own tests). Calls
//! run from the generator (or a fleet: [`super::calls`]) at the fault
//! scenarios' light rate (a quarter
//! of the capacity when known, else 500 calls/s) for the whole scenario;
//! after a few seconds of calls, two phases run one after the other:
//!
//! 1. **idle**: [`TorturePlan::flood_connections`] connections opened
//!    and held without a byte sent;
//! 2. **half-open**, after a pause in which the kernel frees the first
//!    phase's sockets: up to [`HALF_OPEN`] connections (the
//!    target: new clients served within 1 s behind 1,000) each sent the
//!    first half of a request and held.
//!
//! Every connection comes from its own loopback source address
//! (127.x.y.z): one connection per source, as from that many hosts, so
//! takt's per-peer limit (512 by default) never refuses one and what is
//! measured is the cost of the connections, not a per-peer refusal. In
//! each phase, once the connections are held: the server's RSS and PSS
//! summed over its processes against before the phase, the kernel's TCP
//! socket memory (`/proc/net/sockstat`'s buffers, and the sockets' slab
//! from `/proc/slabinfo`; both ends of every connection are on this
//! host), [`PROBES`] fresh clients each connecting and
//! sending a complete OPTIONS (Max-Forwards 0, which a proxy answers
//! itself) — the time from connect to answer, and how many went
//! unanswered — and the held connections the server closed or refused.
//! After both: the calls that failed.
//!
//! Rows (`params`: the scenario, `phase`, `connections`):
//! `flood_rss_added` (MB), `flood_kernel_tcp` (MB), `new_client_ms` (a
//! sample per answered probe: median, min, max; p99 in the detail),
//! `probes_unanswered`, `flood_connections_lost` (connects that failed
//! plus held connections the server closed; takt's TCP counters in the
//! detail), and `flood_calls_failed`.

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use takt_measure::result::{Better, ResultRow};
use takt_measure::stats::nearest_rank;

use super::calls::{Calls, LiveCalls};
use super::{fault_rate, row, Progress, Server, TorturePlan};
use crate::error::{Error, Result};
use crate::gen::{GenReport, Role};
use crate::target::TcpSetup;
use crate::tcp_flood::{self, FloodConfig, FloodReport};

/// Half-open connections in the second phase (fewer if the flood is
/// smaller).
pub const HALF_OPEN: usize = 1_000;
/// Fresh-client probes per phase.
pub const PROBES: usize = 200;
/// Connections the server's table holds beyond the flood: the probes,
/// and room for whatever else connects.
pub const TABLE_SLACK: usize = 1_024;
/// Calls before the first phase begins.
const WARM_UP: Duration = Duration::from_secs(2);
/// How long each phase's connections are held before the measurements.
const SETTLE: Duration = Duration::from_secs(2);

/// The idle phase's sources: 127.20.0.1 on, 250 per third octet (10,000
/// sources are 127.20.0.1–127.20.39.250; 64,000 fit under 127.20).
const IDLE_BASE: u8 = 20;
/// The half-open phase's sources (127.120.0.1 on); the probes use the
/// block below each phase's (127.19.0.x, 127.119.0.x).
const HALF_BASE: u8 = 120;

/// Runs the scenario; returns its rows.
pub fn run(
    plan: &TorturePlan,
    capacity: Option<f64>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<ResultRow>> {
    let n = plan.flood_connections;
    if n == 0 {
        return Err(Error::Config(
            "conn-flood needs at least one connection".into(),
        ));
    }
    let half = n.min(HALF_OPEN);
    let rate = fault_rate(capacity);
    // room for both phases: opening (tens of µs a connect), settling and
    // probing each, after the warm-up
    let open_s = (n + half) as f64 * 200e-6;
    let run_for = WARM_UP + SETTLE * 3 + Duration::from_secs_f64(open_s) + Duration::from_secs(4);
    // the live calls: the local generator's, or one fleet trial over the
    // whole run (a void one fails the scenario: the flood cannot wait)
    let mut calls = LiveCalls::new(
        plan,
        "conn-flood",
        rate,
        run_for.max(plan.durations.fault_run),
        1,
    )?;
    let mut tplan = plan.clone();
    tplan.setup.tcp = Some(TcpSetup::for_connections(n, TABLE_SLACK));
    let server = Server::start(&tplan, calls.uas()?, progress)?;
    let dst = server.target.listen();
    calls.set_target(&server.target)?;
    // a fleet's calls start at its planned instant, its lead ahead
    let lead = if calls.on_fleet() {
        crate::fleet::coordinator::LEAD
    } else {
        Duration::ZERO
    };
    let pids = server.target.pids();
    let measured = std::thread::scope(|s| -> Result<_> {
        let t0 = Instant::now();
        let h = s.spawn(|| calls.run(plan));
        std::thread::sleep(lead + WARM_UP);
        let mut phases = Vec::new();
        for (phase, count, half_open, base) in [
            ("idle", n, false, IDLE_BASE),
            ("half_open", half, true, HALF_BASE),
        ] {
            if plan.stopped() {
                break;
            }
            if half_open {
                // the idle phase's sockets are closed: let the kernel free
                // them before this phase's `before` is read
                std::thread::sleep(SETTLE);
            }
            progress(Progress::Step(if half_open {
                "half-open connections"
            } else {
                "idle connections"
            }));
            let before = takt_tcp(&server);
            let mut fc = FloodConfig::new(dst);
            fc.pids = pids.clone();
            fc.connections = count;
            fc.half_open = half_open;
            fc.settle = SETTLE;
            fc.probes = PROBES;
            fc.source_base = base;
            let r = tcp_flood::run(&fc)?;
            let after = takt_tcp(&server);
            phases.push((phase, r, tcp_delta(before, after)));
        }
        let flood_s = t0.elapsed().saturating_sub(lead);
        let calls = h
            .join()
            .map_err(|_| Error::Thread("the calls' thread panicked".into()))??;
        Ok((calls, phases, flood_s))
    });
    let stopped = server.stop();
    let (calls, phases, flood_s) = measured?;
    if plan.stopped() {
        return Err(Error::Interrupted);
    }
    let unclean = super::stop_verdict(stopped)?;
    let mut out = Vec::new();
    for (phase, r, tcp) in &phases {
        out.extend(phase_rows(plan, phase, r, tcp.clone()));
    }
    out.push(calls_row(plan, n, rate, &calls, flood_s.as_secs_f64()));
    Ok(super::stop_noted(out, unclean))
}

/// The `flood_calls_failed` row: the calls (at `rate`) that failed or
/// were unfinished while `connections` were flooded for `flood_s`
/// seconds: the live `calls`.
fn calls_row(
    plan: &TorturePlan,
    connections: usize,
    rate: f64,
    calls: &Calls,
    flood_s: f64,
) -> ResultRow {
    let mut p = plan.params(super::Scenario::ConnFlood);
    p.insert("connections".into(), json!(connections));
    let mut det = calls.detail();
    det.insert("rate_cps".into(), json!(rate));
    det.insert("calls_s".into(), json!(calls.send_s));
    det.insert("flood_s".into(), json!(flood_s));
    let r = row(
        plan,
        "flood_calls_failed",
        &p,
        "calls",
        Better::Lower,
        calls.lost() as f64,
        det,
    );
    if flood_s > calls.send_s {
        r.with_note("the calls ended before the flood did: its last part ran without calls")
    } else {
        r
    }
}

/// takt's TCP counters from its `/stats` (`None` for other targets).
fn takt_tcp(server: &Server) -> Option<Value> {
    server
        .target
        .takt_stats()
        .and_then(|r| r.ok())
        .and_then(|v| v.get("tcp").cloned())
}

/// The counters that moved between two `/stats` TCP snapshots (the
/// gauges `open` and `peak` as they were after).
fn tcp_delta(before: Option<Value>, after: Option<Value>) -> Option<Map<String, Value>> {
    let (b, a) = (before?, after?);
    let a = a.as_object()?;
    Some(
        a.iter()
            .filter_map(|(k, v)| {
                let now = v.as_u64()?;
                let d = match k.as_str() {
                    "open" | "peak" | "fd_limit" | "fd_needed" => now,
                    _ => now.saturating_sub(b.get(k).and_then(Value::as_u64).unwrap_or(0)),
                };
                Some((k.clone(), json!(d)))
            })
            .collect(),
    )
}

fn mb(kib_or_bytes: f64, kib: bool) -> f64 {
    if kib {
        kib_or_bytes / 1024.0
    } else {
        kib_or_bytes / (1024.0 * 1024.0)
    }
}

/// One phase's rows.
fn phase_rows(
    plan: &TorturePlan,
    phase: &str,
    r: &FloodReport,
    tcp: Option<Map<String, Value>>,
) -> Vec<ResultRow> {
    let mut p = plan.params(super::Scenario::ConnFlood);
    p.insert("phase".into(), json!(phase));
    p.insert("connections".into(), json!(r.connections));
    let mut out = Vec::new();
    let diff = |a: Option<u64>, b: Option<u64>| Some(b? as f64 - a? as f64);
    if let Some(d) = diff(r.rss_before_kib, r.rss_held_kib) {
        let mut det = Map::new();
        det.insert("rss_before_kib".into(), json!(r.rss_before_kib));
        det.insert("rss_held_kib".into(), json!(r.rss_held_kib));
        det.insert("pss_before_kib".into(), json!(r.pss_before_kib));
        det.insert("pss_held_kib".into(), json!(r.pss_held_kib));
        det.insert(
            "pss_added_mb".into(),
            json!(diff(r.pss_before_kib, r.pss_held_kib).map(|d| mb(d, true))),
        );
        det.insert("rss_per_connection_b".into(), json!(r.rss_per_connection));
        det.insert("opened".into(), json!(r.opened));
        out.push(row(
            plan,
            "flood_rss_added",
            &p,
            "MB",
            Better::Lower,
            mb(d, true),
            det,
        ));
    }
    if let Some(d) = diff(r.kernel_tcp_before, r.kernel_tcp_held) {
        let mut det = Map::new();
        det.insert("before_b".into(), json!(r.kernel_tcp_before));
        det.insert("held_b".into(), json!(r.kernel_tcp_held));
        det.insert("slab_before_b".into(), json!(r.kernel_slab_before));
        det.insert("slab_held_b".into(), json!(r.kernel_slab_held));
        det.insert(
            "slab_added_mb".into(),
            json!(diff(r.kernel_slab_before, r.kernel_slab_held).map(|d| mb(d, false))),
        );
        out.push(
            row(
                plan,
                "flood_kernel_tcp",
                &p,
                "MB",
                Better::Lower,
                mb(d, false),
                det,
            )
            .with_note(
                "buffered data (sockstat); the sockets' slab in the detail; both ends of every connection are on this host",
            ),
        );
    }
    let mut det = Map::new();
    det.insert("p50_ms".into(), json!(nearest_rank(&r.probe_ms, 0.5)));
    det.insert("p99_ms".into(), json!(nearest_rank(&r.probe_ms, 0.99)));
    det.insert("max_ms".into(), json!(r.probe_max_ms()));
    det.insert("answered".into(), json!(r.probes_answered));
    det.insert("probes".into(), json!(r.probes));
    if !r.probe_ms.is_empty() {
        out.push(
            ResultRow::new(
                "new_client_ms",
                plan.kind.name(),
                p.clone(),
                "ms",
                Better::Lower,
                r.probe_ms.clone(),
                0.0,
            )
            .with_detail(det),
        );
    }
    out.push(row(
        plan,
        "probes_unanswered",
        &p,
        "probes",
        Better::Lower,
        (r.probes - r.probes_answered) as f64,
        Map::new(),
    ));
    let mut det = Map::new();
    det.insert("opened".into(), json!(r.opened));
    det.insert("connect_failed".into(), json!(r.connect_failed));
    det.insert("closed_by_server".into(), json!(r.closed_by_server));
    det.insert("open_s".into(), json!(r.open_s));
    if let Some(t) = tcp {
        det.insert("server_tcp".into(), Value::Object(t));
    }
    out.push(row(
        plan,
        "flood_connections_lost",
        &p,
        "connections",
        Better::Lower,
        (r.connect_failed + r.closed_by_server) as f64,
        det,
    ));
    out
}

/// The rows of both flood phases, built by [`phase_rows`] from a
/// synthetic report with every figure, and the calls' row built by
/// [`calls_row`] from a synthetic generator report: part of the
/// document-shape snapshot test's input.
pub(super) fn synthetic_rows(plan: &TorturePlan) -> Vec<ResultRow> {
    let r = FloodReport {
        connections: 100,
        opened: 100,
        connect_failed: 0,
        half_open: false,
        open_s: 1.0,
        rss_before_kib: Some(1_000),
        rss_held_kib: Some(2_000),
        pss_before_kib: Some(1_000),
        pss_held_kib: Some(2_000),
        rss_per_connection: Some(10.0),
        kernel_tcp_before: Some(1_000),
        kernel_tcp_held: Some(2_000),
        kernel_slab_before: Some(1_000),
        kernel_slab_held: Some(2_000),
        probes_answered: 3,
        probes: 3,
        probe_ms: vec![1.0, 2.0, 3.0],
        closed_by_server: 0,
    };
    let mut out = phase_rows(plan, "idle", &r, Some(Map::new()));
    let half = FloodReport {
        half_open: true,
        ..r
    };
    out.extend(phase_rows(plan, "half_open", &half, None));
    let calls = Calls::of_report(&GenReport::synthetic(Role::Both, "udp"))
        .expect("the synthetic report has a UAC");
    out.push(calls_row(plan, 100, 500.0, &calls, 10.0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 0.5), Some(50.0));
        assert_eq!(nearest_rank(&v, 0.99), Some(99.0));
        assert_eq!(nearest_rank(&[3.0], 0.99), Some(3.0));
        assert_eq!(nearest_rank(&[], 0.5), None);
    }

    #[test]
    fn tcp_counters_as_deltas() {
        let b = json!({"open": 3, "evicted": 1, "accepted": 10});
        let a = json!({"open": 9, "evicted": 4, "accepted": 20, "note": "x"});
        let d = tcp_delta(Some(b), Some(a)).unwrap();
        assert_eq!(d["open"], 9);
        assert_eq!(d["evicted"], 3);
        assert_eq!(d["accepted"], 10);
        assert!(!d.contains_key("note"));
        assert!(tcp_delta(None, Some(json!({}))).is_none());
    }
}
