//! `takt report`, the main job: run the laboratory's plan on this machine
//! (or take an earlier run's documents), write the HTML report with
//! takt-report, and store a measured run in the records.
//!
//! - [`plan`]: the stages, their commands and estimates, and what the plan
//!   reduced below the suites' own parameters;
//! - [`runner`]: the stages run as child processes of the `takt` binary,
//!   a progress bar each; Ctrl-C keeps the finished stages;
//! - [`records`]: a stored run as the report's input, a measured report
//!   stored as one run, and what changed since the last run on this
//!   machine.
//!
//! [`run`] is the whole command:
//! 1. the `--with` documents are read first, so a bad file fails at once,
//!    not after the run;
//! 2. the input comes from the report directory `--from`, the stored run
//!    `--run`, or the plan, run here with a token that follows the
//!    process's signals (takt-measure's `cancel`);
//! 3. the `--with` documents replace their stages' outcomes;
//! 4. a measured run is stored in the records, then compared with the
//!    last report run whose documents name the same machine
//!    ([`records::changes_since`]: `takt runs diff`'s verdicts); a stored
//!    run (`--run`) is compared with the one before it on its machine; a
//!    report directory (`--from`) keeps the comparison it was written with;
//! 5. the report directory is written (`index.html` beside the documents
//!    and `run.json`, the comparison included); a run that could not be
//!    stored still gets its report, then the error;
//! 6. the report's path goes to stdout, what was not measured to stderr.
//!
//! A run cut short by an interrupt still writes its report and returns
//! [`Finished::Interrupted`]; the caller's exit status says so.

pub mod plan;
pub mod records;
pub mod runner;

use std::path::{Path, PathBuf};

use serde_json::Value;
use takt_measure::cancel::{Cancel, Signal};
use takt_measure::progress::Progress;
use takt_report::input::{Changes, Outcome, ReportInput};

use crate::orchestration_error::OrchestrationError;

/// What `takt report` was asked to do.
#[derive(Clone, Debug)]
pub struct Request {
    /// The quick plan (under 10 minutes on a 2-core machine).
    pub quick: bool,
    /// The stages to run; `None`: every stage the plan runs.
    pub only: Option<plan::Only>,
    /// The report directory: `index.html` and the JSON documents beside it.
    pub out: PathBuf,
    /// Render the report directory of an earlier run again, without
    /// measuring.
    pub from: Option<PathBuf>,
    /// Render this stored run again, without measuring.
    pub run: Option<i64>,
    /// Result documents to show beside the run's; each one's suite names
    /// its section.
    pub with: Vec<PathBuf>,
    /// The records database: a measured report is stored in it, `run`
    /// reads from it.
    pub db: PathBuf,
    /// Whether the `takt` binary has the agents peers compiled in.
    pub peers: bool,
    /// Where the stages' progress and the command's remarks go.
    pub progress: Progress,
}

/// How `takt report` ended: the report is written either way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finished {
    /// Every stage this invocation ran finished (measured or not).
    Complete {
        /// The report page.
        index: PathBuf,
    },
    /// A signal cut the run short; the report says what is missing.
    Interrupted {
        /// The report page.
        index: PathBuf,
        /// The signal (the command's exit status is `128 + N`).
        signal: Signal,
    },
}

impl Finished {
    /// The report page.
    pub fn index(&self) -> &Path {
        match self {
            Finished::Complete { index } | Finished::Interrupted { index, .. } => index,
        }
    }
}

