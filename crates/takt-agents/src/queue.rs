//! [`MpscQueue`]: the unbounded many-producer, single-consumer queue behind
//! every cross-thread send, and [`WakeQueue`], the same with a consumer
//! that sleeps when idle.
//!
//! The algorithm is Dmitry Vyukov's non-intrusive MPSC node queue
//! ("Non-intrusive MPSC node-based queue", 1024cores.net): producers
//! exchange the head pointer and then link the previous head to their node;
//! the consumer follows `next` links from a stub node it owns. A push is one
//! allocation, one `swap` and one store; a pop is one load and one free. No
//! CAS loop: producers never retry, whatever the contention.
//!
//! Between a producer's `swap` and its link store the queue is
//! *inconsistent*: the new node is reachable from `head` but not yet from the
//! consumer's side. The consumer then sees no ready item, exactly as if the
//! push had not happened yet; the producer's link store is the moment the
//! item becomes visible, and [`MpscQueue::push`] returns only after it. Wake-up
//! protocols built on top ([`WakeQueue`], the pool's scheduling token)
//! therefore put a SeqCst fence between the link store and their flag
//! check, paired with a fence on the consumer's side.

use std::cell::UnsafeCell;
use std::fmt;
use std::mem::MaybeUninit;
use std::ptr;

use crossbeam_utils::CachePadded;
use takt_sched::sync::{fence, AtomicBool, AtomicPtr, AtomicU64, Ordering};
use takt_sched::{Parker, SpinBudget};

struct Node<T> {
    /// The next newer node, null while this is the newest. Written once by
    /// the producer that pushed the next node (SeqCst store, pairs with the
    /// consumer's SeqCst/Acquire load in `pop`/`is_ready`).
    next: AtomicPtr<Node<T>>,
    /// Initialized for every node except the stub and nodes already popped.
    value: MaybeUninit<T>,
}

impl<T> Node<T> {
    fn alloc(value: MaybeUninit<T>) -> *mut Node<T> {
        Box::into_raw(Box::new(Node {
            next: AtomicPtr::new(ptr::null_mut()),
            value,
        }))
    }
}

/// An unbounded MPSC queue (Vyukov). Any thread may [`push`](Self::push);
/// only one thread at a time may call the consumer methods, which are
/// `unsafe` for that reason.
pub struct MpscQueue<T> {
    /// The newest node; producers `swap` themselves in here.
    head: CachePadded<AtomicPtr<Node<T>>>,
    /// The consumer's node: the stub, or the last node popped (whose value
    /// has been moved out). Only the consumer touches it.
    tail: CachePadded<UnsafeCell<*mut Node<T>>>,
}

// SAFETY: values move from producers to the consumer, so `T: Send` suffices;
// the consumer side is guarded by the `unsafe` contract of its methods.
unsafe impl<T: Send> Send for MpscQueue<T> {}
// SAFETY: as above; `push` only touches atomics and freshly allocated nodes.
unsafe impl<T: Send> Sync for MpscQueue<T> {}

impl<T> MpscQueue<T> {
    /// An empty queue (allocates its stub node).
    pub fn new() -> Self {
        let stub = Node::alloc(MaybeUninit::uninit());
        MpscQueue {
            head: CachePadded::new(AtomicPtr::new(stub)),
            tail: CachePadded::new(UnsafeCell::new(stub)),
        }
    }

    /// Appends `value`. Wait-free for the producer (one allocation aside).
    pub fn push(&self, value: T) {
        let node = Node::alloc(MaybeUninit::new(value));
        // AcqRel: Release publishes the node's initialization to the next
        // producer, which writes `(*node).next`; Acquire makes the previous
        // producer's node initialization visible before we write its `next`.
        let prev = self.head.swap(node, Ordering::AcqRel);
        // SAFETY: `prev` stays allocated until the consumer has moved past
        // it, which it cannot do before this link exists.
        // Release pairs with the consumer's Acquire load of `next`: the item
        // becomes visible here. Wake-up protocols put a SeqCst fence between
        // this store and their check of the consumer's sleep flag.
        unsafe { (*prev).next.store(node, Ordering::Release) };
    }

    /// Removes the oldest ready item.
    ///
    /// # Safety
    /// Only one thread may call the consumer methods (`pop`, `is_ready`) at
    /// a time.
    pub unsafe fn pop(&self) -> Option<T> {
        // SAFETY: single consumer (caller's contract).
        let tail = unsafe { *self.tail.get() };
        // SAFETY: `tail` is the consumer's node, never freed by others.
        // Acquire pairs with the producer's store of `next`, so the node's
        // value is initialized when we read it.
        let next = unsafe { (*tail).next.load(Ordering::Acquire) };
        if next.is_null() {
            return None;
        }
        // SAFETY: single consumer; `next` is fully linked and initialized,
        // and its value is read exactly once (it becomes the new stub).
        unsafe {
            *self.tail.get() = next;
            let value = (*next).value.assume_init_read();
            drop(Box::from_raw(tail));
            Some(value)
        }
    }

