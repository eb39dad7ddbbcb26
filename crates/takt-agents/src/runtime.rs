//! [`Runtime`]: dispatchers, cooperations, named mailboxes, timers,
//! tracing, and a clean shutdown.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use takt_sched::sync::{AtomicBool, AtomicU64, Ordering};
use takt_sched::{SchedError, SpinBudget, ThreadSpec};

use crate::coop::CoopShared;
use crate::dispatcher::{Dispatcher, DispatcherKind};
use crate::panic::{PanicPolicy, PanicReaction, PanicReport};
use crate::stats::DispatcherStats;
use crate::timer::{TimerError, TimerService};
use crate::trace::Tracer;
use crate::RegError;

/// Runtime settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// How long idle dispatcher threads spin before sleeping.
    pub spin: SpinBudget,
    /// Base spec of every thread the runtime creates (CPU set, policy); the
    /// name is replaced by the dispatcher's.
    pub thread: ThreadSpec,
    /// What a panicking handler causes.
    pub panic: PanicReaction,
    /// Measure time spent in handlers per agent (two clock reads per event).
    pub handler_timing: bool,
    /// How long `shutdown` waits for cooperations to finish before it stops
    /// the threads anyway (their remaining events are discarded and counted).
    pub shutdown_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            spin: SpinBudget::DEFAULT,
            thread: ThreadSpec::new("takt-agents"),
            panic: PanicReaction::default(),
            handler_timing: false,
            shutdown_timeout: Duration::from_secs(30),
        }
    }
}

/// A named mailbox: its message type and its erased `Inner<M>`.
pub(crate) type MboxEntry = (TypeId, Arc<dyn Any + Send + Sync>);

/// State shared by the runtime, its handles and every cooperation.
pub(crate) struct RtShared {
    pub(crate) config: Config,
    pub(crate) panic: Arc<PanicPolicy>,
    pub(crate) undelivered: AtomicU64,
    shutting_down: AtomicBool,
    roots: Mutex<HashMap<u64, Arc<CoopShared>>>,
    dispatchers: Mutex<Vec<Dispatcher>>,
    pub(crate) mboxes: Mutex<HashMap<String, MboxEntry>>,
    /// The timer thread, started at the first timer; a failed start is
    /// kept and reported to every later timer.
    timer: OnceLock<Result<TimerService, Arc<SchedError>>>,
    pub(crate) tracer: RwLock<Option<Arc<Tracer>>>,
}

impl RtShared {
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Relaxed)
    }

    pub(crate) fn add_root(&self, c: Arc<CoopShared>) -> Result<(), RegError> {
        let mut roots = self.roots.lock().unwrap_or_else(|p| p.into_inner());
        if self.is_shutting_down() {
            return Err(RegError::Closed("the runtime is shutting down"));
        }
        roots.insert(c.id, c);
        Ok(())
    }

    pub(crate) fn coop_done(&self, id: u64) {
        // Dropping the Arc outside the lock: it may free a whole cooperation.
        let c = self
            .roots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        drop(c);
    }

    pub(crate) fn timer(&self) -> Result<&TimerService, TimerError> {
        self.timer
            .get_or_init(|| {
                TimerService::start(&self.config.thread.renamed("takt-timer")).map_err(Arc::new)
            })
            .as_ref()
            .map_err(|e| TimerError::new(e.clone()))
    }
}

impl fmt::Debug for RtShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime").finish_non_exhaustive()
    }
}

/// A cloneable handle to a runtime (agents get one from `Ctx::runtime`).
/// It does not keep the runtime from shutting down.
#[derive(Clone, Debug)]
pub struct RuntimeHandle {
    shared: Arc<RtShared>,
}

impl RuntimeHandle {
    pub(crate) fn from_shared(shared: Arc<RtShared>) -> Self {
        RuntimeHandle { shared }
    }

    pub(crate) fn shared(&self) -> &Arc<RtShared> {
        &self.shared
    }

