//! Agents and their cells: the traits, the cell's layout, its reference
//! counting and the event functions that run handlers.
//!
//! An agent lives in an `AgentCell<A>`: a [`Header`] (where its events go,
//! its state, counters, cooperation) followed by the agent value. Cells are
//! reference counted like an `Arc` (they *are* `Arc<AgentCell<A>>`); an
//! [`Addr<A>`](crate::Addr) is one strong reference. Addresses and the send
//! path that queues envelopes for a cell are in `addr.rs`, which relies on
//! the two contracts below.
//!
//! ## Who keeps a cell alive
//! - every [`Addr`](crate::Addr), every pool run-queue entry and every
//!   envelope sent from another thread (tagged with `REF_TAG`) holds a
//!   strong reference; a worker that delivers a tagged envelope takes its
//!   reference over and releases it later, in a batch
//!   (`worker::owe_release`);
//! - envelopes queued on the target's own dispatcher thread (the local fast
//!   path) hold none: instead the cooperation's reference is released by a
//!   *release* event queued behind them when the agent finishes, and sends
//!   on that thread to a finished agent are dropped without queueing. So a
//!   local send costs no atomic read-modify-write at all.
//!
//! ## Exclusive execution
//! The fields marked *owner* below are touched only by the thread that
//! currently runs the agent's events. Thread-bound dispatchers run an agent
//! on exactly one thread; pool dispatchers hand an agent to one worker at a
//! time through its `sched` flag (see `dispatcher/pool.rs`). That exclusivity
//! is what makes `&mut A` in a handler sound.

use std::any::TypeId;
use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::Arc;

use takt_sched::sync::{AtomicBool, AtomicU64, Ordering};

use crate::addr::post_signal;
use crate::coop::CoopShared;
use crate::dispatcher::pool::PoolShared;
use crate::envelope::{take, Envelope, EventFn, Op, Payload, REF_TAG};
use crate::limits::Limits;
use crate::queue::MpscQueue;
use crate::state::{Behaviour, Entry, Handler};
use crate::stats::LazyCold;
use crate::worker::{self, WorkerShared};
use crate::{trace, Ctx, Definer, State};

/// A message: any `Send + 'static` value. Messages of at most 16 bytes are
/// carried inline in the queue; larger ones are boxed once per send.
pub trait Message: Send + 'static {}
impl<T: Send + 'static> Message for T {}

/// An agent: state plus handlers, run by one dispatcher.
///
/// ```
/// use takt_agents::{Agent, Ctx, Definer};
///
/// struct Counter { n: u64 }
/// struct Add(u64);
///
/// impl Agent for Counter {
///     fn define(def: &mut Definer<Self>) {
///         def.on(|me: &mut Counter, _ctx: &mut Ctx<Counter>, Add(k): Add| me.n += k);
///     }
/// }
/// ```
pub trait Agent: Send + Sized + 'static {
    /// Declares states and handlers. Called once per agent type and process;
    /// must not depend on instance data.
    fn define(def: &mut Definer<Self>);

    /// The first event the agent handles, on its dispatcher's thread.
    fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}

    /// The last event, when its cooperation is deregistered.
    fn on_finish(&mut self, _ctx: &mut Ctx<'_, Self>) {}
}

/// A process-unique agent number (for stats and traces).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentId(pub u64);

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A cell that only the thread running the agent touches (see module docs).
pub(crate) struct OwnerCell<T>(UnsafeCell<T>);

impl<T: Copy> OwnerCell<T> {
    pub(crate) fn new(v: T) -> Self {
        OwnerCell(UnsafeCell::new(v))
    }
    /// Reads the value; caller runs the agent (or the agent is not running
    /// anywhere and the caller is its only user).
    #[inline(always)]
    pub(crate) fn get(&self) -> T {
        // SAFETY: owner-only access (module invariant).
        unsafe { *self.0.get() }
    }
    #[inline(always)]
    pub(crate) fn set(&self, v: T) {
        // SAFETY: owner-only access (module invariant).
        unsafe { *self.0.get() = v }
    }
}

