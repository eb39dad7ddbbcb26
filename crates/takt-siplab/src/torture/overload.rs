//! The overload scenario: for each level (2×, then 1.5× the capacity) a
//! fresh server gets half its capacity from one UAC for the whole run and
//! the rest of the level from a second UAC during the overload window
//! only; after the window the load is back to half the capacity. One UAS
//! answers both. Retransmissions are on (RFC 3261 timers), as a real
//! client population's would be.
//!
//! Measured per level:
//! - **goodput**: calls completed per second during the overload window,
//!   against the capacity the levels are multiples of — the sustained
//!   one (`super::sustained`) where it was checked (targets: ≥ 80% at 2×,
//!   ≥ 90% at 1.5×); the searched capacity and the ratio to it are in the
//!   row's detail;
//! - **refused INVITEs**: calls that failed (503 from the server, another
//!   final response, or no answer within Timer B), of those attempted;
//! - **dialog messages lost**: ACKs to 2xx the UACs sent that never
//!   reached the UAS (ACKs to failure responses end at a stateful proxy and
//!   are not counted), and BYEs never answered (the call ended `bye_failed`) — none may
//!   be lost while new INVITEs are still being accepted; for takt also the
//!   ACKs and BYEs it shed itself (its `/stats`);
//! - **peak memory**: the largest resident set seen (sampled every
//!   200 ms) and the processes' `VmHWM`;
//! - **recovery**: seconds from the end of the overload window to the end
//!   of the last 200 ms interval in which the server lost anything (socket
//!   drops, or for takt messages shed with a 503), when the load is back
//!   at half the capacity (target ≤ 5 s). Losses still going on at the end
//!   of the run mean no recovery (the row says so).
//!
//! On a fleet ([`crate::fleet`]) the two UAC streams are every UAC
//! agent's, each its share of both (one fleet trial whose orders carry a
//! second stream, retransmissions on); the agents count their calls
//! completed and failed per 200 ms interval from the planned start, and
//! the coordinator sums them by interval. The server's side — its
//! memory, socket drops and takt's counters — is sampled here every
//! 200 ms as in a local run, on this host's clock, and each sample takes
//! the fleet's completions of the intervals ended by then; the UAS
//! agent reports its 200s never ACKed by Timer H.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Map};
use takt_measure::result::{Better, ResultRow};

use super::calls::{Calls, LiveCalls};
use super::watch::{self, Sample};
use super::{row, Progress, Server, TorturePlan};
use crate::error::{Error, Result};
use crate::fleet::detail::points_detail;
use crate::fleet::protocol::Stream;
use crate::fleet::FleetPoint;
use crate::gen::{Cancel, GenReport, Generator, Role};

/// The overload levels, × the capacity, and the goodput each must keep.
pub const LEVELS: [(f64, f64); 2] = [(2.0, 0.8), (1.5, 0.9)];
/// How often the server is sampled.
const EVERY: Duration = Duration::from_millis(200);
/// The recovery target, s.
pub const RECOVERY_TARGET_S: f64 = 5.0;

