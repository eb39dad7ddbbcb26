//! One capacity trial: a [`Load`] against a [`Target`], with the server's
//! counters sampled around it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
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
            generator_causes: load.generator_causes,
        })
    }
}
