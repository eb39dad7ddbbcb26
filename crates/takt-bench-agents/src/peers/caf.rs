//! The benchmarks on CAF 0.17, the C++ actor framework, through
//! `takt-peer-caf` (feature `caf`).
//!
//! The C++ side runs each benchmark in an `actor_system` of its own and
//! returns raw observations; this module maps the placements onto CAF's
//! means of placing actors and checks the observations against the work
//! asked for, exactly as the other peers' checks do.
//!
//! | placement | CAF |
//! |---|---|
//! | `one_thread` (and every `customer_ring`/`skynet` row) | work-stealing scheduler with 1 thread |
//! | `thread_per_agent` | each player spawned `detached` (a thread of its own) |
//! | `two_workers` | work-stealing scheduler with 2 threads; CAF places the players |

use std::time::Duration;

use super::{PeerError, PingPongRun, Placement, RingTimes, Run};

/// Why this build cannot run CAF, if it cannot.
pub(super) fn unavailable() -> Option<&'static str> {
    #[cfg(feature = "caf")]
    {
        takt_peer_caf::caf_version()
            .err()
            .map(|_| takt_peer_caf::NOT_BUILT)
    }
    #[cfg(not(feature = "caf"))]
    {
        Some(ABSENT)
    }
}

/// What a build without the `caf` feature reports instead of CAF's rows.
#[cfg(not(feature = "caf"))]
const ABSENT: &str =
    "not measured: this build has no CAF peer (takt-bench-agents feature `caf` is off)";

#[cfg(feature = "caf")]
mod checked {
    use takt_peer_caf::{CafError, Home, Outcome};

    use super::super::CrossingCounter;
    use super::*;

    /// A `takt-peer-caf` error as the [`PeerError`] of this run.
    fn error(run: &Run, e: CafError) -> PeerError {
        match e {
            CafError::NotBuilt => PeerError::Unavailable {
                peer: run.peer,
                reason: takt_peer_caf::NOT_BUILT,
            },
            CafError::InvalidParams(reason) => PeerError::InvalidParams {
                bench: run.bench,
                reason,
            },
            CafError::Setup(reason) => run.setup(reason),
            CafError::Timeout { waiting_for, after } => run.timeout(waiting_for, after),
            other => run.failed(other),
        }
    }

    /// Every one of `actors` actors started and stopped.
    fn expect_actors(run: &Run, o: &Outcome, actors: u64) -> Result<(), PeerError> {
        run.expect_count("actors started", o.started, actors)?;
        run.expect_count("actors stopped", o.stopped, actors)
    }

    pub(in super::super) fn ping_pong(
        run: &Run,
        messages: u64,
        placement: Placement,
    ) -> Result<PingPongRun, PeerError> {
        let home = match placement {
            Placement::OneThread => Home::Scheduler { threads: 1 },
            Placement::ThreadPerAgent => Home::Detached,
            Placement::TwoWorkers => Home::Scheduler { threads: 2 },
        };
        let o =
            takt_peer_caf::ping_pong(messages, home, run.deadline).map_err(|e| error(run, e))?;
        expect_actors(run, &o, 2)?;
        run.expect_count("last delivery number", o.value, messages)?;
        Ok(PingPongRun {
            elapsed: o.elapsed,
            crossing: CrossingCounter {
                handled: o.handled,
                crossed: o.crossed,
            },
        })
    }

    pub(in super::super) fn customer_ring(
        run: &Run,
        agents: usize,
        tokens: usize,
    ) -> Result<RingTimes, PeerError> {
        let (n, m) = (agents as u64, tokens as u64);
        let o = takt_peer_caf::customer_ring(n, m, 1, run.deadline).map_err(|e| error(run, e))?;
        expect_actors(run, &o, n)?;
        run.expect_count("tokens retired", o.completed, m)?;
        run.expect_count("deliveries handled", o.handled, n * m)?;
        Ok(RingTimes {
            registration: o.registration,
            ringing: o.elapsed,
        })
    }

    pub(in super::super) fn skynet(run: &Run, leaves: u64) -> Result<(Duration, u64), PeerError> {
        let nodes = super::super::skynet_nodes(leaves);
        let o = takt_peer_caf::skynet(leaves, 1, run.deadline).map_err(|e| error(run, e))?;
        expect_actors(run, &o, nodes)?;
        run.expect_count("sums handled", o.handled, nodes - 1)?;
        Ok((o.elapsed, o.value))
    }
}

#[cfg(feature = "caf")]
pub(super) use checked::{customer_ring, ping_pong, skynet};

#[cfg(not(feature = "caf"))]
mod absent {
    use super::*;

    fn unavailable(run: &Run) -> PeerError {
        PeerError::Unavailable {
            peer: run.peer,
            reason: ABSENT,
        }
    }

    pub(in super::super) fn ping_pong(
        run: &Run,
        _: u64,
        _: Placement,
    ) -> Result<PingPongRun, PeerError> {
        Err(unavailable(run))
    }

    pub(in super::super) fn customer_ring(
        run: &Run,
        _: usize,
        _: usize,
    ) -> Result<RingTimes, PeerError> {
        Err(unavailable(run))
    }

    pub(in super::super) fn skynet(run: &Run, _: u64) -> Result<(Duration, u64), PeerError> {
        Err(unavailable(run))
    }
}

#[cfg(not(feature = "caf"))]
pub(super) use absent::{customer_ring, ping_pong, skynet};
