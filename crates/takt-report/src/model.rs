//! "Beyond this machine": a scaling model fitted to the measured costs.
//!
//! The model, for a workload whose unit of work is an *item* (a process
//! step, a message):
//!
//! ```text
//! t(n) = w / n + s + δ · g(n)
//! ```
//!
//! - `w`: per-item work that divides over `n` threads;
//! - `s`: per-item cost that does not (a barrier's single-thread part);
//! - `δ`: per-item cost of each extra thread: barrier arrivals and
//!   wake-ups (SME, `g(n) = n − 1`: a central barrier takes one cache-line
//!   transfer per arrival) or cross-thread hand-offs (agents,
//!   `g(n) = (n − 1) / n`: the share of messages whose receiver lives on
//!   another thread when agents are spread evenly).
//!
//! `w + s` is the one-thread measurement of the workload itself; `s` and
//! `δ` come from *other* rows of the same run (SME's `sync_cost`, agents'
//! `ping_pong`), so the 2-thread prediction is a genuine check against the
//! 2-thread measurement of the workload.
//!
//! Both are least-squares lines ([`fit_line`], the slope constrained to
//! δ ≥ 0): SME's barrier cost per cycle against the thread count over
//! every `sync_cost` row, and agents' time per message against the share
//! of messages that crossed threads (`detail.crossed_fraction`) over every
//! `ping_pong` placement — δ is then the cost of one crossing whose
//! receiver waits for it (one message in flight). (Fitted
//! from the difference of the `one_thread` and `two_workers` placements
//! alone, δ came out 0: the work-stealing pool keeps both agents of a
//! ping-pong on one worker, so that row crosses almost never and the
//! difference was noise, clamped at 0.) Assumptions: every thread has its
//! own core, the work fits in the caches it had on one thread, memory
//! bandwidth and NUMA distance do not bind, and the synchronization costs
//! measured here hold on the larger machine.

use serde_json::Value;
use takt_measure::result::{Document, ResultRow};

use crate::figures::{param, param_f64};

/// How the per-thread cost grows with the thread count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Growth {
    /// `n − 1`: one more barrier arrival (cache-line transfer, wake-up) per
    /// thread.
    Linear,
    /// `(n − 1) / n`: the share of items that cross to another thread.
    Crossing,
}

impl Growth {
    fn g(self, n: f64) -> f64 {
        match self {
            Growth::Linear => n - 1.0,
            Growth::Crossing => (n - 1.0) / n,
        }
    }
}

/// One fitted workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// Which workload (`sme compute_ring 200×20, static`).
    pub label: String,
    /// Unit of `t(n)` (`ns/step`, `ns/msg`).
    pub unit: String,
    /// Measured time per item on one thread (`w + s`).
    pub t1: f64,
    /// Non-dividing per-item cost.
    pub s: f64,
    /// Per-extra-thread per-item cost.
    pub delta: f64,
    /// Growth of the `δ` term.
    pub growth: Growth,
    /// The 2-thread measurement of the same workload, if the run has one.
    pub measured2: Option<f64>,
    /// Where `s` and `δ` come from.
    pub source: String,
}

impl Fit {
    /// The predicted time per item on `n` threads.
    pub fn predict(&self, n: f64) -> f64 {
        let w = (self.t1 - self.s).max(0.0);
        w / n + self.s + self.delta * self.growth.g(n)
    }

    /// Predicted speedup over one thread.
    pub fn speedup(&self, n: f64) -> f64 {
        self.t1 / self.predict(n)
    }

    /// Relative error of the 2-thread prediction (`+0.1`: predicted 10%
    /// slower than measured).
    pub fn error2(&self) -> Option<f64> {
        self.measured2.map(|m| self.predict(2.0) / m - 1.0)
    }
}

