//! Addresses and the send path: how a message reaches an agent's cell.
//!
//! An [`Addr<A>`] is one strong reference to an agent's cell (an
//! `Arc<AgentCell<A>>`, see `agent.rs`): cloning it is an atomic
//! increment, two addresses are equal when they name the same agent, and
//! while one exists the cell (not the agent's life: it may finish) stays
//! allocated. Sending through it costs no reference count on the local
//! fast path.
//!
//! ## How a send reaches a cell
//! - [`Addr::send`] is [`send_raw`]: if the cell's `fast_send` flag is set
//!   (alive, a thread sink without priorities, no limits) and tracing is
//!   off, a send from the agent's own worker thread writes an untagged
//!   envelope straight into the worker's FIFO ring; one from another thread
//!   takes a strong reference for the envelope (tagged with `REF_TAG`) and
//!   pushes it on the worker's remote queue (`send_remote_plain`).
//! - Everything else is [`send_slow`]: the agent's [`Limits`](crate::Limits)
//!   admit the message (or apply their reaction), tracing records it, a
//!   send on the agent's thread to a finished agent is counted as
//!   undelivered and dropped, a local send goes to the worker's local
//!   queue at its priority, a remote one is tagged as above, and a
//!   pool-bound agent's event goes to its own queue, after which the sender
//!   that takes the agent's scheduling token (`PoolSink::take_token`)
//!   hands the agent, with a new strong reference, to the pool.
//! - [`Addr::insend`] runs the handler inside the call when the caller may
//!   run the agent (its thread, the agent alive and not already in a
//!   handler; or a worker of its pool holding the idle agent's token,
//!   given back by `TokenGuard`), and otherwise sends.
//! - [`post_signal`] queues a lifecycle event (start, finish) that carries
//!   its own reference, bypassing limits and tracing.
//!
//! ## The invariants the send path relies on
//! - The caller of [`send_raw`] / [`send_slow`] keeps the cell alive for
//!   the call (an `Addr`, or the agent sending to itself through `Ctx`).
//! - An untagged envelope on a worker's queue needs no reference: the
//!   cooperation's reference is released by a release event queued behind
//!   it on the same thread, and a send on that thread to a finished agent
//!   is dropped (`fast_send` and `alive` are cleared by the finish event).
//!   This is the cell-lifetime contract stated in `agent.rs` ("Who keeps a
//!   cell alive"); the finish and release events that uphold it are there.
//! - A tagged envelope owns one strong count, which `agent::deliver` hands
//!   to the worker (`worker::owe_release`).
//! - A pool-bound agent's message envelopes are untagged too: they live in
//!   the cell's own queue, which the cell drains when it drops
//!   (`AgentCell`'s `Drop`), and the worker running them holds the
//!   run-queue entry's reference (`run_agent` in `dispatcher/pool.rs`).
//! - `fast_send` is only ever set for thread sinks (`coop.rs`), and a
//!   cell's sink never changes: the fast path does not check the sink's kind.
//! - An inline run needs exclusive execution: the "Exclusive execution"
//!   section of `agent.rs` and the token protocol on `PoolSink` there.

use std::fmt;
use std::sync::Arc;

use takt_sched::sync::Ordering;

use crate::agent::{
    deliver, Agent, AgentCell, AgentId, AgentRef, Header, Message, OwnerCounter, Sink,
};
use crate::envelope::{Envelope, EventFn, REF_TAG};
use crate::stats::agent_snapshot;
use crate::trace;
use crate::worker::{self, WorkerShared};

/// What became of an [`Addr::insend`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// The handler ran inside the call, on the caller's thread.
    Inline,
    /// The binding did not allow it (another thread, the target was busy):
    /// the message was queued as by `send`.
    Queued,
}

/// The address of an agent: send to it from anywhere.
///
/// Cloning is an atomic increment; sending through a reference costs none.
pub struct Addr<A: Agent> {
    cell: Arc<AgentCell<A>>,
}

