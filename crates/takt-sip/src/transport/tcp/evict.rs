//! Eviction: which connection makes room when the table is full.
//!
//! An accept (or an outbound connect) that finds
//! [`TcpLimits::max_connections`](super::TcpLimits::max_connections)
//! connections open closes one of them, the *victim*, and takes its slot,
//! instead of refusing the newcomer. The per-peer limit is checked first
//! and still refuses: a peer at its limit never evicts anybody.
//!
//! ## The rule
//! 1. **Never evicted**: connections this proxy opened (its next hops);
//!    connections with bytes waiting to be sent (a response queued for a
//!    peer that has not read it yet) or a connect in progress; and
//!    connections whose inbound message began less than [`EVICT_GRACE`]
//!    ago (a message arriving now, split over segments).
//! 2. **First, half-open connections**: an inbound message began over
//!    [`EVICT_GRACE`] ago and is still incomplete (its deadline is
//!    running). The one whose message began earliest goes first: its
//!    deadline is nearest, so eviction takes the least time from it.
//!    Ties go to the older connection.
//! 3. **Then idle connections**, longest without traffic first (ties:
//!    the older connection).
//!
//! ## Why this rule
//! The goal: connections an attacker holds (16,384 with the defaults:
//! half-open ones, a slow loris, or idle ones) cannot lock out a client
//! that connects and sends a complete request.
//! - The newcomer always finds a victim while the table holds any
//!   attacker connection that is half-open or idle (rule 1 exempts only
//!   what the proxy itself is busy with, and a peer cannot make the proxy
//!   busy with a connection for long: a response it does not read is
//!   counted against `max_send_buffer`, and the connection is closed
//!   after `idle_timeout` without progress).
//! - Once admitted, the newcomer is idle with the freshest time, and
//!   while its request is on the way it is exempt (rule 1's grace): it
//!   ranks behind every half-open connection and every connection idle
//!   for longer. To evict it before its request is answered, an attacker
//!   must open as many new connections as there are connections ranked
//!   ahead of it — with the table full of its own, about
//!   `max_connections` connects within the client's round trip (16,384
//!   within tens of milliseconds), each of which evicts one of the
//!   attacker's own connections first.
//! - Half-open before idle: a half-open connection is, past the grace, a
//!   message that is not arriving — a slow loris, or a broken peer — and
//!   its message deadline closes it within `message_deadline` anyway. An
//!   idle connection may be a legitimate peer between requests; it loses
//!   only the reuse of its connection (RFC 3261 §18 lets either side
//!   close a connection; the peer opens a new one for its next request).
//! - Outbound connections are exempt because the proxy needs them to
//!   forward: evicting one would only make the next request open it
//!   again, evicting another.
//! - An eviction closes a connection, not a transaction: a response that
//!   arrives for a request the victim carried is sent by address (a new
//!   connection), as after any close.
//!
//! Each connect that evicts costs an attacker a TCP handshake; a peer
//! that closes and reconnects evicts one connection per connect, and the
//! victims are always the stalest connections of the table.
//!
//! ## How
//! A scan of the table ranks the candidates and keeps the best
//! [`rank_keep`] of them; each eviction takes the first kept candidate
//! whose rank is still what the scan saw (a connection that had traffic
//! since is passed over) and closes it under its send lock, so no send
//! can queue bytes on it after the check. The ranking is reused for at
//! most [`RANK_MAX_AGE`]: connections that became candidates since (a
//! message past its grace) are ranked at the next scan. A scan that finds
//! no candidate is not repeated within [`RESCAN_PAUSE`], so a table full
//! of connections that cannot be evicted costs a scan per
//! `RESCAN_PAUSE`, not one per refused connection. With 16,384
//! connections a scan takes a few hundred microseconds and serves up to
//! 256 evictions.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::conn::Conn;
use crate::proxy::ConnId;

/// How long an incomplete inbound message counts as arriving (exempt),
/// before its connection counts as half-open. Capped at half the message
/// deadline.
pub(crate) const EVICT_GRACE: Duration = Duration::from_millis(100);
/// Longest a ranking is reused.
pub(crate) const RANK_MAX_AGE: Duration = Duration::from_millis(50);
/// Shortest pause between scans once a scan's candidates are used up and
/// it had kept all it found.
pub(crate) const RESCAN_PAUSE: Duration = Duration::from_millis(10);

/// Candidates a scan keeps for a table of `max_connections`: a 64th of
/// it, at least 64.
pub(crate) fn rank_keep(max_connections: usize) -> usize {
    (max_connections / 64).max(64)
}

