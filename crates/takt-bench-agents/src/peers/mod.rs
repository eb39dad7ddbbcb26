//! # Peers: the agent benchmarks on other actor runtimes
//!
//! `takt bench agents --peers` runs three of takt's agent benchmarks —
//! `ping_pong`, `customer_ring` and `skynet` — on three Rust actor frameworks,
//! on CAF (the C++ actor framework) and on a floor made of plain channels, in
//! the same process and the same run as takt's own rows, so that the ratios
//! between them are honest:
//!
//! | [`Peer`] | crate (version) | one-thread rows | `ping_pong` thread_per_agent | `ping_pong` two_workers |
//! |---|---|---|---|---|
//! | [`Actix`](Peer::Actix) | `actix` 0.13 | one `System` (one arbiter, a tokio current-thread runtime) | two extra `Arbiter`s, one actor on each | — |
//! | [`Kameo`](Peer::Kameo) | `kameo` 0.22 | tokio current-thread runtime | a current-thread runtime per actor, each on its own thread | tokio multi-thread runtime, 2 workers |
//! | [`Ractor`](Peer::Ractor) | `ractor` 0.16 | tokio current-thread runtime | a current-thread runtime per actor, each on its own thread | tokio multi-thread runtime, 2 workers |
//! | [`Crossbeam`](Peer::Crossbeam) | `crossbeam-channel` 0.5 | loops on the calling thread | two threads made by [`takt_sched::ThreadSpec`] | — |
//! | [`Caf`](Peer::Caf) | CAF 0.17 (C++, Debian `libcaf-dev`) | an `actor_system` with 1 scheduler thread | each actor spawned `detached` (a thread of its own) | work-stealing scheduler with 2 threads |
//!
//! takt's own rows use `one_thread`, `active_obj` and a `work_stealing`
//! pool of two for the three [`Placement`]s (see [`crate::placement`]:
//! a ratio compares like with like only within one placement, and every
//! `ping_pong` row reports the fraction of its deliveries that crossed
//! threads).
//!
//! The `peers` cargo feature of takt-bench-agents (and of the `takt` binary) compiles
//! this module in and is on by default; `--no-default-features` leaves actix,
//! kameo, ractor and tokio out of lean builds. kameo 0.22 needs Rust 1.88, so
//! the default build does too; a lean build keeps the workspace's minimum.
//!
//! The `caf` feature (also on by default, implies `peers`) adds
//! [`Peer::Caf`]: the benchmarks written in C++17 against CAF 0.17 in the
//! `takt-peer-caf` crate, compiled by its build script. A build without the
//! CAF headers still succeeds; [`Peer::unavailable`] then says "not measured:
//! install libcaf-dev (CAF 0.17 headers not found at build time)" and
//! `takt bench agents --peers` puts that in the run's notes instead of CAF's
//! rows. `scripts/setup.sh` installs `libcaf-dev`, and the tests fail without
//! it.
//!
//! SObjectizer 5.8 (C++, the seed's own framework) is not a [`Peer`]: it
//! runs in a child process of takt's driver, a whole series of
//! repetitions per call, with the seed's six benchmarks besides these
//! three; see [`sobjectizer`].
//!
//! [`run_once`] builds the peer's runtime, runs **one** measured repetition of
//! one [`PeerBench`] and tears everything down again (every actor stopped and
//! accounted for, every runtime and thread it made gone) before it returns. The
//! caller owns warm-up and repetitions (see [`takt_measure::sampler`]).
//!
//! ```no_run
//! use takt_bench_agents::peers::{run_once, Peer, PeerBench, Placement};
//!
//! let bench = PeerBench::PingPong { messages: 1_000_000, placement: Placement::OneThread };
//! for peer in Peer::ALL {
//!     let sample = run_once(peer, &bench)?;
//!     println!("{:>9} {} {:.1} ns/msg", peer.name(), bench.name(), sample.value);
//! }
//! # Ok::<(), takt_bench_agents::peers::PeerError>(())
//! ```
//!
//! ## What each benchmark measures
//!
//! The definitions are the ones takt's own rows use, so a ratio compares the
//! same work.
//!
//! - **`ping_pong`** — two actors bounce one message back and forth with
//!   fire-and-forget sends (actix `Addr::do_send`, kameo `tell`, ractor
//!   `cast`; never request/reply). A *message* is one delivery to a handler, a
//!   round trip is two. [`PeerSample::value`] is the wall time of the whole
//!   exchange divided by `messages`, in **ns per message**. The clock starts
//!   when the first message is sent (both actors already running and linked)
//!   and stops in the handler of the last delivery. Each message carries the
//!   sender's thread tag, so every run also reports
//!   [`PeerSample::crossed`], the fraction of deliveries whose sender ran on
//!   another thread.
//! - **`customer_ring`** — `agents` (N) actors in a ring, each knowing the next;
//!   `tokens` (M) tokens, token *j* injected at actor *j·N/M*, each retired
//!   after N deliveries, so N·M messages in all.
//!   [`value`](PeerSample::value) is **ns per message** of the ringing phase
//!   alone (first injection to the last token's retirement);
//!   [`registration_us_per_agent`](PeerSample::registration_us_per_agent) is the
//!   time from creating the first actor until all N are created, linked into
//!   the ring and have run their start hook (so are ready to handle a message),
//!   divided by N, in **µs per agent**.
//! - **`skynet`** — every node creates 10 children, down to `leaves` (a power
//!   of ten) leaves; each leaf replies to its parent with its own number
//!   (0…leaves−1), each inner node sums its ten replies and replies in turn,
//!   and stops. [`value`](PeerSample::value) is **ms per run**, from creating the
//!   root to the root's sum; the sum must equal *n(n−1)/2*.
//!
//! Every run checks that it did the work: the number of deliveries each actor
//! handled (summed at teardown from every actor's stop hook), the number of
//! actors that started and stopped, and the result (`ping_pong`'s final count,
//! every ring token's hop count, skynet's sum). A mismatch is a
//! [`PeerError::Check`], a run that does not finish within a generous deadline
//! (two minutes plus 50 µs per message or actor) is a [`PeerError::Timeout`]: a
//! wrong number is never returned silently.
//!
//! ## How each peer is set up, and where the setups differ
//!
//! Each framework is given its fast, documented path, so a ratio against it is
//! a conservative one:
//!
//! - **actix**: actors are started on the current arbiter (`Actor::start`) of a
//!   `System` made for the run; the ring is closed with `Context::new()` +
//!   `ctx.address()` before the first actor runs. Cross-thread `ping_pong` makes
//!   two `Arbiter`s (two threads, each its own single-thread event loop) and
//!   starts one actor on each with `Actor::start_in_arbiter`, so the two
//!   actors are guaranteed to be on different threads; the `System` thread only
//!   waits.
//! - **kameo**: actors get unbounded mailboxes (`mailbox::unbounded`; the
//!   default bounded mailbox would make senders wait) and are sent to with
//!   `tell(..).try_send()`, which never waits on an unbounded mailbox. The
//!   crate is built without its default `tracing` feature. The ring is closed
//!   with `PreparedActor`, which gives the first actor's reference before it is
//!   spawned.
//! - **ractor**: actors are spawned unsupervised and unnamed (no registry
//!   entry); the crate is built without its default `message_span_propogation`
//!   feature, which would attach a tracing span to every message. ractor gives a
//!   reference only once an actor is spawned, so the last actor of the ring
//!   learns its successor from one `Link` message, sent before any token (its
//!   mailbox is FIFO, so it is handled first).
//! - **kameo and ractor, `thread_per_agent`**: each player is spawned on
//!   a `Home` (`tokio_rt.rs`) of its own — a current-thread runtime on a thread of
//!   its own — so every delivery wakes the other runtime's thread, as an
//!   actix `Arbiter` per actor does.
//! - **kameo and ractor, `two_workers`**: both players on one tokio
//!   multi-thread runtime with two workers. tokio's scheduler is free to run
//!   both actors on one worker (a task woken by the running task goes to
//!   that worker's LIFO slot, and idle workers steal), so these rows measure
//!   *tokio's* choice of placement with two workers available; the row's
//!   `crossed_fraction` shows how often a delivery actually crossed (about
//!   1–2% here). takt's counterpart is its `work_stealing` pool of two.
//! - **CAF**: class-based event-based actors (`caf::event_based_actor`),
//!   fire-and-forget `send` between actors and `anon_send` from the driver,
//!   one `actor_system` per run with CAF's default work-stealing scheduler
//!   and `scheduler.max-threads` = 1 (2 for `two_workers`); C++ built with
//!   `-O2`, Debian's CAF has logging compiled out. A player learns its partner
//!   and the ring's first actor its successor from one link message (CAF gives
//!   a handle only once an actor is spawned). `thread_per_agent` spawns each
//!   player `detached`: a thread of its own, blocking on its mailbox. Actors
//!   stop on an exit message (`user_shutdown`) and report from `on_exit`;
//!   skynet nodes quit on their own. Every CAF 0.17 actor's exit posts to the
//!   actor clock's thread (`thread_safe_actor_clock`, a mutex and a condition
//!   variable), a cost skynet pays once per node.
//! - The peers' runtime threads are made by their own runtimes (tokio,
//!   actix-rt, CAF), not by [`takt_sched::ThreadSpec`] (the homes' threads are);
//!   they run with the process's default
//!   scheduling policy and CPU set.
//!
//! ## The crossbeam floor
//!
//! [`Peer::Crossbeam`] is no actor framework: it is the cost of moving the same
//! messages through `crossbeam-channel` unbounded channels with the least
//! machinery around them, a floor that no actor runtime built on such channels
//! can beat.
//!
//! - `ping_pong`, one thread: a loop that alternately sends into channel A,
//!   receives it, sends into channel B and receives it; each receive is one
//!   delivery. Across threads: two threads, each blocking in `recv` on its own
//!   channel and sending the next message into the other's (crossbeam's `recv`
//!   spins briefly, then parks on the OS).
//! - `customer_ring`: one channel per agent and a FIFO queue of agent indices
//!   with a pending message, on one thread — a minimal one-thread dispatcher.
//!   Each delivery pops an index, receives from that agent's channel, and sends
//!   to the next agent's channel (pushing its index). Registration is creating
//!   the N channels and their per-agent state.
//! - `skynet`: depth-first on one thread; every inner node creates one channel,
//!   its children (recursively) each send their number or sum into it, and the
//!   node receives the ten values, sums them and sends the sum up. One channel
//!   per inner node and one send+receive per node: the messages of skynet
//!   without any scheduling.
//!
//! Parameters are validated the same way for every peer before anything is
//! built: see [`PeerBench::validate`].

