//! Dispatchers: who runs an agent's events, on which threads.
//!
//! Every dispatcher owns its threads, made by [`takt_sched::ThreadSpec::spawn`]
//! from the runtime's base spec (CPU set, policy) with the dispatcher's name.
//!
//! | dispatcher | threads | guarantee | choose it when |
//! |---|---|---|---|
//! | `one_thread` | 1 | all its agents on one thread, FIFO per sender→receiver pair | agents talk a lot to each other: sends between them are plain queue appends |
//! | `active_obj` | 1 per agent | the agent alone on its thread | a few agents that block or must not share |
//! | `active_group` | 1 per named group | the group's agents share one thread | partitioning by hand |
//! | `thread_pool` | N | an agent never runs on two threads at once; FIFO per agent; one shared run queue | many independent agents, load spread over cores |
//! | `work_stealing` | N | as thread_pool; the agent a worker wakes runs next on that worker (a next slot no other worker sees), older ones wait in its deque, which idle workers steal from | exchanges between agents (request/reply, pipelines), bursty fan-out, locality matters |
//! | `priority` | 1 | events run strictly by *message* priority (0–7, higher first), FIFO within a priority | urgent control traffic beside bulk work |
//!
//! ## Message priorities
//! The priority dispatcher keeps one FIFO per priority and always runs the
//! oldest event of the highest non-empty priority, like the priority queue
//! of SObjectizer 4.4's dispatcher. A message's priority is given per send
//! with [`Addr::send_with_priority`](crate::Addr::send_with_priority); a
//! plain [`send`](crate::Addr::send) uses the default priority of the
//! agent's binding ([`Dispatcher::priority`], 0 when bound plainly). Order
//! is therefore FIFO per sender→receiver pair *within one priority*; a
//! higher-priority message overtakes lower ones already queued. An agent's
//! start event runs before any of its messages, its finish event after
//! everything queued before it. Other dispatchers ignore message priorities
//! (one FIFO per queue).
//!
//! Idle threads spin for the runtime's [`takt_sched::SpinBudget`], then
//! sleep on a futex: a hand-off within the budget costs ~150 ns here, a
//! wake-up from sleep ~11 µs; an idle runtime uses no CPU after the budget.

pub(crate) mod pool;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use takt_sched::{SpinBudget, TaktThread, ThreadSpec};

use crate::agent::{PoolSink, Sink};
use crate::panic::PanicPolicy;
use crate::queue::MpscQueue;
use crate::stats::DispatcherStats;
use crate::worker::{run_worker, WorkerShared, PRIORITIES};
use crate::RegError;
use pool::PoolShared;

/// The kinds of dispatcher (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DispatcherKind {
    /// One thread for all its agents.
    OneThread,
    /// A thread per agent.
    ActiveObj,
    /// A thread per named group.
    ActiveGroup,
    /// N threads, a shared run queue.
    ThreadPool,
    /// N threads with work stealing.
    WorkStealing,
    /// One thread, events by message priority.
    Priority,
}

impl DispatcherKind {
    /// The name used in benchmark parameters.
    pub fn name(self) -> &'static str {
        match self {
            DispatcherKind::OneThread => "one_thread",
            DispatcherKind::ActiveObj => "active_obj",
            DispatcherKind::ActiveGroup => "active_group",
            DispatcherKind::ThreadPool => "thread_pool",
            DispatcherKind::WorkStealing => "work_stealing",
            DispatcherKind::Priority => "priority",
        }
    }
}

enum Kind {
    Thread(Arc<WorkerShared>),
    ActiveObj,
    ActiveGroup(Mutex<HashMap<String, Arc<WorkerShared>>>),
    Pool(Arc<PoolShared>),
}

struct Inner {
    name: String,
    kind: DispatcherKind,
    imp: Kind,
    spec: ThreadSpec,
    budget: SpinBudget,
    panic: Arc<PanicPolicy>,
    threads: Mutex<Vec<TaktThread<()>>>,
    workers: Mutex<Vec<Arc<WorkerShared>>>,
}

/// A dispatcher: bind agents to it with [`Binding`]s (`&dispatcher` is
/// the plain binding).
#[derive(Clone)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

impl fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dispatcher")
            .field("name", &self.inner.name)
            .field("kind", &self.inner.kind)
            .finish()
    }
}

