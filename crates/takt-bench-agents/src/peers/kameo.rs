//! The benchmarks on kameo 0.22.
//!
//! One-thread rows run on a tokio current-thread runtime; `ping_pong`
//! `thread_per_agent` puts each player on a [`Home`](super::tokio_rt::Home) of its own, `two_workers`
//! on a tokio multi-thread runtime with two workers (tokio decides where each
//! actor's task runs; see the module docs of `peers`). The driver is
//! the calling thread, inside `Runtime::block_on`.
//!
//! Every actor gets an unbounded mailbox and is sent to with
//! `tell(..).try_send()`, kameo's fire-and-forget send, which on an unbounded
//! mailbox never waits. Each actor reports its handled count from `on_stop`;
//! teardown stops every actor with `stop_gracefully` and waits for all the
//! hooks before the runtime is dropped (which drops any task left).

use std::sync::Arc;
use std::time::{Duration, Instant};

use kameo::actor::{ActorRef, PreparedActor, Spawn, WeakActorRef};
use kameo::error::{ActorStopReason, Infallible};
use kameo::mailbox;
use kameo::message::{Context, Message};
use kameo::Actor;

use super::board::{span, Board};
use super::tokio_rt::{for_ping_pong, runtime};
use super::{
    thread_tag, token_start, CrossingCounter, PeerError, PingPongRun, Placement, RingTimes, Run,
    SKYNET_FANOUT,
};

/// Sends `msg` to `to` fire-and-forget; a failure is reported on the board.
fn tell<A, M>(board: &Board, to: &ActorRef<A>, msg: M)
where
    A: Actor + Message<M>,
    M: Send + 'static,
{
    if let Err(e) = to.tell(msg).try_send() {
        board.fail(format!("tell failed: {e}"));
    }
}

/// Stops every actor gracefully (queued messages are handled first).
async fn stop_all<A: Actor>(actors: &[ActorRef<A>]) {
    for actor in actors {
        // An actor that already stopped has nothing to stop; the stop-hook
        // count the driver waits for tells whether all of them did.
        let _ = actor.stop_gracefully().await;
    }
}

// ----------------------------------------------------------------- ping_pong

/// The ball: the number of this delivery (1-based) and the sender's thread tag.
struct Ball(u64, u32);

/// Gives a player its partner.
struct Link(ActorRef<Player>);

struct Player {
    peer: Option<ActorRef<Player>>,
    crossing: CrossingCounter,
    target: u64,
    board: Arc<Board>,
}

impl Actor for Player {
    type Args = Self;
    type Error = Infallible;

    async fn on_start(args: Self, _: ActorRef<Self>) -> Result<Self, Infallible> {
        Ok(args)
    }

    async fn on_stop(
        &mut self,
        _: WeakActorRef<Self>,
        _: ActorStopReason,
    ) -> Result<(), Infallible> {
        self.board.player_stopped(self.crossing);
        Ok(())
    }
}

impl Message<Link> for Player {
    type Reply = ();

    async fn handle(&mut self, Link(peer): Link, _: &mut Context<Self, ()>) {
        self.peer = Some(peer);
        self.board.started();
    }
}

impl Message<Ball> for Player {
    type Reply = ();

    async fn handle(&mut self, Ball(n, from): Ball, _: &mut Context<Self, ()>) {
        let here = self.crossing.delivered(from);
        if n >= self.target {
            self.board.complete(n);
        } else if let Some(peer) = &self.peer {
            tell(&self.board, peer, Ball(n + 1, here));
        } else {
            self.board
                .fail("a ball arrived before the player was linked");
        }
    }
}

