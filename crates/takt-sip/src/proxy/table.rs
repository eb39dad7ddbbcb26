//! The transaction table: shards, each a mutex over a slab of records, an
//! index by key and a timer wheel ([`super::wheel`]), shared by every worker. A message locks
//! exactly one shard (the one its key hashes to), so workers handling
//! different transactions do not contend, and any worker can handle any
//! message of any transaction — which SO_REUSEPORT's 4-tuple hashing
//! requires. Each shard sits on its own cache lines with the hints other
//! threads read without its lock (earliest deadline, size), so workers on
//! different shards never write a common line.
//!
//! The table is bounded, and most of what it holds at a high call rate is
//! records that outlive their calls: a BYE's stays 32 s in Completed
//! (Timer J, over UDP) and an INVITE's 32 s in Accepted (RFC 6026, over
//! any transport), only to absorb retransmissions. Such a record
//! *lingers* ([`Txn::only_absorbs`]); each shard queues its lingering
//! records oldest first, and an insert into a full shard ends the oldest
//! one early to make room ([`Shard::reclaim`], counted). Only when a shard
//! is full of records that do not linger does an insert fail, and the
//! caller degrades (sheds a new INVITE with 503, forwards other requests
//! statelessly). Without reclaiming, the bound (262,144 by default) held
//! a stateful proxy to 262,144 / 32 s ≈ 8,000 calls/s sustained over TCP
//! (4,000 over UDP, two records a call): a burst of ~240,000 calls filled
//! it, and every new INVITE was shed until the records' timers ran out.
//!
//! A message never grows it: [`PREALLOCATED`] records are made at start-up
//! and the timer thread keeps a reserve of vacant records and spare
//! buffers in every shard beyond them ([`Table::replenish`]). That matters
//! because records outlive their calls: a BYE's stays 32 s in Completed
//! (Timer J) and an INVITE's 32 s in Accepted (RFC 6026), so at 1,000
//! calls/s a table holds ~64,000 records, and when new ones were made on
//! the message path (slab growth, first-touch page faults, malloc, index
//! rehash) a 5,000-call benchmark run paid 17–28% more per INVITE and BYE
//! than a 1,000-call one that stayed within the preallocated records.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::txn::{Fresh, Txn};
use super::wheel::Wheel;

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

type Index = HashMap<u64, u32, BuildHasherDefault<KeyHasher>>;

/// Records of the whole table allocated up front, spread over its shards
/// (the rest grows on demand, up to the bound).
pub const PREALLOCATED: usize = 4096;
/// Capacity of each preallocated record's request buffer (a forwarded
/// request over UDP is at most `udp_size_limit`, 1300 bytes by default,
/// plus our Via and Record-Route).
const REQUEST_BUF: usize = 1536;
/// Capacity of each preallocated record's response buffer.
const RESPONSE_BUF: usize = 1024;
/// Timer entries preallocated per record (a record is queued under one
/// deadline at a time; stale entries wait for their sweep).
const TIMERS_PER_RECORD: usize = 3;
/// Vacant records [`Table::replenish`] keeps ready in each shard (within
/// its bound), so that a new transaction never grows the slab on the
/// message path. At 1,000 calls/s a shard of four takes ~500 records a
/// second: a quarter second of them, refilled every timer tick (10 ms).
pub const RESERVE: usize = 128;
/// Spare message buffers [`Table::replenish`] keeps ready in each shard:
/// a record made by growth has none, and takes them from the spare list.
pub const RESERVE_BUFFERS: usize = 64;

/// A prefetch hint for the cache line holding `p` (no load is architecturally
/// performed; any address is allowed).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint: it never faults and has no effect on
    // program state whatever the address; SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A buffer of `cap` bytes whose pages have been written (so the first
/// message copied into it does not fault them in on the message path).
fn touched(cap: usize) -> Vec<u8> {
    let mut b = vec![0u8; cap];
    b.clear();
    b
}

/// A record for a vacant slot, without buffers ([`Txn::start`] makes it
/// a transaction's).
fn vacant_record() -> Txn {
    let nowhere = super::Target {
        addr: std::net::SocketAddr::from(([0, 0, 0, 0], 0)),
        transport: super::Transport::Udp,
        conn: None,
    };
    Txn::new(false, nowhere, nowhere, &Default::default(), 0)
}

