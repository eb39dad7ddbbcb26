//! The benchmarks on ractor 0.16.
//!
//! Runtimes as for kameo (`tokio_rt`): a tokio current-thread runtime for
//! the one-thread rows, a [`Home`](super::tokio_rt::Home) thread per player for
//! `thread_per_agent` `ping_pong`, a two-worker multi-thread runtime for
//! `two_workers`; the calling thread drives inside `Runtime::block_on`.
//!
//! Actors are spawned unsupervised and unnamed with `Actor::spawn` (which
//! returns once the actor's `pre_start` has run) and sent to with
//! `ActorRef::cast`, ractor's fire-and-forget send. Each actor reports its
//! handled count from `post_stop`; teardown calls `stop` on every actor, waits
//! for all the hooks and then for every actor task the driver spawned.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::concurrency::JoinHandle;
use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::board::{span, Board};
use super::tokio_rt::{for_ping_pong, runtime};
use super::{
    thread_tag, token_start, CrossingCounter, PeerError, PingPongRun, Placement, RingTimes, Run,
    SKYNET_FANOUT,
};

/// Sends `msg` to `to` fire-and-forget; a failure is reported on the board.
fn cast<M: ractor::Message>(board: &Board, to: &ActorRef<M>, msg: M) {
    if let Err(e) = to.cast(msg) {
        board.fail(format!("cast failed: {e}"));
    }
}

/// Spawns an unsupervised, unnamed actor.
async fn spawn<A: Actor>(
    run: &Run,
    actor: A,
    args: A::Arguments,
) -> Result<(ActorRef<A::Msg>, JoinHandle<()>), PeerError> {
    A::spawn(None, actor, args)
        .await
        .map_err(|e| run.setup(format_args!("spawning an actor: {e}")))
}

/// Stops every actor, waits for their stop hooks, then for their tasks.
async fn stop_all<M: ractor::Message>(
    run: &Run,
    board: &Board,
    since: Instant,
    actors: &[ActorRef<M>],
    tasks: Vec<JoinHandle<()>>,
) -> Result<(), PeerError> {
    for actor in actors {
        actor.stop(None);
    }
    board.all_stopped(run, since).await?;
    for task in tasks {
        task.await
            .map_err(|e| run.failed(format_args!("an actor task failed: {e}")))?;
    }
    Ok(())
}

// ----------------------------------------------------------------- ping_pong

enum PlayerMsg {
    /// The ball: the number of this delivery (1-based) and the sender's
    /// thread tag.
    Ball(u64, u32),
    /// Gives a player its partner.
    Link(ActorRef<PlayerMsg>),
}

struct Player;

struct PlayerState {
    peer: Option<ActorRef<PlayerMsg>>,
    crossing: CrossingCounter,
    target: u64,
    board: Arc<Board>,
}

impl Actor for Player {
    type Msg = PlayerMsg;
    type State = PlayerState;
    type Arguments = PlayerState;

