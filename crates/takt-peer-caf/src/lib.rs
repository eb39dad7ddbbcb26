//! # takt-peer-caf: the agent benchmarks on CAF, the C++ actor framework
//!
//! `ping_pong`, `customer_ring` and `skynet` written in C++17 against
//! [CAF](https://www.actor-framework.org/) 0.17 (Debian `libcaf-dev`), with
//! the definitions and work checks of takt-bench-agents' peers, behind a small
//! C ABI (`cpp/peer.hpp`) and this safe wrapper. `takt bench agents --peers`
//! runs them in the same process and the same run as takt's own rows
//! (`impl` = `caf`).
//!
//! Each function runs **one** measured repetition in an `actor_system` of its
//! own, configured with the given number of scheduler threads (CAF's default
//! work-stealing policy), and has destroyed that system — every actor exited,
//! every CAF thread joined — before it returns. Actors are class-based
//! event-based actors sending with `send` / `anon_send` (fire-and-forget),
//! compiled with `-O2`; Debian's CAF is built with logging off.
//!
//! The results are raw observations ([`Outcome`]): the caller checks them
//! against what the run should have done (takt-bench-agents turns any mismatch into an
//! error). A run that does not finish before its deadline is a
//! [`CafError::Timeout`], never a hang.
//!
//! ## Without CAF
//!
//! The build script compiles the C++ only when the CAF 0.17 headers are found
//! (the compiler's default include path, or `CPATH` / `CXXFLAGS`); otherwise
//! the crate still builds and every function returns
//! [`CafError::NotBuilt`], whose message is [`NOT_BUILT`]. `scripts/setup.sh`
//! installs `libcaf-dev`, and this crate's tests fail without it.
//!
//! ```
//! use std::time::Duration;
//! use takt_peer_caf::{ping_pong, Home};
//!
//! const MESSAGES: u64 = 100_000;
//! let run = ping_pong(MESSAGES, Home::Scheduler { threads: 1 }, Duration::from_secs(60))?;
//! println!("{:.1} ns/msg", run.elapsed.as_nanos() as f64 / MESSAGES as f64);
//! # Ok::<(), takt_peer_caf::CafError>(())
//! ```

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

use std::time::Duration;

#[cfg(takt_caf)]
mod ffi;

/// What a build without the CAF headers reports instead of a measurement.
pub const NOT_BUILT: &str =
    "not measured: install libcaf-dev (CAF 0.17 headers not found at build time)";

/// The largest skynet accepted (10^7 leaves, 11,111,111 actors).
pub const MAX_SKYNET_LEAVES: u64 = 10_000_000;

/// Where the two `ping_pong` players run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    /// Both on CAF's work-stealing scheduler with `threads` worker threads
    /// (1: both on one thread; 2: CAF's scheduler places them).
    Scheduler {
        /// Scheduler worker threads; at least 1.
        threads: u32,
    },
    /// Each player spawned `detached`: a thread of its own, so every delivery
    /// wakes the other player's thread.
    Detached,
}

/// What one run observed. Which fields a benchmark sets is stated on its
/// function; the others are 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The measured phase (see each function).
    pub elapsed: Duration,
    /// `customer_ring`: from spawning the first actor until all N are linked
    /// into the ring and ready.
    pub registration: Duration,
    /// `ping_pong`: the last delivery's number; `skynet`: the root's sum.
    pub value: u64,
    /// Units of measured work completed: 1 for `ping_pong` and `skynet`, the
    /// tokens retired for `customer_ring`.
    pub completed: u64,
    /// Deliveries handled, summed from every actor's exit hook.
    pub handled: u64,
    /// `ping_pong`: deliveries whose sender ran on another thread (the first
    /// one is sent by the calling thread).
    pub crossed: u64,
    /// Actors whose start hook ran (ready to handle work).
    pub started: u64,
    /// Actors whose exit hook (`on_exit`) ran.
    pub stopped: u64,
}

/// Why a run gave no [`Outcome`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CafError {
    /// This build has no CAF: its headers were not found at build time.
    #[error("{NOT_BUILT}")]
    NotBuilt,
    /// The parameters cannot describe a run.
    #[error("invalid parameters: {0}")]
    InvalidParams(String),
    /// The actor system or an actor could not be created.
    #[error("could not set up: {0}")]
    Setup(String),
    /// An actor reported a failure, or CAF threw, while the benchmark ran.
    #[error("{0}")]
    Failed(String),
    /// A phase did not finish before the deadline.
    #[error("timed out after {after:?} waiting for {waiting_for}")]
    Timeout {
        /// The phase, with the run's counters.
        waiting_for: String,
        /// How long the run had been going.
        after: Duration,
    },
}

