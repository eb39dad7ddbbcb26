//! The node's counters: plain numbers, read with [`Node::stats`](crate::Node::stats).

use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of a node's counters (monotonic since the node started).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteStats {
    /// Messages handed to the engine (direct, published, queries, replies).
    pub sent: u64,
    /// Messages received and delivered to local recipients.
    pub delivered: u64,
    /// Sends refused because the target node is down or unknown.
    pub undeliverable: u64,
    /// Messages rejected for a type name or schema version mismatch.
    pub type_mismatch: u64,
    /// Payloads that failed to decode (right type, bad bytes).
    pub decode_errors: u64,
    /// Messages refused at the sender for exceeding `max_payload`.
    pub too_large: u64,
    /// Messages that met a full outbound queue (the overload reaction applied).
    pub queue_full: u64,
    /// Slow-consumer events reported by the engine (it dropped messages).
    pub slow_consumer: u64,
    /// Times the connection to the server was lost.
    pub disconnects: u64,
    /// Times it was (re-)established after a loss.
    pub reconnects: u64,
    /// NodeDown events (a peer missed its heartbeats or left).
    pub nodes_down: u64,
    /// Queries that failed with no responders.
    pub no_responders: u64,
    /// Errors the engine reported otherwise (publish failures, server errors).
    pub engine_errors: u64,
    /// Panics of inline query handlers
    /// ([`Node::export_ask_inline`](crate::Node::export_ask_inline)),
    /// answered with an error.
    pub handler_panics: u64,
}

macro_rules! counters {
    ($($f:ident),*) => {
        /// The live counters behind [`RemoteStats`].
        #[derive(Debug, Default)]
        pub(crate) struct Counters { $(pub(crate) $f: AtomicU64,)* }
        impl Counters {
            pub(crate) fn snapshot(&self) -> RemoteStats {
                RemoteStats { $($f: self.$f.load(Ordering::Relaxed),)* }
            }
        }
    };
}

counters!(
    sent,
    delivered,
    undeliverable,
    type_mismatch,
    decode_errors,
    too_large,
    queue_full,
    slow_consumer,
    disconnects,
    reconnects,
    nodes_down,
    no_responders,
    engine_errors,
    handler_panics
);

/// Adds one to a counter (relaxed: counters order nothing).
pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}
