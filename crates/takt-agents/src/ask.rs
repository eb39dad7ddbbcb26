//! Request/reply, and the interop handle for code outside the runtime.
//!
//! [`Addr::ask`] sends a query and returns a [`Pending`] reply, which is
//! both a [`Future`] (for any executor: it only uses the standard `Waker`)
//! and a blocking wait for plain threads ([`Pending::wait`],
//! [`Pending::wait_timeout`]). The receiving agent answers with a handler
//! declared by `on_ask::<Q, R>` that returns the reply. A query that is
//! dropped unanswered (no handler in the agent's state, agent finished,
//! over a limit) completes the reply with [`AskError::NoReply`] at once, so
//! nobody waits for a reply that cannot come.
//!
//! ```
//! use std::time::Duration;
//! use takt_agents::{Agent, Config, Ctx, Definer, Runtime};
//!
//! struct Doubler;
//! impl Agent for Doubler {
//!     fn define(def: &mut Definer<Self>) {
//!         def.on_ask(|_: &mut Doubler, _: &mut Ctx<Doubler>, x: u64| x * 2);
//!     }
//! }
//!
//! let rt = Runtime::new(Config::default());
//! let disp = rt.one_thread("main").unwrap();
//! let mut coop = rt.coop("d");
//! let d = coop.add(Doubler, &disp).unwrap();
//! coop.register().unwrap();
//! let r: u64 = d.ask::<u64, u64>(21).wait_timeout(Duration::from_secs(10)).unwrap();
//! assert_eq!(r, 42);
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::agent::Sink;
use crate::state::AskHandler;
use crate::{worker, Addr, Agent, Ctx, Message};

/// Why no reply came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AskError {
    /// The timeout passed first.
    Timeout,
    /// The query was dropped unanswered (no handler, agent finished, limit).
    NoReply,
    /// Waiting blocking on the target's own dispatcher thread would deadlock.
    WouldDeadlock,
    /// The runtime could not arm the timeout timer.
    NoTimer,
    /// Nobody can answer at that address (a remote address without
    /// responders, a node known to be down): failed at once, not after the
    /// timeout.
    Unreachable,
    /// A reply came but could not be accepted (a transport could not decode
    /// it, or refused the query before sending it: queue full, too large).
    Rejected,
}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AskError::Timeout => "no reply within the timeout",
            AskError::NoReply => "the query was dropped unanswered",
            AskError::WouldDeadlock => {
                "a blocking wait on the target agent's own dispatcher thread would deadlock"
            }
            AskError::NoTimer => "the timer thread could not be started",
            AskError::Unreachable => "nobody can answer at that address",
            AskError::Rejected => "the query or its reply was rejected on the way",
        })
    }
}

impl std::error::Error for AskError {}

enum SlotState<R> {
    Waiting(Option<Waker>),
    Done(Result<R, AskError>),
    Taken,
}

struct Slot<R> {
    state: Mutex<SlotState<R>>,
    cv: Condvar,
    /// Threads blocked in [`Pending::wait`] on `cv`. Read and written only
    /// while `state` is locked (the mutex orders it; relaxed suffices), so
    /// a completion that finds it zero skips the futex wake: nobody can
    /// start waiting without first seeing `Done` under the same lock.
    sleepers: AtomicU32,
}

impl<R> Slot<R> {
    fn complete(&self, r: Result<R, AskError>) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let SlotState::Waiting(w) = &mut *s {
            let w = w.take();
            *s = SlotState::Done(r);
            let sleepers = self.sleepers.load(Ordering::Relaxed);
            drop(s);
            if sleepers > 0 {
                self.cv.notify_all();
            }
            if let Some(w) = w {
                w.wake();
            }
        }
    }
}

/// A query on its way: the message an `on_ask` handler receives.
pub struct Ask<Q, R> {
    query: Q,
    reply: Replier<R>,
}

impl<Q, R> fmt::Debug for Ask<Q, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ask").finish_non_exhaustive()
    }
}

/// The reply end; dropping it unanswered completes with `NoReply`.
struct Replier<R> {
    slot: Option<Arc<Slot<R>>>,
}

impl<R> Replier<R> {
    fn send(mut self, r: R) {
        if let Some(s) = self.slot.take() {
            s.complete(Ok(r));
        }
    }
}

impl<R> Drop for Replier<R> {
    fn drop(&mut self) {
        if let Some(s) = self.slot.take() {
            s.complete(Err(AskError::NoReply));
        }
    }
}

/// The answering end of a [`Pending`] made by [`pending`]: code outside the
/// runtime (a bridge to another process) completes a reply with it.
///
/// Dropping it unanswered completes the reply with [`AskError::NoReply`].
pub struct Promise<R> {
    reply: Replier<R>,
}

impl<R> fmt::Debug for Promise<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Promise").finish_non_exhaustive()
    }
}

impl<R> Promise<R> {
    /// Completes the reply with `r`.
    pub fn fulfil(self, r: R) {
        self.reply.send(r)
    }

    /// Completes the reply with the error `e`.
    pub fn fail(mut self, e: AskError) {
        if let Some(s) = self.reply.slot.take() {
            s.complete(Err(e));
        }
    }