/// Where a pool-bound agent's events wait.
///
/// `pending` counts events pushed and not yet consumed; it is the agent's
/// scheduling token. A sender pushes, then increments: the one that moves
/// it from 0 hands the agent to the pool. The worker that runs the agent
/// pops at most the `pending` it read, then subtracts what it popped; if
/// the result is 0 the agent is idle again, otherwise the worker keeps the
/// token and re-queues the agent. Both sides are read-modify-writes on one
/// word, so the token passes without a lost or doubled hand-off.
pub(crate) struct PoolSink {
    pub(crate) pool: Arc<PoolShared>,
    pub(crate) queue: MpscQueue<Envelope>,
    pub(crate) pending: AtomicU64,
}

impl PoolSink {
    /// Takes the token of an idle agent (nothing pending, not running) to
    /// run one insend event inline; false if the agent is busy. While the
    /// inline handler runs, `pending` counts it as one event, so senders
    /// meanwhile only add to the count and hand nothing over.
    #[inline]
    pub(crate) fn try_take_idle_token(&self) -> bool {
        // Acquire on success: pairs with the Release of the previous
        // holder's `fetch_sub` that brought the count to 0, so the agent's
        // owner state (handlers' effects, `state`, `alive`) is visible.
        self.pending
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Ends an inline run started by `try_take_idle_token`: whether events
    /// were sent meanwhile, in which case the caller still holds the token
    /// and must hand the agent to the pool.
    #[inline]
    pub(crate) fn release_insend_token(&self) -> bool {
        // AcqRel: Release hands the inline run's effects to the next
        // holder; Acquire pairs with senders' increments (their pushes are
        // linked), as in the pool's `run_agent`.
        self.pending.fetch_sub(1, Ordering::AcqRel) > 1
    }

    /// After a push: whether the caller took the token (and must hand the
    /// agent to the pool).
    #[inline]
    pub(crate) fn take_token(&self) -> bool {
        // AcqRel: Acquire sees the previous token holder's release of the
        // agent; Release publishes the push to the next holder.
        self.pending.fetch_add(1, Ordering::AcqRel) == 0
    }
}

/// Where an agent's events go.
pub(crate) enum Sink {
    /// One thread runs the agent (one_thread, active_obj, active_group, priority).
    Thread(Arc<WorkerShared>),
    /// A pool runs it, one worker at a time.
    Pool(Box<PoolSink>),
}

/// Type-erased operations on a cell.
pub(crate) struct AgentVTable {
    pub(crate) retain: unsafe fn(*const Header),
    pub(crate) release: unsafe fn(*const Header),
    pub(crate) finish: EventFn,
    pub(crate) type_name: fn() -> &'static str,
}

/// The type-independent part of a cell; first field of `AgentCell<A>`.
///
/// Layout, in two blocks:
/// - the *sender block* (`fast_send` to `id`, 64 bytes): what a send
///   reads, written once at registration or rarely by the owner. It
///   directly follows the `Arc`'s reference counts, which a send from
///   another thread increments.
/// - the *owner block* (`plain` to `behaviour`): what every dispatch reads
///   and writes. It starts 64 bytes into the header, 80 bytes into the
///   allocation, so it never shares a cache line with the reference
///   counts: a cross-thread sender's increment does not take the line the
///   receiving thread is writing (the receiver defers its decrements, see
///   `worker.rs`), and the receiver's writes do not take the line the
///   sender reads.
///
/// The agent value follows the owner block; a local send prefetches its
/// first line for the dispatch that follows. (The cell is not
/// over-aligned: an aligned allocation costs more at registration than it
/// saves; the 80-byte distance works for any 16-byte-aligned start.)
#[repr(C)]
pub(crate) struct Header {
    // ---- sender block ----
    /// Alive, bound to a thread sink without priorities, no limits: a
    /// send from the agent's own thread may append straight to the
    /// worker's FIFO ring (the one flag the local send fast path tests).
    /// Written by the owner (cleared with `alive` when it finishes); read
    /// by any sender with Relaxed: only a sender on the owner's thread acts
    /// on it, and that sender is sequenced with the owner's store.
    pub(crate) fast_send: AtomicBool,
    /// False once the agent has finished (written by the owner, read by
    /// senders on the owner's thread and by the owner; Relaxed suffices as
    /// both run on that thread, remote senders never rely on it).
    pub(crate) alive: AtomicBool,
    /// Default message priority (priority dispatcher), 0 = lowest.
    pub(crate) prio: u8,
    /// Measure time in handlers (Config::handler_timing).
    pub(crate) timing: bool,
    /// The agent's thread stops with it (active_obj).
    pub(crate) owns_worker: bool,
    pub(crate) sink: Sink,
    pub(crate) limits: Option<Box<Limits>>,
    pub(crate) cold: LazyCold,
    pub(crate) coop: Arc<CoopShared>,
    pub(crate) vt: &'static AgentVTable,
    pub(crate) id: AgentId,
    // ---- owner block ----
    /// Owner: alive, no limits and no handler timing — the one flag the
    /// dispatch fast path tests (cleared with `alive` when it finishes).
    pub(crate) plain: OwnerCell<bool>,
    /// Owner: a handler of this agent is on the stack (insend reentrancy).
    pub(crate) running: OwnerCell<bool>,
    /// Owner: the current state.
    pub(crate) state: OwnerCell<u16>,
    /// Owner: the plain handler last looked up in the current state, so a
    /// run of messages of one type skips the handler table. Rebound to the
    /// new state on every state change (`change_to`, `enter_chain`), the
    /// only event that changes what a lookup returns.
    pub(crate) cache: OwnerCell<HandlerCache>,
    /// Owner: events taken from the queue (handled, unhandled or dead).
    pub(crate) dequeued: AtomicU64,
    /// Owner: messages queued from the agent's own thread.
    pub(crate) enq_local: AtomicU64,
    /// The type's `&'static Behaviour<A>`, erased.
    pub(crate) behaviour: *const (),
}

// The owner block is at least a cache line past the reference counts'
// end (which the header directly follows), whatever the cell's alignment;
// the sender block fits in the 64 bytes before it. (Not under loom, whose
// atomics are bigger: the layout is a performance property, not a
// correctness one.)
#[cfg(not(loom))]
const _: () = assert!(std::mem::offset_of!(Header, plain) >= 64);
#[cfg(not(loom))]
const _: () = assert!(std::mem::offset_of!(Header, id) < 64);

impl Header {
    /// A header for a new cell (the gap filled in).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new<A: Agent>(
        sink: Sink,
        limits: Option<Box<Limits>>,
        coop: Arc<CoopShared>,
        vt: &'static AgentVTable,
        id: AgentId,
        fast_send: bool,
        plain: bool,
        prio: u8,
        timing: bool,
        owns_worker: bool,
        behaviour: &'static Behaviour<A>,
    ) -> Header {
        Header {
            sink,
            limits,
            cold: LazyCold::new(),
            coop,
            vt,
            id,
            fast_send: AtomicBool::new(fast_send),
            alive: AtomicBool::new(true),
            prio,
            timing,
            owns_worker,
            plain: OwnerCell::new(plain),
            running: OwnerCell::new(false),
            state: OwnerCell::new(behaviour.initial),
            cache: OwnerCell::new(HandlerCache::empty(behaviour)),
            dequeued: AtomicU64::new(0),
            enq_local: AtomicU64::new(0),
            behaviour: behaviour as *const Behaviour<A> as *const (),
        }
    }
}

