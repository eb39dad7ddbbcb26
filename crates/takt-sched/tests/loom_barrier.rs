//! Loom model of the [`SpinBarrier`].
//!
//! Properties, over every interleaving of two threads and two rounds:
//! no thread leaves a round before the other has arrived (it sees the other's
//! write of that round, made before the other's `wait`), exactly one leader
//! per round, and the barrier is reusable (no deadlock across rounds).
#![cfg(loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use takt_sched::{SpinBarrier, SpinBudget};

fn two_rounds(budget: SpinBudget) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(move || {
        let barrier = Arc::new(SpinBarrier::new(2, budget));
        let slots = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let leaders = Arc::new(AtomicUsize::new(0));
        let worker = |me: usize| {
            let (b, s, l) = (barrier.clone(), slots.clone(), leaders.clone());
            move || {
                for round in 1..=2 {
                    s[me].store(round, Ordering::Relaxed);
                    if b.wait().is_leader {
                        l.fetch_add(1, Ordering::Relaxed);
                    }
                    assert!(s[1 - me].load(Ordering::Relaxed) >= round);
                }
            }
        };
        let other = loom::thread::spawn(worker(1));
        worker(0)();
        other.join().unwrap();
        assert_eq!(leaders.load(Ordering::Relaxed), 2);
    });
}

#[test]
fn barrier_sleeping() {
    two_rounds(SpinBudget::NONE);
}

#[test]
fn barrier_spinning() {
    two_rounds(SpinBudget::from_micros(1));
}
