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
//! - [`output`]: the human table and `--json` output of a document.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod env;
pub mod output;
pub mod result;
pub mod sampler;
pub mod stats;

#[doc(hidden)]
pub use serde_json as __serde_json;
