//! # takt-agents: the actor runtime
//!
//! Agents (actors) receive typed messages through handlers declared per
//! message type and per state; dispatchers, each owning threads made by
//! [`takt_sched::ThreadSpec::spawn`], run them. The design follows
//! SObjectizer (agents, states, cooperations, dispatchers, mailboxes),
//! built for speed on small multi-core machines.
//!
//! ## A first program
//! ```
//! use takt_agents::{Addr, Agent, Config, Ctx, Definer, Runtime};
//!
//! struct Ball(u32);
//! struct Meet(Addr<Player>);
//! struct Player { peer: Option<Addr<Player>> }
//!
//! impl Agent for Player {
//!     fn define(def: &mut Definer<Self>) {
//!         def.on(|me: &mut Player, _: &mut Ctx<Player>, Meet(p): Meet| me.peer = Some(p))
//!             .on(|me: &mut Player, ctx: &mut Ctx<Player>, Ball(n): Ball| {
//!                 match (&me.peer, n) {
//!                     (_, 0) => ctx.deregister_coop(), // game over
//!                     (Some(p), _) => p.send(Ball(n - 1)),
//!                     (None, _) => {}
//!                 }
//!             });
//!     }
//! }
//!
//! let rt = Runtime::new(Config::default());
//! let disp = rt.one_thread("main").unwrap();
//! let mut coop = rt.coop("game");
//! let a = coop.add(Player { peer: None }, &disp).unwrap();
//! let b = coop.add(Player { peer: None }, &disp).unwrap();
//! let game = coop.register().unwrap();
//! a.send(Meet(b.clone()));
//! b.send(Meet(a.clone()));
//! a.send(Ball(1000)); // 1001 deliveries between a and b, then done
//! assert!(game.wait_timeout(std::time::Duration::from_secs(10)));
//! assert_eq!(a.stats().handled + b.stats().handled, 1001 + 2);
//! let report = rt.shutdown();
//! assert_eq!(report.coops_timed_out, 0);
//! ```
//!
//! ## The pieces
//! - [`Agent`], [`Definer`], [`State`], [`Ctx`]: behaviour, flat and
//!   hierarchical states with `on_enter`/`on_exit`, `change_state`
//!   (module [`state`]).
//! - [`Addr`]: send from anywhere ([`Addr::send`]), run inline
//!   ([`Addr::insend`], also for pool-bound agents), with a message
//!   priority ([`Addr::send_with_priority`]), request/reply ([`Addr::ask`], a [`Pending`] reply
//!   that is a `Future` for any executor and a blocking wait).
//! - [`Mbox`]: named publish/subscribe mailboxes.
//! - [`Recipient`], [`Requester`]: message-typed handles (send `M`, ask
//!   `Q` for `R`) that hide the agent type, for bridges and plug-ins;
//!   [`pending`] makes a reply slot completed from outside the runtime.
//! - [`CoopBuilder`], [`CoopHandle`]: cooperations, parent/child.
//! - [`Dispatcher`]: one_thread, active_obj, active_group, thread_pool,
//!   work_stealing, priority (module [`dispatcher`] says which to choose).
//! - Timers ([`RuntimeHandle::send_after`], [`RuntimeHandle::send_every`]),
//!   [`Limits`] with [`Overflow`] reactions, [`Tracer`], counters
//!   ([`AgentStats`], [`DispatcherStats`]), [`PanicReaction`].
//!
//! ## Guarantees
//! - Messages from one sender to one receiver arrive in the order sent
//!   (insend events excepted: they run at once; on the priority
//!   dispatcher, within one message priority).
//! - An agent's handlers never run on two threads at once.
//! - `on_start` is an agent's first event, `on_finish` its last.
//! - A message that cannot be delivered (its agent finished, its queue torn
//!   down at shutdown) is counted, never silently lost.
//!
//! ## Errors
//! Each fallible operation returns its own small error type, every variant
//! of which can happen there, so a caller's `match` has no impossible arms:
//! registering ([`RegError`], wrapping a [`DefineError`] (a list of
//! [`DefineProblem`]s), a
//! [`BindingError`] or the [`takt_sched::SchedError`] of a dispatcher
//! thread), asking ([`AskError`]), timers ([`TimerError`]), named mailboxes
//! ([`MboxTypeMismatch`]) and state changes ([`UnknownState`]). The crate
//! has no umbrella error on purpose: an agent's reply slot holds an
//! [`AskError`], which is `Copy` and one byte, and would grow to hold
//! registration errors it can never see; registration and asking happen in
//! different places of a program (set-up and handlers), so one enum would
//! only add arms. None carries a `String` in place of a cause: a refused
//! thread is the kernel's [`takt_sched::SchedError`], reachable through
//! `source()`. `Display` and `std::error::Error` are written by hand rather
//! than derived with `thiserror`, so that the runtime depends on
//! takt-sched and crossbeam only; `?` turns any of them into a
//! `Box<dyn Error>` where a caller wants one type.
//!
//! ## How it is fast
//! A message of up to 16 bytes travels inline in a 32-byte queue slot
//! with a monomorphized event function; a send between agents of one
//! dispatcher thread tests one flag and writes the envelope straight into
//! the worker's ring (no atomics, no reference count, no allocation), and
//! the worker runs it in place through a per-agent handler cache; sends
//! across threads use a Vyukov MPSC queue, wake the consumer only when it
//! announced it sleeps, and keep the sender's and the receiver's writes on
//! different cache lines. See `worker.rs`, `agent.rs` and `addr.rs` for
//! the invariants, and the crate README for the design.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod addr;
mod agent;
mod ask;
mod coop;
mod ctx;
pub mod dispatcher;
mod envelope;
mod handle;
mod limits;
mod mbox;
mod panic;
pub mod queue;
mod ring;
mod runtime;
pub mod state;
mod stats;
mod timer;
mod trace;
mod worker;

pub use addr::{Addr, Delivery};
pub use agent::{Agent, AgentId, Message};
pub use ask::{pending, Ask, AskError, Pending, Promise};
pub use coop::{CoopBuilder, CoopHandle, RegError};
pub use ctx::{Ctx, UnknownState};
pub use dispatcher::{Binding, BindingError, Dispatcher, DispatcherKind};
pub use handle::{Accept, Answer, Recipient, Requester};
pub use limits::{Limits, Overflow};
pub use mbox::{Mbox, MboxTypeMismatch};
pub use panic::{PanicReaction, PanicReport};
pub use runtime::{Config, Runtime, RuntimeHandle, ShutdownReport};
pub use state::{DefineError, DefineProblem, Definer, State, StateBuilder};
pub use stats::{AgentStats, DispatcherStats};
pub use timer::{TimerError, TimerHandle};
pub use trace::{TraceEvent, TraceFilter, TraceKind, Tracer};