/// The CAF version this build was compiled against, as (major, minor,
/// patch).
///
/// # Errors
/// [`CafError::NotBuilt`] when the headers were not found at build time.
pub fn caf_version() -> Result<(u32, u32, u32), CafError> {
    #[cfg(takt_caf)]
    {
        let v = ffi::version();
        Ok((v / 10_000, (v / 100) % 100, v % 100))
    }
    #[cfg(not(takt_caf))]
    {
        Err(CafError::NotBuilt)
    }
}

/// Two event-based actors bounce one message until `messages` deliveries
/// (a round trip is two). Each learns its partner from a link message
/// before the clock starts; [`Outcome::elapsed`] runs from the first send to
/// the handler of the last delivery. Sets `value` (the last delivery's
/// number, = `messages`), `completed`, `handled`, `crossed`, `started`,
/// `stopped` (2 actors).
///
/// # Errors
/// [`CafError::InvalidParams`] for `messages == 0` or zero threads; otherwise
/// see [`CafError`].
pub fn ping_pong(messages: u64, home: Home, deadline: Duration) -> Result<Outcome, CafError> {
    if messages == 0 {
        return invalid("messages must be at least 1, got 0");
    }
    let (threads, detached) = match home {
        Home::Scheduler { threads } => (threads, false),
        // The detached players use no scheduler thread; CAF still starts one.
        Home::Detached => (1, true),
    };
    check_threads(threads)?;
    #[cfg(takt_caf)]
    {
        ffi::ping_pong(messages, threads, detached, deadline)
    }
    #[cfg(not(takt_caf))]
    {
        let _ = (detached, deadline);
        Err(CafError::NotBuilt)
    }
}

/// `agents` (N) actors in a ring, each knowing the next, carry `tokens` (M)
/// tokens once around: token *j* is injected at actor *j·N/M* by the calling
/// thread and retired after N deliveries. [`Outcome::elapsed`] is the
/// ringing phase alone (first injection to the last retirement),
/// [`Outcome::registration`] the time to spawn and link the N actors. Sets
/// `completed` (tokens retired), `handled`, `started`, `stopped`.
///
/// # Errors
/// [`CafError::InvalidParams`] unless 1 ≤ M ≤ N and `threads` ≥ 1; otherwise
/// see [`CafError`].
pub fn customer_ring(
    agents: u64,
    tokens: u64,
    threads: u32,
    deadline: Duration,
) -> Result<Outcome, CafError> {
    if agents == 0 {
        return invalid("agents (N) must be at least 1, got 0");
    }
    if tokens == 0 || tokens > agents {
        return invalid(format!(
            "tokens (M) must be between 1 and agents (N = {agents}), got {tokens}"
        ));
    }
    check_threads(threads)?;
    #[cfg(takt_caf)]
    {
        ffi::customer_ring(agents, tokens, threads, deadline)
    }
    #[cfg(not(takt_caf))]
    {
        let _ = deadline;
        Err(CafError::NotBuilt)
    }
}

/// The skynet tree: every node spawns 10 children down to `leaves` leaves;
/// each leaf sends its number (0…leaves−1) to its parent, each inner node
/// sums its ten reports, sends the sum up and exits. [`Outcome::elapsed`]
/// runs from spawning the root to the root's sum. Sets `value` (the sum),
/// `completed`, `handled` (nodes − 1), `started`, `stopped`.
///
/// # Errors
/// [`CafError::InvalidParams`] unless `leaves` is a power of ten up to
/// [`MAX_SKYNET_LEAVES`] and `threads` ≥ 1; otherwise see [`CafError`].
pub fn skynet(leaves: u64, threads: u32, deadline: Duration) -> Result<Outcome, CafError> {
    let mut n = leaves;
    while n > 1 && n.is_multiple_of(10) {
        n /= 10;
    }
    if n != 1 || leaves > MAX_SKYNET_LEAVES {
        return invalid(format!(
            "leaves must be a power of ten from 1 to {MAX_SKYNET_LEAVES}, got {leaves}"
        ));
    }
    check_threads(threads)?;
    #[cfg(takt_caf)]
    {
        ffi::skynet(leaves, threads, deadline)
    }
    #[cfg(not(takt_caf))]
    {
        let _ = deadline;
        Err(CafError::NotBuilt)
    }
}

fn invalid<T>(reason: impl Into<String>) -> Result<T, CafError> {
    Err(CafError::InvalidParams(reason.into()))
}

fn check_threads(threads: u32) -> Result<(), CafError> {
    if threads == 0 {
        return invalid("scheduler threads must be at least 1, got 0");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
