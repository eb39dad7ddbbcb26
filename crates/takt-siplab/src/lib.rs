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
//! - [`interval`]: the confidence bounds the search uses.

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod interval;
pub mod search;
pub mod server_stats;