/// Runs `takt report` as `req` says (see the module docs for the steps).
pub fn run(req: &Request) -> Result<Finished, OrchestrationError> {
    let measured = req.from.is_none() && req.run.is_none();
    let with = req
        .with
        .iter()
        .map(|p| read_document(p))
        .collect::<Result<Vec<_>, _>>()?;
    let cancel = Cancel::new();
    let mut input = match (&req.from, req.run) {
        (Some(dir), _) => ReportInput::load_dir(dir).map_err(OrchestrationError::From)?,
        (None, Some(id)) => records::stored_input(&req.db, id, command_line())?,
        (None, None) => measure(req, &cancel)?,
    };
    for (path, doc) in with {
        if input.attach(doc, None).is_none() {
            return Err(OrchestrationError::WithSuite { path });
        }
    }
    // A measured run is stored before the report is written, so that the
    // report can show what changed since the last run on this machine; a
    // run that cannot be stored still gets its report, then the error.
    let stored = if measured {
        records::store_measured(&req.db, &input, &req.progress)
    } else {
        Ok(None)
    };
    let compared = match (stored.as_ref().copied(), req.run) {
        (Ok(Some(id)), _) | (Ok(None), Some(id)) => Some(records::changes_since(&req.db, id)),
        (Ok(None), None) if measured => Some(Changes::NotCompared {
            reason: "this run measured nothing to store".into(),
        }),
        (Err(e), _) => Some(Changes::NotCompared {
            reason: format!("this run could not be stored in the records ({e})"),
        }),
        // --from: as the report directory has it
        (Ok(None), None) => None,
    };
    if let Some(c) = compared {
        if let Changes::Compared(c) = &c {
            req.progress.println(&format!(
                "takt report: since run {} on this machine: {} improved, {} regressed ({})",
                c.earlier.id, c.counts.improved, c.counts.regressed, c.command
            ));
        }
        input.changes = Some(c);
    }
    let index = takt_report::render::write(&req.out, &input)?;
    stored?;
    let missing: Vec<String> = input
        .stages
        .iter()
        .filter_map(|(s, o)| match o {
            Outcome::NotMeasured { reason, .. } => Some(format!("{s} ({reason})")),
            Outcome::Measured { .. } => None,
        })
        .collect();
    req.progress
        .println(&format!("takt report: wrote {}", index.display()));
    if !missing.is_empty() {
        req.progress.println(&format!(
            "takt report: not measured: {}",
            missing.join("; ")
        ));
    }
    takt_measure::output::print(&format!("{}\n", index.display()))
        .map_err(OrchestrationError::Output)?;
    // Only a run this invocation measured was cut short (a re-rendered one
    // was complete as far as this command goes).
    Ok(if measured && runner::was_interrupted(&input) {
        Finished::Interrupted {
            index,
            // A stage is interrupted only once the token is raised, by a
            // signal unless a caller raised it.
            signal: cancel.signal().unwrap_or(Signal::Interrupt),
        }
    } else {
        Finished::Complete { index }
    })
}

/// Runs the plan; `cancel` follows the process's signals and stops it
/// after the running stage.
fn measure(req: &Request, cancel: &Cancel) -> Result<ReportInput, OrchestrationError> {
    takt_measure::cancel::watch(cancel)?;
    let opts = plan::Options {
        quick: req.quick,
        only: req
            .only
            .as_ref()
            .map_or_else(plan::planned_stages, |o| o.0.clone()),
        takt: std::env::current_exe().map_err(OrchestrationError::CurrentExe)?,
        peers: req.peers,
        out: req.out.clone(),
        command: command_line(),
        progress: req.progress.clone(),
    };
    runner::run(&opts, cancel)
}

/// Reads a `--with` document (checked for a `suite` by `attach`).
fn read_document(path: &Path) -> Result<(PathBuf, Value), OrchestrationError> {
    let text = std::fs::read_to_string(path).map_err(|source| OrchestrationError::WithRead {
        path: path.to_path_buf(),
        source,
    })?;
    let doc = serde_json::from_str(&text).map_err(|source| OrchestrationError::WithJson {
        path: path.to_path_buf(),
        source,
    })?;
    Ok((path.to_path_buf(), doc))
}

/// This process's command line as a user would type it again: `takt` and
/// the arguments (not the path the binary was started by).
fn command_line() -> String {
    std::iter::once("takt".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    /// The answer section quotes the paper from takt-report's own copy of
    /// its figures (takt-report does not depend on the SIP laboratory):
    /// they are the laboratory's published tables.
    #[test]
    fn the_answer_quotes_the_papers_tables() {
        use takt_report::paper;
        use takt_siplab::sweep::paper as tables;
        for (m, base, enhanced) in paper::CAPACITY {
            assert_eq!(tables::capacity(m), Some((base, enhanced)), "m = {m}");
        }
        let range = |col: fn(&(usize, f64, f64, f64)) -> f64| {
            let v: Vec<f64> = tables::TABLE_III.iter().map(col).collect();
            (
                v.iter().copied().fold(f64::INFINITY, f64::min),
                v.iter().copied().fold(0.0, f64::max),
            )
        };
        assert_eq!(paper::TABLE_III_DROP_LOWER, range(|r| r.2));
        assert_eq!(paper::TABLE_III_K_RCV_LOWER, range(|r| r.3));
        let higher: Vec<usize> = [2, 4, 6, 8, 16]
            .into_iter()
            .filter(|&m| tables::capacity(m).is_some_and(|(b, e)| e > b))
            .collect();
        assert_eq!(higher, paper::ENHANCED_HIGHER_AT);
    }
}
