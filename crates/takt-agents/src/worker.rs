//! The event loop of a dispatcher thread that owns its agents
//! (one_thread, active_obj, active_group, priority).
//!
//! ## Two queues
//! - the *local* queue: a plain `VecDeque` (or one per priority) touched
//!   only by the worker thread. A send from a handler running on this
//!   thread to an agent of this thread appends here: no atomic operation,
//!   no reference count, no wake-up.
//! - the *remote* queue: an [`MpscQueue`] for sends from other threads. The
//!   worker moves remote events into the local queue in batches.
//!
//! ## Sleeping without lost wake-ups, and without needless ones
//! An idle worker first spins for its [`SpinBudget`] watching the remote
//! queue, then announces `sleepy` (SeqCst store), re-checks the queue
//! (SeqCst load) and parks on its [`Parker`]. A producer pushes (SeqCst link
//! store) and then loads `sleepy` (SeqCst): by the Dekker argument either
//! the worker sees the event or the producer sees `sleepy` and unparks. A
//! producer that finds the worker awake — the common case under load — does
//! no read-modify-write on the parker at all.
//!
//! ## Stopping
//! A stopped worker runs what is queued, then closes: it sets `closed`
//! (SeqCst) and discards what remains. A producer that pushes after that
//! sees `closed` and discards the queue itself under `consumer_lock`, so no
//! event (and no agent reference it holds) is stranded.

use std::cell::{Cell, UnsafeCell};
use std::collections::VecDeque;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::{Arc, Mutex};

use crossbeam_utils::CachePadded;
use takt_sched::sync::{AtomicBool, Ordering};
use takt_sched::{Parker, SpinBudget};

use crate::agent::{header_at, OwnerCounter};
use crate::envelope::Envelope;
use crate::panic::PanicPolicy;
use crate::queue::MpscQueue;
use crate::stats::WorkerCounters;

/// Events run between two looks at the remote queue (fairness between
/// local chatter and other threads' sends).
const BATCH: usize = 256;
/// Priority levels of the priority dispatcher.
pub(crate) const PRIORITIES: usize = 8;

/// The part of a worker other threads see.
pub(crate) struct WorkerShared {
    remote: CachePadded<MpscQueue<Envelope>>,
    /// True while the worker is about to sleep or sleeping (see module docs).
    sleepy: CachePadded<AtomicBool>,
    parker: Parker,
    stop: AtomicBool,
    closed: AtomicBool,
    consumer_lock: Mutex<()>,
    budget: SpinBudget,
    prio: bool,
    pub(crate) panic: Arc<PanicPolicy>,
    pub(crate) counters: WorkerCounters,
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
            remote: CachePadded::new(MpscQueue::new()),
            sleepy: CachePadded::new(AtomicBool::new(false)),
            // The worker spins itself (watching its queue); the parker only sleeps.
            parker: Parker::new(SpinBudget::NONE),
            stop: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            consumer_lock: Mutex::new(()),
            budget,
            prio,
            panic,
            counters: WorkerCounters::default(),
        }
    }

    /// Queues an event from another thread and wakes the worker if it sleeps.
    #[inline]
    pub(crate) fn push_remote(&self, e: Envelope) {
        self.remote.push(e);
        // SeqCst: pairs with the worker's SeqCst store of `sleepy` followed
        // by its SeqCst re-check of the queue (module docs).
        if self.sleepy.load(Ordering::SeqCst) {
            self.counters.wakeups.fetch_add(1, Ordering::Relaxed);
            self.parker.unpark();
        }
        if self.closed.load(Ordering::SeqCst) {
            self.discard_after_close();
        }
    }

    #[cold]
    fn discard_after_close(&self) {
        let _g = self.consumer_lock.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: after `closed` the worker thread no longer consumes, and
        // `consumer_lock` serializes the producers that do.
        while let Some(e) = unsafe { self.remote.pop() } {
            self.counters.discarded.fetch_add(1, Ordering::Relaxed);
            drop(e);
        }
    }

    /// Asks the worker to stop once its queues are empty.
    pub(crate) fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.parker.unpark();
    }

    /// Spin, then sleep until the remote queue has an event or stop is asked.
    fn idle_wait(&self) {
        // SAFETY (all `is_ready*` calls): this runs on the worker thread,
        // the queue's only consumer.
        let ready = || unsafe { self.remote.is_ready() } || self.stop.load(Ordering::Relaxed);
        if self.budget.spin_until(ready) {
            return;
        }
        self.sleepy.store(true, Ordering::SeqCst);
        // SAFETY: consumer thread.
        if unsafe { self.remote.is_ready_seqcst() } || self.stop.load(Ordering::SeqCst) {
            self.sleepy.store(false, Ordering::Relaxed);
            return;
        }
        self.counters.parks.bump();
        self.parker.park();
        self.sleepy.store(false, Ordering::Relaxed);
    }
}

