//! Cooperations: agents registered and deregistered as a group.
//!
//! A [`CoopBuilder`] collects agents; each agent's start event is queued
//! when it is added, so `on_start` is always an agent's first event, even
//! for messages sent to its address before [`CoopBuilder::register`]
//! returns. Registering a child cooperation ties its life to its parent:
//! deregistering the parent deregisters the children first, and the parent
//! is *done* only when all its agents have finished and all its children
//! are done.
//!
//! Registration is cheap by construction: the agent's handler table is
//! compiled once per type, a cell is one allocation, and the start event
//! goes through the ordinary send path.
//!
//! ```
//! use takt_agents::{Agent, Config, Ctx, Definer, Runtime};
//!
//! struct Hello;
//! impl Agent for Hello {
//!     fn define(_: &mut Definer<Self>) {}
//!     fn on_start(&mut self, ctx: &mut Ctx<Self>) {
//!         ctx.deregister_coop(); // done at once
//!     }
//! }
//!
//! let rt = Runtime::new(Config::default());
//! let disp = rt.one_thread("main").unwrap();
//! let mut coop = rt.coop("hello");
//! coop.add(Hello, &disp).unwrap();
//! let handle = coop.register().unwrap();
//! assert!(handle.wait_timeout(std::time::Duration::from_secs(10)));
//! rt.shutdown();
//! ```

use std::any::TypeId;
use std::cell::UnsafeCell;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use takt_sched::sync::{AtomicUsize, Ordering};

use crate::addr::post_signal;
use crate::agent::{post_start, AgentCell, AgentRef, Header, Sink, LAST_PRIO};
use crate::dispatcher::{Binding, BindingError};
use crate::envelope::REF_TAG;
use crate::limits::Limits;
use crate::runtime::RtShared;
use crate::state::{behaviour_of, Behaviour};
use crate::{Addr, Agent, AgentId, DefineError, Runtime, RuntimeHandle};

// Id counters are plain std atomics (not part of any modeled protocol;
// loom's atomics cannot live in statics).
static NEXT_AGENT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
static NEXT_COOP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Building,
    Registered,
    Deregistering,
    Done,
}

struct Members {
    status: Status,
    agents: Vec<AgentRef>,
    children: Vec<Arc<CoopShared>>,
}

/// A cooperation, shared by its agents, its handle and its parent.
pub(crate) struct CoopShared {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) rt: Arc<RtShared>,
    parent: Option<Arc<CoopShared>>,
    members: Mutex<Members>,
    /// Agents not yet finished + children not yet done + 1 while not
    /// deregistering. The transition to 0 completes the cooperation.
    live: AtomicUsize,
    done: Mutex<bool>,
    done_cv: Condvar,
}

impl fmt::Debug for CoopShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Coop")
            .field("id", &self.id)
            .field("name", &self.name)
            .finish()
    }
}

impl CoopShared {
    fn new(rt: Arc<RtShared>, name: String, parent: Option<Arc<CoopShared>>) -> Arc<Self> {
        Arc::new(CoopShared {
            id: NEXT_COOP.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            name,
            rt,
            parent,
            members: Mutex::new(Members {
                status: Status::Building,
                agents: Vec::new(),
                children: Vec::new(),
            }),
            live: AtomicUsize::new(1),
            done: Mutex::new(false),
            done_cv: Condvar::new(),
        })
    }

    fn members(&self) -> std::sync::MutexGuard<'_, Members> {
        self.members.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Finishes every agent (children first). Idempotent.
    pub(crate) fn deregister(&self) {
        let (agents, children) = {
            let mut m = self.members();
            match m.status {
                Status::Deregistering | Status::Done => return,
                Status::Building | Status::Registered => {}
            }
            m.status = Status::Deregistering;
            (
                std::mem::take(&mut m.agents),
                std::mem::take(&mut m.children),
            )
        };
        for c in children {
            c.deregister();
        }
        for a in agents {
            let h: *const Header = a.into_raw();
            // SAFETY: `h` is live; the count we give up travels with the event.
            let hdr = unsafe { &*h };
            post_signal(hdr, hdr.vt.finish, h as usize | REF_TAG, true, LAST_PRIO);
        }
        self.release_one();
    }

    pub(crate) fn agent_finished(&self) {
        self.release_one();
    }

