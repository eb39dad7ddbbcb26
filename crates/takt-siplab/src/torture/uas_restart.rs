//! The uas-restart scenario: calls through the server to a UAS that runs
//! as its own process (`takt sip gen --role uas`), which is killed
//! (SIGKILL) a third of the way into the run and started again on the same
//! address after the outage.
//!
//! Measured: the calls that failed, by how (a 503 — RFC 3261 §16.9, a
//! stateful proxy's answer to a transport error on its branch, here the
//! ICMP port unreachable of the dead UAS; a 408 or other final response;
//! no final response within Timer B — what a stateless proxy leaves its
//! UAC with), the calls still unfinished at the end, what the server
//! answered itself (takt: its `/stats`), and the seconds from the new UAS
//! being bound to the first call completed after it.
//!
//! On a fleet ([`crate::fleet`]) the UACs are the fleet's and the outage
//! is its UAS agent's: the agent closes its UAS socket at the planned
//! instant and binds the same address again after the outage (its
//! process is not killed: a closed UDP socket makes the kernel answer
//! ICMP port unreachable just as a dead process's does, and the UAS's
//! dialogs are gone with its run either way). The agents count their
//! completed and failed calls every [`SERIES`]; the agent's rebind instant,
//! on its own clock, is converted with its measured clock offset, and the
//! recovery is the end of the first interval after it with a completed
//! call (so within one interval of the local measure's).

use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Map};
use takt_measure::result::{Better, ResultRow};
use takt_sched::ThreadSpec;

use super::calls::{Calls, LiveCalls, Series};
use super::{fault_rate, row, watch, Progress, Server, TorturePlan};
use crate::error::{io, Error, Result};
use crate::fleet::Outage;
use crate::gen::{GenReport, Generator, Role};
use crate::server_stats;

/// On a fleet, the interval the agents count their calls in.
pub const SERIES: Duration = Duration::from_millis(10);

/// A `takt sip gen --role uas` process, killed when dropped.
#[derive(Debug)]
struct UasProcess(Child);

