//! Delayed and periodic messages: a hashed timer wheel on one thread.
//!
//! The wheel has `SLOTS` slots of one `TICK` each; an entry due at tick `t`
//! lives in slot `t % SLOTS` and fires when the wheel reaches `t` (entries
//! further out than one revolution wait in their slot for their round).
//! Timers fire at most one tick late, never early. The thread sleeps until
//! the next due entry (or indefinitely when there is none), so idle timers
//! cost no CPU. Cancelling sets a flag; the entry is dropped when its slot
//! comes round.
//!
//! ```
//! use std::time::Duration;
//! use takt_agents::{Agent, Config, Ctx, Definer, Runtime};
//!
//! #[derive(Clone)]
//! struct Tick;
//! struct Clock { ticks: u32 }
//! impl Agent for Clock {
//!     fn define(def: &mut Definer<Self>) {
//!         def.on(|me: &mut Clock, ctx: &mut Ctx<Clock>, _: Tick| {
//!             me.ticks += 1;
//!             if me.ticks == 3 { ctx.deregister_coop(); }
//!         });
//!     }
//! }
//! let rt = Runtime::new(Config::default());
//! let disp = rt.one_thread("main").unwrap();
//! let mut coop = rt.coop("clock");
//! let clock = coop.add(Clock { ticks: 0 }, &disp).unwrap();
//! let coop = coop.register().unwrap();
//! let every = rt.send_every(&clock, Tick, Duration::ZERO, Duration::from_millis(2)).unwrap();
//! assert!(coop.wait_timeout(Duration::from_secs(10)));
//! every.cancel();
//! ```

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use takt_sched::sync::{AtomicBool, Ordering};
use takt_sched::{Parker, SchedError, SpinBudget, TaktThread, ThreadSpec};

use crate::{Addr, Agent, Message, RuntimeHandle};

/// Wheel resolution.
const TICK: Duration = Duration::from_millis(1);
/// Slots per revolution.
const SLOTS: usize = 512;

type Action = Box<dyn FnMut() + Send>;

struct Entry {
    due: u64,
    period: Option<u64>,
    action: Action,
    cancelled: Arc<AtomicBool>,
}

struct Shared {
    inbox: Mutex<Vec<Entry>>,
    parker: Parker,
    stop: AtomicBool,
    start: Instant,
}

impl Shared {
    fn tick_of(&self, at: Instant) -> u64 {
        let ns = at.saturating_duration_since(self.start).as_nanos();
        ns.div_ceil(TICK.as_nanos()) as u64
    }
}

/// The runtime's timer thread.
pub(crate) struct TimerService {
    shared: Arc<Shared>,
    thread: Mutex<Option<TaktThread<()>>>,
}

impl fmt::Debug for TimerService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerService").finish_non_exhaustive()
    }
}

impl TimerService {
    pub(crate) fn start(spec: &ThreadSpec) -> Result<TimerService, SchedError> {
        let shared = Arc::new(Shared {
            inbox: Mutex::new(Vec::new()),
            parker: Parker::new(SpinBudget::NONE),
            stop: AtomicBool::new(false),
            start: Instant::now(),
        });
        let s2 = shared.clone();
        let t = spec.spawn(move || run(&s2))?;
        Ok(TimerService {
            shared,
            thread: Mutex::new(Some(t)),
        })
    }

    fn add(&self, delay: Duration, period: Option<Duration>, action: Action) -> Arc<AtomicBool> {
        let cancelled = Arc::new(AtomicBool::new(false));
        let due = self.shared.tick_of(Instant::now() + delay);
        let period = period.map(|p| (p.as_nanos().div_ceil(TICK.as_nanos()) as u64).max(1));
        self.shared
            .inbox
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Entry {
                due,
                period,
                action,
                cancelled: cancelled.clone(),
            });
        self.shared.parker.unpark();
        cancelled
    }

    /// Runs `f` on the timer thread after `delay` (not cancellable).
    pub(crate) fn schedule_fn(&self, delay: Duration, f: impl FnOnce() + Send + 'static) {
        let mut f = Some(f);
        self.add(
            delay,
            None,
            Box::new(move || {
                if let Some(f) = f.take() {
                    f()
                }
            }),
        );
    }

    pub(crate) fn stop(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.parker.unpark();
        if let Some(t) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = t.join();
        }
        // Entries not yet moved in are dropped with their messages.
        self.shared
            .inbox
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

