//! One capacity trial against a running target, and the result rows of a
//! finished search — the parts of `takt sip capacity` that do not depend
//! on which load generator drives the calls.
//!
//! A [`TargetTrial`] wraps a [`Target`](crate::target::Target) and a [`Load`] (anything that can
//! offer calls at a rate to an address and count what came back): around
//! each run of the load it samples the server's `/proc` counters, and after
//! it reads takt's statistics or Kamailio's shared memory, so that every
//! point carries the server's side of the books ([`PointDetail`]). It is a
//! [`Trial`](crate::search::Trial) for the [`crate::search`]. [`run`]
//! drives several cases in turns and builds the result document.
//!
//! The drop rate that decides capacity is the paper's: messages lost at the
//! server ÷ messages sent to it, as the load counts them end to end (sent
//! by one side, never received by the other, after a bounded drain). The
//! server's socket drops and its namespace's `RcvbufErrors` are reported
//! beside it for each point.

mod diagnosis;
mod fixed;
mod gen_load;
mod plan;
pub mod plot;
mod rows;
mod suite;
mod trial;

pub use diagnosis::UasDiagnosis;
pub use fixed::{run_fixed, FixedCase, FixedPlan, FixedProgress};
pub(crate) use gen_load::uas_addr;
pub use gen_load::GenLoad;
pub use plan::{run, CapacityCase, CapacityPlan, NetKind, Progress};
pub(crate) use rows::synthetic_search;
pub use rows::{
    capacity_bound, cpu_comparison_rows, cpu_row, kind_rows, rows, shm_note,
    COMPARABLE_BUSY_FRACTION, NULL_RELAY, PEER_SERVERS, SHM_LIMIT_FRACTION,
};
pub use suite::{CapacityOptions, CapacitySuite, MIN_CALLS, PLOT_FILE};
pub use trial::{KindWindow, Load, LoadOutcome, PointDetail, TargetTrial};

/// Every kind of row `takt sip capacity`'s documents can hold, searched
/// and at fixed rates, from synthetic inputs: the input of the
/// document-shape snapshot test. Starts nothing.
#[doc(hidden)]
pub fn synthetic_rows() -> Vec<takt_measure::result::ResultRow> {
    let mut rows = plan::synthetic_rows();
    rows.extend(fixed::synthetic_rows());
    rows
}
