//! The 1%-drop capacity search: the highest call rate a server carries
//! while it loses at most a threshold (default 1%) of the messages sent to
//! it — the paper's number, measured so that noise cannot inflate it.
//!
//! The search is pure logic over a [`Trial`] (one measured run at a rate),
//! written as a state machine ([`Search::next_rate`] / [`Search::record`])
//! so that several targets can take turns point by point
//! ([`run_interleaved`]) and a test can drive it with a simulated server.
//!
//! # Phases
//! 1. **Ramp**: from [`SearchConfig::start_cps`] the rate is multiplied by
//!    [`SearchConfig::ramp_factor`] while single trials pass, or divided
//!    while they fail, until one passing and one failing rate bracket the
//!    crossing.
//! 2. **Bisection** of the bracket until it is narrower than one grid step
//!    ([`SearchConfig::step`], a fraction of the rate, default 3%; or
//!    [`SearchConfig::step_cps`] calls/s, as the paper's 200 cps).
//! 3. **Grid**: points one step apart around the last passing rate
//!    ([`SearchConfig::grid_below`] below, [`SearchConfig::grid_above`]
//!    above) are each measured [`SearchConfig::reps`] times, the points
//!    taking turns (ascending, then descending, alternately) so that drift
//!    reaches them alike. If the grid missed the crossing — every point
//!    passes, or the lowest fails — a lucky single trial set the bracket:
//!    the ramp resumes from the grid's edge with a finer factor (1 + 4
//!    steps), then bisection and a new grid, at most
//!    [`SearchConfig::max_rebrackets`] times (default 3); all grid points
//!    measured count in the decision.
//!
//! # The decision
//! A grid point *passes* when the upper end of its 95% interval for the
//! drop rate (lost ÷ sent, messages at the server) is at or below the
//! threshold. The interval is the wider of two, and the argument for each:
//! - **Clopper–Pearson on the pooled messages** of all repetitions: exact
//!   for a binomial count, and honest where a normal approximation fails —
//!   at zero or a handful of drops, the usual case below capacity.
//! - **Student's t over the repetitions' drop rates**: drops at a full
//!   socket buffer come in bursts, so messages are not independent and the
//!   pooled binomial interval alone is too narrow (over-dispersion); the
//!   spread between repetitions measures that directly.
//!
//! Taking the larger upper end is conservative in both regimes. The
//! **capacity** is the highest grid rate below the lowest point that does
//! not pass — the rate at which the drop rate *first* exceeds the
//! threshold — never "the highest rate that passed once"; passing points
//! above a failing one are reported as non-monotone.
//!
//! # The generator's limit
//! A trial flagged *generator-bound* (the load generator, not the server,
//! limited it; [`TrialOutcome::generator_causes`] says which of its
//! criteria fired) is neither a pass nor a failure of the server. A busy
//! host flags a trial now and then, so only a flag that repeats counts:
//! a generator-bound trial is run once more at the same rate
//! ([`TrialRecord::rerun`] marks the first). In the ramp and bisection the
//! re-run's verdict stands, and only a second flag ends the climb; on the
//! grid a generator-bound repetition is re-run once, the flagged trial is
//! not counted, and a point is generator-bound only when a repetition and
//! its re-run both were. Every trial stays in [`SearchResult::trials`].
//!
//! A capacity the generator caps is a lower bound, "≥ L
//! (generator-bound)" ([`Capacity::AtLeast`] with [`Limit::Generator`]):
//! L is the passing grid point below the first generator-bound one, or —
//! when even the lowest grid point is generator-bound — the highest rate
//! that passed anywhere in the search (a single ramp or bisection trial
//! included) below any failing grid point. Only when nothing passed is
//! the answer [`Capacity::Below`].
//!
//! RFC 7502's zero-failure rate is reported beside it: the highest rate
//! tested such that no trial at it, or at any lower rate tested, lost a
//! message or failed a call.

use std::collections::VecDeque;

use serde::Serialize;

use crate::gen::SaturationCauses;
use crate::Error;
use takt_measure::stats::{clopper_pearson, t_interval};

/// Default drop-rate threshold (1%).
pub const DEFAULT_THRESHOLD: f64 = 0.01;
/// Default grid step, as a fraction of the rate (3%).
pub const DEFAULT_STEP: f64 = 0.03;
/// Default repetitions per grid point.
pub const DEFAULT_REPS: usize = 5;
/// Confidence of the intervals.
pub const CONFIDENCE: f64 = 0.95;

