//! The whole page: the run's summary, the answer to the scheduler
//! study's question, what changed since the last run on this machine, one
//! section per stage (or why it was not measured), and the scaling model.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use takt_measure::result::Document;

use crate::error::ReportError;
use crate::html::{esc, page, Cell, CellTable};
use crate::input::{Outcome, ReportInput, Stage};
use crate::section;

/// The report's file name inside the output directory.
pub const INDEX: &str = "index.html";

/// The answer section's id and title: the first section after the run's
/// summary.
pub const ANSWER: &str = "answer";
const ANSWER_TITLE: &str = "The answer: capacity versus threads and scheduler settings";

/// The id and title of the section on what changed since the last report
/// run on this machine.
pub const CHANGES: &str = "changes";
const CHANGES_TITLE: &str = "What changed since the last run on this machine";

/// Why a stage that the run does not list has no section.
const NOT_PLANNED: &str = "not in --only";

fn not_measured(reason: &str, command: Option<&str>) -> String {
    let mut out = format!(
        "<p class=\"missing\"><strong>Not measured:</strong> {}.",
        esc(reason)
    );
    if let Some(c) = command {
        let _ = write!(out, " To measure it: <code>{}</code>", esc(c));
    }
    out.push_str("</p>\n");
    out
}

/// The section text of a measured stage whose document is not a takt
/// result document.
fn not_readable(e: &serde_json::Error) -> String {
    format!(
        "<p class=\"missing\"><strong>Not readable:</strong> the stage's document is not a takt result document ({}).</p>\n",
        esc(&e.to_string())
    )
}

/// Renders the report as one self-contained HTML page.
pub fn render(input: &ReportInput) -> String {
    let meta = &input.meta;
    let mut body = String::new();
    let _ = write!(
        body,
        "<header>\n<h1>takt report</h1>\n<p class=\"lede\">What this machine does with takt's runtimes: the machine itself, agents, \
         synchronous message exchange, the SIP proxy and remote agents — each beside its peers and published figures, with the command \
         that reproduces every figure.</p>\n<dl class=\"meta\"><dt>command</dt><dd><code>{}</code></dd>\
         <dt>started</dt><dd>{}</dd><dt>wall time</dt><dd>{:.0} s</dd><dt>plan</dt><dd>{}</dd>",
        esc(&meta.command),
        esc(&meta.started),
        meta.wall_s,
        if meta.quick { "quick (reduced parameters)" } else { "default" },
    );
    if let Some(id) = &meta.run_id {
        let _ = write!(body, "<dt>stored run</dt><dd>{}</dd>", esc(id));
    }
    body.push_str("</dl>\n");
    if !meta.reductions.is_empty() {
        body.push_str("<details open><summary>What the plan reduced</summary><ul>\n");
        for r in &meta.reductions {
            let _ = writeln!(body, "<li>{}</li>", esc(r));
        }
        body.push_str("</ul></details>\n");
    }
    // The stages at a glance.
    let mut t = CellTable::new(["stage", "status", "wall time (s)", "command"]);
    for stage in Stage::ALL {
        let (status, wall, cmd) = match input.outcome(stage) {
            Some(Outcome::Measured {
                command, wall_s, ..
            }) => ("measured".to_string(), Cell::num(*wall_s), command.clone()),
            Some(Outcome::NotMeasured { reason, command }) => (
                format!("not measured: {reason}"),
                Cell::Empty,
                command.clone().unwrap_or_default(),
            ),
            None => (
                format!("not measured: {NOT_PLANNED}"),
                Cell::Empty,
                String::new(),
            ),
        };
        t.row(vec![
            Cell::Html(format!(
                "<a href=\"#{}\">{}</a>",
                stage.name(),
                esc(stage.title())
            )),
            Cell::text(status),
            wall,
            Cell::text(cmd),
        ]);
    }
    body.push_str(&t.render());
    body.push_str("<nav><ul>");
    for (id, title) in [(ANSWER, ANSWER_TITLE), (CHANGES, CHANGES_TITLE)] {
        let _ = write!(body, "<li><a href=\"#{id}\">{}</a></li>", esc(title));
    }
    for stage in Stage::ALL {
        let _ = write!(
            body,
            "<li><a href=\"#{}\">{}</a></li>",
            stage.name(),
            esc(stage.title())
        );
    }
    body.push_str("<li><a href=\"#beyond\">Beyond this machine</a></li></ul></nav>\n</header>\n");

    // The answer first, then what changed since the last run here.
    let _ = writeln!(
        body,
        "<section id=\"{ANSWER}\">\n<h2>{}</h2>\n{}</section>",
        esc(ANSWER_TITLE),
        section::answer::render(input)
    );
    let _ = writeln!(
        body,
        "<section id=\"{CHANGES}\">\n<h2>{}</h2>\n{}</section>",
        esc(CHANGES_TITLE),
        section::changes::render(input.changes.as_ref())
    );

    let mut docs: Vec<(Stage, Document)> = Vec::new();
    for stage in Stage::ALL {
        let _ = writeln!(
            body,
            "<section id=\"{}\">\n<h2>{}</h2>",
            stage.name(),
            esc(stage.title())
        );
        match input.outcome(stage) {
            None => body.push_str(&not_measured(NOT_PLANNED, None)),
            Some(Outcome::NotMeasured { reason, command }) => {
                body.push_str(&not_measured(reason, command.as_deref()))
            }
            Some(Outcome::Measured {
                command, document, ..
            }) => match serde_json::from_value::<Document>(document.clone()) {
                Err(e) => body.push_str(&not_readable(&e)),
                Ok(doc) => {
                    body.push_str(&match stage {
                        Stage::Machine => section::machine::render(document, &doc, command),
                        Stage::Agents => section::agents::render(&doc, command),
                        Stage::Sme => section::sme::render(&doc, command),
                        Stage::Sip => section::sip::render(&doc, command),
                        Stage::Capacity => section::capacity::render(&doc, command),
                        Stage::Sweep => section::sweep::render(&doc, command),
                        Stage::Robustness => section::robustness::render(&doc, command),
                        Stage::Remote => section::remote::render(&doc, command),
                    });
                    docs.push((stage, doc));
                }
            },
        }
        body.push_str("</section>\n");
    }
    let doc_of = |s: Stage| docs.iter().find(|(d, _)| *d == s).map(|(_, d)| d);
    body.push_str("<section id=\"beyond\">\n<h2>Beyond this machine</h2>\n");
    body.push_str(&section::beyond::render(
        doc_of(Stage::Sme),
        doc_of(Stage::Agents),
        doc_of(Stage::Sip),
    ));
    body.push_str("</section>\n");
    let _ = writeln!(
        body,
        "<footer>Made by <code>{}</code> from the JSON documents beside this file (<code>run.json</code> lists them). \
         Every number above is in them with its raw samples.</footer>",
        esc(&meta.command)
    );
    page("takt report", &body)
}

/// Writes the documents, the manifest and `index.html` into `dir`;
/// returns the report's path.
pub fn write(dir: &Path, input: &ReportInput) -> Result<PathBuf, ReportError> {
    input.save_dir(dir)?;
    let path = dir.join(INDEX);
    std::fs::write(&path, render(input)).map_err(|e| ReportError::io(&path, e))?;
    Ok(path)
}
