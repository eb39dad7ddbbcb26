//! A hashed timer wheel: O(1) insert, lazy cancellation, and exact
//! deadlines.
//!
//! Time is cut into ticks of 2^[`TICK_SHIFT`] ns (~8.4 ms); tick `t`'s
//! entries are linked into slot `t % SLOTS` (with [`SLOTS`] = 4096, one
//! turn of the wheel is ~34.4 s: longer than 64·T1, so every deadline of
//! a transaction on RFC 3261's default timers but Timer C's is swept
//! once, when it is due). Inserting writes one pooled entry and the
//! slot's head — no sift through a heap spread over many cache lines,
//! which is what the transaction path paid before (a stateful INVITE
//! queues its earliest deadline each time it moves earlier).
//!
//! Deadlines keep their full nanosecond value: an entry is due when its
//! deadline is `<= now`, never earlier because of the tick rounding, and
//! [`Wheel::pop_due`] returns it at the first call with such a `now`. An
//! entry for a later turn of the wheel (Timer C's 3 minutes, D's 32 s)
//! stays in its slot and is looked at once a turn until it is due.
//!
//! Cancellation is the caller's: the wheel hands back every entry once it
//! is due, and the caller drops those its record no longer wants (the
//! transaction table compares the deadline with the one the record is
//! queued under). An entry therefore costs nothing to cancel and is
//! freed when its slot is next swept.
//!
//! ```
//! use takt_sip::proxy::wheel::Wheel;
//! let mut w = Wheel::new();
//! w.insert(500_000_000, 7);
//! w.insert(100, 9);
//! assert_eq!(w.pop_due(0), None);
//! assert_eq!(w.pop_due(100), Some((100, 9)));
//! assert_eq!(w.pop_due(499_999_999), None);
//! assert_eq!(w.pop_due(600_000_000), Some((500_000_000, 7)));
//! assert!(w.is_empty());
//! ```

/// log2 of a tick in nanoseconds (2^23 ns ≈ 8.4 ms).
pub const TICK_SHIFT: u32 = 23;
/// Slots of the wheel (a power of two). One turn (~34.4 s) spans the
/// 32 s a record lingers for (Timers D, J and L at 64·T1): with a shorter
/// turn every lingering record's entry was visited, a cache miss each
/// time, once a turn until due — at a high call rate a sizable share of
/// the timer thread's time.
pub const SLOTS: usize = 4096;
const MASK: u64 = SLOTS as u64 - 1;
const WORDS: usize = SLOTS / 64;
const NIL: u32 = u32::MAX;

/// One queued deadline, linked into its slot's list (or the free list).
#[derive(Debug, Clone, Copy)]
struct Entry {
    deadline: u64,
    key: u64,
    next: u32,
}

/// A hashed timer wheel of `(deadline_ns, key)` entries.
///
/// Entries live in one pool (a vector, grown on demand and never shrunk)
/// and are linked into their slot's list by index; freed entries are
/// reused last in, first out, so an insert writes a recently used line of
/// the pool and the slot's head, and allocates only when the pool grows.
#[derive(Debug, Clone)]
pub struct Wheel {
    heads: Box<[u32]>,
    pool: Vec<Entry>,
    free: u32,
    /// Bit `i` set: slot `i` may hold entries.
    occupied: [u64; WORDS],
    /// The tick of the next slot to sweep. Invariant: every entry in the
    /// wheel belongs to a tick `>= cursor`.
    cursor: u64,
    /// Entries found due, handed out by `pop_due`.
    ready: Vec<(u64, u64)>,
    len: usize,
    /// No entry is due before this.
    hint: u64,
}

impl Default for Wheel {
    fn default() -> Self {
        Wheel::new()
    }
}

impl Wheel {
    /// An empty wheel whose first tick is 0.
    pub fn new() -> Wheel {
        Wheel::with_capacity(0)
    }

    /// An empty wheel with room for `n` entries before its pool grows (the
    /// pool's memory is written here, so the first inserts do not fault
    /// pages in).
    pub fn with_capacity(n: usize) -> Wheel {
        let n = n.min(NIL as usize);
        let pool = (0..n)
            .map(|k| Entry {
                deadline: 0,
                key: 0,
                next: if k + 1 < n { (k + 1) as u32 } else { NIL },
            })
            .collect();
        Wheel {
            heads: vec![NIL; SLOTS].into_boxed_slice(),
            pool,
            free: if n > 0 { 0 } else { NIL },
            occupied: [0; WORDS],
            cursor: 0,
            ready: Vec::with_capacity(n.min(64)),
            len: 0,
            hint: u64::MAX,
        }
    }

    /// Makes room for `n` more entries than are queued now, so that
    /// queueing them allocates nothing.
    pub fn reserve(&mut self, n: usize) {
        // the pool's entries not held are on its free list
        self.pool
            .reserve((self.len + n).saturating_sub(self.pool.len()));
    }