mod actix;
mod board;
mod caf;
mod crossbeam;
mod kameo;
mod ractor;
pub mod sobjectizer;
mod tokio_rt;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

pub use crate::placement::Placement;
use crate::placement::{thread_tag, CrossingCounter};

/// One of the runtimes `takt bench agents --peers` compares takt with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Peer {
    /// `actix` 0.13: actors on actix-rt arbiters (tokio current-thread loops).
    Actix,
    /// `kameo` 0.22: actors as tokio tasks.
    Kameo,
    /// `ractor` 0.16: actors as tokio tasks.
    Ractor,
    /// The floor: plain `crossbeam-channel` channels, no actor framework.
    Crossbeam,
    /// CAF 0.17, the C++ actor framework: event-based actors on its
    /// work-stealing scheduler (feature `caf`; see [`Peer::unavailable`]).
    Caf,
}

impl Peer {
    /// Every peer, in the order reports list them.
    pub const ALL: [Peer; 5] = [
        Peer::Actix,
        Peer::Kameo,
        Peer::Ractor,
        Peer::Crossbeam,
        Peer::Caf,
    ];

    /// The stable name used in result rows (`impl`) and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Actix => "actix",
            Peer::Kameo => "kameo",
            Peer::Ractor => "ractor",
            Peer::Crossbeam => "crossbeam",
            Peer::Caf => "caf",
        }
    }

    /// Why this build cannot run the peer, if it cannot: only
    /// [`Peer::Caf`], when the CAF 0.17 headers were missing at build time
    /// or the `caf` feature is off. [`run_once`] then returns
    /// [`PeerError::Unavailable`] with this reason.
    pub fn unavailable(self) -> Option<&'static str> {
        match self {
            Peer::Caf => caf::unavailable(),
            _ => None,
        }
    }
}

