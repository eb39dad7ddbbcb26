//! Loom model of the `shared` workers' baton
//! (`takt_sip::transport::baton::Baton`) over a modelled socket and epoll
//! instance.
//!
//! Property, over every interleaving (bounded preemptions): workers that
//! drain the socket, then wait on the epoll instance when they take the
//! baton and park otherwise (waking a parked worker when a drain found a
//! backlog), never all sleep while a datagram is queued — every datagram
//! sent is received. A stranded datagram would leave every thread blocked,
//! which loom reports as a deadlock.
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use takt_sip::transport::baton::Baton;

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b
}

/// A socket's queue and an epoll instance with the socket registered
/// edge-triggered: an arrival queues the datagram, puts the event on the
/// ready list and wakes one waiter; a wait takes the event off the list.
struct Net {
    queued: AtomicUsize,
    /// (event on the ready list, stopped)
    ready: Mutex<(bool, bool)>,
    cv: Condvar,
    received: AtomicUsize,
    stopped: AtomicBool,
}

impl Net {
    fn new() -> Net {
        Net {
            queued: AtomicUsize::new(0),
            ready: Mutex::new((false, false)),
            cv: Condvar::new(),
            received: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
        }
    }

    fn send(&self) {
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.ready.lock().unwrap().0 = true;
        self.cv.notify_one();
    }

    /// A non-blocking receive of everything queued (a `recvmmsg` that
    /// comes back short: the queue was found drained).
    fn drain(&self) -> usize {
        let n = self.queued.swap(0, Ordering::SeqCst);
        self.received.fetch_add(n, Ordering::SeqCst);
        n
    }

    fn wait(&self) {
        let mut r = self.ready.lock().unwrap();
        while !r.0 && !r.1 {
            r = self.cv.wait(r).unwrap();
        }
        r.0 = false;
    }

    /// The server's stop: every waiter and parked worker returns.
    fn stop(&self, baton: &Baton) {
        self.stopped.store(true, Ordering::SeqCst);
        self.ready.lock().unwrap().1 = true;
        self.cv.notify_all();
        baton.close();
    }
}

/// A worker's loop: drain; with a backlog wake a helper; once every
/// datagram is in, stop the server; else wait (baton) or park.
fn worker(net: &Net, baton: &Baton, me: usize, total: usize) {
    while !net.stopped.load(Ordering::SeqCst) {
        if net.drain() >= 2 {
            baton.wake_one();
        }
        if net.received.load(Ordering::SeqCst) == total {
            net.stop(baton);
            return;
        }
        if baton.take() {
            net.wait();
            baton.put_down();
        } else {
            baton.park(me);
        }
    }
}

fn run(workers: usize, datagrams: usize) {
    builder().check(move || {
        let net = Arc::new(Net::new());
        let baton = Arc::new(Baton::new(workers));
        let handles: Vec<_> = (0..workers)
            .map(|i| {
                let (n, b) = (net.clone(), baton.clone());
                loom::thread::spawn(move || worker(&n, &b, i, datagrams))
            })
            .collect();
        for _ in 0..datagrams {
            net.send();
        }
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(net.received.load(Ordering::SeqCst), datagrams);
    });
}

#[test]
fn two_workers_one_datagram() {
    run(2, 1);
}

#[test]
fn two_workers_two_datagrams() {
    run(2, 2);
}

#[test]
fn three_workers_one_datagram() {
    run(3, 1);
}