/// Runs both levels; returns their rows.
/// `capacity` is the one the levels offer multiples of and goodput is
/// compared against (the sustained one where it was checked);
/// `searched`, when it differs, the capacity search's answer, shown
/// beside it.
pub fn run(
    plan: &TorturePlan,
    capacity: f64,
    searched: Option<f64>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<ResultRow>> {
    if capacity.is_nan() || capacity <= 0.0 {
        return Err(Error::Config("overload needs a positive capacity".into()));
    }
    let mut rows = Vec::new();
    for (x, goal) in LEVELS {
        if plan.stopped() {
            return Err(Error::Interrupted);
        }
        progress(Progress::Step(&format!(
            "overload {x}x of {capacity:.0} cps"
        )));
        rows.extend(level(plan, capacity, searched, x, goal, progress)?);
    }
    Ok(rows)
}

/// What one level's calls counted, from the local generator's reports
/// or a fleet's merged account.
struct Counted {
    /// Calls placed, both streams.
    attempted: u64,
    /// Failed calls by class, both streams.
    failures: BTreeMap<String, u64>,
    /// ACKs the UACs sent.
    ack_sent: u64,
    /// ACKs the UAS received.
    ack_received_by_uas: u64,
    /// 200s whose ACK never came by Timer H, at the UAS.
    uas_ack_timeouts: Option<u64>,
    /// A generator (or an agent) could not keep up, and why.
    generator_bound: bool,
    /// See `generator_bound`.
    generator_reasons: Vec<String>,
    /// Under a fleet: its trial and each agent's share.
    fleet: Option<FleetPoint>,
    /// Under a fleet: the calls completed per interval (summed over the
    /// agents), and the interval.
    series: Option<(Duration, Vec<u64>)>,
}

impl Counted {
    /// The local generator's: streams `a` and `b`, the UAS `uas`.
    fn of_reports(a: &GenReport, b: &GenReport, uas: &GenReport) -> Counted {
        let mut c = Counted {
            attempted: 0,
            failures: BTreeMap::new(),
            ack_sent: 0,
            ack_received_by_uas: uas
                .uas
                .as_ref()
                .and_then(|u| u.received.get("ack").copied())
                .unwrap_or(0),
            uas_ack_timeouts: Some(uas.uas.as_ref().map_or(0, |u| u.ack_timeouts)),
            generator_bound: a.saturation.generator_bound || b.saturation.generator_bound,
            generator_reasons: [&a.saturation.reasons[..], &b.saturation.reasons[..]].concat(),
            fleet: None,
            series: None,
        };
        for u in [&a.uac, &b.uac].into_iter().flatten() {
            c.attempted += u.attempted;
            for (k, n) in &u.failures {
                *c.failures.entry(k.to_string()).or_default() += n;
            }
            c.ack_sent += u.sent.get("ack").copied().unwrap_or(0);
        }
        c
    }

    /// A fleet trial's (both streams in every agent's account).
    fn of_fleet(calls: &Calls) -> Counted {
        let (ack_sent, ack_received_by_uas) = calls.kinds.get("ack").copied().unwrap_or((0, 0));
        Counted {
            attempted: calls.attempted,
            failures: calls.failures.clone(),
            ack_sent,
            ack_received_by_uas,
            uas_ack_timeouts: calls.uas_ack_timeouts,
            generator_bound: calls.generator_bound,
            generator_reasons: calls.generator_reasons.clone(),
            fleet: calls.fleet.clone(),
            series: calls
                .series
                .as_ref()
                .map(|s| (s.every, s.completed.clone())),
        }
    }
}

/// What one level measured.
struct Level {
    counted: Counted,
    samples: Vec<Sample>,
    losses_end: watch::Losses,
    hwm: u64,
    throttling: Option<super::cgroup::Throttling>,
}

fn level(
    plan: &TorturePlan,
    capacity: f64,
    searched: Option<f64>,
    x: f64,
    goal: f64,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<ResultRow>> {
    if plan.fleet.is_some() {
        return level_fleet(plan, capacity, searched, x, goal, progress);
    }
    let d = plan.durations;
    let half = capacity / 2.0;
    // the UAS binds first: the server forwards to it
    let mut uas_cfg = plan.gen_cfg(Role::Uas, plan.uas_listen, 1.0);
    uas_cfg.uas_listen = plan.uas_listen;
    let uas = Generator::bind(&uas_cfg)?;
    let uas_addr = uas
        .uas_addr()
        .ok_or_else(|| Error::Thread("the UAS has no address".into()))?;
    let server = Server::start(plan, uas_addr, progress)?;
    let proxy = server.target.listen();
    let mut a_cfg = plan.gen_cfg(Role::Uac, proxy, half);
    a_cfg.duration = Some(d.overload + d.recovery);
    a_cfg.seed = plan.gen.seed;
    let mut b_cfg = plan.gen_cfg(Role::Uac, proxy, capacity * x - half);
    b_cfg.duration = Some(d.overload);
    b_cfg.seed = plan.gen.seed.wrapping_add(1);
    b_cfg.drain = Duration::from_millis(200);
    let a = Generator::bind(&a_cfg)?;
    let b = Generator::bind(&b_cfg)?;
    let (live_a, live_b) = (a.live(), b.live());
    let uas_cancel = Cancel::default();
    let measured = std::thread::scope(|s| -> Result<Level> {
        let uas_t = s.spawn(|| uas.run(&uas_cancel));
        let t0 = Instant::now();
        let a_t = s.spawn(|| a.run(&plan.cancel));
        let b_t = s.spawn(|| b.run(&plan.cancel));
        let mut samples = Vec::new();
        let mut next = t0;
        while !(a_t.is_finished() && b_t.is_finished()) {
            next += EVERY;
            if let Some(w) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(w);
            }
            let pids = server.target.pids();
            let lost = watch::losses(&server.target).total();
            let r = |l: &std::sync::Arc<crate::gen::Live>| {
                (
                    l.completed.load(Ordering::Relaxed),
                    l.failed.load(Ordering::Relaxed),
                )
            };
            let ((ca, fa), (cb, fb)) = (r(&live_a), r(&live_b));
            samples.push(Sample {
                t_s: watch::since(t0),
                memory: watch::memory(&pids),
                lost,
                completed: ca + cb,
                failed: fa + fb,
            });
        }
        let join = |h: std::thread::ScopedJoinHandle<'_, Result<GenReport>>| {
            h.join()
                .map_err(|_| Error::Thread("a generator thread panicked".into()))?
        };
        let a = join(a_t);
        let b = join(b_t);
        // the UAS answers what is still in flight, then stops
        std::thread::sleep(Duration::from_millis(300));
        uas_cancel.cancel();
        let uas = join(uas_t);
        let losses_end = watch::losses(&server.target);
        let hwm = watch::memory(&server.target.pids()).hwm;
        Ok(Level {
            counted: Counted::of_reports(&a?, &b?, &uas?),
            samples,
            losses_end,
            hwm,
            throttling: server.throttling(),
        })
    });
    let stopped = server.stop();
    let m = measured?;
    if plan.stopped() {
        return Err(Error::Interrupted);
    }
    let unclean = super::stop_verdict(stopped)?;
    Ok(super::stop_noted(
        rows(plan, capacity, searched, x, goal, &m),
        unclean,
    ))
}

