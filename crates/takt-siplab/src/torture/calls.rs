//! A scenario's live calls — placed by the local generator or by a fleet
//! — and what is counted of them, in one shape for both.
//!
//! [`LiveCalls`] is the load: the local generator (UAC and UAS in this
//! process) or one fleet trial over the scenario's whole length, run on a
//! thread beside whatever the scenario does to the server. [`Calls`] is
//! what a row says of them, made from a generator's report or from a
//! fleet's merged account: calls placed, completed, failed by class,
//! unfinished; under a fleet, each agent's share in `fleet`.
//!
//! A fleet trial in which an agent was lost is void before any result:
//! the scenario fails with the reason (its calls were not counted), or,
//! where the scenario allows it (the soak), runs again. A trial in which
//! an agent was generator-bound counts, flagged, as the local
//! generator's does.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::TorturePlan;
use crate::error::{Error, Result};
use crate::fleet::coordinator::{TrialRecord, TrialSpec};
use crate::fleet::detail::points_detail;
use crate::fleet::load::base_spec;
use crate::fleet::merge::Account;
use crate::fleet::{FleetPoint, SharedFleet};
use crate::gen::{GenReport, Generator, Live, Role};
use crate::target::Target;

/// What a scenario's rows say of its live calls.
#[derive(Debug, Clone, Default)]
pub struct Calls {
    /// Calls placed.
    pub attempted: u64,
    /// Calls completed.
    pub completed: u64,
    /// Calls that failed (not counting the unfinished).
    pub failed: u64,
    /// Calls still in progress at the end of the drain.
    pub unfinished: u64,
    /// The failed calls by class (`503`, `rejected_other`, `timeout`,
    /// `bye_failed`, `no_slot`).
    pub failures: BTreeMap<String, u64>,
    /// Retransmissions sent, by kind (`None`: retransmissions off).
    pub retransmitted: Option<BTreeMap<String, u64>>,
    /// The generator (or an agent's) could not keep up.
    pub generator_bound: bool,
    /// Why.
    pub generator_reasons: Vec<String>,
    /// Seconds calls were placed.
    pub send_s: f64,
    /// Under a fleet: the trial, each agent's share and the void
    /// attempts before it.
    pub fleet: Option<FleetPoint>,
    /// Under a fleet that was asked for one ([`TrialSpec::series`]): the
    /// calls completed and failed per interval from the trial's start.
    pub series: Option<Series>,
    /// Under a fleet whose UAS had an outage: when it closed its socket
    /// and bound it again, s after the trial's start.
    pub uas_closed_s: Option<f64>,
    /// See `uas_closed_s`.
    pub uas_rebound_s: Option<f64>,
    /// The UAS's 200s never ACKed by Timer H (`None`: the local
    /// generator's report holds them itself).
    pub uas_ack_timeouts: Option<u64>,
    /// Under a fleet: the trial's planned start, ns since the Unix epoch
    /// on this host's clock (its series count from there).
    pub start_unix_ns: Option<u64>,
    /// Under a fleet: per message kind, sent by the UACs / received by
    /// the UAS (requests) and sent by the UAS / received by the UACs
    /// (responses), summed over the agents.
    pub kinds: BTreeMap<String, (u64, u64)>,
}

/// Calls completed and failed per interval, summed over a fleet's agents.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    /// The interval.
    pub every: Duration,
    /// Calls completed in each interval, in order.
    pub completed: Vec<u64>,
    /// Calls failed in each.
    pub failed: Vec<u64>,
}

impl Calls {
    /// The local generator's calls.
    pub fn of_report(rep: &GenReport) -> Result<Calls> {
        let u = rep
            .uac
            .as_ref()
            .ok_or_else(|| Error::Thread("the UAC did not report".into()))?;
        let names = |m: &BTreeMap<&'static str, u64>| {
            m.iter()
                .map(|(k, &n)| (k.to_string(), n))
                .collect::<BTreeMap<_, _>>()
        };
        Ok(Calls {
            attempted: u.attempted,
            completed: u.completed,
            failed: u.failed,
            unfinished: u.unfinished,
            failures: names(&u.failures),
            retransmitted: rep.retransmit.then(|| names(&u.retransmitted)),
            generator_bound: rep.saturation.generator_bound,
            generator_reasons: rep.saturation.reasons.clone(),
            send_s: rep.send_s,
            ..Calls::default()
        })
    }

    /// A fleet trial's calls (its settings `spec`; `p`: its point,
    /// `a`: its merged account), its agents in `fleet`.
    pub fn of_fleet(p: FleetPoint, a: &Account, spec: &TrialSpec) -> Calls {
        let (window, retransmit) = (spec.window, spec.retransmit);
        Calls {
            series: spec.series.map(|every| Series {
                every,
                completed: a.completed_series.clone(),
                failed: a.failed_series.clone(),
            }),
            uas_closed_s: a.uas_closed_s,
            uas_rebound_s: a.uas_rebound_s,
            uas_ack_timeouts: Some(a.uas_ack_timeouts),
            kinds: a.kinds.clone(),
            attempted: p.agents.iter().map(|a| a.attempted).sum(),
            completed: p.completed,
            failed: p.failed.saturating_sub(p.unfinished),
            unfinished: p.unfinished,
            failures: p.failures.clone(),
            retransmitted: retransmit.then(BTreeMap::new),
            generator_bound: p.generator_bound,
            generator_reasons: a.bound_reasons.clone(),
            send_s: window.as_secs_f64(),
            fleet: Some(p),
            start_unix_ns: None,
        }
    }

    /// Calls failed or left unfinished: what the rows count.
    pub fn lost(&self) -> u64 {
        self.failed + self.unfinished
    }

    /// The rows' detail: `attempted`, `completed`, `failures`,
    /// `unfinished`, `retransmissions`, the generator's verdict and,
    /// under a fleet, `fleet` (its trial as a one-element list, as every
    /// fleet row's detail holds its trials).
    pub fn detail(&self) -> Map<String, Value> {
        let mut det = Map::new();
        det.insert("attempted".into(), json!(self.attempted));
        det.insert("completed".into(), json!(self.completed));
        det.insert("failures".into(), json!(self.failures));
        det.insert("unfinished".into(), json!(self.unfinished));
        det.insert(
            "retransmissions".into(),
            json!(self.retransmitted.is_some()),
        );
        if let Some(r) = self.retransmitted.as_ref().filter(|r| !r.is_empty()) {
            det.insert("retransmitted".into(), json!(r));
        }
        det.insert("generator_bound".into(), json!(self.generator_bound));
        det.insert("generator_reasons".into(), json!(self.generator_reasons));
        if let Some(v) = points_detail([self.fleet.as_ref()]) {
            det.insert("fleet".into(), v);
        }
        det
    }
}

