//! The pool dispatchers: thread_pool (one shared run queue) and
//! work_stealing (a deque per worker plus the shared injector, Chase–Lev
//! deques from crossbeam-deque).
//!
//! A pool-bound agent has its own `MpscQueue` and a `pending` count (see
//! `PoolSink`). The sender that moves the count from 0 puts the agent (one
//! strong reference) on a run queue; the worker that pops it is the only
//! thread running the agent until its subtraction brings the count back
//! to 0. That is the whole exclusivity argument: one token per agent. A worker runs at most
//! `AGENT_BATCH` events of an agent, then re-queues it behind others, so
//! one chatty agent cannot starve the rest.
//!
//! ## The next slot (work_stealing)
//! An agent woken by a work_stealing worker — a handler on that worker sent
//! it the message that made its count leave 0 — goes to the worker's
//! *next slot*, not its deque: it runs on the same worker as soon as the
//! current event returns, with the sender's data still in cache, and no
//! other worker sees it. A message exchange between two agents (a
//! ping-pong, a request and its reply) then stays on one worker instead of
//! bouncing between cores, which is what tokio's LIFO slot does for tasks.
//! Only the most recent wake-up sits there: a second one moves the first
//! to the deque, where it can be stolen. After `NEXT_STREAK` consecutive
//! runs from the slot the worker moves it to the back of its deque and
//! takes the front, so agents queued behind a long exchange are not
//! starved (the deque is stealable throughout). A re-queue after
//! `AGENT_BATCH` events always goes to the deque. Work sent from outside
//! the pool waits in the shared injector; a worker looks there first when
//! it ends a streak and on every `INJECTOR_EVERY`-th look at its deque, so
//! local work that keeps re-queuing itself cannot starve it, even on a
//! pool of one.
//!
//! Sleeping follows the same Dekker pattern as `WakeQueue`: an idle worker
//! spins, then marks its slot sleepy, increments `sleeping`, fences
//! (SeqCst), re-checks the run queues and parks; `schedule` pushes, fences
//! (SeqCst) and wakes one sleepy slot if `sleeping` is non-zero
//! (`tests/loom_pool_sleep.rs` models it with the same orderings).

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::Arc;

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_utils::CachePadded;
use takt_sched::sync::{fence, AtomicBool, AtomicUsize, Ordering};
use takt_sched::{Parker, SpinBudget};

use crate::agent::{AgentRef, OwnerCounter, Sink};
use crate::panic::PanicPolicy;
use crate::stats::{DispatcherStats, WorkerCounters};

/// Events of one agent run before it goes to the back of the run queue.
const AGENT_BATCH: usize = 64;
/// Consecutive runs from a worker's next slot before the worker looks at
/// its deque again (module docs).
const NEXT_STREAK: u32 = 32;
/// Every this many looks past the next slot, a worker takes from the
/// injector before its own deque (module docs).
const INJECTOR_EVERY: u32 = 32;

struct Slot {
    parker: Parker,
    /// Set by the worker before sleeping; cleared by whoever wakes it.
    sleepy: AtomicBool,
    counters: WorkerCounters,
}

/// A pool of worker threads.
pub(crate) struct PoolShared {
    injector: Injector<AgentRef>,
    stealers: Vec<Stealer<AgentRef>>,
    slots: Box<[CachePadded<Slot>]>,
    sleeping: CachePadded<AtomicUsize>,
    stop: AtomicBool,
    budget: SpinBudget,
    panic: Arc<PanicPolicy>,
}

struct Local {
    pool: *const PoolShared,
    deque: Option<Worker<AgentRef>>,
    /// The next slot (work_stealing only): the agent this worker woke
    /// last, run next, invisible to other workers.
    next: Cell<Option<AgentRef>>,
    /// Runs taken from `next` in a row.
    streak: Cell<u32>,
    /// Looks past the next slot (for the periodic injector check).
    looks: Cell<u32>,
}

thread_local! {
    static LOCAL: Cell<*const Local> = const { Cell::new(ptr::null()) };
}

