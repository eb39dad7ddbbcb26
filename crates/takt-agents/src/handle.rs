//! Message-typed handles: send `M` or ask `Q` for an `R` without knowing
//! the type of the agent (or mailbox, or transport) behind the handle.
//!
//! A [`Recipient<M>`] is "something that accepts `M`": an agent's address
//! ([`Addr::recipient`]), a named mailbox ([`Mbox::recipient`]), or any
//! [`Accept<M>`] implementation, such as a bridge to another process. A
//! [`Requester<Q, R>`] answers queries `Q` with a reply `R`: an agent with
//! an `on_ask::<Q, R>` handler ([`Addr::requester`]) or any
//! [`Answer<Q, R>`] implementation, which completes the reply through a
//! [`Promise`](crate::Promise) made by [`pending`](crate::pending).
//!
//! A handle is one `Arc` of a trait object: cloning it is an atomic
//! increment and sending through it one virtual call on top of what the
//! target's own send costs ([`Addr::send`] is untouched: its fast path
//! stays as it is for code that holds an `Addr`).
//!
//! ```
//! use std::time::Duration;
//! use takt_agents::{Agent, Config, Ctx, Definer, Recipient, Requester, Runtime};
//!
//! struct Counter(u64);
//! impl Agent for Counter {
//!     fn define(def: &mut Definer<Self>) {
//!         def.on(|me: &mut Counter, _: &mut Ctx<Counter>, n: u64| me.0 += n)
//!             .on_ask(|me: &mut Counter, _: &mut Ctx<Counter>, _: ()| me.0);
//!     }
//! }
//! let rt = Runtime::new(Config::default());
//! let disp = rt.one_thread("main").unwrap();
//! let mut coop = rt.coop("c");
//! let c = coop.add(Counter(0), &disp).unwrap();
//! coop.register().unwrap();
//!
//! // Code that knows only the message types:
//! let add: Recipient<u64> = c.recipient();
//! let total: Requester<(), u64> = c.requester();
//! add.send(40);
//! add.send(2);
//! assert_eq!(total.ask_timeout((), Duration::from_secs(10)).wait(), Ok(42));
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::{Addr, Agent, Mbox, Message, Pending};

/// Something that accepts messages of type `M`.
///
/// Contract: [`accept`](Self::accept) never blocks the caller; a message it
/// cannot take (target finished, queue full, too large) is dropped and
/// counted by the implementation, never silently lost.
pub trait Accept<M: Message>: Send + Sync + 'static {
    /// Takes `msg` (queues it, publishes it, forwards it).
    fn accept(&self, msg: M);

    /// Whether messages can still arrive (a hint: it may change at any time).
    fn is_open(&self) -> bool {
        true
    }
}

/// Something that answers a query `Q` with a reply `R`.
///
/// Contract: [`answer`](Self::answer) never blocks; the returned
/// [`Pending`] completes with the reply or an error (with
/// [`AskError::Timeout`](crate::AskError::Timeout) after `timeout` when one
/// is given), never stays open forever once the implementation cannot answer.
pub trait Answer<Q: Message, R: Message>: Send + Sync + 'static {
    /// Sends `q`; the reply (or why there is none) completes the `Pending`.
    fn answer(&self, q: Q, timeout: Option<Duration>) -> Pending<R>;
}

/// A handle that accepts messages of type `M`; see the module docs.
pub struct Recipient<M: Message> {
    inner: Arc<dyn Accept<M>>,
}

impl<M: Message> Clone for Recipient<M> {
    fn clone(&self) -> Self {
        Recipient {
            inner: self.inner.clone(),
        }
    }
}

impl<M: Message> fmt::Debug for Recipient<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Recipient<{}>", std::any::type_name::<M>())
    }
}

impl<M: Message> Recipient<M> {
    /// A recipient backed by `target`.
    pub fn new(target: impl Accept<M>) -> Self {
        Recipient {
            inner: Arc::new(target),
        }
    }

    /// Sends `msg` to the target; never blocks.
    #[inline]
    pub fn send(&self, msg: M) {
        self.inner.accept(msg)
    }

    /// Whether messages can still arrive (a hint).
    pub fn is_open(&self) -> bool {
        self.inner.is_open()
    }
}

/// A handle that answers queries `Q` with replies `R`; see the module docs.
pub struct Requester<Q: Message, R: Message> {
    inner: Arc<dyn Answer<Q, R>>,
}

impl<Q: Message, R: Message> Clone for Requester<Q, R> {
    fn clone(&self) -> Self {
        Requester {
            inner: self.inner.clone(),
        }
    }
}

impl<Q: Message, R: Message> fmt::Debug for Requester<Q, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Requester<{}, {}>",
            std::any::type_name::<Q>(),
            std::any::type_name::<R>()
        )
    }
}

impl<Q: Message, R: Message> Requester<Q, R> {
    /// A requester backed by `target`.
    pub fn new(target: impl Answer<Q, R>) -> Self {
        Requester {
            inner: Arc::new(target),
        }
    }

    /// Sends query `q`; the reply comes through the [`Pending`].
    pub fn ask(&self, q: Q) -> Pending<R> {
        self.inner.answer(q, None)
    }

    /// Like [`ask`](Self::ask), completing with
    /// [`AskError::Timeout`](crate::AskError::Timeout) after `timeout`.
    pub fn ask_timeout(&self, q: Q, timeout: Duration) -> Pending<R> {
        self.inner.answer(q, Some(timeout))
    }
}

impl<A: Agent, M: Message> Accept<M> for Addr<A> {
    #[inline]
    fn accept(&self, msg: M) {
        self.send(msg)
    }
    fn is_open(&self) -> bool {
        self.is_alive()
    }
}

impl<M: Message + Clone> Accept<M> for Mbox<M> {
    fn accept(&self, msg: M) {
        self.publish(msg);
    }
}

impl<A: Agent, Q: Message, R: Message> Answer<Q, R> for Addr<A> {
    fn answer(&self, q: Q, timeout: Option<Duration>) -> Pending<R> {
        match timeout {
            Some(t) => self.ask_timeout::<Q, R>(q, t),
            None => self.ask::<Q, R>(q),
        }
    }
}

impl<A: Agent> Addr<A> {
    /// This address as a [`Recipient<M>`]. The agent should handle `M`: a
    /// message it has no handler for is dropped as by [`send`](Self::send).
    pub fn recipient<M: Message>(&self) -> Recipient<M> {
        Recipient::new(self.clone())
    }

    /// This address as a [`Requester<Q, R>`], answered by the agent's
    /// `on_ask::<Q, R>` handler.
    pub fn requester<Q: Message, R: Message>(&self) -> Requester<Q, R> {
        Requester::new(self.clone())
    }
}

impl<M: Message + Clone> Mbox<M> {
    /// This mailbox as a [`Recipient<M>`]: sending publishes to every
    /// subscriber.
    pub fn recipient(&self) -> Recipient<M> {
        Recipient::new(self.clone())
    }
}
