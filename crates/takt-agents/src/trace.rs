//! Optional message tracing: who sent what to whom, filtered.
//!
//! When no runtime in the process has a tracer installed, the send path
//! pays one relaxed load of a global counter and a never-taken branch.
//! With a tracer, every send, delivery and unhandled message that passes
//! the filter is handed to the tracer's sink on the thread where it happens.
//!
//! ```
//! use takt_agents::{TraceFilter, Tracer};
//! let tracer = Tracer::new(TraceFilter::default().message_type("Ping"), |ev| {
//!     eprintln!("{ev}");
//! });
//! # let _ = tracer;
//! ```

use std::cell::Cell;
use std::fmt;

use std::sync::atomic::Ordering;

use crate::agent::Header;
use crate::AgentId;

/// Runtimes in the process with a tracer installed (a std atomic: a
/// static, outside any modeled protocol).
static TRACING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

thread_local! {
    /// The agent whose handler runs on this thread (only kept while tracing).
    static CURRENT: Cell<Option<AgentId>> = const { Cell::new(None) };
}

#[inline(always)]
pub(crate) fn active() -> bool {
    TRACING.load(Ordering::Relaxed) != 0
}

pub(crate) fn switch(was: bool, now: bool) {
    match (was, now) {
        (false, true) => {
            TRACING.fetch_add(1, Ordering::Relaxed);
        }
        (true, false) => {
            TRACING.fetch_sub(1, Ordering::Relaxed);
        }
        _ => {}
    }
}

/// What happened to a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    /// Queued for (or run inline by) the receiver.
    Send,
    /// The receiver's handler is about to run.
    Deliver,
    /// The receiver had no handler in its state.
    Unhandled,
}

/// One traced event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// What happened.
    pub kind: TraceKind,
    /// The message's type.
    pub message_type: &'static str,
    /// The agent whose handler sent it (None: from outside any handler).
    pub from: Option<AgentId>,
    /// The receiver.
    pub to: AgentId,
    /// The receiver's type.
    pub to_type: &'static str,
}

impl fmt::Display for TraceEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let from = self.from.map_or("outside".to_string(), |a| a.to_string());
        write!(
            f,
            "{:?} {} {} -> {}{}",
            self.kind, self.message_type, from, self.to_type, self.to
        )
    }
}

/// Which events to trace; every set criterion must match.
#[derive(Clone, Debug, Default)]
pub struct TraceFilter {
    message_type: Option<String>,
    agent: Option<AgentId>,
    kinds: Option<Vec<TraceKind>>,
}

impl TraceFilter {
    /// Messages whose type name contains `s`.
    pub fn message_type(mut self, s: impl Into<String>) -> Self {
        self.message_type = Some(s.into());
        self
    }

    /// Events where `agent` is the sender or the receiver.
    pub fn agent(mut self, agent: AgentId) -> Self {
        self.agent = Some(agent);
        self
    }

    /// Only these kinds.
    pub fn kinds(mut self, kinds: &[TraceKind]) -> Self {
        self.kinds = Some(kinds.to_vec());
        self
    }

    fn accepts(&self, e: &TraceEvent) -> bool {
        self.message_type
            .as_ref()
            .is_none_or(|s| e.message_type.contains(s.as_str()))
            && self.agent.is_none_or(|a| e.to == a || e.from == Some(a))
            && self.kinds.as_ref().is_none_or(|k| k.contains(&e.kind))
    }
}

type Sink = Box<dyn Fn(&TraceEvent) + Send + Sync>;

/// A filter and a sink.
pub struct Tracer {
    filter: TraceFilter,
    sink: Sink,
}

impl fmt::Debug for Tracer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracer")
            .field("filter", &self.filter)
            .finish()
    }
}

impl Tracer {
    /// Calls `sink` for every event `filter` accepts.
    pub fn new(filter: TraceFilter, sink: impl Fn(&TraceEvent) + Send + Sync + 'static) -> Self {
        Tracer {
            filter,
            sink: Box::new(sink),
        }
    }
}

#[cold]
fn emit(h: &Header, kind: TraceKind, message_type: &'static str) {
    let tracer = h
        .coop
        .rt
        .tracer
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let Some(t) = tracer else { return };
    let e = TraceEvent {
        kind,
        message_type,
        from: CURRENT.with(Cell::get),
        to: h.id,
        to_type: (h.vt.type_name)(),
    };
    if t.filter.accepts(&e) {
        (t.sink)(&e);
    }
}

#[cold]
pub(crate) fn send(h: &Header, message_type: &'static str) {
    emit(h, TraceKind::Send, message_type);
}

#[cold]
pub(crate) fn deliver(h: &Header, message_type: &'static str) {
    emit(h, TraceKind::Deliver, message_type);
    CURRENT.with(|c| c.set(Some(h.id)));
}

#[cold]
pub(crate) fn unhandled(h: &Header, message_type: &'static str) {
    emit(h, TraceKind::Unhandled, message_type);
}