impl Dispatcher {
    pub(crate) fn start(
        name: &str,
        kind: DispatcherKind,
        threads: usize,
        spec: &ThreadSpec,
        budget: SpinBudget,
        panic: Arc<PanicPolicy>,
    ) -> Result<Dispatcher, RegError> {
        let spec = spec.renamed(name);
        let mut pool_deques = Vec::new();
        let imp = match kind {
            DispatcherKind::OneThread | DispatcherKind::Priority => {
                let ws = Arc::new(WorkerShared::new(
                    budget,
                    kind == DispatcherKind::Priority,
                    panic.clone(),
                ));
                Kind::Thread(ws)
            }
            DispatcherKind::ActiveObj => Kind::ActiveObj,
            DispatcherKind::ActiveGroup => Kind::ActiveGroup(Mutex::new(HashMap::new())),
            DispatcherKind::ThreadPool | DispatcherKind::WorkStealing => {
                if threads == 0 {
                    return Err(RegError::Binding(BindingError::NoThreads {
                        dispatcher: name.to_owned(),
                        kind,
                    }));
                }
                let (pool, deques) = PoolShared::new(
                    threads,
                    kind == DispatcherKind::WorkStealing,
                    budget,
                    panic.clone(),
                );
                pool_deques = deques;
                Kind::Pool(pool)
            }
        };
        let d = Dispatcher {
            inner: Arc::new(Inner {
                name: name.to_string(),
                kind,
                imp,
                spec,
                budget,
                panic,
                threads: Mutex::new(Vec::new()),
                workers: Mutex::new(Vec::new()),
            }),
        };
        match &d.inner.imp {
            Kind::Thread(ws) => d.spawn_worker(ws.clone(), name)?,
            Kind::Pool(p) => {
                let mut threads = d.threads();
                for (i, deque) in pool_deques.into_iter().enumerate() {
                    let p2 = p.clone();
                    let t = d
                        .inner
                        .spec
                        .renamed(format!("{name}-{i}"))
                        .spawn(move || pool::run_pool_worker(p2, i, deque))
                        .map_err(RegError::Thread);
                    match t {
                        Ok(t) => threads.push(t),
                        Err(e) => {
                            drop(threads);
                            d.stop();
                            return Err(e);
                        }
                    }
                }
            }
            Kind::ActiveObj | Kind::ActiveGroup(_) => {}
        }
        Ok(d)
    }

    fn threads(&self) -> std::sync::MutexGuard<'_, Vec<TaktThread<()>>> {
        self.inner.threads.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn spawn_worker(&self, ws: Arc<WorkerShared>, thread_name: &str) -> Result<(), RegError> {
        let ws2 = ws.clone();
        let t = self
            .inner
            .spec
            .renamed(thread_name)
            .spawn(move || run_worker(ws2))
            .map_err(RegError::Thread)?;
        let mut threads = self.threads();
        // Join threads that have ended (active_obj agents that finished).
        let mut i = 0;
        while i < threads.len() {
            if threads[i].is_finished() {
                let _ = threads.swap_remove(i).join();
            } else {
                i += 1;
            }
        }
        threads.push(t);
        let mut workers = self.inner.workers.lock().unwrap_or_else(|p| p.into_inner());
        workers.retain(|w| Arc::strong_count(w) > 1);
        workers.push(ws);
        Ok(())
    }

    fn new_worker(&self, thread_name: &str) -> Result<Arc<WorkerShared>, RegError> {
        let ws = Arc::new(WorkerShared::new(
            self.inner.budget,
            false,
            self.inner.panic.clone(),
        ));
        self.spawn_worker(ws.clone(), thread_name)?;
        Ok(ws)
    }

    /// The dispatcher's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Its kind.
    pub fn kind(&self) -> DispatcherKind {
        self.inner.kind
    }

    /// The plain binding.
    pub fn bind(&self) -> Binding {
        Binding {
            disp: self.clone(),
            group: None,
            prio: 0,
        }
    }

    /// A binding to the named group of an active_group dispatcher.
    pub fn group(&self, name: impl Into<String>) -> Binding {
        Binding {
            disp: self.clone(),
            group: Some(name.into()),
            prio: 0,
        }
    }

    /// A binding with default message priority `prio` (0–7, higher runs
    /// first) on a priority dispatcher: the priority of every plain `send`
    /// to the agent (see the module docs).
    pub fn priority(&self, prio: u8) -> Binding {
        Binding {
            disp: self.clone(),
            group: None,
            prio,
        }
    }

    /// Counters summed over its threads.
    pub fn stats(&self) -> DispatcherStats {
        let mut s = DispatcherStats {
            name: self.inner.name.clone(),
            kind: self.inner.kind.name(),
            threads: 0,
            events: 0,
            parks: 0,
            wakeups: 0,
            busy: std::time::Duration::ZERO,
            discarded: 0,
        };
        match &self.inner.imp {
            Kind::Pool(p) => {
                p.add_stats(&mut s);
                s.threads = p.size();
            }
            Kind::Thread(ws) => {
                ws.add_stats(&mut s);
                s.threads = 1;
            }
            Kind::ActiveObj | Kind::ActiveGroup(_) => {
                let w = self.inner.workers.lock().unwrap_or_else(|p| p.into_inner());
                for ws in w.iter() {
                    ws.add_stats(&mut s);
                }
                s.threads = w.len();
            }
        }
        s
    }

