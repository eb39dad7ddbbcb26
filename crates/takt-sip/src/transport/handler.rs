//! What the transports run: a [`Handler`].
//!
//! The transports own the sockets, the worker threads, the timer thread
//! and the per-message instrumentation (K_rcv, T_sip, K_snd); a handler
//! owns the protocol. [`crate::proxy::Proxy`] is one handler; a UAS, a
//! relay or a test double is another. The workers are generic over the
//! handler, so every call on the message path is statically dispatched
//! and nothing is boxed per message.
//!
//! ## Contract
//! - [`Handler::handle`] gets one message (a datagram, or one framed
//!   stream message) with its source, transport and the time it reached
//!   the SIP layer ([`Inbound`]); it writes what to send into the
//!   worker's [`Scratch`] and sends it through the [`Sink`] (or sends
//!   directly through the sink). Everything between the call and its
//!   return, minus the time the sink spends in send calls, is the
//!   message's T_sip. It is called concurrently from every UDP worker and
//!   TCP event-loop thread and must not block for long: a TCP loop serves
//!   all its connections between two calls.
//! - [`Handler::tick`] runs whatever is due at `now` (timers, upkeep) and
//!   is called every [`super::ServerConfig::tick`] on the one timer
//!   thread, only when [`Handler::wants_ticks`] says so.
//! - [`Handler::prepare_idle`] is called by a worker that found its
//!   socket empty, before it spins or blocks: it may load what the next
//!   message will touch. It must be cheap and never block.

use std::net::SocketAddr;

use crate::proxy::{Inbound, Mode, Outcome, Proxy, Scratch, SendError, Sink};

/// What a handler holds, as its timer thread publishes it
/// ([`Handler::held`]; for the proxy: transaction records).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Held now.
    pub held: usize,
    /// The most that can be held.
    pub capacity: usize,
    /// Of those held, the ones kept only to absorb retransmissions, which
    /// give their room up to new ones (the proxy's lingering records).
    pub lingering: usize,
    /// Lingering state ended early to make room, since start.
    pub reclaimed: u64,
}

/// A protocol engine the transports run. See the module docs for the
/// contract.
pub trait Handler: Send + Sync + 'static {
    /// Handles one received message; its sends go through `sink`
    /// (directly, or queued in `scratch` and sent from there). Returns
    /// what became of it, for the statistics.
    fn handle(&self, inb: &Inbound<'_>, scratch: &mut Scratch, sink: &mut dyn Sink) -> Outcome;

    /// Runs what is due at `now` (ns of the transports' clock, the clock
    /// of [`Inbound::now`]); sends go through `sink`.
    fn tick(&self, now: u64, sink: &mut dyn Sink);

    /// Whether the transports should run a timer thread calling
    /// [`Handler::tick`].
    fn wants_ticks(&self) -> bool;

    /// Loads what the next message will touch while a worker is idle.
    /// The default does nothing.
    #[inline]
    fn prepare_idle(&self) {}

    /// A message sent earlier through a sink could not be delivered: the
    /// transport read an ICMP error for it (see `errqueue`). `bytes` is
    /// the start of the datagram as the error quoted it, `to` where it
    /// was sent. Returns whether the handler matched it to state of its
    /// own (counted). The default ignores it.
    fn bounced(
        &self,
        bytes: &[u8],
        to: SocketAddr,
        error: SendError,
        now: u64,
        sink: &mut dyn Sink,
    ) -> bool {
        let _ = (bytes, to, error, now, sink);
        false
    }

    /// State held now and the most that can be held (for the proxy:
    /// transactions), published by the timer thread after each tick. The
    /// default: nothing held.
    fn held(&self) -> Held {
        Held::default()
    }
}

/// The proxy: stateful mode ticks its transaction timers and tops its
/// table up ([`Proxy::replenish`]) on the timer thread; stateless mode
/// holds nothing and needs no ticks.
impl Handler for Proxy {
    #[inline]
    fn handle(&self, inb: &Inbound<'_>, scratch: &mut Scratch, sink: &mut dyn Sink) -> Outcome {
        Proxy::handle(self, inb, scratch, sink)
    }

    fn tick(&self, now: u64, sink: &mut dyn Sink) {
        Proxy::tick(self, now, sink);
        self.replenish();
    }

    fn wants_ticks(&self) -> bool {
        self.config().mode == Mode::Stateful
    }

    #[inline]
    fn prepare_idle(&self) {
        Proxy::prepare_idle(self)
    }

    fn held(&self) -> Held {
        Held {
            held: self.transactions_hint(),
            capacity: self.transaction_capacity(),
            lingering: self.transactions_lingering_hint(),
            reclaimed: self.transactions_reclaimed_hint(),
        }
    }

    fn bounced(
        &self,
        bytes: &[u8],
        to: SocketAddr,
        error: SendError,
        now: u64,
        sink: &mut dyn Sink,
    ) -> bool {
        Proxy::bounced(self, bytes, to, error, now, sink).is_some()
    }
}
