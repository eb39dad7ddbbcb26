//! The soak: half the capacity for a long time (30 minutes in a full run),
//! UAC and UAS in this process, retransmissions on. Measured: failed and
//! unfinished calls (target: none) and the server's resident memory at
//! the end against after the first minute (target: within 5%), sampled
//! every second.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use takt_measure::result::{Better, ResultRow};

use super::{row, watch, Progress, Server, TorturePlan};
use crate::error::{Error, Result};
use crate::fleet::coordinator::MAX_ATTEMPTS;
use crate::fleet::detail::points_detail;
use crate::fleet::load::base_spec;
use crate::fleet::{FleetPoint, SharedFleet};
use crate::gen::{GenReport, Generator, Role};

/// RSS growth allowed between the first minute and the end.
pub const RSS_GROWTH_TARGET: f64 = 0.05;

/// A soak's calls, from the local generator or a fleet.
#[derive(Debug)]
struct Calls {
    /// Calls failed or left unfinished.
    failed: u64,
    /// What the row's detail says of them.
    detail: Map<String, Value>,
}

impl Calls {
    /// The local generator's calls (retransmissions on).
    fn of_report(rep: &GenReport) -> Result<Calls> {
        let u = rep
            .uac
            .as_ref()
            .ok_or_else(|| Error::Thread("the UAC did not report".into()))?;
        let mut det = Map::new();
        det.insert("attempted".into(), json!(u.attempted));
        det.insert("completed".into(), json!(u.completed));
        det.insert("failures".into(), json!(u.failures));
        det.insert("unfinished".into(), json!(u.unfinished));
        det.insert("retransmitted".into(), json!(u.retransmitted));
        det.insert(
            "generator_bound".into(),
            json!(rep.saturation.generator_bound),
        );
        det.insert("generator_reasons".into(), json!(rep.saturation.reasons));
        Ok(Calls {
            failed: u.failed + u.unfinished,
            detail: det,
        })
    }

    /// A fleet's calls (a fleet trial's: retransmissions off, so a lost
    /// message fails its call), each agent's share in `fleet`.
    fn of_fleet(f: &FleetPoint) -> Calls {
        let mut det = Map::new();
        det.insert(
            "attempted".into(),
            json!(f.agents.iter().map(|a| a.attempted).sum::<u64>()),
        );
        det.insert("completed".into(), json!(f.completed));
        det.insert("failed_or_unfinished".into(), json!(f.failed));
        det.insert("retransmissions".into(), json!(false));
        det.insert("generator_bound".into(), json!(f.generator_bound));
        if let Some(v) = points_detail([Some(f)]) {
            det.insert("fleet".into(), v);
        }
        Calls {
            failed: f.failed,
            detail: det,
        }
    }
}

/// What a soak measured.
#[derive(Debug)]
struct Soaked {
    /// Its calls.
    calls: Calls,
    /// The server's RSS every second, bytes.
    series: Vec<u64>,
    /// Its RSS at `reference_at`, if the soak got that far.
    reference: Option<u64>,
    /// When the reference was to be taken.
    reference_at: Duration,
    /// Its RSS once the load was over, bytes.
    end_rss: u64,
}

/// The soak's rows: `soak_failed_calls` and `soak_rss_growth`, for a
/// soak of the plan's length at `rate` calls/s.
fn rows(plan: &TorturePlan, rate: f64, m: &Soaked) -> Vec<ResultRow> {
    let series = &m.series;
    let (reference, reference_at, end_rss) = (m.reference, m.reference_at, m.end_rss);
    let d = plan.durations.soak;
    let mut p = plan.params(super::Scenario::Soak);
    p.insert("rate_cps".into(), json!(rate));
    p.insert("duration_s".into(), json!(d.as_secs_f64()));
    let mut out = vec![row(
        plan,
        "soak_failed_calls",
        &p,
        "calls",
        Better::Lower,
        m.calls.failed as f64,
        m.calls.detail.clone(),
    )];
    let reference = reference.unwrap_or_else(|| series.first().copied().unwrap_or(0));
    let last = series.last().copied().unwrap_or(end_rss);
    let growth = last as f64 / reference.max(1) as f64 - 1.0;
    let mut det = Map::new();
    det.insert("rss_reference_mb".into(), json!(reference as f64 / 1e6));
    det.insert("reference_at_s".into(), json!(reference_at.as_secs_f64()));
    det.insert("rss_end_mb".into(), json!(last as f64 / 1e6));
    det.insert("rss_after_load_mb".into(), json!(end_rss as f64 / 1e6));
    det.insert("target".into(), json!(RSS_GROWTH_TARGET));
    det.insert("met".into(), json!(growth <= RSS_GROWTH_TARGET));
    det.insert(
        "rss_mb_every_10s".into(),
        json!(series
            .iter()
            .step_by(10)
            .map(|&r| (r as f64 / 1e5).round() / 10.0)
            .collect::<Vec<_>>()),
    );
    out.push(row(
        plan,
        "soak_rss_growth",
        &p,
        "ratio",
        Better::Lower,
        growth,
        det,
    ));
    out
}

/// The soak's rows, built by [`rows`] from a synthetic generator report
/// and memory series: part of the document-shape snapshot test's input.
pub(super) fn synthetic_rows(plan: &TorturePlan) -> Vec<ResultRow> {
    let soaked = Soaked {
        calls: Calls::of_report(&GenReport::synthetic(Role::Both, "udp"))
            .expect("the synthetic report has a UAC"),
        series: (0..30).map(|i| 100_000_000 + i * 10_000).collect(),
        reference: Some(100_100_000),
        reference_at: Duration::from_secs(10),
        end_rss: 100_200_000,
    };
    rows(plan, 500.0, &soaked)
}

