//! The floor: the benchmarks' messages on plain `crossbeam-channel` unbounded
//! channels, with no actor framework around them (the module docs of
//! `peers` say exactly what each floor measures).
//!
//! One-thread floors use `try_recv` only: a message that is not where the
//! benchmark put it is a lost message and an error, never a wait. The
//! cross-thread `ping_pong` floor runs two threads made by
//! [`takt_sched::ThreadSpec`] with blocking `recv`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, Sender};
use takt_sched::ThreadSpec;

use super::{
    thread_tag, token_start, CrossingCounter, PeerError, PingPongRun, Placement, RingTimes, Run,
    SKYNET_FANOUT,
};

// ----------------------------------------------------------------- ping_pong

/// `messages` deliveries between two channel ends: alternately on the
/// calling thread, or a thread per player.
pub(super) fn ping_pong(
    run: &Run,
    messages: u64,
    placement: Placement,
) -> Result<PingPongRun, PeerError> {
    match placement {
        Placement::OneThread => ping_pong_loop(run, messages),
        Placement::ThreadPerAgent => ping_pong_threads(run, messages),
        Placement::TwoWorkers => Err(run.setup("the floor has no scheduler to place players")),
    }
}

/// A delivery number and the sender's thread tag.
type Ball = (u64, u32);

/// One thread, two channels used alternately: deliver to A, A sends to B,
/// deliver to B, B sends to A, …
fn ping_pong_loop(run: &Run, messages: u64) -> Result<PingPongRun, PeerError> {
    let (to_a, at_a) = unbounded::<Ball>();
    let (to_b, at_b) = unbounded::<Ball>();
    let lost = |n| run.check(format!("message {n} was not in its channel"));
    let send = |tx: &Sender<Ball>, b| tx.send(b).map_err(|_| run.failed("a channel closed"));
    let mut players = [CrossingCounter::default(); 2];
    let delivered = |p: &[CrossingCounter; 2]| p[0].handled + p[1].handled + 1;
    let t0 = Instant::now();
    send(&to_a, (1, thread_tag()))?;
    let last = loop {
        let (n, from) = at_a.try_recv().map_err(|_| lost(delivered(&players)))?;
        let here = players[0].delivered(from);
        if n >= messages {
            break n;
        }
        send(&to_b, (n + 1, here))?;
        let (n, from) = at_b.try_recv().map_err(|_| lost(delivered(&players)))?;
        let here = players[1].delivered(from);
        if n >= messages {
            break n;
        }
        send(&to_a, (n + 1, here))?;
    };
    let elapsed = t0.elapsed();
    run.expect_count("last delivery number", last, messages)?;
    Ok(PingPongRun {
        elapsed,
        crossing: players[0].merge(players[1]),
    })
}

/// What a player thread hands back: its counts, and when the last delivery
/// happened if this player handled it.
type PlayerEnd = (CrossingCounter, Option<(Instant, u64)>);

/// One player thread: receives on `rx`, sends the next number on `tx`, until
/// the last delivery or until its channel disconnects.
fn player(rx: Receiver<Ball>, tx: Sender<Ball>, target: u64) -> PlayerEnd {
    let mut counts = CrossingCounter::default();
    while let Ok((n, from)) = rx.recv() {
        let here = counts.delivered(from);
        if n >= target {
            return (counts, Some((Instant::now(), n)));
        }
        if tx.send((n + 1, here)).is_err() {
            // The other player is gone: the end-of-run checks report it.
            break;
        }
    }
    (counts, None)
}

/// Two threads, each blocking on its own channel.
fn ping_pong_threads(run: &Run, messages: u64) -> Result<PingPongRun, PeerError> {
    let (to_a, at_a) = unbounded::<Ball>();
    let (to_b, at_b) = unbounded::<Ball>();
    // Completion: the thread that handles the last delivery returns; the
    // other ends when its channel's senders (the first thread, and us) are gone.
    let spawn = |name: &str, rx, tx| {
        ThreadSpec::new(name)
            .spawn(move || player(rx, tx, messages))
            .map_err(|e| run.setup(e))
    };
    let a = spawn("takt-peer-cb-a", at_a, to_b.clone())?;
    let b = match spawn("takt-peer-cb-b", at_b, to_a.clone()) {
        Ok(b) => b,
        Err(e) => {
            drop((to_a, to_b));
            let _ = a.join();
            return Err(e);
        }
    };
    drop(to_b);
    let t0 = Instant::now();
    let started = to_a.send((1, thread_tag()));
    drop(to_a);
    let join = |t: takt_sched::TaktThread<PlayerEnd>| {
        t.join().map_err(|_| run.failed("a player thread panicked"))
    };
    let (ra, rb) = (join(a), join(b));
    started.map_err(|_| run.failed("the first player's channel closed"))?;
    let ((ca, ea), (cb, eb)) = (ra?, rb?);
    let (at, last) = ea
        .or(eb)
        .ok_or_else(|| run.check("neither player handled the last delivery"))?;
    run.expect_count("last delivery number", last, messages)?;
    let elapsed = at
        .checked_duration_since(t0)
        .ok_or_else(|| run.failed("the exchange ended before it started"))?;
    Ok(PingPongRun {
        elapsed,
        crossing: ca.merge(cb),
    })
}

