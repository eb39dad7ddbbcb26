//! What happens when a handler panics.
//!
//! A panic unwinds out of the handler, through the dispatcher's event loop
//! (which catches it once per loop entry, not per event, so the happy path
//! pays nothing), and the runtime applies the configured [`PanicReaction`]
//! to the agent whose handler panicked. Every panic is recorded as a
//! [`PanicReport`] (see `Runtime::panics`) besides the standard panic hook's
//! message on stderr. The event that panicked is consumed; the agent's
//! other queued events are unaffected.

use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::sync::Mutex;

use crate::agent::{AgentRef, Header};
use crate::AgentId;

/// The reaction to a panicking handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PanicReaction {
    /// Deregister the agent's cooperation (its agents finish; the rest of
    /// the runtime goes on). The default.
    #[default]
    DeregisterCoop,
    /// Abort the process after printing the report.
    Abort,
    /// Record it and carry on with the agent as it is.
    Ignore,
}

/// One recorded panic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PanicReport {
    /// The agent whose handler panicked.
    pub agent: AgentId,
    /// Its type.
    pub agent_type: &'static str,
    /// Its cooperation's name.
    pub coop: String,
    /// The panic message.
    pub message: String,
    /// The reaction applied.
    pub reaction: PanicReaction,
}

impl fmt::Display for PanicReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "agent {}{} in coop '{}' panicked: {} (reaction: {:?})",
            self.agent_type, self.agent, self.coop, self.message, self.reaction
        )
    }
}

/// The configured reaction and the record of panics.
#[derive(Debug, Default)]
pub(crate) struct PanicPolicy {
    pub(crate) reaction: PanicReaction,
    pub(crate) reports: Mutex<Vec<PanicReport>>,
}

thread_local! {
    static PANICKING: RefCell<Option<AgentRef>> = const { RefCell::new(None) };
}

/// Called while unwinding out of an agent's handler: remembers the agent
/// (with a reference, so it outlives the unwinding).
pub(crate) fn note_panicking(h: &Header) {
    // SAFETY: `h` is alive (we are inside its handler); the new count is
    // owned by the AgentRef.
    let r = unsafe {
        (h.vt.retain)(h);
        AgentRef::from_raw(h)
    };
    PANICKING.with(|p| *p.borrow_mut() = Some(r));
}

fn message_of(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// Applies the reaction after a panic was caught on this thread.
pub(crate) fn recovered(policy: &PanicPolicy, payload: Box<dyn Any + Send>) {
    let message = message_of(&*payload);
    let agent = PANICKING.with(|p| p.borrow_mut().take());
    let Some(agent) = agent else {
        // A panic outside any handler is a bug in the runtime itself.
        eprintln!("takt-agents: internal panic outside a handler: {message}");
        std::process::abort();
    };
    let h = agent.header();
    let report = PanicReport {
        agent: h.id,
        agent_type: (h.vt.type_name)(),
        coop: h.coop.name.clone(),
        message,
        reaction: policy.reaction,
    };
    match policy.reaction {
        PanicReaction::Abort => {
            eprintln!("takt-agents: {report}; aborting");
            std::process::abort();
        }
        PanicReaction::Ignore => {}
        PanicReaction::DeregisterCoop => h.coop.deregister(),
    }
    policy
        .reports
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(report);
}
