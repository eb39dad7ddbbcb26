//! Server CPU time per completed call at a fixed rate: the cost side of
//! the capacity table, measured where every target keeps up (`takt sip
//! capacity`'s setting: one worker, no spinning, takt and the null relay at 10,000
//! cps, Kamailio at 2,000).
//!
//! Each case gets a fresh server, as in [`super::run`]; the cases take
//! turns repetition by repetition with every server but the measured one
//! paused, so drift of the host reaches them alike. A repetition is one
//! run of the load at the case's rate (warm-up, window, bounded drain);
//! its sample is the run time of the server's threads over that run ÷ the
//! calls it completed. Idle time costs a server without spinning workers
//! nothing, so the drain does not dilute the figure.

use std::net::IpAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use takt_measure::result::{Better, Document, DocumentBuilder, ResultRow};

use super::plan::{network, setting_params, start_trial};
use super::{kind_rows, shm_note, CapacityCase, Load, NetKind, PointDetail};
use crate::error::{Error, Result};
use crate::fleet::detail::points_detail;
use crate::gen::SaturationCauses;
use crate::search::{Trial, TrialOutcome};
use crate::target::{TargetKind, TargetSetup};

/// One fixed-rate case.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedCase {
    /// The target and its mode.
    pub case: CapacityCase,
    /// The offered rate, calls/s.
    pub rate_cps: f64,
}

/// Everything a fixed-rate run needs besides the load.
#[derive(Debug, Clone)]
pub struct FixedPlan {
    /// The cases, in the order they take turns.
    pub cases: Vec<FixedCase>,
    /// Every server's setting (workers, CPUs, policy; mode, addresses and
    /// namespace are set per case).
    pub base: TargetSetup,
    /// Repetitions per case (≥ 1).
    pub reps: usize,
    /// Loopback or veth.
    pub net: NetKind,
    /// Set to end the run after the current repetition; the finished ones
    /// are kept.
    pub stop: Arc<AtomicBool>,
    /// A CPU quota on each server for the whole run, CPUs' worth of time.
    pub cpu_limit: Option<f64>,
}

/// What [`run_fixed`] reports after every repetition.
#[derive(Debug)]
pub struct FixedProgress<'a> {
    /// Which case (index into [`FixedPlan::cases`]).
    pub case: usize,
    /// Its label.
    pub label: &'a str,
    /// Its rate.
    pub rate_cps: f64,
    /// The outcome of this repetition.
    pub outcome: &'a TrialOutcome,
    /// Its CPU per call, µs (`None`: no call completed, or no threads
    /// seen).
    pub cpu_per_call_us: Option<f64>,
    /// Repetitions done and expected, all cases together.
    pub done: usize,
    /// See `done`.
    pub expected: usize,
}