/// One level on a fleet: one fleet trial of both streams (the second
/// during the overload window), the server sampled here every
/// [`EVERY`], each sample given the fleet's completions of the intervals
/// ended by its time.
fn level_fleet(
    plan: &TorturePlan,
    capacity: f64,
    searched: Option<f64>,
    x: f64,
    goal: f64,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<ResultRow>> {
    let d = plan.durations;
    let half = capacity / 2.0;
    // one attempt: the server's samples are the trial's
    let mut calls = LiveCalls::new(plan, "overload", half, d.overload + d.recovery, 1)?;
    if let Some(spec) = calls.fleet_spec() {
        spec.retransmit = plan.gen.timers.retransmit;
        spec.drain_quiet = None;
        spec.series = Some(EVERY);
        spec.second = Some(Stream {
            cps: capacity * x - half,
            offset_ms: 0,
            window_ms: d.overload.as_millis() as u64,
            drain_ms: 200,
        });
    }
    let server = Server::start(plan, calls.uas()?, progress)?;
    calls.set_target(&server.target)?;
    let measured = std::thread::scope(|s| -> Result<_> {
        let h = s.spawn(|| calls.run(plan));
        // (ns since the Unix epoch, memory, losses so far)
        let mut seen = Vec::new();
        let mut next = Instant::now();
        while !h.is_finished() {
            next += EVERY;
            if let Some(w) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(w);
            }
            let pids = server.target.pids();
            let lost = watch::losses(&server.target).total();
            seen.push((crate::fleet::unix_ns(), watch::memory(&pids), lost));
        }
        let calls = h
            .join()
            .map_err(|_| Error::Thread("the fleet's trial thread panicked".into()))??;
        Ok((calls, seen))
    });
    let losses_end = watch::losses(&server.target);
    let hwm = watch::memory(&server.target.pids()).hwm;
    let throttling = server.throttling();
    let stopped = server.stop();
    let (calls, seen) = measured?;
    if plan.stopped() {
        return Err(Error::Interrupted);
    }
    let unclean = super::stop_verdict(stopped)?;
    let (Some(series), Some(start)) = (&calls.series, calls.start_unix_ns) else {
        return Err(Error::Fleet(
            "overload: the fleet's trial came back without its series".into(),
        ));
    };
    let samples = fleet_samples(
        &seen,
        start,
        series.every,
        &series.completed,
        &series.failed,
    );
    let m = Level {
        counted: Counted::of_fleet(&calls),
        samples,
        losses_end,
        hwm,
        throttling,
    };
    Ok(super::stop_noted(
        rows(plan, capacity, searched, x, goal, &m),
        unclean,
    ))
}

