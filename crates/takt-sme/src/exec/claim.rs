//! Lock-free work claiming for the `worklist` and `stealing` executors.
//!
//! - [`Cursor`]: a shared counter handing out chunk indices with one
//!   `fetch_add` each (the thesis's work list, claiming chunks rather than
//!   single processes).
//! - [`RangeDeque`]: a half-open range of chunk indices packed in one 64-bit
//!   word; its owner takes from the front, thieves take from the back, both
//!   with a compare-and-swap, so every index is handed out exactly once.
//!
//! Both are used once per cycle and reset for a later cycle by one thread
//! while nobody uses them (see the executors), so no ABA can arise within a
//! cycle. Their loom models are in `tests/loom_claim.rs`.

use takt_sched::sync::{AtomicU64, AtomicUsize, Ordering};

/// A shared claim counter.
#[derive(Debug)]
pub struct Cursor {
    next: AtomicUsize,
}

impl Cursor {
    /// A cursor starting at 0.
    pub fn new() -> Self {
        Cursor {
            next: AtomicUsize::new(0),
        }
    }

    /// Claims the next index if it is below `limit`.
    #[inline]
    pub fn claim(&self, limit: usize) -> Option<usize> {
        // Relaxed: atomicity alone makes each index unique; the data the
        // chunk touches is ordered by the cycle barrier, not by this counter.
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        (i < limit).then_some(i)
    }

    /// Back to 0. Only while no thread claims from this cursor; the next
    /// cycle barrier publishes it.
    pub fn reset(&self) {
        self.next.store(0, Ordering::Relaxed);
    }
}

impl Default for Cursor {
    fn default() -> Self {
        Self::new()
    }
}

/// A range `lo..hi` of indices: owner pops `lo`, thieves pop `hi - 1`.
#[derive(Debug)]
pub struct RangeDeque {
    /// `lo << 32 | hi`; empty when `lo >= hi`.
    word: AtomicU64,
}

fn pack(lo: u32, hi: u32) -> u64 {
    ((lo as u64) << 32) | hi as u64
}

fn unpack(w: u64) -> (u32, u32) {
    ((w >> 32) as u32, w as u32)
}

impl RangeDeque {
    /// A deque holding `lo..hi`.
    pub fn new(lo: u32, hi: u32) -> Self {
        RangeDeque {
            word: AtomicU64::new(pack(lo, hi)),
        }
    }

    /// Refills with `lo..hi`. Only while no thread takes from it.
    pub fn reset(&self, lo: u32, hi: u32) {
        self.word.store(pack(lo, hi), Ordering::Relaxed);
    }

    /// The owner's take: the lowest remaining index.
    #[inline]
    pub fn pop_front(&self) -> Option<u32> {
        // Relaxed loads and CAS: the word is the only shared datum; every
        // successful CAS removes exactly the index it returns.
        let mut w = self.word.load(Ordering::Relaxed);
        loop {
            let (lo, hi) = unpack(w);
            if lo >= hi {
                return None;
            }
            match self.word.compare_exchange_weak(
                w,
                pack(lo + 1, hi),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(lo),
                Err(now) => w = now,
            }
        }
    }

    /// A thief's take: the highest remaining index.
    #[inline]
    pub fn steal_back(&self) -> Option<u32> {
        let mut w = self.word.load(Ordering::Relaxed);
        loop {
            let (lo, hi) = unpack(w);
            if lo >= hi {
                return None;
            }
            match self.word.compare_exchange_weak(
                w,
                pack(lo, hi - 1),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(hi - 1),
                Err(now) => w = now,
            }
        }
    }

    /// Indices left (a snapshot).
    pub fn remaining(&self) -> u32 {
        let (lo, hi) = unpack(self.word.load(Ordering::Relaxed));
        hi.saturating_sub(lo)
    }
}