/// Runs the plan (see the module docs) and returns a `sip_capacity`
/// document with one `cpu_per_call` row per case (µs, one sample per
/// repetition; `rate_cps` in params; each repetition's rate, drops and
/// generator flag in `detail.reps`; `detail.ratio_to_null_relay` where the
/// null relay ran at the same rate, CPU-per-call medians divided) and, for
/// takt, its per-kind `t_sip` and `k_rcv` rows. A repetition that lost
/// more than 1% of its messages or was generator-bound is still a cost
/// sample, and the document's notes name it. An interruption through
/// [`FixedPlan::stop`] keeps the finished repetitions and says so.
pub fn run_fixed<L: Load>(
    plan: &FixedPlan,
    mut make_load: impl FnMut(IpAddr) -> Result<L>,
    mut announce: impl FnMut(&str),
    mut progress: impl FnMut(&FixedProgress<'_>),
) -> Result<Document> {
    if plan.reps == 0 {
        return Err(Error::Config(
            "a fixed-rate run needs at least one repetition".into(),
        ));
    }
    if plan.cases.is_empty() {
        return Err(Error::Config(
            "a fixed-rate run needs at least one target".into(),
        ));
    }
    if let Some(c) = plan
        .cases
        .iter()
        .find(|c| !(c.rate_cps.is_finite() && c.rate_cps > 0.0))
    {
        return Err(Error::Config(format!(
            "{}: a fixed rate must be positive, not {}",
            c.case.label(),
            c.rate_cps
        )));
    }
    let (net, client_ip) = network(&plan.base, plan.net)?;
    let labels: Vec<String> = plan.cases.iter().map(|c| c.case.label()).collect();
    let mut trials = Vec::with_capacity(plan.cases.len());
    for c in &plan.cases {
        let load = make_load(client_ip)?;
        trials.push(start_trial(
            &plan.base,
            net.as_ref(),
            &c.case,
            load,
            &plan.stop,
            plan.cpu_limit,
            &mut announce,
        )?);
    }
    let expected = plan.reps * plan.cases.len();
    let mut outcomes: Vec<Vec<TrialOutcome>> = vec![Vec::new(); plan.cases.len()];
    let mut interrupted = false;
    let mut failure = None;
    'reps: for _ in 0..plan.reps {
        for (i, (c, t)) in plan.cases.iter().zip(trials.iter_mut()).enumerate() {
            let t = &mut t.trial;
            match t.trial(c.rate_cps) {
                Ok(o) => {
                    outcomes[i].push(o);
                    progress(&FixedProgress {
                        case: i,
                        label: &labels[i],
                        rate_cps: c.rate_cps,
                        outcome: &o,
                        cpu_per_call_us: t.points().last().and_then(|p| p.cpu_per_call_us),
                        done: outcomes.iter().map(Vec::len).sum(),
                        expected,
                    });
                }
                Err(Error::Interrupted) => {
                    interrupted = true;
                    break 'reps;
                }
                Err(e) => {
                    failure = Some(Error::Case {
                        case: labels[i].clone(),
                        source: Box::new(e),
                    });
                    break 'reps;
                }
            }
        }
    }
    let mut doc = DocumentBuilder::start("sip_capacity");
    let mut cpu_rows = Vec::new();
    let mut other_rows = Vec::new();
    for ((c, t), label) in plan.cases.iter().zip(trials).zip(&labels) {
        let (points, stopped) = t.finish();
        if let Err(e) = stopped {
            doc.note(format!("{label}: {e}"));
        }
        let params = case_params(plan, c);
        if let Some(n) = shm_note(label, &points) {
            doc.note(n);
        }
        if let Some(n) = disturbed_note(label, c.rate_cps, &points) {
            doc.note(n);
        }
        if let Some(row) = cpu_row(c.case.kind.name(), &params, &points) {
            cpu_rows.push((c, row));
        }
        other_rows.extend(kind_rows(c.case.kind.name(), &params, &points));
    }
    if let Some(e) = failure {
        return Err(e);
    }
    // the null relay's cost at the same rate, the floor every ratio uses
    let floor: Vec<(f64, f64)> = cpu_rows
        .iter()
        .filter(|(c, _)| c.case.kind == TargetKind::NullRelay)
        .filter_map(|(c, r)| Some((c.rate_cps, r.median()?)))
        .collect();
    for (c, mut row) in cpu_rows {
        if c.case.kind != TargetKind::NullRelay {
            if let Some(&(_, f)) = floor.iter().find(|(r, _)| *r == c.rate_cps) {
                if let Some(m) = row.median().filter(|_| f > 0.0) {
                    row.detail
                        .insert("ratio_to_null_relay".into(), json!(m / f));
                }
            }
        }
        doc.push(row);
    }
    for r in other_rows {
        doc.push(r);
    }
    if interrupted {
        doc.note(
            "interrupted: the CPU-per-call rows hold the repetitions finished before the stop",
        );
    }
    drop(net);
    Ok(doc.finish())
}

/// The `params` of a case's rows: its setting, `rate_cps` and `reps`.
fn case_params(plan: &FixedPlan, c: &FixedCase) -> Map<String, Value> {
    let mut params = setting_params(&plan.base, plan.net, &c.case, plan.cpu_limit);
    params.insert("rate_cps".into(), json!(c.rate_cps));
    params.insert("reps".into(), json!(plan.reps));
    params
}

