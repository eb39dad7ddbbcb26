//! The benchmarks on actix 0.13.
//!
//! Each run makes its own `System` (an actix-rt arbiter on the calling thread,
//! a tokio current-thread runtime with time enabled) and drives it with
//! `SystemRunner::block_on`. Actors are started on that arbiter with
//! `Actor::start`; `thread_per_agent` `ping_pong` additionally makes two `Arbiter`s
//! (each a thread with its own event loop) and starts one player on each, so
//! every delivery crosses threads. Sends are `Addr::do_send`, actix's
//! fire-and-forget send, which ignores the mailbox capacity.
//!
//! Every actor reports its handled count from its `stopped` hook; teardown
//! sends each actor a `Stop` message (the ring and the players hold each
//! other's addresses, so they would never stop on their own) and waits for all
//! hooks before the arbiters are stopped and joined and the System dropped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, ActorContext, Addr, Arbiter, AsyncContext, Context, Handler, Message, System};

use super::board::{span, Board};
use super::{
    thread_tag, token_start, CrossingCounter, PeerError, PingPongRun, Placement, RingTimes, Run,
    SKYNET_FANOUT,
};

/// Tells an actor to stop; every actor type here handles it.
struct Stop;

impl Message for Stop {
    type Result = ();
}

/// Stops and joins the extra arbiters on every path out of a run.
struct Arbiters(Vec<Arbiter>);

impl Drop for Arbiters {
    fn drop(&mut self) {
        for arbiter in &self.0 {
            arbiter.stop();
        }
        for arbiter in self.0.drain(..) {
            // A panicked arbiter thread has already ended: nothing to clean up.
            let _ = arbiter.join();
        }
    }
}

// ----------------------------------------------------------------- ping_pong

/// The ball: the number of this delivery (1-based) and the sender's thread tag.
struct Ball(u64, u32);

impl Message for Ball {
    type Result = ();
}

/// Gives a player its partner.
struct Link(Addr<Player>);

impl Message for Link {
    type Result = ();
}

struct Player {
    peer: Option<Addr<Player>>,
    crossing: CrossingCounter,
    target: u64,
    board: Arc<Board>,
}

impl Actor for Player {
    type Context = Context<Self>;

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.board.player_stopped(self.crossing);
    }
}

impl Handler<Link> for Player {
    type Result = ();

    fn handle(&mut self, Link(peer): Link, _: &mut Context<Self>) {
        self.peer = Some(peer);
        self.board.started();
    }
}

impl Handler<Ball> for Player {
    type Result = ();

    fn handle(&mut self, Ball(n, from): Ball, _: &mut Context<Self>) {
        let here = self.crossing.delivered(from);
        if n >= self.target {
            self.board.complete(n);
        } else if let Some(peer) = &self.peer {
            peer.do_send(Ball(n + 1, here));
        } else {
            self.board
                .fail("a ball arrived before the player was linked");
        }
    }
}

impl Handler<Stop> for Player {
    type Result = ();

    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// `messages` deliveries between two players: on the System's arbiter
/// (one thread), or one on each of two extra arbiters (a thread per agent).
pub(super) fn ping_pong(
    run: &Run,
    messages: u64,
    placement: Placement,
) -> Result<PingPongRun, PeerError> {
    let system = System::new();
    // Declared after `system` so the arbiters stop before the System is dropped.
    let arbiters = Arbiters(if placement == Placement::ThreadPerAgent {
        vec![Arbiter::new(), Arbiter::new()]
    } else {
        Vec::new()
    });
    let board = Arc::new(Board::new(2, 1));
    let player = || Player {
        peer: None,
        crossing: CrossingCounter::default(),
        target: messages,
        board: board.clone(),
    };
    let finish = system.block_on(async {
        let since = Instant::now();
        let (a, b) = match arbiters.0.as_slice() {
            [one, two] => {
                let (pa, pb) = (player(), player());
                (
                    Player::start_in_arbiter(&one.handle(), move |_| pa),
                    Player::start_in_arbiter(&two.handle(), move |_| pb),
                )
            }
            _ => (player().start(), player().start()),
        };
        a.do_send(Link(b.clone()));
        b.do_send(Link(a.clone()));
        let exchange = async {
            board.all_started(run, since).await?;
            let t0 = Instant::now();
            a.do_send(Ball(1, thread_tag()));
            let finish = board.finished(run, since).await?;
            span(run, t0, finish.at).map(|d| (d, finish.value))
        }
        .await;
        a.do_send(Stop);
        b.do_send(Stop);
        let stopped = board.all_stopped(run, since).await;
        let exchange = exchange?;
        stopped.map(|()| exchange)
    });
    drop(arbiters);
    drop(system);
    let (elapsed, last) = finish?;
    run.expect_count("last delivery number", last, messages)?;
    Ok(PingPongRun {
        elapsed,
        crossing: board.crossing(),
    })
}

// ------------------------------------------------------------- customer_ring

/// A ring token: `hops` deliveries so far.
struct Token(u64);

impl Message for Token {
    type Result = ();
}

struct Customer {
    next: Addr<Customer>,
    handled: u64,
    agents: u64,
    board: Arc<Board>,
}

impl Actor for Customer {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Context<Self>) {
        self.board.started();
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.board.stopped(self.handled);
    }
}