/// The server's samples `seen` (each at ns since the Unix epoch) as
/// [`Sample`]s from the fleet's start `start_unix_ns`, each with the
/// calls completed and failed in the fleet's intervals (`every` long)
/// ended by its time.
fn fleet_samples(
    seen: &[(u64, watch::Memory, u64)],
    start_unix_ns: u64,
    every: Duration,
    completed: &[u64],
    failed: &[u64],
) -> Vec<Sample> {
    let upto = |v: &[u64], t_s: f64| -> u64 {
        let n = (t_s / every.as_secs_f64()).floor().max(0.0) as usize;
        v.iter().take(n).sum()
    };
    seen.iter()
        .map(|&(at, memory, lost)| {
            let t_s = (at as f64 - start_unix_ns as f64) / 1e9;
            Sample {
                t_s,
                memory,
                lost,
                completed: upto(completed, t_s),
                failed: upto(failed, t_s),
            }
        })
        .collect()
}

fn rows(
    plan: &TorturePlan,
    capacity: f64,
    searched: Option<f64>,
    x: f64,
    goal: f64,
    m: &Level,
) -> Vec<ResultRow> {
    let d = plan.durations;
    let over = d.overload.as_secs_f64();
    let mut p = plan.params(super::Scenario::Overload);
    p.insert("offered_x".into(), json!(x));
    // calls completed (or failed) by time t, as last sampled
    let ended = |t: f64, failed: bool| {
        m.samples.iter().rev().find(|s| s.t_s <= t).map_or(0, |s| {
            if failed {
                s.failed
            } else {
                s.completed
            }
        })
    };
    let at = |t: f64| ended(t, false);
    // completions in the window, skipping its first second (calls offered
    // before the overload began are still finishing)
    let skip = over.min(1.0);
    let goodput = (at(over) - at(skip)) as f64 / (over - skip).max(1e-9);
    let mut out = Vec::new();
    let mut det = Map::new();
    det.insert("capacity_cps".into(), json!(capacity));
    if let Some(c) = searched {
        det.insert("capacity_searched_cps".into(), json!(c));
        det.insert("ratio_to_searched".into(), json!(goodput / c));
    }
    det.insert("offered_cps".into(), json!(capacity * x));
    det.insert("ratio".into(), json!(goodput / capacity));
    det.insert("target_ratio".into(), json!(goal));
    det.insert("met".into(), json!(goodput / capacity >= goal));
    det.insert("throttling".into(), json!(m.throttling));
    let c = &m.counted;
    det.insert("generator_bound".into(), json!(c.generator_bound));
    det.insert("generator_reasons".into(), json!(c.generator_reasons));
    if let Some(v) = points_detail([c.fleet.as_ref()]) {
        det.insert("fleet".into(), v);
    }
    if let Some((every, s)) = &c.series {
        det.insert("series_ms".into(), json!(every.as_secs_f64() * 1e3));
        det.insert("completed_series".into(), json!(s));
    }
    out.push(row(
        plan,
        "goodput",
        &p,
        "cps",
        Better::Higher,
        goodput,
        det,
    ));

    // calls refused or unanswered, and the dialog messages lost
    let (failures, attempted) = (&c.failures, c.attempted);
    let bye_failed = failures.get("bye_failed").copied().unwrap_or(0);
    let refused: u64 = failures
        .iter()
        .filter(|(k, _)| k.as_str() != "bye_failed")
        .map(|(_, n)| n)
        .sum();
    // the ratio is over the whole level (its recovery part refuses
    // nothing); calls that ended inside the window, by how they ended,
    // show the window alone
    let (done_w, failed_w) = (
        ended(over, false) - ended(skip, false),
        ended(over, true) - ended(skip, true),
    );
    let mut det = Map::new();
    det.insert("attempted".into(), json!(attempted));
    det.insert("failures".into(), json!(failures));
    det.insert("window_completed".into(), json!(done_w));
    det.insert("window_failed".into(), json!(failed_w));
    det.insert(
        "window_failed_ratio".into(),
        json!(failed_w as f64 / (done_w + failed_w).max(1) as f64),
    );
    out.push(row(
        plan,
        "invites_refused",
        &p,
        "ratio",
        Better::Lower,
        refused as f64 / attempted.max(1) as f64,
        det,
    ));
    // ACKs to failure responses end at the proxy (hop by hop, §17.1.1.3):
    // only those of 2xx (end to end) can reach the UAS
    let failure_acks: u64 = failures
        .iter()
        .filter(|(k, _)| matches!(k.as_str(), "503" | "rejected_other"))
        .map(|(_, n)| n)
        .sum();
    let ack_lost = c
        .ack_sent
        .saturating_sub(failure_acks)
        .saturating_sub(c.ack_received_by_uas);
    let shed_dialog: u64 = m
        .losses_end
        .shed
        .iter()
        .filter(|(k, _)| matches!(k.as_str(), "ack" | "bye"))
        .map(|(_, n)| n)
        .sum();
    let mut det = Map::new();
    det.insert("ack_sent".into(), json!(c.ack_sent));
    det.insert("ack_received_by_uas".into(), json!(c.ack_received_by_uas));
    det.insert("ack_to_failures".into(), json!(failure_acks));
    det.insert("ack_lost".into(), json!(ack_lost));
    det.insert("bye_failed_calls".into(), json!(bye_failed));
    det.insert("shed_by_server".into(), json!(m.losses_end.shed));
    det.insert("dialog_shed_by_server".into(), json!(shed_dialog));
    det.insert(
        "server_socket_drops".into(),
        json!(m.losses_end.socket_drops),
    );
    // takt with the INVITE split: what its INVITE socket dropped (new
    // INVITEs only) and so what every other socket dropped
    det.insert(
        "server_invite_socket_drops".into(),
        json!(m.losses_end.invite_socket_drops),
    );
    det.insert(
        "server_dialog_socket_drops".into(),
        json!(m
            .losses_end
            .socket_drops
            .saturating_sub(m.losses_end.invite_socket_drops)),
    );
    det.insert("dropped_by_server".into(), json!(m.losses_end.dropped));
    det.insert("uas_ack_timeouts".into(), json!(c.uas_ack_timeouts));
    det.insert("invites_refused".into(), json!(refused));
    out.push(row(
        plan,
        "dialog_lost",
        &p,
        "messages",
        Better::Lower,
        (ack_lost + bye_failed + shed_dialog) as f64,
        det,
    ));

    let peak = m.samples.iter().map(|s| s.memory.rss).max().unwrap_or(0);
    let first = m.samples.first().map_or(0, |s| s.memory.rss);
    let mut det = Map::new();
    det.insert("rss_first_mb".into(), json!(first as f64 / 1e6));
    det.insert("vm_hwm_mb".into(), json!(m.hwm as f64 / 1e6));
    det.insert(
        "rss_mb_every_s".into(),
        json!(m
            .samples
            .iter()
            .step_by(5)
            .map(|s| (s.memory.rss as f64 / 1e5).round() / 10.0)
            .collect::<Vec<_>>()),
    );
    out.push(row(
        plan,
        "peak_rss",
        &p,
        "MB",
        Better::Lower,
        peak as f64 / 1e6,
        det,
    ));

    let (rec, recovered) = recovery(&m.samples, over);
    let mut det = Map::new();
    det.insert("recovered".into(), json!(recovered));
    det.insert("target_s".into(), json!(RECOVERY_TARGET_S));
    det.insert(
        "lost_per_interval_after".into(),
        json!(m
            .samples
            .windows(2)
            .filter(|w| w[1].t_s > over)
            .map(|w| w[1].lost - w[0].lost)
            .collect::<Vec<_>>()),
    );
    let r = row(plan, "recovery", &p, "s", Better::Lower, rec, det);
    out.push(if recovered {
        r
    } else {
        r.with_note("losses went on to the end of the run: not recovered")
    });
    out
}

