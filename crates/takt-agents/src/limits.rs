//! Overload control: per-agent, per-message-type limits on queued messages.
//!
//! A limit counts messages of one type that are queued for an agent and
//! not yet handled. A send over the limit gets the limit's [`Overflow`]
//! reaction instead of being queued:
//! - [`Overflow::Drop`]: the message is dropped (counted);
//! - [`Overflow::Abort`]: the process aborts with a report;
//! - [`Overflow::redirect`]: the message goes to another agent;
//! - [`Overflow::transform`]: the message is turned into another message
//!   for another agent.
//!
//! Only agents registered with limits pay for them (an atomic increment on
//! send and a decrement on delivery); the send path of the others checks
//! one pointer.
//!
//! ```
//! use takt_agents::{Limits, Overflow};
//! struct Job(u32);
//! let limits = Limits::new().limit::<Job>(100, Overflow::Drop);
//! # let _ = limits;
//! ```

use std::any::{Any, TypeId};
use std::cell::Cell;
use std::fmt;

use takt_sched::sync::{AtomicU64, AtomicUsize, Ordering};

use crate::agent::Header;
use crate::{Addr, Agent, Message};

/// Redirections nested deeper than this are dropped (a redirect loop
/// between two full agents would otherwise recurse without end).
const MAX_REDIRECT_DEPTH: u32 = 4;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

type Forward<M> = Box<dyn Fn(M) + Send + Sync>;

/// What to do with a message over the limit.
pub enum Overflow<M> {
    /// Drop it (counted in `AgentStats::overflow`).
    Drop,
    /// Abort the process.
    Abort,
    /// Send it elsewhere ([`Overflow::redirect`]).
    Redirect(Forward<M>),
    /// Turn it into another message for another agent ([`Overflow::transform`]).
    Transform(Forward<M>),
}

impl<M> fmt::Debug for Overflow<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Overflow::Drop => "Drop",
            Overflow::Abort => "Abort",
            Overflow::Redirect(_) => "Redirect",
            Overflow::Transform(_) => "Transform",
        })
    }
}

impl<M: Message> Overflow<M> {
    /// Redirects overflowing messages to `to`.
    pub fn redirect<B: Agent>(to: Addr<B>) -> Self {
        Overflow::Redirect(Box::new(move |m| to.send(m)))
    }

    /// Sends `f(message)` to `to` instead.
    pub fn transform<B: Agent, N: Message>(
        to: Addr<B>,
        f: impl Fn(M) -> N + Send + Sync + 'static,
    ) -> Self {
        Overflow::Transform(Box::new(move |m| to.send(f(m))))
    }
}

struct Limit {
    type_id: TypeId,
    type_name: &'static str,
    max: usize,
    /// Messages of this type queued and not yet delivered (RMW by senders
    /// and by the consumer; Relaxed: a count, not a synchronization).
    count: AtomicUsize,
    overflows: AtomicU64,
    /// An `Overflow<M>` for this entry's `M`.
    reaction: Box<dyn Any + Send + Sync>,
}

/// Limits for one agent, by message type.
#[derive(Default)]
pub struct Limits {
    entries: Vec<Limit>,
}

impl fmt::Debug for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|l| (l.type_name, l.max)))
            .finish()
    }
}

impl Limits {
    /// No limits yet.
    pub fn new() -> Self {
        Limits::default()
    }

    /// At most `max` queued messages of type `M`; `reaction` for the rest.
    /// A second limit for the same type replaces the first.
    pub fn limit<M: Message>(mut self, max: usize, reaction: Overflow<M>) -> Self {
        self.entries.retain(|l| l.type_id != TypeId::of::<M>());
        self.entries.push(Limit {
            type_id: TypeId::of::<M>(),
            type_name: std::any::type_name::<M>(),
            max,
            count: AtomicUsize::new(0),
            overflows: AtomicU64::new(0),
            reaction: Box::new(reaction),
        });
        self
    }

    #[inline]
    fn find<M: 'static>(&self) -> Option<&Limit> {
        let id = TypeId::of::<M>();
        self.entries.iter().find(|l| l.type_id == id)
    }

    /// Admits `msg` (returns it) or applies the overflow reaction (returns None).
    pub(crate) fn admit<M: Message>(&self, msg: M, h: &Header) -> Option<M> {
        let Some(l) = self.find::<M>() else {
            return Some(msg);
        };
        if l.count.fetch_add(1, Ordering::Relaxed) < l.max {
            return Some(msg);
        }
        l.count.fetch_sub(1, Ordering::Relaxed);
        l.overflows.fetch_add(1, Ordering::Relaxed);
        h.cold.get().overflow.fetch_add(1, Ordering::Relaxed);
        let reaction = l
            .reaction
            .downcast_ref::<Overflow<M>>()
            .expect("the reaction was stored for this type");
        match reaction {
            Overflow::Drop => {}
            Overflow::Abort => {
                eprintln!(
                    "takt-agents: agent {}{} exceeded its limit of {} queued {}; aborting",
                    (h.vt.type_name)(),
                    h.id,
                    l.max,
                    l.type_name
                );
                std::process::abort();
            }
            Overflow::Redirect(f) | Overflow::Transform(f) => {
                let depth = DEPTH.with(Cell::get);
                if depth < MAX_REDIRECT_DEPTH {
                    DEPTH.with(|d| d.set(depth + 1));
                    f(msg);
                    DEPTH.with(|d| d.set(depth));
                }
            }
        }
        None
    }

    /// A message of type `M` left the queue.
    #[inline]
    pub(crate) fn release<M: 'static>(&self) {
        if let Some(l) = self.find::<M>() {
            l.count.fetch_sub(1, Ordering::Relaxed);
        }
    }
}
