//! `takt sip torture`: a SIP server under overload and faults, measured
//! the same way whatever the server is (takt-sip, Kamailio, OpenSIPS, any
//! address).
//!
//! Scenarios ([`Scenario`]), each against a server started fresh:
//! - **overload** ([`overload`]): the server's 1%-drop capacity first (the
//!   capacity search's short trials, then [`sustained`]: trials as long as
//!   an overload level, stepping down until one passes; or `--capacity`),
//!   then 2× and 1.5× the sustained rate for a while, then half of it:
//!   goodput against that capacity, losses of ACK and BYE against refused
//!   INVITEs, peak memory, and the seconds until the server loses nothing
//!   once the load is back to half its capacity.
//! - **uas-restart** ([`uas_restart`]): the UAS, a separate
//!   `takt sip gen --role uas` process, killed and restarted during a run:
//!   calls failed during the outage by how they failed (503 or 408 from
//!   the proxy, or no answer), and how soon new calls complete again.
//! - **garbage** ([`garbage`]): bursts of garbage datagrams and malformed
//!   requests, one class per source port, during live calls: what the
//!   server answered to each class, what it counted, and whether the live
//!   calls noticed.
//! - **soak** ([`soak`]; not in the default set): half the capacity for
//!   30 minutes: failed calls, and resident memory at the end against
//!   after the first minute.
//! - **conn-flood** ([`conn_flood`]; not in the default set): 10,000 idle
//!   TCP connections, then 1,000 half-open ones, held while UDP calls go
//!   on and fresh TCP clients probe: the server's memory and the
//!   kernel's, new-client latency, connections lost, failed calls.
//!
//! With a fleet of agents ([`crate::fleet`]) instead of the local
//! generator, the capacity search, the sustained check and the soak run
//! their trials on the fleet (each trial's agents in the rows' detail as
//! `fleet`), and every scenario's calls come from the fleet
//! ([`calls::LiveCalls`]: one fleet trial over the scenario) while what
//! it does to the server stays on this host: garbage's datagrams,
//! conn-flood's connections, the server's sampling. uas-restart's outage
//! is the fleet's UAS agent's socket closed and bound again (not its
//! process killed); overload's two streams are every UAC agent's, their
//! completions counted per 200 ms by the agents and summed by interval.
//!
//! Where the generator cannot offer twice a server's capacity (on a small
//! machine, a fast proxy outruns it), the server's CPU is limited with CFS
//! bandwidth control ([`cgroup`]) and its capacity is measured under the
//! same limit: the scenarios then hold at any speed of server.
//!
//! The result document has one row per scenario and metric (`params`
//! name the target, `mode`, `workers`, `model`, `cpu_limit`, the
//! `scenario` and its setting); `capacity` is the search's answer and
//! `capacity_sustained` the long trials' (each trial in its detail); a
//! Ctrl-C ends the current scenario early and keeps the rows of the
//! finished ones.

pub use crate::cpu_limit as cgroup;
pub mod calls;
pub mod conn_flood;
pub mod garbage;
pub mod overload;
pub mod soak;
mod suite;
pub mod uas_restart;
pub mod watch;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Map, Value};
use takt_measure::result::{Better, Document, DocumentBuilder, ResultRow};
use takt_sip::proxy::Mode;

use crate::capacity::{GenLoad, TargetTrial};
use crate::error::{Error, Result};
use crate::fleet::detail::points_detail;
use crate::fleet::{AnyLoad, FleetPoint, SharedFleet};
use crate::gen::{Cancel, GenConfig, SaturationCauses};
use crate::search::{self, Capacity, Search, SearchConfig, TrialOutcome};
use crate::target::{Target, TargetKind, TargetSetup};
use cgroup::CpuLimit;

pub use suite::{TortureOptions, TortureSuite};

/// One torture scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// 2× and 1.5× the capacity, then half of it.
    Overload,
    /// The UAS killed and restarted during a run.
    UasRestart,
    /// Garbage and malformed requests during live calls.
    Garbage,
    /// Half the capacity for a long time.
    Soak,
    /// Many TCP connections held during calls.
    ConnFlood,
}

impl Scenario {
    /// The scenarios run when none is named.
    pub const DEFAULT: [Scenario; 3] =
        [Scenario::Overload, Scenario::UasRestart, Scenario::Garbage];