    /// The runtime's settings.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    fn start_dispatcher(
        &self,
        name: &str,
        kind: DispatcherKind,
        threads: usize,
    ) -> Result<Dispatcher, RegError> {
        let sh = &self.shared;
        let mut list = sh.dispatchers.lock().unwrap_or_else(|p| p.into_inner());
        if sh.is_shutting_down() {
            return Err(RegError::Closed("the runtime is shutting down"));
        }
        let d = Dispatcher::start(
            name,
            kind,
            threads,
            &sh.config.thread,
            sh.config.spin,
            sh.panic.clone(),
        )?;
        list.push(d.clone());
        Ok(d)
    }

    /// A dispatcher with one thread for all its agents.
    pub fn one_thread(&self, name: &str) -> Result<Dispatcher, RegError> {
        self.start_dispatcher(name, DispatcherKind::OneThread, 1)
    }

    /// A dispatcher with a thread per agent.
    pub fn active_obj(&self, name: &str) -> Result<Dispatcher, RegError> {
        self.start_dispatcher(name, DispatcherKind::ActiveObj, 0)
    }

    /// A dispatcher with a thread per named group ([`Dispatcher::group`]).
    pub fn active_group(&self, name: &str) -> Result<Dispatcher, RegError> {
        self.start_dispatcher(name, DispatcherKind::ActiveGroup, 0)
    }

    /// A pool of `threads` threads sharing one run queue.
    pub fn thread_pool(&self, name: &str, threads: usize) -> Result<Dispatcher, RegError> {
        self.start_dispatcher(name, DispatcherKind::ThreadPool, threads)
    }

    /// A pool of `threads` threads with work stealing.
    pub fn work_stealing(&self, name: &str, threads: usize) -> Result<Dispatcher, RegError> {
        self.start_dispatcher(name, DispatcherKind::WorkStealing, threads)
    }

    /// One thread running events strictly by agent priority ([`Dispatcher::priority`]).
    pub fn priority(&self, name: &str) -> Result<Dispatcher, RegError> {
        self.start_dispatcher(name, DispatcherKind::Priority, 1)
    }

    /// Every panic recorded so far.
    pub fn panics(&self) -> Vec<PanicReport> {
        self.shared
            .panic
            .reports
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Messages dropped because their target had finished or their queue
    /// was torn down.
    pub fn undelivered(&self) -> u64 {
        self.shared.undelivered.load(Ordering::Relaxed)
    }

    /// Counters of every dispatcher.
    pub fn dispatcher_stats(&self) -> Vec<DispatcherStats> {
        self.shared
            .dispatchers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(Dispatcher::stats)
            .collect()
    }

    /// Installs (or with `None` removes) a message tracer.
    pub fn set_tracer(&self, tracer: Option<Tracer>) {
        let mut t = self
            .shared
            .tracer
            .write()
            .unwrap_or_else(|p| p.into_inner());
        let was = t.is_some();
        *t = tracer.map(Arc::new);
        crate::trace::switch(was, t.is_some());
    }
}

/// What `shutdown` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Cooperations that had not finished within `Config::shutdown_timeout`.
    pub coops_timed_out: usize,
    /// Messages dropped over the runtime's life because their target had
    /// finished or their queue was torn down.
    pub undelivered: u64,
    /// Panics recorded over the runtime's life.
    pub panics: usize,
    /// Dispatcher threads joined.
    pub threads_joined: usize,
}

/// The runtime. Dropping it shuts it down.
#[derive(Debug)]
pub struct Runtime {
    handle: RuntimeHandle,
    down: bool,
}

impl Deref for Runtime {
    type Target = RuntimeHandle;
    fn deref(&self) -> &RuntimeHandle {
        &self.handle
    }
}

impl Runtime {
    /// A runtime with no dispatchers yet.
    pub fn new(config: Config) -> Runtime {
        let panic = Arc::new(PanicPolicy {
            reaction: config.panic,
            reports: Mutex::new(Vec::new()),
        });
        Runtime {
            handle: RuntimeHandle {
                shared: Arc::new(RtShared {
                    config,
                    panic,
                    undelivered: AtomicU64::new(0),
                    shutting_down: AtomicBool::new(false),
                    roots: Mutex::new(HashMap::new()),
                    dispatchers: Mutex::new(Vec::new()),
                    mboxes: Mutex::new(HashMap::new()),
                    timer: OnceLock::new(),
                    tracer: RwLock::new(None),
                }),
            },
            down: false,
        }
    }

    pub(crate) fn handle_ref(&self) -> &RuntimeHandle {
        &self.handle
    }

    /// A handle for other threads and agents.
    pub fn handle(&self) -> RuntimeHandle {
        self.handle.clone()
    }

    /// Deregisters every cooperation, waits for them (up to
    /// `Config::shutdown_timeout`), stops the timer and every dispatcher
    /// and joins their threads.
    pub fn shutdown(mut self) -> ShutdownReport {
        self.shutdown_inner()
    }

    fn shutdown_inner(&mut self) -> ShutdownReport {
        self.down = true;
        let sh = &self.handle.shared;
        let roots: Vec<Arc<CoopShared>> = {
            let r = sh.roots.lock().unwrap_or_else(|p| p.into_inner());
            sh.shutting_down.store(true, Ordering::SeqCst);
            r.values().cloned().collect()
        };
        for c in &roots {
            c.deregister();
        }
        let deadline = Instant::now() + sh.config.shutdown_timeout;
        let timed_out = roots
            .iter()
            .filter(|c| !c.wait_until(Some(deadline)))
            .count();
        drop(roots);
        if let Some(Ok(t)) = sh.timer.get() {
            t.stop();
        }
        let disps = std::mem::take(&mut *sh.dispatchers.lock().unwrap_or_else(|p| p.into_inner()));
        let mut threads = 0;
        for d in &disps {
            threads += d.stats().threads;
            d.stop();
        }
        drop(disps);
        sh.mboxes.lock().unwrap_or_else(|p| p.into_inner()).clear();
        sh.roots.lock().unwrap_or_else(|p| p.into_inner()).clear();
        if sh
            .tracer
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
        {
            self.handle.set_tracer(None);
        }
        ShutdownReport {
            coops_timed_out: timed_out,
            undelivered: sh.undelivered.load(Ordering::Relaxed),
            panics: sh
                .panic
                .reports
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .len(),
            threads_joined: threads,
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if !self.down {
            self.shutdown_inner();
        }
    }
}
