//! A capacity run: several cases (target × mode), each searched against a
//! server started fresh for it, the searches taking turns point by point
//! with every server but the measured one paused, so that drift of the
//! host reaches all cases alike. `takt sip capacity` is this function
//! plus its flags.

use std::net::IpAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use takt_measure::result::{Document, DocumentBuilder};
use takt_sip::proxy::{Mode, Transport};

use super::{cpu_comparison_rows, rows, shm_note, Load, PointDetail, TargetTrial};
use crate::cpu_limit::{CpuLimit, DEFAULT_PERIOD_US};
use crate::error::{Error, Result};
use crate::net::VethNet;
use crate::search::{run_interleaved, Phase, Search, SearchConfig, TrialOutcome};
use crate::target::{TargetKind, TargetSetup};

/// The network path between the load and the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetKind {
    /// Loopback (the sender's system call runs the receiver's stack).
    Loopback,
    /// A veth pair into the server's own namespace ([`crate::net`]).
    Veth,
}

impl NetKind {
    /// Its name in `params`.
    pub fn name(self) -> &'static str {
        match self {
            NetKind::Loopback => "loopback",
            NetKind::Veth => "veth",
        }
    }
}

impl std::str::FromStr for NetKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<NetKind> {
        match s {
            "loopback" => Ok(NetKind::Loopback),
            "veth" => Ok(NetKind::Veth),
            _ => Err(crate::error::unknown("network", s, "loopback, veth")),
        }
    }
}

/// One searched case.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacityCase {
    /// The target.
    pub kind: TargetKind,
    /// Its mode (the null relay has none; its rows say so).
    pub mode: Mode,
}

impl CapacityCase {
    /// `takt stateful`, `kamailio stateless`, `null-relay`.
    pub fn label(&self) -> String {
        match self.kind {
            TargetKind::NullRelay => "null-relay".into(),
            _ => format!("{} {}", self.kind.name(), mode_name(self.mode)),
        }
    }
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Stateless => "stateless",
        Mode::Stateful => "stateful",
    }
}

/// Everything a capacity run needs besides the load.
#[derive(Debug, Clone)]
pub struct CapacityPlan {
    /// The cases, in the order they take turns.
    pub cases: Vec<CapacityCase>,
    /// CPUs, workers, scheduling policy, receive buffer, takt executable
    /// for every server (mode, addresses and namespace are set per case).
    pub base: TargetSetup,
    /// The search's parameters.
    pub search: SearchConfig,
    /// Loopback or veth.
    pub net: NetKind,
    /// Set (e.g. by a Ctrl-C handler) to end the run after the current
    /// trial; the finished points are kept.
    pub stop: Arc<AtomicBool>,
    /// A CPU quota on each server for its whole search, CPUs' worth of
    /// time ([`CpuLimit`]; `None`: none).
    pub cpu_limit: Option<f64>,
}

/// What [`run`] reports after every trial.
#[derive(Debug)]
pub struct Progress<'a> {
    /// Which case (index into [`CapacityPlan::cases`]).
    pub case: usize,
    /// Its label.
    pub label: &'a str,
    /// The trial's rate.
    pub rate_cps: f64,
    /// The trial's phase.
    pub phase: Phase,
    /// Its outcome.
    pub outcome: &'a TrialOutcome,
    /// Trials done and expected, all cases together.
    pub done: usize,
    /// See `done`.
    pub expected: usize,
    /// Trials done and expected for this case (equal once its search is
    /// over; the expectation grows when the search must look again).
    pub case_done: usize,
    /// See `case_done`.
    pub case_expected: usize,
}

fn params(plan: &CapacityPlan, case: &CapacityCase) -> Map<String, Value> {
    let mut p = setting_params(&plan.base, plan.net, case, plan.cpu_limit);
    p.insert("threshold".into(), json!(plan.search.threshold));
    p.insert("reps".into(), json!(plan.search.reps));
    p
}