impl<A: Agent> Clone for Addr<A> {
    fn clone(&self) -> Self {
        Addr {
            cell: self.cell.clone(),
        }
    }
}

impl<A: Agent> fmt::Debug for Addr<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Addr({}{})",
            std::any::type_name::<A>(),
            self.cell.hdr.id
        )
    }
}

impl<A: Agent> PartialEq for Addr<A> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.cell, &other.cell)
    }
}
impl<A: Agent> Eq for Addr<A> {}

impl<A: Agent> Addr<A> {
    pub(crate) fn from_cell(cell: Arc<AgentCell<A>>) -> Self {
        Addr { cell }
    }

    pub(crate) fn cell(&self) -> &AgentCell<A> {
        &self.cell
    }

    /// The agent's id.
    pub fn id(&self) -> AgentId {
        self.cell.hdr.id
    }

    /// Whether the agent has not finished yet (a hint: it may finish at any time).
    pub fn is_alive(&self) -> bool {
        self.cell.hdr.alive.load(Ordering::Relaxed)
    }

    /// The agent's counters.
    pub fn stats(&self) -> crate::AgentStats {
        let h = &self.cell.hdr;
        agent_snapshot(
            h.id,
            std::any::type_name::<A>(),
            &h.enq_local,
            &h.dequeued,
            &h.cold,
        )
    }

    /// Queues `msg` for the agent. Never blocks. From the agent's own
    /// dispatcher thread this is a plain queue append; from elsewhere it is
    /// a lock-free push plus a wake-up if the thread sleeps.
    ///
    /// A message for a finished agent is dropped and counted as undelivered;
    /// a message over a configured limit gets the limit's reaction.
    #[inline]
    pub fn send<M: Message>(&self, msg: M) {
        // SAFETY: `self` holds a strong reference for the whole call.
        unsafe { send_raw::<A, M>(Arc::as_ptr(&self.cell), msg) }
    }

    /// Queues `msg` with message priority `prio` (0–7, higher runs first;
    /// larger values count as 7). On a priority dispatcher events run
    /// strictly by message priority, FIFO within one priority; [`send`]
    /// uses the priority of the agent's binding
    /// ([`Dispatcher::priority`](crate::Dispatcher::priority), 0 by
    /// default). Other dispatchers keep one FIFO and ignore the priority.
    ///
    /// [`send`]: Self::send
    pub fn send_with_priority<M: Message>(&self, msg: M, prio: u8) {
        // SAFETY: `self` holds a strong reference for the whole call.
        unsafe { send_slow::<A, M>(Arc::as_ptr(&self.cell), msg, prio.min(7)) }
    }

    /// Runs the agent's handler for `msg` inside this call when the binding
    /// allows it, otherwise queues it as [`send`](Self::send) does.
    ///
    /// The binding allows it when the handler can run on the caller's
    /// thread without breaking the dispatcher's guarantees:
    /// - a thread-bound agent (one_thread, active_obj, active_group,
    ///   priority): the caller is the agent's dispatcher thread, and the
    ///   agent is alive and not already in a handler;
    /// - a pool-bound agent (thread_pool, work_stealing): the caller is a
    ///   worker thread of the same pool, and the agent is idle — nothing
    ///   queued, not running anywhere. The caller then takes the agent's
    ///   scheduling token (the same token a worker holds while it runs the
    ///   agent), so the agent still never runs on two threads at once;
    ///   whatever was sent to it meanwhile is handed to the pool when the
    ///   handler returns.
    ///
    /// An insend event bypasses messages already queued for the agent
    /// (a thread-bound agent may have some; an idle pool-bound one has
    /// none). It is not subject to the agent's [`Limits`](crate::Limits),
    /// which bound queues.
    pub fn insend<M: Message>(&self, msg: M) -> Delivery {
        let h = &self.cell.hdr;
        match &h.sink {
            Sink::Thread(ws) => {
                if worker::local_core(ws).is_some()
                    && !h.running.get()
                    && h.alive.load(Ordering::Relaxed)
                {
                    h.enq_local.bump();
                    self.cell.handle(msg);
                    return Delivery::Inline;
                }
            }
            Sink::Pool(p) => {
                if p.pool.is_current_worker() && p.try_take_idle_token() {
                    // We hold the token: we are the agent's only runner, and
                    // (Acquire in `try_take_idle_token`) see everything its
                    // previous runner did, `alive` included.
                    let token = TokenGuard(&self.cell);
                    if h.alive.load(Ordering::Relaxed) {
                        h.enq_local.bump();
                        self.cell.handle(msg);
                        drop(token);
                        return Delivery::Inline;
                    }
                    drop(token);
                }
            }
        }
        self.send(msg);
        Delivery::Queued
    }
}