/// One shard: a slab of records with an index by key, and a timer wheel.
///
/// Records live in `slots`, a slab whose freed slots are reused last in,
/// first out: a new transaction lands in the slot a finished one left
/// most recently (still in cache), with that slot's message buffers
/// still attached, so creating a record allocates nothing and touches
/// little cold memory. The index maps a key to its slot and stays small
/// (16 bytes an entry), so looking a message's transaction up misses the
/// cache less than probing a map of whole records would. The slab never
/// grows past the shard's bound.
#[derive(Debug, Default)]
pub struct Shard {
    index: Index,
    slots: Vec<Txn>,
    /// Free slots of `slots`, most recently freed last.
    vacant: Vec<u32>,
    /// (deadline, slot) entries; those whose deadline differs from the
    /// slot's record's `scheduled` are stale (cancelled, or the record has
    /// gone: a vacant slot's `scheduled` is 0, and no deadline is) and
    /// skipped when due. Naming the slot rather than the key, a due entry
    /// costs no index probe (a cache miss in a large table).
    pub timers: Wheel,
    cap: usize,
    /// Slots below this index are the preallocated ones.
    pre: usize,
    /// The last key looked up or inserted and its slot (invariant: when
    /// set, the index maps that key to that slot).
    last: Option<(u64, u32)>,
    /// Message buffers records gave back early (e.g. after a 2xx), reused
    /// by new ones; bounded by [`FREE_BUFFERS`].
    free: Vec<Vec<u8>>,
    /// Keys and slots of lingering records ([`Txn::only_absorbs`]) in the
    /// order they began to linger, oldest first; entries whose record has
    /// gone (or no longer lingers) are stale and skipped. Never holds more
    /// than `linger_room(slots.len())` entries ([`Shard::note_lingering`]).
    linger: VecDeque<(u64, u32)>,
    /// Records held whose `lingering` flag is set.
    lingering: usize,
    /// Lingering records ended early to make room, since start.
    reclaimed: u64,
}

/// Stale entries the lingering queue may hold beyond one per lingering
/// record before it is compacted (see [`Shard::note_lingering`]).
const LINGER_SLACK: usize = 64;

/// Entries the lingering queue of a shard with `slots` records can hold.
fn linger_room(slots: usize) -> usize {
    2 * slots + LINGER_SLACK + 1
}

/// Most spare buffers a shard keeps.
pub const FREE_BUFFERS: usize = 256;
/// Largest buffer kept for reuse.
const FREE_BUFFER_MAX: usize = 4096;

fn keep(b: &mut Vec<u8>) {
    if b.capacity() > FREE_BUFFER_MAX {
        *b = Vec::new();
    } else {
        b.clear();
    }
}

impl Shard {
    /// A shard of at most `cap` records, the first `pre` of them (slab
    /// slot, request and response buffers, index room and timer entries)
    /// allocated and written now: creating a record then allocates nothing
    /// and faults no page in, from the first call on.
    fn with_bound(cap: usize, pre: usize) -> Shard {
        let pre = cap.min(pre);
        let slots: Vec<Txn> = (0..pre)
            .map(|_| {
                let mut t = vacant_record();
                t.request = touched(REQUEST_BUF);
                t.response = touched(RESPONSE_BUF);
                t
            })
            .collect();
        let mut index = Index::with_capacity_and_hasher(pre, Default::default());
        for k in 0..pre as u64 {
            index.insert(k, 0);
        }
        index.clear();
        Shard {
            index,
            slots,
            // the first record takes slot 0
            vacant: (0..pre as u32).rev().collect(),
            timers: Wheel::with_capacity(pre * TIMERS_PER_RECORD),
            cap,
            pre,
            last: None,
            free: Vec::with_capacity(FREE_BUFFERS),
            linger: VecDeque::with_capacity(linger_room(pre)),
            lingering: 0,
            reclaimed: 0,
        }
    }

    /// Asks the CPU to start loading what the next new record of this
    /// shard will write — its slab slot and the first `request_len` bytes
    /// of its request buffer — so that those cache misses overlap with the
    /// work between the lookup that missed and [`Shard::insert`] (checks,
    /// route planning, building the forwarded request) instead of stalling
    /// the insert. A hint only: if another worker takes the slot first,
    /// nothing but a few loads was wasted.
    ///
    /// On a proxy that has not recycled slots yet (the first minutes, or a
    /// benchmark run on a fresh proxy) every new record lands on memory
    /// last written at start-up, so each of these lines would otherwise be
    /// a miss to DRAM on the message path. A full shard's next record takes
    /// the slot of its oldest lingering one ([`Shard::reclaim`]), last
    /// written tens of seconds ago: that slot is loaded then.
    pub fn prefetch_vacant(&self, request_len: usize) {
        let i = match (self.vacant.last(), self.linger.front()) {
            (Some(&i), _) => i,
            // full (a shard below its bound keeps vacant slots in reserve)
            (None, Some(&(_, i))) => i,
            (None, None) => return,
        };
        let t = &self.slots[i as usize];
        let base = (t as *const Txn).cast::<u8>();
        for off in (0..std::mem::size_of::<Txn>()).step_by(64) {
            // in bounds: within the record
            prefetch(base.wrapping_add(off));
        }
        let buf = t.request.as_ptr();
        let n = request_len.min(t.request.capacity());
        for off in (0..n).step_by(64) {
            // in bounds: within the buffer's capacity
            prefetch(buf.wrapping_add(off));
        }
    }