/// The `params` naming a case's setting: `mode`, `workers`, `model`,
/// `sched`, `cpus`, `net`, and `cpu_limit` (CPUs) when the server ran
/// under a quota.
pub(super) fn setting_params(
    base: &TargetSetup,
    net: NetKind,
    case: &CapacityCase,
    cpu_limit: Option<f64>,
) -> Map<String, Value> {
    let mut p = Map::new();
    let mode = match case.kind {
        TargetKind::NullRelay => "none",
        _ => mode_name(case.mode),
    };
    p.insert("mode".into(), json!(mode));
    if base.transport == Transport::Tcp {
        p.insert("transport".into(), json!("tcp"));
    }
    let workers = match case.kind {
        TargetKind::NullRelay => 1,
        _ => base.workers,
    };
    p.insert("workers".into(), json!(workers));
    let model = match &case.kind {
        TargetKind::Takt(o) => o.model.name(),
        TargetKind::Kamailio | TargetKind::OpenSips => "processes",
        TargetKind::NullRelay => "relay",
        TargetKind::Addr(_) => "unknown",
    };
    p.insert("model".into(), json!(model));
    p.insert(
        "sched".into(),
        json!(base
            .sched
            .map_or_else(|| "default".to_string(), |s| s.to_string())),
    );
    p.insert(
        "cpus".into(),
        json!(base
            .cpus
            .as_ref()
            .map_or_else(|| "any".to_string(), |c| c.to_string())),
    );
    p.insert("net".into(), json!(net.name()));
    if let Some(c) = cpu_limit {
        p.insert("cpu_limit".into(), json!(c));
    }
    p
}

/// The network of a run: a veth pair for [`NetKind::Veth`] (needs the
/// server's CPUs for its packet steering), and the IP address the load
/// binds (the one the server reaches it at).
pub(super) fn network(base: &TargetSetup, net: NetKind) -> Result<(Option<VethNet>, IpAddr)> {
    let veth = match net {
        NetKind::Loopback => None,
        NetKind::Veth => {
            let cpus = base.cpus.as_ref().ok_or_else(|| {
                Error::Config("--net veth steers packets to the server's CPUs: give --cpus".into())
            })?;
            Some(VethNet::create(cpus)?)
        }
    };
    let ip = veth.as_ref().map_or(base.listen_ip, |n| n.root_ip);
    Ok((veth, ip))
}

/// A case's server and its CPU quota, if any (the quota goes first when
/// it ends: the server then shuts down at full speed).
pub(super) struct Started<L> {
    pub(super) trial: TargetTrial<L>,
    pub(super) limit: Option<CpuLimit>,
}

impl<L: Load> Started<L> {
    /// Removes the quota and stops the server; the trial details, and how
    /// the end went (no process or group is left either way).
    pub(super) fn finish(self) -> (Vec<PointDetail>, Result<()>) {
        let removed = self.limit.map_or(Ok(()), CpuLimit::remove);
        let (points, stopped) = self.trial.finish();
        (points, stopped.and(removed))
    }
}

/// A fresh server for `case` (from `base`, in `net` if any) forwarding to
/// `load`'s UAS, under a quota of `cpu_limit` CPUs if given, wrapped with
/// the load as a paused [`TargetTrial`] that refuses further trials once
/// `stop` is set. `announce` gets the line that says where the load's
/// UAS listens and what its calls name.
pub(super) fn start_trial<L: Load>(
    base: &TargetSetup,
    net: Option<&VethNet>,
    case: &CapacityCase,
    load: L,
    stop: &Arc<AtomicBool>,
    cpu_limit: Option<f64>,
    announce: &mut dyn FnMut(&str),
) -> Result<Started<L>> {
    let mut setup = base.clone();
    setup.mode = case.mode;
    setup.uas = load.uas();
    if let Some(n) = net {
        setup.listen_ip = n.server_ip;
        setup.netns = Some(n.namespace().to_string());
    }
    let limit = match cpu_limit {
        Some(_) if matches!(case.kind, TargetKind::Addr(_)) => {
            return Err(Error::Config(
                "--cpu-limit needs a server the lab starts (not an address)".into(),
            ))
        }
        Some(c) => Some(CpuLimit::new(c, DEFAULT_PERIOD_US)?),
        None => None,
    };
    let target = case.kind.start(&setup)?;
    if let Some(l) = &limit {
        for pid in target.pids() {
            l.add(pid)?;
        }
    }
    announce(&format!(
        "{} case=\"{}\"",
        load.uas_line(target.listen()),
        case.label()
    ));
    let trial = TargetTrial::new(target, load)
        .with_stop(stop.clone())
        .pausing();
    Ok(Started { trial, limit })
}