impl Peer {
    /// Whether this peer can run `bench` as asked. Every peer runs every
    /// benchmark, except `ping_pong` in [`Placement::TwoWorkers`] on actix
    /// (an actix actor is bound to one arbiter's thread; there is no
    /// runtime that moves actors between two workers) and on the
    /// crossbeam floor (no scheduler at all). Whether this build can run
    /// the peer at all is [`Peer::unavailable`].
    pub fn supports(self, bench: &PeerBench) -> bool {
        match bench {
            PeerBench::PingPong {
                placement: Placement::TwoWorkers,
                ..
            } => matches!(self, Peer::Kameo | Peer::Ractor | Peer::Caf),
            _ => true,
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Peer {
    type Err = PeerError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Peer::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| PeerError::UnknownPeer { name: s.to_owned() })
    }
}

/// One benchmark and its parameters (see the [module docs](self) for the
/// exact definitions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerBench {
    /// Two actors exchanging `messages` deliveries in total.
    PingPong {
        /// Deliveries in total (a round trip is two); at least 1.
        messages: u64,
        /// Where the two actors run ([`Peer::supports`] says which
        /// placements a peer has).
        placement: Placement,
    },
    /// `agents` actors in a ring carrying `tokens` tokens once around.
    CustomerRing {
        /// Actors in the ring (N); at least 1.
        agents: usize,
        /// Tokens (M); 1 ≤ M ≤ N, so every token starts at its own actor.
        tokens: usize,
    },
    /// The skynet tree with `leaves` leaves.
    Skynet {
        /// Leaves: a power of ten from 1 to [`PeerBench::MAX_SKYNET_LEAVES`].
        leaves: u64,
    },
}

