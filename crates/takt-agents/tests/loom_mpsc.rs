//! Loom models of [`MpscQueue`] and [`WakeQueue`].
//!
//! Properties, over every interleaving (bounded preemptions):
//! - `fifo_two_producers`: with two producers and one consumer, every item
//!   is received exactly once and each producer's items in its order, and
//!   the value written before a push is visible to the consumer after it pops;
//! - `no_lost_wakeup`: a consumer that sleeps in `WakeQueue::wait` whenever
//!   the queue is empty always receives the items of two producers (no
//!   interleaving leaves it asleep with an item queued);
//! - `wake_flag`: a `wake` after setting the `also` flag ends a wait.
#![cfg(loom)]

use takt_agents::queue::{MpscQueue, WakeQueue};
use takt_sched::sync::{thread, Arc, AtomicBool, AtomicUsize, Ordering};
use takt_sched::SpinBudget;

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b
}

#[test]
fn fifo_two_producers() {
    builder().check(|| {
        let q = Arc::new(MpscQueue::new());
        let side = Arc::new(AtomicUsize::new(0));
        let producers: Vec<_> = (0..2u32)
            .map(|p| {
                let (q, side) = (q.clone(), side.clone());
                thread::spawn(move || {
                    if p == 0 {
                        side.store(7, Ordering::Relaxed);
                    }
                    q.push((p, 0u32));
                    q.push((p, 1u32));
                })
            })
            .collect();
        let mut next = [0u32; 2];
        let mut got = 0;
        while got < 4 {
            // SAFETY: this thread is the only consumer.
            match unsafe { q.pop() } {
                Some((p, i)) => {
                    assert_eq!(next[p as usize], i, "FIFO per producer");
                    if p == 0 {
                        // Release/Acquire through the queue.
                        assert_eq!(side.load(Ordering::Relaxed), 7);
                    }
                    next[p as usize] += 1;
                    got += 1;
                }
                None => thread::yield_now(),
            }
        }
        for p in producers {
            p.join().unwrap();
        }
        // SAFETY: only consumer.
        assert!(unsafe { q.pop() }.is_none());
    });
}

#[test]
fn no_lost_wakeup() {
    builder().check(|| {
        let q = Arc::new(WakeQueue::new());
        let producers: Vec<_> = (0..2u32)
            .map(|p| {
                let q = q.clone();
                thread::spawn(move || {
                    q.push(p);
                })
            })
            .collect();
        let mut got = 0;
        while got < 2 {
            // SAFETY: this thread is the only consumer.
            unsafe {
                match q.pop() {
                    Some(_) => got += 1,
                    None => q.wait(SpinBudget::NONE, || false),
                }
            }
        }
        for p in producers {
            p.join().unwrap();
        }
    });
}

#[test]
fn wake_flag() {
    builder().check(|| {
        let q: Arc<WakeQueue<u32>> = Arc::new(WakeQueue::new());
        let stop = Arc::new(AtomicBool::new(false));
        let (q2, s2) = (q.clone(), stop.clone());
        let t = thread::spawn(move || {
            s2.store(true, Ordering::SeqCst);
            q2.wake();
        });
        while !stop.load(Ordering::SeqCst) {
            // SAFETY: only consumer.
            unsafe { q.wait(SpinBudget::NONE, || stop.load(Ordering::SeqCst)) };
        }
        t.join().unwrap();
    });
}
