//! `takt sip tune` as a [`Suite`]: its flags as [`TuneOptions`], resolved
//! into a [`TuneSuite`] — a sweep of one (target, mode, m) over the
//! [`candidates`](super::candidates) within a time budget — whose
//! [`TuneOutput`] carries the recommendations as result rows and text and
//! writes `tune.json` and the plots to the output directory.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Map};
use takt_measure::result::{Better, Document, ResultRow};
use takt_measure::suite::{RunContext, Suite, SuiteOutput};
use takt_sched::{CpuSet, SchedPolicy};
use takt_sip::proxy::Mode;
use takt_sip::transport::WorkerModel;

use super::{candidates, recommend, render, Recommendation, ALPHA};
use crate::capacity::MIN_CALLS;
use crate::error::{io, Error, Result};
use crate::gen::GenPolicy;
use crate::search::SearchConfig;
use crate::sweep::{
    estimate_secs, gen_config, start_rates, write_json, write_plots, CompareWhich, SweepOutcome,
    SweepPlan, SweepSuite,
};
use crate::target::{placement, TargetKind, TargetSetup};

/// The document's file in the output directory.
pub const JSON_FILE: &str = "tune.json";

/// What `takt sip tune` was asked for.
#[derive(Debug, Clone)]
pub struct TuneOptions {
    /// The server: `takt`, `kamailio` or `ip:port`.
    pub target: String,
    /// Worker threads (takt) or children (Kamailio).
    pub workers: usize,
    /// Proxy mode.
    pub mode: Mode,
    /// takt's worker model.
    pub model: WorkerModel,
    /// Time budget, minutes.
    pub budget_min: f64,
    /// Repetitions per grid point.
    pub reps: usize,
    /// A/B pairs.
    pub pairs: usize,
    /// Seconds of calls per trial.
    pub window: f64,
    /// First ramp rate (default: per target).
    pub start_cps: Option<f64>,
    /// Highest rate tried.
    pub max_cps: f64,
    /// The server's CPUs (default: the last CPU).
    pub cpus: Option<CpuSet>,
    /// The generator's CPUs.
    pub gen_cpus: Option<CpuSet>,
    /// The generator's policy.
    pub gen_sched: Option<SchedPolicy>,
    /// UAC source ports.
    pub ports: usize,
    /// Where the artefacts go (`None`: nowhere).
    pub out: Option<PathBuf>,
}

/// A resolved tune.
#[derive(Debug, Clone)]
pub struct TuneSuite {
    /// The sweep over the candidates.
    pub sweep: SweepSuite,
    /// When the run stops (after the trial in progress).
    pub budget: Duration,
}

impl TuneOptions {
    /// The tune these options ask for.
    pub fn resolve(self) -> Result<TuneSuite> {
        if !(self.budget_min > 0.0 && self.budget_min.is_finite()) {
            return Err(Error::Config(format!(
                "--budget {} is not a positive number of minutes",
                self.budget_min
            )));
        }
        let kind = match self.target.parse::<TargetKind>()? {
            TargetKind::NullRelay => {
                return Err(Error::Config(
                    "the null relay has no scheduler setting to tune".into(),
                ))
            }
            k => k.with_model(self.model),
        };
        let (server_cpus, gen_cpus) = placement(self.cpus.as_ref(), self.gen_cpus.as_ref());
        let mut base = TargetSetup::new("127.0.0.1:9".parse().expect("literal"));
        base.cpus = Some(server_cpus.clone());
        let search = SearchConfig {
            reps: self.reps,
            grid_below: 1,
            grid_above: 1,
            start_cps: self.start_cps.unwrap_or(1_000.0).min(self.max_cps),
            min_cps: SearchConfig::default().min_cps.min(self.max_cps),
            max_cps: self.max_cps,
            ..SearchConfig::default()
        };
        let profiles = candidates();
        let plan = SweepPlan {
            targets: vec![kind],
            modes: vec![self.mode],
            workers: vec![self.workers],
            profiles: profiles.clone(),
            base,
            search,
            start_cps: match self.start_cps {
                Some(_) => Vec::new(),
                None => start_rates(),
            },
            pairs: self.pairs,
            compare: CompareWhich::BestCapacity,
            sampler_cpus: Some(gen_cpus.clone()),
            stop: Default::default(),
            servers: Default::default(),
        };
        let drain = Duration::from_millis(500);
        let gen_policy = GenPolicy::choose(self.gen_sched)?.placed(&server_cpus, &gen_cpus);
        let gen = gen_config(&gen_cpus, &gen_policy, self.ports, drain);
        let trial_s = self.window + drain.as_secs_f64() + 0.7;
        let estimate_s = estimate_secs(profiles.len(), 1, 2, self.reps, self.pairs, trial_s);
        let describe = format!(
            "{} {} m={}: {} settings by capacity, then the best against default in {} interleaved pairs; budget {} minutes",
            self.target,
            match self.mode {
                Mode::Stateless => "stateless",
                Mode::Stateful => "stateful",
            },
            self.workers,
            profiles.len(),
            self.pairs,
            self.budget_min
        );
        Ok(TuneSuite {
            sweep: SweepSuite {
                plan,
                gen,
                gen_policy,
                window: Duration::from_secs_f64(self.window),
                min_calls: MIN_CALLS,
                trial_s,
                out: self.out,
                fleet: None,
                estimate_s,
                describe,
            },
            budget: Duration::from_secs_f64(self.budget_min * 60.0),
        })
    }
}