    /// Entries held (due or not, cancelled ones included until swept).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A lower bound of the earliest deadline held (`u64::MAX`: empty).
    /// Exact after `insert`s into an empty wheel; after a sweep it may be
    /// the start of the next occupied slot, never later than a deadline.
    pub fn next_due_hint(&self) -> u64 {
        self.hint
    }

    /// Queues `key` for `deadline`. O(1). A deadline in a tick already
    /// swept goes to the current slot and is due at the next `pop_due`.
    pub fn insert(&mut self, deadline: u64, key: u64) {
        let tick = (deadline >> TICK_SHIFT).max(self.cursor);
        let i = (tick & MASK) as usize;
        let e = Entry {
            deadline,
            key,
            next: self.heads[i],
        };
        let at = if self.free != NIL {
            let at = self.free;
            self.free = self.pool[at as usize].next;
            self.pool[at as usize] = e;
            at
        } else {
            self.pool.push(e);
            (self.pool.len() - 1) as u32
        };
        self.heads[i] = at;
        self.occupied[i / 64] |= 1 << (i % 64);
        self.len += 1;
        self.hint = self.hint.min(deadline);
    }

    /// Moves the entries of slot `i` due at `now` to `ready`; returns the
    /// smallest deadline left in it.
    fn sweep(&mut self, i: usize, now: u64) -> u64 {
        let mut min_left = u64::MAX;
        let mut prev = NIL;
        let mut at = self.heads[i];
        while at != NIL {
            let e = self.pool[at as usize];
            if e.deadline <= now {
                self.ready.push((e.deadline, e.key));
                if prev == NIL {
                    self.heads[i] = e.next;
                } else {
                    self.pool[prev as usize].next = e.next;
                }
                self.pool[at as usize].next = self.free;
                self.free = at;
            } else {
                min_left = min_left.min(e.deadline);
                prev = at;
            }
            at = e.next;
        }
        if self.heads[i] == NIL {
            self.occupied[i / 64] &= !(1 << (i % 64));
        }
        min_left
    }

    /// The start of the first occupied slot after the cursor's, within one
    /// turn (`u64::MAX` if none). Scans the bitmap a word at a time.
    fn next_occupied_after_cursor(&self) -> u64 {
        let c = (self.cursor & MASK) as usize;
        // the lowest occupied slot in `from..to`
        let first = |from: usize, to: usize| {
            let mut i = from;
            while i < to {
                let w = self.occupied[i / 64] >> (i % 64);
                if w != 0 {
                    let j = i + w.trailing_zeros() as usize;
                    return (j < to).then_some(j);
                }
                i = (i / 64 + 1) * 64;
            }
            None
        };
        // the slots after the cursor's, then those before it
        let k = match first(c + 1, SLOTS) {
            Some(j) => j - c,
            None => match first(0, c) {
                Some(j) => j + SLOTS - c,
                None => return u64::MAX,
            },
        };
        (self.cursor + k as u64) << TICK_SHIFT
    }

