//! Counters: per agent and per dispatcher.
//!
//! Counters that only the thread running an agent writes are bumped with a
//! plain load and store (no read-modify-write); counters written by senders
//! use `fetch_add`. All are `Relaxed`: a snapshot is eventually consistent,
//! never torn per counter, and is not a synchronization point.

use std::time::Duration;

use takt_sched::sync::{AtomicPtr, AtomicU64, Ordering};

use crate::AgentId;

/// Per-agent counters that are rarely written, allocated on first use so
/// that an agent's hot fields fit in one cache line (see `agent.rs`).
#[derive(Default)]
pub(crate) struct ColdCounters {
    /// Senders (RMW): messages queued from other threads.
    pub(crate) enq_remote: AtomicU64,
    /// Messages with no handler in the current state.
    pub(crate) unhandled: AtomicU64,
    /// Messages that reached the agent after it finished or were torn down.
    pub(crate) undelivered: AtomicU64,
    /// Of `undelivered`, those taken from the queue (counted in `dequeued`).
    pub(crate) dead_dequeued: AtomicU64,
    /// Messages over a limit (dropped, redirected, transformed).
    pub(crate) overflow: AtomicU64,
    /// Invalid state changes (unknown state, endless hook chains).
    pub(crate) bad_state: AtomicU64,
    /// TSC ticks spent in handlers (when timing is on).
    pub(crate) handler_ticks: AtomicU64,
}

/// A lazily allocated [`ColdCounters`].
pub(crate) struct LazyCold(AtomicPtr<ColdCounters>);

impl LazyCold {
    pub(crate) fn new() -> Self {
        LazyCold(AtomicPtr::new(std::ptr::null_mut()))
    }

    /// The counters, allocating them on first use. Inline: every
    /// cross-thread and pool send counts here.
    #[inline]
    pub(crate) fn get(&self) -> &ColdCounters {
        match self.peek() {
            Some(c) => c,
            None => self.alloc(),
        }
    }

    /// `get` when the counters do not exist yet (or another thread is
    /// publishing them).
    #[cold]
    #[inline(never)]
    fn alloc(&self) -> &ColdCounters {
        // Acquire pairs with the Release (AcqRel) of the winning CAS below:
        // the counters are initialized when we see the pointer.
        let p = self.0.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: published once, freed only in Drop.
            return unsafe { &*p };
        }
        let fresh = Box::into_raw(Box::default());
        match self.0.compare_exchange(
            std::ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: we published it; freed only in Drop.
            Ok(_) => unsafe { &*fresh },
            Err(winner) => {
                // SAFETY: `fresh` was never shared; `winner` is published.
                unsafe {
                    drop(Box::from_raw(fresh));
                    &*winner
                }
            }
        }
    }

    #[inline]
    pub(crate) fn peek(&self) -> Option<&ColdCounters> {
        // SAFETY: published once, freed only in Drop. Acquire pairs with
        // the Release (AcqRel) of the publishing CAS in `alloc`.
        unsafe { self.0.load(Ordering::Acquire).as_ref() }
    }
}

impl Drop for LazyCold {
    fn drop(&mut self) {
        // Relaxed: `&mut self`, no concurrent user.
        let p = self.0.load(Ordering::Relaxed);
        if !p.is_null() {
            // SAFETY: allocated by `get` with Box; no other user remains.
            unsafe { drop(Box::from_raw(p)) }
        }
    }
}

/// Builds a snapshot from the hot and cold counters.
pub(crate) fn agent_snapshot(
    id: AgentId,
    type_name: &'static str,
    enq_local: &AtomicU64,
    dequeued: &AtomicU64,
    cold: &LazyCold,
) -> AgentStats {
    let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let zero = ColdCounters::default();
    let c = cold.peek().unwrap_or(&zero);
    let deq = r(dequeued);
    let enq = r(enq_local) + r(&c.enq_remote);
    AgentStats {
        id,
        agent_type: type_name,
        queued: enq.saturating_sub(deq),
        handled: deq
            .saturating_sub(r(&c.unhandled))
            .saturating_sub(r(&c.dead_dequeued)),
        unhandled: r(&c.unhandled),
        undelivered: r(&c.undelivered),
        overflow: r(&c.overflow),
        bad_state_changes: r(&c.bad_state),
        time_in_handlers: Duration::from_nanos(
            takt_sched::clock().ticks_to_ns(r(&c.handler_ticks)),
        ),
    }
}

/// A snapshot of one agent's counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentStats {
    /// The agent.
    pub id: AgentId,
    /// Its Rust type.
    pub agent_type: &'static str,
    /// Messages sent to it and not yet taken from its queue (approximate
    /// while traffic flows).
    pub queued: u64,
    /// Messages a handler ran for.
    pub handled: u64,
    /// Messages with no handler in the state they arrived in.
    pub unhandled: u64,
    /// Messages that arrived after it finished, or were torn down in a queue.
    pub undelivered: u64,
    /// Messages over a configured limit.
    pub overflow: u64,
    /// Rejected state changes.
    pub bad_state_changes: u64,
    /// Time spent in its handlers (zero unless `Config::handler_timing`).
    pub time_in_handlers: Duration,
}

/// Per-worker-thread counters.
#[derive(Default)]
pub(crate) struct WorkerCounters {
    /// Owner: events run.
    pub(crate) events: AtomicU64,
    /// Owner: times the thread slept in the kernel.
    pub(crate) parks: AtomicU64,
    /// Senders (RMW): wake-ups sent to a sleeping thread.
    pub(crate) wakeups: AtomicU64,
    /// Owner: TSC ticks between leaving and entering idle.
    pub(crate) busy_ticks: AtomicU64,
    /// Owner: events found in the queues at stop and discarded.
    pub(crate) discarded: AtomicU64,
}

/// A snapshot of a dispatcher's counters (summed over its threads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatcherStats {
    /// The dispatcher's name.
    pub name: String,
    /// Its kind (`one_thread`, `thread_pool`, ...).
    pub kind: &'static str,
    /// Threads it has started (alive or finished).
    pub threads: usize,
    /// Events run.
    pub events: u64,
    /// Times a thread went to sleep after its spin budget.
    pub parks: u64,
    /// Wake-ups senders had to send.
    pub wakeups: u64,
    /// Time its threads spent out of idle.
    pub busy: Duration,
    /// Events discarded when its threads stopped.
    pub discarded: u64,
}

impl WorkerCounters {
    pub(crate) fn add_to(&self, s: &mut DispatcherStats) {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        s.events += r(&self.events);
        s.parks += r(&self.parks);
        s.wakeups += r(&self.wakeups);
        s.busy += Duration::from_nanos(takt_sched::clock().ticks_to_ns(r(&self.busy_ticks)));
        s.discarded += r(&self.discarded);
    }
}
