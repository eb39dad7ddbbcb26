//! The event loop of a dispatcher thread that owns its agents
//! (one_thread, active_obj, active_group, priority).
//!
//! ## Two queues
//! - the *local* queue: a plain FIFO ring (`ring.rs`; one per priority
//!   for the priority dispatcher) touched
//!   only by the worker thread. A send from a handler running on this
//!   thread to an agent of this thread appends here: no atomic operation,
//!   no reference count, no wake-up.
//! - the *remote* queue: an `MpscQueue` for sends from other threads. The
//!   worker moves remote events into the local queue in batches.
//!
//! The local FIFO is written in place by the local send fast path
//! (`push_fifo`) and its events are run in place (`run_one`): an envelope
//! is never copied between the sender and its event function.
//!
//! ## References owed
//! A cross-thread envelope carries a strong reference to its target; the
//! worker takes it over on delivery and releases it later ([`Owed`]), so
//! the receiving thread does not write the reference count's cache line
//! once per message.
//!
//! ## Sleeping without lost wake-ups, and without needless ones
//! The remote queue is a [`WakeQueue`]: an idle worker spins for its
//! [`SpinBudget`], then sleeps; a producer wakes it only when it announced
//! it sleeps (see `queue.rs` for the Dekker argument).
//!
//! ## Stopping
//! A stopped worker runs what is queued, then closes: it sets `closed`
//! (SeqCst) and discards what remains. A producer that pushes after that
//! sees `closed` and discards the queue itself under `consumer_lock`, so no
//! event (and no agent reference it holds) is stranded.

use std::cell::{Cell, UnsafeCell};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::{Arc, Mutex};

use crossbeam_utils::CachePadded;
use takt_sched::sync::{AtomicBool, Ordering};
use takt_sched::SpinBudget;

use crate::agent::{Header, OwnerCounter};
use crate::envelope::{Envelope, EventFn};
use crate::panic::PanicPolicy;
use crate::queue::WakeQueue;
use crate::ring::Ring;
use crate::stats::WorkerCounters;

/// Events run between two looks at the remote queue (fairness between
/// local chatter and other threads' sends).
const BATCH: usize = 256;
/// Priority levels of the priority dispatcher.
pub(crate) const PRIORITIES: usize = 8;

/// The part of a worker other threads see.
pub(crate) struct WorkerShared {
    remote: WakeQueue<Envelope>,
    stop: AtomicBool,
    closed: AtomicBool,
    consumer_lock: Mutex<()>,
    budget: SpinBudget,
    prio: bool,
    pub(crate) panic: Arc<PanicPolicy>,
    /// Written by the worker after every batch: on a line of its own, so
    /// producers reading `closed`/`prio` on every push do not pull the
    /// worker's line across cores (and the worker does not lose it).
    pub(crate) counters: CachePadded<WorkerCounters>,
}

impl fmt::Debug for WorkerShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerShared")
            .field("prio", &self.prio)
            .finish_non_exhaustive()
    }
}

impl WorkerShared {
    pub(crate) fn new(budget: SpinBudget, prio: bool, panic: Arc<PanicPolicy>) -> Self {
        WorkerShared {
            remote: WakeQueue::new(),
            stop: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            consumer_lock: Mutex::new(()),
            budget,
            prio,
            panic,
            counters: CachePadded::new(WorkerCounters::default()),
        }
    }

    /// Whether this is a priority dispatcher's worker (local queue per
    /// priority).
    pub(crate) fn has_priorities(&self) -> bool {
        self.prio
    }

    /// Queues an event from another thread and wakes the worker if it
    /// sleeps. `prio` is the message's priority; a priority worker carries
    /// it in the envelope's priority tag, others ignore it.
    #[inline]
    pub(crate) fn push_remote(&self, e: Envelope, prio: u8) {
        let e = if self.prio { e.with_prio(prio) } else { e };
        self.remote.push(e);
        if self.closed.load(Ordering::SeqCst) {
            self.discard_after_close();
        }
    }

    /// Takes the oldest ready remote event, with its priority tag removed.
    ///
    /// # Safety
    /// Consumer only: the worker thread, or whoever holds `consumer_lock`
    /// after `closed`.
    #[inline(always)]
    unsafe fn pop_remote(&self) -> Option<(Envelope, u8)> {
        // SAFETY: caller's contract.
        let mut e = unsafe { self.remote.pop() }?;
        let prio = if self.prio { e.take_prio() } else { 0 };
        Some((e, prio))
    }