    /// Takes one entry whose deadline is `<= now`, in no particular order
    /// among those due; `None` when none is due. Entries queued while
    /// draining (by the caller's handling of one due entry) are found by
    /// the next call with the same `now` if they are due by then.
    pub fn pop_due(&mut self, now: u64) -> Option<(u64, u64)> {
        loop {
            if let Some(e) = self.ready.pop() {
                self.len -= 1;
                return Some(e);
            }
            if self.len == 0 {
                self.hint = u64::MAX;
                self.cursor = self.cursor.max(now >> TICK_SHIFT);
                return None;
            }
            let now_tick = now >> TICK_SHIFT;
            if now_tick >= self.cursor + SLOTS as u64 {
                // a jump of a whole turn or more: one sweep of every slot
                let mut min_left = u64::MAX;
                for i in 0..SLOTS {
                    if self.occupied[i / 64] & (1 << (i % 64)) != 0 {
                        min_left = min_left.min(self.sweep(i, now));
                    }
                }
                self.cursor = now_tick;
                if self.ready.is_empty() {
                    self.hint = min_left;
                    return None;
                }
                continue;
            }
            let i = (self.cursor & MASK) as usize;
            let left = if self.occupied[i / 64] & (1 << (i % 64)) != 0 {
                self.sweep(i, now)
            } else {
                u64::MAX
            };
            if !self.ready.is_empty() {
                continue;
            }
            if self.cursor < now_tick {
                self.cursor += 1;
                continue;
            }
            // cursor == now_tick: what is left here is due later in this
            // tick (or in a later turn); the other slots not before theirs
            self.hint = left.min(self.next_occupied_after_cursor());
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: u64 = 1 << TICK_SHIFT;

    fn drain(w: &mut Wheel, now: u64) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        while let Some(e) = w.pop_due(now) {
            v.push(e);
        }
        v.sort_unstable();
        v
    }

    #[test]
    fn exact_deadlines_within_a_tick() {
        let mut w = Wheel::new();
        w.insert(TICK * 3 + 10, 1);
        w.insert(TICK * 3 + 20, 2);
        assert!(drain(&mut w, TICK * 3 + 9).is_empty());
        assert_eq!(drain(&mut w, TICK * 3 + 10), vec![(TICK * 3 + 10, 1)]);
        assert_eq!(w.next_due_hint(), TICK * 3 + 20);
        assert_eq!(drain(&mut w, TICK * 3 + 25), vec![(TICK * 3 + 20, 2)]);
        assert!(w.is_empty());
        assert_eq!(w.next_due_hint(), u64::MAX);
    }

    #[test]
    fn pool_entries_are_reused() {
        let mut w = Wheel::with_capacity(4);
        for round in 0..100u64 {
            let now = round * TICK * 3;
            for k in 0..4 {
                w.insert(now + k, k);
            }
            assert_eq!(drain(&mut w, now + 4).len(), 4);
        }
        assert_eq!(w.pool.len(), 4, "no growth past the preallocated pool");
    }

    #[test]
    fn later_turns_wait_for_their_deadline() {
        let mut w = Wheel::new();
        let c = 181_000_000_000; // Timer C: many turns away
        w.insert(c, 1);
        w.insert(500_000_000, 2);
        let mut now = 0;
        let mut fired = Vec::new();
        while now <= c + TICK {
            fired.extend(drain(&mut w, now).into_iter().map(|(d, k)| (d, k, now)));
            assert!(w.next_due_hint() > now);
            now += 10_000_000; // the timer thread's 10 ms
        }
        assert_eq!(fired.len(), 2);
        for (d, _, at) in fired {
            assert!(at >= d && at - d < 10_000_000, "{d} fired at {at}");
        }
    }

    #[test]
    fn jumps_of_many_turns_and_deadlines_in_the_past() {
        let mut w = Wheel::new();
        for k in 0..1000u64 {
            w.insert(k * 7_919_000_000, k);
        }
        let half = 500 * 7_919_000_000;
        let first = drain(&mut w, half);
        assert_eq!(first.len(), 501);
        assert!(first.iter().all(|&(d, _)| d <= half));
        // a deadline before the cursor is due at once, not a turn later
        w.insert(5, 5000);
        assert_eq!(drain(&mut w, half), vec![(5, 5000)]);
        assert_eq!(drain(&mut w, u64::MAX / 2).len(), 499);
        assert!(w.is_empty());
    }

    #[test]
    fn entries_queued_while_draining_are_found() {
        let mut w = Wheel::new();
        w.insert(100, 1);
        let now = 200;
        let (_, k) = w.pop_due(now).unwrap();
        assert_eq!(k, 1);
        // the caller's handling queues a follow-up due at once (TCP: 0)
        w.insert(now, 2);
        assert_eq!(w.pop_due(now), Some((now, 2)));
        assert_eq!(w.pop_due(now), None);
    }

    #[test]
    fn the_hint_finds_the_next_occupied_slot_around_the_turn() {
        // from every cursor position in a word and across words, the hint
        // names the start of the one occupied slot, before or after the
        // cursor's slot in the turn
        for start in [0, 1, 63, 64, 65, 127, SLOTS as u64 - 1, SLOTS as u64 + 5] {
            for ahead in [1u64, 2, 63, 64, 65, 200, SLOTS as u64 - 1] {
                let mut w = Wheel::new();
                assert_eq!(w.pop_due(start * TICK), None);
                let d = (start + ahead) * TICK + 7;
                w.insert(d, 1);
                // an entry in the cursor's own slot, due later in its tick
                w.insert(start * TICK + TICK - 1, 2);
                assert_eq!(w.pop_due(start * TICK), None);
                assert_eq!(w.next_due_hint(), start * TICK + TICK - 1);
                assert_eq!(
                    w.pop_due(start * TICK + TICK - 1),
                    Some((start * TICK + TICK - 1, 2))
                );
                assert_eq!(w.pop_due(start * TICK + TICK - 1), None);
                assert_eq!(
                    w.next_due_hint(),
                    (start + ahead) * TICK,
                    "start {start} ahead {ahead}"
                );
                assert_eq!(drain(&mut w, d), vec![(d, 1)]);
            }
        }
    }

    #[test]
    fn hint_is_a_lower_bound() {
        let mut w = Wheel::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut now = 0;
        let mut held: Vec<u64> = Vec::new();
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 3 {
                0 | 1 => {
                    let d = now + (x >> 8) % 40_000_000_000;
                    w.insert(d, d);
                    held.push(d);
                }
                _ => {
                    now += (x >> 16) % 200_000_000;
                    for (d, _) in drain(&mut w, now) {
                        assert!(d <= now);
                        let p = held.iter().position(|&h| h == d).unwrap();
                        held.swap_remove(p);
                    }
                    assert!(held.iter().all(|&d| d > now), "everything due was returned");
                }
            }
            if let Some(&m) = held.iter().min() {
                assert!(w.next_due_hint() <= m);
            }
            assert_eq!(w.len(), held.len());
        }
    }
}