/// The grid step and bisection resolution: a fraction of the rate (the
/// default, 3%), or a fixed number of calls per second, as the paper
/// stepped its search (`200cps`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Step {
    /// A fraction of the rate, in (0, 0.5).
    Fraction(f64),
    /// Calls per second, at least 1.
    Cps(f64),
}

impl Default for Step {
    fn default() -> Step {
        Step::Fraction(DEFAULT_STEP)
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Fraction(x) => write!(f, "{x}"),
            Step::Cps(c) => write!(f, "{c}cps"),
        }
    }
}

/// `0.03` (a fraction of the rate) or `200cps` (calls per second).
impl std::str::FromStr for Step {
    type Err = Error;
    fn from_str(s: &str) -> Result<Step, Error> {
        let bad = || {
            Error::Config(format!(
                "step {s:?} is neither a fraction of the rate in (0, 0.5) nor a whole number of calls/s (e.g. 0.03 or 200cps)"
            ))
        };
        match s.strip_suffix("cps") {
            Some(n) => match n.trim().parse::<f64>() {
                Ok(c) if c.is_finite() && c >= 1.0 => Ok(Step::Cps(c.round())),
                _ => Err(bad()),
            },
            None => match s.parse::<f64>() {
                Ok(x) if x > 0.0 && x < 0.5 => Ok(Step::Fraction(x)),
                _ => Err(bad()),
            },
        }
    }
}

impl Step {
    /// The [`SearchConfig`] fields it sets: `step` (the fraction; the
    /// default beside calls/s) and `step_cps`.
    pub fn fields(self) -> (f64, Option<f64>) {
        match self {
            Step::Fraction(x) => (x, None),
            Step::Cps(c) => (DEFAULT_STEP, Some(c)),
        }
    }
}

/// What one trial measured.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct TrialOutcome {
    /// The rate asked for, calls/s.
    pub offered_cps: f64,
    /// The rate the generator achieved over the measured window, calls/s.
    pub achieved_cps: f64,
    /// Messages sent to the server.
    pub sent: u64,
    /// Messages lost at the server (sent to it but never forwarded).
    pub lost: u64,
    /// Calls that failed (error response or timeout).
    pub failed_calls: u64,
    /// The generator could not keep up (send lag, late calls, its own
    /// socket drops or no idle time): the point says nothing about the
    /// server.
    pub generator_bound: bool,
    /// Which of the generator's criteria fired (empty when it kept up, or
    /// when the source of the trial does not say).
    pub generator_causes: SaturationCauses,
}

impl TrialOutcome {
    /// Lost ÷ sent (0 when nothing was sent).
    pub fn drop_rate(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            self.lost as f64 / self.sent as f64
        }
    }

    fn verdict(&self, threshold: f64) -> Verdict {
        if self.generator_bound {
            Verdict::GeneratorBound
        } else if self.sent > 0 && self.drop_rate() <= threshold {
            Verdict::Pass
        } else {
            Verdict::Fail
        }
    }

    fn clean(&self) -> bool {
        !self.generator_bound && self.sent > 0 && self.lost == 0 && self.failed_calls == 0
    }
}

/// One measured run of a target at a rate.
pub trait Trial {
    /// Why a trial could not be run (the search stops with it).
    type Error;
    /// Runs the target at `rate_cps` and measures it.
    fn trial(&mut self, rate_cps: f64) -> Result<TrialOutcome, Self::Error>;
}

impl<T: Trial + ?Sized> Trial for &mut T {
    type Error = T::Error;
    fn trial(&mut self, rate_cps: f64) -> Result<TrialOutcome, T::Error> {
        (**self).trial(rate_cps)
    }
}

