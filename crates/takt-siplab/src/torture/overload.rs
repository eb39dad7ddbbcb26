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

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Map};
use takt_measure::result::{Better, ResultRow};

use super::watch::{self, Sample};
use super::{row, Progress, Server, TorturePlan};
use crate::error::{Error, Result};
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

/// What one level measured.
struct Level {
    a: GenReport,
    b: GenReport,
    uas: GenReport,
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
            a: a?,
            b: b?,
            uas: uas?,
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
    det.insert(
        "generator_bound".into(),
        json!(m.a.saturation.generator_bound || m.b.saturation.generator_bound),
    );
    det.insert(
        "generator_reasons".into(),
        json!([&m.a.saturation.reasons[..], &m.b.saturation.reasons[..]].concat()),
    );
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
    let (ua, ub) = (m.a.uac.as_ref(), m.b.uac.as_ref());
    let mut failures: BTreeMap<&str, u64> = BTreeMap::new();
    let mut attempted = 0;
    let mut sent: BTreeMap<&str, u64> = BTreeMap::new();
    for u in [ua, ub].into_iter().flatten() {
        attempted += u.attempted;
        for (k, n) in &u.failures {
            *failures.entry(k).or_default() += n;
        }
        for (k, n) in &u.sent {
            *sent.entry(k).or_default() += n;
        }
    }
    let uas = m.uas.uas.as_ref();
    let got = |k: &str| uas.and_then(|u| u.received.get(k).copied()).unwrap_or(0);
    let bye_failed = failures.get("bye_failed").copied().unwrap_or(0);
    let refused: u64 = failures
        .iter()
        .filter(|(k, _)| **k != "bye_failed")
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
        .filter(|(k, _)| matches!(**k, "503" | "rejected_other"))
        .map(|(_, n)| n)
        .sum();
    let ack_lost = sent
        .get("ack")
        .copied()
        .unwrap_or(0)
        .saturating_sub(failure_acks)
        .saturating_sub(got("ack"));
    let shed_dialog: u64 = m
        .losses_end
        .shed
        .iter()
        .filter(|(k, _)| matches!(k.as_str(), "ack" | "bye"))
        .map(|(_, n)| n)
        .sum();
    let mut det = Map::new();
    det.insert(
        "ack_sent".into(),
        json!(sent.get("ack").copied().unwrap_or(0)),
    );
    det.insert("ack_received_by_uas".into(), json!(got("ack")));
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
    det.insert(
        "uas_ack_timeouts".into(),
        json!(uas.map_or(0, |u| u.ack_timeouts)),
    );
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
        a: GenReport::synthetic(Role::Uac, "udp"),
        b: GenReport::synthetic(Role::Uac, "udp"),
        uas: GenReport::synthetic(Role::Uas, "udp"),
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
}