    #[cold]
    fn discard_after_close(&self) {
        let _g = self.consumer_lock.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: after `closed` the worker thread no longer consumes, and
        // `consumer_lock` serializes the producers that do.
        while let Some((e, _)) = unsafe { self.pop_remote() } {
            self.counters.discarded.fetch_add(1, Ordering::Relaxed);
            drop(e);
        }
    }

    /// Adds this worker's counters to `s`.
    pub(crate) fn add_stats(&self, s: &mut crate::DispatcherStats) {
        self.counters.add_to(s);
        s.parks += self.remote.parks();
        s.wakeups += self.remote.wakeups();
    }

    /// Asks the worker to stop once its queues are empty.
    pub(crate) fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.remote.wake();
    }

    /// Spin for `budget`, then sleep until the remote queue has an event
    /// or stop is asked; `core`'s owed references are released before it
    /// sleeps.
    fn idle_wait(&self, core: &WorkerCore, budget: SpinBudget) {
        // SAFETY: this runs on the worker thread, the queue's only consumer.
        unsafe {
            self.remote.wait_then(
                budget,
                || self.stop.load(Ordering::SeqCst),
                || core.release_owed(),
            )
        }
    }
}

impl Drop for WorkerShared {
    fn drop(&mut self) {
        // Normally empty (the worker discards at close); strip priority
        // tags before the envelopes' own drop sees their targets.
        // SAFETY: `&mut self`: no other consumer or producer.
        while let Some((e, _)) = unsafe { self.pop_remote() } {
            drop(e);
        }
    }
}

/// The local queue: one FIFO, or (priority dispatcher) one FIFO per
/// priority. The plain FIFO is the fast path: a worker without priorities
/// pays one predictable null check per push and pop for the choice.
struct LocalQueue {
    fifo: Ring<Envelope>,
    prio: Option<Box<PrioQueues>>,
}

struct PrioQueues {
    queues: [Ring<Envelope>; PRIORITIES],
    /// Bit p set iff `queues[p]` is non-empty.
    mask: u32,
}

impl LocalQueue {
    fn new(prio: bool) -> Self {
        if prio {
            LocalQueue {
                fifo: Ring::with_capacity(1),
                prio: Some(Box::new(PrioQueues {
                    queues: std::array::from_fn(|_| Ring::with_capacity(64)),
                    mask: 0,
                })),
            }
        } else {
            LocalQueue {
                fifo: Ring::with_capacity(1024),
                prio: None,
            }
        }
    }

    #[inline(always)]
    fn push(&mut self, e: Envelope, prio: u8) {
        match &mut self.prio {
            None => self.fifo.push_back(e),
            Some(q) => q.push(e, prio),
        }
    }

    #[inline(always)]
    fn pop(&mut self) -> Option<Envelope> {
        match &mut self.prio {
            None => self.fifo.pop_front(),
            Some(q) => q.pop(),
        }
    }
}

impl PrioQueues {
    #[inline(never)]
    fn push(&mut self, e: Envelope, prio: u8) {
        let p = (prio as usize).min(PRIORITIES - 1);
        self.queues[p].push_back(e);
        self.mask |= 1 << p;
    }

    #[inline(never)]
    fn pop(&mut self) -> Option<Envelope> {
        if self.mask == 0 {
            return None;
        }
        let p = 31 - self.mask.leading_zeros() as usize;
        let e = self.queues[p].pop_front();
        if self.queues[p].is_empty() {
            self.mask &= !(1 << p);
        }
        e
    }
}

/// The worker's own state, on its thread's stack; `CURRENT` points to it
/// while the loop runs.
pub(crate) struct WorkerCore {
    shared: *const WorkerShared,
    local: UnsafeCell<LocalQueue>,
    owed: UnsafeCell<Owed>,
}

/// Strong references to one agent cell that this worker has taken over
/// from delivered cross-thread envelopes and not released yet.
///
/// A cross-thread envelope carries a strong reference to its target (the
/// sender's increment). Releasing it at once would have the receiving
/// thread write the reference count's cache line for every message, the
/// same line the next cross-thread send increments: the line would cross
/// cores twice per message. Instead the worker counts what it owes, per
/// run of envelopes to one cell, and releases the run when the target
/// changes, when `OWED_MAX` is reached, before it sleeps and when it
/// stops. The cell merely lives a little longer (at most until the
/// worker's next sleep); nothing is reachable through the owed references.
struct Owed {
    hdr: *const Header,
    n: u32,
}

