//! `takt sip torture`: a SIP server under overload and faults, measured
//! the same way whatever the server is (takt-sip, Kamailio, any address).
//!
//! Scenarios ([`Scenario`]), each against a server started fresh:
//! - **overload** ([`overload`]): the server's 1%-drop capacity first (the
//!   capacity search, or `--capacity`), then 2× and 1.5× that rate for a
//!   while, then half of it: goodput against capacity, losses of ACK and
//!   BYE against refused INVITEs, peak memory, and the seconds until the
//!   server loses nothing once the load is back to half its capacity.
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
//! Where the generator cannot offer twice a server's capacity (on a small
//! machine, a fast proxy outruns it), the server's CPU is limited with CFS
//! bandwidth control ([`cgroup`]) and its capacity is measured under the
//! same limit: the scenarios then hold at any speed of server.
//!
//! The result document has one row per scenario and metric (`params`
//! name the target, `mode`, `workers`, `model`, `cpu_limit`, the
//! `scenario` and its setting); a Ctrl-C ends the current scenario early
//! and keeps the rows of the finished ones.

pub mod cgroup;
pub mod conn_flood;
pub mod garbage;
pub mod overload;
pub mod soak;
pub mod uas_restart;
pub mod watch;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use takt_measure::result::{Better, Document, DocumentBuilder, ResultRow};
use takt_sip::proxy::Mode;

use crate::capacity::{GenLoad, TargetTrial};
use crate::error::{Error, Result};
use crate::gen::{Cancel, GenConfig, SaturationCauses};
use crate::search::{self, Capacity, Search, SearchConfig};
use crate::target::{Target, TargetKind, TargetSetup};
use cgroup::CpuLimit;

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
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
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
            format!("unknown scenario {s:?} (overload, uas-restart, garbage, soak, conn-flood)")
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
            TargetKind::Kamailio => "processes",
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
    /// Starts `plan`'s server forwarding to `uas`, limited as planned.
    pub fn start(plan: &TorturePlan, uas: SocketAddr) -> Result<Server> {
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
/// one, or a capacity search against a fresh server. Returns the rate and
/// what to say about it.
pub fn capacity(
    plan: &TorturePlan,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(f64, String)> {
    if let Some(c) = plan.capacity {
        return Ok((c, "given (--capacity)".into()));
    }
    if matches!(plan.kind, TargetKind::Addr(_)) {
        return Err(Error::Config(
            "an address target's capacity cannot be searched here (its next hop is not the lab's): give --capacity".into(),
        ));
    }
    progress(Progress::Step("capacity search"));
    let load = GenLoad::new(
        plan.gen.clone(),
        plan.setup.listen_ip,
        plan.search_window,
        100,
        plan.cancel.clone(),
    )?;
    let server = Server::start(plan, crate::capacity::Load::uas(&load))?;
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
    let (_, stopped) = trial.finish();
    drop(limit);
    let result = result?;
    stopped?;
    match result.capacity {
        Some(Capacity::Measured { cps, .. }) => Ok((cps, "measured".into())),
        Some(c @ Capacity::AtLeast { cps, .. }) => Ok((cps, format!("measured: {c}"))),
        Some(c) => Err(Error::Config(format!(
            "the capacity search found no passing rate ({c}); give --capacity"
        ))),
        None => Err(Error::Config("the capacity search did not finish".into())),
    }
}

/// Runs the plan's scenarios in turn; `progress` hears of each step.
pub fn run(plan: &TorturePlan, mut progress: impl FnMut(Progress<'_>)) -> Result<Document> {
    if plan.scenarios.is_empty() {
        return Err(Error::Config("no scenario to run".into()));
    }
    let mut doc = DocumentBuilder::start("sip_torture");
    let mut cap = None;
    let outcome = (|| -> Result<()> {
        for &sc in &plan.scenarios {
            if plan.stopped() {
                return Err(Error::Interrupted);
            }
            if sc.needs_capacity() && cap.is_none() {
                let (c, how) = capacity(plan, &mut progress)?;
                let mut p = plan.params(sc);
                p.remove("scenario");
                doc.push(
                    ResultRow::new(
                        "capacity",
                        plan.kind.name(),
                        p,
                        "cps",
                        Better::Higher,
                        vec![c],
                        0.0,
                    )
                    .with_note(how),
                );
                cap = Some(c);
            }
            progress(Progress::Step(sc.name()));
            let rows = match sc {
                Scenario::Overload => overload::run(plan, cap.unwrap_or_default(), &mut progress)?,
                Scenario::UasRestart => uas_restart::run(plan, cap, &mut progress)?,
                Scenario::Garbage => garbage::run(plan, cap, &mut progress)?,
                Scenario::Soak => soak::run(plan, cap.unwrap_or_default(), &mut progress)?,
                Scenario::ConnFlood => conn_flood::run(plan, cap, &mut progress)?,
            };
            for r in rows {
                doc.push(r);
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

/// A light load for the fault scenarios: a quarter of the capacity when
/// known, else 500 calls/s.
fn fault_rate(capacity: Option<f64>) -> f64 {
    capacity.map_or(500.0, |c| (c / 4.0).clamp(50.0, 5_000.0))
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
