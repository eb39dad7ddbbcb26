//! One shape for every suite: estimate its duration, run with a
//! [`RunContext`] (progress and cancellation), return a document.
//!
//! A suite's options value *is* the suite, or resolves into it:
//! `takt_bench_agents::Options`, `takt_bench_sme::SmeBench`,
//! `takt_bench_remote::Options`, `takt_machine::Config`, and takt-siplab's
//! `load::LoadPlan`, `capacity::CapacitySuite`, `sweep::SweepSuite`,
//! `tune::TuneSuite`, `torture::TortureSuite` and `gen::GenSuite`
//! implement [`Suite`]. [`run_suite`] runs one
//! inside a progress stage of its estimated duration; [`run_command`] is
//! what a `takt` measuring command does: announce, run with Ctrl-C
//! cancelling, print the tables or the JSON document.
//!
//! ```
//! use std::time::Duration;
//! use takt_measure::result::{Better, Document, DocumentBuilder, ResultRow};
//! use takt_measure::suite::{run_suite, RunContext, Suite};
//!
//! #[derive(Debug)]
//! struct Noop;
//!
//! impl Suite for Noop {
//!     type Output = Document;
//!     type Error = std::io::Error;
//!     fn name(&self) -> &str { "noop" }
//!     fn estimate(&self) -> Duration { Duration::from_millis(1) }
//!     fn run(&self, ctx: &RunContext) -> Result<Document, std::io::Error> {
//!         let mut doc = DocumentBuilder::start("noop");
//!         ctx.step("measuring nothing");
//!         let row = ResultRow::new("nothing", "takt", Default::default(), "ns",
//!             Better::Lower, vec![1.0; 5], 0.0);
//!         doc.push(row);
//!         Ok(doc.finish())
//!     }
//! }
//!
//! let doc = run_suite(&Noop, &RunContext::quiet()).unwrap();
//! assert_eq!(doc.results[0].median(), Some(1.0));
//! ```

use std::time::Duration;

use serde::Serialize;

use crate::error::MeasureError;
use crate::output;
use crate::progress::{Progress, Stage};
use crate::result::Document;

/// The cancellation token, re-exported from its home [`crate::cancel`].
pub use crate::cancel::Cancel;

/// What a run carries: where progress goes and whether to stop.
#[derive(Clone, Debug)]
pub struct RunContext {
    progress: Progress,
    cancel: Cancel,
}

impl RunContext {
    /// A context over `progress` and `cancel`.
    pub fn new(progress: Progress, cancel: Cancel) -> Self {
        RunContext { progress, cancel }
    }

    /// No progress output, never cancelled (library use, tests).
    pub fn quiet() -> Self {
        RunContext::new(Progress::hidden(), Cancel::new())
    }

    /// The progress display.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// The cancellation flag.
    pub fn cancel(&self) -> &Cancel {
        &self.cancel
    }

    /// Whether the run should stop at the next step.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Opens a progress stage (see [`Progress::stage`]).
    pub fn stage(&self, name: impl Into<String>, estimate: Duration) -> Stage {
        self.progress.stage(name, estimate)
    }

    /// Reports a step of the innermost open stage.
    pub fn step(&self, msg: &str) {
        self.progress.step(msg);
    }
}

/// What a suite returns: a result document, possibly with more beside it
/// (the machine suite's description, plots, comparisons).
pub trait SuiteOutput: Serialize {
    /// The result document.
    fn document(&self) -> &Document;
    /// The human rendering (tables, notes, machine line).
    fn render(&self) -> String;
}

impl SuiteOutput for Document {
    fn document(&self) -> &Document {
        self
    }
    fn render(&self) -> String {
        output::render(self)
    }
}

/// A measurement suite; the value holds its options.
pub trait Suite {
    /// The document type it returns.
    type Output: SuiteOutput;
    /// Its crate's error type.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The suite's name (`agents`, `sme`, `machine`, `sip-load`).
    fn name(&self) -> &str;