    /// Its name on the command line and in `params`.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Overload => "overload",
            Scenario::UasRestart => "uas-restart",
            Scenario::Garbage => "garbage",
            Scenario::Soak => "soak",
            Scenario::ConnFlood => "conn-flood",
        }
    }

    /// Whether it needs the server's capacity.
    fn needs_capacity(self) -> bool {
        matches!(self, Scenario::Overload | Scenario::Soak)
    }
}

impl std::str::FromStr for Scenario {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self> {
        [
            Scenario::Overload,
            Scenario::UasRestart,
            Scenario::Garbage,
            Scenario::Soak,
            Scenario::ConnFlood,
        ]
        .into_iter()
        .find(|x| x.name() == s)
        .ok_or_else(|| {
            crate::error::unknown(
                "scenario",
                s,
                "overload, uas-restart, garbage, soak, conn-flood",
            )
        })
    }
}

/// How long each scenario runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Durations {
    /// Each overload level (2×, 1.5×).
    pub overload: Duration,
    /// Half the capacity after each overload level.
    pub recovery: Duration,
    /// A uas-restart or garbage run.
    pub fault_run: Duration,
    /// How long the UAS stays dead.
    pub outage: Duration,
    /// The soak.
    pub soak: Duration,
}

impl Durations {
    /// The full runs: 60 s per overload level and 15 s after, 20 s fault
    /// runs with a 3 s outage, a 30 minute soak.
    pub fn full() -> Durations {
        Durations {
            overload: Duration::from_secs(60),
            recovery: Duration::from_secs(15),
            fault_run: Duration::from_secs(20),
            outage: Duration::from_secs(3),
            soak: Duration::from_secs(1800),
        }
    }

    /// `--quick`: 6 s per overload level and 6 s after, 8 s fault runs
    /// with a 2 s outage, a 2 minute soak.
    pub fn quick() -> Durations {
        Durations {
            overload: Duration::from_secs(6),
            recovery: Duration::from_secs(6),
            fault_run: Duration::from_secs(8),
            outage: Duration::from_secs(2),
            soak: Duration::from_secs(120),
        }
    }
}

/// Everything a torture run needs.
#[derive(Debug, Clone)]
pub struct TorturePlan {
    /// The server.
    pub kind: TargetKind,
    /// Its setting (CPUs, workers, mode, policy, executable); the UAS
    /// address is set per scenario.
    pub setup: TargetSetup,
    /// CPUs' worth of time the server may use (CFS bandwidth control);
    /// `None`: unlimited.
    pub cpu_limit: Option<f64>,
    /// The CFS period, µs (≤ 2 000).
    pub period_us: u64,
    /// The scenarios, in order.
    pub scenarios: Vec<Scenario>,
    /// The server's capacity, calls/s, if known (else it is searched).
    pub capacity: Option<f64>,
    /// The capacity search's setting.
    pub search: SearchConfig,
    /// Seconds of calls per search trial.
    pub search_window: Duration,
    /// Steps of [`SUSTAIN_STEP`] the sustained-capacity check ([`sustained`])
    /// may take below the searched capacity; 0: no check (the searched
    /// capacity is used).
    pub sustain_steps: usize,
    /// The generator's placement, ports and saturation bounds.
    pub gen: GenConfig,
    /// Where the UAS listens (port 0: any); for an `addr` target, the
    /// address that proxy forwards to.
    pub uas_listen: SocketAddr,
    /// Scenario lengths.
    pub durations: Durations,
    /// Connections the conn-flood scenario holds idle.
    pub flood_connections: usize,
    /// Set (e.g. by Ctrl-C) to end the run; finished scenarios are kept.
    pub stop: Arc<AtomicBool>,
    /// Cancels a running generator when the run is stopped.
    pub cancel: Cancel,
    /// The fleet that loads the server instead of the local generator
    /// (connected by the suite; every scenario runs with one).
    pub fleet: Option<SharedFleet>,
}

impl TorturePlan {
    /// Whether the run was asked to stop.
    pub fn stopped(&self) -> bool {
        // Acquire pairs with the Release store of whoever interrupts.
        self.stop.load(Ordering::Acquire) || self.cancel.is_cancelled()
    }

