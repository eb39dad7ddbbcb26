//! # takt-bench-sme: `takt bench sme`
//!
//! The C++SME thesis's benchmarks over every takt-sme executor and thread
//! count, as a [`Suite`](takt_measure::suite::Suite) whose options value,
//! [`SmeBench`], is the suite.
//!
//! All four benchmarks run on the thesis's ring network (its Figure 4.1):
//!
//! | name | processes × cycles (thesis) | work per step |
//! |---|---|---|
//! | `sync_ring` | 20000 and 50000 × 100000 | Listing 1: read, add one, write |
//! | `compute_ring` | 200 × 2000 and 2000 × 200 | Listing 2: 10000 divisions of a double by 3 |
//! | `weak_scaling` | 250, 500, 1000 × 500·threads (cycles:processes 2:1, 1:1, 1:2) | Listing 2 |
//! | `uneven` | 200 × 2000 and 2000 × 200, first half 2500 divisions, second half 10000 | Listing 2 |
//!
//! plus `sync_cost` (the per-cycle price of synchronizing, on a two-process
//! ring) and the `floor` rows: the same ring as a plain loop over an array.
//!
//! Each configuration is measured after one warm-up run (and, for short
//! runs, at least 100 ms of warm-up runs) over five runs; a
//! sample is the run's wall time (worker start to finish, thread creation
//! excluded) divided by processes × cycles. `--quick` keeps the networks and
//! the work per step but scales cycles (and, for weak scaling, processes)
//! down; the document's notes say by how much.
//!
//! The networks are public ([`sync_ring`], [`compute_ring`], [`floor_ring`])
//! so a profiler or a test can run one configuration alone.
//!
//! ## Example
//!
//! One benchmark of `takt bench sme --quick` from a program: the price of
//! a cycle's synchronization on one and two threads, with its estimate
//! and a quiet run context (no progress output, never cancelled):
//!
//! ```
//! use takt_bench_sme::SmeBench;
//! use takt_measure::sampler::Repetitions;
//! use takt_measure::suite::{RunContext, Suite};
//! use takt_sched::{SpinBudget, ThreadSpec};
//!
//! let bench = SmeBench {
//!     quick: true,
//!     max_threads: 2,
//!     spec: ThreadSpec::new("sme"),
//!     spin: SpinBudget::DEFAULT,
//!     reps: Repetitions { warmup: 0, runs: 2 }, // a look; a measurement takes 5 or more
//!     only: vec!["sync_cost".into()],
//! };
//! println!("expected about {:?}", Suite::estimate(&bench));
//! let doc = Suite::run(&bench, &RunContext::quiet())?;
//! for row in doc.results.iter().filter(|r| r.name == "sync_cost") {
//!     println!("{} threads={}: {} {}", row.params["executor"], row.params["threads"],
//!              row.value_text(), row.unit);
//! }
//! # Ok::<(), takt_bench_sme::SmeError>(())
//! ```
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod error;
pub mod networks;
mod published;
mod suite;

pub use error::SmeError;
pub use networks::{compute_ring, divide, floor_ring, sync_ring, Ring};
pub use suite::{compute_step, SmeBench, BENCHMARKS, DIVISIONS, LIGHT_DIVISIONS};
