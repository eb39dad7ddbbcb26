//! One capacity trial: a [`Load`] against a [`Target`], with the server's
//! counters sampled around it.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::fleet::FleetPoint;
use crate::gen::SaturationCauses;
use crate::search::{Trial, TrialOutcome};
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
    /// Which of the generator's criteria fired (empty when it kept up).
    pub generator_causes: SaturationCauses,
}

/// A load generator, as the capacity search needs it.
pub trait Load {
    /// Where its UAS receives (the target forwards requests there; the
    /// address stays the same for every trial).
    fn uas(&self) -> SocketAddr;

    /// The calls' Request-URI (default: `sip:service@UAS`).
    fn request_uri(&self) -> String {
        format!("sip:service@{}", self.uas())
    }

    /// The Route preloaded into calls to `target`, if any.
    fn route(&self, _target: SocketAddr) -> Option<String> {
        None
    }

    /// The line a command prints for a target at `target` before its
    /// trials: `uas=IP:PORT request_uri=… [route=…] target=IP:PORT`.
    fn uas_line(&self, target: SocketAddr) -> String {
        let mut l = format!("uas={} request_uri={}", self.uas(), self.request_uri());
        if let Some(r) = self.route(target) {
            l.push_str(&format!(" route={r}"));
        }
        l.push_str(&format!(" target={target}"));
        l
    }

    /// Offers calls at `rate_cps` to `target.listen()` (whose server
    /// forwards to `target.uas()`): warm-up, measured window and bounded
    /// drain, and reports what happened.
    fn run(&mut self, target: &Target, rate_cps: f64) -> Result<LoadOutcome>;

    /// A fleet's account of the last [`Load::run`] (its agents' shares
    /// and the void attempts before it), taken once; `None` for a load
    /// that is no fleet.
    fn fleet_point(&mut self) -> Option<FleetPoint> {
        None
    }
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
    /// takt's per-kind T_sip and K_rcv over the trial (from `/stats`
    /// before and after it), by kind name (`invite`, `ack`, …).
    pub takt_kinds: Option<BTreeMap<String, KindWindow>>,
    /// Why takt's statistics could not be read around this trial (the
    /// point then has no per-kind figures).
    pub stats_error: Option<String>,
    /// The fleet's account of the trial (`None`: the local generator).
    pub fleet: Option<FleetPoint>,
}

/// One message kind at takt over one trial: its count and the means of
/// T_sip and K_rcv over the trial's messages alone. The endpoint's
/// distributions are cumulative, so percentiles cannot be taken apart;
/// count × mean can.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct KindWindow {
    /// Messages of the kind handled in the trial.
    pub count: u64,
    /// Mean T_sip, ns (`None`: no sample in the trial).
    pub t_sip_mean_ns: Option<f64>,
    /// Mean K_rcv, ns (`None`: no message with a kernel timestamp).
    pub k_rcv_mean_ns: Option<f64>,
}