impl UasProcess {
    /// Starts it on `addr`, placed and scheduled as the generator's `spec`
    /// says (its CPUs, off the server's; its policy, or the same
    /// real-time default), and waits (up to 10 s) until its socket is bound.
    fn start(exe: &std::path::Path, addr: SocketAddr, spec: &ThreadSpec) -> Result<UasProcess> {
        let mut cmd = Command::new(exe);
        cmd.args(["sip", "gen", "--role", "uas", "--uas-listen"])
            .arg(addr.to_string())
            .args(["--duration", "3600s"]);
        if let Some(c) = spec.cpus() {
            cmd.arg("--cpus").arg(c.to_string());
        }
        if let Some(p) = spec.policy() {
            cmd.arg("--sched").arg(p.to_string());
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(io(format!("starting {} sip gen --role uas", exe.display())))?;
        let mut p = UasProcess(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let bound = server_stats::udp_sockets(None)
                .map(|v| v.iter().any(|e| e.local == addr))
                .unwrap_or(false);
            if bound {
                return Ok(p);
            }
            if let Ok(Some(st)) = p.0.try_wait() {
                return Err(Error::Start {
                    target: "uas",
                    reason: format!("takt sip gen --role uas exited: {st}"),
                });
            }
            if Instant::now() >= deadline {
                return Err(Error::Start {
                    target: "uas",
                    reason: "its socket was not bound within 10 s".into(),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILL, and reap it.
    fn kill(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for UasProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What a run with the UAS's outage measured.
#[derive(Debug)]
struct Measured {
    /// The calls.
    calls: Calls,
    /// The server's counters before the run.
    before: watch::Losses,
    /// And after it.
    after: watch::Losses,
    /// From the new UAS being bound to the first call completed after it;
    /// if none completed, the rest of the run (if the UAS came back).
    first_after: std::result::Result<Duration, Option<Duration>>,
}

/// The scenario's rows: `outage_failed_calls` and `uas_recovery`, for
/// calls at `rate` with a UAC draining for `drain` (the outage is the
/// plan's).
fn rows(plan: &TorturePlan, rate: f64, drain: Duration, m: &Measured) -> Vec<ResultRow> {
    let d = plan.durations;
    let (calls, before, after, first_after) = (&m.calls, &m.before, &m.after, m.first_after);
    let mut p = plan.params(super::Scenario::UasRestart);
    p.insert("outage_s".into(), json!(d.outage.as_secs_f64()));
    p.insert("rate_cps".into(), json!(rate));
    let replied: Map<_, _> = after
        .replied
        .iter()
        .map(|(k, n)| {
            (
                k.clone(),
                json!(n - before.replied.get(k).copied().unwrap_or(0)),
            )
        })
        .collect();
    let mut det = calls.detail();
    det.insert(
        "outage_calls_expected".into(),
        json!(rate * d.outage.as_secs_f64()),
    );
    det.insert("server_replied".into(), json!(replied));
    det.insert("drain_s".into(), json!(drain.as_secs_f64()));
    let mut out = vec![row(
        plan,
        "outage_failed_calls",
        &p,
        "calls",
        Better::Lower,
        calls.lost() as f64,
        det,
    )];
    let mut det = Map::new();
    det.insert("recovered".into(), json!(first_after.is_ok()));
    if let Some(s) = &calls.series {
        det.insert("uas_closed_s".into(), json!(calls.uas_closed_s));
        det.insert("uas_rebound_s".into(), json!(calls.uas_rebound_s));
        det.insert("series_ms".into(), json!(s.every.as_secs_f64() * 1e3));
        det.insert("completed_series".into(), json!(s.completed));
        det.insert("failed_series".into(), json!(s.failed));
    }
    let rec = match first_after {
        Ok(d) => d.as_secs_f64(),
        Err(rest) => rest.map_or(0.0, |d| d.as_secs_f64()),
    };
    let r = row(plan, "uas_recovery", &p, "s", Better::Lower, rec, det);
    out.push(if first_after.is_ok() {
        r
    } else {
        r.with_note("no call completed after the UAS came back (the value is the rest of the run)")
    });
    out
}

/// The scenario's rows, built by [`rows`] from a synthetic UAC report and
/// counters, for a UAS that came back and one that did not: part of the
/// document-shape snapshot test's input.
pub(super) fn synthetic_rows(plan: &TorturePlan) -> Vec<ResultRow> {
    let after = watch::Losses {
        replied: [("503".to_string(), 10)].into(),
        ..watch::Losses::default()
    };
    [
        Ok(Duration::from_millis(50)),
        Err(Some(Duration::from_secs(2))),
    ]
    .into_iter()
    .flat_map(|first_after| {
        let m = Measured {
            calls: Calls::of_report(&GenReport::synthetic(Role::Uac, "udp"))
                .expect("the synthetic report has a UAC"),
            before: watch::Losses::default(),
            after: after.clone(),
            first_after,
        };
        rows(plan, 500.0, Duration::from_secs(3), &m)
    })
    .collect()
}

/// Runs the scenario; returns its rows.
pub fn run(
    plan: &TorturePlan,
    capacity: Option<f64>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<ResultRow>> {
    let d = plan.durations;
    let rate = fault_rate(capacity);
    // long enough for Timer B (32 s) in a full run
    let drain = if d.fault_run >= Duration::from_secs(15) {
        Duration::from_secs(34)
    } else {
        Duration::from_secs(3)
    };
    let kill_at = d.fault_run / 3;
    if plan.fleet.is_some() {
        return run_fleet(plan, rate, drain, kill_at, progress);
    }
    let exe = match &plan.setup.takt_exe {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(io("finding the takt executable"))?,
    };
    let addr = if plan.uas_listen.port() == 0 {
        UdpSocket::bind(plan.uas_listen)
            .and_then(|s| s.local_addr())
            .map_err(io("picking the UAS's port"))?
    } else {
        plan.uas_listen
    };
    let mut uas = Some(UasProcess::start(&exe, addr, &plan.gen.spec)?);
    let server = Server::start(plan, addr, progress)?;
    let mut cfg = plan.gen_cfg(Role::Uac, server.target.listen(), rate);
    cfg.duration = Some(d.fault_run);
    cfg.drain = drain;
    let uac = Generator::bind(&cfg)?;
    let live = uac.live();
    let before = watch::losses(&server.target);
    let measured = std::thread::scope(|s| -> Result<_> {
        let t0 = Instant::now();
        let h = s.spawn(|| uac.run(&plan.cancel));
        let mut killed_at = None;
        let mut back_at = None;
        let mut first_after = None;
        while !h.is_finished() {
            std::thread::sleep(Duration::from_millis(5));
            let now = t0.elapsed();
            if killed_at.is_none() && now >= kill_at {
                if let Some(u) = uas.take() {
                    u.kill();
                }
                progress(Progress::Step("uas killed"));
                killed_at = Some((now, live.completed.load(Ordering::Relaxed)));
            }
            if let (Some((k, _)), None) = (killed_at, back_at) {
                if now >= k + d.outage {
                    uas = Some(UasProcess::start(&exe, addr, &plan.gen.spec)?);
                    progress(Progress::Step("uas restarted"));
                    back_at = Some((t0.elapsed(), live.completed.load(Ordering::Relaxed)));
                }
            }
            if let (Some((b, n)), None) = (back_at, first_after) {
                if live.completed.load(Ordering::Relaxed) > n {
                    first_after = Some(t0.elapsed().saturating_sub(b));
                }
            }
        }
        let rep = h
            .join()
            .map_err(|_| Error::Thread("the UAC thread panicked".into()))??;
        // not recovered: the whole rest of the run
        let first_after = first_after.ok_or_else(|| back_at.map(|(b, _)| t0.elapsed() - b));
        Ok((rep, killed_at, back_at, first_after))
    });
    let after = watch::losses(&server.target);
    drop(uas);
    let stopped = server.stop();
    let (rep, killed_at, back_at, first_after) = measured?;
    if plan.stopped() {
        return Err(Error::Interrupted);
    }
    let unclean = super::stop_verdict(stopped)?;
    let (Some(_), Some(_)) = (killed_at, back_at) else {
        return Err(Error::Config(
            "the run ended before the UAS was killed and restarted".into(),
        ));
    };
    let m = Measured {
        calls: Calls::of_report(&rep)?,
        before,
        after,
        first_after,
    };
    Ok(super::stop_noted(rows(plan, rate, drain, &m), unclean))
}

/// The scenario on a fleet: one fleet trial at `rate` over the run,
/// retransmissions as the local generator's, its UAS agent's socket
/// closed at `kill_at` and bound again after the outage.
fn run_fleet(
    plan: &TorturePlan,
    rate: f64,
    drain: Duration,
    kill_at: Duration,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<ResultRow>> {
    let d = plan.durations;
    // one attempt: the server's counters before and after are the trial's
    let mut calls = LiveCalls::new(plan, "uas-restart", rate, d.fault_run, 1)?;
    if let Some(spec) = calls.fleet_spec() {
        spec.drain = drain;
        spec.retransmit = plan.gen.timers.retransmit;
        spec.drain_quiet = None;
        spec.series = Some(SERIES);
        spec.uas_outage = Some(Outage {
            after_ms: kill_at.as_millis() as u64,
            for_ms: d.outage.as_millis() as u64,
        });
    }
    let server = Server::start(plan, calls.uas()?, progress)?;
    calls.set_target(&server.target)?;
    let before = watch::losses(&server.target);
    progress(Progress::Step(&format!(
        "the fleet's UAS closes its socket {:.1} s in, for {:.1} s",
        kill_at.as_secs_f64(),
        d.outage.as_secs_f64()
    )));
    let measured = calls.run(plan);
    let after = watch::losses(&server.target);
    let stopped = server.stop();
    let calls = measured?;
    if plan.stopped() {
        return Err(Error::Interrupted);
    }
    let unclean = super::stop_verdict(stopped)?;
    let (Some(series), Some(_), Some(back)) =
        (&calls.series, calls.uas_closed_s, calls.uas_rebound_s)
    else {
        return Err(Error::Fleet(
            "uas-restart: the run ended before the fleet's UAS closed its socket and bound it again"
                .into(),
        ));
    };
    let first_after = first_completed_after(series, back);
    let m = Measured {
        calls,
        before,
        after,
        first_after,
    };
    Ok(super::stop_noted(rows(plan, rate, drain, &m), unclean))
}

/// From `back_s` (the UAS bound again, s after the start) to the end of
/// the first interval after it in which a call completed; if none did,
/// the rest of the series.
fn first_completed_after(
    s: &Series,
    back_s: f64,
) -> std::result::Result<Duration, Option<Duration>> {
    let every = s.every.as_secs_f64();
    let since = |end: f64| Duration::from_secs_f64((end - back_s).max(0.0));
    s.completed
        .iter()
        .enumerate()
        .map(|(k, &n)| ((k + 1) as f64 * every, n))
        .find(|&(end, n)| end > back_s && n > 0)
        .map(|(end, _)| since(end))
        .ok_or_else(|| Some(since(s.completed.len() as f64 * every)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_is_the_end_of_the_first_interval_with_a_call_after_the_rebind() {
        let s = Series {
            every: Duration::from_millis(10),
            // completions up to 20 ms, none in the outage, then from 60
            // to 80 ms, none after
            completed: vec![3, 4, 0, 0, 0, 0, 2, 5, 0, 0],
            failed: vec![0; 10],
        };
        // bound again at 45 ms: the first completion ends its interval at 70 ms
        let r = first_completed_after(&s, 0.045).unwrap();
        assert!((r.as_secs_f64() - 0.025).abs() < 1e-9, "{r:?}");
        // bound again after the last completion: not recovered, the rest
        let none = first_completed_after(&s, 0.085).unwrap_err().unwrap();
        assert!((none.as_secs_f64() - 0.015).abs() < 1e-9, "{none:?}");
    }
}
