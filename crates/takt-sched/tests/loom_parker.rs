//! Loom model of the spin-then-park [`Parker`].
//!
//! Property: a consumer that parks until it sees a flag always wakes up once
//! a producer has set the flag and unparked — no lost wake-up in any
//! interleaving — and it sees the flag with the unpark's Release/Acquire.
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use takt_sched::{Parker, SpinBudget};

fn consumer_sees_flag(budget: SpinBudget) {
    loom::model(move || {
        let parker = Arc::new(Parker::new(budget));
        let flag = Arc::new(AtomicBool::new(false));
        let (p, f) = (parker.clone(), flag.clone());
        let producer = loom::thread::spawn(move || {
            f.store(true, Ordering::Relaxed);
            p.unpark();
        });
        while !flag.load(Ordering::Relaxed) {
            parker.park();
        }
        producer.join().unwrap();
    });
}

#[test]
fn no_lost_wakeup_without_spinning() {
    consumer_sees_flag(SpinBudget::NONE);
}

#[test]
fn no_lost_wakeup_with_spinning() {
    consumer_sees_flag(SpinBudget::from_micros(1));
}

/// Two producers, each publishing one item: the consumer gets both.
#[test]
fn two_producers() {
    loom::model(|| {
        let parker = Arc::new(Parker::new(SpinBudget::NONE));
        let items = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (p, i) = (parker.clone(), items.clone());
                loom::thread::spawn(move || {
                    i.fetch_add(1, Ordering::Relaxed);
                    p.unpark();
                })
            })
            .collect();
        while items.load(Ordering::Relaxed) < 2 {
            parker.park();
        }
        for h in hs {
            h.join().unwrap();
        }
    });
}
