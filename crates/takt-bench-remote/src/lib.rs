//! # takt-bench-remote: `takt bench remote`
//!
//! Agents in two nodes over NATS (takt-remote),
//! beside bare async-nats request/reply, raw TCP with `TCP_NODELAY`, raw
//! TCP with Nagle on and split writes, and ractor_cluster (ractor's own
//! remoting, direct TCP without a broker; reported with no ratio target),
//! in the same run.
//!
//! - `rtt`: back-to-back round trips of 64 B, 1 KiB and 64 KiB (µs per
//!   round trip, the mean of each run).
//! - `paced_rtt`: one 64 B round trip every 75, 80 and 100 ms — the seed's
//!   case, where SObjectizer's transport stalled — for 60 s per pace (4 s
//!   with `--quick`), every implementation at once; the rows are the p50,
//!   p99, p99.9 and max of each fifth of the window. Repeated under each
//!   `--idle-latency` limit (`none,0`: without and with takt-sched's
//!   idle-latency hold, `IdleLatency`; a hold needs root, else the run
//!   says so in its notes).
//! - `saturated`: 1, 16, 64 and 256 round trips in flight (round trips/s),
//!   for `takt`, `takt-inline` (the same echo answered on the answering
//!   node's bridge thread, `Node::export_ask_inline`), `takt-in-process`,
//!   bare async-nats and `ractor-cluster`,
//!   each run issuing asks for a fixed window (1 s, 120 ms with `--quick`)
//!   and then waiting for the last; the `takt` rows' notes say where the
//!   CPU time went, per round trip and per thread, in both processes.
//! - `saturated_ratio`: each takt variant over bare async-nats at each
//!   depth (the target: ≥ 0.8× at 64 in flight).
//! - `one_way` (with `--one-way`): 64 B messages from the asking node to a sink agent at
//!   offered rates up to "as fast as the sender can", until the outbound
//!   queue overflows (the bridge's overload reaction: the send is dropped
//!   and counted) or the answering node's engine reports slow consumers:
//!   messages delivered per second, with the losses in each row's note.
//!
//! The `takt` rows are two processes: the asking node here (a plain thread
//! calling `RemoteAgent::ask`), the answering node in a child process
//! (`takt bench remote --responder`, killed when the run ends and ending
//! by itself if this process dies) whose agents run on one_thread
//! dispatchers. `takt-in-process` runs the same two nodes in this process
//! (two connections, two bridge threads). The run starts its own
//! nats-server unless given a URL.
//!
//! The `ractor-cluster` rows are two processes of the `takt-peer-ractor`
//! executable (built from `peers/ractor-cluster`, a cargo workspace of its
//! own), found next to `takt` or at `--ractor-peer`; without it the run
//! leaves them out and says how to build it (see `ractor.rs`).
//!
//! The options value [`Options`] is the suite (it implements
//! [`Suite`](takt_measure::suite::Suite)); [`responder`] is the answering
//! node and the child process that runs it.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod error;
mod nats;
mod ractor;
pub mod responder;
mod server;
mod suite;
mod takt;
mod tcp;
mod threads;

pub use error::RemoteBenchError;
pub use ractor::RactorError;
#[doc(hidden)]
pub use suite::synthetic_rows;
pub use suite::{
    expected_duration, responder_args, Options, Part, IN_FLIGHT, ONE_WAY_RATES, PACES_MS, SIZES,
};