impl PeerBench {
    /// The largest skynet accepted. Every node of the tree is alive at once
    /// before the leaves report (tokio and actix run spawned actors in FIFO
    /// order), so 10^6 leaves already peak at about 7 GB of resident memory on
    /// kameo and ractor (0.9 GB on actix), measured on takt's 24 GB machines;
    /// 10^7 would need ten times that.
    pub const MAX_SKYNET_LEAVES: u64 = 1_000_000;

    /// The benchmark's stable name, as in takt's own rows.
    pub fn name(&self) -> &'static str {
        match self {
            PeerBench::PingPong { .. } => "ping_pong",
            PeerBench::CustomerRing { .. } => "customer_ring",
            PeerBench::Skynet { .. } => "skynet",
        }
    }

    /// The unit of [`PeerSample::value`] for this benchmark.
    pub fn unit(&self) -> &'static str {
        match self {
            PeerBench::PingPong { .. } | PeerBench::CustomerRing { .. } => "ns/msg",
            PeerBench::Skynet { .. } => "ms",
        }
    }

    /// Checks the parameters; [`run_once`] does this first for every peer.
    ///
    /// Rejected: `messages == 0`; `agents == 0`; `tokens == 0` or
    /// `tokens > agents`; `leaves` not a power of ten or above
    /// [`MAX_SKYNET_LEAVES`](Self::MAX_SKYNET_LEAVES).
    pub fn validate(&self) -> Result<(), PeerError> {
        let invalid = |reason: String| {
            Err(PeerError::InvalidParams {
                bench: self.name(),
                reason,
            })
        };
        match *self {
            PeerBench::PingPong { messages, .. } => {
                if messages == 0 {
                    return invalid("messages must be at least 1, got 0".into());
                }
            }
            PeerBench::CustomerRing { agents, tokens } => {
                if agents == 0 {
                    return invalid("agents (N) must be at least 1, got 0".into());
                }
                if tokens == 0 {
                    return invalid("tokens (M) must be at least 1, got 0".into());
                }
                if tokens > agents {
                    return invalid(format!(
                        "tokens (M = {tokens}) must not exceed agents (N = {agents}): \
                         token j starts at agent j*N/M, one token per agent at most"
                    ));
                }
                if (agents as u128) * (tokens as u128) > u64::MAX as u128 {
                    return invalid(format!(
                        "agents × tokens = {agents} × {tokens} messages overflows a 64-bit count"
                    ));
                }
            }
            PeerBench::Skynet { leaves } => {
                if skynet_depth(leaves).is_none() {
                    return invalid(format!(
                        "leaves must be a power of ten (1, 10, 100, …), got {leaves}"
                    ));
                }
                if leaves > Self::MAX_SKYNET_LEAVES {
                    return invalid(format!(
                        "leaves must be at most {} ({} actors), got {leaves}",
                        Self::MAX_SKYNET_LEAVES,
                        skynet_nodes(Self::MAX_SKYNET_LEAVES)
                    ));
                }
            }
        }
        Ok(())
    }

    /// How long a run may take before it is declared hung: two minutes plus
    /// 50 µs per message or actor — far beyond any healthy run, even a first
    /// one on a loaded machine (a first kameo skynet of 10^6 leaves took 45 s
    /// on a busy 2-core machine, against a 231 s deadline).
    fn deadline(&self) -> Duration {
        let work = match *self {
            PeerBench::PingPong { messages, .. } => messages,
            PeerBench::CustomerRing { agents, tokens } => {
                (agents as u64).saturating_mul(tokens as u64 + 1)
            }
            PeerBench::Skynet { leaves } => skynet_nodes(leaves).saturating_mul(2),
        };
        Duration::from_secs(120)
            + Duration::from_micros(50).saturating_mul(work.min(u32::MAX as u64) as u32)
    }
}