/// Runs the soak; returns its rows.
pub fn run(
    plan: &TorturePlan,
    capacity: f64,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<ResultRow>> {
    if let Some(f) = &plan.fleet {
        return run_fleet(plan, f, capacity, progress);
    }
    let d = plan.durations.soak;
    let mut cfg = plan.gen_cfg(Role::Both, plan.uas_listen, capacity / 2.0);
    cfg.uas_listen = plan.uas_listen;
    cfg.duration = Some(d);
    let mut gen = Generator::bind(&cfg)?;
    let uas = gen
        .uas_addr()
        .ok_or_else(|| Error::Thread("the UAS has no address".into()))?;
    let server = Server::start(plan, uas, progress)?;
    gen.set_proxy(server.target.listen())?;
    let live = gen.live();
    // the reference: after the first minute (or a third of a short soak)
    let reference_at = Duration::from_secs(60).min(d / 3);
    let measured = std::thread::scope(|s| -> Result<_> {
        let h = s.spawn(|| gen.run(&plan.cancel));
        let (series, reference) =
            watch_rss(&server, reference_at, &|| h.is_finished(), &mut |t, rss| {
                progress(Progress::Step(&format!(
                    "soak {t:.0} s: {} calls completed, {} failed, RSS {:.1} MB",
                    live.completed.load(Ordering::Relaxed),
                    live.failed.load(Ordering::Relaxed),
                    rss as f64 / 1e6
                )))
            });
        let rep = h
            .join()
            .map_err(|_| Error::Thread("the generator thread panicked".into()))??;
        // the memory the server holds once its load is over
        Ok((rep, series, reference))
    });
    let end_rss = watch::memory(&server.target.pids()).rss;
    let stopped = server.stop();
    let (rep, series, reference) = measured?;
    if plan.stopped() {
        return Err(Error::Interrupted);
    }
    let unclean = super::stop_verdict(stopped)?;
    let soaked = Soaked {
        calls: Calls::of_report(&rep)?,
        series,
        reference,
        reference_at,
        end_rss,
    };
    let out = rows(plan, cfg.cps, &soaked);
    Ok(super::stop_noted(out, unclean))
}

/// The server's RSS every second until `done` holds: the series and its
/// value at `reference_at`; `say` hears a line a minute.
fn watch_rss(
    server: &Server,
    reference_at: Duration,
    done: &dyn Fn() -> bool,
    say: &mut dyn FnMut(f64, u64),
) -> (Vec<u64>, Option<u64>) {
    let t0 = Instant::now();
    let mut series = Vec::new();
    let mut reference = None;
    let mut next = t0;
    let mut last_report = t0;
    while !done() {
        next += Duration::from_secs(1);
        if let Some(w) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(w);
        }
        let m = watch::memory(&server.target.pids());
        if reference.is_none() && t0.elapsed() >= reference_at {
            reference = Some(m.rss);
        }
        series.push(m.rss);
        if last_report.elapsed() >= Duration::from_secs(60) {
            last_report = Instant::now();
            say(t0.elapsed().as_secs_f64(), m.rss);
        }
    }
    (series, reference)
}

/// The soak over a fleet: one fleet trial as long as the soak at half
/// the capacity (an attempt void before any result, e.g. an agent that
/// fell silent, runs again), the server's RSS sampled here every second.
fn run_fleet(
    plan: &TorturePlan,
    fleet: &SharedFleet,
    capacity: f64,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<ResultRow>> {
    let d = plan.durations.soak;
    let rate = capacity / 2.0;
    let uas = fleet.lock().unwrap_or_else(|e| e.into_inner()).uas_addr();
    let server = Server::start(plan, uas, progress)?;
    let mut spec = base_spec(&plan.gen, d);
    spec.proxy = server.target.listen();
    spec.cps = rate;
    let reference_at = Duration::from_secs(60).min(d / 3);
    let measured = std::thread::scope(|s| -> Result<_> {
        let h = s.spawn(|| -> Result<FleetPoint> {
            let mut f = fleet.lock().unwrap_or_else(|e| e.into_inner());
            let mut void = Vec::new();
            loop {
                if plan.stopped() {
                    return Err(Error::Interrupted);
                }
                let rec = f.run_trial(&spec)?;
                if !rec.account.agents.is_empty() {
                    return Ok(FleetPoint::of(&rec, &void));
                }
                if void.len() + 1 >= MAX_ATTEMPTS {
                    return Err(Error::Fleet(format!(
                        "{MAX_ATTEMPTS} attempts at the soak were void: {}",
                        rec.void.unwrap_or_default()
                    )));
                }
                void.push(rec);
            }
        });
        let (series, reference) =
            watch_rss(&server, reference_at, &|| h.is_finished(), &mut |t, rss| {
                progress(Progress::Step(&format!(
                    "soak {t:.0} s over the fleet: RSS {:.1} MB",
                    rss as f64 / 1e6
                )))
            });
        let point = h
            .join()
            .map_err(|_| Error::Thread("the fleet's trial thread panicked".into()))??;
        Ok((point, series, reference))
    });
    let end_rss = watch::memory(&server.target.pids()).rss;
    let stopped = server.stop();
    let (point, series, reference) = measured?;
    if plan.stopped() {
        return Err(Error::Interrupted);
    }
    let unclean = super::stop_verdict(stopped)?;
    let soaked = Soaked {
        calls: Calls::of_fleet(&point),
        series,
        reference,
        reference_at,
        end_rss,
    };
    Ok(super::stop_noted(rows(plan, rate, &soaked), unclean))
}