/// The search's parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchConfig {
    /// Largest acceptable drop rate (0 < threshold < 1).
    pub threshold: f64,
    /// Grid step and bisection resolution, a fraction of the rate.
    pub step: f64,
    /// Grid step and bisection resolution in calls/s instead of
    /// [`SearchConfig::step`] (the paper's `200cps`), if set.
    pub step_cps: Option<f64>,
    /// Repetitions per grid point (≥ 1; ≥ 2 for the t interval to count).
    pub reps: usize,
    /// First rate of the ramp, calls/s.
    pub start_cps: f64,
    /// The ramp never goes below this rate.
    pub min_cps: f64,
    /// The ramp never goes above this rate.
    pub max_cps: f64,
    /// Ramp multiplier (> 1).
    pub ramp_factor: f64,
    /// Grid points below the last passing rate of the bisection.
    pub grid_below: usize,
    /// Grid points above it.
    pub grid_above: usize,
    /// Times the search re-brackets when its grid misses the crossing
    /// before it decides on what it has (see the module docs); 0 decides
    /// on the first grid.
    pub max_rebrackets: usize,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            threshold: DEFAULT_THRESHOLD,
            step: DEFAULT_STEP,
            step_cps: None,
            reps: DEFAULT_REPS,
            start_cps: 1_000.0,
            min_cps: 50.0,
            max_cps: 1_000_000.0,
            ramp_factor: 2.0,
            grid_below: 2,
            grid_above: 2,
            max_rebrackets: DEFAULT_MAX_REBRACKETS,
        }
    }
}

impl SearchConfig {
    /// Checks the parameters' ranges.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: &str| Err(Error::Config(format!("capacity search: {m}")));
        if !(self.threshold > 0.0 && self.threshold < 1.0) {
            return bad("threshold must be in (0, 1)");
        }
        if !(self.step > 0.0 && self.step < 0.5) {
            return bad("step must be in (0, 0.5)");
        }
        if let Some(c) = self.step_cps {
            if !(c.is_finite() && c >= 1.0) {
                return bad("a step in calls/s must be at least 1");
            }
        }
        if self.reps == 0 {
            return bad("reps must be at least 1");
        }
        if !(self.min_cps > 0.0 && self.min_cps <= self.start_cps && self.start_cps <= self.max_cps)
        {
            return bad("rates must satisfy 0 < min <= start <= max");
        }
        if self.ramp_factor.is_nan() || self.ramp_factor <= 1.0 {
            return bad("ramp factor must exceed 1");
        }
        Ok(())
    }

    /// The same search started near a known crossing (another profile's
    /// capacity for the same server, say): its ramp begins at `cps` and
    /// steps by [`REBRACKET_STEPS`] grid steps instead of
    /// [`SearchConfig::ramp_factor`], as after a re-bracket, so a crossing
    /// within a few steps of `cps` is bracketed in two or three trials
    /// rather than a doubling ramp's climb from the cold start. A `cps`
    /// that is far off only costs more ramp trials: the result is the
    /// same search's.
    pub fn warm_started(&self, cps: f64) -> SearchConfig {
        SearchConfig {
            start_cps: whole(cps).clamp(self.min_cps, self.max_cps),
            ramp_factor: 1.0 + REBRACKET_STEPS * self.step_fraction(cps),
            ..self.clone()
        }
    }

    /// One grid step at `rate`, calls/s.
    pub fn step_at(&self, rate: f64) -> f64 {
        self.step_cps.unwrap_or(self.step * rate)
    }

    /// One grid step at `rate` as a fraction of it.
    pub fn step_fraction(&self, rate: f64) -> f64 {
        match self.step_cps {
            Some(c) if rate > 0.0 => c / rate,
            _ => self.step,
        }
    }
}

/// Which phase a trial belonged to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The geometric ramp.
    Ramp,
    /// The bisection.
    Bisect,
    /// The repeated grid.
    Grid,
}

/// A point's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Drop rate (its upper bound, on the grid) at or below the threshold.
    Pass,
    /// Above it.
    Fail,
    /// The generator limited the point.
    GeneratorBound,
}

/// One trial in the order it ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TrialRecord {
    /// Its phase.
    pub phase: Phase,
    /// The rate the search asked for.
    pub rate_cps: f64,
    /// What it measured.
    pub outcome: TrialOutcome,
    /// The search ran this trial again: it was generator-bound, and only
    /// a flag that repeats at the same rate counts (see the module docs).
    pub rerun: bool,
}

/// A grid point over its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointSummary {
    /// Rate, calls/s.
    pub rate_cps: f64,
    /// Repetitions measured.
    pub reps: usize,
    /// Messages sent to the server, all repetitions.
    pub sent: u64,
    /// Messages lost at the server, all repetitions.
    pub lost: u64,
    /// Calls failed, all repetitions.
    pub failed_calls: u64,
    /// Pooled drop rate.
    pub drop_rate: f64,
    /// Each repetition's drop rate.
    pub rep_drop_rates: Vec<f64>,
    /// Clopper–Pearson 95% interval on the pooled messages.
    pub binomial_ci95: [f64; 2],
    /// Student-t 95% interval of the mean over repetitions.
    pub reps_ci95: [f64; 2],
    /// The bound the verdict uses: the larger of the two upper ends.
    pub upper: f64,
    /// The verdict.
    pub verdict: Verdict,
    /// Every generator criterion that fired in a counted repetition.
    pub generator_causes: SaturationCauses,
}

