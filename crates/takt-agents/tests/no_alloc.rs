//! The one-thread send and dispatch path allocates nothing per message:
//! a counting global allocator sees the same number of allocations for a
//! short and a long ping-pong between two agents of one dispatcher (the
//! difference is set-up noise, bounded by a constant far below the number
//! of extra messages).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use takt_agents::{Addr, Agent, Ctx, Definer};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: caller's contract, forwarded.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: caller's contract, forwarded.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: caller's contract, forwarded.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

struct Ball(u64);
/// A message too big to travel inline: it is boxed, once per send.
struct Big([u64; 4]);
struct Peer(Addr<Player>);

struct Player {
    peer: Option<Addr<Player>>,
    done: Arc<Countdown>,
}

impl Agent for Player {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Player, _: &mut Ctx<Player>, Peer(p): Peer| me.peer = Some(p))
            .on(
                |me: &mut Player, _: &mut Ctx<Player>, Ball(n): Ball| match (&me.peer, n) {
                    (_, 0) => me.done.hit(),
                    (Some(p), _) => p.send(Ball(n - 1)),
                    (None, _) => {}
                },
            )
            .on(
                |me: &mut Player, _: &mut Ctx<Player>, Big(b): Big| match (&me.peer, b[0]) {
                    (_, 0) => me.done.hit(),
                    (Some(p), _) => p.send(Big([b[0] - 1, 0, 0, 0])),
                    (None, _) => {}
                },
            );
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        // The two players hold each other's address: break the cycle.
        self.peer = None;
    }
}

/// Allocations made while `messages` deliveries run (the game is set up
/// first, so only the measured exchange is counted).
fn allocations_during(messages: u64, big: bool) -> u64 {
    // The counter is process-wide: measure one game at a time.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let rt = runtime();
    let d = rt.one_thread("pp").unwrap();
    let done = Countdown::new(1);
    let mut coop = rt.coop("pp");
    let a = coop
        .add(
            Player {
                peer: None,
                done: done.clone(),
            },
            &d,
        )
        .unwrap();
    let b = coop
        .add(
            Player {
                peer: None,
                done: done.clone(),
            },
            &d,
        )
        .unwrap();
    coop.register().unwrap();
    a.send(Peer(b.clone()));
    b.send(Peer(a.clone()));
    // Let the set-up messages run before counting.
    assert!(eventually(
        || a.stats().handled >= 1 && b.stats().handled >= 1
    ));
    let before = ALLOCS.load(Ordering::Relaxed);
    if big {
        a.send(Big([messages - 1, 0, 0, 0]));
    } else {
        a.send(Ball(messages - 1));
    }
    assert!(done.wait());
    let n = ALLOCS.load(Ordering::Relaxed) - before;
    rt.shutdown();
    n
}

#[test]
fn one_thread_ping_pong_allocates_nothing_per_message() {
    let short = allocations_during(100, false);
    let long = allocations_during(100_100, false);
    // 100,000 more messages, at most a few more allocations (a lazily
    // created counter block, the waiting thread's wake-up): none per message.
    assert!(
        long <= short + 16,
        "{short} allocations for 100 messages, {long} for 100,100"
    );
}

#[test]
fn boxed_messages_allocate_once_per_send() {
    // The control: the counter does see per-message allocations when the
    // message is too big to travel inline.
    let short = allocations_during(100, true);
    let long = allocations_during(10_100, true);
    assert!(
        long >= short + 9_900,
        "{short} allocations for 100 boxed messages, {long} for 10,100"
    );
}
