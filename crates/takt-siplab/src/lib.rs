//! # takt-siplab: the SIP laboratory
//!
//! The instruments behind `takt sip gen` and `takt sip capacity`, after
//! Krishnamurthy & Rouskas' study of multi-threaded SIP proxies: the load,
//! the systems under test, the server's side of the books, and the search
//! for the call rate at which a proxy's drop rate first exceeds 1%.
//!
//! - [`gen`]: the native load generator — a UAC and a UAS on takt-sched
//!   threads, open-loop Poisson or constant arrivals with every call's
//!   send lag recorded, retransmissions per RFC 3261, outcomes and
//!   messages per kind, and a verdict on whether the generator itself was
//!   the bottleneck.
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
//! - [`torture`]: `takt sip torture` — overload (under a CFS CPU limit
//!   where the generator cannot outrun the server), a UAS killed and
//!   restarted, garbage during live calls, and the soak.
//! - [`sweep`]: capacity versus worker threads and scheduler profiles,
//!   with the paper's Tables I–III (`takt sip sweep`).
//! - [`tune`]: the best scheduler setting for one server and m, confirmed
//!   against the default by an interleaved A/B (`takt sip tune`).
//! - [`conn_flood`]: thousands of TCP connections held idle or half-open
//!   against a server, from distinct loopback addresses: the server's
//!   memory, the kernel's, and a new client's wait for an answer.
//! - [`relay`]: the null relay itself (run by `takt sip relay`).
//! - [`net`]: `--net veth`, the server in its own network namespace.
//! - [`interval`]: the confidence bounds the search uses.
//! - [`profile`]: scheduler profiles (`default`, `server`, `enhanced`,
//!   `batch`, real-time, `poll`, base slice, any policy) applied to every
//!   thread of a server and read back; [`system`]: the machine-wide
//!   settings a run changes, recorded, restored and repaired.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod capacity;
pub mod conn_flood;
mod error;
pub mod gen;
pub mod interval;
pub mod profile;
pub mod relay;
pub mod search;
pub mod server_stats;
pub mod sweep;
pub mod target;
pub mod torture;
pub mod tune;

pub use error::{Error, Result};
/// `--net veth` (now in takt-host's `netns`).
pub use takt_host::netns as net;
/// Machine-wide settings (now in takt-host's `settings`).
pub use takt_host::settings as system;