/// A least-squares line through `points`: `(intercept, slope)`, the slope
/// constrained to be ≥ 0 (then the intercept is the mean of the `y`s).
/// `None` with fewer than two distinct `x`s or a non-finite point.
pub fn fit_line(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    if points.iter().any(|(x, y)| !x.is_finite() || !y.is_finite()) {
        return None;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if points.len() < 2 || sxx <= f64::EPSILON * mx.abs().max(1.0) {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    if slope < 0.0 {
        Some((my, 0.0))
    } else {
        Some((my - slope * mx, slope))
    }
}

/// Thread counts the model predicts.
pub const PREDICT_AT: [u32; 6] = [2, 4, 8, 16, 32, 64];

fn find(doc: &Document, f: impl Fn(&ResultRow) -> bool) -> Option<&ResultRow> {
    doc.results.iter().find(|r| f(r))
}

/// SME: every (ring benchmark, shape, parallel executor) with a 1-thread
/// row, and `sync_cost` rows for that executor at 1 and 2 threads.
pub fn fit_sme(doc: &Document) -> Vec<Fit> {
    let mut fits = Vec::new();
    for one in doc.results.iter().filter(|r| {
        ["sync_ring", "compute_ring", "uneven"].contains(&r.name.as_str())
            && r.implementation == "takt"
            && r.unit == "ns/step"
            && param_f64(r, "threads") == Some(1.0)
            && param(r, "executor") != "sequential"
    }) {
        let exec = param(one, "executor");
        let Some(processes) = param_f64(one, "processes") else {
            continue;
        };
        // The barrier's cost per cycle against the thread count, over
        // every sync_cost row of this executor: b(n) = b1 + slope·(n − 1).
        let sync: Vec<(f64, f64)> = doc
            .results
            .iter()
            .filter(|r| r.name == "sync_cost" && param(r, "executor") == exec)
            .filter_map(|r| Some((param_f64(r, "threads")? - 1.0, r.summary.median)))
            .collect();
        let Some((b1, slope)) = fit_line(&sync) else {
            continue;
        };
        // µs per cycle -> ns per process-step.
        let per_step = 1e3 / processes;
        let s = (b1 * per_step).clamp(0.0, one.summary.median);
        let delta = slope * per_step;
        let measured2 = find(doc, |r| {
            r.name == one.name
                && r.unit == "ns/step"
                && param(r, "executor") == exec
                && param_f64(r, "threads") == Some(2.0)
                && r.params.get("processes") == one.params.get("processes")
                && r.params.get("cycles") == one.params.get("cycles")
        })
        .map(|r| r.summary.median);
        fits.push(Fit {
            label: format!(
                "SME {} {}×{}, {exec}",
                one.name,
                param(one, "processes"),
                param(one, "cycles")
            ),
            unit: "ns/step".into(),
            t1: one.summary.median,
            s,
            delta,
            growth: Growth::Linear,
            measured2,
            source: format!(
                "s, δ: sync_cost {exec}, a line over {} thread counts ({} µs/cycle at 1 thread, {} more per \
                 thread) over {processes} processes",
                sync.len(),
                crate::html::num(b1),
                crate::html::num(slope)
            ),
        });
    }
    fits
}

/// Log–log interpolation of `points` (sorted by x) at `x`; the nearest
/// end outside the range.
fn interpolate(points: &[(f64, f64)], x: f64) -> Option<f64> {
    let first = points.first()?;
    let last = points.last()?;
    if x <= first.0 {
        return Some(first.1);
    }
    if x >= last.0 {
        return Some(last.1);
    }
    let i = points.windows(2).position(|w| w[0].0 <= x && x <= w[1].0)?;
    let (a, b) = (points[i], points[i + 1]);
    let f = (x.ln() - a.0.ln()) / (b.0.ln() - a.0.ln());
    Some((a.1.ln() + f * (b.1.ln() - a.1.ln())).exp())
}

/// Agents: customer_ring on a 2-thread pool, fitted on customer_ring on
/// one thread (interpolated to the same ring size) and the cross-thread
/// hand-off of ping_pong between two busy workers.
pub fn fit_agents(doc: &Document) -> Vec<Fit> {
    let msg_row = |r: &ResultRow| {
        r.implementation == "takt" && r.unit == "ns/msg" && r.params.get("phase").is_none()
    };
    // Time per message against the share of messages that crossed
    // threads, over every placement: t(c) = t0 + δ·c.
    let crossing: Vec<(f64, f64)> = doc
        .results
        .iter()
        .filter(|r| msg_row(r) && r.name == "ping_pong")
        .filter_map(|r| {
            let c = r.detail.get("crossed_fraction").and_then(Value::as_f64)?;
            Some((c, r.summary.median))
        })
        .collect();
    let Some((t0, delta)) = fit_line(&crossing) else {
        return Vec::new();
    };
    let placements = crossing
        .iter()
        .map(|(c, t)| format!("{} ns/msg at {:.0}%", crate::html::num(*t), c * 100.0))
        .collect::<Vec<_>>()
        .join(", ");
    let mut one: Vec<(f64, f64)> = doc
        .results
        .iter()
        .filter(|r| {
            msg_row(r) && r.name == "customer_ring" && param(r, "dispatcher") == "one_thread"
        })
        .filter(|r| param_f64(r, "tokens") == Some(100.0))
        .filter_map(|r| Some((param_f64(r, "agents")?, r.summary.median)))
        .collect();
    one.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut fits = Vec::new();
    for pool in doc.results.iter().filter(|r| {
        msg_row(r)
            && r.name == "customer_ring"
            && ["thread_pool", "work_stealing"].contains(&param(r, "dispatcher").as_str())
            && param_f64(r, "threads") == Some(2.0)
    }) {
        let Some(n) = param_f64(pool, "agents") else {
            continue;
        };
        let Some(t1) = interpolate(&one, n) else {
            continue;
        };
        let exact = one.iter().any(|p| p.0 == n);
        fits.push(Fit {
            label: format!("agents customer_ring N={n}, {}", param(pool, "dispatcher")),
            unit: "ns/msg".into(),
            t1,
            s: 0.0,
            delta,
            growth: Growth::Crossing,
            measured2: Some(pool.summary.median),
            source: format!(
                "w: customer_ring one_thread{}; δ: the cost of a crossing message, a line through ping_pong's \
                 placements against the share of messages that crossed threads ({placements}; {} ns/msg at none)",
                if exact { "" } else { " interpolated log–log in N" },
                crate::html::num(t0)
            ),
        });
    }
    fits
}

/// SIP: the proxy's CPU per call and its lock contention give a capacity
/// model; sip load runs one worker count, so it is not checked here.
#[derive(Clone, Debug, PartialEq)]
pub struct SipFit {
    /// The case (`stateless shared ×2`).
    pub label: String,
    /// CPU time per call, µs (all of the proxy's threads).
    pub cpu_per_call_us: f64,
    /// Share of messages that found a lock taken: the serialized share.
    pub serial: f64,
}

impl SipFit {
    /// Predicted calls per second on `n` cores (Amdahl over the serialized
    /// share).
    pub fn capacity(&self, n: f64) -> f64 {
        let one = 1e6 / self.cpu_per_call_us;
        one / (self.serial + (1.0 - self.serial) / n)
    }
}

/// One [`SipFit`] per (mode, model, workers) case with a `cpu_per_call` row.
pub fn fit_sip(doc: &Document) -> Vec<SipFit> {
    doc.results
        .iter()
        .filter(|r| r.name == "cpu_per_call" && r.summary.median > 0.0)
        .map(|r| {
            let same_case = |o: &ResultRow| {
                ["mode", "model", "workers"]
                    .iter()
                    .all(|k| o.params.get(*k) == r.params.get(*k))
            };
            let contended: Vec<f64> = doc
                .results
                .iter()
                .filter(|o| o.name == "lock_contended" && same_case(o))
                .map(|o| o.summary.median)
                .collect();
            let serial = if contended.is_empty() {
                0.0
            } else {
                contended.iter().sum::<f64>() / contended.len() as f64
            };
            SipFit {
                label: format!(
                    "{} {} ×{}",
                    param(r, "mode"),
                    param(r, "model"),
                    r.params
                        .get("workers")
                        .map_or(String::new(), Value::to_string)
                ),
                cpu_per_call_us: r.summary.median,
                serial: serial.clamp(0.0, 1.0),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_exact_on_one_thread_and_grows_as_stated() {
        let f = Fit {
            label: "x".into(),
            unit: "ns/step".into(),
            t1: 100.0,
            s: 10.0,
            delta: 5.0,
            growth: Growth::Linear,
            measured2: Some(60.0),
            source: String::new(),
        };
        assert_eq!(f.predict(1.0), 100.0);
        assert_eq!(f.predict(2.0), 45.0 + 10.0 + 5.0);
        assert!((f.error2().unwrap() - 0.0).abs() < 1e-12);
        // the barrier term eventually dominates: speedup peaks and falls
        assert!(f.speedup(4.0) > f.speedup(64.0));
        let c = Fit {
            growth: Growth::Crossing,
            ..f
        };
        assert_eq!(c.predict(2.0), 45.0 + 10.0 + 2.5);
    }

    use takt_measure::result::{Better, DocumentBuilder};

    /// A row of five samples spread ±`noise` around `median`.
    fn row(
        name: &str,
        params: serde_json::Map<String, Value>,
        unit: &str,
        median: f64,
        noise: f64,
    ) -> ResultRow {
        let samples = [-1.0, -0.5, 0.0, 0.5, 1.0]
            .iter()
            .map(|k| median * (1.0 + k * noise))
            .collect();
        ResultRow::new(name, "takt", params, unit, Better::Lower, samples, 0.1)
    }

    fn crossed(r: ResultRow, c: f64) -> ResultRow {
        let mut d = serde_json::Map::new();
        d.insert("crossed_fraction".into(), c.into());
        r.with_detail(d)
    }

    #[test]
    fn a_line_is_recovered_and_a_falling_one_is_flat() {
        let pts: Vec<(f64, f64)> = (0..5).map(|i| (i as f64, 3.0 + 2.0 * i as f64)).collect();
        let (a, b) = fit_line(&pts).unwrap();
        assert!((a - 3.0).abs() < 1e-9 && (b - 2.0).abs() < 1e-9, "{a} {b}");
        assert_eq!(fit_line(&[(0.0, 5.0), (1.0, 3.0)]), Some((4.0, 0.0)));
        assert_eq!(fit_line(&[(1.0, 5.0), (1.0, 3.0)]), None, "one distinct x");
        assert_eq!(fit_line(&[(1.0, 5.0)]), None);
        assert_eq!(fit_line(&[(0.0, f64::NAN), (1.0, 3.0)]), None);
    }

    /// Synthetic agents rows made by the model with a known crossing cost:
    /// the fit finds it, though the two-worker placement barely crosses
    /// and measured a little faster than one thread (what made δ = 0).
    #[test]
    fn agents_recover_a_known_crossing_cost() {
        const T0: f64 = 30.0;
        const DELTA: f64 = 9_000.0;
        let mut b = DocumentBuilder::start("agents");
        for (placement, c, t) in [
            ("one_thread", 0.0, T0),
            ("two_workers", 2e-5, T0 - 2.0),
            ("thread_per_agent", 1.0, T0 + DELTA),
            ("spread", 0.5, T0 + 0.5 * DELTA),
        ] {
            let p = takt_measure::params![("placement", placement)];
            b.push(crossed(row("ping_pong", p, "ns/msg", t, 0.02), c));
        }
        for (n, t) in [(1000, 6.0), (50_000, 80.0)] {
            let p =
                takt_measure::params![("dispatcher", "one_thread"), ("agents", n), ("tokens", 100)];
            b.push(row("customer_ring", p, "ns/msg", t, 0.02));
        }
        let p = takt_measure::params![
            ("dispatcher", "thread_pool"),
            ("agents", 10_000),
            ("threads", 2)
        ];
        b.push(row("customer_ring", p, "ns/msg", 4_000.0, 0.02));
        let fits = fit_agents(&b.finish());
        assert_eq!(fits.len(), 1);
        let f = &fits[0];
        assert!((f.delta / DELTA - 1.0).abs() < 0.01, "δ = {}", f.delta);
        // one thread: exact; two: w/2 + δ/2
        assert!((f.predict(1.0) - f.t1).abs() < 1e-9);
        assert!((f.predict(2.0) - (f.t1 / 2.0 + f.delta / 2.0)).abs() < 1e-9);
        assert!(f.source.contains("at 100%"), "{}", f.source);
    }

    /// Synthetic SME rows: a barrier costing 2 µs per cycle plus 0.5 µs
    /// per extra thread over 1,000 processes gives s = 2 ns and δ = 0.5 ns
    /// per process-step.
    #[test]
    fn sme_recovers_a_known_barrier_cost() {
        let mut b = DocumentBuilder::start("sme");
        for n in [1u32, 2, 4] {
            let p = takt_measure::params![("executor", "static"), ("threads", n)];
            b.push(row(
                "sync_cost",
                p,
                "us/cycle",
                2.0 + 0.5 * f64::from(n - 1),
                0.0,
            ));
        }
        let p = takt_measure::params![
            ("executor", "static"),
            ("threads", 1),
            ("processes", 1000),
            ("cycles", 100)
        ];
        b.push(row("compute_ring", p, "ns/step", 50.0, 0.0));
        let fits = fit_sme(&b.finish());
        assert_eq!(fits.len(), 1);
        assert!((fits[0].s - 2.0).abs() < 1e-9, "{}", fits[0].s);
        assert!((fits[0].delta - 0.5).abs() < 1e-9, "{}", fits[0].delta);
    }

    #[test]
    fn interpolation_is_log_log_and_clamped() {
        let pts = [(1000.0, 10.0), (100_000.0, 1000.0)];
        assert!((interpolate(&pts, 10_000.0).unwrap() - 100.0).abs() < 1e-9);
        assert_eq!(interpolate(&pts, 10.0), Some(10.0));
        assert_eq!(interpolate(&pts, 1e9), Some(1000.0));
        assert_eq!(interpolate(&[], 1.0), None);
    }

    #[test]
    fn sip_capacity_follows_amdahl() {
        let f = SipFit {
            label: "x".into(),
            cpu_per_call_us: 100.0,
            serial: 0.5,
        };
        assert_eq!(f.capacity(1.0), 10_000.0);
        assert!((f.capacity(1e12) - 20_000.0).abs() < 1e-3);
    }
}
