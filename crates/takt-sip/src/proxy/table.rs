//! The transaction table: shards of `Mutex<HashMap>` with a timer heap
//! each, shared by every worker. A message locks exactly one shard (the
//! one its key hashes to), so workers handling different transactions do
//! not contend, and any worker can handle any message of any transaction —
//! which SO_REUSEPORT's 4-tuple hashing requires.
//!
//! The table is bounded: an insert into a full shard fails and the caller
//! degrades (sheds a new INVITE with 503, forwards other requests
//! statelessly).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::txn::Txn;

/// Keys are already hashes: the map uses them as they are.
#[derive(Debug, Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Map = HashMap<u64, Txn, BuildHasherDefault<KeyHasher>>;

/// Records per shard allocated up front (the rest grows on demand, up to the bound).
const PRESIZE: usize = 64;

/// One shard.
#[derive(Debug, Default)]
pub struct Shard {
    /// Records by key.
    pub map: Map,
    /// (deadline, key), earliest first; entries whose deadline differs from
    /// the record's `scheduled` are stale and skipped.
    pub timers: BinaryHeap<Reverse<(u64, u64)>>,
    cap: usize,
    /// Message buffers of finished records, reused by new ones (no malloc
    /// churn on the message path; bounded by [`FREE_BUFFERS`]).
    free: Vec<Vec<u8>>,
}

/// Most spare buffers a shard keeps.
pub const FREE_BUFFERS: usize = 256;
/// Largest buffer kept for reuse.
const FREE_BUFFER_MAX: usize = 4096;

impl Shard {
    /// Inserts unless the shard is full; returns whether it did.
    pub fn insert(&mut self, key: u64, txn: Txn) -> bool {
        if self.map.len() >= self.cap && !self.map.contains_key(&key) {
            return false;
        }
        self.map.entry(key).or_insert(txn);
        true
    }

    /// An empty buffer, reused when one is spare.
    pub fn buf(&mut self) -> Vec<u8> {
        self.free.pop().unwrap_or_default()
    }

    /// Takes back a buffer a record no longer needs.
    pub fn give(&mut self, mut b: Vec<u8>) {
        if self.free.len() < FREE_BUFFERS && b.capacity() > 0 && b.capacity() <= FREE_BUFFER_MAX {
            b.clear();
            self.free.push(b);
        }
    }

    fn recycle(&mut self, t: Txn) {
        for b in [t.request, t.response, t.ack, t.cancel_req] {
            self.give(b);
        }
    }

    /// Re-queues `key` when its record's earliest deadline moved earlier
    /// than what is queued (or nothing is queued).
    pub fn reschedule(&mut self, key: u64) {
        let Some(t) = self.map.get_mut(&key) else {
            return;
        };
        if t.is_done() {
            if let Some(t) = self.map.remove(&key) {
                self.recycle(t);
            }
            return;
        }
        if let Some(d) = t.next_deadline() {
            if t.scheduled == 0 || d < t.scheduled {
                t.scheduled = d;
                self.timers.push(Reverse((d, key)));
            }
        }
    }

    /// Pops the next key whose queued deadline is due at `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<u64> {
        while let Some(&Reverse((d, key))) = self.timers.peek() {
            if d > now {
                return None;
            }
            self.timers.pop();
            match self.map.get_mut(&key) {
                Some(t) if t.scheduled == d => {
                    t.scheduled = 0;
                    return Some(key);
                }
                _ => continue, // stale
            }
        }
        None
    }
}

/// The sharded table.
#[derive(Debug)]
pub struct Table {
    shards: Box<[Mutex<Shard>]>,
    /// Per shard, the earliest queued deadline (u64::MAX: none), published
    /// under the shard's lock so the timer thread locks only shards with
    /// something due instead of all of them every tick.
    next_due: Box<[AtomicU64]>,
    mask: u64,
    capacity: usize,
    /// Records inserted minus removed, approximately (read for shedding).
    len_hint: AtomicUsize,
}

impl Table {
    /// A table of `shards` (rounded up to a power of two) holding at most `capacity` records.
    pub fn new(shards: usize, capacity: usize) -> Table {
        let n = shards.max(1).next_power_of_two();
        let per = capacity.div_ceil(n).max(1);
        Table {
            shards: (0..n)
                .map(|_| {
                    Mutex::new(Shard {
                        cap: per,
                        map: Map::with_capacity_and_hasher(per.min(PRESIZE), Default::default()),
                        timers: BinaryHeap::with_capacity(per.min(PRESIZE) * 2),
                        free: Vec::new(),
                    })
                })
                .collect(),
            next_due: (0..n).map(|_| AtomicU64::new(u64::MAX)).collect(),
            mask: (n - 1) as u64,
            capacity: per * n,
            len_hint: AtomicUsize::new(0),
        }
    }

    /// Locks the shard of `key`.
    pub fn shard(&self, key: u64) -> MutexGuard<'_, Shard> {
        let s = &self.shards[(key & self.mask) as usize];
        s.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes the earliest deadline of `sh`, the shard of `key` (call
    /// with its lock held, after changing its timers).
    pub fn publish(&self, key: u64, sh: &Shard) {
        self.publish_at((key & self.mask) as usize, sh);
    }

    /// Publishes the earliest deadline of shard `i` (lock held).
    pub fn publish_at(&self, i: usize, sh: &Shard) {
        let d = sh.timers.peek().map_or(u64::MAX, |r| r.0 .0);
        // Relaxed: a hint. A stale value makes the timer thread lock a shard
        // for nothing, or run a deadline one tick late; the heap under the
        // lock stays the truth.
        self.next_due[i].store(d, Ordering::Relaxed);
    }

    /// Whether shard `i` may have a deadline due at `now`.
    pub fn may_be_due(&self, i: usize, now: u64) -> bool {
        // Relaxed: see `publish_at`.
        self.next_due[i].load(Ordering::Relaxed) <= now
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Locks shard `i`.
    pub fn shard_at(&self, i: usize) -> MutexGuard<'_, Shard> {
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Most records.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Records held (sums the shards).
    pub fn len(&self) -> usize {
        (0..self.shards.len())
            .map(|i| self.shard_at(i).map.len())
            .sum()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cheap occupancy estimate, maintained by [`Table::note_len`].
    pub fn len_hint(&self) -> usize {
        // Relaxed: a statistic for shedding decisions, no ordering needed.
        self.len_hint.load(Ordering::Relaxed)
    }

    /// Adjusts the occupancy estimate by `delta`.
    pub fn note_len(&self, delta: isize) {
        // Relaxed: see `len_hint`.
        if delta >= 0 {
            self.len_hint.fetch_add(delta as usize, Ordering::Relaxed);
        } else {
            let d = delta.unsigned_abs();
            let _ = self
                .len_hint
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                    Some(v.saturating_sub(d))
                });
        }
    }
}
