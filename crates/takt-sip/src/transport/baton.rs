//! [`Baton`]: which idle worker of the `shared` model waits for datagrams.
//!
//! With [`super::WakeOrder::Lifo`] every idle worker used to wait on the
//! shared epoll instance, and every datagram that arrived while one worker
//! was busy woke another: on the CPUs the workers share, a worker that the
//! busy one would have reached a few microseconds later anyway, at the
//! price of a wake-up, two context switches and a receive that often found
//! the socket already drained. The baton keeps one idle worker waiting on
//! the instance (the *listener*) and parks the others on their own
//! [`Parker`]s, where the kernel's wake-ups do not reach them:
//!
//! 1. A worker that finds the sockets drained takes the listener's role
//!    ([`Baton::take`]) if it is free, and waits on the epoll instance;
//!    else it parks ([`Baton::park`]).
//! 2. The listener, woken, puts the role down ([`Baton::put_down`]) and
//!    drains the sockets; back at step 1 it takes the role again unless
//!    another worker has taken it meanwhile.
//! 3. A worker that has received a whole batch's worth of datagrams since
//!    it last found the sockets drained (the backlog exceeds what one
//!    worker drains at a time) wakes the worker that parked last
//!    ([`Baton::wake_one`]), which drains beside it and then goes back to
//!    step 1.
//!
//! Why no datagram is stranded while every worker sleeps: a worker parks
//! only after seeing the role held, and the role is put down only by its
//! holder, which then drains and tries to take it again (step 2). Taking
//! it is a compare-and-swap, a read-modify-write, which reads the latest
//! value of the flag whatever the memory ordering: so the last worker to
//! put it down either takes it back or finds it taken by one that has
//! yet to wait. The role is therefore always held, or about to be, by a
//! worker that will wait on the epoll instance after draining, and the
//! instance's edge-triggered events (see [`super::wake`]) cover every
//! datagram that arrives after a drain.
//!
//! Shutdown: [`Baton::close`] wakes every parked worker and makes later
//! [`Baton::park`] calls return at once, so a worker that parks while the
//! server stops is never left behind.
//!
//! `tests/loom_baton.rs` model-checks these steps over a modelled socket
//! and epoll instance.

use takt_sched::sync::{AtomicBool, Mutex, Ordering};
use takt_sched::{Parker, SpinBudget};

/// The listener's role and the parked workers (see the module docs).
#[derive(Debug)]
pub struct Baton {
    /// Whether a worker holds the listener's role.
    held: AtomicBool,
    /// One per worker, each parked on by its owner only.
    parkers: Box<[Parker]>,
    idle: Mutex<Idle>,
}

#[derive(Debug, Default)]
struct Idle {
    /// Parked workers, the one that parked last at the end.
    parked: Vec<usize>,
    /// Set by [`Baton::close`]: no worker parks any more.
    closed: bool,
}

impl Baton {
    /// A baton for `workers` workers, numbered from 0.
    pub fn new(workers: usize) -> Baton {
        Baton {
            held: AtomicBool::new(false),
            parkers: (0..workers)
                .map(|_| Parker::new(SpinBudget::NONE))
                .collect(),
            idle: Mutex::new(Idle {
                parked: Vec::with_capacity(workers),
                closed: false,
            }),
        }
    }

    /// Takes the listener's role if no worker holds it; returns whether
    /// this caller now holds it (and must wait on the epoll instance, then
    /// [`put_down`](Self::put_down)).
    #[inline]
    pub fn take(&self) -> bool {
        // Relaxed (all three): nothing is published through the flag; the
        // socket's state is the kernel's. What the protocol needs is that
        // a successful take is a read-modify-write, which sees the latest
        // value in the flag's modification order (module docs).
        !self.held.load(Ordering::Relaxed)
            && self
                .held
                .compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    /// The listener's wait ended: the role is free for the next worker to
    /// find the sockets drained (the caller drains them first, then takes
    /// it again if it is still free).
    #[inline]
    pub fn put_down(&self) {
        // Relaxed: see `take`.
        self.held.store(false, Ordering::Relaxed);
    }

    /// Parks worker `me` until [`wake_one`](Self::wake_one) picks it or
    /// [`close`](Self::close) is called. Returns at once when closed.
    pub fn park(&self, me: usize) {
        {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            if idle.closed {
                return;
            }
            idle.parked.push(me);
        }
        // A wake that came between the unlock and here left its token.
        self.parkers[me].park();
    }

    /// Wakes the worker that parked last, if any; returns whether one was.
    pub fn wake_one(&self) -> bool {
        let who = self
            .idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .parked
            .pop();
        match who {
            Some(i) => {
                self.parkers[i].unpark();
                true
            }
            None => false,
        }
    }

    /// Wakes every parked worker; from now on [`park`](Self::park)
    /// returns at once.
    pub fn close(&self) {
        let parked = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.closed = true;
            std::mem::take(&mut idle.parked)
        };
        for i in parked {
            self.parkers[i].unpark();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn one_holder_at_a_time() {
        let b = Baton::new(2);
        assert!(b.take());
        assert!(!b.take());
        b.put_down();
        assert!(b.take());
    }

    #[test]
    fn wakes_the_last_parked_and_close_releases_everyone() {
        let b = Arc::new(Baton::new(3));
        assert!(!b.wake_one(), "nobody parked");
        let park = |i: usize| {
            let b = b.clone();
            std::thread::spawn(move || b.park(i))
        };
        let first = park(0);
        while b.idle.lock().unwrap().parked.is_empty() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let second = park(1);
        while b.idle.lock().unwrap().parked.len() < 2 {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(b.wake_one());
        second.join().unwrap();
        assert_eq!(b.idle.lock().unwrap().parked, [0]);
        b.close();
        first.join().unwrap();
        // closed: parking returns at once
        b.park(2);
        assert!(!b.wake_one());
    }
}