fn run(sh: &Shared) {
    let mut wheel: Vec<Vec<Entry>> = (0..SLOTS).map(|_| Vec::new()).collect();
    let mut live = 0usize;
    // Every tick below `cur` has been processed.
    let mut cur = sh.tick_of(Instant::now());
    while !sh.stop.load(Ordering::Acquire) {
        for e in std::mem::take(&mut *sh.inbox.lock().unwrap_or_else(|p| p.into_inner())) {
            let due = e.due.max(cur);
            wheel[(due % SLOTS as u64) as usize].push(Entry { due, ..e });
            live += 1;
        }
        let now = sh.tick_of(Instant::now());
        while cur <= now {
            let slot = &mut wheel[(cur % SLOTS as u64) as usize];
            let mut i = 0;
            let mut again = Vec::new();
            while i < slot.len() {
                if slot[i].cancelled.load(Ordering::Relaxed) {
                    slot.swap_remove(i);
                    live -= 1;
                } else if slot[i].due <= cur {
                    let mut e = slot.swap_remove(i);
                    (e.action)();
                    match e.period {
                        Some(p) if !e.cancelled.load(Ordering::Relaxed) => {
                            e.due = cur + p;
                            again.push(e);
                        }
                        _ => live -= 1,
                    }
                } else {
                    i += 1;
                }
            }
            for e in again {
                wheel[(e.due % SLOTS as u64) as usize].push(e);
            }
            cur += 1;
        }
        if live == 0 {
            sh.parker.park();
            continue;
        }
        // Sleep until the next due entry within one revolution.
        let mut next = cur + SLOTS as u64;
        for k in 0..SLOTS as u64 {
            let t = cur + k;
            if wheel[(t % SLOTS as u64) as usize]
                .iter()
                .any(|e| e.due <= t)
            {
                next = t;
                break;
            }
        }
        let at = sh.start + TICK * next as u32;
        let wait = at.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            sh.parker.park_timeout(wait);
        }
    }
}

/// A delayed or periodic message. Dropping it cancels the timer unless it
/// was [`detach`](Self::detach)ed.
pub struct TimerHandle {
    cancelled: Arc<AtomicBool>,
    detached: bool,
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerHandle")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl TimerHandle {
    /// Cancels it: a message not yet sent will not be.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether it was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Lets the timer run on after the handle is dropped.
    pub fn detach(mut self) {
        self.detached = true;
    }
}

impl Drop for TimerHandle {
    fn drop(&mut self) {
        if !self.detached {
            self.cancel();
        }
    }
}

/// The timer thread could not be started.
///
/// The runtime starts its timer thread at the first timer and keeps the
/// outcome, so every later timer of that runtime gets a clone of the same
/// error (the thread's [`SchedError`] is shared, not copied).
#[derive(Clone, Debug)]
pub struct TimerError {
    cause: Arc<SchedError>,
}

impl TimerError {
    pub(crate) fn new(cause: Arc<SchedError>) -> Self {
        TimerError { cause }
    }

    /// Why the thread could not be started: the setting of the runtime's
    /// thread spec the kernel refused, or the failed spawn.
    pub fn cause(&self) -> &SchedError {
        &self.cause
    }
}

impl fmt::Display for TimerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timer thread unavailable: {}", self.cause)
    }
}

impl std::error::Error for TimerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.cause)
    }
}

impl RuntimeHandle {
    /// Sends `msg` to `to` after `delay`.
    pub fn send_after<A: Agent, M: Message>(
        &self,
        to: &Addr<A>,
        msg: M,
        delay: Duration,
    ) -> Result<TimerHandle, TimerError> {
        let t = self.shared().timer()?;
        let to = to.clone();
        let mut msg = Some(msg);
        let cancelled = t.add(
            delay,
            None,
            Box::new(move || {
                if let Some(m) = msg.take() {
                    to.send(m)
                }
            }),
        );
        Ok(TimerHandle {
            cancelled,
            detached: false,
        })
    }

    /// Sends a clone of `msg` to `to` after `first`, then every `period`
    /// (at least one tick, 1 ms).
    pub fn send_every<A: Agent, M: Message + Clone>(
        &self,
        to: &Addr<A>,
        msg: M,
        first: Duration,
        period: Duration,
    ) -> Result<TimerHandle, TimerError> {
        let t = self.shared().timer()?;
        let to = to.clone();
        let cancelled = t.add(first, Some(period), Box::new(move || to.send(msg.clone())));
        Ok(TimerHandle {
            cancelled,
            detached: false,
        })
    }
}