impl PointSummary {
    fn of(rate_cps: f64, trials: &[TrialOutcome], threshold: f64) -> PointSummary {
        let sent = trials.iter().map(|t| t.sent).sum();
        let lost = trials.iter().map(|t| t.lost).sum();
        let rates: Vec<f64> = trials.iter().map(TrialOutcome::drop_rate).collect();
        let (blo, bhi) = clopper_pearson(lost, sent, CONFIDENCE);
        let (tlo, thi) = t_interval(&rates, CONFIDENCE);
        let upper = bhi.max(thi);
        let verdict = if trials.iter().any(|t| t.generator_bound) {
            Verdict::GeneratorBound
        } else if sent > 0 && upper <= threshold {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
        PointSummary {
            rate_cps,
            reps: trials.len(),
            sent,
            lost,
            failed_calls: trials.iter().map(|t| t.failed_calls).sum(),
            drop_rate: if sent == 0 {
                0.0
            } else {
                lost as f64 / sent as f64
            },
            rep_drop_rates: rates,
            binomial_ci95: [blo, bhi],
            reps_ci95: [tlo.max(0.0), thi],
            upper,
            verdict,
            generator_causes: trials
                .iter()
                .fold(SaturationCauses::NONE, |a, t| a.union(t.generator_causes)),
        }
    }
}

/// What limited a capacity that is only a lower bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    /// The load generator could not go faster.
    Generator,
    /// The search's rate range (or grid size) ended first.
    SearchCeiling,
}

/// The search's answer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Capacity {
    /// The drop rate first exceeds the threshold between these rates.
    Measured {
        /// The highest passing grid rate: the capacity.
        cps: f64,
        /// The lowest failing grid rate above it.
        first_failing_cps: f64,
    },
    /// At least this rate; something other than the server stopped the
    /// search.
    AtLeast {
        /// The highest passing rate.
        cps: f64,
        /// What stopped it.
        limit: Limit,
    },
    /// The lowest grid rate the search could settle on did not pass.
    Below {
        /// That rate.
        cps: f64,
        /// Why the search went no lower.
        limit: BelowLimit,
    },
}

/// Why a search ended with only an upper bound ([`Capacity::Below`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BelowLimit {
    /// The search's lowest rate ([`SearchConfig::min_cps`]) failed: the
    /// server loses more than the threshold at every rate it may try.
    RateFloor,
    /// The generator could not offer even the lowest rate tried.
    Generator,
    /// The lowest grid point failed after the search had re-bracketed as
    /// often as it may ([`SearchConfig::max_rebrackets`]): single trials
    /// below it may have passed, but no grid below it was measured, so the
    /// capacity is only known to be under that point (a server whose
    /// losses come and go at the tried rates).
    Unsettled,
}

impl BelowLimit {
    /// What a table writes after the bound: " (generator-bound)",
    /// " (unsettled)", or nothing for the rate floor.
    pub fn suffix(self) -> &'static str {
        match self {
            BelowLimit::RateFloor => "",
            BelowLimit::Generator => " (generator-bound)",
            BelowLimit::Unsettled => " (unsettled)",
        }
    }

    /// The name a document's bound carries (`rate_floor`, …).
    pub fn name(self) -> &'static str {
        match self {
            BelowLimit::RateFloor => "rate_floor",
            BelowLimit::Generator => "generator",
            BelowLimit::Unsettled => "unsettled",
        }
    }
}

impl Capacity {
    /// The number a table shows: the capacity or its bound.
    pub fn cps(&self) -> f64 {
        match *self {
            Capacity::Measured { cps, .. }
            | Capacity::AtLeast { cps, .. }
            | Capacity::Below { cps, .. } => cps,
        }
    }
}

impl std::fmt::Display for Capacity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Capacity::Measured { cps, .. } => write!(f, "{cps:.0}"),
            Capacity::AtLeast {
                cps,
                limit: Limit::Generator,
            } => write!(f, "≥ {cps:.0} (generator-bound)"),
            Capacity::AtLeast {
                cps,
                limit: Limit::SearchCeiling,
            } => write!(f, "≥ {cps:.0} (search ceiling)"),
            Capacity::Below { cps, limit } => write!(f, "< {cps:.0}{}", limit.suffix()),
        }
    }
}