    /// Stops the threads (after their queues drain) and joins them.
    pub(crate) fn stop(&self) {
        match &self.inner.imp {
            Kind::Thread(ws) => ws.request_stop(),
            Kind::Pool(p) => p.request_stop(),
            Kind::ActiveObj | Kind::ActiveGroup(_) => {}
        }
        for ws in self
            .inner
            .workers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            ws.request_stop();
        }
        let threads = std::mem::take(&mut *self.threads());
        for t in threads {
            // A worker thread never unwinds (handler panics are caught).
            let _ = t.join();
        }
        if let Kind::ActiveGroup(g) = &self.inner.imp {
            g.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
        self.inner
            .workers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

/// How an agent is bound to a dispatcher: plain, to a group, or with a priority.
#[derive(Clone, Debug)]
pub struct Binding {
    disp: Dispatcher,
    group: Option<String>,
    prio: u8,
}

impl From<&Dispatcher> for Binding {
    fn from(d: &Dispatcher) -> Binding {
        d.bind()
    }
}

impl From<&Binding> for Binding {
    fn from(b: &Binding) -> Binding {
        b.clone()
    }
}

pub(crate) struct Resolved {
    pub(crate) sink: Sink,
    pub(crate) prio: u8,
    pub(crate) owns_worker: bool,
}

impl Binding {
    pub(crate) fn resolve(&self) -> Result<Resolved, RegError> {
        let inner = &self.disp.inner;
        let kind = inner.kind;
        if self.group.is_some() && kind != DispatcherKind::ActiveGroup {
            return Err(RegError::Binding(BindingError::GroupNotSupported {
                dispatcher: inner.name.clone(),
                kind,
            }));
        }
        if self.prio != 0 && kind != DispatcherKind::Priority {
            return Err(RegError::Binding(BindingError::PriorityNotSupported {
                dispatcher: inner.name.clone(),
                kind,
            }));
        }
        if self.prio as usize >= PRIORITIES {
            return Err(RegError::Binding(BindingError::PriorityTooHigh {
                priority: self.prio,
                max: (PRIORITIES - 1) as u8,
            }));
        }
        let plain = |sink| Resolved {
            sink,
            prio: self.prio,
            owns_worker: false,
        };
        Ok(match &inner.imp {
            Kind::Thread(ws) => plain(Sink::Thread(ws.clone())),
            Kind::Pool(p) => plain(Sink::Pool(Box::new(PoolSink {
                pool: p.clone(),
                queue: MpscQueue::new(),
                pending: takt_sched::sync::AtomicU64::new(0),
            }))),
            Kind::ActiveObj => {
                let ws = self.disp.new_worker(&inner.name)?;
                Resolved {
                    sink: Sink::Thread(ws),
                    prio: 0,
                    owns_worker: true,
                }
            }
            Kind::ActiveGroup(groups) => {
                let Some(g) = &self.group else {
                    return Err(RegError::Binding(BindingError::NoGroup {
                        dispatcher: inner.name.clone(),
                    }));
                };
                let mut groups = groups.lock().unwrap_or_else(|p| p.into_inner());
                let ws = match groups.get(g) {
                    Some(ws) => ws.clone(),
                    None => {
                        let ws = self.disp.new_worker(&format!("{}-{g}", inner.name))?;
                        groups.insert(g.clone(), ws.clone());
                        ws
                    }
                };
                plain(Sink::Thread(ws))
            }
        })
    }
}

/// Why a dispatcher cannot be made, or an agent cannot be bound to one as
/// asked (inside [`RegError::Binding`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BindingError {
    /// A thread_pool or work_stealing dispatcher asked for zero threads.
    NoThreads {
        /// The dispatcher's name.
        dispatcher: String,
        /// Its kind.
        kind: DispatcherKind,
    },
    /// A group name ([`Dispatcher::group`]) on a dispatcher other than
    /// active_group.
    GroupNotSupported {
        /// The dispatcher's name.
        dispatcher: String,
        /// Its kind.
        kind: DispatcherKind,
    },
    /// A message priority ([`Dispatcher::priority`]) on a dispatcher other
    /// than priority.
    PriorityNotSupported {
        /// The dispatcher's name.
        dispatcher: String,
        /// Its kind.
        kind: DispatcherKind,
    },
    /// A priority above the highest one.
    PriorityTooHigh {
        /// The priority asked for.
        priority: u8,
        /// The highest priority.
        max: u8,
    },
    /// An active_group binding without a group name.
    NoGroup {
        /// The dispatcher's name.
        dispatcher: String,
    },
}

impl fmt::Display for BindingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindingError::NoThreads { dispatcher, kind } => {
                write!(
                    f,
                    "{} '{dispatcher}' needs at least one thread",
                    kind.name()
                )
            }
            BindingError::GroupNotSupported { dispatcher, kind } => write!(
                f,
                "dispatcher '{dispatcher}' is {}, groups belong to active_group",
                kind.name()
            ),
            BindingError::PriorityNotSupported { dispatcher, kind } => write!(
                f,
                "dispatcher '{dispatcher}' is {}, priorities belong to the priority dispatcher",
                kind.name()
            ),
            BindingError::PriorityTooHigh { priority, max } => {
                write!(f, "priority {priority} is above {max}")
            }
            BindingError::NoGroup { dispatcher } => write!(
                f,
                "active_group '{dispatcher}' needs a group name (Dispatcher::group)"
            ),
        }
    }
}

impl std::error::Error for BindingError {}