/// Where a scenario's live calls come from.
#[derive(Debug)]
enum Source {
    /// The local generator, bound.
    Local(Box<Generator>),
    /// A fleet trial: its settings, and how many attempts a void one
    /// gets.
    Fleet {
        fleet: SharedFleet,
        spec: Box<TrialSpec>,
        attempts: usize,
    },
}

/// A scenario's live calls, to be run on a thread beside the scenario.
#[derive(Debug)]
pub struct LiveCalls {
    source: Source,
    /// What the scenario is called in errors.
    what: &'static str,
}

impl LiveCalls {
    /// Calls at `rate` for `length`: the local generator's, both sides in
    /// this process with the UAS on the plan's address, or, under the
    /// plan's fleet, one fleet trial (a void one run again up to
    /// `attempts` times in all). `what` names the scenario in errors.
    pub fn new(
        plan: &TorturePlan,
        what: &'static str,
        rate: f64,
        length: Duration,
        attempts: usize,
    ) -> Result<LiveCalls> {
        let source = match &plan.fleet {
            Some(f) => {
                let mut spec = base_spec(&plan.gen, length);
                spec.cps = rate;
                Source::Fleet {
                    fleet: Arc::clone(f),
                    spec: Box::new(spec),
                    attempts: attempts.max(1),
                }
            }
            None => {
                let mut cfg = plan.gen_cfg(Role::Both, plan.uas_listen, rate);
                cfg.uas_listen = plan.uas_listen;
                cfg.duration = Some(length);
                Source::Local(Box::new(Generator::bind(&cfg)?))
            }
        };
        Ok(LiveCalls { source, what })
    }

    /// Where the calls' UAS listens (the server forwards there).
    pub fn uas(&self) -> Result<SocketAddr> {
        match &self.source {
            Source::Local(g) => g
                .uas_addr()
                .ok_or_else(|| Error::Thread("the UAS has no address".into())),
            Source::Fleet { fleet, .. } => {
                Ok(fleet.lock().unwrap_or_else(|e| e.into_inner()).uas_addr())
            }
        }
    }

    /// Points the calls at the started server.
    pub fn set_target(&mut self, target: &Target) -> Result<()> {
        match &mut self.source {
            Source::Local(g) => g.set_proxy(target.listen()),
            Source::Fleet { spec, .. } => {
                spec.proxy = target.listen();
                spec.stateful = target.stateful();
                Ok(())
            }
        }
    }

    /// The fleet trial's settings, to adjust (`None`: the local
    /// generator's calls).
    pub fn fleet_spec(&mut self) -> Option<&mut TrialSpec> {
        match &mut self.source {
            Source::Fleet { spec, .. } => Some(spec.as_mut()),
            Source::Local(_) => None,
        }
    }

    /// The local generator's running counters (`None` under a fleet).
    pub fn live(&self) -> Option<Arc<Live>> {
        match &self.source {
            Source::Local(g) => Some(g.live()),
            Source::Fleet { .. } => None,
        }
    }

    /// Whether the calls are a fleet's (they start at its planned
    /// instant, [`crate::fleet::coordinator::LEAD`] after the trial is
    /// ordered).
    pub fn on_fleet(&self) -> bool {
        matches!(self.source, Source::Fleet { .. })
    }

    /// Places the calls; returns when they are over.
    pub fn run(self, plan: &TorturePlan) -> Result<Calls> {
        let what = self.what;
        match self.source {
            Source::Local(g) => Calls::of_report(&g.run(&plan.cancel)?),
            Source::Fleet {
                fleet,
                spec,
                attempts,
            } => {
                let mut f = fleet.lock().unwrap_or_else(|e| e.into_inner());
                let mut void: Vec<TrialRecord> = Vec::new();
                loop {
                    if plan.stopped() {
                        return Err(Error::Interrupted);
                    }
                    let rec = f.run_trial(&spec)?;
                    if !rec.account.agents.is_empty() {
                        let p = FleetPoint::of(&rec, &void);
                        let mut calls = Calls::of_fleet(p, &rec.account, &spec);
                        calls.start_unix_ns = Some(rec.start_unix_ns);
                        return Ok(calls);
                    }
                    if void.len() + 1 >= attempts {
                        return Err(Error::Fleet(format!(
                            "{what}: the fleet's trial {} was void ({}): its calls were not counted",
                            rec.trial,
                            rec.void.unwrap_or_default()
                        )));
                    }
                    void.push(rec);
                }
            }
        }
    }
}