    /// Records this shard is short of [`RESERVE`] vacant ones (within its
    /// bound) once it is down to half of them; else none. The hysteresis
    /// keeps the timer thread off the shard's lines (which the workers
    /// then find in another core's cache) but every few dozen records.
    fn records_wanted(&self) -> usize {
        if self.vacant.len() >= RESERVE / 2 {
            return 0;
        }
        (RESERVE - self.vacant.len()).min(self.cap - self.slots.len())
    }

    /// Buffers the spare list is short of [`RESERVE_BUFFERS`] once it is
    /// down to a quarter of them; else none.
    fn buffers_wanted(&self) -> usize {
        if self.free.len() >= RESERVE_BUFFERS / 4 {
            return 0;
        }
        RESERVE_BUFFERS - self.free.len()
    }

    /// Takes `records` (blank, made without the lock) as vacant slots, as
    /// many as the bound allows, and `buffers` onto the spare list, as
    /// many as it holds; returns the records taken. The new slots go under
    /// the recycled ones (those are still in cache) and are used in
    /// address order. The index and the timer pool are grown here for
    /// every vacant slot, so that filling them rehashes and reallocates
    /// nothing on the message path.
    fn adopt(&mut self, records: &mut Vec<Txn>, buffers: &mut Vec<Vec<u8>>) -> usize {
        let n = records.len().min(self.cap - self.slots.len());
        let first = self.slots.len() as u32;
        self.slots.extend(records.drain(..n));
        self.vacant.splice(0..0, (first..first + n as u32).rev());
        self.index.reserve(self.vacant.len());
        self.timers.reserve(self.vacant.len() * TIMERS_PER_RECORD);
        // room for the most entries the slots can need, so that noting a
        // lingering record never grows the queue on the message path
        self.linger
            .reserve(linger_room(self.slots.len()).saturating_sub(self.linger.len()));
        while self.free.len() < FREE_BUFFERS {
            let Some(b) = buffers.pop() else { break };
            self.free.push(b);
        }
        n
    }