impl Handler<Token> for Customer {
    type Result = ();

    fn handle(&mut self, Token(hops): Token, _: &mut Context<Self>) {
        self.handled += 1;
        let hops = hops + 1;
        if hops == self.agents {
            self.board.complete(0);
        } else {
            self.next.do_send(Token(hops));
        }
    }
}

impl Handler<Stop> for Customer {
    type Result = ();

    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// A ring of `agents` customers carrying `tokens` tokens once around.
pub(super) fn customer_ring(
    run: &Run,
    agents: usize,
    tokens: usize,
) -> Result<RingTimes, PeerError> {
    let system = System::new();
    let board = Arc::new(Board::new(agents as u64, tokens as u64));
    let customer = |next| Customer {
        next,
        handled: 0,
        agents: agents as u64,
        board: board.clone(),
    };
    let times = system.block_on(async {
        let since = Instant::now();
        // Actor 0's address exists before it runs, so the ring is built
        // backwards from N−1 (whose successor is 0) down to 0.
        let first = Context::<Customer>::new();
        let mut addrs = Vec::with_capacity(agents);
        let mut next = first.address();
        for _ in 1..agents {
            next = customer(next).start();
            addrs.push(next.clone());
        }
        addrs.push(first.run(customer(next)));
        addrs.reverse();
        let ringing = async {
            board.all_started(run, since).await?;
            let registration = since.elapsed();
            let t0 = Instant::now();
            for j in 0..tokens {
                addrs[token_start(j, agents, tokens)].do_send(Token(0));
            }
            let finish = board.finished(run, since).await?;
            Ok::<_, PeerError>(RingTimes {
                registration,
                ringing: span(run, t0, finish.at)?,
            })
        }
        .await;
        for addr in &addrs {
            addr.do_send(Stop);
        }
        let stopped = board.all_stopped(run, since).await;
        let ringing = ringing?;
        stopped.map(|()| ringing)
    });
    drop(system);
    let times = times?;
    run.expect_count(
        "deliveries handled",
        board.handled_count(),
        agents as u64 * tokens as u64,
    )?;
    Ok(times)
}

// -------------------------------------------------------------------- skynet

/// A child's result.
struct Sum(u64);

impl Message for Sum {
    type Result = ();
}

enum Parent {
    Node(Addr<Node>),
    Root,
}

struct Node {
    parent: Parent,
    /// The number of this node's first leaf.
    base: u64,
    /// Leaves below (or at) this node.
    leaves: u64,
    sum: u64,
    pending: u64,
    handled: u64,
    board: Arc<Board>,
}

impl Node {
    fn new(parent: Parent, base: u64, leaves: u64, board: Arc<Board>) -> Self {
        Node {
            parent,
            base,
            leaves,
            sum: 0,
            pending: 0,
            handled: 0,
            board,
        }
    }

    fn report(&mut self, value: u64, ctx: &mut Context<Self>) {
        match &self.parent {
            Parent::Node(addr) => addr.do_send(Sum(value)),
            Parent::Root => self.board.complete(value),
        }
        ctx.stop();
    }
}

impl Actor for Node {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.board.started();
        if self.leaves == 1 {
            self.report(self.base, ctx);
            return;
        }
        let child = self.leaves / SKYNET_FANOUT;
        for i in 0..SKYNET_FANOUT {
            let parent = Parent::Node(ctx.address());
            Node::new(parent, self.base + i * child, child, self.board.clone()).start();
        }
        self.pending = SKYNET_FANOUT;
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.board.stopped(self.handled);
    }
}

impl Handler<Sum> for Node {
    type Result = ();

    fn handle(&mut self, Sum(value): Sum, ctx: &mut Context<Self>) {
        self.handled += 1;
        self.sum += value;
        self.pending -= 1;
        if self.pending == 0 {
            self.report(self.sum, ctx);
        }
    }
}

/// The skynet tree; returns the time to the root's sum and the sum.
pub(super) fn skynet(run: &Run, leaves: u64) -> Result<(Duration, u64), PeerError> {
    let nodes = super::skynet_nodes(leaves);
    let system = System::new();
    let board = Arc::new(Board::new(nodes, 1));
    let result = system.block_on(async {
        let since = Instant::now();
        Node::new(Parent::Root, 0, leaves, board.clone()).start();
        let finish = board
            .finished(run, since)
            .await
            .and_then(|f| Ok((span(run, since, f.at)?, f.value)));
        let stopped = board.all_stopped(run, since).await;
        let finish = finish?;
        stopped.map(|()| finish)
    });
    drop(system);
    let result = result?;
    run.expect_count("nodes started", board.started_count(), nodes)?;
    run.expect_count("sums handled", board.handled_count(), nodes - 1)?;
    Ok(result)
}