impl Header {
    /// Counts a message that reached a finished agent or a torn-down queue.
    #[cold]
    pub(crate) fn count_undelivered(&self) {
        self.cold.get().undelivered.fetch_add(1, Ordering::Relaxed);
        self.coop.rt.undelivered.fetch_add(1, Ordering::Relaxed);
    }
}

/// A one-entry cache of the handler table: the plain handler entry last
/// used in the current state, or the behaviour's `vacant` entry, which no
/// message type matches (an erased `&'static Entry<A>` of the agent type's
/// compiled behaviour either way). The entry names its message type, so a
/// hit is checked against the type being delivered; the entries live in
/// the shared, `'static` behaviour (hot in cache for every agent of the
/// type), so the cache costs each agent two words.
///
/// `row` is the cached type's row (`Entry::row`: its handler entry in
/// every state, or `vacant`), kept beside the entry so a state change
/// rebinds with one load from the row instead of first loading the entry
/// to find it. It stays when a state without a handler for the type makes
/// the entry `vacant`, so a later change back finds the handler again
/// (the entry is then still the type's handler in the current state).
/// Null where the behaviour has no rows.
#[derive(Clone, Copy)]
pub(crate) struct HandlerCache {
    entry: *const (),
    row: *const (),
}

impl HandlerCache {
    /// A cache that matches no message type.
    #[inline]
    pub(crate) fn empty<A: Agent>(b: &'static Behaviour<A>) -> HandlerCache {
        HandlerCache::of(&b.vacant)
    }

