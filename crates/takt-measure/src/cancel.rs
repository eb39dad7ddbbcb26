//! Cancellation and signals: one [`Cancel`] token, one place that
//! installs the process's signal handlers.
//!
//! A [`Cancel`] is a flag shared by a run and whoever may stop it
//! (another thread, a test, a signal); cloning shares it. A run polls
//! [`Cancel::is_cancelled`] between steps and, when it is raised, stops
//! and says so (an error, or a document that names what is missing).
//! [`Cancel::signal`] tells a run stopped by a signal which one.
//!
//! # Signals
//! [`watch`] (or [`Cancel::on_signals`]) makes a token follow the
//! process's SIGINT, SIGTERM and SIGHUP. The handlers are installed once
//! per process, by the first call; any number of tokens may be watched.
//!
//! 1. The first signal is recorded ([`received`]), every watched token is
//!    raised with it, and one line on stderr says the run is finishing
//!    its current step. Nothing else happens in the signal's context: a
//!    watcher thread (not a signal handler) does this, so it may lock and
//!    print.
//! 2. The run notices at its next step, returns, and unwinds: every guard
//!    of a machine-wide change (`takt-host`'s cleanup registry) drops and
//!    puts its change back on the way out. The binary's `main` maps the
//!    interruption to the exit status `128 + N` ([`Signal::exit_code`]:
//!    130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
//! 3. A second signal ends the process at once: the hooks given to
//!    [`at_forced_exit`] run (the cleanup registry restores everything
//!    still registered there), then the signal's default disposition is
//!    restored and the signal raised again, so the process dies of it and
//!    the shell sees `128 + N`. No library exits the process itself.
//! 4. A process killed outright (SIGKILL, a crash) runs nothing; what it
//!    changed machine-wide is repaired by the next run's start from the
//!    cleanup registry's journal.
//!
//! ```
//! use takt_measure::cancel::{Cancel, Signal};
//!
//! let cancel = Cancel::new();
//! let worker = cancel.clone();
//! assert!(!worker.is_cancelled());
//! cancel.raise(Signal::Terminate);
//! assert!(worker.is_cancelled());
//! assert_eq!(worker.signal(), Some(Signal::Terminate));
//! assert_eq!(Signal::Terminate.exit_code(), 143);
//! ```

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::MeasureError;

/// A signal that stops a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP (the terminal went away).
    Hangup,
}

impl Signal {
    /// Every signal [`watch`] follows.
    pub const ALL: [Signal; 3] = [Signal::Interrupt, Signal::Terminate, Signal::Hangup];

    /// The signal's number (2, 15, 1).
    pub fn number(self) -> i32 {
        match self {
            Signal::Interrupt => libc::SIGINT,
            Signal::Terminate => libc::SIGTERM,
            Signal::Hangup => libc::SIGHUP,
        }
    }

    /// The signal with this number, if it is one of these.
    pub fn from_number(n: i32) -> Option<Signal> {
        Signal::ALL.into_iter().find(|s| s.number() == n)
    }