/// Gives back a pool-bound agent's token taken by an insend, also when the
/// handler unwinds: what was sent meanwhile is handed to the pool.
struct TokenGuard<'a, A: Agent>(&'a Arc<AgentCell<A>>);

impl<A: Agent> Drop for TokenGuard<'_, A> {
    fn drop(&mut self) {
        let Sink::Pool(p) = &self.0.hdr.sink else {
            unreachable!("only pool sinks have tokens")
        };
        if p.release_insend_token() {
            // SAFETY: `self.0` is a strong reference; the new count belongs
            // to the run-queue entry.
            let r = unsafe {
                let cell = Arc::as_ptr(self.0);
                Arc::increment_strong_count(cell);
                AgentRef::from_raw(cell.cast::<Header>())
            };
            p.pool.schedule(r);
        }
    }
}

/// The send path.
///
/// The fast path — the agent's `fast_send` flag (alive, no limits, a
/// thread sink without priorities), tracing off, the caller on the
/// agent's own worker thread — writes the envelope straight into the
/// worker's FIFO ring: no atomic read-modify-write, no reference count,
/// no branch on limits or priorities. Everything else is [`send_slow`].
///
/// # Safety
/// `cell` must stay alive for the call (the caller holds a reference, or
/// is the agent itself).
#[inline(always)]
pub(crate) unsafe fn send_raw<A: Agent, M: Message>(cell: *const AgentCell<A>, msg: M) {
    // SAFETY: caller's contract.
    let c = unsafe { &*cell };
    let h = &c.hdr;
    if h.fast_send.load(Ordering::Relaxed) && !trace::active() {
        let Sink::Thread(ws) = &h.sink else {
            // SAFETY: `fast_send` is only ever set for thread sinks
            // (`coop.rs`), and the sink never changes.
            unsafe { std::hint::unreachable_unchecked() }
        };
        if let Some(core) = worker::local_core(ws) {
            h.enq_local.bump();
            prefetch_body(cell);
            // `fast_send` implies a worker without priorities: the FIFO
            // ring is its local queue.
            core.push_fifo(deliver::<A, M> as EventFn, cell as usize, msg);
        } else {
            // SAFETY: caller's contract.
            unsafe { send_remote_plain::<A, M>(cell, ws, msg) };
        }
        return;
    }
    // SAFETY: caller's contract.
    unsafe { send_slow::<A, M>(cell, msg, h.prio) }
}

/// A send from another thread to a `fast_send` agent (no limits, no
/// priorities, tracing off): the checks are done, what is left is the
/// reference the envelope carries, the counter and the push.
///
/// # Safety
/// As for [`send_raw`]; `ws` is the cell's sink.
#[inline(never)]
unsafe fn send_remote_plain<A: Agent, M: Message>(
    cell: *const AgentCell<A>,
    ws: &WorkerShared,
    msg: M,
) {
    // SAFETY: the caller's reference keeps the cell alive; the new count
    // travels with the envelope.
    unsafe { Arc::increment_strong_count(cell) };
    // SAFETY: caller's contract.
    let h = unsafe { &(*cell).hdr };
    h.cold.get().enq_remote.fetch_add(1, Ordering::Relaxed);
    ws.push_remote(
        Envelope::new(deliver::<A, M>, cell as usize | REF_TAG, msg),
        0,
    );
}