    fn release_one(&self) {
        // AcqRel: the last decrement sees every finished agent's effects.
        if self.live.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.complete();
        }
    }

    fn complete(&self) {
        self.members().status = Status::Done;
        *self.done.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.done_cv.notify_all();
        if let Some(p) = &self.parent {
            p.release_one();
        }
        self.rt.coop_done(self.id);
    }

    pub(crate) fn is_done(&self) -> bool {
        *self.done.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn wait_until(&self, deadline: Option<Instant>) -> bool {
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        while !*done {
            match deadline {
                None => done = self.done_cv.wait(done).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return false;
                    }
                    done = self
                        .done_cv
                        .wait_timeout(done, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            }
        }
        true
    }
}

/// Why an agent or a cooperation could not be registered.
#[derive(Debug)]
pub enum RegError {
    /// The agent type's states or handlers are inconsistent.
    Define(DefineError),
    /// The binding does not fit the dispatcher (e.g. no group name for an
    /// active_group dispatcher, a priority above 7), or a dispatcher was
    /// asked for zero threads.
    Binding(BindingError),
    /// A dispatcher thread could not be created.
    Thread(takt_sched::SchedError),
    /// The parent cooperation is being deregistered or the runtime is
    /// shutting down.
    Closed(&'static str),
}

impl fmt::Display for RegError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegError::Define(e) => write!(f, "{e}"),
            RegError::Binding(s) => write!(f, "bad binding: {s}"),
            RegError::Thread(e) => write!(f, "cannot start dispatcher thread: {e}"),
            RegError::Closed(s) => write!(f, "cannot register: {s}"),
        }
    }
}

impl std::error::Error for RegError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // shown as the definition error itself (see `Display`)
            RegError::Define(_) => None,
            RegError::Binding(e) => Some(e),
            RegError::Thread(e) => Some(e),
            RegError::Closed(_) => None,
        }
    }
}

/// Builds a cooperation (see the module docs).
pub struct CoopBuilder {
    shared: Arc<CoopShared>,
    agents: Vec<AgentRef>,
    registered: bool,
    /// Last agent type added and its behaviour (skips the global cache).
    last: Option<(TypeId, *const ())>,
}

// SAFETY: `last` caches a `&'static Behaviour<_>`, which is Sync.
unsafe impl Send for CoopBuilder {}

impl fmt::Debug for CoopBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CoopBuilder")
            .field("name", &self.shared.name)
            .field("agents", &self.agents.len())
            .finish()
    }
}

impl CoopBuilder {
    pub(crate) fn new(rt: Arc<RtShared>, name: String, parent: Option<Arc<CoopShared>>) -> Self {
        CoopBuilder {
            shared: CoopShared::new(rt, name, parent),
            agents: Vec::with_capacity(16),
            registered: false,
            last: None,
        }
    }

