//! # takt-report: takt's main job
//!
//! `takt report` runs the laboratory's plan on this machine — the machine
//! (CSE 221), agents beside their peers, SME, the SIP proxy — and writes a
//! self-contained HTML report (inline CSS and SVG; no scripts, no external
//! resources) to `takt-report/index.html`, beside the JSON result documents
//! it was made from.
//!
//! - [`input`]: what a report is made from — the run's metadata and, per
//!   stage, its result document or why it was not measured; saved to and
//!   loaded from a report directory;
//! - [`plan`]: the stages, their commands and estimates, and the runner
//!   (progress bar per stage, Ctrl-C keeps the finished stages);
//! - [`render`]: the page; [`model`]: the scaling model of "beyond this
//!   machine"; [`plot`]: inline SVG charts; [`html`] and [`figures`]: the
//!   building blocks every section shares.
//!
//! ```no_run
//! use std::path::Path;
//! // Re-render a report directory written by an earlier `takt report`.
//! let input = takt_report::input::ReportInput::load_dir(Path::new("takt-report"))?;
//! let index = takt_report::render::write(Path::new("takt-report"), &input)?;
//! println!("{}", index.display());
//! # Ok::<(), takt_report::ReportError>(())
//! ```
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod error;
pub mod figures;
pub mod html;
pub mod input;
pub mod model;
pub mod plan;
pub mod plot;
pub mod render;
mod section;

pub use error::ReportError;