/// Every send but the local fast path: limits, tracing, a finished agent,
/// priorities, sends from other threads, pool sinks. `prio` is the
/// message's priority (used by the priority dispatcher only).
///
/// # Safety
/// As for [`send_raw`].
#[inline(never)]
pub(crate) unsafe fn send_slow<A: Agent, M: Message>(cell: *const AgentCell<A>, msg: M, prio: u8) {
    // SAFETY: caller's contract.
    let c = unsafe { &*cell };
    let h = &c.hdr;
    let msg = match &h.limits {
        None => msg,
        Some(l) => match l.admit::<M>(msg, h) {
            Some(m) => m,
            None => return,
        },
    };
    if trace::active() {
        trace::send(h, std::any::type_name::<M>());
    }
    match &h.sink {
        Sink::Thread(ws) => {
            if let Some(core) = worker::local_core(ws) {
                if !h.alive.load(Ordering::Relaxed) {
                    if let Some(l) = &h.limits {
                        l.release::<M>();
                    }
                    h.count_undelivered();
                    return;
                }
                h.enq_local.bump();
                prefetch_body(cell);
                core.push_local(Envelope::new(deliver::<A, M>, cell as usize, msg), prio);
            } else {
                // SAFETY: the caller's reference keeps the cell alive; the
                // new count travels with the envelope.
                unsafe { Arc::increment_strong_count(cell) };
                h.cold.get().enq_remote.fetch_add(1, Ordering::Relaxed);
                ws.push_remote(
                    Envelope::new(deliver::<A, M>, cell as usize | REF_TAG, msg),
                    prio,
                );
            }
        }
        Sink::Pool(p) => {
            h.cold.get().enq_remote.fetch_add(1, Ordering::Relaxed);
            p.queue
                .push(Envelope::new(deliver::<A, M>, cell as usize, msg));
            if p.take_token() {
                // SAFETY: caller's reference keeps it alive; the new count
                // belongs to the run-queue entry.
                let r = unsafe {
                    Arc::increment_strong_count(cell);
                    AgentRef::from_raw(cell.cast::<Header>())
                };
                p.pool.schedule(r);
            }
        }
    }
}

/// Asks for the first cache line of the agent value, which the dispatch
/// of the message just queued will read (the send itself has touched the
/// sender and owner blocks).
#[inline(always)]
fn prefetch_body<A: Agent>(cell: *const AgentCell<A>) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86_64 baseline, and a prefetch is a hint
    // that never faults; the address is computed without dereferencing.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            std::ptr::addr_of!((*cell).agent).cast::<i8>(),
        )
    };
}

/// Queues a signal event (start, finish) carrying a strong reference.
/// With `after_all` the event runs after everything already sent to the
/// agent from any thread (a finish event must): on the agent's own thread
/// the ready remote events are first moved into the local queue.
///
/// `prio` is the event's priority on a priority dispatcher
/// ([`START_PRIO`](crate::agent::START_PRIO) or
/// [`LAST_PRIO`](crate::agent::LAST_PRIO)).
pub(crate) fn post_signal(
    h: &Header,
    call: EventFn,
    tagged_target: usize,
    after_all: bool,
    prio: u8,
) {
    let e = Envelope::signal(call, tagged_target);
    match &h.sink {
        Sink::Thread(ws) => match worker::local_core(ws) {
            Some(core) => {
                if after_all {
                    core.absorb_remote(ws);
                }
                core.push_local(e, prio)
            }
            None => ws.push_remote(e, prio),
        },
        Sink::Pool(p) => {
            p.queue.push(e);
            if p.take_token() {
                // SAFETY: `h` is alive (the envelope holds a count); this
                // new count belongs to the run-queue entry.
                let r = unsafe {
                    (h.vt.retain)(h);
                    AgentRef::from_raw(h)
                };
                p.pool.schedule(r);
            }
        }
    }
}
