//! # takt-bench-agents: `takt bench agents`
//!
//! The SObjectizer 4.4.b3 benchmarks (the seed's
//! names and parameters) plus `ping_pong` and `skynet`, on takt-agents,
//! and with `peers` the same ping_pong, customer_ring and skynet on other
//! actor runtimes in the same run.
//!
//! Every row is the median of at least 5 runs after a warm-up run, with
//! the CPU time each run cost (`cpu_s`: spinning buys latency with CPU).
//! Rows that the seed published carry its figure converted to our unit
//! (`published`; the seed ran on a 1.5 GHz Pentium-M in 2006, so the
//! column shows the distance travelled, not a same-machine comparison).
//!
//! Parameters: every takt row records its dispatcher, thread count, spin
//! budget, CPU set and scheduling policy. Peer rows record the workload
//! and thread count only; the table's `takt ×` column compares each peer
//! row with the takt row doing the same workload on as many threads.
//!
//! The options value [`Options`] is the suite (it implements
//! [`Suite`](takt_measure::suite::Suite)); [`run`] runs it.
//!
//! - [`runs`]: takt's side of each benchmark, one run per call;
//! - [`placement`]: where the two players of `ping_pong` run, and the
//!   crossing counters every row reports;
//! - [`peers`] (feature `peers`, on by default): the same workloads on
//!   actix, kameo, ractor, CAF (feature `caf`, through `takt-peer-caf`)
//!   and a crossbeam-channel floor.
//!
//! ## Example
//!
//! One takt ping_pong run on a one_thread dispatcher:
//!
//! ```
//! use takt_bench_agents::placement::Placement;
//! use takt_bench_agents::runs::{ping_pong, TaktOpts};
//! use takt_sched::{SpinBudget, ThreadSpec};
//!
//! let opts = TaktOpts { spin: SpinBudget::DEFAULT, thread: ThreadSpec::new("pp") };
//! let s = ping_pong(&opts, 10_000, 1, Placement::OneThread)?;
//! println!("{:.1} ns/msg", s.value);
//! # Ok::<(), takt_bench_agents::runs::RunError>(())
//! ```
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod error;
#[cfg(feature = "peers")]
pub mod peers;
pub mod placement;
pub mod runs;
mod suite;

pub use error::AgentsError;
#[doc(hidden)]
pub use suite::synthetic_rows;
pub use suite::{expected_duration, run, Options, IN_FLIGHT};