/// Owed references released in one go at most (bounds the work of a flush).
const OWED_MAX: u32 = 1024;

thread_local! {
    static CURRENT: Cell<*const WorkerCore> = const { Cell::new(ptr::null()) };
}

/// The current thread's worker core if it is the worker of `ws`.
#[inline(always)]
pub(crate) fn local_core(ws: &Arc<WorkerShared>) -> Option<&WorkerCore> {
    let cur = CURRENT.with(Cell::get);
    // SAFETY: a non-null CURRENT points to the core on this thread's stack,
    // valid until the worker loop clears it; the returned borrow is used
    // within the caller's call, which runs inside that loop.
    if !cur.is_null() && unsafe { (*cur).shared } == Arc::as_ptr(ws) {
        Some(unsafe { &*cur })
    } else {
        None
    }
}

/// Takes over the release of one strong reference to the cell `h` (a
/// delivered cross-thread envelope's): deferred on a worker thread (see
/// [`Owed`]), released at once elsewhere.
///
/// # Safety
/// The caller gives up one strong count of the live cell `h`.
#[inline(always)]
pub(crate) unsafe fn owe_release(h: *const Header) {
    let cur = CURRENT.with(Cell::get);
    if cur.is_null() {
        // SAFETY: caller's contract.
        unsafe { ((*h).vt.release)(h) }
    } else {
        // SAFETY: a non-null CURRENT is this thread's live core (as in
        // `local_core`); caller's contract for `h`.
        unsafe { (*cur).owe(h) }
    }
}

impl WorkerCore {
    /// Counts one owed reference to `h`.
    ///
    /// # Safety
    /// As for [`owe_release`]; called on the worker's thread.
    #[inline(always)]
    unsafe fn owe(&self, h: *const Header) {
        // SAFETY: `owed` is only touched on this thread, and no borrow of
        // it is held across a call that could reach it again.
        let o = unsafe { &mut *self.owed.get() };
        if std::ptr::eq(o.hdr, h) && o.n < OWED_MAX {
            o.n += 1;
        } else {
            // SAFETY: caller's contract.
            unsafe { self.owe_other(h) }
        }
    }

    /// `owe` for a new target: releases the previous run first.
    ///
    /// # Safety
    /// As for [`owe`](Self::owe).
    #[cold]
    #[inline(never)]
    unsafe fn owe_other(&self, h: *const Header) {
        self.release_owed();
        // SAFETY: as in `owe`; `release_owed` has returned.
        let o = unsafe { &mut *self.owed.get() };
        o.hdr = h;
        o.n = 1;
    }

    /// Releases every owed reference. Dropping the last one frees the cell
    /// (and runs the agent's `Drop`), so the state is cleared first.
    pub(crate) fn release_owed(&self) {
        // SAFETY: as in `owe`; the borrow ends before any release runs.
        let (h, n) = unsafe {
            let o = &mut *self.owed.get();
            let taken = (o.hdr, o.n);
            o.hdr = ptr::null();
            o.n = 0;
            taken
        };
        if n == 0 {
            return;
        }
        // SAFETY: we own `n` strong counts of the live cell `h`; its
        // vtable is read while we still hold them all.
        let release = unsafe { (*h).vt.release };
        for _ in 0..n {
            // SAFETY: each call gives up one of the counts we own.
            unsafe { release(h) };
        }
    }

    /// Appends to the local queue. Only called on the worker's thread.
    #[inline(always)]
    pub(crate) fn push_local(&self, e: Envelope, prio: u8) {
        // SAFETY: the local queue is only touched on this thread, and no
        // borrow of it is held across an event (see `run_loop`).
        unsafe { (*self.local.get()).push(e, prio) }
    }

    /// Builds an event directly in the FIFO ring. Only called on the
    /// worker's thread, for a worker without priorities.
    #[inline(always)]
    pub(crate) fn push_fifo<M>(&self, call: EventFn, target: usize, msg: M) {
        // SAFETY: as in `push_local`; the slot handed to the closure is
        // initialized by `write_at` (every field), and `call` is the event
        // function for `M` and `target` (the caller's send path).
        unsafe {
            let local = &mut *self.local.get();
            debug_assert!(local.prio.is_none());
            local
                .fifo
                .push_in_place(|slot| Envelope::write_at(slot, call, target, msg))
        }
    }