impl PoolShared {
    /// A pool and, for work stealing, each worker's deque (to move into
    /// its thread).
    pub(crate) fn new(
        threads: usize,
        stealing: bool,
        budget: SpinBudget,
        panic: Arc<PanicPolicy>,
    ) -> (Arc<Self>, Vec<Option<Worker<AgentRef>>>) {
        let deques: Vec<Option<Worker<AgentRef>>> = (0..threads)
            .map(|_| stealing.then(Worker::new_fifo))
            .collect();
        let stealers = deques.iter().flatten().map(Worker::stealer).collect();
        let pool = Arc::new(PoolShared {
            injector: Injector::new(),
            stealers,
            slots: (0..threads)
                .map(|_| {
                    CachePadded::new(Slot {
                        parker: Parker::new(SpinBudget::NONE),
                        sleepy: AtomicBool::new(false),
                        counters: WorkerCounters::default(),
                    })
                })
                .collect(),
            sleeping: CachePadded::new(AtomicUsize::new(0)),
            stop: AtomicBool::new(false),
            budget,
            panic,
        });
        (pool, deques)
    }

    pub(crate) fn size(&self) -> usize {
        self.slots.len()
    }

    /// Whether the calling thread is one of this pool's workers.
    pub(crate) fn is_current_worker(&self) -> bool {
        let local = LOCAL.with(Cell::get);
        // SAFETY: as in `schedule`.
        unsafe { local.as_ref() }.is_some_and(|l| ptr::eq(l.pool, self))
    }

    /// Puts an agent that just became ready on a run queue: the calling
    /// work_stealing worker's next slot (module docs), else a run queue
    /// other workers see, waking a sleeping worker.
    pub(crate) fn schedule(&self, r: AgentRef) {
        let local = LOCAL.with(Cell::get);
        // SAFETY: a non-null LOCAL points to the current pool worker's
        // `Local`, alive while its loop runs (and we are inside it).
        match unsafe { local.as_ref() } {
            Some(l) if ptr::eq(l.pool, self) && l.deque.is_some() => {
                match l.next.replace(Some(r)) {
                    // Nothing other workers can see has changed.
                    None => {}
                    Some(older) => {
                        l.deque.as_ref().expect("checked").push(older);
                        self.notify();
                    }
                }
            }
            _ => self.requeue(r),
        }
    }

    /// Puts a ready agent at the back of a run queue other workers see
    /// (the calling worker's deque, or the injector) and wakes a sleeping
    /// worker.
    fn requeue(&self, r: AgentRef) {
        let local = LOCAL.with(Cell::get);
        // SAFETY: as in `schedule`.
        match unsafe { local.as_ref() } {
            Some(l) if ptr::eq(l.pool, self) && l.deque.is_some() => {
                l.deque.as_ref().expect("checked").push(r)
            }
            _ => self.injector.push(r),
        }
        self.notify();
    }

    /// Wakes a sleeping worker, if any, after a push to a shared run queue.
    #[inline]
    fn notify(&self) {
        // SeqCst fence: pairs with the sleeper's SeqCst increment of
        // `sleeping` before its re-check (Dekker).
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) > 0 {
            self.wake_one();
        }
    }

    fn wake_one(&self) {
        for s in self.slots.iter() {
            if s.sleepy.load(Ordering::Relaxed) && s.sleepy.swap(false, Ordering::SeqCst) {
                s.counters.wakeups.fetch_add(1, Ordering::Relaxed);
                s.parker.unpark();
                return;
            }
        }
    }

    pub(crate) fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        for s in self.slots.iter() {
            s.sleepy.store(false, Ordering::SeqCst);
            s.parker.unpark();
        }
    }

    pub(crate) fn add_stats(&self, st: &mut DispatcherStats) {
        for s in self.slots.iter() {
            s.counters.add_to(st);
        }
    }

    fn find_work(&self, me: usize, local: &Local) -> Option<AgentRef> {
        let deque = local.deque.as_ref();
        let mut injector_first = false;
        if let Some(r) = local.next.take() {
            let streak = local.streak.get();
            if streak < NEXT_STREAK {
                local.streak.set(streak + 1);
                return Some(r);
            }
            // Long enough: let what waits elsewhere run first.
            self.requeue(r);
            injector_first = true;
        }
        local.streak.set(0);
        // Now and then the injector before the local deque, so work sent
        // from outside the pool is not starved by local work that keeps
        // re-queuing itself.
        let looks = local.looks.get().wrapping_add(1);
        local.looks.set(looks);
        if injector_first || looks.is_multiple_of(INJECTOR_EVERY) {
            if let Some(r) = self.take_injected(deque) {
                return Some(r);
            }
        }
        if let Some(r) = deque.and_then(Worker::pop) {
            return Some(r);
        }
        if let Some(r) = self.take_injected(deque) {
            return Some(r);
        }
        {
            let stealers = &self.stealers;
            let n = stealers.len();
            for k in 1..n {
                let victim = &stealers[(me + k) % n];
                loop {
                    match victim.steal() {
                        Steal::Success(r) => return Some(r),
                        Steal::Retry => continue,
                        Steal::Empty => break,
                    }
                }
            }
        }
        None
    }

    /// Takes from the injector (a batch into `deque` if there is one).
    fn take_injected(&self, deque: Option<&Worker<AgentRef>>) -> Option<AgentRef> {
        loop {
            let steal = match deque {
                Some(d) => self.injector.steal_batch_and_pop(d),
                None => self.injector.steal(),
            };
            match steal {
                Steal::Success(r) => return Some(r),
                Steal::Retry => continue,
                Steal::Empty => return None,
            }
        }
    }

    fn has_work(&self) -> bool {
        !self.injector.is_empty() || self.stealers.iter().any(|x| !x.is_empty())
    }
}

