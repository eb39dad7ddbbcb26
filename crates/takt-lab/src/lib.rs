//! # takt-lab: the laboratory
//!
//! Benchmark suites over takt's runtimes, the statistics they report and
//! the result documents every measuring `takt` subcommand prints.
//!
//! - [`result`]: [`Document`](result::Document) and [`ResultRow`](result::ResultRow),
//!   the JSON shape of `shared/CONVENTIONS.md`;
//! - [`stats`]: median, spread, Student-t confidence intervals;
//! - [`sampler`]: warm-up, repetitions and the CPU price of each run;
//! - [`env`]: the machine block (CPU, kernel, commit, steal time, load);
//! - [`output`]: the human table and `--json` output;
//! - [`sip`]: `takt sip load`, SIPp against the in-process SIP proxy.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod env;
pub mod output;
pub mod result;
pub mod sampler;
pub mod sip;
pub mod stats;