    /// Expected wall time with these options on a 2-core machine.
    fn estimate(&self) -> Duration;

    /// One line on what will run (options that change the results).
    fn describe(&self) -> String {
        String::new()
    }

    /// Whether the suite handles SIGINT/SIGTERM itself (then
    /// [`run_command`] does not [`watch`](crate::cancel::watch) its
    /// token).
    fn handles_signals(&self) -> bool {
        false
    }

    /// Runs the suite: reports steps through `ctx`, stops early when
    /// `ctx` is cancelled (returning an error, or a document that says
    /// what is missing).
    fn run(&self, ctx: &RunContext) -> Result<Self::Output, Self::Error>;
}

/// Runs `suite` inside a progress stage of its estimated duration.
pub fn run_suite<S: Suite>(suite: &S, ctx: &RunContext) -> Result<S::Output, S::Error> {
    run_staged(suite, ctx, suite.estimate())
}

/// [`run_suite`] with the estimate already made (some suites calibrate to
/// estimate).
fn run_staged<S: Suite>(
    suite: &S,
    ctx: &RunContext,
    estimate: Duration,
) -> Result<S::Output, S::Error> {
    let stage = ctx.stage(suite.name(), estimate);
    let out = suite.run(ctx);
    match (&out, ctx.is_cancelled()) {
        (Err(_), _) => stage.finish_with("failed"),
        (Ok(_), true) => stage.finish_with("interrupted"),
        (Ok(_), false) => stage.finish(),
    }
    out
}

/// A measuring command: announces `suite` on stderr with its estimate,
/// runs it with progress ([`Progress::auto`]) and SIGINT, SIGTERM and
/// SIGHUP cancelling it ([`crate::cancel`]),
/// and prints the JSON document (`json`) or the tables on stdout; returns
/// what the suite returned (for `--record`).
pub fn run_command<S: Suite>(
    command: &str,
    suite: &S,
    json: bool,
) -> Result<S::Output, MeasureError> {
    let ctx = RunContext::new(Progress::auto(), Cancel::new());
    if !suite.handles_signals() {
        crate::cancel::watch(ctx.cancel())?;
    }
    let describe = suite.describe();
    let estimate = suite.estimate();
    ctx.progress().println(&format!(
        "{command}{}{}: expected about {}",
        if describe.is_empty() { "" } else { " " },
        describe,
        crate::progress::fmt_secs(estimate.as_secs_f64())
    ));
    let out = run_staged(suite, &ctx, estimate).map_err(|e| {
        if ctx.is_cancelled() {
            MeasureError::Interrupted {
                suite: suite.name().into(),
                signal: ctx.cancel().signal(),
            }
        } else {
            MeasureError::Suite(Box::new(e))
        }
    })?;
    let text = if json {
        output::to_json(&out)?
    } else {
        out.render()
    };
    output::print(&text)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::DocumentBuilder;

    #[derive(Debug)]
    struct Stops;

    impl Suite for Stops {
        type Output = Document;
        type Error = std::io::Error;
        fn name(&self) -> &str {
            "stops"
        }
        fn estimate(&self) -> Duration {
            Duration::from_secs(1)
        }
        fn run(&self, ctx: &RunContext) -> Result<Document, std::io::Error> {
            ctx.cancel().cancel();
            if ctx.is_cancelled() {
                return Err(std::io::Error::other("cancelled"));
            }
            Ok(DocumentBuilder::start("stops").finish())
        }
    }

    #[test]
    fn cancellation_reaches_the_suite() {
        let ctx = RunContext::quiet();
        assert!(run_suite(&Stops, &ctx).is_err());
        assert!(ctx.is_cancelled());
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let c = Cancel::from_flag(flag.clone());
        c.cancel();
        assert!(flag.load(std::sync::atomic::Ordering::Acquire));
    }
}