    /// A cache holding `e` (an entry of a `'static` behaviour) and its row.
    #[inline(always)]
    fn of<A: Agent>(e: &Entry<A>) -> HandlerCache {
        HandlerCache {
            entry: e as *const Entry<A> as *const (),
            row: e.row as *const (),
        }
    }
}

/// An agent and its header.
#[repr(C)]
pub(crate) struct AgentCell<A: Agent> {
    pub(crate) hdr: Header,
    pub(crate) agent: UnsafeCell<A>,
}

// SAFETY: `A: Send`; the agent value is only accessed by the thread that
// runs the agent (module invariant), owner cells likewise, everything else
// is atomic or immutable.
unsafe impl<A: Agent> Sync for AgentCell<A> {}
// SAFETY: as above.
unsafe impl<A: Agent> Send for AgentCell<A> {}

impl<A: Agent> Drop for AgentCell<A> {
    fn drop(&mut self) {
        // Discard what is still queued for a pool-bound agent while the
        // header (limits, counters) is intact.
        if let Sink::Pool(p) = &self.hdr.sink {
            // SAFETY: `&mut self`: nobody else consumes this queue any more.
            while let Some(e) = unsafe { p.queue.pop() } {
                drop(e);
            }
        }
    }
}

/// Releases the strong reference an envelope carries, also on unwinding.
struct RefGuard<A: Agent>(usize, PhantomData<A>);

impl<A: Agent> Drop for RefGuard<A> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.0 & REF_TAG != 0 {
            // SAFETY: a tagged envelope owns one strong count of this cell.
            unsafe { Arc::decrement_strong_count((self.0 & !REF_TAG) as *const AgentCell<A>) }
        }
    }
}

/// Records which agent panicked, if its handler unwinds.
struct RunGuard<'a>(&'a Header);

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        // Only reached when unwinding (forgotten otherwise).
        self.0.running.set(false);
        crate::panic::note_panicking(self.0);
    }
}

/// The event function for a message `M` to an agent `A`.
///
/// # Safety
/// Called only through an [`Envelope`] built by the send path for `A` and
/// `M`, on the thread that runs the target.
pub(crate) unsafe fn deliver<A: Agent, M: Message>(op: Op, target: usize, payload: *mut Payload) {
    // SAFETY: the target cell is alive: a tagged envelope holds a reference,
    // an untagged one is queued before the cell's release event (module docs).
    let cell = unsafe { &*((target & !REF_TAG) as *const AgentCell<A>) };
    // First, before anything can push to the queue the payload may sit in
    // (the `EventFn` contract).
    // SAFETY: the payload holds an `M` not yet taken.
    let msg: M = unsafe { take(payload) };
    if target & REF_TAG != 0 {
        // The envelope's reference is handed to the worker, which releases
        // it later (`worker::owe_release`); the cell stays alive meanwhile,
        // also if the handler unwinds.
        // SAFETY: a tagged envelope owns one strong count of this cell.
        unsafe { worker::owe_release(&cell.hdr) };
    }
    // `plain` is owner state: read only for a delivery, which runs on the
    // thread that runs the agent (a discard may run elsewhere).
    if op == Op::Deliver && cell.hdr.plain.get() && !trace::active() {
        let h = &cell.hdr;
        // SAFETY: the cache is a `&'static Entry<A>` of this cell's
        // behaviour (`HandlerCache::empty`, `handle_plain`).
        let e = unsafe { &*h.cache.get().entry.cast::<Entry<A>>() };
        if e.type_id == TypeId::of::<M>() {
            h.dequeued.bump();
            // SAFETY: cached entries are plain, and a plain entry for `M`
            // (TypeId match) holds a `Handler<A, M>`.
            let f = unsafe { std::mem::transmute::<*const (), Handler<A, M>>(e.f) };
            cell.run_untimed(|agent, ctx| f(agent, ctx, msg));
        } else {
            cell.handle_plain(msg)
        }
    } else {
        deliver_other(cell, op, msg)
    }
}