/// What one measured repetition gave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PeerSample {
    /// The benchmark's figure in [`PeerBench::unit`]: ns per message for
    /// `ping_pong` and `customer_ring`, ms per run for `skynet`.
    pub value: f64,
    /// `customer_ring` only: creating, linking and starting the N actors,
    /// µs per agent.
    pub registration_us_per_agent: Option<f64>,
    /// `ping_pong` only: the fraction of deliveries whose sender ran on
    /// another thread (the first delivery is sent by the driver thread).
    pub crossed: Option<f64>,
}

/// Why a peer run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeerError {
    /// The parameters cannot describe a run (see [`PeerBench::validate`]).
    #[error("invalid {bench} parameters: {reason}")]
    InvalidParams {
        /// The benchmark's name.
        bench: &'static str,
        /// What is wrong, with the offending value.
        reason: String,
    },
    /// A peer name that is none of [`Peer::ALL`].
    #[error("unknown peer {name:?}: expected one of actix, kameo, ractor, crossbeam, caf")]
    UnknownPeer {
        /// The name given.
        name: String,
    },
    /// This build cannot run the peer (see [`Peer::unavailable`]); nothing
    /// was measured.
    #[error("{peer}: {reason}")]
    Unavailable {
        /// The peer.
        peer: Peer,
        /// Why, and what to install.
        reason: &'static str,
    },
    /// The peer's runtime, an actor or a thread could not be created.
    #[error("{peer} {bench}: could not set up: {reason}")]
    Setup {
        /// The peer.
        peer: Peer,
        /// The benchmark's name.
        bench: &'static str,
        /// What failed, with the underlying error.
        reason: String,
    },
    /// An actor failed while the benchmark ran (a send to a stopped actor,
    /// a handler error).
    #[error("{peer} {bench}: {reason}")]
    Failed {
        /// The peer.
        peer: Peer,
        /// The benchmark's name.
        bench: &'static str,
        /// What went wrong.
        reason: String,
    },
    /// A phase did not finish before the run's deadline (lost messages, a
    /// stuck actor).
    #[error("{peer} {bench}: timed out after {after:?} waiting for {waiting_for}")]
    Timeout {
        /// The peer.
        peer: Peer,
        /// The benchmark's name.
        bench: &'static str,
        /// The phase that did not finish.
        waiting_for: String,
        /// How long the run had been going.
        after: Duration,
    },
    /// The run finished but did not do the work it was asked to (a count or
    /// sum that does not match): its timing is not reported.
    #[error("{peer} {bench}: wrong result: {what}")]
    Check {
        /// The peer.
        peer: Peer,
        /// The benchmark's name.
        bench: &'static str,
        /// Expected and observed values.
        what: String,
    },
}