    /// Moves every ready remote event into the local queue, so an event
    /// pushed locally next runs after everything already sent from other
    /// threads too. Only called on the worker's thread (`local_core`).
    pub(crate) fn absorb_remote(&self, sh: &WorkerShared) {
        debug_assert!(std::ptr::eq(self.shared, sh));
        // SAFETY: this thread is the worker of `sh`, the remote queue's
        // only consumer.
        while let Some((e, prio)) = unsafe { sh.pop_remote() } {
            self.push_local(e, prio);
        }
    }

    /// Runs the next local event; false if the local queue is empty.
    /// `PRIO` says which local queue this worker has (a constant per loop).
    #[inline(always)]
    fn run_one<const PRIO: bool>(&self) -> bool {
        if PRIO {
            // SAFETY: as in `push_local`; the borrow ends before the event runs.
            match unsafe { (*self.local.get()).pop() } {
                Some(e) => {
                    e.deliver();
                    true
                }
                None => false,
            }
        } else {
            // SAFETY: as in `push_local`; the borrow ends before the event
            // runs. The popped slot is run in place: the event function
            // takes the payload before it can push (the `EventFn`
            // contract), and nothing else touches the slot, which the ring
            // no longer counts as occupied.
            unsafe {
                match (*self.local.get()).fifo.pop_front_in_place() {
                    Some(slot) => {
                        Envelope::deliver_at(slot);
                        true
                    }
                    None => false,
                }
            }
        }
    }

    fn run_loop(&self, sh: &WorkerShared) {
        if sh.prio {
            self.run_loop_with::<true>(sh)
        } else {
            self.run_loop_with::<false>(sh)
        }
    }

    fn run_loop_with<const PRIO: bool>(&self, sh: &WorkerShared) {
        let clock = takt_sched::clock();
        let mut busy_since = clock.now();
        // Until its first event a worker waits without spinning: that
        // event is the start of an agent bound to it, which comes when the
        // agent's cooperation is registered, after the binding made this
        // thread and typically after more agents (more threads, for
        // active_obj) were added; a spin for it would hold a CPU that the
        // registering thread needs. Afterwards a wait spins for the budget.
        let mut budget = SpinBudget::NONE;
        loop {
            let mut ran = 0usize;
            while ran < BATCH && self.run_one::<PRIO>() {
                ran += 1;
            }
            if ran > 0 {
                budget = sh.budget;
            }
            sh.counters.events.add(ran as u64);
            let mut moved = 0usize;
            while moved < BATCH {
                // SAFETY: this thread is the remote queue's consumer.
                match unsafe { sh.pop_remote() } {
                    Some((e, prio)) => {
                        self.push_local(e, prio);
                        moved += 1;
                    }
                    None => break,
                }
            }
            if ran == 0 && moved == 0 {
                if sh.stop.load(Ordering::Acquire) {
                    self.release_owed();
                    sh.counters
                        .busy_ticks
                        .add(clock.now().saturating_sub(busy_since));
                    return;
                }
                sh.counters
                    .busy_ticks
                    .add(clock.now().saturating_sub(busy_since));
                sh.idle_wait(self, budget);
                busy_since = clock.now();
            }
        }
    }
}

/// The body of a worker thread.
pub(crate) fn run_worker(shared: Arc<WorkerShared>) {
    let core = WorkerCore {
        shared: Arc::as_ptr(&shared),
        local: UnsafeCell::new(LocalQueue::new(shared.prio)),
        owed: UnsafeCell::new(Owed {
            hdr: ptr::null(),
            n: 0,
        }),
    };
    CURRENT.with(|c| c.set(&core));
    loop {
        match catch_unwind(AssertUnwindSafe(|| core.run_loop(&shared))) {
            Ok(()) => break,
            Err(payload) => crate::panic::recovered(&shared.panic, payload),
        }
    }
    core.release_owed();
    // Stop: close, then discard what is left (local first: its events may
    // release agents whose later events are remote).
    shared.closed.store(true, Ordering::SeqCst);
    CURRENT.with(|c| c.set(ptr::null()));
    let mut n = 0u64;
    // SAFETY: we are the only user of the local queue.
    while let Some(e) = unsafe { (*core.local.get()).pop() } {
        drop(e);
        n += 1;
    }
    shared.counters.discarded.fetch_add(n, Ordering::Relaxed);
    shared.discard_after_close();
}