/// The local queue: FIFO, or one FIFO per priority.
enum LocalQueue {
    Fifo(VecDeque<Envelope>),
    Prio {
        queues: Box<[VecDeque<Envelope>; PRIORITIES]>,
        /// Bit p set iff `queues[p]` is non-empty.
        mask: u32,
    },
}

impl LocalQueue {
    #[inline(always)]
    fn push(&mut self, e: Envelope, prio: u8) {
        match self {
            LocalQueue::Fifo(q) => q.push_back(e),
            LocalQueue::Prio { queues, mask } => {
                let p = (prio as usize).min(PRIORITIES - 1);
                queues[p].push_back(e);
                *mask |= 1 << p;
            }
        }
    }

    #[inline(always)]
    fn pop(&mut self) -> Option<Envelope> {
        match self {
            LocalQueue::Fifo(q) => q.pop_front(),
            LocalQueue::Prio { queues, mask } => {
                if *mask == 0 {
                    return None;
                }
                let p = 31 - mask.leading_zeros() as usize;
                let e = queues[p].pop_front();
                if queues[p].is_empty() {
                    *mask &= !(1 << p);
                }
                e
            }
        }
    }
}

/// The worker's own state, on its thread's stack; `CURRENT` points to it
/// while the loop runs.
pub(crate) struct WorkerCore {
    shared: *const WorkerShared,
    local: UnsafeCell<LocalQueue>,
}

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

impl WorkerCore {
    /// Appends to the local queue. Only called on the worker's thread.
    #[inline(always)]
    pub(crate) fn push_local(&self, e: Envelope, prio: u8) {
        // SAFETY: the local queue is only touched on this thread, and no
        // borrow of it is held across an event (see `run_loop`).
        unsafe { (*self.local.get()).push(e, prio) }
    }

    #[inline(always)]
    fn pop_local(&self) -> Option<Envelope> {
        // SAFETY: as in `push_local`; the borrow ends before the event runs.
        unsafe { (*self.local.get()).pop() }
    }

    fn run_loop(&self, sh: &WorkerShared) {
        let clock = takt_sched::clock();
        let mut busy_since = clock.now();
        loop {
            let mut ran = 0usize;
            while ran < BATCH {
                match self.pop_local() {
                    Some(e) => {
                        e.deliver();
                        ran += 1;
                    }
                    None => break,
                }
            }
            sh.counters.events.add(ran as u64);
            let mut moved = 0usize;
            while moved < BATCH {
                // SAFETY: this thread is the remote queue's consumer.
                match unsafe { sh.remote.pop() } {
                    Some(e) => {
                        let prio = if sh.prio {
                            // SAFETY: the event holds a reference to its target.
                            unsafe { header_at(e.target()).prio }
                        } else {
                            0
                        };
                        self.push_local(e, prio);
                        moved += 1;
                    }
                    None => break,
                }
            }
            if ran == 0 && moved == 0 {
                if sh.stop.load(Ordering::Acquire) {
                    sh.counters
                        .busy_ticks
                        .add(clock.now().saturating_sub(busy_since));
                    return;
                }
                sh.counters
                    .busy_ticks
                    .add(clock.now().saturating_sub(busy_since));
                sh.idle_wait();
                busy_since = clock.now();
            }
        }
    }
}

/// The body of a worker thread.
pub(crate) fn run_worker(shared: Arc<WorkerShared>) {
    let core = WorkerCore {
        shared: Arc::as_ptr(&shared),
        local: UnsafeCell::new(if shared.prio {
            LocalQueue::Prio {
                queues: Box::new(std::array::from_fn(|_| VecDeque::new())),
                mask: 0,
            }
        } else {
            LocalQueue::Fifo(VecDeque::with_capacity(1024))
        }),
    };
    CURRENT.with(|c| c.set(&core));
    loop {
        match catch_unwind(AssertUnwindSafe(|| core.run_loop(&shared))) {
            Ok(()) => break,
            Err(payload) => crate::panic::recovered(&shared.panic, payload),
        }
    }
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
