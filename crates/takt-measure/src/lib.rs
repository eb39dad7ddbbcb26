//! # takt-measure: what every takt measurement shares
//!
//! The base beneath the laboratory's suites (`takt-lab`, `takt-machine`)
//! and the report built on them:
//!
//! - [`result`]: [`Document`](result::Document) and
//!   [`ResultRow`](result::ResultRow), the JSON result document every
//!   measuring `takt` command prints with `--json` (described in this
//!   crate's README);
//! - [`stats`]: median, quantiles, spread, Student-t confidence intervals;
//! - [`sampler`]: warm-up, repetitions and the CPU price of each run;
//! - [`env`]: the machine block (CPU, kernel, commit, compiler, profile,
//!   steal time, load);
//! - [`table`]: the one table model for everything printed for people;
//! - [`output`]: a document's human tables and `--json` output;
//! - [`suite`]: the one suite shape ([`Suite`](suite::Suite): estimate,
//!   run with a [`RunContext`](suite::RunContext), return a document) and
//!   the measuring command built on it;
//! - [`progress`]: one indicatif bar per stage with its estimated time;
//! - [`error`]: [`MeasureError`](error::MeasureError), the crate's one error type.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

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