/// Runs up to `AGENT_BATCH` of the events counted in `r`'s agent's
/// `pending`, then gives the token back or re-queues the agent.
fn run_agent(pool: &PoolShared, slot: &Slot, r: AgentRef) {
    let h = r.header();
    let Sink::Pool(sink) = &h.sink else {
        unreachable!("only pool-bound agents are scheduled on a pool")
    };
    // Acquire: the pushes counted here are linked (each sender pushes
    // before it increments).
    let avail = sink.pending.load(Ordering::Acquire).min(AGENT_BATCH as u64);
    let mut ran = 0u64;
    while ran < avail {
        // SAFETY: holding the token makes us the queue's only consumer.
        match unsafe { sink.queue.pop() } {
            Some(e) => {
                e.deliver();
                ran += 1;
            }
            // A push ahead of the counted ones is still linking: come back.
            None => break,
        }
    }
    slot.counters.events.add(ran);
    // AcqRel: Release hands this run's effects to the next holder; Acquire
    // pairs with senders' increments.
    let left = sink.pending.fetch_sub(ran, Ordering::AcqRel) - ran;
    if left > 0 {
        pool.requeue(r);
    }
}

/// The body of pool worker `me`; `deque` is its own deque (work_stealing).
pub(crate) fn run_pool_worker(pool: Arc<PoolShared>, me: usize, deque: Option<Worker<AgentRef>>) {
    let local = Local {
        pool: Arc::as_ptr(&pool),
        deque,
        next: Cell::new(None),
        streak: Cell::new(0),
        looks: Cell::new(0),
    };
    LOCAL.with(|c| c.set(&local));
    let slot = &pool.slots[me];
    loop {
        let r = catch_unwind(AssertUnwindSafe(|| pool_loop(&pool, slot, me, &local)));
        match r {
            Ok(()) => break,
            Err(p) => crate::panic::recovered(&pool.panic, p),
        }
    }
    LOCAL.with(|c| c.set(ptr::null()));
    // Agents still queued on this worker are released (their queues are
    // discarded and counted when their cells drop).
    drop(local.next.take());
    if let Some(d) = &local.deque {
        while let Some(r) = d.pop() {
            drop(r);
        }
    }
}

fn pool_loop(pool: &PoolShared, slot: &Slot, me: usize, local: &Local) {
    let clock = takt_sched::clock();
    let mut busy_since = clock.now();
    loop {
        if let Some(r) = pool.find_work(me, local) {
            run_agent(pool, slot, r);
            continue;
        }
        slot.counters
            .busy_ticks
            .add(clock.now().saturating_sub(busy_since));
        if pool.stop.load(Ordering::Acquire) {
            return;
        }
        // Idle: spin, then announce and sleep.
        let found = pool
            .budget
            .spin_until(|| pool.has_work() || pool.stop.load(Ordering::Relaxed));
        if !found {
            slot.sleepy.store(true, Ordering::SeqCst);
            pool.sleeping.fetch_add(1, Ordering::SeqCst);
            // Pairs with the fence in `schedule`.
            fence(Ordering::SeqCst);
            if !pool.has_work() && !pool.stop.load(Ordering::SeqCst) {
                slot.counters.parks.bump();
                slot.parker.park();
            }
            slot.sleepy.store(false, Ordering::Relaxed);
            pool.sleeping.fetch_sub(1, Ordering::SeqCst);
        }
        busy_since = clock.now();
    }
}