/// Runs the plan: for each case a load from `make_load(ip)` (its sockets
/// bound on `ip`, the address the server reaches it at) and a fresh
/// server; then the searches in turns; then the rows of every case (see
/// [`rows`]). An interruption through [`CapacityPlan::stop`] ends the run
/// with the finished points and a note; any other error stops every
/// server and is returned.
pub fn run<L: Load>(
    plan: &CapacityPlan,
    mut make_load: impl FnMut(IpAddr) -> Result<L>,
    mut announce: impl FnMut(&str),
    mut progress: impl FnMut(&Progress<'_>),
) -> Result<Document> {
    plan.search.validate()?;
    if plan.cases.is_empty() {
        return Err(Error::Config(
            "a capacity run needs at least one target".into(),
        ));
    }
    let (net, client_ip) = network(&plan.base, plan.net)?;
    let mut started = Vec::with_capacity(plan.cases.len());
    let mut searches = Vec::with_capacity(plan.cases.len());
    let labels: Vec<String> = plan.cases.iter().map(CapacityCase::label).collect();
    for case in &plan.cases {
        let load = make_load(client_ip)?;
        started.push(start_trial(
            &plan.base,
            net.as_ref(),
            case,
            load,
            &plan.stop,
            plan.cpu_limit,
            &mut announce,
        )?);
        searches.push(Search::new(plan.search.clone())?);
    }
    let mut trials: Vec<&mut TargetTrial<L>> = started.iter_mut().map(|s| &mut s.trial).collect();
    let mut expected = vec![0; searches.len()];
    let mut done = vec![0; searches.len()];
    for (i, s) in searches.iter().enumerate() {
        (done[i], expected[i]) = s.progress();
    }
    let outcome = run_interleaved(&mut searches, &mut trials, |i, s| {
        (done[i], expected[i]) = s.progress();
        let r = s.result();
        let Some(last) = r.trials.last() else {
            return;
        };
        progress(&Progress {
            case: i,
            label: &labels[i],
            rate_cps: last.rate_cps,
            phase: last.phase,
            outcome: &last.outcome,
            done: done.iter().sum(),
            expected: expected.iter().sum(),
            case_done: done[i],
            case_expected: expected[i],
        });
    });
    let interrupted = match outcome {
        Ok(()) => false,
        Err((_, Error::Interrupted)) => true,
        Err((i, e)) => {
            return Err(Error::Case {
                case: labels[i].clone(),
                source: Box::new(e),
            });
        }
    };
    let mut doc = DocumentBuilder::start("sip_capacity");
    drop(trials);
    for (((case, search), trial), label) in
        plan.cases.iter().zip(&searches).zip(started).zip(&labels)
    {
        let name = case.kind.name();
        // the points stand however the server ends; a messy end is noted
        let (points, stopped) = trial.finish();
        if let Err(e) = stopped {
            doc.note(format!("{label}: {e}"));
        }
        if let Some(n) = shm_note(label, &points) {
            doc.note(n);
        }
        let result = search.result();
        if let Some(w) = result.generator_bound_warning(label) {
            doc.note(w);
        }
        for row in rows(name, &params(plan, case), &result, &points) {
            doc.push(row);
        }
    }
    let compared = cpu_comparison_rows(doc.rows());
    for row in compared {
        doc.push(row);
    }
    if interrupted {
        doc.note("interrupted: rows hold the points finished before the stop; a case without a capacity row had not finished its grid");
    }
    drop(net);
    Ok(doc.finish())
}

/// Every kind of row a capacity search's document can hold (each target
/// kind, UDP and TCP, a finished and an interrupted search), built by
/// [`rows`] from synthetic searches: the input of the document-shape
/// snapshot test. Starts nothing.
pub(super) fn synthetic_rows() -> Vec<takt_measure::result::ResultRow> {
    use crate::target::TaktOptions;
    let a: std::net::SocketAddr = ([127, 0, 0, 1], 9).into();
    let kinds = [
        TargetKind::Takt(TaktOptions::default()),
        TargetKind::Kamailio,
        TargetKind::NullRelay,
        TargetKind::Addr(a),
    ];
    let mut out = Vec::new();
    for transport in [Transport::Udp, Transport::Tcp] {
        let mut base = TargetSetup::new(a);
        base.transport = transport;
        let plan = CapacityPlan {
            cases: Vec::new(),
            base,
            search: SearchConfig::default(),
            net: NetKind::Loopback,
            stop: Arc::new(AtomicBool::new(false)),
            cpu_limit: None,
        };
        for kind in &kinds {
            let case = CapacityCase {
                kind: kind.clone(),
                mode: Mode::Stateless,
            };
            let takt_kinds = matches!(kind, TargetKind::Takt(_));
            for finished in [true, false] {
                let (result, points) = super::rows::synthetic_search(finished, takt_kinds);
                out.extend(rows(kind.name(), &params(&plan, &case), &result, &points));
            }
        }
    }
    out.extend(cpu_comparison_rows(&out));
    // a server under a CPU quota (`--cpu-limit`)
    let plan = CapacityPlan {
        cases: Vec::new(),
        base: TargetSetup::new(a),
        search: SearchConfig::default(),
        net: NetKind::Loopback,
        stop: Arc::new(AtomicBool::new(false)),
        cpu_limit: Some(1.0),
    };
    let case = CapacityCase {
        kind: TargetKind::Takt(TaktOptions::default()),
        mode: Mode::Stateful,
    };
    let (result, points) = super::rows::synthetic_search(true, true);
    out.extend(rows("takt", &params(&plan, &case), &result, &points));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Target;
    use std::net::SocketAddr;
    use std::sync::atomic::Ordering;

    /// A server whose drop rate jumps above `cap` calls/s, reached at an
    /// address (nothing is started).
    struct Fake {
        cap: f64,
        stop_after: Option<(usize, Arc<AtomicBool>)>,
        runs: usize,
        /// Trials above this rate are generator-bound (a generator that
        /// cannot keep up).
        gen_ceiling: f64,
    }

    impl Load for Fake {
        fn uas(&self) -> SocketAddr {
            "127.0.0.1:9".parse().unwrap()
        }
        fn run(&mut self, _: &Target, rate: f64) -> Result<super::super::LoadOutcome> {
            self.runs += 1;
            if let Some((n, stop)) = &self.stop_after {
                if self.runs >= *n {
                    stop.store(true, Ordering::Release);
                }
            }
            Ok(super::super::LoadOutcome {
                achieved_cps: rate,
                sent_to_server: 7_000,
                lost: if rate > self.cap { 700 } else { 0 },
                completed_calls: 1_000,
                failed_calls: 0,
                generator_bound: rate > self.gen_ceiling,
                generator_causes: if rate > self.gen_ceiling {
                    std::iter::once(crate::gen::SaturationCause::SendLag).collect()
                } else {
                    crate::gen::SaturationCauses::NONE
                },
            })
        }
    }

    fn plan() -> CapacityPlan {
        let a: SocketAddr = "127.0.0.1:9".parse().unwrap();
        CapacityPlan {
            cases: vec![
                CapacityCase {
                    kind: TargetKind::Addr(a),
                    mode: Mode::Stateless,
                },
                CapacityCase {
                    kind: TargetKind::Addr(a),
                    mode: Mode::Stateful,
                },
            ],
            base: TargetSetup::new(a),
            search: SearchConfig::default(),
            net: NetKind::Loopback,
            stop: Arc::new(AtomicBool::new(false)),
            cpu_limit: None,
        }
    }

    #[test]
    fn cases_take_turns_and_give_rows() {
        let p = plan();
        let mut caps = vec![3_000.0, 6_000.0].into_iter();
        let mut seen = Vec::new();
        let doc = run(
            &p,
            |_| {
                Ok(Fake {
                    cap: caps.next().unwrap(),
                    stop_after: None,
                    runs: 0,
                    gen_ceiling: f64::INFINITY,
                })
            },
            |_| {},
            |pr| seen.push(pr.case),
        )
        .unwrap();
        assert_eq!(&seen[..4], &[0, 1, 0, 1]);
        let caps: Vec<_> = doc
            .results
            .iter()
            .filter(|r| r.name == "capacity")
            .collect();
        assert_eq!(caps.len(), 2);
        let cap = |i: usize| caps[i].median().expect("a measured capacity");
        assert!(cap(0) <= 3_000.0 && cap(0) > 2_700.0);
        assert!(cap(1) <= 6_000.0 && cap(1) > 5_400.0);
        assert_eq!(caps[1].params["mode"], json!("stateful"));
        assert_eq!(caps[1].params["net"], json!("loopback"));
        assert!(doc.notes.is_empty());
    }

    #[test]
    fn a_case_whose_every_trial_was_generator_bound_is_warned_about() {
        let p = plan();
        let mut ceilings = vec![0.0, f64::INFINITY].into_iter();
        let doc = run(
            &p,
            |_| {
                Ok(Fake {
                    cap: 3_000.0,
                    stop_after: None,
                    runs: 0,
                    gen_ceiling: ceilings.next().unwrap(),
                })
            },
            |_| {},
            |_| {},
        )
        .unwrap();
        let label = p.cases[0].label();
        assert_eq!(doc.notes.len(), 1, "{:?}", doc.notes);
        let n = &doc.notes[0];
        assert!(
            n.starts_with(&format!("warning: {label}: every one of its")),
            "{n}"
        );
        assert!(n.contains("generator-bound (send-lag)"), "{n}");
        assert!(!n.contains(&p.cases[1].label()), "{n}");
    }

    #[test]
    fn an_interrupted_run_keeps_its_points() {
        let p = plan();
        let stop = p.stop.clone();
        let doc = run(
            &p,
            |_| {
                Ok(Fake {
                    cap: 3_000.0,
                    stop_after: Some((3, stop.clone())),
                    runs: 0,
                    gen_ceiling: f64::INFINITY,
                })
            },
            |_| {},
            |_| {},
        )
        .unwrap();
        assert!(doc.results.iter().all(|r| r.name != "capacity"));
        assert_eq!(doc.notes.len(), 1);
        // the trials run before the stop are written
        let kept: Vec<_> = doc
            .results
            .iter()
            .filter(|r| r.name == "drop_rate" && r.params.contains_key("phase"))
            .collect();
        // turns: 0, 1, 0, 1, 0 (whose third run sets the stop), then the
        // next trial refuses
        assert_eq!(kept.len(), 5, "{:?}", doc.results);
    }

    #[test]
    fn veth_needs_cpus() {
        let mut p = plan();
        p.net = NetKind::Veth;
        let e = run(
            &p,
            |_| -> Result<Fake> { unreachable!("refused before any load") },
            |_| {},
            |_| {},
        )
        .unwrap_err();
        assert!(e.to_string().contains("--cpus"), "{e}");
    }
}
