//! [`Ctx`]: what a handler can do besides touching its agent.

use std::fmt;
use std::sync::Arc;

use crate::addr::send_raw;
use crate::agent::AgentCell;
use crate::coop::CoopHandle;
use crate::{Addr, Agent, AgentId, Message, RuntimeHandle, State};

/// `Ctx::next` when no state change is requested (above every `u16` id).
const NO_CHANGE: u32 = u32::MAX;

/// The context of a running handler or hook: the agent's own address, its
/// state, its cooperation and the runtime.
pub struct Ctx<'a, A: Agent> {
    cell: &'a AgentCell<A>,
    /// A requested state change (a state id), or `NO_CHANGE`. A plain
    /// word rather than an `Option<u16>`: the check after every handler
    /// is then one compare.
    next: u32,
}

impl<A: Agent> fmt::Debug for Ctx<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx")
            .field("agent", &self.cell.hdr.id)
            .field("state", &self.state())
            .finish()
    }
}

/// A state change to a state the agent type does not define.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownState(pub State);

impl fmt::Display for UnknownState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "state {} is not defined for this agent type",
            self.0.id()
        )
    }
}

impl std::error::Error for UnknownState {}

impl<'a, A: Agent> Ctx<'a, A> {
    #[inline(always)]
    pub(crate) fn new(cell: &'a AgentCell<A>) -> Self {
        Ctx {
            cell,
            next: NO_CHANGE,
        }
    }

    #[inline(always)]
    pub(crate) fn take_next(&mut self) -> Option<u16> {
        if self.next == NO_CHANGE {
            None
        } else {
            let n = self.next as u16;
            self.next = NO_CHANGE;
            Some(n)
        }
    }

    /// The agent's id.
    pub fn id(&self) -> AgentId {
        self.cell.hdr.id
    }

    /// The agent's own address (an atomic increment; prefer
    /// [`send_self`](Self::send_self) for messages to itself).
    pub fn addr(&self) -> Addr<A> {
        // SAFETY: the cell lives in an Arc and is alive (we run in it).
        let arc = unsafe {
            let p = self.cell as *const AgentCell<A>;
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        };
        Addr::from_cell(arc)
    }

    /// Sends `msg` to this agent (queued behind what is already queued).
    #[inline]
    pub fn send_self<M: Message>(&self, msg: M) {
        // SAFETY: the agent is alive while its handler runs.
        unsafe { send_raw::<A, M>(self.cell, msg) }
    }

    /// The current state.
    pub fn state(&self) -> State {
        State::new(self.cell.hdr.state.get())
    }

    /// The name of the current state.
    pub fn state_name(&self) -> &'static str {
        self.cell.behaviour().name_of(self.cell.hdr.state.get())
    }

    /// Changes state when the handler returns: `on_exit` hooks up to the
    /// common ancestor, then `on_enter` hooks down to `s`. An unknown state
    /// is refused and counted (`AgentStats::bad_state_changes`).
    pub fn change_state(&mut self, s: State) {
        if self.try_change_state(s).is_err() {
            self.cell
                .hdr
                .cold
                .get()
                .bad_state
                .fetch_add(1, takt_sched::sync::Ordering::Relaxed);
        }
    }

    /// Like [`change_state`](Self::change_state), returning the refusal.
    pub fn try_change_state(&mut self, s: State) -> Result<(), UnknownState> {
        if self.cell.behaviour().has_state(s) {
            self.next = u32::from(s.id());
            Ok(())
        } else {
            Err(UnknownState(s))
        }
    }

    /// The agent's cooperation.
    pub fn coop(&self) -> CoopHandle {
        CoopHandle::from_shared(self.cell.hdr.coop.clone())
    }

    /// Deregisters the agent's cooperation: every agent in it (and in its
    /// children) finishes after the events already queued before the finish.
    pub fn deregister_coop(&self) {
        self.cell.hdr.coop.deregister();
    }

    /// The runtime the agent runs in.
    pub fn runtime(&self) -> RuntimeHandle {
        RuntimeHandle::from_shared(self.cell.hdr.coop.rt.clone())
    }
}