/// A finished tune.
#[derive(Debug, Clone)]
pub struct TuneOutput {
    /// The sweep over the candidates.
    pub outcome: SweepOutcome,
    /// One recommendation per (target, mode, m).
    pub recommendations: Vec<Recommendation>,
    /// The result document (suite `sip_tune`).
    pub doc: Document,
    /// Files written to the output directory (the document).
    pub written: Vec<PathBuf>,
    /// SVG plots written beside it.
    pub plots: usize,
}

impl Serialize for TuneOutput {
    /// The result document.
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.doc.serialize(s)
    }
}

impl SuiteOutput for TuneOutput {
    fn document(&self) -> &Document {
        &self.doc
    }

    /// The warnings for cases the generator bounded, then each
    /// recommendation with its evidence.
    fn render(&self) -> String {
        let mut text: String = self
            .outcome
            .generator_bound_warnings()
            .into_iter()
            .map(|w| w + "\n")
            .collect();
        text.extend(self.recommendations.iter().map(render));
        text
    }
}

impl TuneOutput {
    /// Writes `tune.json` and the sweep's SVG plots into `dir` (made if
    /// missing); returns the document's path and the number of plots.
    pub fn write_artefacts(&self, dir: &Path) -> Result<(Vec<PathBuf>, usize)> {
        std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
        let json = dir.join(JSON_FILE);
        write_json(&self.doc, &json)?;
        let plots = write_plots(&self.outcome, dir)?;
        Ok((vec![json], plots))
    }
}

/// The `tune_gain` row of a recommendation with a gain (%, the
/// recommendation and the command in `detail`); `None` without one (the
/// recommendation then goes into the document's notes).
pub fn gain_row(r: &Recommendation) -> Option<ResultRow> {
    let g = r.gain_pct?;
    let mut params = Map::new();
    params.insert("mode".into(), r.mode.into());
    params.insert("workers".into(), r.workers.into());
    params.insert("test".into(), "paired t, two-sided".into());
    params.insert("alpha".into(), ALPHA.into());
    let mut d = Map::new();
    d.insert("recommendation".into(), json!(r));
    d.insert("command".into(), json!(r.command()));
    Some(
        ResultRow::new(
            "tune_gain",
            r.target,
            params,
            "%",
            Better::Higher,
            vec![g],
            0.0,
        )
        .with_detail(d),
    )
}

/// The sweep's document as suite `sip_tune`, with a `tune_gain` row (%,
/// the recommendation and the command in `detail`) per recommendation
/// that has a gain, and a note for each that has none.
pub fn document(suite: &SweepSuite, outcome: &SweepOutcome, recs: &[Recommendation]) -> Document {
    let mut doc = outcome.document(&suite.plan);
    suite.gen_policy.stamp(&mut doc);
    doc.suite = "sip_tune".into();
    for r in recs {
        match gain_row(r) {
            Some(row) => doc.results.push(row),
            None => doc.notes.push(format!("tune: {}", json!(r))),
        }
    }
    doc
}

impl Suite for TuneSuite {
    type Output = TuneOutput;
    type Error = Error;

    fn name(&self) -> &str {
        "sip tune"
    }

    fn estimate(&self) -> Duration {
        Suite::estimate(&self.sweep)
    }

    fn describe(&self) -> String {
        Suite::describe(&self.sweep)
    }

    /// Runs the sweep until it is done or the budget is spent (then it
    /// stops after the trial in progress, as on Ctrl-C), recommends, and
    /// writes the artefacts to the output directory if there is one.
    fn run(&self, ctx: &RunContext) -> Result<TuneOutput> {
        let (done, budget_over) = mpsc::channel::<()>();
        let timer = {
            let (shown, cancel, budget) =
                (ctx.progress().clone(), ctx.cancel().clone(), self.budget);
            std::thread::Builder::new()
                .name("tune-budget".into())
                .spawn(move || {
                    if budget_over.recv_timeout(budget) == Err(mpsc::RecvTimeoutError::Timeout) {
                        shown.println(
                            "takt sip tune: the budget is spent; stopping after this trial",
                        );
                        cancel.cancel();
                    }
                })
                .map_err(io("starting the budget timer"))?
        };
        let outcome = self.sweep.run_outcome(ctx);
        drop(done);
        let _ = timer.join();
        let outcome = outcome?;
        let recommendations = recommend(&outcome);
        let doc = document(&self.sweep, &outcome, &recommendations);
        let mut out = TuneOutput {
            outcome,
            recommendations,
            doc,
            written: Vec::new(),
            plots: 0,
        };
        if let Some(dir) = &self.sweep.out {
            (out.written, out.plots) = out.write_artefacts(dir)?;
        }
        Ok(out)
    }
}