    /// Whether `pop` would return an item (Acquire load).
    ///
    /// # Safety
    /// Consumer only, as for [`pop`](Self::pop).
    #[inline]
    pub unsafe fn is_ready(&self) -> bool {
        // SAFETY: consumer-only field (caller's contract).
        let tail = unsafe { *self.tail.get() };
        // SAFETY: the consumer's node is alive. Acquire as in `pop`.
        unsafe { !(*tail).next.load(Ordering::Acquire).is_null() }
    }
}

/// What the consumer had seen when it made a [`Mark`]: compare later with
/// [`MpscQueue::pushed_since`] from any thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark(*const ());

// SAFETY: a mark is an address that is compared, never dereferenced.
unsafe impl Send for Mark {}

impl<T> MpscQueue<T> {
    /// Marks the consumer's position (the last node it consumed).
    ///
    /// # Safety
    /// Consumer only, as for [`pop`](Self::pop).
    #[inline]
    pub unsafe fn mark(&self) -> Mark {
        // SAFETY: consumer-only field (caller's contract).
        Mark(unsafe { *self.tail.get() } as *const ())
    }

    /// Whether anything was pushed (linked or still in flight) after the
    /// consumer made `mark` with nothing ready: true iff the newest node
    /// differs from the marked one. Safe from any thread, including a
    /// former consumer that has handed the role on: it only compares
    /// addresses. (If the marked node was freed and its address reused by
    /// a later push, this can say false; that needs a new consumer to have
    /// taken over, which then owns the re-check.)
    #[inline]
    pub fn pushed_since(&self, mark: Mark) -> bool {
        // Relaxed: callers order this load with a SeqCst fence.
        self.head.load(Ordering::Relaxed) as *const () != mark.0
    }
}

impl<T> Default for MpscQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Drop for MpscQueue<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no producer or consumer is active; every
        // pushed node is linked (a push completes before its `&self` ends).
        unsafe {
            while self.pop().is_some() {}
            drop(Box::from_raw(*self.tail.get()));
        }
    }
}

impl<T> fmt::Debug for MpscQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MpscQueue").finish_non_exhaustive()
    }
}

/// An [`MpscQueue`] whose consumer sleeps when it is empty.
///
/// The consumer [`wait`](Self::wait)s: it spins for its budget with `pause`,
/// looking at the queue after every `pause` (so a message is noticed within
/// ~100–200 ns of its link store), then stores `sleepy`, issues a SeqCst
/// fence, re-checks the queue and parks. It never calls `sched_yield` while
/// spinning: on a loaded 2-vCPU machine a yield hands the CPU away for a
/// whole slice (milliseconds), far longer than the spin budget it is meant
/// to save. The budget is the bound on spinning before the futex sleep. A producer [`push`](Self::push)es (the link store), issues a
/// SeqCst fence and loads `sleepy`. The two fences are totally ordered, so
/// (Dekker) either the consumer's re-check sees the item or the producer
/// sees `sleepy` and unparks it.
/// A producer that finds the consumer awake — the common case under load —
/// does no read-modify-write on the parker at all.
pub struct WakeQueue<T> {
    queue: CachePadded<MpscQueue<T>>,
    /// True while the consumer is about to sleep or sleeping.
    sleepy: CachePadded<AtomicBool>,
    parker: Parker,
    parks: AtomicU64,
    wakeups: AtomicU64,
}

impl<T> fmt::Debug for WakeQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WakeQueue")
            .field("parks", &self.parks())
            .field("wakeups", &self.wakeups())
            .finish_non_exhaustive()
    }
}

impl<T> Default for WakeQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> WakeQueue<T> {
    /// An empty queue with an awake consumer.
    pub fn new() -> Self {
        WakeQueue {
            queue: CachePadded::new(MpscQueue::new()),
            sleepy: CachePadded::new(AtomicBool::new(false)),
            // The consumer spins itself (watching the queue); the parker only sleeps.
            parker: Parker::new(SpinBudget::NONE),
            parks: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
        }
    }