/// Everything a search found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResult {
    /// The capacity; `None` if the search was stopped before its grid was
    /// measured.
    pub capacity: Option<Capacity>,
    /// RFC 7502's zero-failure rate (see the module docs); `None` if the
    /// lowest rate tested already lost messages.
    pub zero_failure_cps: Option<f64>,
    /// The grid points, ascending.
    pub grid: Vec<PointSummary>,
    /// Passing grid points above the first non-passing one.
    pub non_monotone_cps: Vec<f64>,
    /// Every trial in order.
    pub trials: Vec<TrialRecord>,
    /// The search ran to its end.
    pub complete: bool,
}

impl SearchResult {
    /// Whether every trial was generator-bound: the search measured the
    /// generator, not the server (false without trials).
    pub fn all_generator_bound(&self) -> bool {
        !self.trials.is_empty() && self.trials.iter().all(|t| t.outcome.generator_bound)
    }

    /// The warning a result carries when [`all_generator_bound`]: `label`
    /// names the case (`kamailio stateful m=4 default`).
    ///
    /// [`all_generator_bound`]: SearchResult::all_generator_bound
    pub fn generator_bound_warning(&self, label: &str) -> Option<String> {
        if !self.all_generator_bound() {
            return None;
        }
        let causes = self.trials.iter().fold(SaturationCauses::NONE, |a, t| {
            a.union(t.outcome.generator_causes)
        });
        Some(format!(
            "warning: {label}: every one of its {} trials was generator-bound ({causes}): the generator failed as an instrument there, and its result says nothing about the server — rerun with the generator real-time (root or CAP_SYS_NICE), on a quieter machine, or at lower rates",
            self.trials.len()
        ))
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Ramp { rate: f64 },
    Bisect { rate: f64 },
    Grid,
    Done,
}

#[derive(Debug, Clone)]
struct GridPoint {
    rate: f64,
    trials: Vec<TrialOutcome>,
}

/// A capacity search in progress (see the module docs).
#[derive(Debug, Clone)]
pub struct Search {
    cfg: SearchConfig,
    state: State,
    trials: Vec<TrialRecord>,
    /// Highest single-trial pass of ramp and bisection.
    lo: Option<f64>,
    /// Lowest single-trial non-pass above `lo`.
    hi: Option<f64>,
    /// `hi` was generator-bound rather than failing.
    hi_generator: bool,
    /// The last ramp or bisection trial was generator-bound and is being
    /// run again at the same rate.
    generator_recheck: bool,
    grid: Vec<GridPoint>,
    grid_step: f64,
    /// Grid trials still to run, in order: the rate, and whether the trial
    /// re-runs a generator-bound repetition.
    queue: VecDeque<(f64, bool)>,
    /// The ramp's current multiplier: the configured one, then a finer
    /// one after a re-bracket.
    ramp_factor: f64,
    /// Times the grid missed the crossing and the bracket was searched again.
    rebrackets: usize,
    capacity: Option<Capacity>,
}

/// Default of [`SearchConfig::max_rebrackets`]: times a search re-brackets
/// when its grid misses the crossing (a lucky single trial in the ramp or
/// bisection, or a server that drifts) before it decides on what it has.
pub const DEFAULT_MAX_REBRACKETS: usize = 3;

/// The ramp multiplier after a re-bracket, in grid steps.
pub const REBRACKET_STEPS: f64 = 4.0;

/// Rates are whole calls per second.
fn whole(rate: f64) -> f64 {
    rate.round().max(1.0)
}

impl Search {
    /// A new search.
    pub fn new(cfg: SearchConfig) -> Result<Search, Error> {
        cfg.validate()?;
        let start = whole(cfg.start_cps);
        let cfg_factor = cfg.ramp_factor;
        Ok(Search {
            cfg,
            state: State::Ramp { rate: start },
            trials: Vec::new(),
            lo: None,
            hi: None,
            hi_generator: false,
            generator_recheck: false,
            grid: Vec::new(),
            grid_step: 0.0,
            queue: VecDeque::new(),
            ramp_factor: cfg_factor,
            rebrackets: 0,
            capacity: None,
        })
    }

    /// Its configuration.
    pub fn config(&self) -> &SearchConfig {
        &self.cfg
    }

