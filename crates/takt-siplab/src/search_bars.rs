//! The progress of capacity searches on takt-measure's display, shared by
//! `takt sip capacity`, `sweep` and `tune`: one stage per search with its
//! current point and its trials, one for Table III's pairs, and on every
//! line the time the whole run has left — the mean trial time so far ×
//! the trials still expected (lines instead of bars when stderr is no
//! terminal).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use takt_measure::progress::{fmt_secs, Progress, Stage};

/// One finished trial as a progress line shows it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TrialLine<'a> {
    /// The trial's rate.
    pub(crate) rate_cps: f64,
    /// `ramp`, `bisect`, `grid`, `pair`.
    pub(crate) phase: &'a str,
    /// Its drop rate.
    pub(crate) drop_rate: f64,
    /// ` (generator-bound…)` or nothing.
    pub(crate) flag: &'a str,
    /// The case's trials done and expected.
    pub(crate) case_done: usize,
    /// See `case_done`.
    pub(crate) case_expected: usize,
    /// The run's trials done and expected.
    pub(crate) done: usize,
    /// See `done`.
    pub(crate) expected: usize,
}

/// Open stages of searches (by case number) and of Table III's pairs.
#[derive(Debug)]
pub(crate) struct SearchBars {
    shown: Progress,
    trial_s: f64,
    started: Instant,
    searches: HashMap<usize, Stage>,
    pairs: Option<Stage>,
}

impl SearchBars {
    /// Bars on `shown`; a trial is expected to take `trial_s` seconds.
    pub(crate) fn new(shown: Progress, trial_s: f64) -> Self {
        SearchBars {
            shown,
            trial_s,
            started: Instant::now(),
            searches: HashMap::new(),
            pairs: None,
        }
    }

    /// Opens the stage of search `case`, expected to last `trials` trials.
    pub(crate) fn open(&mut self, case: usize, label: &str, trials: usize) {
        let est = Duration::from_secs_f64(self.trial_s * trials as f64);
        self.searches.insert(case, self.shown.stage(label, est));
    }

    /// Closes every search's stage and opens Table III's, `trials` long.
    pub(crate) fn open_pairs(&mut self, trials: usize) {
        for (_, s) in self.searches.drain() {
            s.finish();
        }
        self.pairs = Some(self.shown.stage(
            "Table III pairs",
            Duration::from_secs_f64(self.trial_s * trials as f64),
        ));
    }

    /// `{rate} cps {phase} drop {d}{flag}` and `trial i/n · run ~T left`.
    fn parts(&self, t: &TrialLine<'_>) -> (String, String) {
        let per = self.started.elapsed().as_secs_f64() / t.done.max(1) as f64;
        let left = per * t.expected.saturating_sub(t.done) as f64;
        (
            format!(
                "{:.0} cps {} drop {:.4}{}",
                t.rate_cps, t.phase, t.drop_rate, t.flag
            ),
            format!(
                "trial {}/{} · run ~{} left",
                t.case_done,
                t.case_expected,
                fmt_secs(left)
            ),
        )
    }

    /// Shows a trial of search `case`; closes its stage when the search
    /// has done what it expected.
    /// Prints a line above the bars.
    pub(crate) fn println(&self, line: &str) {
        self.shown.println(line);
    }

    pub(crate) fn search_trial(&mut self, case: usize, t: &TrialLine<'_>) {
        let (point, tail) = self.parts(t);
        if let Some(s) = self.searches.get(&case) {
            s.step(&format!("{point} · {tail}"));
            if t.case_done >= t.case_expected {
                if let Some(s) = self.searches.remove(&case) {
                    s.finish();
                }
            }
        }
    }

    /// Shows a trial of Table III's pairs, `label` naming its case.
    pub(crate) fn pair_trial(&self, label: &str, t: &TrialLine<'_>) {
        let (point, tail) = self.parts(t);
        if let Some(s) = &self.pairs {
            s.step(&format!("{label} {point} · {tail}"));
        }
    }

    /// Closes what is still open: `interrupted` or `done`.
    pub(crate) fn finish(self, interrupted: bool) {
        let how = if interrupted { "interrupted" } else { "done" };
        let mut open: Vec<(usize, Stage)> = self.searches.into_iter().collect();
        open.sort_by_key(|(i, _)| *i);
        for (_, s) in open {
            s.finish_with(how);
        }
        if let Some(s) = self.pairs {
            s.finish_with(how);
        }
    }
}

/// ` (generator-bound: causes)` for a flagged trial, else nothing.
pub(crate) fn generator_flag(bound: bool, causes: &str) -> String {
    match (bound, causes) {
        (false, _) => String::new(),
        (true, "") => " (generator-bound)".to_string(),
        (true, c) => format!(" (generator-bound: {c})"),
    }
}