/// Everything but a plain delivery: limits, a finished agent, tracing,
/// handler timing, a discard.
#[inline(never)]
fn deliver_other<A: Agent, M: Message>(cell: &AgentCell<A>, op: Op, msg: M) {
    if let Some(l) = &cell.hdr.limits {
        release_limit::<M>(l);
    }
    match op {
        Op::Deliver => cell.handle(msg),
        Op::Discard => discard(&cell.hdr, msg),
    }
}

#[cold]
#[inline(never)]
fn release_limit<M: Message>(l: &Limits) {
    l.release::<M>();
}

#[cold]
#[inline(never)]
fn discard<M: Message>(h: &Header, msg: M) {
    h.count_undelivered();
    drop(msg);
}

/// Start event: enters the initial state, then `on_start`.
unsafe fn start<A: Agent>(op: Op, target: usize, _payload: *mut Payload) {
    let _ref = RefGuard::<A>(target, PhantomData);
    if op == Op::Discard {
        return;
    }
    // SAFETY: as in `deliver`.
    let cell = unsafe { &*((target & !REF_TAG) as *const AgentCell<A>) };
    cell.run(|agent, ctx| {
        let init = cell.behaviour().initial;
        cell.enter_chain(agent, ctx, None, init);
        agent.on_start(ctx);
    });
}

/// Finish event: `on_finish`, then the agent is dead; its cooperation's
/// reference (carried by this tagged envelope) is handed to a release event
/// queued behind everything already queued locally.
unsafe fn finish<A: Agent>(op: Op, target: usize, _payload: *mut Payload) {
    let _ref = RefGuard::<A>(target, PhantomData);
    // SAFETY: tagged envelope (the cooperation's reference).
    let cell = unsafe { &*((target & !REF_TAG) as *const AgentCell<A>) };
    let h = &cell.hdr;
    if op == Op::Deliver && h.alive.load(Ordering::Relaxed) {
        // A panicking `on_finish` must not keep the cooperation from
        // completing: catch it here and report it.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cell.run(|agent, ctx| agent.on_finish(ctx))
        }));
        if let Err(p) = r {
            crate::panic::recovered(&h.coop.rt.panic, p);
        }
    }
    let was_alive = h.alive.swap(false, Ordering::Relaxed);
    h.plain.set(false);
    h.fast_send.store(false, Ordering::Relaxed);
    if let (Op::Deliver, Sink::Thread(ws)) = (op, &h.sink) {
        if let Some(core) = worker::local_core(ws) {
            // SAFETY: we hold a reference; the new one travels with the event.
            unsafe { Arc::increment_strong_count(cell as *const AgentCell<A>) };
            let tgt = cell as *const AgentCell<A> as usize | REF_TAG;
            core.push_local(Envelope::signal(release::<A>, tgt), LAST_PRIO);
        }
    }
    if was_alive {
        h.coop.agent_finished();
    }
}

/// Release event: drops its reference (the cooperation's) and, for an
/// agent that owns its thread, stops that thread.
unsafe fn release<A: Agent>(op: Op, target: usize, _payload: *mut Payload) {
    let _ref = RefGuard::<A>(target, PhantomData);
    if op == Op::Deliver {
        // SAFETY: tagged envelope.
        let cell = unsafe { &*((target & !REF_TAG) as *const AgentCell<A>) };
        if let (true, Sink::Thread(ws)) = (cell.hdr.owns_worker, &cell.hdr.sink) {
            ws.request_stop();
        }
    }
}

impl<A: Agent> AgentCell<A> {
    pub(crate) const VTABLE: AgentVTable = AgentVTable {
        retain: retain::<A>,
        release: release_ref::<A>,
        finish: finish::<A>,
        type_name: std::any::type_name::<A>,
    };