    /// Whether the [`Pending`] end is gone (nobody waits for the reply).
    pub fn is_abandoned(&self) -> bool {
        self.reply
            .slot
            .as_ref()
            .is_none_or(|s| Arc::strong_count(s) == 1)
    }
}

/// A reply slot not tied to an agent: the [`Pending`] end waits (blocking or
/// as a future), the [`Promise`] end completes it from anywhere.
pub fn pending<R>() -> (Promise<R>, Pending<R>) {
    let slot = new_slot();
    (
        Promise {
            reply: Replier {
                slot: Some(slot.clone()),
            },
        },
        Pending {
            slot,
            same_thread: false,
        },
    )
}

fn new_slot<R>() -> Arc<Slot<R>> {
    Arc::new(Slot {
        state: Mutex::new(SlotState::Waiting(None)),
        cv: Condvar::new(),
        sleepers: AtomicU32::new(0),
    })
}

/// Invokes an `on_ask` handler.
///
/// # Safety
/// `f` must be an `AskHandler<A, Q, R>` and `msg` an `Ask<Q, R>` given up.
pub(crate) unsafe fn invoke_ask<A: Agent, Q: Message, R: Message>(
    f: *const (),
    agent: &mut A,
    ctx: &mut Ctx<'_, A>,
    msg: *mut u8,
) {
    // SAFETY: registered by `on_ask::<Q, R>` from an `AskHandler<A, Q, R>`.
    let f: AskHandler<A, Q, R> =
        unsafe { std::mem::transmute::<*const (), AskHandler<A, Q, R>>(f) };
    // SAFETY: caller's contract.
    let Ask { query, reply } = unsafe { msg.cast::<Ask<Q, R>>().read() };
    let r = f(agent, ctx, query);
    reply.send(r);
}

/// A reply to come: a `Future`, or wait for it blocking.
pub struct Pending<R> {
    slot: Arc<Slot<R>>,
    /// Set when the target runs on the calling thread's dispatcher thread.
    same_thread: bool,
}

impl<R> fmt::Debug for Pending<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pending").finish_non_exhaustive()
    }
}

impl<R> Pending<R> {
    fn take(&self, s: &mut SlotState<R>) -> Option<Result<R, AskError>> {
        match std::mem::replace(s, SlotState::Taken) {
            SlotState::Done(r) => Some(r),
            other => {
                *s = other;
                None
            }
        }
    }

    /// Blocks until the reply comes.
    pub fn wait(self) -> Result<R, AskError> {
        self.wait_until(None)
    }

    /// Blocks until the reply comes or `timeout` passes.
    pub fn wait_timeout(self, timeout: Duration) -> Result<R, AskError> {
        self.wait_until(Some(Instant::now() + timeout))
    }

    fn wait_until(self, deadline: Option<Instant>) -> Result<R, AskError> {
        let mut s = self.slot.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(r) = self.take(&mut s) {
                return r;
            }
            if self.same_thread {
                return Err(AskError::WouldDeadlock);
            }
            let left = match deadline {
                None => None,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return Err(AskError::Timeout),
                },
            };
            // Relaxed: `sleepers` is only touched under the slot's lock.
            self.slot.sleepers.fetch_add(1, Ordering::Relaxed);
            s = match left {
                None => self.slot.cv.wait(s).unwrap_or_else(|p| p.into_inner()),
                Some(left) => {
                    self.slot
                        .cv
                        .wait_timeout(s, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
            self.slot.sleepers.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl<R> Future for Pending<R> {
    type Output = Result<R, AskError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut s = self.slot.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = self.take(&mut s) {
            return Poll::Ready(r);
        }
        match &mut *s {
            SlotState::Waiting(w) => {
                if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *w = Some(cx.waker().clone());
                }
                Poll::Pending
            }
            // Polled after completion.
            _ => Poll::Ready(Err(AskError::NoReply)),
        }
    }
}

impl<A: Agent> Addr<A> {
    /// Sends query `q`; the agent answers with its `on_ask::<Q, R>` handler.
    pub fn ask<Q: Message, R: Message>(&self, q: Q) -> Pending<R> {
        let slot = new_slot();
        let same_thread = match &self.cell().hdr.sink {
            Sink::Thread(ws) => worker::local_core(ws).is_some(),
            Sink::Pool(_) => false,
        };
        self.send(Ask::<Q, R> {
            query: q,
            reply: Replier {
                slot: Some(slot.clone()),
            },
        });
        Pending { slot, same_thread }
    }

    /// Like [`ask`](Self::ask), and the reply completes with
    /// [`AskError::Timeout`] after `timeout` (also when awaited as a
    /// future, through the runtime's timer thread).
    pub fn ask_timeout<Q: Message, R: Message>(&self, q: Q, timeout: Duration) -> Pending<R> {
        let p = self.ask::<Q, R>(q);
        let slot = Arc::downgrade(&p.slot);
        let armed = self.cell().hdr.coop.rt.timer().map(|t| {
            t.schedule_fn(timeout, move || {
                if let Some(s) = slot.upgrade() {
                    s.complete(Err(AskError::Timeout));
                }
            })
        });
        if armed.is_err() {
            p.slot.complete(Err(AskError::NoTimer));
        }
        p
    }
}
