//! The bookkeeping shared by all actors of one peer run.
//!
//! Every actor of a run holds an `Arc<Board>`. It is touched only at the
//! edges of an actor's life (start hook, stop hook) and when a unit of
//! measured work completes (a ping_pong exchange, a ring token, skynet's root
//! sum) — never per message — so it adds no cost to the measured hot path.
//!
//! The driver (the thread that called `run_once`) awaits its conditions with
//! [`Board::wait`], which returns an error rather than hang when an actor
//! reported a failure or the run's deadline passed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::{CrossingCounter, PeerError, Run};

/// The moment the measured work completed and the value it produced.
#[derive(Clone, Copy, Debug)]
pub(super) struct Finish {
    /// Taken inside the handler that completed the work.
    pub(super) at: Instant,
    /// The benchmark's result (skynet's sum, ping_pong's last count, else 0).
    pub(super) value: u64,
}

/// Counters and completion of one run.
#[derive(Debug)]
pub(super) struct Board {
    /// Actors the run creates; `started`/`stopped` reaching it wakes the driver.
    actors: u64,
    /// Actors whose start hook ran.
    started: AtomicU64,
    /// Actors whose stop hook ran.
    stopped: AtomicU64,
    /// Deliveries handled, summed from every actor's stop hook.
    handled: AtomicU64,
    crossed: AtomicU64,
    /// Units of work still to complete; the one that takes it to 0 sets `finish`.
    remaining: AtomicU64,
    /// Set once, by the completion that took `remaining` to 0.
    finish: Mutex<Option<Finish>>,
    /// The first failure an actor reported.
    failure: Mutex<Option<String>>,
    /// Woken on every state change the driver may be waiting for.
    changed: Notify,
}

impl Board {
    /// A board for `actors` actors and `units` units of work to complete.
    pub(super) fn new(actors: u64, units: u64) -> Self {
        Board {
            actors,
            started: AtomicU64::new(0),
            stopped: AtomicU64::new(0),
            handled: AtomicU64::new(0),
            crossed: AtomicU64::new(0),
            remaining: AtomicU64::new(units),
            finish: Mutex::new(None),
            failure: Mutex::new(None),
            changed: Notify::new(),
        }
    }

    /// An actor's start hook ran.
    pub(super) fn started(&self) {
        // AcqRel: the driver's Acquire load of `started` sees everything the
        // actors did before starting (their state is set up).
        if self.started.fetch_add(1, Ordering::AcqRel) + 1 == self.actors {
            self.changed.notify_one();
        }
    }

    /// An actor's stop hook ran after handling `handled` deliveries.
    pub(super) fn stopped(&self, handled: u64) {
        self.handled.fetch_add(handled, Ordering::Relaxed);
        // AcqRel: orders the `handled` addition above before the count the
        // driver reads with Acquire, so once it sees all actors stopped it
        // sees every actor's `handled`.
        if self.stopped.fetch_add(1, Ordering::AcqRel) + 1 == self.actors {
            self.changed.notify_one();
        }
    }

    /// A `ping_pong` player stops: its deliveries and how many crossed
    /// threads (counted before the stop, so visible once `all_stopped`).
    pub(super) fn player_stopped(&self, c: CrossingCounter) {
        self.crossed.fetch_add(c.crossed, Ordering::Relaxed);
        self.stopped(c.handled);
    }

    /// Both players' counts, summed (after `all_stopped`).
    pub(super) fn crossing(&self) -> CrossingCounter {
        CrossingCounter {
            handled: self.handled_count(),
            crossed: self.crossed.load(Ordering::Relaxed),
        }
    }

    /// One unit of measured work completed with `value`; the last one
    /// records the finish time.
    pub(super) fn complete(&self, value: u64) {
        let at = Instant::now();
        match self
            .remaining
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| r.checked_sub(1))
        {
            Ok(1) => {
                *lock(&self.finish) = Some(Finish { at, value });
                self.changed.notify_one();
            }
            Ok(_) => {}
            Err(_) => self.fail("more units of work completed than were started"),
        }
    }

    /// An actor hit an error; the driver's next [`wait`](Self::wait) returns it.
    pub(super) fn fail(&self, reason: impl Into<String>) {
        let mut failure = lock(&self.failure);
        if failure.is_none() {
            *failure = Some(reason.into());
        }
        drop(failure);
        self.changed.notify_one();
    }

    /// Actors whose start hook ran.
    pub(super) fn started_count(&self) -> u64 {
        self.started.load(Ordering::Acquire)
    }

    /// Actors whose stop hook ran.
    pub(super) fn stopped_count(&self) -> u64 {
        self.stopped.load(Ordering::Acquire)
    }

    /// Deliveries handled by the actors that have stopped.
    pub(super) fn handled_count(&self) -> u64 {
        self.handled.load(Ordering::Relaxed)
    }

    /// The finish, once all units of work completed.
    pub(super) fn finish(&self) -> Option<Finish> {
        *lock(&self.finish)
    }

    /// Waits until all actors started.
    pub(super) async fn all_started(&self, run: &Run, since: Instant) -> Result<(), PeerError> {
        self.wait(run, since, "all actors to start", |b| {
            b.started_count() >= b.actors
        })
        .await
    }

    /// Waits until all actors stopped.
    pub(super) async fn all_stopped(&self, run: &Run, since: Instant) -> Result<(), PeerError> {
        self.wait(run, since, "all actors to stop", |b| {
            b.stopped_count() >= b.actors
        })
        .await
    }

    /// Waits until all units of work completed and returns the finish.
    pub(super) async fn finished(&self, run: &Run, since: Instant) -> Result<Finish, PeerError> {
        self.wait(run, since, "the measured work to complete", |b| {
            b.finish().is_some()
        })
        .await?;
        // Set before `done` became true and never cleared.
        self.finish()
            .ok_or_else(|| run.failed("finish vanished after completion"))
    }

    /// Waits until `done(self)` holds, an actor failed, or `run.deadline`
    /// (counted from `since`) passed. Needs a tokio runtime with its time
    /// driver enabled.
    async fn wait(
        &self,
        run: &Run,
        since: Instant,
        what: &str,
        done: impl Fn(&Board) -> bool,
    ) -> Result<(), PeerError> {
        loop {
            // Register interest before checking, so a notification sent
            // between the check and the await is not lost (`notify_one` also
            // stores a permit when nobody waits).
            let notified = self.changed.notified();
            if let Some(reason) = lock(&self.failure).clone() {
                return Err(run.failed(reason));
            }
            if done(self) {
                return Ok(());
            }
            let left = run.deadline.saturating_sub(since.elapsed());
            if left.is_zero() || tokio::time::timeout(left, notified).await.is_err() {
                return Err(run.timeout(self.describe(what), since.elapsed()));
            }
        }
    }

    /// `what` plus the counters, for a timeout message.
    fn describe(&self, what: &str) -> String {
        format!(
            "{what} ({} of {} actors started, {} stopped, {} units of work outstanding)",
            self.started_count(),
            self.actors,
            self.stopped_count(),
            self.remaining.load(Ordering::Relaxed)
        )
    }
}

/// Locks a mutex whose data stays consistent even if a holder panicked (each
/// critical section is a single assignment or read).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long `since` is before `finish`, or a failure if the clock went back.
pub(super) fn span(run: &Run, since: Instant, finish: Instant) -> Result<Duration, PeerError> {
    finish
        .checked_duration_since(since)
        .ok_or_else(|| run.failed("the work finished before it started (clock went backwards)"))
}
