//! # takt-report: result documents to one HTML page
//!
//! The renderer of `takt report`: from the result documents of the
//! laboratory's stages — the machine (CSE 221), agents beside their peers,
//! SME, the SIP proxy's per-message costs and capacity, the scheduler
//! study, robustness, remote agents — it makes one self-contained HTML
//! page (inline CSS and SVG; no scripts, no external resources), every
//! figure with the command that reproduces it.
//!
//! The crate renders; it does not measure. Running the plan, reading and
//! storing the run records are takt-lab's (`takt_lab::report`). It depends
//! on takt-measure's document model only.
//!
//! - [`input`]: what a report is made from — the run's metadata and, per
//!   stage, its result document or why it was not measured; the report
//!   directory (`run.json` beside the documents) saved and loaded;
//! - [`render`]: the page, and the directory written with `index.html`;
//! - [`scaling_model`]: the scaling model of "beyond this machine";
//! - [`html`] and [`provenance`]: the building blocks every section
//!   shares (tables, escaping; the command, method, spread and
//!   disturbance every figure carries).
//!
//! Tables and charts are takt-measure's one table model (its HTML
//! renderer) and one chart model (inline SVG).
//!
//! Contract: the page opens with the answer to the scheduler study's
//! question (from the sweep document, or without one the command that
//! makes it and what the capacity stage measured) and what changed since
//! the last report run on this machine ([`input::Changes`]); then every
//! stage of [`input::Stage::ALL`] gets a section; a stage without a
//! document, or with a document that is not a takt result document, says
//! why in its section instead of failing the page; a stage's section
//! renders from its own document only, and "beyond this machine" from the
//! SME, agents and SIP documents. [`paper`] holds the figures the answer
//! quotes from the SIP paper.
//!
//! A report from a document made here (`takt report` runs the suites as
//! child processes and renders their documents the same way); a stage
//! without a document says why in its section:
//!
//! ```
//! use takt_measure::result::{Better, DocumentBuilder, ResultRow};
//! use takt_report::input::{Outcome, ReportInput, RunMeta, Stage};
//!
//! let mut doc = DocumentBuilder::start("sme");
//! doc.push(ResultRow::new(
//!     "sync_cost",
//!     "takt",
//!     takt_measure::params![("executor", "static"), ("threads", 2)],
//!     "us/cycle",
//!     Better::Lower,
//!     vec![0.61, 0.58, 0.66, 0.60, 0.59],
//!     0.02,
//! ));
//! let sme = serde_json::to_value(doc.finish()).expect("a document is JSON");
//! let input = ReportInput {
//!     meta: RunMeta {
//!         command: "takt report --only sme".into(),
//!         started: "2026-11-24T12:00:00Z".into(),
//!         wall_s: 20.0,
//!         quick: true,
//!         reductions: Vec::new(),
//!         run_id: None,
//!     },
//!     stages: vec![
//!         (Stage::Sme, Outcome::Measured { command: "takt bench sme --json".into(), wall_s: 20.0, document: sme }),
//!         (Stage::Sip, Outcome::NotMeasured { reason: "not in --only".into(), command: None }),
//!     ],
//!     changes: None,
//! };
//! let dir = std::env::temp_dir().join(format!("takt-report-doc-{}", std::process::id()));
//! // index.html beside sme.json and the manifest run.json
//! let index = takt_report::render::write(&dir, &input)?;
//! let html = std::fs::read_to_string(&index).expect("just written");
//! assert!(html.contains("<code>takt bench sme --json</code>"));
//! // the directory renders again without measuring (takt report --from DIR)
//! assert_eq!(takt_report::input::ReportInput::load_dir(&dir)?, input);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), takt_report::ReportError>(())
//! ```
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod error;
pub mod html;
pub mod input;
pub mod provenance;
pub mod render;
pub mod scaling_model;
mod section;

pub use error::ReportError;
pub use section::answer::paper;