    fn mode_name(&self) -> &'static str {
        match self.setup.mode {
            Mode::Stateless => "stateless",
            Mode::Stateful => "stateful",
        }
    }

    /// The rows' common `params`.
    fn params(&self, scenario: Scenario) -> Map<String, Value> {
        let mut p = Map::new();
        p.insert("scenario".into(), json!(scenario.name()));
        p.insert("mode".into(), json!(self.mode_name()));
        p.insert("workers".into(), json!(self.setup.workers));
        let model = match &self.kind {
            TargetKind::Takt(o) => o.model.name(),
            TargetKind::Kamailio | TargetKind::OpenSips => "processes",
            TargetKind::NullRelay => "relay",
            TargetKind::Addr(_) => "unknown",
        };
        p.insert("model".into(), json!(model));
        if let TargetKind::Takt(o) = &self.kind {
            if !o.extra_args.is_empty() {
                p.insert("takt_args".into(), json!(o.extra_args.join(" ")));
            }
        }
        p.insert(
            "cpu_limit".into(),
            json!(self
                .cpu_limit
                .map_or_else(|| "none".to_string(), |c| format!("{c}"))),
        );
        p
    }

    /// A generator configuration for one side of a scenario.
    /// The load of a capacity trial `window` long: the fleet's when
    /// there is one, else the local generator's.
    fn load(&self, window: Duration) -> Result<AnyLoad> {
        AnyLoad::new(
            self.fleet.as_ref(),
            &self.gen,
            window,
            self.cancel.clone(),
            || {
                GenLoad::new(
                    self.gen.clone(),
                    self.setup.listen_ip,
                    window,
                    100,
                    self.cancel.clone(),
                )
            },
        )
    }

    fn gen_cfg(&self, role: crate::gen::Role, proxy: SocketAddr, cps: f64) -> GenConfig {
        let mut g = self.gen.clone();
        g.role = role;
        g.proxy = proxy;
        g.cps = cps;
        g.calls = None;
        g.duration = None;
        g
    }
}

/// A server under test with its CPU limit. Field order matters: the
/// target is stopped before the limit's group is removed.
#[derive(Debug)]
pub struct Server {
    /// The running target.
    pub target: Target,
    limit: Option<CpuLimit>,
}

