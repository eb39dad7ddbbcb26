//! The soak: half the capacity for a long time (30 minutes in a full run),
//! UAC and UAS in this process, retransmissions on. Measured: failed and
//! unfinished calls (target: none) and the server's resident memory at
//! the end against after the first minute (target: within 5%), sampled
//! every second.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Map};
use takt_measure::result::{Better, ResultRow};

use super::calls::{Calls, LiveCalls};
use super::{row, watch, Progress, Server, TorturePlan};
use crate::error::{Error, Result};
use crate::fleet::coordinator::MAX_ATTEMPTS;
use crate::gen::{GenReport, Role};

/// RSS growth allowed between the first minute and the end.
pub const RSS_GROWTH_TARGET: f64 = 0.05;

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
        m.calls.lost() as f64,
        m.calls.detail(),
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

/// Runs the soak (its calls from the local generator or the plan's
/// fleet: [`LiveCalls`]); returns its rows.
pub fn run(
    plan: &TorturePlan,
    capacity: f64,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<ResultRow>> {
    let d = plan.durations.soak;
    let rate = capacity / 2.0;
    // an attempt void before any result (an agent fell silent) runs again
    let mut calls = LiveCalls::new(plan, "soak", rate, d, MAX_ATTEMPTS)?;
    let server = Server::start(plan, calls.uas()?, progress)?;
    calls.set_target(&server.target)?;
    let live = calls.live();
    // the reference: after the first minute (or a third of a short soak)
    let reference_at = Duration::from_secs(60).min(d / 3);
    let measured = std::thread::scope(|s| -> Result<_> {
        let h = s.spawn(|| calls.run(plan));
        let (series, reference) =
            watch_rss(&server, reference_at, &|| h.is_finished(), &mut |t, rss| {
                let line = match &live {
                    Some(l) => format!(
                        "soak {t:.0} s: {} calls completed, {} failed, RSS {:.1} MB",
                        l.completed.load(Ordering::Relaxed),
                        l.failed.load(Ordering::Relaxed),
                        rss as f64 / 1e6
                    ),
                    None => format!(
                        "soak {t:.0} s over the fleet: RSS {:.1} MB",
                        rss as f64 / 1e6
                    ),
                };
                progress(Progress::Step(&line))
            });
        let calls = h
            .join()
            .map_err(|_| Error::Thread("the calls' thread panicked".into()))??;
        Ok((calls, series, reference))
    });
    // the memory the server holds once its load is over
    let end_rss = watch::memory(&server.target.pids()).rss;
    let stopped = server.stop();
    let (calls, series, reference) = measured?;
    if plan.stopped() {
        return Err(Error::Interrupted);
    }
    let unclean = super::stop_verdict(stopped)?;
    let soaked = Soaked {
        calls,
        series,
        reference,
        reference_at,
        end_rss,
    };
    Ok(super::stop_noted(rows(plan, rate, &soaked), unclean))
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