    /// The slot of `key`'s record: from the last lookup when it was the
    /// same key (a message looks its record up two or three times: to
    /// match, to reschedule, to release buffers), else from the index.
    #[inline]
    fn slot_of(&mut self, key: u64) -> Option<u32> {
        if let Some((k, i)) = self.last {
            if k == key {
                return Some(i);
            }
        }
        let i = *self.index.get(&key)?;
        self.last = Some((key, i));
        Some(i)
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The record of `key`.
    pub fn get_mut(&mut self, key: u64) -> Option<&mut Txn> {
        let i = self.slot_of(key)?;
        Some(&mut self.slots[i as usize])
    }

    /// Inserts a record whose forwarded request is `request`. A full
    /// shard first ends its oldest lingering record to make room
    /// ([`Shard::reclaim`]); returns false only when the shard is full of
    /// records that do not linger. A record already held under `key` (two
    /// workers racing on one retransmitted request) is kept as it is. The
    /// new record ([`Txn::start`]) keeps the reused slot's buffers (or
    /// takes spare ones).
    pub fn insert(&mut self, key: u64, fresh: &Fresh<'_>, request: &[u8]) -> bool {
        if self.index.len() >= self.cap {
            // full: a record already held counts as inserted; else room
            // is made by ending the oldest lingering record, if any
            if self.index.contains_key(&key) {
                return true;
            }
            if !self.reclaim() {
                return false;
            }
        }
        // one probe of the index, for the check and the insertion
        let Entry::Vacant(entry) = self.index.entry(key) else {
            return true;
        };
        let i = match self.vacant.pop() {
            Some(i) => {
                self.slots[i as usize].start(fresh);
                i
            }
            None => {
                let f = fresh;
                self.slots.push(Txn::new(
                    f.invite,
                    *f.upstream,
                    *f.downstream,
                    f.timers,
                    f.now,
                ));
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[i as usize];
        slot.key = key;
        if slot.request.capacity() < request.len() {
            if let Some(b) = self.free.pop() {
                slot.request = b;
            }
        }
        if slot.response.capacity() == 0 {
            // a reused slot whose buffers went to the spare list: take
            // one back for the responses to come, not a new allocation
            if let Some(b) = self.free.pop() {
                slot.response = b;
            }
        }
        self.slots[i as usize].request.extend_from_slice(request);
        entry.insert(i);
        self.last = Some((key, i));
        true
    }

    /// An empty buffer, reused when one is spare.
    pub fn buf(&mut self) -> Vec<u8> {
        self.free.pop().unwrap_or_default()
    }

    /// The record of `key` no longer needs its stored request and/or
    /// response (e.g. after a 2xx). A preallocated record clears them in
    /// place: their memory is held from start-up whatever happens, and
    /// handing them over would only cost a `free` now and a `malloc` when
    /// the record is reused. A record beyond those gives them to the
    /// spare list (or frees them when it is full), so that the memory of
    /// a long Accepted period (RFC 6026: 64·T1) is not held per record.
    pub fn release(&mut self, key: u64, request: bool, response: bool) {
        let Some(i) = self.slot_of(key) else {
            return;
        };
        let t = &mut self.slots[i as usize];
        if (i as usize) < self.pre {
            if request {
                t.request.clear();
            }
            if response {
                t.response.clear();
            }
            return;
        }
        let req = if request {
            std::mem::take(&mut t.request)
        } else {
            Vec::new()
        };
        let resp = if response {
            std::mem::take(&mut t.response)
        } else {
            Vec::new()
        };
        self.give(req);
        self.give(resp);
    }

    /// Takes back a buffer a record no longer needs.
    pub fn give(&mut self, mut b: Vec<u8>) {
        if self.free.len() < FREE_BUFFERS && b.capacity() > 0 && b.capacity() <= FREE_BUFFER_MAX {
            b.clear();
            self.free.push(b);
        }
    }

    /// Records held that only absorb retransmissions (see
    /// [`Txn::only_absorbs`]): what [`Shard::reclaim`] may end early.
    pub fn lingering(&self) -> usize {
        self.lingering
    }

    /// Ends the oldest lingering record to make room for a new one;
    /// returns false when no record lingers. Its timers' entries become
    /// stale and are skipped when due.
    pub fn reclaim(&mut self) -> bool {
        while let Some((key, i)) = self.linger.pop_front() {
            if self.lingers(key, i) {
                self.remove(key);
                self.reclaimed += 1;
                return true;
            }
        }
        false
    }

    /// Whether `key`'s record is held in slot `i` and counted as
    /// lingering. The slot alone tells (a vacant slot's record does not
    /// linger, and a reused one's has another key): no index probe.
    fn lingers(&self, key: u64, i: u32) -> bool {
        let t = &self.slots[i as usize];
        t.lingering && t.key == key
    }

    /// Counts `key`'s record (in slot `i`) as lingering from now on, and
    /// queues it behind those that began earlier. Stale entries at the
    /// front go first; when stale entries behind a live front (records
    /// that lingered briefly, such as a non-INVITE's over TCP, queued
    /// behind an INVITE's 32 s) make up half the queue, it is compacted.
    /// A compaction keeps fewer entries than it drops, so each entry costs
    /// O(1) amortized; a push finds fewer than `2 × lingering +
    /// LINGER_SLACK` entries, so the queue never outgrows the room
    /// [`Shard::adopt`] reserved (`linger_room` of the slab).
    fn note_lingering(&mut self, key: u64, i: u32) {
        self.slots[i as usize].lingering = true;
        self.lingering += 1;
        while let Some(&(k, j)) = self.linger.front() {
            if self.lingers(k, j) {
                break;
            }
            self.linger.pop_front();
        }
        if self.linger.len() >= 2 * self.lingering + LINGER_SLACK {
            let slots = &self.slots;
            self.linger.retain(|&(k, j)| {
                let t = &slots[j as usize];
                t.lingering && t.key == k
            });
        }
        self.linger.push_back((key, i));
    }

    fn remove(&mut self, key: u64) {
        if self.last.is_some_and(|(k, _)| k == key) {
            self.last = None;
        }
        if let Some(i) = self.index.remove(&key) {
            let t = &mut self.slots[i as usize];
            if t.lingering {
                t.lingering = false;
                self.lingering -= 1;
            }
            for b in [
                &mut t.request,
                &mut t.response,
                &mut t.ack,
                &mut t.cancel_req,
            ] {
                keep(b);
            }
            t.scheduled = 0;
            self.vacant.push(i);
        }
    }

    /// Re-queues `key` when its record's earliest deadline moved earlier
    /// than what is queued (or nothing is queued); removes a finished record.
    /// A record that has begun to only absorb retransmissions is counted
    /// as lingering here (once).
    pub fn reschedule(&mut self, key: u64) {
        let Some(i) = self.slot_of(key) else {
            return;
        };
        let t = &mut self.slots[i as usize];
        if t.is_done() {
            self.remove(key);
            return;
        }
        if let Some(d) = t.next_deadline() {
            if t.scheduled == 0 || d < t.scheduled {
                t.scheduled = d;
                self.timers.insert(d, u64::from(i));
            }
        }
        if !t.lingering && t.only_absorbs() {
            self.note_lingering(key, i);
        }
    }

    /// Pops a key whose queued deadline is due at `now` (in no particular
    /// order among the due ones).
    pub fn pop_due(&mut self, now: u64) -> Option<u64> {
        while let Some((d, slot)) = self.timers.pop_due(now) {
            let i = slot as u32;
            let t = &mut self.slots[i as usize];
            // else stale: the record's deadline moved, or it has gone
            // (`scheduled` 0); a record that took the slot since and is
            // queued under the very same deadline is due as well
            if t.scheduled == d {
                t.scheduled = 0;
                let key = t.key;
                // the caller fires and reschedules it: no index probe
                self.last = Some((key, i));
                return Some(key);
            }
        }
        None
    }
}

/// One shard with what other threads read of it without its lock, alone
/// on its own cache lines: workers locking different shards never write
/// the same line, and publishing a shard's deadline and size writes the
/// line its lock holder already owns.
#[derive(Debug)]
#[repr(align(128))]
struct Slot {
    shard: Mutex<Shard>,
    /// The shard's earliest queued deadline (u64::MAX: none), published
    /// under its lock so the timer thread locks only shards with something
    /// due instead of all of them every tick.
    next_due: AtomicU64,
    /// The shard's record count, published under its lock.
    len: AtomicUsize,
    /// Of those, lingering records ([`Shard::lingering`]), published
    /// under its lock.
    lingering: AtomicUsize,
    /// The shard's reclaimed records ([`Shard::reclaim`]), published
    /// under its lock.
    reclaimed: AtomicU64,
    /// Records and buffers the shard is short of its reserve, published
    /// under its lock (`records << 32 | buffers`), so that
    /// [`Table::replenish`] locks only shards that need something.
    wanted: AtomicU64,
}

/// The sharded table.
#[derive(Debug)]
pub struct Table {
    slots: Box<[Slot]>,
    mask: u64,
    capacity: usize,
    per_shard: usize,
}

impl Table {
    /// A table of `shards` (rounded up to a power of two) holding at most `capacity` records.
    pub fn new(shards: usize, capacity: usize) -> Table {
        let n = shards.max(1).next_power_of_two();
        let per = capacity.div_ceil(n).max(1);
        let pre = PREALLOCATED.div_ceil(n);
        Table {
            slots: (0..n)
                .map(|_| Slot {
                    shard: Mutex::new(Shard::with_bound(per, pre)),
                    next_due: AtomicU64::new(u64::MAX),
                    len: AtomicUsize::new(0),
                    lingering: AtomicUsize::new(0),
                    reclaimed: AtomicU64::new(0),
                    wanted: AtomicU64::new(0),
                })
                .collect(),
            mask: (n - 1) as u64,
            capacity: per * n,
            per_shard: per,
        }
    }

    fn index(&self, key: u64) -> usize {
        (key & self.mask) as usize
    }

    /// Locks the shard of `key`.
    pub fn shard(&self, key: u64) -> MutexGuard<'_, Shard> {
        self.shard_at(self.index(key))
    }

    /// Locks the shard of `key`; sets `contended` when another thread
    /// held it (this one waited). One `try_lock` first: the uncontended
    /// case costs what `lock` costs.
    pub fn shard_noting(&self, key: u64, contended: &mut bool) -> MutexGuard<'_, Shard> {
        let m = &self.slots[self.index(key)].shard;
        match m.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                *contended = true;
                m.lock().unwrap_or_else(|p| p.into_inner())
            }
        }
    }

    /// Publishes the earliest deadline and the size of `sh`, the shard of
    /// `key` (call with its lock held, after changing it).
    pub fn publish(&self, key: u64, sh: &Shard) {
        self.publish_at(self.index(key), sh);
    }

    /// Publishes the earliest deadline and the size of shard `i` (lock held).
    pub fn publish_at(&self, i: usize, sh: &Shard) {
        let slot = &self.slots[i];
        let d = sh.timers.next_due_hint();
        // Relaxed (both): hints read by `may_be_due`, `fill_of` and
        // `len_hint` without the lock. A stale deadline makes the timer
        // thread lock a shard for nothing, or run a deadline one tick late;
        // a stale size shifts a shedding decision by one message. The data
        // under the lock stays the truth.
        slot.next_due.store(d, Ordering::Relaxed);
        slot.len.store(sh.len(), Ordering::Relaxed);
        slot.lingering.store(sh.lingering, Ordering::Relaxed);
        slot.reclaimed.store(sh.reclaimed, Ordering::Relaxed);
        let wanted = (sh.records_wanted() as u64) << 32 | sh.buffers_wanted() as u64;
        slot.wanted.store(wanted, Ordering::Relaxed);
    }

    /// Tops every shard up to its reserve — [`RESERVE`] vacant records
    /// (within the bound) and [`RESERVE_BUFFERS`] spare buffers — once it
    /// is down to half its records or a quarter of its buffers. Records and
    /// buffers are made (allocated, and the buffers' pages written) before
    /// the shard is locked; under the lock they are only moved in. Meant
    /// for a thread that handles no messages (the proxy's timer thread):
    /// then a message takes a record from the reserve and neither grows
    /// the slab nor allocates, however long the run (module docs).
    /// Returns the records added.
    pub fn replenish(&self) -> usize {
        let mut added = 0;
        for (i, slot) in self.slots.iter().enumerate() {
            // Relaxed: see `publish_at`; a stale hint refills a tick late
            // or builds records the lock then finds unneeded (dropped).
            let wanted = slot.wanted.load(Ordering::Relaxed);
            let (records, buffers) = ((wanted >> 32) as usize, wanted as u32 as usize);
            if records == 0 && buffers == 0 {
                continue;
            }
            let mut recs: Vec<Txn> = (0..records).map(|_| vacant_record()).collect();
            let mut bufs: Vec<Vec<u8>> = (0..buffers).map(|_| touched(REQUEST_BUF)).collect();
            let mut sh = self.shard_at(i);
            added += sh.adopt(&mut recs, &mut bufs);
            self.publish_at(i, &sh);
            drop(sh);
            // what the shard did not take is freed after the lock
            drop((recs, bufs));
        }
        added
    }

    /// Whether shard `i` may have a deadline due at `now`.
    pub fn may_be_due(&self, i: usize, now: u64) -> bool {
        // Relaxed: see `publish_at`.
        self.slots[i].next_due.load(Ordering::Relaxed) <= now
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        self.slots.len()
    }

    /// Locks shard `i`.
    pub fn shard_at(&self, i: usize) -> MutexGuard<'_, Shard> {
        self.slots[i]
            .shard
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Called by a worker about to block for its next message: starts
    /// loading, in every shard not locked by someone else, the record and
    /// request buffer the shard's next new transaction will write
    /// ([`Shard::prefetch_vacant`]). The next free slot of a shard is
    /// usually one freed by the timer thread seconds ago (a non-INVITE
    /// transaction lingers for Timer J/K), so without this its lines are
    /// misses to DRAM inside the next request's T_sip; loaded while the
    /// worker is idle they are at worst in the shared L3 when it wakes.
    /// Never waits for a lock.
    pub fn prepare_idle(&self, request_len: usize) {
        for slot in self.slots.iter() {
            if let Ok(sh) = slot.shard.try_lock() {
                sh.prefetch_vacant(request_len);
            }
        }
    }

    /// Most records.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Records held (sums the shards).
    pub fn len(&self) -> usize {
        (0..self.slots.len()).map(|i| self.shard_at(i).len()).sum()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cheap occupancy estimate: the sum of the sizes the shards
    /// published (no lock taken; one load per shard).
    pub fn len_hint(&self) -> usize {
        // Relaxed: see `publish_at`.
        self.slots
            .iter()
            .map(|s| s.len.load(Ordering::Relaxed))
            .sum()
    }

    /// Lingering records held (see [`Shard::lingering`]): the sum of what
    /// the shards published.
    pub fn lingering_hint(&self) -> usize {
        // Relaxed: see `publish_at`.
        self.slots
            .iter()
            .map(|s| s.lingering.load(Ordering::Relaxed))
            .sum()
    }

    /// Lingering records ended early to make room for new ones, since
    /// start (the sum of what the shards published).
    pub fn reclaimed_hint(&self) -> u64 {
        // Relaxed: see `publish_at`.
        self.slots
            .iter()
            .map(|s| s.reclaimed.load(Ordering::Relaxed))
            .sum()
    }

    /// How full the shard of `key` is with records that do not linger
    /// (their published count over its bound, 0..=1): the bound applies
    /// per shard, and a lingering record gives its slot up to a new one
    /// ([`Shard::insert`]), so this is what decides whether a new record
    /// will fit. Two loads, of the line the caller is about to lock anyway.
    pub fn fill_of(&self, key: u64) -> f64 {
        let slot = &self.slots[self.index(key)];
        // Relaxed: see `publish_at`.
        let n = slot.len.load(Ordering::Relaxed);
        let lingering = slot.lingering.load(Ordering::Relaxed);
        n.saturating_sub(lingering) as f64 / self.per_shard as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepare_idle_skips_locked_shards_and_changes_nothing() {
        let t = Table::new(4, 64);
        let held = t.shard_at(1);
        // Would deadlock if it waited for shard 1's lock (held here).
        t.prepare_idle(1024);
        drop(held);
        t.prepare_idle(usize::MAX);
        assert!(t.is_empty());
        let sh = t.shard_at(0);
        assert_eq!(sh.vacant.len(), sh.pre);
    }

    const TIMERS: super::super::txn::Timers = super::super::txn::Timers {
        t1: 500,
        t2: 4_000,
        t4: 5_000,
        c: 181_000,
    };

    static NOWHERE: super::super::Target = super::super::Target {
        addr: std::net::SocketAddr::V4(std::net::SocketAddrV4::new(
            std::net::Ipv4Addr::LOCALHOST,
            5060,
        )),
        transport: super::super::Transport::Udp,
        conn: None,
    };

    fn txn(now: u64) -> Fresh<'static> {
        Fresh {
            invite: true,
            upstream: &NOWHERE,
            downstream: &NOWHERE,
            timers: &TIMERS,
            now,
        }
    }

    #[test]
    fn insert_keeps_a_held_record_reuses_slots_and_respects_the_bound() {
        let mut sh = Shard::with_bound(2, 2);
        assert!(sh.insert(1, &txn(10), b"first"));
        // a racing duplicate keeps the record as it was
        assert!(sh.insert(1, &txn(99), b"second"));
        assert_eq!(sh.get_mut(1).expect("held").request, b"first");
        assert!(sh.insert(2, &txn(20), b"two"));
        // full: a new key fails, a held one still counts as inserted
        assert!(!sh.insert(3, &txn(30), b"three"));
        assert!(sh.insert(2, &txn(31), b"again"));
        // a freed slot is reused with its buffer, holding only the new request
        let cap = sh.get_mut(1).expect("held").request.capacity();
        sh.remove(1);
        assert!(sh.insert(3, &txn(40), b"third"));
        let t = sh.get_mut(3).expect("held");
        assert_eq!(t.request, b"third");
        assert!(t.response.is_empty() && t.ack.is_empty() && t.cancel_req.is_empty());
        assert_eq!(t.t_timeout, 40 + 64 * TIMERS.t1);
        assert_eq!(t.t_c, 40 + TIMERS.c);
        assert_eq!(t.client, super::super::txn::ClientState::Calling);
        assert!(t.request.capacity() >= cap.min(REQUEST_BUF));
        assert_eq!(sh.len(), 2);
    }

    /// Makes `key`'s record an INVITE's that forwarded a 2xx (RFC 6026
    /// Accepted, Timer L running): it lingers from its reschedule on.
    fn accept(sh: &mut Shard, key: u64, now: u64) {
        let t = sh.get_mut(key).expect("held");
        t.client_stop();
        t.client = super::super::txn::ClientState::Terminated;
        t.server = super::super::txn::ServerState::Accepted;
        t.t_server_end = now + 64 * TIMERS.t1;
        sh.reschedule(key);
    }

    #[test]
    fn a_full_shard_ends_its_oldest_lingering_record_for_a_new_one() {
        let mut sh = Shard::with_bound(3, 3);
        for k in 1..=3 {
            assert!(sh.insert(k, &txn(k), b"INVITE"));
        }
        // full of calls in progress: nothing may make room
        assert!(!sh.insert(4, &txn(4), b"INVITE"));
        assert_eq!((sh.lingering(), sh.reclaimed), (0, 0));
        accept(&mut sh, 2, 5);
        accept(&mut sh, 1, 6);
        accept(&mut sh, 1, 7); // a 2xx retransmission: counted once
        assert_eq!(sh.lingering(), 2);
        // full: the hint loads the slot the next record takes, changing nothing
        assert!(sh.vacant.is_empty());
        sh.prefetch_vacant(1024);
        assert_eq!((sh.len(), sh.lingering()), (3, 2));
        // the oldest lingering record (2) makes room, then the next (1)
        assert!(sh.insert(4, &txn(8), b"INVITE"));
        assert!(sh.get_mut(2).is_none() && sh.get_mut(1).is_some());
        assert!(sh.insert(5, &txn(9), b"INVITE"));
        assert!(sh.get_mut(1).is_none());
        assert_eq!((sh.len(), sh.lingering(), sh.reclaimed), (3, 0, 2));
        // none lingers any more: the bound holds
        assert!(!sh.insert(6, &txn(10), b"INVITE"));
        // a lingering record that ends by its timer leaves the count
        accept(&mut sh, 3, 11);
        assert_eq!(sh.lingering(), 1);
        let t = sh.get_mut(3).expect("held");
        t.server = super::super::txn::ServerState::Terminated;
        sh.reschedule(3);
        assert_eq!((sh.len(), sh.lingering()), (2, 0));
        // its stale queue entry is skipped: no record lingers to reclaim
        assert!(!sh.reclaim());
        assert_eq!(sh.reclaimed, 2);
    }

    #[test]
    fn the_lingering_queue_stays_bounded_when_records_end_out_of_order() {
        // one long linger at the front; many short ones behind it end by
        // their timers (a non-INVITE over TCP) and leave stale entries
        let cap = 200;
        let mut sh = Shard::with_bound(cap, cap);
        assert!(sh.insert(0, &txn(0), b"INVITE"));
        accept(&mut sh, 0, 0);
        for k in 1..10_000u64 {
            assert!(sh.insert(k, &txn(k), b"BYE"));
            accept(&mut sh, k, k);
            let t = sh.get_mut(k).expect("held");
            t.server = super::super::txn::ServerState::Terminated;
            sh.reschedule(k);
            assert!(sh.linger.len() <= linger_room(sh.slots.len()));
        }
        assert_eq!((sh.len(), sh.lingering()), (1, 1));
        assert!(sh.linger.len() <= 2 + LINGER_SLACK, "{}", sh.linger.len());
        assert!(sh.reclaim());
        assert!(sh.is_empty());
    }

    #[test]
    fn lingering_records_do_not_count_towards_shedding() {
        let t = Table::new(1, 10);
        fill(&t, 0, 10);
        assert_eq!(t.fill_of(0), 1.0);
        {
            let mut sh = t.shard(0);
            for k in 0..6 {
                accept(&mut sh, k, 1);
            }
            t.publish(0, &sh);
        }
        assert!((t.fill_of(0) - 0.4).abs() < 1e-9);
        assert_eq!((t.len_hint(), t.lingering_hint()), (10, 6));
        // a new record takes a lingering one's room
        fill(&t, 100, 1);
        assert_eq!(
            (t.len_hint(), t.lingering_hint(), t.reclaimed_hint()),
            (10, 5, 1)
        );
    }

    /// Inserts `n` new records with keys from `first` into the table's
    /// shards, publishing each as the proxy does.
    fn fill(t: &Table, first: u64, n: u64) {
        for k in first..first + n {
            let mut sh = t.shard(k);
            assert!(sh.insert(k, &txn(0), b"INVITE"), "key {k} refused");
            t.publish(k, &sh);
        }
    }

    #[test]
    fn replenish_keeps_a_reserve_within_the_bound_so_inserts_never_grow_the_slab() {
        let pre = PREALLOCATED; // one shard: all of them
        let t = Table::new(1, pre + RESERVE + 10);
        // half the reserve still vacant: no record wanted yet
        fill(&t, 0, (pre - RESERVE / 2) as u64);
        assert_eq!(t.replenish(), 0);
        fill(&t, 1 << 40, (RESERVE / 2 - 5) as u64);
        let (slab, vacant) = {
            let sh = t.shard_at(0);
            (sh.slots.len(), sh.vacant.len())
        };
        assert_eq!((slab, vacant), (pre, 5));
        // down to 5 vacant: topped up to the reserve, buffers too
        assert_eq!(t.replenish(), RESERVE - 5);
        {
            let sh = t.shard_at(0);
            assert_eq!(sh.vacant.len(), RESERVE);
            assert_eq!(sh.slots.len(), pre + RESERVE - 5);
            assert!(sh.free.len() >= RESERVE_BUFFERS);
            assert!(sh.index.capacity() >= sh.len() + RESERVE);
        }
        // the reserve is taken without growing the slab
        fill(&t, 1 << 32, RESERVE as u64);
        assert_eq!(t.shard_at(0).slots.len(), pre + RESERVE - 5);
        // the bound caps the reserve: only 15 more records may exist
        assert_eq!(t.replenish(), 15);
        assert_eq!(t.replenish(), 0);
        let sh = t.shard_at(0);
        assert_eq!(sh.slots.len(), t.capacity());
        assert_eq!(sh.vacant.len(), 15);
        // new slots are used in address order, under any recycled one
        assert_eq!(sh.vacant.last(), Some(&((pre + RESERVE - 5) as u32)));
    }
}
