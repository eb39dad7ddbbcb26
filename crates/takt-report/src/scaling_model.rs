//! "Beyond this machine": a scaling model fitted to the measured costs.
//!
//! The model, for a workload whose unit of work is an *item* (a process
//! step, a message):
//!
//! ```text
//! t(n) = w / n + s + δ · g(n) + ω · u
//! ```
//!
//! - `w`: per-item work that divides over `n` threads;
//! - `s`: per-item cost that does not (a barrier's single-thread part);
//! - `δ`: per-item cost of each extra thread, with its growth `g`:
//!   - SME, `g(n) = n − 1`: a central barrier takes one cache-line
//!     transfer (and wake-up) per arrival, on the critical path;
//!   - agents, `g(n) = c(n) / n`: the share `c(n)` of messages whose
//!     receiver runs on another thread, each adding `δ` to the work of busy
//!     threads, which divides over `n` like `w`; `c(2)` is counted in the
//!     2-thread run (`detail.crossed_fraction`) and grows like an even
//!     spread's `(n − 1)/n` beyond: `c(n) = min(1, c(2) · 2(n − 1)/n)`;
//! - `ω · u` (agents only): `u` wake-ups of a parked thread per message,
//!   each costing `ω` of wall time (nothing else runs on the woken
//!   thread's core while it comes back).
//!
//! `w + s` is the one-thread measurement of the workload itself; the costs
//! come from *other* rows of the same run, so the 2-thread prediction is a
//! genuine check against the 2-thread measurement of the workload.
//!
//! SME: `s` and `δ` are a least-squares line ([`fit_line`], δ ≥ 0) of the
//! barrier's cost per cycle against the thread count over every
//! `sync_cost` row.
//!
//! Agents: a crossing costs two different prices, and the benchmark rows
//! measure them apart. `ping_pong` bounces one ball: across two threads
//! every delivery finds its receiver waiting — spinning, or parked, and a
//! parked one costs a futex wake-up, on a VM whose idle vCPU halts tens of
//! µs through the hypervisor. `ping_pong_in_flight` keeps 100 balls
//! bouncing: across two threads each delivery is a queue hand-off between
//! two busy threads (a few cache-line transfers). Every row counts its
//! crossings (`detail.crossed_fraction`, `c`) and its wake-ups of parked
//! threads per message (`detail.wakeups_per_msg`, `u`). So ([`agent_costs`]):
//!
//! ```text
//! δ = (2·t₂ − t₁) / c₂             ping_pong_in_flight, 2 threads busy vs 1
//! ω = (t − t₀ − δ·c) / u           ping_pong, one ball, 2 threads vs 1
//! ```
//!
//! `δ` carries the few wake-ups the in-flight row had (its `u₂` is shown).
//! `ω` is the one-ball row's excess over a busy hand-off per wake-up it
//! counted — an upper bound, since a receiver that spun instead of parking
//! also makes the ball wait; with (almost) no wake-ups counted it is not
//! priced. (A line of `ping_pong`'s time against `c` alone would charge
//! every crossing of a busy ring the one-ball price.)
//!
//! The workload predicted is customer_ring (100 tokens in flight) on a
//! 2-thread pool: `w` is the one-thread ring of the same size; `c₂` and
//! `u` are counted in that 2-thread run — counts the pool's scheduling
//! decided, not times — so a work-stealing pool that keeps a token on the
//! worker that sent it pays few crossings, and the wake term is there
//! exactly when the run parked threads. Not in the model: contention on a
//! pool's *shared* run queue (thread_pool's one queue is touched by every
//! hop, by both threads), so it predicts that pool low, and the error
//! column shows by how much.
//!
//! Assumptions: every thread has its own core, the work fits in the
//! caches it had on one thread, memory bandwidth and NUMA distance do not
//! bind, crossings grow with `n` like an even spread's, the wake-ups per
//! message stay as counted at two threads, and the synchronization costs
//! measured here hold on the larger machine.

use serde_json::Value;
use takt_measure::result::{Document, ResultRow};

use crate::provenance::{param, param_f64};

/// How the per-thread cost grows with the thread count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Growth {
    /// `n − 1`: one more barrier arrival (cache-line transfer, wake-up) per
    /// thread.
    Linear,
    /// `c(n) / n`: the share `c(n)` of items that cross to another thread,
    /// each adding to work that divides over `n` busy threads; `c(2)` is
    /// `share2` and grows like an even spread's `(n − 1)/n`:
    /// `c(n) = min(1, share2 · 2(n − 1)/n)` (`share2 = 1/2`: an even spread).
    Crossing {
        /// The share of items that crossed on two threads.
        share2: f64,
    },
}