/// Runs one measured repetition of `bench` on `peer`: builds the peer's
/// runtime, sets up the actors, measures, checks the work was done, and tears
/// everything down before returning.
///
/// Call it from a plain thread: the Rust framework peers build their own
/// runtime, which tokio forbids inside another one (that case is a
/// [`PeerError::Setup`], not a panic).
///
/// # Errors
/// [`PeerError::InvalidParams`] before anything is built,
/// [`PeerError::Unavailable`] when this build cannot run `peer`; otherwise
/// [`Setup`](PeerError::Setup), [`Failed`](PeerError::Failed),
/// [`Timeout`](PeerError::Timeout) or [`Check`](PeerError::Check) — never a
/// number from a run that did not do its work.
pub fn run_once(peer: Peer, bench: &PeerBench) -> Result<PeerSample, PeerError> {
    bench.validate()?;
    let run = Run {
        peer,
        bench: bench.name(),
        deadline: bench.deadline(),
    };
    if let Some(reason) = peer.unavailable() {
        return Err(PeerError::Unavailable { peer, reason });
    }
    // The Rust frameworks build a tokio runtime each; the floor and CAF
    // (its own threads) run anywhere.
    if matches!(peer, Peer::Actix | Peer::Kameo | Peer::Ractor)
        && tokio::runtime::Handle::try_current().is_ok()
    {
        return Err(run.setup(
            "called from inside a tokio runtime; each run builds its own runtime, \
             so call run_once from a plain thread",
        ));
    }
    match *bench {
        PeerBench::PingPong {
            messages,
            placement,
        } => {
            if !peer.supports(bench) {
                return Err(run.setup(format_args!(
                    "{peer} has no {placement} placement (see Peer::supports)"
                )));
            }
            let pp = match peer {
                Peer::Actix => actix::ping_pong(&run, messages, placement),
                Peer::Kameo => kameo::ping_pong(&run, messages, placement),
                Peer::Ractor => ractor::ping_pong(&run, messages, placement),
                Peer::Crossbeam => crossbeam::ping_pong(&run, messages, placement),
                Peer::Caf => caf::ping_pong(&run, messages, placement),
            }?;
            run.expect_count("deliveries handled", pp.crossing.handled, messages)?;
            Ok(PeerSample {
                value: pp.elapsed.as_nanos() as f64 / messages as f64,
                registration_us_per_agent: None,
                crossed: Some(pp.crossing.fraction()),
            })
        }
        PeerBench::CustomerRing { agents, tokens } => {
            let ring = match peer {
                Peer::Actix => actix::customer_ring(&run, agents, tokens),
                Peer::Kameo => kameo::customer_ring(&run, agents, tokens),
                Peer::Ractor => ractor::customer_ring(&run, agents, tokens),
                Peer::Crossbeam => crossbeam::customer_ring(&run, agents, tokens),
                Peer::Caf => caf::customer_ring(&run, agents, tokens),
            }?;
            let messages = agents as f64 * tokens as f64;
            Ok(PeerSample {
                value: ring.ringing.as_nanos() as f64 / messages,
                registration_us_per_agent: Some(
                    ring.registration.as_nanos() as f64 / 1e3 / agents as f64,
                ),
                crossed: None,
            })
        }
        PeerBench::Skynet { leaves } => {
            let (elapsed, sum) = match peer {
                Peer::Actix => actix::skynet(&run, leaves),
                Peer::Kameo => kameo::skynet(&run, leaves),
                Peer::Ractor => ractor::skynet(&run, leaves),
                Peer::Crossbeam => crossbeam::skynet(&run, leaves),
                Peer::Caf => caf::skynet(&run, leaves),
            }?;
            let expected = skynet_sum(leaves);
            if sum != expected {
                return Err(run.check(format!(
                    "sum of {leaves} leaves is {sum}, expected n(n-1)/2 = {expected}"
                )));
            }
            Ok(PeerSample {
                value: elapsed.as_nanos() as f64 / 1e6,
                registration_us_per_agent: None,
                crossed: None,
            })
        }
    }
}