    /// The agent type's compiled behaviour.
    #[inline(always)]
    pub(crate) fn behaviour(&self) -> &'static Behaviour<A> {
        // SAFETY: set at registration from a `&'static Behaviour<A>`.
        unsafe { &*(self.hdr.behaviour as *const Behaviour<A>) }
    }

    /// Handles `msg` now, on the calling thread (which runs the agent).
    ///
    /// The hot path (alive, no tracing, a plain handler) is kept small so
    /// the event function stays cheap; everything else is out of line.
    #[inline(always)]
    pub(crate) fn handle<M: Message>(&self, msg: M) {
        let h = &self.hdr;
        h.dequeued.bump();
        if !h.alive.load(Ordering::Relaxed) || trace::active() {
            return self.handle_slow(msg);
        }
        match self.behaviour().lookup(h.state.get(), TypeId::of::<M>()) {
            Some(e) if e.plain => {
                // SAFETY: a plain entry for `M` (TypeId match) holds a
                // `Handler<A, M>`.
                let f = unsafe { std::mem::transmute::<*const (), Handler<A, M>>(e.f) };
                self.run(|agent, ctx| f(agent, ctx, msg));
            }
            _ => self.handle_other(msg),
        }
    }

    /// `handle` for an agent whose `plain` flag is set (alive, no limits,
    /// no timing) with tracing off, after a miss of the handler cache: the
    /// plain handler found is cached for the next message of this type.
    #[inline(never)]
    fn handle_plain<M: Message>(&self, msg: M) {
        let h = &self.hdr;
        h.dequeued.bump();
        match self.behaviour().lookup(h.state.get(), TypeId::of::<M>()) {
            Some(e) if e.plain => {
                h.cache.set(HandlerCache::of(e));
                // SAFETY: as in `handle`.
                let f = unsafe { std::mem::transmute::<*const (), Handler<A, M>>(e.f) };
                self.run_untimed(|agent, ctx| f(agent, ctx, msg));
            }
            _ => self.handle_other(msg),
        }
    }

    /// A finished agent, or tracing on.
    #[cold]
    #[inline(never)]
    fn handle_slow<M: Message>(&self, msg: M) {
        let h = &self.hdr;
        if !h.alive.load(Ordering::Relaxed) {
            h.cold.get().dead_dequeued.fetch_add(1, Ordering::Relaxed);
            h.count_undelivered();
            return;
        }
        trace::deliver(h, std::any::type_name::<M>());
        match self.behaviour().lookup(h.state.get(), TypeId::of::<M>()) {
            Some(e) if e.plain => {
                // SAFETY: as in `handle`.
                let f = unsafe { std::mem::transmute::<*const (), Handler<A, M>>(e.f) };
                self.run(|agent, ctx| f(agent, ctx, msg));
            }
            _ => self.handle_other(msg),
        }
    }

    /// A request handler, or no handler at all.
    #[inline(never)]
    fn handle_other<M: Message>(&self, msg: M) {
        let h = &self.hdr;
        match self.behaviour().lookup(h.state.get(), TypeId::of::<M>()) {
            Some(e) => {
                let mut msg = ManuallyDrop::new(msg);
                let (f, invoke) = (e.f, e.invoke);
                // SAFETY: the entry was registered for `M` (TypeId match);
                // the message is moved out exactly once by `invoke`.
                self.run(|agent, ctx| unsafe {
                    invoke(f, agent, ctx, (&mut *msg as *mut M).cast::<u8>())
                });
            }
            None => {
                h.cold.get().unhandled.fetch_add(1, Ordering::Relaxed);
                if trace::active() {
                    trace::unhandled(h, std::any::type_name::<M>());
                }
            }
        }
    }

    /// Runs `f` with `&mut A` and a context, then applies a requested state
    /// change. Caller runs the agent (exclusive access).
    #[inline(always)]
    pub(crate) fn run(&self, f: impl FnOnce(&mut A, &mut Ctx<'_, A>)) {
        let h = &self.hdr;
        if h.timing {
            return self.run_timed(f);
        }
        self.run_untimed(f)
    }

    /// `run` without handler timing.
    #[inline(always)]
    fn run_untimed(&self, f: impl FnOnce(&mut A, &mut Ctx<'_, A>)) {
        let h = &self.hdr;
        let guard = RunGuard(h);
        h.running.set(true);
        // SAFETY: exclusive execution (module invariant) and `running`
        // keeps insend from re-entering this agent.
        let agent = unsafe { &mut *self.agent.get() };
        let mut ctx = Ctx::new(self);
        f(agent, &mut ctx);
        if let Some(next) = ctx.take_next() {
            self.change_to(agent, &mut ctx, next);
        }
        h.running.set(false);
        std::mem::forget(guard);
    }

    /// Applies a state change requested by a handler. A change between two
    /// quiet states (no hooks on them or their ancestors) runs no hook, so
    /// it is the store of the new state and the cache's rebinding; anything
    /// else takes the full `transition`.
    #[inline(always)]
    fn change_to(&self, agent: &mut A, ctx: &mut Ctx<'_, A>, to: u16) {
        let h = &self.hdr;
        let b = self.behaviour();
        let from = h.state.get();
        debug_assert!((from as usize) < b.states.len() && (to as usize) < b.states.len());
        // SAFETY: `from` and `to` are defined states (`Behaviour::lookup`).
        let quiet = b.all_quiet
            || unsafe {
                b.states.get_unchecked(from as usize).quiet
                    && b.states.get_unchecked(to as usize).quiet
            };
        if quiet {
            h.state.set(to);
            self.rebind_cache(to);
        } else {
            self.transition(agent, ctx, to);
        }
    }

    /// Points the handler cache at the cached type's handler in `to`: its
    /// row's element `to`, or (no rows) `Behaviour::rebind`.
    #[inline(always)]
    fn rebind_cache(&self, to: u16) {
        let h = &self.hdr;
        let c = h.cache.get();
        let entry = if !c.row.is_null() {
            // SAFETY: a non-null cached row is the cached type's row of
            // this cell's behaviour (`HandlerCache::of`), one element per
            // state, and `to` is a state (`change_to`'s contract); its
            // elements are `&'static Entry<A>`s of the behaviour.
            unsafe { *c.row.cast::<*const Entry<A>>().add(to as usize) }
        } else {
            // SAFETY: the cache always holds a `&'static Entry<A>` of this
            // cell's behaviour (`HandlerCache::empty`, `handle_plain`, here).
            let cached = unsafe { &*c.entry.cast::<Entry<A>>() };
            self.behaviour().rebind(to, cached)
        };
        h.cache.set(HandlerCache {
            entry: entry as *const (),
            row: c.row,
        });
    }

    /// `run` with the time in the handler measured.
    #[cold]
    #[inline(never)]
    fn run_timed(&self, f: impl FnOnce(&mut A, &mut Ctx<'_, A>)) {
        let h = &self.hdr;
        let guard = RunGuard(h);
        h.running.set(true);
        let t0 = takt_sched::clock().now();
        // SAFETY: as in `run`.
        let agent = unsafe { &mut *self.agent.get() };
        let mut ctx = Ctx::new(self);
        f(agent, &mut ctx);
        if let Some(next) = ctx.take_next() {
            self.change_to(agent, &mut ctx, next);
        }
        let dt = takt_sched::clock().now().saturating_sub(t0);
        h.cold.get().handler_ticks.fetch_add(dt, Ordering::Relaxed);
        h.running.set(false);
        std::mem::forget(guard);
    }

    fn parent(&self, s: u16) -> Option<u16> {
        self.behaviour().states[s as usize].parent
    }

    /// Enters `to` from ancestor `lca` (exclusive): `on_enter` outermost first.
    fn enter_chain(&self, agent: &mut A, ctx: &mut Ctx<'_, A>, lca: Option<u16>, to: u16) {
        let mut path = [0u16; State::MAX_DEPTH];
        let mut n = 0;
        let mut s = Some(to);
        while s != lca {
            let Some(cur) = s else { break };
            path[n] = cur;
            n += 1;
            s = self.parent(cur);
        }
        self.hdr.state.set(to);
        self.rebind_cache(to);
        for &st in path[..n].iter().rev() {
            if let Some(h) = self.behaviour().states[st as usize].on_enter {
                h(agent, ctx);
            }
        }
    }

    /// Moves from the current state to `to`: exits up to the common
    /// ancestor, then enters down to `to`. Hooks may request another change;
    /// chains longer than `MAX_CHAIN` are cut and counted.
    #[inline(never)]
    fn transition(&self, agent: &mut A, ctx: &mut Ctx<'_, A>, mut to: u16) {
        const MAX_CHAIN: usize = 16;
        for _ in 0..MAX_CHAIN {
            let from = self.hdr.state.get();
            if from != to {
                let lca = self.common_ancestor(from, to);
                let mut s = Some(from);
                while s != lca {
                    let Some(cur) = s else { break };
                    if let Some(h) = self.behaviour().states[cur as usize].on_exit {
                        h(agent, ctx);
                    }
                    s = self.parent(cur);
                }
                self.enter_chain(agent, ctx, lca, to);
            }
            match ctx.take_next() {
                Some(n) => to = n,
                None => return,
            }
        }
        self.hdr
            .cold
            .get()
            .bad_state
            .fetch_add(1, Ordering::Relaxed);
    }

    fn common_ancestor(&self, a: u16, b: u16) -> Option<u16> {
        let depth = |s: u16| self.behaviour().states[s as usize].depth;
        let (mut a, mut b) = (Some(a), Some(b));
        while let (Some(x), Some(y)) = (a, b) {
            if x == y {
                return Some(x);
            }
            match depth(x).cmp(&depth(y)) {
                std::cmp::Ordering::Greater => a = self.parent(x),
                std::cmp::Ordering::Less => b = self.parent(y),
                std::cmp::Ordering::Equal => {
                    a = self.parent(x);
                    b = self.parent(y);
                }
            }
        }
        None
    }
}

unsafe fn retain<A: Agent>(h: *const Header) {
    // SAFETY: `h` is the start of a live `Arc<AgentCell<A>>` allocation
    // (repr(C), header first) and the caller holds a reference.
    unsafe { Arc::increment_strong_count(h.cast::<AgentCell<A>>()) }
}

unsafe fn release_ref<A: Agent>(h: *const Header) {
    // SAFETY: the caller gives up one strong count of this cell.
    unsafe { Arc::decrement_strong_count(h.cast::<AgentCell<A>>()) }
}

/// A type-erased strong reference to a cell (pool run queues, cooperations).
pub(crate) struct AgentRef(NonNull<Header>);

// SAFETY: cells are Send + Sync.
unsafe impl Send for AgentRef {}
// SAFETY: cells are Send + Sync.
unsafe impl Sync for AgentRef {}

impl AgentRef {
    /// Takes over one strong count.
    ///
    /// # Safety
    /// `h` must be a cell header whose strong count the caller gives up.
    pub(crate) unsafe fn from_raw(h: *const Header) -> AgentRef {
        // SAFETY: caller's contract (non-null cell pointer).
        AgentRef(unsafe { NonNull::new_unchecked(h as *mut Header) })
    }

    /// Gives up ownership without releasing: the count now belongs to the caller.
    pub(crate) fn into_raw(self) -> *const Header {
        ManuallyDrop::new(self).0.as_ptr()
    }

    #[inline(always)]
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: we hold a strong reference.
        unsafe { self.0.as_ref() }
    }
}

impl Clone for AgentRef {
    fn clone(&self) -> Self {
        // SAFETY: we hold a reference, so the cell is alive.
        unsafe { (self.header().vt.retain)(self.0.as_ptr()) };
        AgentRef(self.0)
    }
}

impl Drop for AgentRef {
    fn drop(&mut self) {
        // SAFETY: we own one strong count.
        unsafe { (self.header().vt.release)(self.0.as_ptr()) }
    }
}

impl fmt::Debug for AgentRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = self.header();
        write!(f, "{}{}", (h.vt.type_name)(), h.id)
    }
}

