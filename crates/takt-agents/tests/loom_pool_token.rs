//! Loom model of the pool dispatcher's scheduling token (`PoolSink` in
//! `agent.rs`, `run_agent` in `dispatcher/pool.rs`), written with the same
//! queue, counter and orderings.
//!
//! A sender pushes to the agent's queue, then increments `pending`; the one
//! that moves it from 0 hands the agent to the run queue. A runner pops at
//! most the `pending` it read, subtracts what it popped, and re-queues the
//! agent if the result is not 0. Properties: at most one thread runs the
//! agent at any time, every event is run, and the count ends at 0.
#![cfg(loom)]

use takt_agents::queue::MpscQueue;
use takt_sched::sync::{thread, Arc, AtomicU64, AtomicUsize, Mutex, Ordering};

struct Agent {
    queue: MpscQueue<u32>,
    pending: AtomicU64,
    running: AtomicUsize,
    handled: AtomicUsize,
    /// The run queue: tokens handed over, taken by whoever runs next.
    run_queue: Mutex<usize>,
}

impl Agent {
    fn send(&self, v: u32) {
        self.queue.push(v);
        if self.pending.fetch_add(1, Ordering::AcqRel) == 0 {
            *self.run_queue.lock().unwrap() += 1;
        }
    }

    /// Runs the agent once if a token is on the run queue.
    fn try_run(&self) -> bool {
        {
            let mut rq = self.run_queue.lock().unwrap();
            if *rq == 0 {
                return false;
            }
            *rq -= 1;
        }
        assert_eq!(
            self.running.fetch_add(1, Ordering::SeqCst),
            0,
            "two runners"
        );
        let avail = self.pending.load(Ordering::Acquire);
        let mut ran = 0;
        while ran < avail {
            // SAFETY: the token holder is the only consumer.
            match unsafe { self.queue.pop() } {
                Some(_) => {
                    self.handled.fetch_add(1, Ordering::SeqCst);
                    ran += 1;
                }
                None => break,
            }
        }
        self.running.fetch_sub(1, Ordering::SeqCst);
        if self.pending.fetch_sub(ran, Ordering::AcqRel) - ran > 0 {
            *self.run_queue.lock().unwrap() += 1;
        }
        true
    }
}

#[test]
fn one_runner_and_nothing_stranded() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(|| {
        let a = Arc::new(Agent {
            queue: MpscQueue::new(),
            pending: AtomicU64::new(0),
            running: AtomicUsize::new(0),
            handled: AtomicUsize::new(0),
            run_queue: Mutex::new(0),
        });
        let a1 = a.clone();
        let sender = thread::spawn(move || {
            a1.send(1);
            a1.send(2);
        });
        let a2 = a.clone();
        let runner = thread::spawn(move || {
            a2.try_run();
        });
        a.send(3);
        a.try_run();
        sender.join().unwrap();
        runner.join().unwrap();
        // Whatever is left has its token on the run queue: run it out.
        while a.try_run() {}
        assert_eq!(a.handled.load(Ordering::SeqCst), 3, "an event was stranded");
        assert_eq!(a.pending.load(Ordering::SeqCst), 0);
    });
}