/// The context every peer function gets: names for errors and the deadline.
#[derive(Debug)]
struct Run {
    peer: Peer,
    bench: &'static str,
    deadline: Duration,
}

impl Run {
    fn setup(&self, reason: impl fmt::Display) -> PeerError {
        PeerError::Setup {
            peer: self.peer,
            bench: self.bench,
            reason: reason.to_string(),
        }
    }

    fn failed(&self, reason: impl fmt::Display) -> PeerError {
        PeerError::Failed {
            peer: self.peer,
            bench: self.bench,
            reason: reason.to_string(),
        }
    }

    fn timeout(&self, waiting_for: impl fmt::Display, after: Duration) -> PeerError {
        PeerError::Timeout {
            peer: self.peer,
            bench: self.bench,
            waiting_for: waiting_for.to_string(),
            after,
        }
    }

    fn check(&self, what: impl fmt::Display) -> PeerError {
        PeerError::Check {
            peer: self.peer,
            bench: self.bench,
            what: what.to_string(),
        }
    }

    /// Checks a count observed at the end of a run.
    fn expect_count(&self, what: &str, got: u64, expected: u64) -> Result<(), PeerError> {
        if got == expected {
            Ok(())
        } else {
            Err(self.check(format!("{what}: {got}, expected {expected}")))
        }
    }
}

/// What one `ping_pong` run measured: the exchange's wall time and both
/// players' delivery counts.
#[derive(Debug)]
struct PingPongRun {
    elapsed: Duration,
    crossing: CrossingCounter,
}

/// Timings of one `customer_ring` run.
#[derive(Debug)]
struct RingTimes {
    registration: Duration,
    ringing: Duration,
}

/// Levels below the root for `leaves` leaves, if `leaves` is a power of ten.
fn skynet_depth(leaves: u64) -> Option<u32> {
    let mut n = leaves;
    let mut depth = 0;
    while n > 1 && n.is_multiple_of(10) {
        n /= 10;
        depth += 1;
    }
    (n == 1).then_some(depth)
}

/// Nodes in the skynet tree with `leaves` leaves (a power of ten):
/// 1 + 10 + … + leaves.
fn skynet_nodes(leaves: u64) -> u64 {
    let mut total = 0;
    let mut level = leaves;
    loop {
        total += level;
        if level <= 1 {
            return total;
        }
        level /= 10;
    }
}

/// The expected skynet result: 0 + 1 + … + (leaves − 1).
fn skynet_sum(leaves: u64) -> u64 {
    leaves * leaves.saturating_sub(1) / 2
}

/// Fan-out of every skynet node.
const SKYNET_FANOUT: u64 = 10;

/// Start of ring token `j`'s path: agent `j·N/M`.
fn token_start(j: usize, agents: usize, tokens: usize) -> usize {
    ((j as u128 * agents as u128) / tokens as u128) as usize
}

#[cfg(test)]
mod tests;