    async fn pre_start(
        &self,
        _: ActorRef<PlayerMsg>,
        state: PlayerState,
    ) -> Result<PlayerState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        _: ActorRef<PlayerMsg>,
        msg: PlayerMsg,
        state: &mut PlayerState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            PlayerMsg::Ball(n, from) => {
                let here = state.crossing.delivered(from);
                if n >= state.target {
                    state.board.complete(n);
                } else if let Some(peer) = &state.peer {
                    cast(&state.board, peer, PlayerMsg::Ball(n + 1, here));
                } else {
                    state
                        .board
                        .fail("a ball arrived before the player was linked");
                }
            }
            PlayerMsg::Link(peer) => {
                state.peer = Some(peer);
                state.board.started();
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _: ActorRef<PlayerMsg>,
        state: &mut PlayerState,
    ) -> Result<(), ActorProcessingErr> {
        state.board.player_stopped(state.crossing);
        Ok(())
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
    let player = || PlayerState {
        peer: None,
        crossing: CrossingCounter::default(),
        target: messages,
        board: board.clone(),
    };
    // Spawns a player on home `i` if there are homes (its task then runs
    // on that thread only), else on the driving runtime.
    let spawn_player = |i: usize| {
        let state = player();
        let home = homes.get(i).map(|h| h.handle().clone());
        async move {
            match home {
                Some(h) => h
                    .spawn(async move { Player::spawn(None, Player, state).await })
                    .await
                    .map_err(|e| run.setup(format_args!("spawning an actor at home: {e}")))?
                    .map_err(|e| run.setup(format_args!("spawning an actor: {e}"))),
                None => spawn(run, Player, state).await,
            }
        }
    };
    let finish = rt.block_on(async {
        let since = Instant::now();
        let (a, task_a) = spawn_player(0).await?;
        let (b, task_b) = match spawn_player(1).await {
            Ok(spawned) => spawned,
            Err(e) => {
                a.stop(None);
                return Err(e);
            }
        };
        cast(&board, &a, PlayerMsg::Link(b.clone()));
        cast(&board, &b, PlayerMsg::Link(a.clone()));
        let exchange = async {
            board.all_started(run, since).await?;
            let t0 = Instant::now();
            cast(&board, &a, PlayerMsg::Ball(1, thread_tag()));
            let finish = board.finished(run, since).await?;
            span(run, t0, finish.at).map(|d| (d, finish.value))
        }
        .await;
        let stopped = stop_all(run, &board, since, &[a, b], vec![task_a, task_b]).await;
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

enum CustomerMsg {
    /// A ring token: deliveries so far.
    Token(u64),
    /// Closes the ring: sent once, to the last actor, before any token.
    Link(ActorRef<CustomerMsg>),
}

struct Customer;

struct CustomerState {
    next: Option<ActorRef<CustomerMsg>>,
    handled: u64,
    agents: u64,
    board: Arc<Board>,
}

impl Actor for Customer {
    type Msg = CustomerMsg;
    type State = CustomerState;
    type Arguments = CustomerState;

    async fn pre_start(
        &self,
        _: ActorRef<CustomerMsg>,
        state: CustomerState,
    ) -> Result<CustomerState, ActorProcessingErr> {
        state.board.started();
        Ok(state)
    }

    async fn handle(
        &self,
        _: ActorRef<CustomerMsg>,
        msg: CustomerMsg,
        state: &mut CustomerState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            CustomerMsg::Token(hops) => {
                state.handled += 1;
                let hops = hops + 1;
                if hops == state.agents {
                    state.board.complete(0);
                } else if let Some(next) = &state.next {
                    cast(&state.board, next, CustomerMsg::Token(hops));
                } else {
                    state.board.fail("a token reached the ring's open end");
                }
            }
            CustomerMsg::Link(next) => state.next = Some(next),
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _: ActorRef<CustomerMsg>,
        state: &mut CustomerState,
    ) -> Result<(), ActorProcessingErr> {
        state.board.stopped(state.handled);
        Ok(())
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
    let customer = |next| CustomerState {
        next,
        handled: 0,
        agents: agents as u64,
        board: board.clone(),
    };
    let times = rt.block_on(async {
        let since = Instant::now();
        // Built backwards from N−1 to 0, each actor spawned knowing its
        // successor; N−1 learns its successor (0) from a Link message.
        let mut refs = Vec::with_capacity(agents);
        let mut tasks = Vec::with_capacity(agents);
        let mut next = None;
        let mut built = Ok(());
        for _ in 0..agents {
            match spawn(run, Customer, customer(next.take())).await {
                Ok((actor, task)) => {
                    next = Some(actor.clone());
                    refs.push(actor);
                    tasks.push(task);
                }
                Err(e) => {
                    built = Err(e);
                    break;
                }
            }
        }
        refs.reverse();
        let ringing = async {
            built?;
            cast(
                &board,
                &refs[agents - 1],
                CustomerMsg::Link(refs[0].clone()),
            );
            board.all_started(run, since).await?;
            let registration = since.elapsed();
            let t0 = Instant::now();
            for j in 0..tokens {
                cast(
                    &board,
                    &refs[token_start(j, agents, tokens)],
                    CustomerMsg::Token(0),
                );
            }
            let finish = board.finished(run, since).await?;
            Ok::<_, PeerError>(RingTimes {
                registration,
                ringing: span(run, t0, finish.at)?,
            })
        }
        .await;
        let stopped = if ringing.is_ok() {
            stop_all(run, &board, since, &refs, tasks).await
        } else {
            // Partial ring: stop what exists; the runtime's drop ends the rest.
            refs.iter().for_each(|r| r.stop(None));
            Ok(())
        };
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

enum NodeMsg {
    /// A child's result.
    Sum(u64),
}

enum Parent {
    Node(ActorRef<NodeMsg>),
    Root,
}

struct Node;

struct NodeState {
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

impl NodeState {
    fn new(parent: Parent, base: u64, leaves: u64, board: Arc<Board>) -> Self {
        NodeState {
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
            Parent::Node(parent) => cast(&self.board, parent, NodeMsg::Sum(value)),
            Parent::Root => self.board.complete(value),
        }
    }
}

impl Actor for Node {
    type Msg = NodeMsg;
    type State = NodeState;
    type Arguments = NodeState;

    async fn pre_start(
        &self,
        _: ActorRef<NodeMsg>,
        state: NodeState,
    ) -> Result<NodeState, ActorProcessingErr> {
        state.board.started();
        Ok(state)
    }

    async fn post_start(
        &self,
        me: ActorRef<NodeMsg>,
        state: &mut NodeState,
    ) -> Result<(), ActorProcessingErr> {
        if state.leaves == 1 {
            state.report(state.base);
            me.stop(None);
            return Ok(());
        }
        let child = state.leaves / SKYNET_FANOUT;
        for i in 0..SKYNET_FANOUT {
            let args = NodeState::new(
                Parent::Node(me.clone()),
                state.base + i * child,
                child,
                state.board.clone(),
            );
            // Detached: the child's end is observed through its stop hook.
            if let Err(e) = Node::spawn(None, Node, args).await {
                state.board.fail(format!("spawning a skynet node: {e}"));
            }
        }
        state.pending = SKYNET_FANOUT;
        Ok(())
    }

    async fn handle(
        &self,
        me: ActorRef<NodeMsg>,
        NodeMsg::Sum(value): NodeMsg,
        state: &mut NodeState,
    ) -> Result<(), ActorProcessingErr> {
        state.handled += 1;
        state.sum += value;
        state.pending -= 1;
        if state.pending == 0 {
            state.report(state.sum);
            me.stop(None);
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _: ActorRef<NodeMsg>,
        state: &mut NodeState,
    ) -> Result<(), ActorProcessingErr> {
        state.board.stopped(state.handled);
        Ok(())
    }
}

/// The skynet tree; returns the time to the root's sum and the sum.
pub(super) fn skynet(run: &Run, leaves: u64) -> Result<(Duration, u64), PeerError> {
    let nodes = super::skynet_nodes(leaves);
    let rt = runtime(run, 1)?;
    let board = Arc::new(Board::new(nodes, 1));
    let result = rt.block_on(async {
        let since = Instant::now();
        let root = NodeState::new(Parent::Root, 0, leaves, board.clone());
        let (_, task) = spawn(run, Node, root).await?;
        let finish = board
            .finished(run, since)
            .await
            .and_then(|f| Ok((span(run, since, f.at)?, f.value)));
        let stopped = board.all_stopped(run, since).await;
        let finish = finish?;
        stopped?;
        task.await
            .map_err(|e| run.failed(format_args!("the root's task failed: {e}")))?;
        Ok(finish)
    });
    drop(rt);
    let result = result?;
    run.expect_count("nodes started", board.started_count(), nodes)?;
    run.expect_count("sums handled", board.handled_count(), nodes - 1)?;
    Ok(result)
}