impl Server {
    /// Starts `plan`'s server forwarding to `uas`, limited as planned,
    /// and tells `progress` where the UAS listens
    /// (`uas=… request_uri=… target=…`).
    pub fn start(
        plan: &TorturePlan,
        uas: SocketAddr,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<Server> {
        let mut setup = plan.setup.clone();
        setup.uas = uas;
        let limit = match plan.cpu_limit {
            Some(c) => {
                if matches!(plan.kind, TargetKind::Addr(_)) {
                    return Err(Error::Config(
                        "--cpu-limit needs a server the lab starts (not an address)".into(),
                    ));
                }
                Some(CpuLimit::new(c, plan.period_us)?)
            }
            None => None,
        };
        let target = plan.kind.start(&setup)?;
        if let Some(l) = &limit {
            for pid in target.pids() {
                l.add(pid)?;
            }
        }
        progress(Progress::Step(&format!(
            "uas={uas} request_uri=sip:service@{uas} target={}",
            target.listen()
        )));
        Ok(Server { target, limit })
    }

    /// The CPU limit's throttling counters, if limited.
    pub fn throttling(&self) -> Option<cgroup::Throttling> {
        self.limit.as_ref().map(CpuLimit::throttling)
    }

    /// Removes the server's limit and stops it. The limit goes first: its
    /// processes go back to the root group and shut down at full speed —
    /// Kamailio, limited to half a CPU after an overload, was still busy
    /// 5 s after SIGTERM.
    pub fn stop(self) -> Result<()> {
        let removed = self.limit.map_or(Ok(()), CpuLimit::remove);
        let stopped = self.target.stop();
        stopped.and(removed)
    }
}

/// What [`run`] reports as it goes.
#[derive(Debug)]
pub enum Progress<'a> {
    /// A step began.
    Step(&'a str),
    /// A capacity search trial finished.
    Trial {
        /// Its rate.
        rate_cps: f64,
        /// Its drop rate.
        drop_rate: f64,
        /// The generator's criteria that fired (empty: the trial measured
        /// the server; otherwise the search does not count it).
        generator_causes: SaturationCauses,
    },
}

/// The server's 1%-drop capacity under the plan's CPU limit: the given
/// one, or a capacity search against a fresh server. Returns the rate,
/// what to say about it and, under a fleet, each trial's agents
/// ([`crate::fleet::detail::points_detail`]).
pub fn capacity(
    plan: &TorturePlan,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(f64, String, Option<Value>)> {
    if let Some(c) = plan.capacity {
        return Ok((c, "given (--capacity)".into(), None));
    }
    if matches!(plan.kind, TargetKind::Addr(_)) {
        return Err(Error::Config(
            "an address target's capacity cannot be searched here (its next hop is not the lab's): give --capacity".into(),
        ));
    }
    progress(Progress::Step("capacity search"));
    let load = plan.load(plan.search_window)?;
    let server = Server::start(plan, crate::capacity::Load::uas(&load), progress)?;
    let Server { target, limit } = server;
    let mut trial = TargetTrial::new(target, load).with_stop(plan.stop.clone());
    let mut s = Search::new(plan.search.clone())?;
    let mut recorded = 0;
    let result = loop {
        let Some(rate) = s.next_rate() else {
            break Ok(s.result());
        };
        match search::Trial::trial(&mut trial, rate) {
            Ok(o) => {
                s.record(o);
                let r = s.result();
                if let Some(t) = r.trials.get(recorded) {
                    progress(Progress::Trial {
                        rate_cps: t.rate_cps,
                        drop_rate: t.outcome.drop_rate(),
                        generator_causes: t.outcome.generator_causes,
                    });
                }
                recorded = r.trials.len();
            }
            Err(e) => break Err(e),
        }
    };
    let (points, stopped) = trial.finish();
    drop(limit);
    let result = result?;
    stopped?;
    let fleet = points_detail(points.iter().map(|p| p.fleet.as_ref()));
    match result.capacity {
        Some(Capacity::Measured { cps, .. }) => Ok((cps, "measured".into(), fleet)),
        Some(c @ Capacity::AtLeast { cps, .. }) => Ok((cps, format!("measured: {c}"), fleet)),
        Some(c) => Err(Error::Config(format!(
            "the capacity search found no passing rate ({c}); give --capacity"
        ))),
        None => Err(Error::Config("the capacity search did not finish".into())),
    }
}

/// Each step of the sustained-capacity check lowers the rate by this
/// fraction.
pub const SUSTAIN_STEP: f64 = 0.05;

/// One trial of the sustained-capacity check.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SustainTrial {
    /// The rate offered, calls/s.
    pub rate_cps: f64,
    /// What it measured.
    pub outcome: TrialOutcome,
    /// The server's CPU time per completed call, µs.
    pub cpu_per_call_us: Option<f64>,
}

/// What the sustained-capacity check found ([`sustained`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sustained {
    /// The highest rate tried whose long trial passed; when none did, the
    /// lowest rate tried, an upper bound (`passed` false).
    pub cps: f64,
    /// Whether a trial passed (so `cps` is a measured capacity).
    pub passed: bool,
    /// Seconds of calls per trial.
    pub window_s: f64,
    /// The trials, in the order run.
    pub trials: Vec<SustainTrial>,
    /// What to say about the value.
    pub note: String,
    /// Under a fleet, each trial's agents and void attempts (in the
    /// row's detail as `fleet`).
    #[serde(skip)]
    pub fleet: Vec<Option<FleetPoint>>,
}