// ------------------------------------------------------------- customer_ring

/// One agent of the floor ring: its channel and its handled count.
struct Agent {
    tx: Sender<u64>,
    rx: Receiver<u64>,
    handled: u64,
}

/// N channels and a FIFO of agents with a pending message, on one thread.
pub(super) fn customer_ring(
    run: &Run,
    agents: usize,
    tokens: usize,
) -> Result<RingTimes, PeerError> {
    let since = Instant::now();
    let mut ring: Vec<Agent> = (0..agents)
        .map(|_| {
            let (tx, rx) = unbounded();
            Agent { tx, rx, handled: 0 }
        })
        .collect();
    let mut ready = VecDeque::with_capacity(tokens);
    let registration = since.elapsed();

    let closed = || run.failed("a ring channel closed");
    let t0 = Instant::now();
    for j in 0..tokens {
        let start = token_start(j, agents, tokens);
        ring[start].tx.send(0).map_err(|_| closed())?;
        ready.push_back(start);
    }
    let mut retired = 0u64;
    while let Some(i) = ready.pop_front() {
        let agent = &mut ring[i];
        let hops =
            agent.rx.try_recv().map_err(|_| {
                run.check(format!("agent {i} was scheduled but its channel was empty"))
            })? + 1;
        agent.handled += 1;
        if hops as usize == agents {
            retired += 1;
            continue;
        }
        let next = if i + 1 == agents { 0 } else { i + 1 };
        ring[next].tx.send(hops).map_err(|_| closed())?;
        ready.push_back(next);
    }
    let ringing = t0.elapsed();
    run.expect_count("tokens retired", retired, tokens as u64)?;
    let handled = ring.iter().map(|a| a.handled).sum();
    run.expect_count("deliveries handled", handled, agents as u64 * tokens as u64)?;
    Ok(RingTimes {
        registration,
        ringing,
    })
}

// -------------------------------------------------------------------- skynet

/// The skynet tree as depth-first channel traffic on one thread; returns the
/// time to the root's sum and the sum.
pub(super) fn skynet(run: &Run, leaves: u64) -> Result<(Duration, u64), PeerError> {
    let (to_root, from_root) = unbounded();
    let t0 = Instant::now();
    let mut counts = Counts::default();
    node(run, &to_root, 0, leaves, &mut counts)?;
    let sum = from_root
        .try_recv()
        .map_err(|_| run.check("the root sent no sum"))?;
    let elapsed = t0.elapsed();
    let nodes = super::skynet_nodes(leaves);
    run.expect_count("nodes visited", counts.nodes, nodes)?;
    run.expect_count("sums received", counts.received, nodes - 1)?;
    Ok((elapsed, sum))
}

/// What the floor skynet did, for the end-of-run checks.
#[derive(Default)]
struct Counts {
    nodes: u64,
    received: u64,
}

/// One node: a leaf sends its number to `parent`; an inner node makes a
/// channel, lets its ten children send into it, receives and sums their ten
/// values and sends the sum to `parent`.
fn node(
    run: &Run,
    parent: &Sender<u64>,
    base: u64,
    leaves: u64,
    counts: &mut Counts,
) -> Result<(), PeerError> {
    counts.nodes += 1;
    let closed = || run.failed("a skynet channel closed");
    if leaves == 1 {
        return parent.send(base).map_err(|_| closed());
    }
    let (tx, rx) = unbounded();
    let child = leaves / SKYNET_FANOUT;
    for i in 0..SKYNET_FANOUT {
        node(run, &tx, base + i * child, child, counts)?;
    }
    let mut sum = 0;
    for _ in 0..SKYNET_FANOUT {
        sum += rx
            .try_recv()
            .map_err(|_| run.check("a skynet node got fewer than ten sums"))?;
        counts.received += 1;
    }
    parent.send(sum).map_err(|_| closed())
}
