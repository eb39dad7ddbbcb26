//! Loom model of the pool dispatcher's scheduling token (`PoolSink` in
//! `agent.rs`, `run_agent` in `dispatcher/pool.rs`), written with the same
//! queue, counter and orderings.
//!
//! A sender pushes to the agent's queue, then increments `pending`; the one
//! that moves it from 0 hands the agent to the run queue. A runner pops at
//! most the `pending` it read, subtracts what it popped, and re-queues the
//! agent if the result is not 0. An insend (`Addr::insend` from a pool
//! worker) takes the token only from an idle agent (CAS 0 → 1), runs its
//! event inline, then subtracts 1 and re-queues the agent if anything was
//! sent meanwhile. Properties: at most one thread runs the agent at any
//! time, every event (queued or inline) is run exactly once, and the count
//! ends at 0.
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

    /// An insend: inline if the agent is idle (as `PoolSink::try_take_idle_token`
    /// and `release_insend_token`), otherwise queued like a send.
    fn insend(&self, v: u32) -> bool {
        if self
            .pending
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            assert_eq!(
                self.running.fetch_add(1, Ordering::SeqCst),
                0,
                "insend beside a runner"
            );
            self.handled.fetch_add(1, Ordering::SeqCst);
            self.running.fetch_sub(1, Ordering::SeqCst);
            if self.pending.fetch_sub(1, Ordering::AcqRel) > 1 {
                *self.run_queue.lock().unwrap() += 1;
            }
            true
        } else {
            self.send(v);
            false
        }
    }
}

fn agent() -> Arc<Agent> {
    Arc::new(Agent {
        queue: MpscQueue::new(),
        pending: AtomicU64::new(0),
        running: AtomicUsize::new(0),
        handled: AtomicUsize::new(0),
        run_queue: Mutex::new(0),
    })
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

#[test]
fn insend_takes_the_token_only_from_an_idle_agent() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(|| {
        let a = agent();
        let a1 = a.clone();
        let sender = thread::spawn(move || {
            a1.send(1);
        });
        let a2 = a.clone();
        let runner = thread::spawn(move || {
            a2.try_run();
            a2.insend(2);
        });
        a.insend(3);
        a.try_run();
        sender.join().unwrap();
        runner.join().unwrap();
        while a.try_run() {}
        assert_eq!(a.handled.load(Ordering::SeqCst), 3, "an event was lost");
        assert_eq!(a.pending.load(Ordering::SeqCst), 0);
    });
}