    /// Its conventional name (`SIGINT`, …).
    pub fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
            Signal::Hangup => "SIGHUP",
        }
    }

    /// The exit status of a command it ended: `128 + N`.
    pub fn exit_code(self) -> i32 {
        128 + self.number()
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// No signal recorded (in [`Cancel`]'s signal cell and in [`RECEIVED`]).
const NO_SIGNAL: i32 = 0;

/// A cancellation flag shared by a run and whoever may stop it; cloning
/// shares it. Records the signal that raised it, if one did.
#[derive(Clone, Debug, Default)]
pub struct Cancel {
    /// Raised once, never lowered.
    flag: Arc<AtomicBool>,
    /// The raising signal's number, [`NO_SIGNAL`] otherwise. Written
    /// before `flag` (Release), so a reader that saw the flag (Acquire)
    /// sees the signal.
    signal: Arc<AtomicI32>,
}

impl Cancel {
    /// A flag not yet raised.
    pub fn new() -> Self {
        Cancel::default()
    }

    /// A token over an existing flag (e.g. a plan's stop flag).
    pub fn from_flag(flag: Arc<AtomicBool>) -> Self {
        Cancel {
            flag,
            signal: Arc::default(),
        }
    }

    /// The shared flag, for code that polls an `AtomicBool`.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.flag.clone()
    }

    /// Raises the flag.
    pub fn cancel(&self) {
        // Release pairs with the Acquire load in is_cancelled.
        self.flag.store(true, Ordering::Release);
    }

    /// Raises the flag on behalf of `signal` (the first signal is kept).
    pub fn raise(&self, signal: Signal) {
        // Relaxed: published by the Release store of the flag below.
        let _ = self.signal.compare_exchange(
            NO_SIGNAL,
            signal.number(),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        self.cancel();
    }

    /// Whether the flag is raised.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// The signal that raised the flag, if a signal did.
    pub fn signal(&self) -> Option<Signal> {
        if !self.is_cancelled() {
            return None;
        }
        Signal::from_number(self.signal.load(Ordering::Relaxed))
    }

    /// Makes this token follow SIGINT, SIGTERM and SIGHUP (see [`watch`]).
    pub fn on_signals(&self) -> Result<(), MeasureError> {
        watch(self)
    }

    /// The former name of [`Cancel::on_signals`].
    pub fn on_ctrl_c(&self) -> Result<(), MeasureError> {
        watch(self)
    }
}

/// The first signal the process received, [`NO_SIGNAL`] before one.
/// Relaxed: a stand-alone value, read to stop loops early and to choose
/// an exit status.
static RECEIVED: AtomicI32 = AtomicI32::new(NO_SIGNAL);
/// Tokens raised by the first signal.
static WATCHED: Mutex<Vec<Cancel>> = Mutex::new(Vec::new());
/// Hooks run before a second signal ends the process.
static FORCED_EXIT: Mutex<Vec<fn()>> = Mutex::new(Vec::new());
/// Set by the first [`install`]: why the handlers could not be installed,
/// or `None` when they were (an `io::Error` is not `Clone`; later calls
/// return its message).
static INSTALLED: OnceLock<Option<String>> = OnceLock::new();

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts the watcher thread over SIGINT, SIGTERM and SIGHUP.
fn start_watcher() -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new(Signal::ALL.map(Signal::number))?;
    takt_sched::ThreadSpec::new("takt-signals")
        .spawn(move || {
            for n in signals.forever() {
                let Some(sig) = Signal::from_number(n) else {
                    continue;
                };
                if RECEIVED
                    .compare_exchange(NO_SIGNAL, n, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
                {
                    first_signal(sig);
                } else {
                    second_signal(sig);
                }
            }
        })
        // The watcher runs until the process ends; its handle is not needed.
        .map(drop)
        .map_err(std::io::Error::other)
}

/// Installs the process's SIGINT, SIGTERM and SIGHUP handling (once; later
/// calls return the first call's result). See the module docs for what a
/// first and a second signal do.
pub fn install() -> Result<(), MeasureError> {
    match INSTALLED.get_or_init(|| start_watcher().err().map(|e| e.to_string())) {
        None => Ok(()),
        Some(reason) => Err(MeasureError::Signal(reason.clone())),
    }
}

fn first_signal(sig: Signal) {
    eprintln!("\ninterrupted ({sig}): finishing the current step (a second signal ends at once)");
    for c in lock(&WATCHED).iter() {
        c.raise(sig);
    }
}

fn second_signal(sig: Signal) {
    let hooks: Vec<fn()> = lock(&FORCED_EXIT).clone();
    for hook in hooks {
        hook();
    }
    // Restores the default disposition, unblocks and raises the signal:
    // the process ends of it.
    let _ = signal_hook::low_level::emulate_default_handler(sig.number());
}

/// Raises `cancel` (with the signal) on the process's first SIGINT,
/// SIGTERM or SIGHUP, installing the handlers if they are not yet
/// ([`install`]). A token watched after a signal arrived is raised at once.
pub fn watch(cancel: &Cancel) -> Result<(), MeasureError> {
    install()?;
    lock(&WATCHED).push(cancel.clone());
    if let Some(sig) = received() {
        cancel.raise(sig);
    }
    Ok(())
}

/// The first signal the process received since [`install`], if any.
pub fn received() -> Option<Signal> {
    Signal::from_number(RECEIVED.load(Ordering::Relaxed))
}

/// Runs `hook` when a second signal ends the process, before it ends
/// (registering the same function twice runs it once). For undoing
/// machine-wide changes that must not outlive the process; keep it short
/// and safe to run while other threads still work.
pub fn at_forced_exit(hook: fn()) {
    let mut hooks = lock(&FORCED_EXIT);
    if !hooks.iter().any(|h| std::ptr::fn_addr_eq(*h, hook)) {
        hooks.push(hook);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_shared_and_keep_the_first_signal() {
        let flag = Arc::new(AtomicBool::new(false));
        let c = Cancel::from_flag(flag.clone());
        assert_eq!(c.signal(), None);
        c.raise(Signal::Hangup);
        c.raise(Signal::Interrupt);
        assert!(flag.load(Ordering::Acquire));
        assert_eq!(c.clone().signal(), Some(Signal::Hangup));
        let plain = Cancel::new();
        plain.cancel();
        assert!(plain.is_cancelled());
        assert_eq!(plain.signal(), None);
    }

    #[test]
    fn signals_map_to_exit_codes() {
        assert_eq!(Signal::Interrupt.exit_code(), 130);
        assert_eq!(Signal::Terminate.exit_code(), 143);
        assert_eq!(Signal::Hangup.exit_code(), 129);
        for s in Signal::ALL {
            assert_eq!(Signal::from_number(s.number()), Some(s));
        }
        assert_eq!(Signal::from_number(9), None);
        assert_eq!(Signal::Interrupt.to_string(), "SIGINT");
    }
}
