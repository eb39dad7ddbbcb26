//! `takt sip load`'s flags as a value, and the plan they resolve to: the
//! `--quick` preset, the cases (idle-latency limit × mode × worker model)
//! and the generator's executable.

use std::time::Duration;

use takt_sched::{CpuSet, SpinBudget, ThreadSpec};
use takt_sip::proxy::{Mode, Transport};
use takt_sip::transport::{WakeOrder, WorkerModel};

use super::{find_sipp, LoadCase, LoadGenerator, LoadPlan};
use crate::error::{Error, Result};

/// What `takt sip load` was asked for; [`LoadOptions::plan`] fills in
/// the defaults.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Proxy modes (empty: both).
    pub modes: Vec<Mode>,
    /// Worker models (empty: all three).
    pub models: Vec<WorkerModel>,
    /// Proxy worker threads.
    pub workers: usize,
    /// What places the calls.
    pub generator: LoadGenerator,
    /// Transport of every hop.
    pub transport: Transport,
    /// Calls per second.
    pub cps: u32,
    /// Calls per measured run (default 5,000; 1,000 with `quick`).
    pub calls: Option<u64>,
    /// Measured runs per configuration.
    pub runs: usize,
    /// Calls in the discarded warm-up run (default 1,000; 300 with
    /// `quick`; 0: none).
    pub warmup_calls: Option<u64>,
    /// The proxy's threads (CPU set, policy).
    pub spec: ThreadSpec,
    /// Receive buffer per proxy socket.
    pub rcvbuf: Option<usize>,
    /// How long workers poll before blocking.
    pub spin: SpinBudget,
    /// Wake order of the `shared` model (default: lifo).
    pub wake: Option<WakeOrder>,
    /// Idle-latency limits, each a case of its own (empty: the system's
    /// idle policy; `None` in the list: the same).
    pub idle_latency: Vec<Option<Duration>>,
    /// CPUs of the generator's UAC and UAS.
    pub sipp_cpus: Option<CpuSet>,
    /// The reduced run.
    pub quick: bool,
}

impl LoadOptions {
    /// The plan: every idle-latency limit × mode × worker model, the
    /// `quick` preset, SIPp found on `PATH` (for the SIPp generator).
    pub fn plan(self) -> Result<LoadPlan> {
        let sipp = match self.generator {
            LoadGenerator::Sipp => find_sipp().ok_or(Error::Missing {
                tool: "sipp",
                hint: "Debian package sip-tester; scripts/setup.sh installs it",
            })?,
            // not needed
            LoadGenerator::Takt => Default::default(),
        };
        let mut plan = LoadPlan::new(sipp);
        plan.generator = self.generator;
        plan.transport = self.transport;
        if self.quick {
            plan = plan.quick();
        }
        let modes = if self.modes.is_empty() {
            vec![Mode::Stateless, Mode::Stateful]
        } else {
            self.modes
        };
        let models = if self.models.is_empty() {
            vec![
                WorkerModel::Shared,
                WorkerModel::Reuseport,
                WorkerModel::Batched,
            ]
        } else {
            self.models
        };
        let idle = if self.idle_latency.is_empty() {
            vec![None]
        } else {
            self.idle_latency
        };
        plan.cases = Vec::new();
        for &idle_latency in &idle {
            for &mode in &modes {
                for &model in &models {
                    plan.cases.push(LoadCase {
                        mode,
                        model,
                        workers: self.workers,
                        idle_latency,
                    });
                }
            }
        }
        plan.sipp_cpus = self.sipp_cpus;
        plan.cps = self.cps;
        if let Some(c) = self.calls {
            plan.calls = c;
        }
        if let Some(w) = self.warmup_calls {
            plan.warmup_calls = w;
        }
        plan.runs = self.runs;
        plan.rcvbuf = self.rcvbuf;
        plan.spin = self.spin;
        if let Some(w) = self.wake {
            plan.wake = w;
        }
        plan.spec = self.spec;
        Ok(plan)
    }
}
