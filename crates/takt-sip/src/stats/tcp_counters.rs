//! The TCP transport's connection counters: how many connections are open,
//! how many came and went, and every limit and deadline that fired.
//!
//! The transport's event-loop threads and senders bump them with relaxed
//! atomic adds (each is a statistic on its own; nothing is published
//! through them); [`TcpCounters::snapshot`] reads them for the
//! `/stats` endpoint and the exit summary.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// Live counters of the TCP transport.
#[derive(Debug, Default)]
pub struct TcpCounters {
    /// Connections open now (inbound and outbound). The transport admits
    /// a connection only by raising this below its limit.
    pub(crate) open: AtomicU64,
    pub(crate) peak: AtomicU64,
    pub(crate) accepted: AtomicU64,
    pub(crate) connected: AtomicU64,
    pub(crate) closed: AtomicU64,
    pub(crate) refused_total: AtomicU64,
    pub(crate) refused_peer: AtomicU64,
    pub(crate) evicted: AtomicU64,
    pub(crate) message_timeouts: AtomicU64,
    pub(crate) idle_timeouts: AtomicU64,
    pub(crate) unframeable: AtomicU64,
    pub(crate) send_overflows: AtomicU64,
    pub(crate) accept_errors: AtomicU64,
    pub(crate) connect_failures: AtomicU64,
    pub(crate) fd_soft: AtomicU64,
    pub(crate) fd_needed: AtomicU64,
}

/// Adds one to a counter.
pub(crate) fn bump(c: &AtomicU64) {
    // Relaxed: an independent statistic (see the module docs).
    c.fetch_add(1, Ordering::Relaxed);
}

impl TcpCounters {
    /// The counters now.
    pub fn snapshot(&self) -> TcpSnapshot {
        // Relaxed: independent statistics, read for display.
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        TcpSnapshot {
            open: r(&self.open),
            peak: r(&self.peak),
            accepted: r(&self.accepted),
            connected: r(&self.connected),
            closed: r(&self.closed),
            refused_total_limit: r(&self.refused_total),
            refused_peer_limit: r(&self.refused_peer),
            evicted: r(&self.evicted),
            message_timeouts: r(&self.message_timeouts),
            idle_timeouts: r(&self.idle_timeouts),
            unframeable: r(&self.unframeable),
            send_overflows: r(&self.send_overflows),
            accept_errors: r(&self.accept_errors),
            connect_failures: r(&self.connect_failures),
            fd_limit: r(&self.fd_soft),
            fd_needed: r(&self.fd_needed),
        }
    }
}

/// The TCP transport's counters at one moment (see
/// [`crate::transport::TcpLimits`] for the limits they count).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TcpSnapshot {
    /// Connections open now.
    pub open: u64,
    /// Most connections open at once.
    pub peak: u64,
    /// Connections accepted and admitted.
    pub accepted: u64,
    /// Connections this proxy opened (outbound).
    pub connected: u64,
    /// Connections closed (by either side, or by a limit below).
    pub closed: u64,
    /// Connections refused at accept (or outbound connects not made)
    /// because the total limit was reached and no open connection could
    /// be evicted.
    pub refused_total_limit: u64,
    /// Connections refused at accept because their peer address had its
    /// limit of connections open.
    pub refused_peer_limit: u64,
    /// Connections closed to make room for a new one while the total
    /// limit was reached (see `transport::tcp::evict` for which).
    pub evicted: u64,
    /// Connections closed because a message did not complete within the
    /// message deadline after its first byte arrived.
    pub message_timeouts: u64,
    /// Connections closed after the idle lifetime without traffic.
    pub idle_timeouts: u64,
    /// Connections closed because their stream could not be framed (no or
    /// bad Content-Length, a message over the size limit).
    pub unframeable: u64,
    /// Messages not sent because the connection's send buffer was full
    /// (the peer does not read).
    pub send_overflows: u64,
    /// `accept` failures other than an empty queue (e.g. out of file
    /// descriptors).
    pub accept_errors: u64,
    /// Outbound connects that failed after the sender moved on (refused
    /// late, unreachable, or not done within the connect timeout); their
    /// queued messages went to the handler as undeliverable.
    pub connect_failures: u64,
    /// The process's open-file soft limit after the transport raised it.
    pub fd_limit: u64,
    /// Open files the configuration needs (connections, sockets, slack).
    pub fd_needed: u64,
}