/// Queues the start event of a new agent (the cell's first event).
pub(crate) fn post_start<A: Agent>(cell: &Arc<AgentCell<A>>) {
    // The event carries its own reference.
    let raw = Arc::into_raw(cell.clone());
    post_signal(
        &cell.hdr,
        start::<A>,
        raw as usize | REF_TAG,
        false,
        START_PRIO,
    );
}

/// The priority of a start event: the highest, so on a priority
/// dispatcher no message (whatever its priority) runs before `on_start`.
/// The start event is the cell's first envelope, so FIFO within the
/// priority puts it first.
pub(crate) const START_PRIO: u8 = 7;
/// The priority of finish and release events: the lowest, so on a
/// priority dispatcher they run after everything queued before them.
pub(crate) const LAST_PRIO: u8 = 0;

/// Counter with a single writer: increments are a load and a store.
pub(crate) trait OwnerCounter {
    fn bump(&self);
    fn add(&self, n: u64);
}

impl OwnerCounter for AtomicU64 {
    #[inline(always)]
    fn bump(&self) {
        self.add(1);
    }
    #[inline(always)]
    fn add(&self, n: u64) {
        // Single writer (the thread running the agent): no RMW needed;
        // Relaxed, readers only want an eventually consistent figure.
        self.store(
            self.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }
}