    /// Appends `value` and wakes the consumer if it sleeps; returns whether
    /// it had to.
    #[inline]
    pub fn push(&self, value: T) -> bool {
        self.queue.push(value);
        // Pairs with the fence in `wait` (module docs); the load itself can
        // be Relaxed, the fences order it against the consumer's store.
        fence(Ordering::SeqCst);
        if self.sleepy.load(Ordering::Relaxed) {
            self.wakeups.fetch_add(1, Ordering::Relaxed);
            self.parker.unpark();
            true
        } else {
            false
        }
    }

    /// Wakes the consumer (or makes its next wait return at once), e.g.
    /// after setting a flag its `also` condition watches.
    pub fn wake(&self) {
        self.parker.unpark();
    }

    /// Removes the oldest ready item.
    ///
    /// # Safety
    /// Consumer only, as for [`MpscQueue::pop`].
    #[inline]
    pub unsafe fn pop(&self) -> Option<T> {
        // SAFETY: caller's contract.
        unsafe { self.queue.pop() }
    }

    /// Whether an item is ready.
    ///
    /// # Safety
    /// Consumer only, as for [`MpscQueue::pop`].
    #[inline]
    pub unsafe fn is_ready(&self) -> bool {
        // SAFETY: caller's contract.
        unsafe { self.queue.is_ready() }
    }

    /// Spins up to `budget`, then sleeps, until an item is ready, `also()`
    /// holds, or [`wake`](Self::wake) is called. May return spuriously.
    /// `also` must be made true before a `wake` for it to be seen.
    ///
    /// # Safety
    /// Consumer only, as for [`MpscQueue::pop`].
    pub unsafe fn wait(&self, budget: SpinBudget, also: impl Fn() -> bool) {
        // SAFETY: caller's contract.
        unsafe { self.wait_then(budget, also, || {}) }
    }

    /// [`wait`](Self::wait), running `before_sleep` once the spin budget is
    /// spent without an item, before the consumer announces it sleeps
    /// (work deferred while the consumer was busy, done when it is about
    /// to go idle for long).
    ///
    /// # Safety
    /// Consumer only, as for [`MpscQueue::pop`].
    pub unsafe fn wait_then(
        &self,
        budget: SpinBudget,
        also: impl Fn() -> bool,
        before_sleep: impl FnOnce(),
    ) {
        // SAFETY (every queue call below): the caller is the consumer.
        if budget.spin_until(|| unsafe { self.queue.is_ready() } || also()) {
            return;
        }
        before_sleep();
        self.sleepy.store(true, Ordering::Relaxed);
        // Pairs with the fence in `push`.
        fence(Ordering::SeqCst);
        if unsafe { self.queue.is_ready() } || also() {
            self.sleepy.store(false, Ordering::Relaxed);
            return;
        }
        self.parks.fetch_add(1, Ordering::Relaxed);
        self.parker.park();
        self.sleepy.store(false, Ordering::Relaxed);
    }

    /// Times the consumer slept.
    pub fn parks(&self) -> u64 {
        self.parks.load(Ordering::Relaxed)
    }

    /// Wake-ups producers sent.
    pub fn wakeups(&self) -> u64 {
        self.wakeups.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn fifo_single_thread() {
        let q = MpscQueue::new();
        for i in 0..100 {
            q.push(i);
        }
        // SAFETY: this thread is the only consumer.
        unsafe {
            assert!(q.is_ready());
            for i in 0..100 {
                assert_eq!(q.pop(), Some(i));
            }
            assert_eq!(q.pop(), None);
            assert!(!q.is_ready());
        }
    }

    #[test]
    fn drops_remaining_items() {
        let item = Arc::new(());
        let q = MpscQueue::new();
        for _ in 0..10 {
            q.push(item.clone());
        }
        drop(q);
        assert_eq!(Arc::strong_count(&item), 1);
    }

    #[test]
    fn stress_two_producers_fifo_per_producer() {
        const N: u64 = 100_000;
        let q = Arc::new(MpscQueue::new());
        let producers: Vec<_> = (0..2u64)
            .map(|p| {
                let q = q.clone();
                std::thread::spawn(move || {
                    for i in 0..N {
                        q.push((p, i));
                    }
                })
            })
            .collect();
        let mut next = [0u64; 2];
        let mut got = 0;
        while got < 2 * N {
            // SAFETY: this thread is the only consumer.
            match unsafe { q.pop() } {
                Some((p, i)) => {
                    assert_eq!(next[p as usize], i, "FIFO per producer");
                    next[p as usize] += 1;
                    got += 1;
                }
                None => std::hint::spin_loop(),
            }
        }
        for p in producers {
            p.join().unwrap();
        }
        assert_eq!(next, [N, N]);
    }
}