/// A candidate's standing: the lower goes first (the derived order puts
/// every half-open connection before every idle one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Rank {
    /// An incomplete inbound message past its grace began then (ns);
    /// ties go to the older connection (the lower id).
    HalfOpen(u64, ConnId),
    /// Idle since then (ns); ties as above.
    Idle(u64, ConnId),
}

/// `c`'s rank at `now`, or `None` when it may not be evicted (rule 1).
pub(super) fn rank(c: &Conn, now: u64, grace: u64) -> Option<Rank> {
    if c.outbound || c.queued() || c.is_released() {
        return None;
    }
    match c.msg_since() {
        Some(s) if now.saturating_sub(s) >= grace => Some(Rank::HalfOpen(s, c.id)),
        Some(_) => None,
        None => Some(Rank::Idle(c.last_active(), c.id)),
    }
}

/// The ranking (see the module docs); one per transport, used under a lock.
#[derive(Debug)]
pub(super) struct Evictor {
    /// Kept candidates, the best last.
    ranked: Vec<(Rank, Arc<Conn>)>,
    /// When the ranking was made (ns); `None` before the first scan.
    scanned: Option<u64>,
    /// Whether the scan found more candidates than it kept.
    truncated: bool,
    keep: usize,
    grace: u64,
}

impl Evictor {
    /// An evictor for a table of `max_connections` whose messages have
    /// `message_deadline`.
    pub(super) fn new(max_connections: usize, message_deadline: Duration) -> Evictor {
        Evictor {
            ranked: Vec::new(),
            scanned: None,
            truncated: false,
            keep: rank_keep(max_connections),
            grace: EVICT_GRACE.min(message_deadline / 2).as_nanos() as u64,
        }
    }

    /// Picks a victim among `table`'s connections and closes it
    /// ([`Conn::evict`]); `None` when no connection may be evicted. The
    /// caller releases the victim from the transport's accounting.
    pub(super) fn victim(
        &mut self,
        table: &RwLock<HashMap<ConnId, Arc<Conn>>>,
        now: u64,
    ) -> Option<Arc<Conn>> {
        let max_age = RANK_MAX_AGE.as_nanos() as u64;
        let pause = RESCAN_PAUSE.as_nanos() as u64;
        let stale = self
            .scanned
            .is_none_or(|t| now.saturating_sub(t) >= max_age);
        if stale {
            self.scan(table, now);
        }
        for pass in 0..2 {
            while let Some((r, c)) = self.ranked.pop() {
                if rank(&c, now, self.grace) == Some(r) && c.evict() {
                    return Some(c);
                }
            }
            // candidates beyond the kept ones, or a ranking old enough
            let again = pass == 0
                && (self.truncated
                    || !stale && self.scanned.is_none_or(|t| now.saturating_sub(t) >= pause));
            if !again {
                break;
            }
            self.scan(table, now);
        }
        None
    }

    /// Ranks the table's candidates and keeps the best.
    fn scan(&mut self, table: &RwLock<HashMap<ConnId, Arc<Conn>>>, now: u64) {
        let t = table.read().unwrap_or_else(|p| p.into_inner());
        let mut all: Vec<(Rank, &Arc<Conn>)> = t
            .values()
            .filter_map(|c| Some((rank(c, now, self.grace)?, c)))
            .collect();
        self.truncated = all.len() > self.keep;
        if self.truncated {
            all.select_nth_unstable_by_key(self.keep, |(r, _)| *r);
            all.truncate(self.keep);
        }
        // the best last, for `pop`
        all.sort_unstable_by_key(|(r, _)| std::cmp::Reverse(*r));
        self.ranked.clear();
        self.ranked
            .extend(all.into_iter().map(|(r, c)| (r, c.clone())));
        self.scanned = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_open_ranks_before_idle_earliest_first() {
        let mut v = [
            Rank::Idle(5, 16),
            Rank::HalfOpen(9, 17),
            Rank::Idle(1, 18),
            Rank::HalfOpen(3, 19),
            Rank::Idle(5, 15),
        ];
        v.sort();
        assert_eq!(
            v,
            [
                Rank::HalfOpen(3, 19),
                Rank::HalfOpen(9, 17),
                Rank::Idle(1, 18),
                Rank::Idle(5, 15),
                Rank::Idle(5, 16)
            ]
        );
        assert_eq!(rank_keep(16_384), 256);
        assert_eq!(rank_keep(4), 64);
    }
}
