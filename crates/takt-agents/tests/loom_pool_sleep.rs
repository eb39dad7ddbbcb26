//! Loom model of the pool dispatcher's sleep and wake-up protocol
//! (`pool_loop`, `PoolShared::notify` and `wake_one` in
//! `dispatcher/pool.rs`), written with the same flags, counter, fences and
//! orderings. The run queues (crossbeam's injector and deques, which loom
//! cannot see into) are one count of queued items here, pushed with a
//! Release increment and taken with an Acquire compare-exchange, as
//! lock-free as theirs: what the protocol needs of them is that a push
//! before the producer's fence is seen by a worker's emptiness check after
//! its own fence, or the other way round.
//!
//! An idle worker marks its slot sleepy, increments `sleeping`, fences,
//! re-checks the queue and parks; a producer pushes, fences, and when
//! `sleeping` is non-zero clears one sleepy flag and unparks that worker.
//! Property: every pushed item is handled — no interleaving leaves an item
//! queued while every worker sleeps (loom reports that as a deadlock:
//! every thread, the checker included, would be parked). Removing the
//! sleeper's re-check, either SeqCst fence, or the sleepy flag makes loom
//! find such an interleaving.
//!
//! Kept small enough for CI (about 10 s): two workers with one producer
//! of one item, one worker with two items. Two workers with two producers
//! passed with a locked queue in place of the count (about four minutes);
//! with the count it had not finished after twenty.
#![cfg(loom)]

use takt_sched::sync::{fence, thread, Arc, AtomicBool, AtomicUsize, Ordering};
use takt_sched::{Parker, SpinBudget};

struct Slot {
    parker: Parker,
    sleepy: AtomicBool,
}

struct Pool {
    /// Items queued.
    queue: AtomicUsize,
    slots: Vec<Slot>,
    sleeping: AtomicUsize,
    stop: AtomicBool,
    handled: AtomicUsize,
    /// The checker waits here for `handled` to reach its target.
    checker: Parker,
}

impl Pool {
    fn new(workers: usize) -> Arc<Pool> {
        Arc::new(Pool {
            queue: AtomicUsize::new(0),
            slots: (0..workers)
                .map(|_| Slot {
                    parker: Parker::new(SpinBudget::NONE),
                    sleepy: AtomicBool::new(false),
                })
                .collect(),
            sleeping: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            handled: AtomicUsize::new(0),
            checker: Parker::new(SpinBudget::NONE),
        })
    }

    fn has_work(&self) -> bool {
        self.queue.load(Ordering::Acquire) > 0
    }

    fn pop(&self) -> bool {
        let mut n = self.queue.load(Ordering::Acquire);
        while n > 0 {
            match self
                .queue
                .compare_exchange(n, n - 1, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
        false
    }

    /// `requeue` from outside the pool: push, then `notify`.
    fn push(&self) {
        self.queue.fetch_add(1, Ordering::Release);
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) > 0 {
            self.wake_one();
        }
    }

    fn wake_one(&self) {
        for s in &self.slots {
            if s.sleepy.load(Ordering::Relaxed) && s.sleepy.swap(false, Ordering::SeqCst) {
                s.parker.unpark();
                return;
            }
        }
    }

    /// `pool_loop` without spinning (a zero budget).
    fn worker(&self, me: usize) {
        let slot = &self.slots[me];
        loop {
            if self.pop() {
                self.handled.fetch_add(1, Ordering::SeqCst);
                self.checker.unpark();
                continue;
            }
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            slot.sleepy.store(true, Ordering::SeqCst);
            self.sleeping.fetch_add(1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            if !self.has_work() && !self.stop.load(Ordering::SeqCst) {
                slot.parker.park();
            }
            slot.sleepy.store(false, Ordering::Relaxed);
            self.sleeping.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        for s in &self.slots {
            s.sleepy.store(false, Ordering::SeqCst);
            s.parker.unpark();
        }
    }
}

/// `workers` workers, `producers` outside threads pushing `each` items.
fn model(workers: usize, producers: usize, each: usize) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.check(move || {
        let pool = Pool::new(workers);
        let ws: Vec<_> = (0..workers)
            .map(|me| {
                let p = pool.clone();
                thread::spawn(move || p.worker(me))
            })
            .collect();
        let ps: Vec<_> = (0..producers)
            .map(|_| {
                let p = pool.clone();
                thread::spawn(move || {
                    for _ in 0..each {
                        p.push();
                    }
                })
            })
            .collect();
        let total = producers * each;
        while pool.handled.load(Ordering::SeqCst) < total {
            pool.checker.park();
        }
        for p in ps {
            p.join().unwrap();
        }
        pool.request_stop();
        for w in ws {
            w.join().unwrap();
        }
        assert_eq!(pool.queue.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn one_worker_two_items_nothing_stranded() {
    model(1, 1, 2);
}

#[test]
fn two_workers_one_item_nothing_stranded() {
    model(2, 1, 1);
}