/// `messages` deliveries between two players, placed as `placement` says:
/// both on a current-thread runtime, each on a [`Home`](super::tokio_rt::Home) of its own, or both
/// on a two-worker runtime.
pub(super) fn ping_pong(
    run: &Run,
    messages: u64,
    placement: Placement,
) -> Result<PingPongRun, PeerError> {
    let (rt, homes) = for_ping_pong(run, placement)?;
    let board = Arc::new(Board::new(2, 1));
    let spawn_player = |i: usize| {
        // With homes, the actor's task is spawned on (and stays on) home i.
        let _home = homes.get(i).map(|h| h.handle().enter());
        Player::spawn_with_mailbox(
            Player {
                peer: None,
                crossing: CrossingCounter::default(),
                target: messages,
                board: board.clone(),
            },
            mailbox::unbounded(),
        )
    };
    let finish = rt.block_on(async {
        let since = Instant::now();
        let a = spawn_player(0);
        let b = spawn_player(1);
        tell(&board, &a, Link(b.clone()));
        tell(&board, &b, Link(a.clone()));
        let exchange = async {
            board.all_started(run, since).await?;
            let t0 = Instant::now();
            tell(&board, &a, Ball(1, thread_tag()));
            let finish = board.finished(run, since).await?;
            span(run, t0, finish.at).map(|d| (d, finish.value))
        }
        .await;
        stop_all(&[a, b]).await;
        let stopped = board.all_stopped(run, since).await;
        let exchange = exchange?;
        stopped.map(|()| exchange)
    });
    drop(homes);
    drop(rt);
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

struct Customer {
    next: ActorRef<Customer>,
    handled: u64,
    agents: u64,
    board: Arc<Board>,
}

impl Actor for Customer {
    type Args = Self;
    type Error = Infallible;

    async fn on_start(args: Self, _: ActorRef<Self>) -> Result<Self, Infallible> {
        args.board.started();
        Ok(args)
    }

    async fn on_stop(
        &mut self,
        _: WeakActorRef<Self>,
        _: ActorStopReason,
    ) -> Result<(), Infallible> {
        self.board.stopped(self.handled);
        Ok(())
    }
}

impl Message<Token> for Customer {
    type Reply = ();

    async fn handle(&mut self, Token(hops): Token, _: &mut Context<Self, ()>) {
        self.handled += 1;
        let hops = hops + 1;
        if hops == self.agents {
            self.board.complete(0);
        } else {
            tell(&self.board, &self.next, Token(hops));
        }
    }
}

/// A ring of `agents` customers carrying `tokens` tokens once around.
pub(super) fn customer_ring(
    run: &Run,
    agents: usize,
    tokens: usize,
) -> Result<RingTimes, PeerError> {
    let rt = runtime(run, 1)?;
    let board = Arc::new(Board::new(agents as u64, tokens as u64));
    let customer = |next| Customer {
        next,
        handled: 0,
        agents: agents as u64,
        board: board.clone(),
    };
    let times = rt.block_on(async {
        let since = Instant::now();
        // Actor 0's reference exists before it is spawned, so the ring is
        // built backwards from N−1 (whose successor is 0) down to 0.
        let first = PreparedActor::<Customer>::new(mailbox::unbounded());
        let mut refs = Vec::with_capacity(agents);
        let mut next = first.actor_ref().clone();
        for _ in 1..agents {
            next = Customer::spawn_with_mailbox(customer(next), mailbox::unbounded());
            refs.push(next.clone());
        }
        refs.push(first.actor_ref().clone());
        // Detached: the actor's end is observed through its stop hook.
        drop(first.spawn(customer(next)));
        refs.reverse();
        let ringing = async {
            board.all_started(run, since).await?;
            let registration = since.elapsed();
            let t0 = Instant::now();
            for j in 0..tokens {
                tell(&board, &refs[token_start(j, agents, tokens)], Token(0));
            }
            let finish = board.finished(run, since).await?;
            Ok::<_, PeerError>(RingTimes {
                registration,
                ringing: span(run, t0, finish.at)?,
            })
        }
        .await;
        stop_all(&refs).await;
        let stopped = board.all_stopped(run, since).await;
        let ringing = ringing?;
        stopped.map(|()| ringing)
    });
    drop(rt);
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

enum Parent {
    Node(ActorRef<Node>),
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

    fn report(&self, value: u64) {
        match &self.parent {
            Parent::Node(parent) => tell(&self.board, parent, Sum(value)),
            Parent::Root => self.board.complete(value),
        }
    }
}

impl Actor for Node {
    type Args = Self;
    type Error = Infallible;

    async fn on_start(mut node: Self, me: ActorRef<Self>) -> Result<Self, Infallible> {
        node.board.started();
        if node.leaves == 1 {
            node.report(node.base);
            // Queued behind nothing: the leaf stops right after starting. Its
            // mailbox is unbounded, so this send does not wait.
            if me.stop_gracefully().await.is_err() {
                node.board.fail("a leaf could not stop itself");
            }
            return Ok(node);
        }
        let child = node.leaves / SKYNET_FANOUT;
        for i in 0..SKYNET_FANOUT {
            let args = Node::new(
                Parent::Node(me.clone()),
                node.base + i * child,
                child,
                node.board.clone(),
            );
            Node::spawn_with_mailbox(args, mailbox::unbounded());
        }
        node.pending = SKYNET_FANOUT;
        Ok(node)
    }

    async fn on_stop(
        &mut self,
        _: WeakActorRef<Self>,
        _: ActorStopReason,
    ) -> Result<(), Infallible> {
        self.board.stopped(self.handled);
        Ok(())
    }
}

impl Message<Sum> for Node {
    type Reply = ();

    async fn handle(&mut self, Sum(value): Sum, ctx: &mut Context<Self, ()>) {
        self.handled += 1;
        self.sum += value;
        self.pending -= 1;
        if self.pending == 0 {
            self.report(self.sum);
            ctx.stop();
        }
    }
}

/// The skynet tree; returns the time to the root's sum and the sum.
pub(super) fn skynet(run: &Run, leaves: u64) -> Result<(Duration, u64), PeerError> {
    let nodes = super::skynet_nodes(leaves);
    let rt = runtime(run, 1)?;
    let board = Arc::new(Board::new(nodes, 1));
    let result = rt.block_on(async {
        let since = Instant::now();
        let root = Node::new(Parent::Root, 0, leaves, board.clone());
        Node::spawn_with_mailbox(root, mailbox::unbounded());
        let finish = board
            .finished(run, since)
            .await
            .and_then(|f| Ok((span(run, since, f.at)?, f.value)));
        let stopped = board.all_stopped(run, since).await;
        let finish = finish?;
        stopped.map(|()| finish)
    });
    drop(rt);
    let result = result?;
    run.expect_count("nodes started", board.started_count(), nodes)?;
    run.expect_count("sums handled", board.handled_count(), nodes - 1)?;
    Ok(result)
}
