//! Named publish/subscribe mailboxes: every subscriber gets each message.
//!
//! A mailbox is named and typed: [`RuntimeHandle::mbox`] returns the same
//! mailbox for the same name, and refuses a second message type under a
//! name already used. Publishing clones the message for every subscriber
//! but the last, which gets the original. Subscribers that have finished
//! are dropped from the list on the next publish.
//!
//! ```
//! use takt_agents::{Agent, Config, Ctx, Definer, Runtime};
//!
//! #[derive(Clone)]
//! struct Quote(u32);
//! struct Watcher;
//! impl Agent for Watcher {
//!     fn define(def: &mut Definer<Self>) {
//!         def.on(|_: &mut Watcher, _: &mut Ctx<Watcher>, _q: Quote| {});
//!     }
//! }
//! let rt = Runtime::new(Config::default());
//! let disp = rt.one_thread("main").unwrap();
//! let quotes = rt.mbox::<Quote>("quotes").unwrap();
//! let mut coop = rt.coop("watchers");
//! let w = coop.add(Watcher, &disp).unwrap();
//! coop.register().unwrap();
//! quotes.subscribe(&w);
//! assert_eq!(quotes.publish(Quote(7)), 1);
//! ```

use std::any::TypeId;
use std::fmt;
use std::sync::{Arc, RwLock};

use crate::{Addr, Agent, AgentId, Message, RuntimeHandle};

trait Subscriber<M>: Send + Sync {
    fn id(&self) -> AgentId;
    fn alive(&self) -> bool;
    fn deliver(&self, m: M);
}

impl<A: Agent, M: Message> Subscriber<M> for Addr<A> {
    fn id(&self) -> AgentId {
        Addr::id(self)
    }
    fn alive(&self) -> bool {
        self.is_alive()
    }
    fn deliver(&self, m: M) {
        self.send(m)
    }
}

struct Inner<M> {
    name: String,
    subs: RwLock<Vec<Arc<dyn Subscriber<M>>>>,
}

/// A named mailbox for messages of type `M`.
pub struct Mbox<M: Message + Clone> {
    inner: Arc<Inner<M>>,
}

impl<M: Message + Clone> Clone for Mbox<M> {
    fn clone(&self) -> Self {
        Mbox {
            inner: self.inner.clone(),
        }
    }
}

impl<M: Message + Clone> fmt::Debug for Mbox<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mbox")
            .field("name", &self.inner.name)
            .field("subscribers", &self.subscribers())
            .finish()
    }
}

impl<M: Message + Clone> Mbox<M> {
    /// The mailbox's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Adds `addr` as a subscriber (once; a second subscribe is a no-op).
    pub fn subscribe<A: Agent>(&self, addr: &Addr<A>) {
        let mut s = self.inner.subs.write().unwrap_or_else(|p| p.into_inner());
        if !s.iter().any(|x| x.id() == addr.id()) {
            s.push(Arc::new(addr.clone()));
        }
    }

    /// Removes the subscriber `id`; returns whether it was subscribed.
    pub fn unsubscribe(&self, id: AgentId) -> bool {
        let mut s = self.inner.subs.write().unwrap_or_else(|p| p.into_inner());
        let before = s.len();
        s.retain(|x| x.id() != id);
        s.len() != before
    }

    /// The number of subscribers.
    pub fn subscribers(&self) -> usize {
        self.inner
            .subs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    /// Sends `msg` to every live subscriber; returns how many it went to.
    pub fn publish(&self, msg: M) -> usize {
        let subs: Vec<Arc<dyn Subscriber<M>>> = {
            let s = self.inner.subs.read().unwrap_or_else(|p| p.into_inner());
            s.iter().filter(|x| x.alive()).cloned().collect()
        };
        if subs.len() != self.subscribers() {
            self.inner
                .subs
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|x| x.alive());
        }
        let n = subs.len();
        if let Some((last, rest)) = subs.split_last() {
            for s in rest {
                s.deliver(msg.clone());
            }
            last.deliver(msg);
        }
        n
    }
}

/// A name is already used by a mailbox of another message type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MboxTypeMismatch {
    /// The name.
    pub name: String,
}

impl fmt::Display for MboxTypeMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "mailbox '{}' already exists for another message type",
            self.name
        )
    }
}

impl std::error::Error for MboxTypeMismatch {}

impl RuntimeHandle {
    /// The mailbox named `name` for messages `M` (created on first use).
    pub fn mbox<M: Message + Clone>(&self, name: &str) -> Result<Mbox<M>, MboxTypeMismatch> {
        let mut map = self
            .shared()
            .mboxes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some((t, any)) = map.get(name) {
            if *t != TypeId::of::<M>() {
                return Err(MboxTypeMismatch {
                    name: name.to_string(),
                });
            }
            let inner = any
                .clone()
                .downcast::<Inner<M>>()
                .map_err(|_| MboxTypeMismatch {
                    name: name.to_string(),
                })?;
            return Ok(Mbox { inner });
        }
        let inner = Arc::new(Inner {
            name: name.to_string(),
            subs: RwLock::new(Vec::new()),
        });
        map.insert(name.to_string(), (TypeId::of::<M>(), inner.clone()));
        Ok(Mbox { inner })
    }
}
