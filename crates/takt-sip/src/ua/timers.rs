//! The UAs' timer settings and their timer queues.
//!
//! A UA arms timers of a handful of distinct durations (T1·2^k, T2, the
//! hold time, 64·T1). Since `now` never decreases, the deadlines of one
//! duration are armed in order, so one FIFO per duration is a priority
//! queue: arming and expiring are O(1) and the next deadline is the least
//! of a few queue heads. Cancelling is lazy: an entry names its call and
//! the deadline it was armed for, and the UA ignores it on expiry unless
//! the call still waits for exactly that deadline.

use std::collections::VecDeque;

/// RFC 3261's T1: 500 ms.
pub const T1_NS: u64 = 500_000_000;
/// RFC 3261's T2: 4 s.
pub const T2_NS: u64 = 4_000_000_000;

/// Timer settings of a UA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UaTimers {
    /// T1, ns (RTT estimate; default 500 ms).
    pub t1_ns: u64,
    /// T2, ns (the cap of non-INVITE and 2xx retransmission intervals;
    /// default 4 s).
    pub t2_ns: u64,
    /// Whether requests (and the UAS's 200) are retransmitted.
    pub retransmit: bool,
}

impl Default for UaTimers {
    fn default() -> Self {
        UaTimers {
            t1_ns: T1_NS,
            t2_ns: T2_NS,
            retransmit: true,
        }
    }
}

impl UaTimers {
    /// Timer B, F and H: 64·T1.
    pub fn timeout_ns(&self) -> u64 {
        64 * self.t1_ns
    }
}

/// What an armed timer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimerKind {
    /// Resend the pending request (or the UAS's 200).
    Retransmit,
    /// Give up on the pending transaction (Timer B / F / H).
    Timeout,
    /// The hold time is over: send the BYE.
    Hold,
}

/// One armed timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) due: u64,
    pub(crate) slot: u32,
    /// The incarnation of the slot's call it was armed for.
    pub(crate) seq: u32,
    pub(crate) kind: TimerKind,
}

/// FIFO queues, one per distinct duration.
#[derive(Debug, Default)]
pub(crate) struct Queues {
    /// `(duration, entries)`; each queue's `due` is non-decreasing.
    q: Vec<(u64, VecDeque<Entry>)>,
}

impl Queues {
    /// Arms `kind` for call `(slot, seq)` at `now + after`; returns the
    /// deadline. `now` must not be less than at any earlier call.
    pub(crate) fn arm(
        &mut self,
        now: u64,
        after: u64,
        slot: u32,
        seq: u32,
        kind: TimerKind,
    ) -> u64 {
        let due = now + after;
        let e = Entry {
            due,
            slot,
            seq,
            kind,
        };
        match self.q.iter_mut().find(|(d, _)| *d == after) {
            Some((_, q)) => q.push_back(e),
            None => {
                let mut q = VecDeque::with_capacity(1024);
                q.push_back(e);
                self.q.push((after, q));
            }
        }
        due
    }

    /// The earliest deadline armed (possibly of a cancelled timer).
    pub(crate) fn next(&self) -> Option<u64> {
        self.q
            .iter()
            .filter_map(|(_, q)| q.front())
            .map(|e| e.due)
            .min()
    }

    /// Removes and returns one entry due at or before `now`.
    pub(crate) fn pop_due(&mut self, now: u64) -> Option<Entry> {
        let (_, q) = self
            .q
            .iter_mut()
            .filter(|(_, q)| q.front().is_some_and(|e| e.due <= now))
            .min_by_key(|(_, q)| q.front().map_or(u64::MAX, |e| e.due))?;
        q.pop_front()
    }
}