/// The rows of one overload level, built by [`rows`] from synthetic
/// reports and samples: part of the document-shape snapshot test's input.
pub(super) fn synthetic_rows(plan: &TorturePlan) -> Vec<ResultRow> {
    let samples = (0u32..20)
        .map(|i| Sample {
            t_s: f64::from(i) * 0.5,
            memory: watch::Memory::default(),
            lost: u64::from(i),
            completed: 10 * u64::from(i),
            failed: 0,
        })
        .collect();
    let level = Level {
        counted: Counted::of_reports(
            &GenReport::synthetic(Role::Uac, "udp"),
            &GenReport::synthetic(Role::Uac, "udp"),
            &GenReport::synthetic(Role::Uas, "udp"),
        ),
        samples,
        losses_end: watch::Losses::default(),
        hwm: 0,
        throttling: None,
    };
    rows(
        plan,
        1_000.0,
        Some(1_100.0),
        LEVELS[0].0,
        LEVELS[0].1,
        &level,
    )
}

/// Seconds from `over` to the end of the last sampling interval with a
/// loss after it, and whether the run ended with at least a second free of
/// losses (else the value is the rest of the run).
fn recovery(samples: &[Sample], over: f64) -> (f64, bool) {
    let mut last_loss = over;
    for w in samples.windows(2) {
        if w[1].t_s > over && w[1].lost > w[0].lost {
            last_loss = w[1].t_s;
        }
    }
    let end = samples.last().map_or(over, |s| s.t_s);
    ((last_loss - over).max(0.0), end - last_loss >= 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::torture::watch::Memory;

    fn s(t_s: f64, lost: u64) -> Sample {
        Sample {
            t_s,
            memory: Memory::default(),
            lost,
            completed: 0,
            failed: 0,
        }
    }

    #[test]
    fn recovery_is_the_last_loss_after_the_window() {
        let v: Vec<_> = [
            (0.0, 0),
            (1.0, 5),
            (2.0, 9),
            (3.0, 12),
            (4.0, 12),
            (5.5, 12),
        ]
        .into_iter()
        .map(|(t, l)| s(t, l))
        .collect();
        assert_eq!(recovery(&v, 2.0), (1.0, true));
        assert_eq!(recovery(&v, 3.0), (0.0, true));
        // still losing at the end
        let v: Vec<_> = [(0.0, 0), (3.0, 1), (3.5, 2)]
            .into_iter()
            .map(|(t, l)| s(t, l))
            .collect();
        assert_eq!(recovery(&v, 2.0), (1.5, false));
    }

    /// Each sample of the server takes the fleet's calls of the
    /// intervals ended by its time on the fleet's clock.
    #[test]
    fn fleet_samples_count_the_intervals_ended_by_their_time() {
        let start = 10_000_000_000u64;
        let at = |s: f64| (start as f64 + s * 1e9) as u64;
        let seen: Vec<_> = [-0.1, 0.25, 0.41, 1.0]
            .into_iter()
            .map(|t| (at(t), Memory::default(), 0))
            .collect();
        let every = Duration::from_millis(200);
        let v = fleet_samples(&seen, start, every, &[5, 7, 9, 11, 13], &[0, 1, 0, 0, 2]);
        let got: Vec<(u64, u64)> = v.iter().map(|s| (s.completed, s.failed)).collect();
        assert_eq!(got, [(0, 0), (5, 0), (12, 1), (45, 3)]);
        assert!((v[0].t_s + 0.1).abs() < 1e-6 && (v[3].t_s - 1.0).abs() < 1e-6);
    }
}
