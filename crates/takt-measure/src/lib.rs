//! # takt-measure: what every takt measurement shares
//!
//! The base beneath the laboratory's suites (`takt-bench-agents`,
//! `takt-bench-sme`, `takt-bench-remote`, `takt-machine`, `takt-siplab`)
//! and the report and records built on them:
//!
//! - [`result`]: [`Document`](result::Document) and
//!   [`ResultRow`](result::ResultRow), the JSON result document every
//!   measuring `takt` command prints with `--json` (described in this
//!   crate's README);
//! - [`stats`]: all of takt's statistics: median, quantiles, spread,
//!   Student's t (quantiles, intervals, the paired test), Clopper–Pearson
//!   bounds, the Mann–Whitney rank test;
//! - [`sampler`]: warm-up, repetitions and the CPU price of each run;
//! - [`env`](mod@env): the machine block (CPU, kernel, commit, compiler, profile,
//!   steal time, load);
//! - [`table`]: the one table model for everything printed for people,
//!   rendered as text, Markdown or HTML;
//! - [`chart`]: the one chart model (series with error bars, linear or log
//!   axes, reference lines, the legend beside the data), drawn as SVG;
//! - [`output`]: a document's human tables and `--json` output;
//! - [`cancel`]: [`Cancel`](cancel::Cancel), the one cancellation token,
//!   and the one place that installs the process's SIGINT, SIGTERM and
//!   SIGHUP handling (first signal cancels, second ends the process);
//! - [`suite`]: the one suite shape ([`Suite`](suite::Suite): estimate,
//!   run with a [`RunContext`](suite::RunContext), return a document) and
//!   the measuring command built on it;
//! - [`progress`]: one indicatif bar per stage with its estimated time;
//! - [`error`]: [`MeasureError`](error::MeasureError), the crate's one error type.
//!
//! ## Example
//!
//! A suite's measurement as a result document: five runs of a row, its
//! statistics, and the JSON `--json` prints.
//!
//! ```
//! use takt_measure::result::{Better, DocumentBuilder, ResultRow};
//!
//! let mut doc = DocumentBuilder::start("example");
//! let samples = vec![12.1, 12.4, 12.3, 13.0, 12.2]; // ns/msg, one per run
//! doc.push(ResultRow::new(
//!     "ping_pong",
//!     "takt",
//!     takt_measure::params![("threads", 1)],
//!     "ns/msg",
//!     Better::Lower,
//!     samples,
//!     0.41, // CPU seconds per run
//! ));
//! let doc = doc.finish();
//! let row = &doc.results[0];
//! let summary = row.summary.as_ref().expect("a measured row");
//! assert_eq!(summary.median, 12.3);
//! assert!(summary.ci95[0] < 12.3 && 12.3 < summary.ci95[1]);
//! let json = serde_json::to_string(&doc)?;
//! assert!(json.contains("\"suite\":\"example\""));
//! # Ok::<(), serde_json::Error>(())
//! ```
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod cancel;
pub mod chart;
pub mod env;
pub mod error;
pub mod output;
pub mod progress;
pub mod result;
pub mod sampler;
pub mod stats;
pub mod suite;
pub mod table;

#[doc(hidden)]
pub use serde_json as __serde_json;