/// The capacity the server sustains over a run as long as an overload
/// level ([`Durations::overload`]): the searched capacity's short trials
/// overstate it where the server's state grows over longer runs (the
/// stateful table keeps a completed transaction for Timer J's 32 s, so a
/// 1-s trial never sees a full one). Trials of that length, each against
/// a fresh server under the plan's CPU limit (as an overload level
/// starts), from `searched` down in steps of [`SUSTAIN_STEP`] until one
/// passes (drop rate within the search's threshold, generator not
/// bound), at most [`TorturePlan::sustain_steps`] steps.
pub fn sustained(
    plan: &TorturePlan,
    searched: f64,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Sustained> {
    let window = plan.durations.overload;
    let window_s = window.as_secs_f64();
    let threshold = plan.search.threshold;
    let mut trials = Vec::new();
    let mut fleet = Vec::new();
    for rate in sustain_rates(searched, plan.sustain_steps) {
        if plan.stopped() {
            return Err(Error::Interrupted);
        }
        progress(Progress::Step(&format!(
            "sustained capacity: {rate:.0} cps for {window_s:.0} s"
        )));
        let load = plan.load(window)?;
        let Server { target, limit } =
            Server::start(plan, crate::capacity::Load::uas(&load), progress)?;
        let mut trial = TargetTrial::new(target, load).with_stop(plan.stop.clone());
        let outcome = search::Trial::trial(&mut trial, rate);
        let (points, stopped) = trial.finish();
        drop(limit);
        let outcome = outcome?;
        stopped?;
        progress(Progress::Trial {
            rate_cps: rate,
            drop_rate: outcome.drop_rate(),
            generator_causes: outcome.generator_causes,
        });
        trials.push(SustainTrial {
            rate_cps: rate,
            outcome,
            cpu_per_call_us: points.last().and_then(|p| p.cpu_per_call_us),
        });
        fleet.push(points.last().and_then(|p| p.fleet.clone()));
        if sustains(&outcome, threshold) {
            return Ok(Sustained {
                cps: rate,
                passed: true,
                window_s,
                trials,
                fleet,
                note: format!(
                    "{window_s:.0}-s trials from the searched capacity down by {:.0}% until one drops at most {:.1}% with the generator keeping up",
                    SUSTAIN_STEP * 100.0,
                    threshold * 100.0
                ),
            });
        }
    }
    let lowest = trials.last().map_or(searched, |t| t.rate_cps);
    Ok(Sustained {
        cps: lowest,
        passed: false,
        window_s,
        trials,
        fleet,
        note: format!(
            "no {window_s:.0}-s trial passed (drop at most {:.1}%, generator keeping up): the sustained capacity is below {lowest:.0} cps, which is used (an upper bound)",
            threshold * 100.0
        ),
    })
}

/// The rates the sustained check tries: `searched`, then `steps` times
/// [`SUSTAIN_STEP`] lower each (whole calls/s).
fn sustain_rates(searched: f64, steps: usize) -> impl Iterator<Item = f64> {
    std::iter::successors(Some(searched), |r| Some((r * (1.0 - SUSTAIN_STEP)).round()))
        .take(steps + 1)
}

/// Whether a long trial passed: something sent, the drop rate within
/// `threshold`, and the generator kept up (a generator-bound trial says
/// nothing about the server, so the check goes on below it).
fn sustains(o: &TrialOutcome, threshold: f64) -> bool {
    !o.generator_bound && o.sent > 0 && o.drop_rate() <= threshold
}

/// The `capacity` row for scenario `sc`'s setting: the search's answer,
/// or the given one (`how` says which); under a fleet, its trials' agents
/// in the detail (`fleet`).
fn capacity_row(
    plan: &TorturePlan,
    sc: Scenario,
    cps: f64,
    how: String,
    fleet: Option<Value>,
) -> ResultRow {
    let mut det = Map::new();
    if let Some(f) = fleet {
        det.insert("fleet".into(), f);
    }
    ResultRow::new(
        "capacity",
        plan.kind.name(),
        capacity_params(plan, sc),
        "cps",
        Better::Higher,
        vec![cps],
        0.0,
    )
    .with_detail(det)
    .with_note(how)
}

/// The `capacity_sustained` row for scenario `sc`'s setting: what the
/// sustained check ([`sustained`]) found below the `searched` capacity,
/// each long trial in its detail.
fn sustained_row(plan: &TorturePlan, sc: Scenario, searched: f64, s: Sustained) -> ResultRow {
    let mut det = Map::new();
    det.insert("searched_cps".into(), json!(searched));
    det.insert("passed".into(), json!(s.passed));
    det.insert("window_s".into(), json!(s.window_s));
    det.insert("trials".into(), json!(s.trials));
    if let Some(f) = points_detail(s.fleet.iter().map(Option::as_ref)) {
        det.insert("fleet".into(), f);
    }
    ResultRow::new(
        "capacity_sustained",
        plan.kind.name(),
        capacity_params(plan, sc),
        "cps",
        Better::Higher,
        vec![s.cps],
        0.0,
    )
    .with_detail(det)
    .with_note(s.note)
}

/// The capacity rows' `params`: the setting's, without the scenario (the
/// capacity serves every scenario that needs it).
fn capacity_params(plan: &TorturePlan, sc: Scenario) -> Map<String, Value> {
    let mut p = plan.params(sc);
    p.remove("scenario");
    p
}

/// Runs the plan's scenarios in turn; `progress` hears of each step.
pub fn run(plan: &TorturePlan, mut progress: impl FnMut(Progress<'_>)) -> Result<Document> {
    if plan.scenarios.is_empty() {
        return Err(Error::Config("no scenario to run".into()));
    }
    let mut doc = DocumentBuilder::start("sip_torture");
    // the capacity the scenarios use (the sustained one where checked)
    // and the searched one
    let mut cap = None;
    let mut searched = None;
    let outcome = (|| -> Result<()> {
        for &sc in &plan.scenarios {
            if plan.stopped() {
                return Err(Error::Interrupted);
            }
            if sc.needs_capacity() && cap.is_none() {
                let (c, how, fleet) = capacity(plan, &mut progress)?;
                // pushed before the sustained check: an interrupted check
                // keeps it
                doc.push(capacity_row(plan, sc, c, how, fleet));
                let mut used = c;
                if plan.capacity.is_none() && plan.sustain_steps > 0 {
                    let s = sustained(plan, c, &mut progress)?;
                    used = s.cps;
                    doc.push(sustained_row(plan, sc, c, s));
                }
                cap = Some(used);
                searched = Some(c);
            }
            progress(Progress::Step(sc.name()));
            let rows = match sc {
                Scenario::Overload => {
                    overload::run(plan, cap.unwrap_or_default(), searched, &mut progress)?
                }
                Scenario::UasRestart => uas_restart::run(plan, cap, &mut progress)?,
                Scenario::Garbage => garbage::run(plan, cap, &mut progress)?,
                Scenario::Soak => soak::run(plan, cap.unwrap_or_default(), &mut progress)?,
                Scenario::ConnFlood => conn_flood::run(plan, cap, &mut progress)?,
            };
            let mut unclean: Vec<String> = Vec::new();
            for r in rows {
                if let Some(reason) = r.detail.get(SERVER_STOP).and_then(Value::as_str) {
                    if !unclean.iter().any(|u| u == reason) {
                        unclean.push(reason.to_string());
                    }
                }
                doc.push(r);
            }
            for reason in unclean {
                doc.note(format!(
                    "{}: {reason} (after its measurement: the rows stand)",
                    sc.name()
                ));
            }
        }
        Ok(())
    })();
    match outcome {
        Ok(()) => {}
        Err(Error::Interrupted) => {
            doc.note("interrupted: the rows are those of the scenarios finished before the stop")
        }
        Err(e) => return Err(e),
    }
    Ok(doc.finish())
}

/// Whether a server's stop at the end of a scenario voids it. A server
/// that had to be killed, or exited with a failure, once its measurement
/// was over ([`Error::Stop`]: Kamailio after an overload can take longer
/// than the grace period to shut down) does not: the reason comes back,
/// for [`stop_noted`]. Any other failure (the server had exited during
/// the measurement) is the scenario's.
fn stop_verdict(stopped: Result<()>) -> Result<Option<String>> {
    match stopped {
        Ok(()) => Ok(None),
        Err(e @ Error::Stop { .. }) => Ok(Some(e.to_string())),
        Err(e) => Err(e),
    }
}

/// `rows` with an unclean stop's reason (from [`stop_verdict`]) in each
/// row's `detail.server_stop`; [`run`] also notes it on the document.
fn stop_noted(mut rows: Vec<ResultRow>, unclean: Option<String>) -> Vec<ResultRow> {
    if let Some(reason) = unclean {
        for r in &mut rows {
            r.detail.insert(SERVER_STOP.into(), json!(reason));
        }
    }
    rows
}

/// The row detail that holds an unclean stop's reason.
const SERVER_STOP: &str = "server_stop";

/// A light load for the fault scenarios: a quarter of the capacity when
/// known, else 500 calls/s.
fn fault_rate(capacity: Option<f64>) -> f64 {
    capacity.map_or(500.0, |c| (c / 4.0).clamp(50.0, 5_000.0))
}

/// The rows torture's row builders make on synthetic inputs: every row
/// kind `run` can emit (the capacity and sustained capacity, and each
/// scenario's rows), for takt (with and without extra proxy flags),
/// Kamailio, OpenSIPS and a server at an address. Input of the
/// document-shape snapshot test; starts nothing.
#[doc(hidden)]
pub fn synthetic_rows() -> Vec<ResultRow> {
    use crate::target::TaktOptions;
    let a: SocketAddr = ([127, 0, 0, 1], 9).into();
    let mut out = Vec::new();
    for kind in [
        TargetKind::Takt(TaktOptions::default()),
        TargetKind::Takt(TaktOptions {
            extra_args: vec!["--spin".into(), "200us".into()],
            ..TaktOptions::default()
        }),
        TargetKind::Kamailio,
        TargetKind::OpenSips,
        TargetKind::Addr(a),
    ] {
        // a running server at an address: no CPU limit, its capacity given
        let addr = matches!(kind, TargetKind::Addr(_));
        let plan = TorturePlan {
            kind,
            setup: TargetSetup::new(a),
            cpu_limit: (!addr).then_some(1.0),
            period_us: 1_000,
            scenarios: Vec::new(),
            capacity: addr.then_some(1_000.0),
            search: SearchConfig::default(),
            search_window: Duration::from_secs(1),
            sustain_steps: 0,
            gen: GenConfig::new(a, 100.0),
            uas_listen: a,
            durations: Durations::quick(),
            flood_connections: 100,
            stop: Arc::new(AtomicBool::new(false)),
            cancel: Cancel::default(),
            fleet: None,
        };
        let sustained = Sustained {
            cps: 950.0,
            passed: true,
            window_s: 6.0,
            trials: vec![SustainTrial {
                rate_cps: 950.0,
                outcome: TrialOutcome::default(),
                cpu_per_call_us: Some(10.0),
            }],
            fleet: Vec::new(),
            note: "synthetic".into(),
        };
        out.push(capacity_row(
            &plan,
            Scenario::Overload,
            1_000.0,
            "measured".into(),
            None,
        ));
        // checked only when the capacity was searched, as in `run`
        if plan.capacity.is_none() {
            out.push(sustained_row(&plan, Scenario::Overload, 1_000.0, sustained));
        }
        out.extend(overload::synthetic_rows(&plan));
        out.extend(uas_restart::synthetic_rows(&plan));
        out.extend(garbage::synthetic_rows(&plan));
        out.extend(soak::synthetic_rows(&plan));
        out.extend(conn_flood::synthetic_rows(&plan));
    }
    out
}

/// A row of one value.
fn row(
    plan: &TorturePlan,
    name: &str,
    params: &Map<String, Value>,
    unit: &str,
    better: Better,
    value: f64,
    detail: Map<String, Value>,
) -> ResultRow {
    ResultRow::new(
        name,
        plan.kind.name(),
        params.clone(),
        unit,
        better,
        vec![value],
        0.0,
    )
    .with_detail(detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_killed_after_its_measurement_keeps_the_rows_with_the_reason() {
        let one = || {
            vec![ResultRow::new(
                "goodput",
                "kamailio",
                Map::new(),
                "cps",
                Better::Higher,
                vec![1.0],
                0.0,
            )]
        };
        // a clean stop: the rows as they were
        assert_eq!(stop_verdict(Ok(())).unwrap(), None);
        assert!(stop_noted(one(), None)[0].detail.is_empty());
        // killed after the grace period: the rows stand, the reason on each
        let killed = Error::Stop {
            target: "kamailio",
            reason: "still running 30 s after SIGTERM; killed".into(),
        };
        let unclean = stop_verdict(Err(killed)).unwrap();
        let rows = stop_noted(one(), unclean);
        let reason = rows[0].detail[SERVER_STOP].as_str().unwrap();
        assert!(reason.contains("did not stop cleanly") && reason.contains("killed"));
        // a server that died during the measurement voids the scenario
        let died = Error::Exited {
            target: "kamailio",
            reason: "signal 9".into(),
        };
        assert!(matches!(stop_verdict(Err(died)), Err(Error::Exited { .. })));
    }

    #[test]
    fn the_sustained_check_steps_down_five_percent_at_a_time() {
        let r: Vec<f64> = sustain_rates(20_000.0, 3).collect();
        assert_eq!(r, [20_000.0, 19_000.0, 18_050.0, 17_148.0]);
        assert_eq!(sustain_rates(20_000.0, 0).count(), 1);
    }

    #[test]
    fn a_long_trial_passes_only_within_the_threshold_with_the_generator_keeping_up() {
        let o = |sent, lost, generator_bound| TrialOutcome {
            sent,
            lost,
            generator_bound,
            ..TrialOutcome::default()
        };
        assert!(sustains(&o(10_000, 100, false), 0.01));
        assert!(!sustains(&o(10_000, 101, false), 0.01));
        assert!(!sustains(&o(10_000, 0, true), 0.01));
        assert!(!sustains(&o(0, 0, false), 0.01));
    }
}