impl KindWindow {
    /// The per-kind windows between two `/stats` snapshots (kinds missing
    /// before count from zero; kinds without a message in the window are
    /// left out). `None` if `after` has no `kinds` object.
    pub fn between(before: &Value, after: &Value) -> Option<BTreeMap<String, KindWindow>> {
        let after = after.get("kinds")?.as_object()?;
        let num = |v: Option<&Value>, path: &[&str]| -> f64 {
            let mut v = v;
            for p in path {
                v = v.and_then(|x| x.get(*p));
            }
            v.and_then(Value::as_f64).unwrap_or(0.0)
        };
        // mean over the window from two (count, mean) pairs
        let mean = |b: Option<&Value>, a: &Value, dist: &str| {
            let (nb, mb) = (num(b, &[dist, "count"]), num(b, &[dist, "mean"]));
            let (na, ma) = (
                num(Some(a), &[dist, "count"]),
                num(Some(a), &[dist, "mean"]),
            );
            (na > nb).then(|| ((na * ma - nb * mb) / (na - nb)).max(0.0))
        };
        let mut out = BTreeMap::new();
        for (kind, a) in after {
            let b = before.get("kinds").and_then(|k| k.get(kind));
            let count = |v: Option<&Value>| {
                v.and_then(|v| v.get("count"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            };
            let n = count(Some(a)).saturating_sub(count(b));
            if n == 0 {
                continue;
            }
            out.insert(
                kind.clone(),
                KindWindow {
                    count: n,
                    t_sip_mean_ns: mean(b, a, "t_sip"),
                    k_rcv_mean_ns: mean(b, a, "k_rcv"),
                },
            );
        }
        Some(out)
    }
}

/// A [`Trial`] of a [`Load`] against a [`Target`] (see the module docs).
#[derive(Debug)]
pub struct TargetTrial<L> {
    target: Target,
    load: L,
    points: Vec<PointDetail>,
    stop: Option<Arc<AtomicBool>>,
    pause_between: bool,
}

impl<L: Load> TargetTrial<L> {
    /// Wraps a started target and a load.
    pub fn new(target: Target, load: L) -> Self {
        TargetTrial {
            target,
            load,
            points: Vec::new(),
            stop: None,
            pause_between: false,
        }
    }

    /// Refuses further trials ([`Error::Interrupted`]) once `stop` is set.
    pub fn with_stop(mut self, stop: Arc<AtomicBool>) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Keeps the server paused ([`Target::pause`]) between its trials, so
    /// that while other targets take their turns it uses no CPU.
    pub fn pausing(mut self) -> Self {
        self.pause_between = true;
        self.target.pause();
        self
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

    /// Stops the target; returns the trial details and how the stop went
    /// (no process of the target is left either way).
    pub fn finish(self) -> (Vec<PointDetail>, Result<()>) {
        let stopped = self.target.stop();
        (self.points, stopped)
    }
}

impl<L: Load> Trial for TargetTrial<L> {
    type Error = crate::Error;

    fn trial(&mut self, rate_cps: f64) -> Result<TrialOutcome> {
        // Acquire pairs with the Release store of whoever interrupts.
        if self
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Acquire))
        {
            return Err(Error::Interrupted);
        }
        self.target.resume();
        let measured = self.measure(rate_cps);
        if self.pause_between {
            self.target.pause();
        }
        measured
    }
}

impl<L: Load> TargetTrial<L> {
    fn measure(&mut self, rate_cps: f64) -> Result<TrialOutcome> {
        self.target.check_alive()?;
        // takt's statistics are a per-point extra: a read that fails (a
        // starved endpoint thread on a busy host) leaves the point without
        // them and says why, and does not end the search
        let mut stats_error = None;
        let mut stats = |t: &Target| match t.takt_stats() {
            Some(Ok(v)) => Some(v),
            Some(Err(e)) => {
                stats_error = Some(e.to_string());
                None
            }
            None => None,
        };
        let stats_before = stats(&self.target);
        let before = self.target.sample()?;
        let mut load = self.load.run(&self.target, rate_cps)?;
        let fleet = self.load.fleet_point();
        let after = self.target.sample()?;
        self.target.check_alive()?;
        let server = ServerWindow::between(&before, &after);
        // every datagram the kernel dropped at the server's socket is a
        // message lost, whatever the load's account excused
        load.lost = load.lost.max(server.socket_drops);
        let shm = self.target.shm().transpose()?;
        let stats_after = stats(&self.target);
        let takt_kinds = match (stats_before, stats_after) {
            (Some(b), Some(a)) => KindWindow::between(&b, &a),
            _ => None,
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
            stats_error,
            fleet,
        });
        Ok(TrialOutcome {
            offered_cps: rate_cps,
            achieved_cps: load.achieved_cps,
            sent: load.sent_to_server,
            lost: load.lost,
            failed_calls: load.failed_calls,
            generator_bound: load.generator_bound,
            generator_causes: load.generator_causes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kind_windows_take_the_trial_apart_from_the_total() {
        let before = json!({"kinds": {
            "invite": {"count": 100, "t_sip": {"count": 100, "mean": 1000.0},
                       "k_rcv": {"count": 100, "mean": 5000.0}},
            "bye": {"count": 7, "t_sip": {"count": 7, "mean": 900.0}}
        }});
        let after = json!({"kinds": {
            "invite": {"count": 300, "t_sip": {"count": 300, "mean": 2000.0},
                       "k_rcv": {"count": 300, "mean": 5000.0}},
            "bye": {"count": 7, "t_sip": {"count": 7, "mean": 900.0}},
            "ack": {"count": 50, "t_sip": {"count": 50, "mean": 700.0}}
        }});
        let w = KindWindow::between(&before, &after).unwrap();
        // (300 × 2000 − 100 × 1000) ÷ 200 = 2500
        assert_eq!(w["invite"].count, 200);
        assert_eq!(w["invite"].t_sip_mean_ns, Some(2500.0));
        assert_eq!(w["invite"].k_rcv_mean_ns, Some(5000.0));
        assert!(!w.contains_key("bye"), "no bye in the window");
        assert_eq!(w["ack"].t_sip_mean_ns, Some(700.0));
        assert_eq!(w["ack"].k_rcv_mean_ns, None);
        assert!(KindWindow::between(&before, &json!({})).is_none());
    }
}
