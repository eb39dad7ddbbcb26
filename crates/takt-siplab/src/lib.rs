//! # takt-siplab: the SIP laboratory
//!
//! The instruments behind `takt sip …`, after Krishnamurthy & Rouskas'
//! study of multi-threaded SIP proxies: the load, the systems under test,
//! the server's side of the books, the search for the call rate at which
//! a proxy's drop rate first exceeds 1%, and every measuring command as a
//! [`takt_measure::suite::Suite`].
//!
//! ## The commands
//! Each measuring command is an options value (its flags, defaults left
//! open) that resolves into a suite — presets and estimates are settled
//! there — which the binary runs with [`takt_measure::suite::run_command`]:
//!
//! | command | options → suite | output |
//! |---|---|---|
//! | `takt sip load` | [`load::LoadOptions`] → [`load::LoadPlan`] | `sip_load` document |
//! | `takt sip gen` | [`gen::GenOptions`] → [`gen::GenSuite`] | [`gen::GenOutput`] |
//! | `takt sip capacity` | [`capacity::CapacityOptions`] → [`capacity::CapacitySuite`] | `sip_capacity` document, drop-rate SVG |
//! | `takt sip sweep` | [`sweep::SweepOptions`] → [`sweep::SweepSuite`] | [`sweep::SweepOutput`]: tables, JSON, Markdown |
//! | `takt sip tune` | [`tune::TuneOptions`] → [`tune::TuneSuite`] | [`tune::TuneOutput`]: recommendations, JSON |
//! | `takt sip torture` | [`torture::TortureOptions`] → [`torture::TortureSuite`] | `sip_torture` document |
//!
//! `takt sip proxy` runs [`proxy_run::ProxyRun`]; the hidden `takt sip
//! relay` runs [`relay::Relay`].
//!
//! ## The instruments
//! - [`gen`]: the native load generator — a UAC and a UAS on takt-sched
//!   threads, open-loop Poisson or constant arrivals with every call's
//!   send lag recorded, retransmissions per RFC 3261, outcomes and
//!   messages per kind, and a verdict on whether the generator itself was
//!   the bottleneck.
//! - [`load`]: per-message costs (T_sip, K_rcv, K_snd) of the proxy run
//!   in this process, under SIPp or the native generator.
//! - [`target`]: the systems under test — takt-sip in its own process,
//!   Kamailio, OpenSIPS, the null relay (the kernel-bound floor), or any
//!   address — started fresh, pinned, and stopped without leftovers.
//! - [`server_stats`]: the server's side of the books from `/proc` —
//!   socket drops by port, the host's UDP error counters, CPU time and
//!   per-thread scheduler counters over a window.
//! - [`search`]: the 1%-drop capacity search over any [`search::Trial`],
//!   with its statistical decision rule.
//! - [`capacity`]: a trial of a load against a target with the server's
//!   counters around it, and the result rows of a search.
//! - [`torture`]: overload (under a CFS CPU limit where the generator
//!   cannot outrun the server), a UAS killed and restarted, garbage
//!   during live calls, a TCP connection flood, and the soak.
//! - [`sweep`]: capacity versus worker threads and scheduler profiles,
//!   with the paper's Tables I–III.
//! - [`tune`]: the best scheduler setting for one server and m, confirmed
//!   against the default by an interleaved A/B.
//! - [`tcp_flood`]: thousands of TCP connections held idle or half-open
//!   against a server, from distinct loopback addresses: the server's
//!   memory, the kernel's, and a new client's wait for an answer.
//! - [`relay`]: the null relay itself.
//! - [`proxy_run`]: the proxy in this process until stopped, and its
//!   statistics at exit.
//! - [`cpu_limit`]: `--cpu-limit`, a CPU quota on a server for a whole
//!   run (takt-host's cgroup, a cleanup-registry item).
//! - [`net`]: `--net veth`, the server in its own network namespace.
//! - [`profile`]: scheduler profiles (`default`, `server`, `enhanced`,
//!   `batch`, real-time, `poll`, base slice, any policy) applied to every
//!   thread of a server and read back; [`system`]: the machine-wide
//!   settings a run changes, recorded, restored and repaired.
//!
//! [`Error`] is the crate's one error type; an interrupted run is
//! [`Error::Interrupted`] or, where finished points are worth keeping, a
//! result that says so.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod capacity;
pub mod cpu_limit;
mod error;
pub mod fleet;
pub mod gen;
pub mod load;
pub mod profile;
pub mod proxy_run;
pub mod relay;
pub mod search;
mod search_bars;
pub mod server_stats;
pub mod sweep;
pub mod target;
pub mod tcp_flood;
pub mod torture;
pub mod tune;

pub use error::{Error, Result};
/// `--net veth`: the server in its own network namespace (takt-host's
/// `netns`).
pub use takt_host::netns as net;
/// The machine-wide settings a run changes (takt-host's `settings`).
pub use takt_host::settings as system;

/// The README's Rust examples, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExamples;