/// Every kind of row a fixed-rate run's document can hold (each target
/// kind, UDP and TCP), built by [`cpu_row`] and [`kind_rows`] from
/// synthetic points: the input of the document-shape snapshot test.
/// Starts nothing.
pub(super) fn synthetic_rows() -> Vec<ResultRow> {
    use crate::target::TaktOptions;
    let a: std::net::SocketAddr = ([127, 0, 0, 1], 9).into();
    let mut out = Vec::new();
    for transport in [
        takt_sip::proxy::Transport::Udp,
        takt_sip::proxy::Transport::Tcp,
    ] {
        let mut base = TargetSetup::new(a);
        base.transport = transport;
        for kind in [
            TargetKind::Takt(TaktOptions::default()),
            TargetKind::Kamailio,
            TargetKind::NullRelay,
            TargetKind::Addr(a),
        ] {
            let c = FixedCase {
                case: CapacityCase {
                    kind,
                    mode: takt_sip::proxy::Mode::Stateless,
                },
                rate_cps: 1_000.0,
            };
            let plan = FixedPlan {
                cases: Vec::new(),
                base: base.clone(),
                reps: 3,
                net: NetKind::Loopback,
                stop: Arc::new(AtomicBool::new(false)),
                cpu_limit: None,
            };
            let params = case_params(&plan, &c);
            let takt = matches!(c.case.kind, TargetKind::Takt(_));
            let points: Vec<PointDetail> = (0..3)
                .map(|_| super::rows::synthetic_point(c.rate_cps, takt))
                .collect();
            let name = c.case.kind.name();
            out.extend(cpu_row(name, &params, &points));
            out.extend(kind_rows(name, &params, &points));
        }
    }
    out
}

/// The `cpu_per_call` row of one case (`None` when no repetition gave a
/// sample).
fn cpu_row(target: &str, params: &Map<String, Value>, points: &[PointDetail]) -> Option<ResultRow> {
    let samples: Vec<f64> = points.iter().filter_map(|p| p.cpu_per_call_us).collect();
    if samples.is_empty() {
        return None;
    }
    let cpu_s = points.iter().map(|p| p.server.run_s).sum();
    let reps: Vec<Value> = points
        .iter()
        .map(|p| {
            json!({
                "achieved_cps": p.load.achieved_cps,
                "completed_calls": p.load.completed_calls,
                "failed_calls": p.load.failed_calls,
                "sent": p.load.sent_to_server,
                "lost": p.load.lost,
                "server_run_s": p.server.run_s,
                "server_socket_drops": p.server.socket_drops,
                "cpu_per_call_us": p.cpu_per_call_us,
                "generator_bound": p.load.generator_bound,
                "generator_causes": p.load.generator_causes,
            })
        })
        .collect();
    let mut d = Map::new();
    d.insert("reps".into(), Value::Array(reps));
    if let Some(f) = points_detail(points.iter().map(|p| p.fleet.as_ref())) {
        d.insert("fleet".into(), f);
    }
    Some(
        ResultRow::new(
            "cpu_per_call",
            target,
            params.clone(),
            "us",
            Better::Lower,
            samples,
            cpu_s,
        )
        .with_detail(d),
    )
}

