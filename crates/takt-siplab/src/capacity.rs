//! One capacity trial against a running target, and the result rows of a
//! finished search — the parts of `takt sip capacity` that do not depend
//! on which load generator drives the calls.
//!
//! A [`TargetTrial`] wraps a [`Target`] and a [`Load`] (anything that can
//! offer calls at a rate to an address and count what came back): around
//! each run of the load it samples the server's `/proc` counters, and after
//! it reads takt's statistics or Kamailio's shared memory, so that every
//! point carries the server's side of the books ([`PointDetail`]). It is a
//! [`Trial`] for the [`crate::search`].
//!
//! The drop rate that decides capacity is the paper's: messages lost at the
//! server ÷ messages sent to it, as the load counts them end to end (sent
//! by one side, never received by the other, after a bounded drain). The
//! server's socket drops and its namespace's `RcvbufErrors` are reported
//! beside it for each point.

use serde::Serialize;
use serde_json::{json, Map, Value};
use takt_measure::result::{Better, ResultRow};

use crate::error::Result;
use crate::search::{Capacity, Phase, SearchResult, Trial, TrialOutcome};
use crate::server_stats::ServerWindow;
use crate::target::{ShmUsage, Target};

/// What one run of the load at a rate measured (end to end).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LoadOutcome {
    /// The rate the load achieved, calls/s.
    pub achieved_cps: f64,
    /// Messages the load's two sides sent to the server.
    pub sent_to_server: u64,
    /// Of those, messages the other side never received.
    pub lost: u64,
    /// Calls completed.
    pub completed_calls: u64,
    /// Calls failed (error response, timeout).
    pub failed_calls: u64,
    /// The load could not keep up (see the generator's criteria).
    pub generator_bound: bool,
}

/// A load generator, as the capacity search needs it.
pub trait Load {
    /// Offers calls at `rate_cps` to `target.listen()` (whose server
    /// forwards to `target.uas()`): warm-up, measured window and bounded
    /// drain, and reports what happened.
    fn run(&mut self, target: &Target, rate_cps: f64) -> Result<LoadOutcome>;
}

/// The server's side of one trial.
#[derive(Debug, Clone, Serialize)]
pub struct PointDetail {
    /// The rate asked for.
    pub rate_cps: f64,
    /// What the load measured.
    pub load: LoadOutcome,
    /// The server over the trial (drops, CPU, threads).
    pub server: ServerWindow,
    /// Server CPU time per completed call, µs (run time of its threads).
    pub cpu_per_call_us: Option<f64>,
    /// Kamailio's shared memory after the trial.
    pub shm: Option<ShmUsage>,
    /// takt's `/stats` per-kind T_sip and K_rcv after the trial
    /// (cumulative since the target started).
    pub takt_kinds: Option<Value>,
}

/// A [`Trial`] of a [`Load`] against a [`Target`] (see the module docs).
#[derive(Debug)]
pub struct TargetTrial<L> {
    target: Target,
    load: L,
    points: Vec<PointDetail>,
}

impl<L: Load> TargetTrial<L> {
    /// Wraps a started target and a load.
    pub fn new(target: Target, load: L) -> Self {
        TargetTrial {
            target,
            load,
            points: Vec::new(),
        }
    }

    /// The target.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Every trial's server-side detail, in the order run (index `i` is
    /// the search's trial `i`).
    pub fn points(&self) -> &[PointDetail] {
        &self.points
    }

    /// Stops the target; returns the trial details.
    pub fn finish(self) -> Result<Vec<PointDetail>> {
        self.target.stop()?;
        Ok(self.points)
    }
}

impl<L: Load> Trial for TargetTrial<L> {
    type Error = crate::Error;

    fn trial(&mut self, rate_cps: f64) -> Result<TrialOutcome> {
        self.target.check_alive()?;
        let before = self.target.sample()?;
        let load = self.load.run(&self.target, rate_cps)?;
        let after = self.target.sample()?;
        self.target.check_alive()?;
        let server = ServerWindow::between(&before, &after);
        let shm = self.target.shm().transpose()?;
        let takt_kinds = match self.target.takt_stats() {
            Some(s) => s?.get("kinds").cloned(),
            None => None,
        };
        let cpu_per_call_us = (load.completed_calls > 0 && !server.threads.is_empty())
            .then(|| server.run_s * 1e6 / load.completed_calls as f64);
        self.points.push(PointDetail {
            rate_cps,
            load,
            server,
            cpu_per_call_us,
            shm,
            takt_kinds,
        });
        Ok(TrialOutcome {
            offered_cps: rate_cps,
            achieved_cps: load.achieved_cps,
            sent: load.sent_to_server,
            lost: load.lost,
            failed_calls: load.failed_calls,
            generator_bound: load.generator_bound,
        })
    }
}

/// The result rows of one target's finished search: `capacity` (cps;
/// `median` = the capacity or its bound, `min`/`max` = the capacity and the
/// first failing grid rate, the grid with its intervals in `detail`),
/// `cpu_per_call` (µs at the capacity's grid rate, one sample per grid
/// repetition) and one `drop_rate` row per grid point. `params` name the
/// target's setting (`mode`, `workers`, `model`, `sched`, `net`).
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
        d.insert("grid".into(), json!(result.grid));
        if let Some(f) = shm_peak {
            d.insert("shm_peak_fraction".into(), json!(f));
        }
        out.push(row.with_detail(d));

        // CPU per call at the capacity's grid rate
        let at: Vec<f64> = result
            .trials
            .iter()
            .zip(points)
            .filter(|(t, _)| t.phase == Phase::Grid && t.rate_cps == cps)
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
            .filter(|(t, _)| t.phase == Phase::Grid && t.rate_cps == g.rate_cps)
            .map(|(_, p)| p.server.socket_drops)
            .sum();
        d.insert("server_socket_drops".into(), json!(socket_drops));
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::{run, Search, SearchConfig};
    use crate::server_stats::ServerSample;
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
                    shm: None,
                    takt_kinds: None,
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
        let cpu = &rows[1];
        assert_eq!(cpu.name, "cpu_per_call");
        assert_eq!(cpu.params["rate_cps"], json!(c));
        assert_eq!(cpu.samples.len(), 5);
        assert!((cpu.summary.median - c / 100.0).abs() < 1e-9);
        let drops: Vec<_> = rows.iter().filter(|r| r.name == "drop_rate").collect();
        assert_eq!(drops.len(), r.grid.len());
        assert!(drops.iter().all(|d| d.params["mode"] == json!("stateless")));
    }
}
