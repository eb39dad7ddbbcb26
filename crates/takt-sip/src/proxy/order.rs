//! Response ordering for the stateless proxy when several workers read
//! one socket.
//!
//! In the `shared` worker model (the paper's: m threads blocking on one
//! UDP socket) the kernel hands consecutive datagrams to different
//! workers. A UAS that sends 180 Ringing and then 200 OK back to back has
//! them picked up by two workers at once, and the one holding the 200 may
//! reach its `sendto` first: the UAC then sees the 200 before the 180.
//! RFC 3261 allows it (UDP reorders anyway, and a UA must cope), but
//! SIPp's UAC, like many, counts the call as failed. A transaction-stateful
//! proxy never does this (its server transaction does not forward a
//! provisional response after a final one, §17.2.1, and the table's shard
//! lock orders the sends); a stateless one keeps no transaction to ask.
//!
//! [`Gate`] restores the order with bounded soft state and no global lock:
//! responses are gated per transaction key (the branch the proxy put in
//! its Via), spread over [`SHARDS`] mutexes each guarding a direct-mapped
//! set of [`WAYS`] entries. Under the key's lock a worker
//!
//! - records, for a final response, the kernel arrival time of the latest
//!   final response of that key, then sends it;
//! - for a provisional response, drops it if a final response of the same
//!   key that *arrived later* was already sent (forwarding it now would put
//!   it after that final response, where no UA wants it — the stateful
//!   proxy's server transaction drops it too), else sends it.
//!
//! Because the check and the send happen under one lock, the two orders
//! agree: a provisional response is either sent before every later final
//! response or not at all. Arrival order is the kernel's receive
//! timestamp (K_rcv's `t_arr`, carried as `now − queue_delay_ns`), so the
//! decision follows the order in which the socket received the datagrams,
//! not the order in which the workers got scheduled.
//!
//! The state is lossy by design: a key whose entry was overwritten by a
//! colliding key is simply not gated (as without the gate). Memory is
//! fixed: `SHARDS × WAYS` entries of 16 bytes.
//!
//! `tests/loom_order.rs` model-checks the property (a provisional is never
//! sent after a later-arrived final) over the interleavings of two and
//! three workers.

use takt_sched::sync::{Mutex, MutexGuard};

/// Mutexes the gate's entries are spread over.
pub const SHARDS: usize = 64;
/// Entries per mutex.
pub const WAYS: usize = 64;

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    key: u64,
    /// Latest arrival (ns, proxy clock) of a final response of `key` sent
    /// upstream; 0 = none.
    final_arrival: u64,
}

/// The ordering gate (see the module docs).
#[derive(Debug)]
pub struct Gate {
    shards: Box<[Mutex<[Entry; WAYS]>]>,
}

impl Default for Gate {
    fn default() -> Self {
        Gate::new()
    }
}

/// What to do with a response, decided under the key's lock.
#[derive(Debug)]
pub struct Ticket<'g> {
    guard: MutexGuard<'g, [Entry; WAYS]>,
    way: usize,
    key: u64,
    /// Whether to send it.
    pub forward: bool,
}

impl Ticket<'_> {
    /// Records that a final response of this key arriving at `arrival` is
    /// being sent (call before sending, with the ticket still held).
    pub fn sent_final(&mut self, arrival: u64) {
        let e = &mut self.guard[self.way];
        if e.key != self.key {
            *e = Entry {
                key: self.key,
                final_arrival: 0,
            };
        }
        e.final_arrival = e.final_arrival.max(arrival.max(1));
    }
}

impl Gate {
    /// An empty gate of [`SHARDS`] mutexes.
    pub fn new() -> Gate {
        Gate::with_shards(SHARDS)
    }

    /// An empty gate of `shards` mutexes (rounded up to a power of two).
    pub fn with_shards(shards: usize) -> Gate {
        let n = shards.max(1).next_power_of_two();
        Gate {
            shards: (0..n)
                .map(|_| Mutex::new([Entry::default(); WAYS]))
                .collect(),
        }
    }

    /// Locks `key`'s entry and decides whether a response of class
    /// `provisional` that arrived at `arrival` goes on. Keep the ticket
    /// until the response is sent.
    pub fn admit(&self, key: u64, arrival: u64, provisional: bool) -> Ticket<'_> {
        // the key is a hash already; its low bits pick the mutex, the next
        // ones the way
        let shard = (key as usize) & (self.shards.len() - 1);
        let way = ((key >> 6) as usize) % WAYS;
        let guard = self.shards[shard].lock().unwrap_or_else(|p| p.into_inner());
        let e = guard[way];
        let forward = !(provisional && e.key == key && e.final_arrival > arrival);
        Ticket {
            guard,
            way,
            key,
            forward,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provisional_that_arrived_before_a_sent_final_is_dropped() {
        let g = Gate::new();
        // the 200 (arrived at 20) is handled first
        let mut t = g.admit(7, 20, false);
        assert!(t.forward);
        t.sent_final(20);
        drop(t);
        // the 180 (arrived at 10) comes second: it would overtake nothing
        // but follow the 200, so it is dropped
        assert!(!g.admit(7, 10, true).forward);
        // a provisional that arrived after the final goes (a new
        // transaction's reuse of the key is not confused with it either)
        assert!(g.admit(7, 30, true).forward);
        // other keys are not affected
        assert!(g.admit(8, 10, true).forward);
    }

    #[test]
    fn in_order_responses_all_go() {
        let g = Gate::new();
        assert!(g.admit(9, 10, true).forward);
        let mut t = g.admit(9, 20, false);
        assert!(t.forward);
        t.sent_final(20);
        drop(t);
        // a retransmitted final response always goes
        assert!(g.admit(9, 30, false).forward);
    }

    #[test]
    fn colliding_keys_only_lose_the_gate() {
        let g = Gate::new();
        let a = 5u64;
        let b = a + ((SHARDS * WAYS) as u64); // same shard and way
        let mut t = g.admit(a, 20, false);
        t.sent_final(20);
        drop(t);
        let mut t = g.admit(b, 25, false);
        t.sent_final(25);
        drop(t);
        // a's entry was replaced: its late provisional is not recognised
        assert!(g.admit(a, 10, true).forward);
        assert!(!g.admit(b, 10, true).forward);
    }

    #[test]
    fn concurrent_final_and_provisional_never_invert() {
        // two threads race a 180 (arrived first) and a 200 (arrived
        // second) through the gate, appending what they send to a log
        // under the ticket: the 180 is never logged after the 200
        use std::sync::{Arc, Mutex};
        for round in 0..200u64 {
            let g = Arc::new(Gate::new());
            let log = Arc::new(Mutex::new(Vec::new()));
            let key = round * 977;
            let (g2, log2) = (g.clone(), log.clone());
            let fin = std::thread::spawn(move || {
                let mut t = g2.admit(key, 20, false);
                t.sent_final(20);
                log2.lock().unwrap().push(200);
            });
            let t = g.admit(key, 10, true);
            if t.forward {
                log.lock().unwrap().push(180);
            }
            drop(t);
            fin.join().unwrap();
            let l = log.lock().unwrap();
            assert!(*l == vec![180, 200] || *l == vec![200], "{l:?}");
        }
    }
}