/// A note when some repetitions lost more than 1% of their messages or
/// were generator-bound: their cost per call is still a sample, but the
/// rate was not carried as asked.
fn disturbed_note(label: &str, rate_cps: f64, points: &[PointDetail]) -> Option<String> {
    let lossy = points
        .iter()
        .filter(|p| p.load.sent_to_server > 0 && p.load.lost * 100 > p.load.sent_to_server)
        .count();
    let bound: Vec<&PointDetail> = points.iter().filter(|p| p.load.generator_bound).collect();
    if lossy == 0 && bound.is_empty() {
        return None;
    }
    let causes = bound.iter().fold(SaturationCauses::NONE, |a, p| {
        a.union(p.load.generator_causes)
    });
    Some(format!(
        "{label} at {rate_cps:.0} cps, of {n} repetitions: {lossy} lost more than 1% of their \
         messages, {b} generator-bound{c}; their CPU per call still counts",
        n = points.len(),
        b = bound.len(),
        c = if causes.is_empty() {
            String::new()
        } else {
            format!(" ({causes})")
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::{KindWindow, LoadOutcome};
    use crate::server_stats::{ServerSample, ServerWindow};
    use std::collections::BTreeMap;
    use std::time::Instant;
    use takt_sip::stats::snmp::UdpCounters;

    fn point(cpu_us: f64, lost: u64, bound: bool) -> PointDetail {
        let sample = || ServerSample {
            at: Instant::now(),
            sockets: Vec::new(),
            cpu_ticks: 0,
            threads: Vec::new(),
            host: UdpCounters::default(),
        };
        let mut kinds = BTreeMap::new();
        kinds.insert(
            "invite".to_string(),
            KindWindow {
                count: 100,
                t_sip_mean_ns: Some(cpu_us * 10.0),
                k_rcv_mean_ns: None,
            },
        );
        PointDetail {
            rate_cps: 10_000.0,
            load: LoadOutcome {
                achieved_cps: 10_000.0,
                sent_to_server: 1_000,
                lost,
                completed_calls: 100,
                generator_bound: bound,
                ..LoadOutcome::default()
            },
            server: ServerWindow::between(&sample(), &sample()),
            cpu_per_call_us: Some(cpu_us),
            shm: None,
            takt_kinds: Some(kinds),
            stats_error: None,
            fleet: None,
        }
    }

    #[test]
    fn a_case_gives_its_cost_row_and_kind_rows() {
        let points = [
            point(10.0, 0, false),
            point(12.0, 0, false),
            point(11.0, 0, false),
        ];
        let mut params = Map::new();
        params.insert("rate_cps".into(), json!(10_000.0));
        let row = cpu_row("takt", &params, &points).unwrap();
        assert_eq!(
            (row.name.as_str(), row.unit.as_str()),
            ("cpu_per_call", "us")
        );
        assert_eq!(row.samples, vec![10.0, 12.0, 11.0]);
        assert_eq!(row.median(), Some(11.0));
        assert_eq!(row.detail["reps"].as_array().unwrap().len(), 3);
        let kinds = kind_rows("takt", &params, &points);
        // t_sip for invite; no k_rcv samples, so no k_rcv row
        assert_eq!(kinds.len(), 1);
        assert_eq!(kinds[0].name, "t_sip");
        assert_eq!(kinds[0].params["kind"], json!("invite"));
        assert_eq!(kinds[0].samples, vec![100.0, 120.0, 110.0]);
        assert!(disturbed_note("takt stateless", 10_000.0, &points).is_none());
        let bad = [point(10.0, 11, false), point(10.0, 0, true)];
        let n = disturbed_note("takt stateless", 10_000.0, &bad).unwrap();
        assert!(
            n.contains("1 lost more than 1%") && n.contains("1 generator-bound"),
            "{n}"
        );
        assert!(cpu_row("takt", &params, &[]).is_none());
    }

    #[test]
    fn bad_plans_are_refused() {
        let base = TargetSetup::new("127.0.0.1:9".parse().unwrap());
        let case = CapacityCase {
            kind: TargetKind::NullRelay,
            mode: takt_sip::proxy::Mode::Stateless,
        };
        let mut plan = FixedPlan {
            cases: vec![FixedCase {
                case,
                rate_cps: -1.0,
            }],
            base,
            reps: 1,
            net: NetKind::Loopback,
            stop: Arc::new(AtomicBool::new(false)),
            cpu_limit: None,
        };
        let never = |_| -> Result<crate::capacity::GenLoad> { unreachable!("refused first") };
        let e = run_fixed(&plan, never, |_| {}, |_| {}).unwrap_err();
        assert!(e.to_string().contains("positive"), "{e}");
        plan.reps = 0;
        assert!(run_fixed(&plan, never, |_| {}, |_| {}).is_err());
        plan.reps = 1;
        plan.cases.clear();
        assert!(run_fixed(&plan, never, |_| {}, |_| {}).is_err());
    }
}