    /// The rate of the next trial; `None` when the search is over.
    pub fn next_rate(&self) -> Option<f64> {
        match self.state {
            State::Ramp { rate } | State::Bisect { rate } => Some(rate),
            State::Grid => self.queue.front().map(|&(rate, _)| rate),
            State::Done => None,
        }
    }

    /// The phase of the next trial.
    pub fn phase(&self) -> Option<Phase> {
        match self.state {
            State::Ramp { .. } => Some(Phase::Ramp),
            State::Bisect { .. } => Some(Phase::Bisect),
            State::Grid => Some(Phase::Grid),
            State::Done => None,
        }
    }

    /// Whether the search is over.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Trials run so far, and an estimate of the total.
    pub fn progress(&self) -> (usize, usize) {
        let done = self.trials.len();
        let grid_trials = (self.cfg.grid_below + self.cfg.grid_above + 1) * self.cfg.reps;
        let bisect_steps = |lo: f64, hi: f64| -> usize {
            // each step halves hi - lo until it is below step * lo
            let width = (hi - lo) / self.cfg.step_at(lo);
            if width <= 1.0 {
                0
            } else {
                width.log2().ceil() as usize
            }
        };
        let left = match self.state {
            State::Ramp { .. } => 2 + bisect_steps(1.0, self.cfg.ramp_factor) + grid_trials,
            State::Bisect { .. } => match (self.lo, self.hi) {
                (Some(lo), Some(hi)) => bisect_steps(lo, hi) + grid_trials,
                _ => grid_trials,
            },
            State::Grid => self.queue.len(),
            State::Done => 0,
        };
        (done, done + left)
    }

    /// Records the outcome of the trial at [`Search::next_rate`].
    ///
    /// # Panics
    /// If the search is over (a caller bug: it must ask `next_rate` first).
    pub fn record(&mut self, outcome: TrialOutcome) {
        let rate = self
            .next_rate()
            .expect("Search::record called after the search ended");
        let phase = self.phase().expect("a running search has a phase");
        let verdict = outcome.verdict(self.cfg.threshold);
        // A generator-bound trial is run once more at the same rate; only a
        // flag that repeats counts (a sporadic one must not end the climb
        // or make a grid point generator-bound).
        let recheck = verdict == Verdict::GeneratorBound
            && match self.state {
                State::Ramp { .. } | State::Bisect { .. } => !self.generator_recheck,
                State::Grid => self.queue.front().is_some_and(|&(_, again)| !again),
                State::Done => false,
            };
        self.trials.push(TrialRecord {
            phase,
            rate_cps: rate,
            outcome,
            rerun: recheck,
        });
        if let State::Ramp { .. } | State::Bisect { .. } = self.state {
            self.generator_recheck = recheck;
            if recheck {
                return;
            }
        }
        match self.state {
            State::Ramp { .. } => self.ramp(rate, verdict),
            State::Bisect { .. } => {
                if verdict == Verdict::Pass {
                    self.lo = Some(rate);
                } else {
                    self.hi = Some(rate);
                    self.hi_generator = verdict == Verdict::GeneratorBound;
                }
                self.after_bracket();
            }
            State::Grid => {
                self.queue.pop_front();
                if recheck {
                    self.queue.push_front((rate, true));
                    return;
                }
                if let Some(p) = self.grid.iter_mut().find(|p| p.rate == rate) {
                    p.trials.push(outcome);
                }
                if self.queue.is_empty() {
                    self.grid_round_done();
                }
            }
            State::Done => unreachable!("next_rate returned a rate"),
        }
    }

    fn ramp(&mut self, rate: f64, verdict: Verdict) {
        if verdict == Verdict::Pass {
            self.lo = Some(rate);
            if self.hi.is_some() {
                return self.after_bracket();
            }
            if rate >= self.cfg.max_cps {
                self.capacity = Some(Capacity::AtLeast {
                    cps: rate,
                    limit: Limit::SearchCeiling,
                });
                self.state = State::Done;
                return;
            }
            self.state = State::Ramp {
                rate: whole((rate * self.ramp_factor).min(self.cfg.max_cps)),
            };
        } else {
            self.hi = Some(rate);
            self.hi_generator = verdict == Verdict::GeneratorBound;
            if self.lo.is_some() {
                return self.after_bracket();
            }
            if rate <= self.cfg.min_cps {
                self.capacity = Some(Capacity::Below {
                    cps: rate,
                    limit: if self.hi_generator {
                        BelowLimit::Generator
                    } else {
                        BelowLimit::RateFloor
                    },
                });
                self.state = State::Done;
                return;
            }
            self.state = State::Ramp {
                rate: whole((rate / self.ramp_factor).max(self.cfg.min_cps)),
            };
        }
    }

