//! A sans-I/O user agent client and server for load generation.
//!
//! [`Uac`] places calls and [`Uas`] answers them, in the call flow of
//! Krishnamurthy & Rouskas' proxy study (and of `sipp -sn uac`/`uas`):
//!
//! ```text
//! UAC            proxy            UAS
//!  | INVITE  ->    | INVITE  ->     |
//!  |  <- 100 (a stateful proxy)     |
//!  |  <- 180       |  <- 180        |
//!  |  <- 200       |  <- 200        |
//!  | ACK     ->    | ACK     ->     |
//!  |   ... hold time ...            |
//!  | BYE     ->    | BYE     ->     |
//!  |  <- 200       |  <- 200        |
//! ```
//!
//! The INVITE's Request-URI names the UAS (`sip:service@UAS`,
//! [`UacConfig::with_uas`], as SIPp's `-rsa`) while every request goes to
//! the proxy as an outbound proxy ([`UacConfig::proxy`]): a proxy that
//! routes on the Request-URI (RFC 3261 §16.5) and one with a fixed next
//! hop both reach the UAS. A preloaded `Route: <sip:PROXY;lr>`
//! ([`UacConfig::with_route_preload`]) serves a proxy that forwards only
//! requests routed through it.
//!
//! Neither owns a socket or reads a clock: datagrams go in with an
//! explicit `now` (nanoseconds of any monotonic clock), and what to send
//! is polled out ([`Uac::poll_transmit`], [`Uas::poll_transmit`]) together
//! with the next timer deadline (`poll_timeout`), as in quinn-proto. The
//! same code runs on virtual time in tests and on the TSC in
//! takt-siplab's generator.
//!
//! ## Retransmissions (RFC 3261 §17.1.1.2, §17.1.2.2, §13.3.1.4)
//! With [`UaTimers::retransmit`] on (the default), over an unreliable
//! transport:
//! - the INVITE is resent after T1, 2·T1, 4·T1, … until a provisional or
//!   final response arrives; Timer B (64·T1) ends the attempt as
//!   [`Outcome::Timeout`];
//! - the BYE is resent after T1, 2·T1, … capped at T2 until its final
//!   response; Timer F (64·T1) ends it as [`Outcome::ByeFailed`];
//! - the UAS resends its 200 to the INVITE after T1, 2·T1, … capped at T2
//!   until the ACK arrives, and gives up after 64·T1;
//! - the UAC answers every retransmitted 200 with its ACK again.
//!
//! Every retransmission is counted by [`Kind`]. With retransmissions off
//! the timeouts still run. Over TCP ([`UacConfig::transport`]) the UAC
//! retransmits nothing (Timers A and E are for unreliable transports)
//! while Timers B and F still run, and the UAS still resends its 200
//! until the ACK (§13.3.1.4: a later hop may be unreliable).
//!
//! ## Outcomes
//! A call ends in one [`Outcome`]: completed, failed by 503, failed by any
//! other final response 300–699, timed out (no final response to the
//! INVITE within Timer B: RFC 7501's session attempt failure), its BYE
//! failed, or never started because the call table was full.
//!
//! ## Cost
//! Per-call state lives in preallocated tables: the UAC's call index is
//! encoded in the Call-ID, branch and From tag ([`token`]), so a response
//! finds its call in O(1) with no hashing; the UAS hashes the Call-ID into
//! a preallocated map. Requests are rendered from per-socket templates
//! whose per-call fields are patched in ([`template`]); the UAS builds a
//! response by copying the request's header lines. Nothing on the message
//! path goes through `core::fmt` or allocates once the tables are warm.
//!
//! [`synth`] keeps the proxy's hot-path reference: SIPp-shaped calls as
//! the proxy receives them, timed without sockets.

mod kind;
pub mod synth;
pub mod template;
mod timers;
pub mod token;
mod uac;
mod uas;

#[cfg(test)]
mod tests;

pub use kind::{Kind, KindCounts};
pub use timers::{UaTimers, T1_NS, T2_NS};
pub use uac::{Outcome, OutcomeCounts, Uac, UacConfig, UacStats};
pub use uas::{Uas, UasConfig, UasStats};

use std::net::SocketAddr;

/// One datagram to send, written by a `poll_transmit` call at the end of
/// the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Where it goes.
    pub dst: SocketAddr,
    /// Index of the local socket to send it from (the UAC spreads calls
    /// over its sockets; the UAS answers from the socket a request came in
    /// on).
    pub port: usize,
    /// Its length: the last `len` bytes of the buffer.
    pub len: usize,
}

/// Why a UA refused a datagram (it is counted, never fatal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UaError {
    /// The bytes are not a SIP message.
    #[error("malformed SIP message")]
    Malformed,
    /// A message that belongs to no call of this UA (or to an ended one).
    #[error("message for no known call")]
    Stray,
    /// A message this UA does not take part in (e.g. a request at the UAC).
    #[error("unexpected message")]
    Unexpected,
    /// The call table is full.
    #[error("call table full")]
    Full,
}
