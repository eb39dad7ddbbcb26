//! [`MpscQueue`]: the unbounded many-producer, single-consumer queue behind
//! every cross-thread send.
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
//! protocols built on top (see `worker.rs`) therefore pair the link store
//! with the consumer's emptiness check, which is why both are `SeqCst`.

use std::cell::UnsafeCell;
use std::fmt;
use std::mem::MaybeUninit;
use std::ptr;

use crossbeam_utils::CachePadded;
use takt_sched::sync::{AtomicPtr, Ordering};

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
        // SeqCst: the item becomes visible here; wake-up protocols order this
        // store before their SeqCst check of the consumer's sleep flag.
        unsafe { (*prev).next.store(node, Ordering::SeqCst) };
    }

    /// Removes the oldest ready item.
    ///
    /// # Safety
    /// Only one thread may call the consumer methods (`pop`, `is_ready`,
    /// `is_ready_seqcst`) at a time.
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

    /// Like [`is_ready`](Self::is_ready) with a SeqCst load: the consumer's
    /// half of a Dekker-style sleep protocol (store "sleeping" SeqCst, then
    /// call this; producers push, then load "sleeping" SeqCst).
    ///
    /// # Safety
    /// Consumer only, as for [`pop`](Self::pop).
    #[inline]
    pub unsafe fn is_ready_seqcst(&self) -> bool {
        // SAFETY: as in `is_ready`.
        let tail = unsafe { *self.tail.get() };
        // SAFETY: as in `is_ready`. SeqCst pairs with the SeqCst link store in `push`.
        unsafe { !(*tail).next.load(Ordering::SeqCst).is_null() }
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
