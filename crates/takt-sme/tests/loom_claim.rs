//! Loom models of the executors' work claiming.
//!
//! Properties, over every interleaving (bounded preemptions):
//! - `Cursor`: with two threads claiming from one cursor, every index below
//!   the limit is handed out exactly once, and a reset published through a
//!   barrier starts the next round at 0 for both. (`worklist` claims
//!   chunks through it, `thesis_worklist` single processes: the same code.)
//! - `RangeDeque`: an owner popping the front and a thief stealing the back
//!   (and two thieves at once) hand out every index exactly once.
#![cfg(loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use takt_sched::{SpinBarrier, SpinBudget};
use takt_sme::exec::claim::{Cursor, RangeDeque};

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b
}

#[test]
fn cursor_hands_out_each_index_once_across_rounds() {
    builder().check(|| {
        const N: usize = 3;
        // Round r claims from cursors[r % 2]; thread 0 resets the other one.
        let cursors = Arc::new([Cursor::new(), Cursor::new()]);
        let barrier = Arc::new(SpinBarrier::new(2, SpinBudget::NONE));
        let seen = Arc::new([
            [
                AtomicUsize::new(0),
                AtomicUsize::new(0),
                AtomicUsize::new(0),
            ],
            [
                AtomicUsize::new(0),
                AtomicUsize::new(0),
                AtomicUsize::new(0),
            ],
        ]);
        let worker = |t: usize| {
            let (c, b, s) = (cursors.clone(), barrier.clone(), seen.clone());
            move || {
                for round in 0..2 {
                    while let Some(i) = c[round % 2].claim(N) {
                        s[round][i].fetch_add(1, Ordering::Relaxed);
                    }
                    if t == 0 {
                        c[(round + 1) % 2].reset();
                    }
                    b.wait();
                }
            }
        };
        let other = loom::thread::spawn(worker(1));
        worker(0)();
        other.join().unwrap();
        for round in seen.iter() {
            for slot in round {
                assert_eq!(slot.load(Ordering::Relaxed), 1);
            }
        }
    });
}

fn deque_race(thieves: usize) {
    builder().check(move || {
        const N: u32 = 3;
        let d = Arc::new(RangeDeque::new(0, N));
        let seen = Arc::new([
            AtomicUsize::new(0),
            AtomicUsize::new(0),
            AtomicUsize::new(0),
        ]);
        let handles: Vec<_> = (0..thieves)
            .map(|_| {
                let (d, s) = (d.clone(), seen.clone());
                loom::thread::spawn(move || {
                    while let Some(i) = d.steal_back() {
                        s[i as usize].fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        while let Some(i) = d.pop_front() {
            seen[i as usize].fetch_add(1, Ordering::Relaxed);
        }
        for h in handles {
            h.join().unwrap();
        }
        for slot in seen.iter() {
            assert_eq!(slot.load(Ordering::Relaxed), 1);
        }
        assert_eq!(d.remaining(), 0);
    });
}

#[test]
fn deque_owner_and_thief_take_each_index_once() {
    deque_race(1);
}

#[test]
fn deque_owner_and_two_thieves_take_each_index_once() {
    deque_race(2);
}