impl Growth {
    fn g(self, n: f64) -> f64 {
        match self {
            Growth::Linear => n - 1.0,
            Growth::Crossing { share2 } => (share2 * 2.0 * (n - 1.0) / n).min(1.0) / n,
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
    /// The wake-up term `ω · u` (on two threads and more), where the
    /// workload's runs parked threads and a row priced a wake-up.
    pub wake: Option<Wake>,
    /// The 2-thread measurement of the same workload, if the run has one.
    pub measured_2_threads: Option<f64>,
    /// Where `s` and `δ` come from.
    pub source: String,
}

impl Fit {
    /// The predicted time per item on `n` threads.
    pub fn predict(&self, n: f64) -> f64 {
        let w = (self.t1 - self.s).max(0.0);
        // one thread wakes no other
        let wake = match self.wake {
            Some(k) if n > 1.0 => k.cost * k.per_item,
            _ => 0.0,
        };
        w / n + self.s + self.delta * self.growth.g(n) + wake
    }

    /// Predicted speedup over one thread.
    pub fn speedup(&self, n: f64) -> f64 {
        self.t1 / self.predict(n)
    }

    /// Relative error of the 2-thread prediction (`+0.1`: predicted 10%
    /// slower than measured).
    pub fn error_at_2_threads(&self) -> Option<f64> {
        self.measured_2_threads.map(|m| self.predict(2.0) / m - 1.0)
    }
}

/// The wake-up term of a [`Fit`]: `u` wake-ups of a parked thread per
/// item (counted on two threads, assumed the same on more), each costing
/// `ω` of wall time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wake {
    /// `ω`: wall time of one wake-up, in the fit's time unit.
    pub cost: f64,
    /// `u`: wake-ups per item.
    pub per_item: f64,
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
        let Some(t1) = one.median() else {
            continue;
        };
        let Some(processes) = param_f64(one, "processes") else {
            continue;
        };
        // The barrier's cost per cycle against the thread count, over
        // every sync_cost row of this executor: b(n) = b1 + slope·(n − 1).
        let sync: Vec<(f64, f64)> = doc
            .results
            .iter()
            .filter(|r| r.name == "sync_cost" && param(r, "executor") == exec)
            .filter_map(|r| Some((param_f64(r, "threads")? - 1.0, r.median()?)))
            .collect();
        let Some((b1, slope)) = fit_line(&sync) else {
            continue;
        };
        // µs per cycle -> ns per process-step.
        let per_step = 1e3 / processes;
        let s = (b1 * per_step).clamp(0.0, t1);
        let delta = slope * per_step;
        let measured_2_threads = find(doc, |r| {
            r.name == one.name
                && r.unit == "ns/step"
                && param(r, "executor") == exec
                && param_f64(r, "threads") == Some(2.0)
                && r.params.get("processes") == one.params.get("processes")
                && r.params.get("cycles") == one.params.get("cycles")
        })
        .and_then(|r| r.median());
        fits.push(Fit {
            label: format!(
                "SME {} {}×{}, {exec}",
                one.name,
                param(one, "processes"),
                param(one, "cycles")
            ),
            unit: "ns/step".into(),
            t1,
            s,
            delta,
            growth: Growth::Linear,
            wake: None,
            measured_2_threads,
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

/// Wake-ups per message below this are no wake-ups: a row that counted
/// fewer cannot price one, and a workload that had fewer gets no term.
pub const MIN_WAKEUPS: f64 = 1e-3;

/// An in-flight row whose threads parked on more than this share of its
/// messages was not busy (a loaded host preempted one thread and the other
/// ran dry): its `δ` includes wake-ups, and the source says so.
pub const BUSY_WAKEUPS: f64 = 0.1;

/// The agents' crossing costs, solved from the ping_pong rows (module
/// docs).
#[derive(Clone, Debug, PartialEq)]
pub struct AgentCosts {
    /// `δ`: ns a crossing adds to the work of two busy threads.
    pub crossing: f64,
    /// `ω`: ns of wall time a wake-up of a parked thread costs; `None`
    /// when no row counted enough wake-ups to price one.
    pub wake: Option<f64>,
    /// Which rows, with their values.
    pub source: String,
}

fn detail_f64(r: &ResultRow, key: &str) -> Option<f64> {
    r.detail.get(key).and_then(Value::as_f64)
}

/// Solves `δ` and `ω` from `ping_pong`'s and `ping_pong_in_flight`'s
/// one-thread and thread-per-agent rows; `None` without all four (a
/// document from before `ping_pong_in_flight`, or a partial run) or
/// without a crossing in the in-flight row.
pub fn agent_costs(doc: &Document) -> Option<AgentCosts> {
    let row = |name: &str, placement: &str| {
        find(doc, |r| {
            r.implementation == "takt"
                && r.unit == "ns/msg"
                && r.name == name
                && param(r, "placement") == placement
        })
    };
    let one0 = row("ping_pong", "one_thread")?;
    let two0 = row("ping_pong", "thread_per_agent")?;
    let one1 = row("ping_pong_in_flight", "one_thread")?;
    let two1 = row("ping_pong_in_flight", "thread_per_agent")?;
    let (t0, t, c, u) = (
        one0.median()?,
        two0.median()?,
        detail_f64(two0, "crossed_fraction")?,
        detail_f64(two0, "wakeups_per_msg").unwrap_or(0.0),
    );
    let (t1, t2, c2, u2) = (
        one1.median()?,
        two1.median()?,
        detail_f64(two1, "crossed_fraction")?,
        detail_f64(two1, "wakeups_per_msg").unwrap_or(0.0),
    );
    if c2 <= 0.0 || ![t0, t, c, u, t1, t2, c2, u2].iter().all(|v| v.is_finite()) {
        return None;
    }
    let crossing = ((2.0 * t2 - t1) / c2).max(0.0);
    let wake = (u >= MIN_WAKEUPS).then(|| ((t - t0 - crossing * c) / u).max(0.0));
    let n = crate::html::num;
    let source = format!(
        "δ, a hand-off between busy threads: ping_pong_in_flight ({} balls) {} ns/msg on two threads \
         ({:.0}% crossed, {} wake-ups/msg) against {} on one{}; ω, a wake-up: ping_pong (one ball) {} ns/msg \
         on two threads ({:.0}% crossed, {} wake-ups/msg) against {} on one{}",
        one1.params
            .get("in_flight")
            .map_or("many".to_string(), Value::to_string),
        n(t2),
        c2 * 100.0,
        n(u2),
        n(t1),
        if u2 > BUSY_WAKEUPS {
            " — its threads were not kept busy (a wake-up on that share of messages: a loaded host \
             preempts one thread and the other runs dry), so δ includes wake-ups and is an upper bound"
        } else {
            ""
        },
        n(t),
        c * 100.0,
        n(u),
        n(t0),
        if wake.is_none() {
            " — too few wake-ups to price one"
        } else {
            ""
        }
    );
    Some(AgentCosts {
        crossing,
        wake,
        source,
    })
}

/// Agents: customer_ring on a 2-thread pool, fitted on customer_ring on
/// one thread (interpolated to the same ring size), the crossing and
/// wake-up costs of [`agent_costs`], and the wake-ups per message counted
/// in the 2-thread run.
pub fn fit_agents(doc: &Document) -> Vec<Fit> {
    let msg_row = |r: &ResultRow| {
        r.implementation == "takt" && r.unit == "ns/msg" && r.params.get("phase").is_none()
    };
    let Some(costs) = agent_costs(doc) else {
        return Vec::new();
    };
    let mut one: Vec<(f64, f64)> = doc
        .results
        .iter()
        .filter(|r| {
            msg_row(r) && r.name == "customer_ring" && param(r, "dispatcher") == "one_thread"
        })
        .filter(|r| param_f64(r, "tokens") == Some(100.0))
        .filter_map(|r| Some((param_f64(r, "agents")?, r.median()?)))
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
        let u = detail_f64(pool, "wakeups_per_msg");
        let counted = detail_f64(pool, "crossed_fraction").filter(|c| (0.0..=1.0).contains(c));
        let share2 = counted.unwrap_or(0.5);
        let wake = match (costs.wake, u) {
            (Some(cost), Some(u)) if u >= MIN_WAKEUPS => Some(Wake { cost, per_item: u }),
            _ => None,
        };
        let wake_text = match (costs.wake, u) {
            (_, None) => "u: not counted in this run (an older document)".to_string(),
            (_, Some(u)) if u < MIN_WAKEUPS => {
                format!("u: {} wake-ups/msg counted, no wake term", crate::html::num(u))
            }
            (Some(_), Some(u)) => {
                format!("u: {} wake-ups/msg counted in the 2-thread run", crate::html::num(u))
            }
            (None, Some(u)) => format!(
                "u: {} wake-ups/msg counted, but no row priced a wake-up: left out, so the prediction is low",
                crate::html::num(u)
            ),
        };
        fits.push(Fit {
            label: format!("agents customer_ring N={n}, {}", param(pool, "dispatcher")),
            unit: "ns/msg".into(),
            t1,
            s: 0.0,
            delta: costs.crossing,
            growth: Growth::Crossing { share2 },
            wake,
            measured_2_threads: pool.median(),
            source: format!(
                "w: customer_ring one_thread{}; {}; c₂: {}; {wake_text}",
                if exact {
                    ""
                } else {
                    " interpolated log–log in N"
                },
                costs.source,
                match counted {
                    Some(c) => format!("{:.1}% of messages crossed in the 2-thread run", c * 100.0),
                    None =>
                        "not counted in this run (an older document): an even spread, 50%, assumed"
                            .into(),
                }
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
        .filter(|r| r.name == "cpu_per_call" && r.median().is_some_and(|m| m > 0.0))
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
                .filter_map(|o| o.median())
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
                cpu_per_call_us: r.median().expect("filtered: a median"),
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
            wake: None,
            measured_2_threads: Some(60.0),
            source: String::new(),
        };
        assert_eq!(f.predict(1.0), 100.0);
        assert_eq!(f.predict(2.0), 45.0 + 10.0 + 5.0);
        assert!((f.error_at_2_threads().unwrap() - 0.0).abs() < 1e-12);
        // the barrier term eventually dominates: speedup peaks and falls
        assert!(f.speedup(4.0) > f.speedup(64.0));
        let c = Fit {
            growth: Growth::Crossing { share2: 0.5 },
            ..f.clone()
        };
        // an even spread: (n − 1)/n cross, the work divides over n
        assert_eq!(c.predict(2.0), 45.0 + 10.0 + 1.25);
        assert!((c.predict(4.0) - (22.5 + 10.0 + 5.0 * 0.75 / 4.0)).abs() < 1e-12);
        // a pool that crossed 10% on two threads: 15% on four
        let few = Fit {
            growth: Growth::Crossing { share2: 0.1 },
            ..f.clone()
        };
        assert!((few.predict(4.0) - (22.5 + 10.0 + 5.0 * 0.15 / 4.0)).abs() < 1e-12);
        let k = Fit {
            wake: Some(Wake {
                cost: 1000.0,
                per_item: 0.01,
            }),
            ..c
        };
        assert_eq!(k.predict(2.0), 45.0 + 10.0 + 1.25 + 10.0);
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

    fn counted(r: ResultRow, c: Option<f64>, u: f64) -> ResultRow {
        let mut d = serde_json::Map::new();
        if let Some(c) = c {
            d.insert("crossed_fraction".into(), c.into());
        }
        d.insert("wakeups_per_msg".into(), u.into());
        r.with_detail(d)
    }

    const T0: f64 = 6.0;
    const CROSSING: f64 = 150.0;
    const WAKE: f64 = 50_000.0;

    /// The rows the agents fit reads, made by the model from a known
    /// crossing cost and a known wake cost: ping_pong and
    /// ping_pong_in_flight on one thread and a thread per agent (the one
    /// ball's receiver parked on `one_ball_wakes` of the messages),
    /// customer_ring on one thread, and a thread_pool (half its messages
    /// crossed, a wake-up on 1% of them) beside a work_stealing pool
    /// (4% crossed, no wake-ups).
    fn agents_doc(one_ball_wakes: f64) -> Document {
        let mut b = DocumentBuilder::start("agents");
        for (name, placement, c, u, t) in [
            ("ping_pong", "one_thread", 0.0, 0.0, T0),
            (
                "ping_pong",
                "thread_per_agent",
                1.0,
                one_ball_wakes,
                T0 + CROSSING + WAKE * one_ball_wakes,
            ),
            // the pool kept both on one worker: barely crosses, and a
            // little faster than one thread (noise)
            ("ping_pong", "two_workers", 2e-5, 0.0, T0 - 1.0),
            ("ping_pong_in_flight", "one_thread", 1e-4, 0.0, T0),
            (
                "ping_pong_in_flight",
                "thread_per_agent",
                1.0,
                0.0,
                T0 / 2.0 + CROSSING / 2.0,
            ),
        ] {
            let p = takt_measure::params![("placement", placement), ("in_flight", 100)];
            b.push(counted(row(name, p, "ns/msg", t, 0.02), Some(c), u));
        }
        for (n, t) in [(1000, 6.0), (50_000, 80.0)] {
            let p =
                takt_measure::params![("dispatcher", "one_thread"), ("agents", n), ("tokens", 100)];
            b.push(row("customer_ring", p, "ns/msg", t, 0.02));
        }
        for (disp, c, u, t) in [
            ("thread_pool", 0.5, 0.01, 600.0),
            ("work_stealing", 0.04, 0.0, 30.0),
        ] {
            let p = takt_measure::params![("dispatcher", disp), ("agents", 10_000), ("threads", 2)];
            b.push(counted(
                row("customer_ring", p, "ns/msg", t, 0.02),
                Some(c),
                u,
            ));
        }
        b.finish()
    }

    /// The crossing cost comes from the busy rows and the wake cost from
    /// the one-ball row, each recovered; the wake term appears only in the
    /// pool that woke threads, the crossing term as often as each pool
    /// crossed, and the 2-thread prediction is the model's.
    #[test]
    fn agents_recover_a_known_crossing_and_wake_cost() {
        let doc = agents_doc(0.9);
        let costs = agent_costs(&doc).unwrap();
        assert!((costs.crossing / CROSSING - 1.0).abs() < 1e-9, "{costs:?}");
        assert!((costs.wake.unwrap() / WAKE - 1.0).abs() < 1e-9, "{costs:?}");
        let fits = fit_agents(&doc);
        assert_eq!(fits.len(), 2);
        let (pool, ws) = (&fits[0], &fits[1]);
        assert!(pool.label.contains("thread_pool") && ws.label.contains("work_stealing"));
        for f in &fits {
            assert!((f.predict(1.0) - f.t1).abs() < 1e-9);
            assert!(
                f.source.contains("ping_pong_in_flight (100 balls)"),
                "{}",
                f.source
            );
        }
        // two threads: w/2 + δ·c₂/2 (+ ω·u where the run parked)
        let wake = pool.wake.unwrap();
        assert!((wake.per_item - 0.01).abs() < 1e-12 && (wake.cost / WAKE - 1.0).abs() < 1e-9);
        let expect = pool.t1 / 2.0 + CROSSING * 0.5 / 2.0 + WAKE * 0.01;
        assert!((pool.predict(2.0) / expect - 1.0).abs() < 1e-9);
        assert_eq!(ws.wake, None, "no wake-ups, no wake term");
        let expect = ws.t1 / 2.0 + CROSSING * 0.04 / 2.0;
        assert!((ws.predict(2.0) / expect - 1.0).abs() < 1e-9);
        assert!((ws.error_at_2_threads().unwrap() - (expect / 30.0 - 1.0)).abs() < 1e-9);
        assert!(
            ws.source.contains("4.0% of messages crossed"),
            "{}",
            ws.source
        );
    }

    /// A one-ball receiver that spun instead of parking prices no wake-up
    /// (δ still comes from the busy rows), and a pool that did wake
    /// threads says its wake-ups were left out.
    #[test]
    fn without_parked_receivers_no_wake_cost_is_made_up() {
        let doc = agents_doc(0.0);
        let costs = agent_costs(&doc).unwrap();
        assert_eq!(costs.wake, None);
        assert!((costs.crossing / CROSSING - 1.0).abs() < 1e-9, "{costs:?}");
        let fits = fit_agents(&doc);
        assert!(fits.iter().all(|f| f.wake.is_none()));
        assert!(fits[0].source.contains("left out"), "{}", fits[0].source);
        assert!(
            costs.source.contains("too few wake-ups"),
            "{}",
            costs.source
        );
        assert!(!costs.source.contains("upper bound"), "{}", costs.source);
    }

    /// An in-flight row whose threads parked on most messages did not
    /// measure a busy hand-off: its δ is flagged as an upper bound.
    #[test]
    fn an_in_flight_row_that_ran_dry_is_flagged() {
        let mut doc = agents_doc(0.9);
        for r in &mut doc.results {
            if r.name == "ping_pong_in_flight" && param(r, "placement") == "thread_per_agent" {
                r.detail.insert("wakeups_per_msg".into(), 0.8.into());
            }
        }
        let costs = agent_costs(&doc).unwrap();
        assert!(costs.source.contains("not kept busy"), "{}", costs.source);
    }

    /// A document from before ping_pong_in_flight is not modelled: its
    /// one-ball rows alone would price every crossing as a wake-up.
    #[test]
    fn a_document_without_the_busy_rows_is_not_modelled() {
        let mut doc = agents_doc(0.9);
        doc.results.retain(|r| r.name != "ping_pong_in_flight");
        assert_eq!(agent_costs(&doc), None);
        assert!(fit_agents(&doc).is_empty());
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