    /// With `lo` and `hi` known: bisect further or start the grid.
    fn after_bracket(&mut self) {
        let (Some(lo), Some(hi)) = (self.lo, self.hi) else {
            unreachable!("called with a bracket");
        };
        let mid = whole(0.5 * (lo + hi));
        if hi - lo > self.cfg.step_at(lo) && mid > lo && mid < hi {
            self.state = State::Bisect { rate: mid };
        } else {
            self.start_grid(lo);
        }
    }

    fn start_grid(&mut self, center: f64) {
        self.grid_step = self.cfg.step_at(center).max(1.0);
        let below = self.cfg.grid_below as i64;
        let above = self.cfg.grid_above as i64;
        let mut fresh = Vec::new();
        for k in -below..=above {
            let r = whole(center + k as f64 * self.grid_step);
            if r >= self.cfg.min_cps.min(center)
                && r <= self.cfg.max_cps
                && self.grid.iter().all(|p| p.rate != r)
            {
                self.grid.push(GridPoint {
                    rate: r,
                    trials: Vec::new(),
                });
                fresh.push(r);
            }
        }
        self.grid.sort_by(|a, b| a.rate.total_cmp(&b.rate));
        self.state = State::Grid;
        self.enqueue(&fresh);
        if self.queue.is_empty() {
            self.grid_round_done();
        }
    }

    /// Queues `reps` rounds over `rates`, ascending and descending in turn.
    fn enqueue(&mut self, rates: &[f64]) {
        for rep in 0..self.cfg.reps {
            if rep.is_multiple_of(2) {
                self.queue.extend(rates.iter().map(|&r| (r, false)));
            } else {
                self.queue.extend(rates.iter().rev().map(|&r| (r, false)));
            }
        }
    }

    fn summaries(&self) -> Vec<PointSummary> {
        self.grid
            .iter()
            .filter(|p| !p.trials.is_empty())
            .map(|p| PointSummary::of(p.rate, &p.trials, self.cfg.threshold))
            .collect()
    }

    /// After a grid round: if the grid missed the crossing (every point
    /// passes, or the lowest fails) the bracket was set by a lucky single
    /// trial; search it again from the grid's edge with a finer ramp.
    /// Otherwise, or after [`SearchConfig::max_rebrackets`], decide.
    fn grid_round_done(&mut self) {
        let s = self.summaries();
        let (Some(bottom), Some(top)) = (s.first(), s.last()) else {
            self.state = State::Done;
            return;
        };
        let all_pass = s.iter().all(|p| p.verdict == Verdict::Pass);
        let lowest_fails = bottom.verdict != Verdict::Pass;
        let again = self.rebrackets < self.cfg.max_rebrackets;
        self.ramp_factor = 1.0 + REBRACKET_STEPS * self.cfg.step_fraction(top.rate_cps);
        let up = whole(top.rate_cps * self.ramp_factor);
        let down = whole(bottom.rate_cps / self.ramp_factor);
        if again && all_pass && top.rate_cps < self.cfg.max_cps && !self.hi_generator {
            self.rebrackets += 1;
            self.lo = Some(top.rate_cps);
            self.hi = None;
            self.state = State::Ramp {
                rate: up.min(self.cfg.max_cps),
            };
            return;
        }
        if again && lowest_fails && bottom.verdict == Verdict::Fail && down >= self.cfg.min_cps {
            self.rebrackets += 1;
            self.hi = Some(bottom.rate_cps);
            self.hi_generator = false;
            self.lo = None;
            self.state = State::Ramp { rate: down };
            return;
        }
        self.capacity = Some(self.decide(&s));
        self.state = State::Done;
    }