    fn behaviour<A: Agent>(&mut self) -> Result<&'static Behaviour<A>, RegError> {
        let key = TypeId::of::<A>();
        if let Some((k, p)) = self.last {
            if k == key {
                // SAFETY: stored below from a `&'static Behaviour<A>` for this TypeId.
                return Ok(unsafe { &*(p as *const Behaviour<A>) });
            }
        }
        let b = behaviour_of::<A>().map_err(RegError::Define)?;
        self.last = Some((key, b as *const Behaviour<A> as *const ()));
        Ok(b)
    }

    /// Adds `agent`, bound as `binding` says, and queues its start event.
    pub fn add<A: Agent>(
        &mut self,
        agent: A,
        binding: impl Into<Binding>,
    ) -> Result<Addr<A>, RegError> {
        self.add_inner(agent, binding.into(), None)
    }

    /// Like [`add`](Self::add), with per-message-type limits.
    pub fn add_limited<A: Agent>(
        &mut self,
        agent: A,
        binding: impl Into<Binding>,
        limits: Limits,
    ) -> Result<Addr<A>, RegError> {
        self.add_inner(agent, binding.into(), Some(Box::new(limits)))
    }

    fn add_inner<A: Agent>(
        &mut self,
        agent: A,
        binding: Binding,
        limits: Option<Box<Limits>>,
    ) -> Result<Addr<A>, RegError> {
        let behaviour = self.behaviour::<A>()?;
        let rt = &self.shared.rt;
        if rt.is_shutting_down() {
            return Err(RegError::Closed("the runtime is shutting down"));
        }
        let resolved = binding.resolve()?;
        let plain = !rt.config.handler_timing && limits.is_none();
        let fast_send =
            limits.is_none() && matches!(&resolved.sink, Sink::Thread(ws) if !ws.has_priorities());
        let cell = Arc::new(AgentCell {
            hdr: Header::new(
                resolved.sink,
                limits,
                self.shared.clone(),
                &AgentCell::<A>::VTABLE,
                AgentId(NEXT_AGENT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)),
                fast_send,
                plain,
                resolved.prio,
                rt.config.handler_timing,
                resolved.owns_worker,
                behaviour,
            ),
            agent: UnsafeCell::new(agent),
        });
        post_start(&cell);
        // SAFETY: the new count is owned by the AgentRef (the cooperation's).
        let r = unsafe {
            let p = Arc::into_raw(cell.clone());
            AgentRef::from_raw(p.cast::<Header>())
        };
        self.agents.push(r);
        Ok(Addr::from_cell(cell))
    }

    /// The number of agents added so far.
    pub fn len(&self) -> usize {
        self.agents.len()
    }

    /// Whether no agent was added.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }

    /// Registers the cooperation. Fails if the parent is being deregistered
    /// or the runtime is shutting down; the agents are then finished.
    ///
    /// A parent that is still being built is no obstacle: its agents run
    /// from the moment they are added, so one of them may register
    /// children from its start event before the parent's own `register`.
    pub fn register(mut self) -> Result<CoopHandle, RegError> {
        self.registered = true;
        let shared = self.shared.clone();
        let agents = std::mem::take(&mut self.agents);
        shared.live.fetch_add(agents.len(), Ordering::Relaxed);
        {
            let mut m = shared.members();
            m.agents = agents;
            m.status = Status::Registered;
        }
        let attached = match &shared.parent {
            Some(p) => {
                let mut pm = p.members();
                match pm.status {
                    // A parent still being built counts: its agents run from
                    // the moment they are added (their start events are
                    // queued then), so one may register children before its
                    // own cooperation is registered. If the parent is then
                    // dropped unregistered, its deregistration takes them.
                    Status::Building | Status::Registered => {
                        p.live.fetch_add(1, Ordering::Relaxed);
                        pm.children.push(shared.clone());
                        Ok(())
                    }
                    Status::Deregistering | Status::Done => {
                        Err(RegError::Closed("the parent cooperation is deregistering"))
                    }
                }
            }
            None => shared.rt.add_root(shared.clone()),
        };
        match attached {
            Ok(()) => Ok(CoopHandle { shared }),
            Err(e) => {
                shared.deregister();
                Err(e)
            }
        }
    }
}

impl Drop for CoopBuilder {
    fn drop(&mut self) {
        if !self.registered {
            // Never registered: finish the agents already started.
            let agents = std::mem::take(&mut self.agents);
            self.shared.live.fetch_add(agents.len(), Ordering::Relaxed);
            self.shared.members().agents = agents;
            self.shared.deregister();
        }
    }
}

/// A registered cooperation.
#[derive(Clone)]
pub struct CoopHandle {
    shared: Arc<CoopShared>,
}

impl fmt::Debug for CoopHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.shared.fmt(f)
    }
}

impl CoopHandle {
    pub(crate) fn from_shared(shared: Arc<CoopShared>) -> Self {
        CoopHandle { shared }
    }

    /// The cooperation's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Deregisters it: children first, then every agent finishes after the
    /// events queued before its finish event. Returns at once; see
    /// [`wait`](Self::wait).
    pub fn deregister(&self) {
        self.shared.deregister();
    }

    /// Whether every agent has finished and every child is done.
    pub fn is_done(&self) -> bool {
        self.shared.is_done()
    }

    /// Blocks until done.
    pub fn wait(&self) {
        self.shared.wait_until(None);
    }

    /// Blocks until done or `timeout`; returns whether it is done.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        self.shared.wait_until(Some(Instant::now() + timeout))
    }

    /// A builder for a child cooperation.
    pub fn child(&self, name: impl Into<String>) -> CoopBuilder {
        CoopBuilder::new(
            self.shared.rt.clone(),
            name.into(),
            Some(self.shared.clone()),
        )
    }
}

impl Runtime {
    /// A builder for a top-level cooperation.
    pub fn coop(&self, name: impl Into<String>) -> CoopBuilder {
        self.handle_ref().coop(name)
    }
}

impl RuntimeHandle {
    /// A builder for a top-level cooperation.
    pub fn coop(&self, name: impl Into<String>) -> CoopBuilder {
        CoopBuilder::new(self.shared().clone(), name.into(), None)
    }
}
