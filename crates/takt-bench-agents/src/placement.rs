//! Where `ping_pong`'s two agents run, and how often a delivery crossed
//! threads.
//!
//! "Across two threads" means two different things in actor runtimes:
//!
//! - [`Placement::ThreadPerAgent`]: each agent has a thread of its own
//!   (takt's `active_obj`, an actix `Arbiter` per actor, a tokio
//!   current-thread runtime per actor), so *every* delivery is a hand-off
//!   from one thread to the other.
//! - [`Placement::TwoWorkers`]: both agents on one runtime with two worker
//!   threads, which decides where each runs (takt's `work_stealing` pool of
//!   two, a tokio multi-thread runtime with two workers). A runtime may keep
//!   both agents on one worker — tokio puts a task woken by the running task
//!   in that worker's LIFO slot — so a delivery crosses threads only as
//!   often as the scheduler moves work.
//!
//! A ratio between two implementations is only meaningful within one
//! placement, so every `ping_pong` row records its placement, and the
//! fraction of its deliveries that crossed threads ([`CrossingCounter`]):
//! the message carries the [`thread_tag`] of the thread that sent it, and
//! the receiving handler compares it with its own.

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};

/// Where `ping_pong`'s two agents run (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Placement {
    /// Both agents on one thread.
    OneThread,
    /// Each agent on a thread of its own: every delivery crosses threads.
    ThreadPerAgent,
    /// Both agents on one runtime with two worker threads, which places them.
    TwoWorkers,
}

impl Placement {
    /// Every placement, in report order.
    pub const ALL: [Placement; 3] = [
        Placement::OneThread,
        Placement::ThreadPerAgent,
        Placement::TwoWorkers,
    ];

    /// The name recorded in rows' `placement` parameter.
    pub fn name(self) -> &'static str {
        match self {
            Placement::OneThread => "one_thread",
            Placement::ThreadPerAgent => "thread_per_agent",
            Placement::TwoWorkers => "two_workers",
        }
    }

    /// Threads the agents may run on.
    pub fn threads(self) -> usize {
        match self {
            Placement::OneThread => 1,
            Placement::ThreadPerAgent | Placement::TwoWorkers => 2,
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A number for the calling thread, unique within the process (a
/// thread-local read after the first call; never 0).
#[inline]
pub fn thread_tag() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    thread_local! {
        static TAG: Cell<u32> = const { Cell::new(0) };
    }
    TAG.with(|t| {
        let v = t.get();
        if v != 0 {
            return v;
        }
        // Relaxed: only uniqueness matters.
        let v = NEXT.fetch_add(1, Ordering::Relaxed);
        t.set(v);
        v
    })
}

/// One agent's count of deliveries, and of those whose sender ran on
/// another thread. Plain fields: each agent owns its counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrossingCounter {
    /// Deliveries handled.
    pub handled: u64,
    /// Of those, deliveries sent from another thread.
    pub crossed: u64,
}

impl CrossingCounter {
    /// Counts one delivery sent from the thread tagged `from`; returns the
    /// tag of the handling thread, to put in the next message.
    #[inline]
    pub fn delivered(&mut self, from: u32) -> u32 {
        let me = thread_tag();
        self.handled += 1;
        self.crossed += u64::from(from != me);
        me
    }

    /// Sums two agents' counters.
    pub fn merge(self, other: CrossingCounter) -> CrossingCounter {
        CrossingCounter {
            handled: self.handled + other.handled,
            crossed: self.crossed + other.crossed,
        }
    }

    /// Crossed deliveries over handled ones (0 when none were handled).
    pub fn fraction(self) -> f64 {
        if self.handled == 0 {
            0.0
        } else {
            self.crossed as f64 / self.handled as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_differ_between_threads_and_are_stable() {
        let here = thread_tag();
        assert_eq!(here, thread_tag());
        assert_ne!(here, 0);
        let there = std::thread::spawn(thread_tag).join().unwrap();
        assert_ne!(here, there);
    }

    #[test]
    fn counter_counts_crossings() {
        let mut c = CrossingCounter::default();
        let me = c.delivered(thread_tag());
        assert_eq!(me, thread_tag());
        let other = std::thread::spawn(thread_tag).join().unwrap();
        c.delivered(other);
        assert_eq!(
            c,
            CrossingCounter {
                handled: 2,
                crossed: 1
            }
        );
        assert_eq!(c.fraction(), 0.5);
        assert_eq!(c.merge(c).crossed, 2);
        assert_eq!(CrossingCounter::default().fraction(), 0.0);
    }
}