    fn decide(&self, s: &[PointSummary]) -> Capacity {
        match s.iter().position(|p| p.verdict != Verdict::Pass) {
            None => Capacity::AtLeast {
                cps: s.last().map(|p| p.rate_cps).unwrap_or(0.0),
                limit: if self.hi_generator {
                    Limit::Generator
                } else {
                    Limit::SearchCeiling
                },
            },
            // The generator, not the server, limited even the lowest grid
            // point: what passed below it still bounds the capacity.
            Some(0) if s[0].verdict == Verdict::GeneratorBound => match self.highest_pass(s) {
                Some(cps) => Capacity::AtLeast {
                    cps,
                    limit: Limit::Generator,
                },
                None => Capacity::Below {
                    cps: s[0].rate_cps,
                    limit: BelowLimit::Generator,
                },
            },
            // re-bracketing would have gone lower had it been allowed
            Some(0)
                if self.rebrackets >= self.cfg.max_rebrackets
                    && s[0].rate_cps > self.cfg.min_cps =>
            {
                Capacity::Below {
                    cps: s[0].rate_cps,
                    limit: BelowLimit::Unsettled,
                }
            }
            Some(0) => Capacity::Below {
                cps: s[0].rate_cps,
                limit: BelowLimit::RateFloor,
            },
            Some(i) if s[i].verdict == Verdict::GeneratorBound => Capacity::AtLeast {
                cps: s[i - 1].rate_cps,
                limit: Limit::Generator,
            },
            Some(i) => Capacity::Measured {
                cps: s[i - 1].rate_cps,
                first_failing_cps: s[i].rate_cps,
            },
        }
    }

    /// The highest rate that passed anywhere in the search without the
    /// generator limiting it — a single ramp or bisection trial, or a grid
    /// point — below the lowest failing grid point (if any).
    fn highest_pass(&self, s: &[PointSummary]) -> Option<f64> {
        let ceiling = s
            .iter()
            .find(|p| p.verdict == Verdict::Fail)
            .map_or(f64::INFINITY, |p| p.rate_cps);
        let singles = self
            .trials
            .iter()
            .filter(|t| t.phase != Phase::Grid)
            .filter(|t| t.outcome.verdict(self.cfg.threshold) == Verdict::Pass)
            .map(|t| t.rate_cps);
        let points = s
            .iter()
            .filter(|p| p.verdict == Verdict::Pass)
            .map(|p| p.rate_cps);
        singles
            .chain(points)
            .filter(|&r| r < ceiling)
            .max_by(f64::total_cmp)
    }

    fn zero_failure(&self) -> Option<f64> {
        let mut rates: Vec<f64> = self.trials.iter().map(|t| t.rate_cps).collect();
        rates.sort_by(f64::total_cmp);
        rates.dedup();
        let mut best = None;
        for r in rates {
            let clean = self
                .trials
                .iter()
                .filter(|t| t.rate_cps == r)
                .all(|t| t.outcome.clean());
            if !clean {
                break;
            }
            best = Some(r);
        }
        best
    }

    /// What the search has found so far (complete once it is over).
    pub fn result(&self) -> SearchResult {
        let grid = self.summaries();
        let first_bad = grid.iter().position(|p| p.verdict != Verdict::Pass);
        let non_monotone_cps = first_bad
            .map(|i| {
                grid[i..]
                    .iter()
                    .filter(|p| p.verdict == Verdict::Pass)
                    .map(|p| p.rate_cps)
                    .collect()
            })
            .unwrap_or_default();
        SearchResult {
            capacity: self.capacity,
            zero_failure_cps: self.zero_failure(),
            grid,
            non_monotone_cps,
            trials: self.trials.clone(),
            complete: self.is_done(),
        }
    }
}

/// Runs one search to its end.
pub fn run<T: Trial>(search: &mut Search, trial: &mut T) -> Result<SearchResult, T::Error> {
    while let Some(rate) = search.next_rate() {
        let o = trial.trial(rate)?;
        search.record(o);
    }
    Ok(search.result())
}

/// Runs several searches taking turns point by point (one trial of each
/// unfinished search in turn), so that slow drift of the host reaches all
/// targets alike. `on_point(i, search)` is called after each trial of
/// search `i`. On an error the searches keep every finished point
/// ([`Search::result`] of each still works); the error is returned with
/// the index of the search whose trial failed.
pub fn run_interleaved<T: Trial>(
    searches: &mut [Search],
    trials: &mut [T],
    mut on_point: impl FnMut(usize, &Search),
) -> Result<(), (usize, T::Error)> {
    assert_eq!(searches.len(), trials.len(), "one trial runner per search");
    loop {
        let mut any = false;
        for (i, (s, t)) in searches.iter_mut().zip(trials.iter_mut()).enumerate() {
            if let Some(rate) = s.next_rate() {
                let o = t.trial(rate).map_err(|e| (i, e))?;
                s.record(o);
                on_point(i, s);
                any = true;
            }
        }
        if !any {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests;
