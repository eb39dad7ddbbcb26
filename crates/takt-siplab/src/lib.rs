//! takt's SIP laboratory: what a SIP capacity measurement needs besides
//! the load.
//!
//! - [`target`]: the systems under test — takt-sip in its own process,
//!   Kamailio, the null relay (the kernel-bound floor), or any address —
//!   started fresh, pinned, and stopped without leftovers.
//! - [`server_stats`]: the server's side of the books from `/proc` —
//!   socket drops by port, the host's UDP error counters, CPU time and
//!   per-thread scheduler counters over a window.
//! - [`search`]: the 1%-drop capacity search over any [`search::Trial`],
//!   with its statistical decision rule.
//! - [`capacity`]: a trial of a load against a target with the server's
//!   counters around it, and the result rows of a search.
//! - [`relay`]: the null relay itself (run by `takt sip relay`).
//! - [`net`]: `--net veth`, the server in its own network namespace.
//! - [`interval`]: the confidence bounds the search uses.

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod capacity;
mod error;
pub mod interval;
pub mod net;
pub mod relay;
pub mod search;
pub mod server_stats;
pub mod target;

pub use error::{Error, Result};
