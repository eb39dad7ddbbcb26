//! # takt-siplab: the SIP laboratory
//!
//! The instruments behind `takt sip gen` and the capacity measurements of
//! Krishnamurthy & Rouskas' proxy study: the load, the targets under test
//! and the search for the call rate at which a proxy's drop rate crosses
//! 1%.
//!
//! - [`gen`]: the native load generator — a UAC and a UAS on takt-sched
//!   threads, open-loop Poisson or constant arrivals with every call's
//!   send lag recorded, retransmissions per RFC 3261, outcomes and
//!   messages per kind, and a verdict on whether the generator itself was
//!   the bottleneck.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod error;
pub mod gen;

pub use error::Error;
