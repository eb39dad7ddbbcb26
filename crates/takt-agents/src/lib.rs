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
//! struct Ping(u32);
//! struct Player { peer: Option<Addr<Player>>, left: u32 }
//!
//! impl Agent for Player {
//!     fn define(def: &mut Definer<Self>) {
//!         def.on(|me: &mut Player, ctx: &mut Ctx<Player>, Ping(n): Ping| {
//!             if n == 0 || me.left == 0 {
//!                 ctx.deregister_coop();
//!             } else {
//!                 me.left -= 1;
//!                 me.peer.as_ref().unwrap().send(Ping(n - 1));
//!             }
//!         });
//!     }
//! }
//!
//! let rt = Runtime::new(Config::default());
//! let disp = rt.one_thread("main").unwrap();
//! let mut coop = rt.coop("game");
//! let a = coop.add(Player { peer: None, left: 100 }, &disp).unwrap();
//! let b = coop.add(Player { peer: Some(a.clone()), left: 100 }, &disp).unwrap();
//! let game = coop.register().unwrap();
//! // Close the loop from outside, then serve.
//! # struct SetPeer;
//! b.send(Ping(0)); // b has no work: it deregisters the game at once
//! assert!(game.wait_timeout(std::time::Duration::from_secs(10)));
//! let report = rt.shutdown();
//! assert_eq!(report.coops_timed_out, 0);
//! # let _ = a;
//! ```
//!
//! ## The pieces
//! - [`Agent`], [`Definer`], [`State`], [`Ctx`]: behaviour, flat and
//!   hierarchical states with `on_enter`/`on_exit`, `change_state`
//!   (module [`state`]).
//! - [`Addr`]: send from anywhere ([`Addr::send`]), run inline
//!   ([`Addr::insend`]), request/reply ([`Addr::ask`], a [`Pending`] reply
//!   that is a `Future` for any executor and a blocking wait).
//! - [`Mbox`]: named publish/subscribe mailboxes.
//! - [`CoopBuilder`], [`CoopHandle`]: cooperations, parent/child.
//! - [`Dispatcher`]: one_thread, active_obj, active_group, thread_pool,
//!   work_stealing, priority (module [`dispatcher`] says which to choose).
//! - Timers ([`RuntimeHandle::send_after`], [`RuntimeHandle::send_every`]),
//!   [`Limits`] with [`Overflow`] reactions, [`Tracer`], counters
//!   ([`AgentStats`], [`DispatcherStats`]), [`PanicReaction`].
//!
//! ## Guarantees
//! - Messages from one sender to one receiver arrive in the order sent
//!   (insend events excepted: they run at once).
//! - An agent's handlers never run on two threads at once.
//! - `on_start` is an agent's first event, `on_finish` its last.
//! - A message that cannot be delivered (its agent finished, its queue torn
//!   down at shutdown) is counted, never silently lost.
//!
//! ## How it is fast
//! A message of up to 16 bytes travels inline in a 32-byte queue slot
//! with a monomorphized event function; sends between agents of one
//! dispatcher thread are plain `VecDeque` appends without atomics or
//! reference counting; sends across threads use a Vyukov MPSC queue and
//! wake the consumer only when it announced it sleeps. See `worker.rs` and
//! `agent.rs` for the invariants.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod agent;
mod ask;
mod coop;
mod ctx;
pub mod dispatcher;
mod envelope;
mod limits;
mod mbox;
mod panic;
pub mod queue;
mod runtime;
pub mod state;
mod stats;
mod timer;
mod trace;
mod worker;

pub use agent::{Addr, Agent, AgentId, Delivery, Message};
pub use ask::{Ask, AskError, Pending};
pub use coop::{CoopBuilder, CoopHandle, RegError};
pub use ctx::{Ctx, UnknownState};
pub use dispatcher::{Binding, Dispatcher, DispatcherKind};
pub use limits::{Limits, Overflow};
pub use mbox::{Mbox, MboxTypeMismatch};
pub use panic::{PanicReaction, PanicReport};
pub use runtime::{Config, Runtime, RuntimeHandle, ShutdownReport};
pub use state::{DefineError, Definer, State, StateBuilder};
pub use stats::{AgentStats, DispatcherStats};
pub use timer::{TimerError, TimerHandle};
pub use trace::{TraceEvent, TraceFilter, TraceKind, Tracer};
