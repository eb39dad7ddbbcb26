//! The proxy core (RFC 3261 §16), independent of sockets and clocks.
//!
//! [`Proxy::handle`] takes one received message with its source and the
//! current time and emits what to send through a [`Sink`]; [`Proxy::tick`]
//! runs due transaction timers. Workers call both; tests drive them with a
//! virtual clock and a recording sink.
//!
//! ## Modes
//! - [`Mode::Stateless`] (§16.11): nothing is remembered. Branches are
//!   deterministic (see [`branch`]), so retransmissions, CANCEL and the ACK
//!   to a non-2xx response follow the INVITE's path by construction.
//! - [`Mode::Stateful`]: every request gets a server and a client
//!   transaction ([`txn`]) in a sharded, bounded [`table`]: 100 Trying for
//!   INVITE, absorption of retransmissions, hop-by-hop ACK for non-2xx,
//!   CANCEL (§16.10), timers A–L and C, best-response selection.
//!
//! In stateless mode responses pass an ordering [`order`] gate: a
//! provisional response is never sent after a final response of its
//! transaction that the socket received later (the `shared` worker
//! model's two workers would otherwise invert a 180 and its 200).
//!
//! ## Cost of a message
//! The message path is built to touch little memory: the proxy parses
//! only what it acts on ([`Message::parse_proxy`]); nothing on it goes
//! through `core::fmt`; a stateful request locks its shard once, from the
//! lookup to the insert; records, their buffers and timer entries are
//! preallocated and written at start-up, reused last in, first out, and
//! the next record's lines are prefetched on a lookup miss; timers sit in
//! a hashed [`wheel`] (O(1) insert, lazy cancel).
//! `examples/path_cost.rs` measures it without sockets (per kind, ns or
//! callgrind instruction counts).
//!
//! A message that finds its core cold (every message, at moderate load)
//! pays mostly for the distinct code lines it runs through, a few ns each
//! on this project's VM, rather than for the instructions it executes: a
//! helper on the path is a loop or out of line when unrolling or inlining
//! it would spread it over more lines (`scripts/path_lines.sh` counts
//! them per kind; the crate README has the numbers).
//!
//! Both push a Via with a unique `z9hG4bK` branch, enforce Max-Forwards
//! (adding 70 when absent, 483 at zero), detect loops (482), add
//! Record-Route with `;lr` to dialog-creating requests, route loosely
//! (and strictly for strict next hops), and apply `received`/`rport`
//! (RFC 3581).
//!
//! ## Transport errors (§16.9, §18.1.1, §18.4)
//! - A request over [`ProxyConfig::udp_size_limit`] (1,300 bytes) bound for
//!   UDP goes over TCP; if TCP is off it is answered 513. When the TCP
//!   connection is *refused* ([`SendError::Refused`]) the request is sent
//!   over UDP after all (its UDP rendering is kept in the scratch buffer
//!   for that), and a stateful record retransmits it over UDP (Timer A).
//! - Stateful: a request that cannot be sent on its branch (a refused or
//!   failed connection, no transport for its size, or an ICMP error reported
//!   for it later, [`Proxy::bounced`]) ends its client transaction at once
//!   and counts as a 503 from that branch; with one branch that is the best
//!   response, answered upstream as "500 Server Internal Error (next hop
//!   unreachable)" (§16.7 step 6: a 503 would tell the caller that this
//!   proxy is unavailable), or 513 when the message was too large for every
//!   transport ([`Proxy::branch_failed`]), within milliseconds rather
//!   than after Timer B's 32 s.
//! - Stateless: nothing is remembered; a failed send is counted
//!   (`send_failed`) and the caller's retransmission tries again.
//! - Matching an ICMP error to its branch ([`Proxy::bounced`]): Linux hands
//!   back the start of the failed datagram as the ICMP message quoted it
//!   (at least the first ~500 bytes over IPv4, more over IPv6) and where it
//!   was sent. The proxy writes its own Via as the first header line, so
//!   the quoted bytes name the branch, hence the transaction, exactly; the
//!   record's next hop must also be where the datagram went. Not matched:
//!   ACK and CANCEL (they share their INVITE's branch and end nothing), a
//!   quote too short to hold the whole branch (a Request-URI of several
//!   hundred bytes), errors for responses (a response has no branch of
//!   ours to fail), and errors that arrive after the transaction got a
//!   final response. A forged ICMP error must quote a branch the proxy
//!   made, sent to where the record's request went.
//!
//! ## Overload
//! New INVITEs (no To tag) are shed with 503 + Retry-After when the
//! message waited longer than [`ShedPolicy::queue_delay_ns`] in the socket
//! queue or the transaction's shard of the table (the bound applies per
//! shard) is fuller than [`ShedPolicy::table_high_water`] with records
//! that do not linger: a record kept only to absorb retransmissions (an
//! INVITE's 32 s in Accepted) gives its room up to a new one ([`table`]
//! has the rule; counted as `transactions_reclaimed` in the statistics);
//! in-dialog requests and responses are never shed. When the table is full
//! of records that do not linger, non-INVITE requests are forwarded
//! statelessly instead.
//!
//! The shed decision comes before anything else is spent on a new INVITE
//! but the lookup that absorbs retransmissions of INVITEs the proxy holds
//! (no loop check, no record): the 503 is built from the request's Via,
//! From, To, Call-ID and CSeq with a To tag of its own (`taks…`), by which
//! its ACK is recognised and ended before any table lookup (counted as
//! `absorbed_shed`). A new INVITE that waited longer than
//! [`ShedPolicy::drop_delay_ns`] (T1 by default) is dropped without an
//! answer (`dropped_late`): its caller has retransmitted it by then, and the
//! copy queued behind it is the one to answer. The transports keep the
//! queue delay of new INVITEs apart from everything else's (the
//! `transport` module's Overload section), so that it is new INVITEs that
//! wait, and their socket that overflows.

pub mod branch;
pub mod build;
pub mod order;
pub mod route;
mod stateful;
pub mod table;
pub mod txn;
pub mod wheel;

use std::io::Write as _;
use std::net::SocketAddr;

use smallvec::SmallVec;

use self::branch::{loop_hash, parse_branch, request_key, Fnv};
use self::build::{
    forward_request, forward_response, local_response, Forward, Local, LocalOpts, Prebuilt, Stamp,
};
use self::route::{Resolver, RouteError};
use self::table::Table;
use self::txn::Timers;
use crate::wire::{HeaderName, Message, Method, ParseError, Rport, Span, Uri, Via};

/// A transport protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// UDP.
    Udp,
    /// TCP.
    Tcp,
}

impl std::str::FromStr for Transport {
    type Err = crate::name::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "udp" => Ok(Transport::Udp),
            "tcp" => Ok(Transport::Tcp),
            _ => Err(crate::name::UnknownName::new("transport", s, "udp, tcp")),
        }
    }
}

/// Identifies a TCP connection inside the transport layer.
pub type ConnId = u64;

/// Where a message goes (or came from).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// Address.
    pub addr: SocketAddr,
    /// Transport.
    pub transport: Transport,
    /// For TCP: the connection to use if it still exists.
    pub conn: Option<ConnId>,
}

/// Why a send failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The transport is not enabled.
    #[error("transport not available")]
    NoTransport,
    /// Connecting or writing failed.
    #[error("destination unreachable")]
    Unreachable,
    /// The connection was refused (a TCP reset or ICMP port or protocol
    /// unreachable in answer to the connection attempt): RFC 3261 §18.1.1
    /// then retries a request that went over TCP only for its size over
    /// UDP.
    #[error("connection refused")]
    Refused,
    /// The message is too large for the transport.
    #[error("message too large")]
    TooLarge,
}

/// Sends bytes. Implemented by the transport layer (which times the
/// system calls) and by tests.
pub trait Sink {
    /// Sends one message.
    fn send(&mut self, to: &Target, bytes: &[u8]) -> Result<(), SendError>;

    /// Sends `out[range]`: bytes of the proxy's output buffer (a
    /// [`Scratch`]'s). The default sends the slice. A sink that defers its
    /// sends (the batched transport's `sendmmsg`) may instead note the
    /// range and send from the buffer later, which [`Scratch::hold`] keeps
    /// intact for it.
    fn send_range(
        &mut self,
        to: &Target,
        out: &[u8],
        range: std::ops::Range<usize>,
    ) -> Result<(), SendError> {
        self.send(to, &out[range])
    }

    /// Sends the first of `sends` — each `(to, start, end)`, the bytes
    /// `out[start..end]` — in order, as far as it can with one system call,
    /// and returns how many it sent; the caller sends the rest one by one
    /// with [`Sink::send_range`] (which reports each one's error). The
    /// default sends none. The UDP transport sends a message's datagrams
    /// (an INVITE's 100 Trying and the forwarded INVITE) with one
    /// `sendmmsg`.
    fn send_leading(&mut self, sends: &[(Target, u32, u32)], out: &[u8]) -> usize {
        let _ = (sends, out);
        0
    }
}

/// Proxy mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// RFC 3261 §16.11.
    Stateless,
    /// Transaction-stateful.
    Stateful,
}

impl std::str::FromStr for Mode {
    type Err = crate::name::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "stateless" => Ok(Mode::Stateless),
            "stateful" => Ok(Mode::Stateful),
            _ => Err(crate::name::UnknownName::new(
                "mode",
                s,
                "stateless, stateful",
            )),
        }
    }
}

/// Default K_rcv at which every new INVITE is shed, ms.
pub const QUEUE_DELAY_MS: u64 = 300;
/// Default K_rcv at which shedding new INVITEs starts, ms.
///
/// Below a tenth of T1 a queue delay costs a call nothing (no timer of
/// its caller runs out), and delays of tens of ms come and go without
/// overload: a CPU quota's throttled periods (up to the quota's
/// off-time), a descheduled vCPU, m workers sharing one CPU. Starting to
/// shed at 20 ms refused calls in those transients: with it the lab's
/// 1%-drop searches read takt at 25,000–27,000 calls/s where the server
/// carries 35,000 at this threshold, and under half a CPU the overload
/// scenario kept less goodput (`takt sip torture --scenario overload
/// --cpu-limit 0.5`).
pub const QUEUE_DELAY_RAMP_MS: u64 = 100;
/// Default K_rcv past which a new INVITE is dropped without an answer, ms
/// (T1: its caller has retransmitted it).
pub const DROP_DELAY_MS: u64 = 500;

/// The To tag prefix of responses generated here.
const LOCAL_TAG: &[u8; 4] = b"takt";
/// The To tag prefix of the 503s new INVITEs are shed with: their ACKs
/// are recognised before any table lookup (no record was made).
const SHED_TAG: &[u8; 4] = b"taks";

/// When to shed new INVITEs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShedPolicy {
    /// Shed when the new transaction's shard of the table (where the bound
    /// applies) is fuller than this fraction with records that do not
    /// linger (see [`table`]: lingering ones give their room up).
    pub table_high_water: f64,
    /// Shed every new INVITE that waited longer than this in the socket
    /// queue (K_rcv), ns.
    pub queue_delay_ns: u64,
    /// Start shedding new INVITEs that waited longer than this, ns: between
    /// here and `queue_delay_ns` the share shed rises linearly from 0 to 1
    /// (so that shedding starts gently, before the socket queue overflows
    /// and loses messages of every kind, and the load settles inside the
    /// ramp instead of swinging between none shed and all shed). The
    /// decision is a hash of the transaction key against that share: an
    /// INVITE's retransmissions get the decision its first copy got.
    pub queue_delay_ramp_ns: u64,
    /// Drop a new INVITE that waited longer than this silently, ns (at or
    /// above `queue_delay_ns`; the default is T1, 500 ms: by then its
    /// caller has sent it again, and the copy behind it in the queue is
    /// the one to answer). Counted as `dropped_late`.
    pub drop_delay_ns: u64,
    /// Retry-After seconds in the 503.
    pub retry_after_s: u32,
}

impl ShedPolicy {
    /// The share of new INVITEs shed at queue delay `delay_ns`.
    pub fn shed_share(&self, delay_ns: u64) -> f64 {
        let (lo, hi) = (
            self.queue_delay_ramp_ns.min(self.queue_delay_ns),
            self.queue_delay_ns,
        );
        if delay_ns <= lo {
            0.0
        } else if delay_ns >= hi {
            1.0
        } else {
            (delay_ns - lo) as f64 / (hi - lo) as f64
        }
    }

    /// Whether a new INVITE that waited `delay_ns` is dropped without an
    /// answer.
    pub fn drops(&self, delay_ns: u64) -> bool {
        delay_ns > self.drop_delay_ns.max(self.queue_delay_ns)
    }

    /// Whether the new INVITE of transaction `key` is shed at `delay_ns`.
    pub fn sheds(&self, delay_ns: u64, key: u64) -> bool {
        let share = self.shed_share(delay_ns);
        // the key's top 53 bits as a uniform fraction in [0, 1)
        share >= 1.0 || (share > 0.0 && (key >> 11) as f64 * (1.0 / (1u64 << 53) as f64) < share)
    }
}

impl Default for ShedPolicy {
    fn default() -> Self {
        ShedPolicy {
            table_high_water: 0.9,
            queue_delay_ns: QUEUE_DELAY_MS * 1_000_000,
            queue_delay_ramp_ns: QUEUE_DELAY_RAMP_MS * 1_000_000,
            drop_delay_ns: DROP_DELAY_MS * 1_000_000,
            retry_after_s: 5,
        }
    }
}

/// Proxy configuration.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Stateless or stateful.
    pub mode: Mode,
    /// Our address in Via and Record-Route.
    pub local: Local,
    /// Static next hop for requests without a Route set.
    pub next_hop: Option<Target>,
    /// Add Record-Route to dialog-creating requests.
    pub record_route: bool,
    /// Transaction timers.
    pub timers: Timers,
    /// Most transactions held.
    pub max_transactions: usize,
    /// Table shards; 0: [`ProxyConfig::auto_shards`] of the worker count
    /// (the server resolves it; a `Proxy` made directly takes 4).
    ///
    /// Fewer shards keep each shard's metadata (lock, index, timer wheel)
    /// warm: at 1,000 calls/s a shard of 64 is touched every ~30 ms and its
    /// lines are cold each time, one of 4 every ~2 ms. Two per worker keep
    /// lock contention negligible (a worker holds a shard for about a
    /// microsecond per message).
    pub shards: usize,
    /// Overload shedding.
    pub shed: ShedPolicy,
    /// Requests larger than this go over TCP instead of UDP (§18.1.1: 1300).
    pub udp_size_limit: usize,
    /// Whether TCP is available for sending.
    pub tcp: bool,
    /// Stateless mode: gate responses per transaction so that a
    /// provisional response is never sent after a final one of the same
    /// transaction that arrived later ([`order`]; what keeps two workers
    /// of the `shared` model from inverting a 180 and its 200).
    pub order_responses: bool,
    /// Whether host names (not IP literals) in a Route or Request-URI are
    /// looked up with the system resolver (`getaddrinfo`, on the worker
    /// handling the request; kept 60 s, failures 10 s: see [`route`]).
    /// Off, such a request is answered 404 without a lookup: for a proxy
    /// that routes by its static next hop and IP addresses, where a name
    /// in a request would only let its sender stall a worker on DNS.
    pub resolve_names: bool,
}

impl ProxyConfig {
    /// The shard count for `workers` worker threads when `shards` is 0:
    /// two per worker, a power of two in 2..=64.
    pub fn auto_shards(workers: usize) -> usize {
        (2 * workers.max(1)).next_power_of_two().clamp(2, 64)
    }

    /// Defaults for a proxy at `local`.
    pub fn new(mode: Mode, local: Local) -> ProxyConfig {
        ProxyConfig {
            mode,
            local,
            next_hop: None,
            record_route: true,
            timers: Timers::default(),
            max_transactions: 262_144,
            shards: 0,
            shed: ShedPolicy::default(),
            udp_size_limit: 1300,
            tcp: true,
            order_responses: true,
            resolve_names: true,
        }
    }
}

/// A received message.
#[derive(Debug, Clone, Copy)]
pub struct Inbound<'a> {
    /// Its bytes (one datagram, or one framed stream message).
    pub bytes: &'a [u8],
    /// Where it came from (and over what).
    pub from: Target,
    /// Now, in nanoseconds of the proxy's clock.
    pub now: u64,
    /// How long it waited before the SIP layer got it (K_rcv), ns; 0 if unknown.
    pub queue_delay_ns: u64,
}

/// Message classes for statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MsgKind {
    /// INVITE
    Invite,
    /// ACK
    Ack,
    /// BYE
    Bye,
    /// CANCEL
    Cancel,
    /// REGISTER
    Register,
    /// OPTIONS
    Options,
    /// Other requests.
    OtherRequest,
    /// 1xx
    Provisional,
    /// 2xx
    Success,
    /// 3xx–6xx
    Failure,
    /// Did not parse.
    Malformed,
}

impl MsgKind {
    /// Every kind, in display order.
    pub const ALL: [MsgKind; 11] = [
        MsgKind::Invite,
        MsgKind::Ack,
        MsgKind::Bye,
        MsgKind::Cancel,
        MsgKind::Register,
        MsgKind::Options,
        MsgKind::OtherRequest,
        MsgKind::Provisional,
        MsgKind::Success,
        MsgKind::Failure,
        MsgKind::Malformed,
    ];

    /// Stable lower-case name.
    pub fn name(&self) -> &'static str {
        match self {
            MsgKind::Invite => "invite",
            MsgKind::Ack => "ack",
            MsgKind::Bye => "bye",
            MsgKind::Cancel => "cancel",
            MsgKind::Register => "register",
            MsgKind::Options => "options",
            MsgKind::OtherRequest => "other_request",
            MsgKind::Provisional => "1xx",
            MsgKind::Success => "2xx",
            MsgKind::Failure => "3xx_6xx",
            MsgKind::Malformed => "malformed",
        }
    }

    fn of(m: &Message<'_>) -> MsgKind {
        match (m.method(), m.status()) {
            (Some(Method::Invite), _) => MsgKind::Invite,
            (Some(Method::Ack), _) => MsgKind::Ack,
            (Some(Method::Bye), _) => MsgKind::Bye,
            (Some(Method::Cancel), _) => MsgKind::Cancel,
            (Some(Method::Register), _) => MsgKind::Register,
            (Some(Method::Options), _) => MsgKind::Options,
            (Some(_), _) => MsgKind::OtherRequest,
            (None, Some(c)) if c < 200 => MsgKind::Provisional,
            (None, Some(c)) if c < 300 => MsgKind::Success,
            _ => MsgKind::Failure,
        }
    }
}

/// What became of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// Forwarded.
    Forwarded,
    /// A retransmission absorbed by a transaction (perhaps answered from it).
    Absorbed,
    /// Answered here with this status.
    Replied(u16),
    /// A new INVITE shed with 503.
    Shed,
    /// A new INVITE that waited past [`ShedPolicy::drop_delay_ns`],
    /// dropped without an answer.
    DroppedLate,
    /// The ACK of a 503 this proxy shed with, ended here before any
    /// table lookup (its To tag is the shed tag).
    AbsorbedShed,
    /// Dropped: did not parse and could not be answered.
    DroppedMalformed,
    /// Dropped: a response whose top Via is not ours, or with no Via left.
    DroppedNotOurs,
    /// Dropped: a request that may not be answered (an ACK) failed a check.
    DroppedRejected,
    /// A send failed.
    SendFailed,
    /// Stateless: a provisional response dropped because a final response
    /// of its transaction that arrived later was already sent ([`order`]).
    DroppedReordered,
}

impl Disposition {
    /// Stable lower-case name.
    pub fn name(&self) -> String {
        match self {
            Disposition::Forwarded => "forwarded".into(),
            Disposition::Absorbed => "absorbed".into(),
            Disposition::Replied(c) => format!("replied_{c}"),
            Disposition::Shed => "shed".into(),
            Disposition::DroppedLate => "dropped_late".into(),
            Disposition::AbsorbedShed => "absorbed_shed".into(),
            Disposition::DroppedMalformed => "dropped_malformed".into(),
            Disposition::DroppedNotOurs => "dropped_not_ours".into(),
            Disposition::DroppedRejected => "dropped_rejected".into(),
            Disposition::SendFailed => "send_failed".into(),
            Disposition::DroppedReordered => "dropped_reordered".into(),
        }
    }
}

/// The result of handling one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Its class.
    pub kind: MsgKind,
    /// What became of it.
    pub disposition: Disposition,
    /// The parse error, for malformed input.
    pub error: Option<ParseError>,
    /// Stateful: the transaction table's shard was locked by another
    /// thread when this message asked for it (it waited).
    pub lock_contended: bool,
}

impl Outcome {
    fn new(kind: MsgKind, disposition: Disposition) -> Outcome {
        Outcome {
            kind,
            disposition,
            error: None,
            lock_contended: false,
        }
    }
}

/// Per-worker scratch space, reused for every message: the output buffer
/// and the list of sends into it.
#[derive(Debug, Default)]
pub struct Scratch {
    out: Vec<u8>,
    sends: SmallVec<[(Target, u32, u32); 4]>,
    /// A shard lock this message asked for was held by another thread.
    contended: bool,
    /// Output of earlier messages kept by [`Scratch::hold`]: `out[..base]`.
    base: usize,
    /// The send that forwards this message's request on its branch, if
    /// one was queued: its failure is the branch's (§16.9).
    branch: Option<BranchSend>,
}

/// The queued send of a forwarded request (see [`Scratch::flush`]).
#[derive(Debug, Clone, Copy)]
struct BranchSend {
    /// Its index in `Scratch::sends`.
    index: usize,
    /// The transaction key (our branch).
    key: u64,
    /// §18.1.1: the request goes over TCP only for its size; this is the
    /// same request rendered for UDP, sent when the connection is refused.
    udp_fallback: Option<(Target, u32, u32)>,
}

/// What became of a [`Scratch::flush`].
#[derive(Debug, Clone, Copy, Default)]
struct Flushed {
    /// Some send failed.
    failed: bool,
    /// The branch's request could not be sent: why.
    branch_error: Option<SendError>,
    /// The branch's request went over UDP after TCP was refused.
    fell_back: bool,
}

impl Scratch {
    /// Empty scratch with room for typical messages.
    pub fn new() -> Scratch {
        Scratch {
            out: Vec::with_capacity(8192),
            sends: SmallVec::new(),
            contended: false,
            base: 0,
            branch: None,
        }
    }

    /// Keeps what the messages handled so far wrote: the next message's
    /// output goes after it, and the ranges a deferring sink noted stay
    /// valid (the batched transport sends a whole batch from here with one
    /// `sendmmsg`, no copy). [`Scratch::release`] ends it.
    pub fn hold(&mut self) {
        self.base = self.out.len();
    }

    /// The output buffer, for a sink that noted ranges of it
    /// ([`Sink::send_range`]).
    pub fn output(&self) -> &[u8] {
        &self.out
    }

    /// Ends a [`Scratch::hold`]: all output is discarded.
    pub fn release(&mut self) {
        self.base = 0;
        self.out.clear();
        self.sends.clear();
    }

    /// Discards this message's output (what a [`Scratch::hold`] kept stays).
    fn clear(&mut self) {
        self.out.truncate(self.base);
        self.sends.clear();
        self.branch = None;
    }

    fn mark(&self) -> usize {
        self.out.len()
    }

    /// Sends everything queued. A refused TCP connection for a request
    /// that went over TCP only for its size is retried over UDP (§18.1.1).
    fn flush(&mut self, sink: &mut dyn Sink) -> Flushed {
        let mut f = Flushed::default();
        let branch = self.branch.map_or(usize::MAX, |b| b.index);
        let sent = match self.sends.len() {
            0 | 1 => 0,
            _ => sink.send_leading(&self.sends, &self.out),
        };
        for (i, &(to, a, b)) in self.sends.iter().enumerate().skip(sent) {
            let Err(e) = sink.send_range(&to, &self.out, a as usize..b as usize) else {
                continue;
            };
            if i != branch {
                f.failed = true;
                continue;
            }
            let e = match (e, self.branch.and_then(|b| b.udp_fallback)) {
                (SendError::Refused, Some((udp, a, b))) => {
                    match sink.send_range(&udp, &self.out, a as usize..b as usize) {
                        Ok(()) => {
                            f.fell_back = true;
                            continue;
                        }
                        Err(e) => e,
                    }
                }
                (e, _) => e,
            };
            f.failed = true;
            f.branch_error = Some(e);
        }
        self.sends.clear();
        f
    }

    fn queue(&mut self, to: Target, start: usize) {
        self.sends.push((to, start as u32, self.out.len() as u32));
    }
}

/// A request the proxy refuses, with its answer.
#[derive(Debug, Clone, Copy)]
struct Reject {
    code: u16,
    reason: &'static str,
    unsupported: bool,
}

/// Where and how a request is forwarded.
struct Plan {
    target: Target,
    new_ruri: Option<Span>,
    drop_routes: SmallVec<[usize; 3]>,
    append_route: Option<Span>,
    /// received/rport for the top Via (§18.2.1, RFC 3581), also what a
    /// 100 Trying echoes.
    stamp: Stamp,
}

/// Bytes of a new record's request buffer [`Proxy::prepare_idle`] loads:
/// a typical forwarded INVITE or BYE.
const IDLE_WARM_BYTES: usize = 1024;

/// The proxy.
#[derive(Debug)]
pub struct Proxy {
    cfg: ProxyConfig,
    prebuilt: Prebuilt,
    table: Table,
    resolver: Resolver,
    order: order::Gate,
}

/// The part of Route URI `uri` (a span of `b`) that may stand as a
/// Request-URI: without its header component (`?name=value…`), which RFC
/// 3261 allows in a Route but not in a Request-URI (§19.1.1; a strict
/// router's next hop loses it as a UAC's does, §12.2.1.1). The component
/// is the URI parser's: a `?` in the user part (`user-unreserved`) does
/// not begin it.
fn request_uri_of(b: &[u8], uri: Span) -> Span {
    match crate::wire::parse_uri(b, uri.start(), uri.end(), true) {
        // `h` starts after the `?`
        Ok(Uri {
            headers: Some(h), ..
        }) => Span::new(uri.start(), h.start() - 1),
        _ => uri,
    }
}

impl Proxy {
    /// A proxy with this configuration.
    pub fn new(cfg: ProxyConfig) -> Proxy {
        let shards = if cfg.shards == 0 { 4 } else { cfg.shards };
        let table = Table::new(shards, cfg.max_transactions);
        Proxy {
            prebuilt: Prebuilt::new(&cfg.local),
            resolver: Resolver::new(cfg.resolve_names),
            cfg,
            table,
            order: order::Gate::new(),
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &ProxyConfig {
        &self.cfg
    }

    /// Transactions held now.
    pub fn transactions(&self) -> usize {
        self.table.len()
    }

    /// Transactions held, from a counter kept on insert and removal
    /// (cheap: no lock taken).
    pub fn transactions_hint(&self) -> usize {
        self.table.len_hint()
    }

    /// Prepares for the next message while the calling worker has nothing
    /// to do (stateful: loads the records new transactions will use next,
    /// see [`Table::prepare_idle`]). Cheap, never blocks; call it before
    /// blocking in a receive.
    pub fn prepare_idle(&self) {
        if self.cfg.mode == Mode::Stateful {
            self.table.prepare_idle(IDLE_WARM_BYTES);
        }
    }

    /// Capacity of the transaction table.
    pub fn transaction_capacity(&self) -> usize {
        self.table.capacity()
    }

    /// Transactions held that only absorb retransmissions (lingering, see
    /// [`table`]), from the shards' published counts (no lock taken).
    pub fn transactions_lingering_hint(&self) -> usize {
        self.table.lingering_hint()
    }

    /// Lingering transactions ended early to make room for new ones, since
    /// start (see [`table`]; no lock taken).
    pub fn transactions_reclaimed_hint(&self) -> u64 {
        self.table.reclaimed_hint()
    }

    /// Handles one received message; everything to send goes through `sink`.
    pub fn handle(&self, inb: &Inbound<'_>, s: &mut Scratch, sink: &mut dyn Sink) -> Outcome {
        s.clear();
        s.contended = false;
        // parsed where it stays: the view is not moved (see `parse_proxy_in_place`)
        let mut m = Message::empty(inb.bytes);
        let mut outcome = match m.parse_proxy_empty() {
            Ok(()) if m.is_request() => self.on_request(&m, inb, s),
            Ok(()) => self.on_response(&m, inb, s, sink),
            Err(e) => self.on_malformed(inb, e, s),
        };
        let f = s.flush(sink);
        if f.failed {
            outcome.disposition = Disposition::SendFailed;
        }
        if let Some(b) = s.branch {
            if f.fell_back || f.branch_error.is_some() {
                self.branch_send_failed(b, f, inb.now, s, sink);
            }
        }
        outcome.lock_contended = s.contended;
        outcome
    }

    /// The forwarded request of this message could not go as planned
    /// (rare: not on the message path proper). Stateful: its record now
    /// says UDP ([`Flushed::fell_back`]), or the branch failed, which is a
    /// 503 from it at once (§16.9: the caller gets the best response, see
    /// [`Proxy::branch_failed`]). Stateless: nothing is remembered; the
    /// failure is counted and the caller's retransmission tries again.
    #[cold]
    fn branch_send_failed(
        &self,
        b: BranchSend,
        f: Flushed,
        now: u64,
        s: &mut Scratch,
        sink: &mut dyn Sink,
    ) {
        if self.cfg.mode != Mode::Stateful {
            return;
        }
        if f.fell_back {
            if let Some((udp, a, z)) = b.udp_fallback {
                let bytes = s.out[a as usize..z as usize].to_vec();
                stateful::now_over_udp(self, b.key, udp, &bytes, now);
            }
        } else if let Some(e) = f.branch_error {
            self.branch_failed(b.key, None, e, now, sink);
        }
    }

    /// A request this proxy forwarded on branch `key` could not be
    /// delivered: `error` from the transport (a refused or failed TCP
    /// connection, an ICMP error reported for the datagram, a message too
    /// large for any transport). `to`, when known, is where the failed
    /// message went: a record whose request went elsewhere is left alone.
    ///
    /// Stateful (§16.9, §17.1.1.2, §17.1.2.2): the client transaction ends
    /// at once and its branch's response is a 503 (a 513 when the message
    /// was too large); with one branch that is the best response, which
    /// §16.7 step 6 answers upstream as 500 (a 503 would tell the caller
    /// that this proxy is unavailable): "500 Server Internal Error (next
    /// hop unreachable)", or 513. Returns the status sent upstream, `None`
    /// when no record waits for a response on that branch (stateless
    /// mode, an unknown or finished branch, another destination).
    pub fn branch_failed(
        &self,
        key: u64,
        to: Option<std::net::SocketAddr>,
        error: SendError,
        now: u64,
        sink: &mut dyn Sink,
    ) -> Option<u16> {
        if self.cfg.mode != Mode::Stateful {
            return None;
        }
        stateful::branch_failed(self, key, to, error, now, sink)
    }

    /// A message the transport reported as undeliverable after it was
    /// sent (an ICMP error read from a UDP socket's error queue): `bytes`
    /// is the start of the datagram as the error quoted it, `to` where it
    /// was sent. Matched to its branch by content: it must be a request
    /// other than ACK or CANCEL whose top Via is ours, and its branch
    /// names the transaction ([`branch::parse_branch`]); the record's
    /// destination must be `to`. Then [`Proxy::branch_failed`]. Returns
    /// the status sent upstream, `None` when nothing matched.
    pub fn bounced(
        &self,
        bytes: &[u8],
        to: std::net::SocketAddr,
        error: SendError,
        now: u64,
        sink: &mut dyn Sink,
    ) -> Option<u16> {
        let key = bounced_branch(bytes, &self.cfg.local)?;
        self.branch_failed(key, Some(to), error, now, sink)
    }

    /// Tops the transaction table up to its reserve of vacant records and
    /// spare buffers ([`Table::replenish`]), so that no message grows it.
    /// For a thread that handles no messages: the transport's timer thread
    /// calls it after every tick. Returns the records added.
    pub fn replenish(&self) -> usize {
        if self.cfg.mode == Mode::Stateless {
            return 0;
        }
        self.table.replenish()
    }

    /// Runs the transaction timers due at `now`; returns how many records fired.
    pub fn tick(&self, now: u64, sink: &mut dyn Sink) -> usize {
        if self.cfg.mode == Mode::Stateless {
            return 0;
        }
        stateful::tick(self, now, sink)
    }

    /// Our To tag for responses we generate to `m` (stable across retransmissions).
    fn local_tag(&self, m: &Message<'_>) -> [u8; 20] {
        self.local_tag_as(m, LOCAL_TAG)
    }

    /// The To tag of responses generated here to `m`: `prefix` and 16
    /// hex digits of a hash of the request's Call-ID, From tag and CSeq
    /// number (what its ACK carries too).
    fn local_tag_as(&self, m: &Message<'_>, prefix: &[u8; 4]) -> [u8; 20] {
        let h = Fnv::default()
            .field(m.call_id())
            .field(m.from_tag().unwrap_or(b""))
            .num(u64::from(m.cseq_num()))
            .finish();
        let mut t = *b"----0000000000000000";
        t[..4].copy_from_slice(prefix);
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for i in 0..16 {
            t[4 + i] = HEX[((h >> ((15 - i) * 4)) & 0xf) as usize];
        }
        t
    }

    /// Writes a response generated here to request `m` as received.
    fn reply(
        &self,
        m: &Message<'_>,
        inb: &Inbound<'_>,
        code: u16,
        reason: &str,
        extra: &[u8],
        s: &mut Scratch,
    ) {
        self.reply_tagged(m, inb, code, reason, extra, &self.local_tag(m), s);
    }

    /// [`Proxy::reply`] with To tag `tag`.
    #[allow(clippy::too_many_arguments)]
    fn reply_tagged(
        &self,
        m: &Message<'_>,
        inb: &Inbound<'_>,
        code: u16,
        reason: &str,
        extra: &[u8],
        tag: &[u8],
        s: &mut Scratch,
    ) {
        let start = s.mark();
        local_response(
            &mut s.out,
            m,
            code,
            reason,
            LocalOpts {
                skip_top_via: false,
                stamp: Stamp::for_request(m, inb.from.addr),
                to_tag: Some(tag),
                extra,
            },
        );
        s.queue(self.response_target(m, inb), start);
    }

    /// Where responses to a request as received go (§18.2.2, RFC 3581):
    /// back over the connection for TCP; for UDP to `received`/source
    /// address and `rport`/sent-by port.
    fn response_target(&self, m: &Message<'_>, inb: &Inbound<'_>) -> Target {
        if inb.from.transport == Transport::Tcp {
            return inb.from;
        }
        let via = m.top_via();
        let port = match via.rport {
            Rport::Requested => inb.from.addr.port(),
            Rport::Value(p) => p,
            Rport::Absent => via.port.unwrap_or(5060),
        };
        Target {
            addr: SocketAddr::new(inb.from.addr.ip(), port),
            transport: Transport::Udp,
            conn: None,
        }
    }

    fn on_malformed(&self, inb: &Inbound<'_>, e: ParseError, s: &mut Scratch) -> Outcome {
        let mut o = Outcome::new(MsgKind::Malformed, Disposition::DroppedMalformed);
        o.error = Some(e);
        let start = s.mark();
        if let Some(code) = stateful::answer_malformed(inb, e, &mut s.out) {
            s.queue(inb.from, start);
            o.disposition = Disposition::Replied(code);
        }
        o
    }

    /// §16.3 checks; `Err` carries the answer.
    fn check(&self, m: &Message<'_>, lh: u32) -> Result<(), Reject> {
        if m.max_forwards() == Some(0) {
            return Err(Reject {
                code: 483,
                reason: "Too Many Hops",
                unsupported: false,
            });
        }
        let b = m.buf();
        // any Via of ours with this loop hash is a loop: the order of the
        // scan does not change the answer
        for via in m.vias() {
            if self.is_ours(b, via) {
                if let Some((_, h)) = via.branch.and_then(|br| parse_branch(br.of(b))) {
                    if h == lh {
                        return Err(Reject {
                            code: 482,
                            reason: "Loop Detected",
                            unsupported: false,
                        });
                    }
                }
            }
        }
        if m.header(HeaderName::ProxyRequire).is_some() && m.method() != Some(Method::Cancel) {
            return Err(Reject {
                code: 420,
                reason: "Bad Extension",
                unsupported: true,
            });
        }
        Ok(())
    }

    fn is_ours(&self, b: &[u8], via: &Via) -> bool {
        self.cfg.local.is_me(via.host.of(b), via.port)
    }

    /// §16.4 route processing and §16.5–16.6 target selection. A Route
    /// URI that becomes the Request-URI (strict routing) loses its header
    /// component ([`request_uri_of`]).
    fn plan(&self, m: &Message<'_>) -> Result<Plan, RouteError> {
        let b = m.buf();
        let routes = m.routes();
        let ruri = m.request_uri().expect("requests have a Request-URI");
        let mut drop: SmallVec<[usize; 3]> = SmallVec::new();
        let mut new_ruri = None;
        let mut first = 0;
        let mut last = routes.len();
        let is_me_uri = |s: Span| {
            crate::wire::parse_uri(b, s.start(), s.end(), true)
                .map(|u| self.cfg.local.is_me(u.host.of(b), u.port))
                .unwrap_or(false)
        };
        // a strict router before us put our Record-Route URI in the Request-URI
        if ruri.userinfo.is_none() && self.cfg.local.is_me(ruri.host.of(b), ruri.port) && last > 0 {
            new_ruri = Some(request_uri_of(b, routes[last - 1].uri));
            drop.push(last - 1);
            last -= 1;
        }
        if first < last && is_me_uri(routes[first].uri) {
            drop.push(first);
            first += 1;
        }
        let mut append_route = None;
        let target = if first < last {
            let r = routes[first];
            let t = self
                .resolver
                .target_of_span(b, r.uri.start(), r.uri.end())?;
            if !r.lr {
                // strict next hop: it becomes the Request-URI, the old one the last Route
                append_route = Some(new_ruri.unwrap_or(ruri.span));
                new_ruri = Some(request_uri_of(b, r.uri));
                drop.push(first);
            }
            t
        } else if let Some(nh) = self.cfg.next_hop {
            nh
        } else {
            let eff = new_ruri.unwrap_or(ruri.span);
            let u = crate::wire::parse_uri(b, eff.start(), eff.end(), true)
                .map_err(|_| RouteError::Scheme)?;
            if self.cfg.local.is_me(u.host.of(b), u.port) {
                return Err(RouteError::NoRoute);
            }
            self.resolver.target_of(b, &u)?
        };
        Ok(Plan {
            target,
            new_ruri,
            drop_routes: drop,
            append_route,
            stamp: Stamp::default(),
        })
    }

    /// Writes the forwarded request into `s.out` and queues it. Returns the
    /// start offset, or the answer when it cannot go (513).
    fn forward(
        &self,
        m: &Message<'_>,
        plan: &Plan,
        key: u64,
        lh: u32,
        s: &mut Scratch,
    ) -> Result<(usize, Target), Reject> {
        let method = m.method();
        let record_route = self.cfg.record_route
            && m.to_tag().is_none()
            && matches!(
                method,
                Some(Method::Invite | Method::Subscribe | Method::Refer)
            );
        let mut target = plan.target;
        let mut f = Forward {
            transport: target.transport,
            key,
            loop_hash: lh,
            local: &self.prebuilt,
            new_ruri: plan.new_ruri,
            drop_routes: &plan.drop_routes,
            append_route: plan.append_route,
            stamp: plan.stamp,
            record_route,
        };
        let mut start = s.mark();
        forward_request(&mut s.out, m, &f);
        let mut udp_fallback = None;
        if target.transport == Transport::Udp && s.out.len() - start > self.cfg.udp_size_limit {
            // §18.1.1: too large for UDP; TCP if we can, else 513
            if !self.cfg.tcp {
                s.out.truncate(start);
                return Err(Reject {
                    code: 513,
                    reason: "Message Too Large",
                    unsupported: false,
                });
            }
            // the UDP rendering stays: sent if the connection is refused
            udp_fallback = Some((target, start as u32, s.out.len() as u32));
            start = s.mark();
            target.transport = Transport::Tcp;
            f.transport = Transport::Tcp;
            forward_request(&mut s.out, m, &f);
        }
        // an ACK or CANCEL shares its INVITE's branch and ends no transaction
        if !matches!(m.method(), Some(Method::Ack | Method::Cancel)) {
            s.branch = Some(BranchSend {
                index: s.sends.len(),
                key,
                udp_fallback,
            });
        }
        s.queue(target, start);
        Ok((start, target))
    }

    fn refuse(
        &self,
        m: &Message<'_>,
        inb: &Inbound<'_>,
        kind: MsgKind,
        r: Reject,
        s: &mut Scratch,
    ) -> Outcome {
        if m.method() == Some(Method::Ack) {
            return Outcome::new(kind, Disposition::DroppedRejected);
        }
        let mut extra: SmallVec<[u8; 128]> = SmallVec::new();
        if r.unsupported {
            if let Some(v) = m.header(HeaderName::ProxyRequire) {
                extra.extend_from_slice(b"Unsupported: ");
                extra.extend_from_slice(v);
                extra.extend_from_slice(b"\r\n");
            }
        }
        self.reply(m, inb, r.code, r.reason, &extra, s);
        Outcome::new(kind, Disposition::Replied(r.code))
    }

    fn should_shed(&self, m: &Message<'_>, inb: &Inbound<'_>, key: u64) -> bool {
        if m.method() != Some(Method::Invite) || m.to_tag().is_some() {
            return false;
        }
        let p = &self.cfg.shed;
        if p.sheds(inb.queue_delay_ns, key) {
            return true;
        }
        self.cfg.mode == Mode::Stateful && self.table.fill_of(key) > p.table_high_water
    }

    fn shed(&self, m: &Message<'_>, inb: &Inbound<'_>, s: &mut Scratch) -> Outcome {
        let mut extra = [0u8; 40];
        let n = {
            let mut w = &mut extra[..];
            let _ = write!(w, "Retry-After: {}\r\n", self.cfg.shed.retry_after_s);
            40 - w.len()
        };
        let extra = &extra[..n];
        let tag = self.local_tag_as(m, SHED_TAG);
        self.reply_tagged(m, inb, 503, "Service Unavailable", extra, &tag, s);
        Outcome::new(MsgKind::Invite, Disposition::Shed)
    }

    fn on_request(&self, m: &Message<'_>, inb: &Inbound<'_>, s: &mut Scratch) -> Outcome {
        let kind = MsgKind::of(m);
        // the ACK of a 503 we shed with: no record was made for it
        if m.method() == Some(Method::Ack)
            && m.to_tag()
                .is_some_and(|t| t.starts_with(SHED_TAG) && t == self.local_tag_as(m, SHED_TAG))
        {
            return Outcome::new(kind, Disposition::AbsorbedShed);
        }
        let key = request_key(m);
        // stateful: the key's shard stays locked from the lookup to the
        // new record's insertion (one lock, one lookup per request)
        let mut shard = None;
        if self.cfg.mode == Mode::Stateful {
            let mut sh = self.table.shard_noting(key, &mut s.contended);
            if let Some(o) = stateful::match_request(self, &mut sh, m, inb, kind, key, s) {
                return o;
            }
            shard = Some(sh);
        }
        // the ACK to a negative response we generated ends here
        if m.method() == Some(Method::Ack)
            && m.to_tag()
                .is_some_and(|t| t.starts_with(b"takt") && t == self.local_tag(m))
        {
            return Outcome::new(kind, Disposition::Absorbed);
        }
        // overload: a new INVITE is refused (or dropped) before anything
        // else is spent on it, the loop check included
        if m.method() == Some(Method::Invite) && m.to_tag().is_none() {
            if self.cfg.shed.drops(inb.queue_delay_ns) {
                return Outcome::new(kind, Disposition::DroppedLate);
            }
            if self.should_shed(m, inb, key) {
                return self.shed(m, inb, s);
            }
        }
        let lh = loop_hash(m);
        if let Err(r) = self.check(m, lh) {
            return self.refuse(m, inb, kind, r, s);
        }
        if shard.is_some() && !(m.routes().is_empty() && self.cfg.next_hop.is_some()) {
            // planning may ask the system resolver: not under the shard's
            // lock (retaken below; `Shard::insert` keeps a record a racing
            // retransmission created meanwhile)
            shard = None;
        }
        let mut plan = match self.plan(m) {
            Ok(p) => p,
            Err(e) => {
                let (code, reason) = e.response();
                return self.refuse(
                    m,
                    inb,
                    kind,
                    Reject {
                        code,
                        reason,
                        unsupported: false,
                    },
                    s,
                );
            }
        };
        plan.stamp = Stamp::for_request(m, inb.from.addr);
        if self.cfg.mode == Mode::Stateful
            && !matches!(m.method(), Some(Method::Ack | Method::Cancel))
        {
            let sh = match shard {
                Some(sh) => sh,
                None => self.table.shard_noting(key, &mut s.contended),
            };
            return stateful::new_transaction(self, sh, m, inb, kind, &plan, key, lh, s);
        }
        drop(shard);
        match self.forward(m, &plan, key, lh, s) {
            Ok(_) => Outcome::new(kind, Disposition::Forwarded),
            Err(r) => self.refuse(m, inb, kind, r, s),
        }
    }

    /// Where a response goes after our Via is popped: the next Via.
    fn upstream_of(&self, m: &Message<'_>) -> Option<Target> {
        let b = m.buf();
        let via = m.vias().get(1)?;
        let transport = if via.transport.of(b).eq_ignore_ascii_case(b"TCP") {
            Transport::Tcp
        } else {
            Transport::Udp
        };
        let host = via.received.unwrap_or(via.host).of(b);
        let port = match via.rport {
            Rport::Value(p) => p,
            _ => via.port.unwrap_or(5060),
        };
        let addr = self.resolver.resolve(host, port).ok()?;
        Some(Target {
            addr,
            transport,
            conn: None,
        })
    }

    fn on_response(
        &self,
        m: &Message<'_>,
        _inb: &Inbound<'_>,
        s: &mut Scratch,
        sink: &mut dyn Sink,
    ) -> Outcome {
        let kind = MsgKind::of(m);
        let b = m.buf();
        let via = m.top_via();
        let key = match via.branch.and_then(|br| parse_branch(br.of(b))) {
            Some((key, _)) if self.is_ours(b, via) => key,
            _ => return Outcome::new(kind, Disposition::DroppedNotOurs),
        };
        if self.cfg.mode == Mode::Stateful {
            if let Some(o) = stateful::match_response(self, m, key, kind, _inb.now, s, sink) {
                return o;
            }
        } else if self.cfg.order_responses {
            // decide and send under the key's gate (see `order`)
            let arrival = _inb.now.saturating_sub(_inb.queue_delay_ns);
            let provisional = m.status().is_some_and(|c| c < 200);
            let mut ticket = self.order.admit(key, arrival, provisional);
            if !ticket.forward {
                return Outcome::new(kind, Disposition::DroppedReordered);
            }
            let mut o = self.forward_response_stateless(m, kind, s);
            if o.disposition == Disposition::Forwarded {
                if !provisional {
                    ticket.sent_final(arrival);
                }
                if s.flush(sink).failed {
                    o.disposition = Disposition::SendFailed;
                }
            }
            drop(ticket);
            return o;
        }
        self.forward_response_stateless(m, kind, s)
    }

    fn forward_response_stateless(
        &self,
        m: &Message<'_>,
        kind: MsgKind,
        s: &mut Scratch,
    ) -> Outcome {
        let Some(to) = self.upstream_of(m) else {
            return Outcome::new(kind, Disposition::DroppedNotOurs);
        };
        let start = s.mark();
        if !forward_response(&mut s.out, m) {
            return Outcome::new(kind, Disposition::DroppedNotOurs);
        }
        s.queue(to, start);
        Outcome::new(kind, Disposition::Forwarded)
    }
}

/// The transaction key of a request this proxy sent, from the start of
/// its bytes as an ICMP error quotes them (possibly cut short): the
/// request line must name a method other than ACK and CANCEL (their
/// branch is the INVITE's, whose failure they do not report), and the
/// first header line must be our Via (the proxy writes it there) with a
/// branch of ours, complete.
fn bounced_branch(b: &[u8], local: &Local) -> Option<u64> {
    let line_end = |from: usize| {
        b[from..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .map(|p| from + p)
    };
    let first = line_end(0)?;
    let method = b[..first].split(|&c| c == b' ').next()?;
    if method.is_empty() || method == b"ACK" || method == b"CANCEL" || method == b"SIP/2.0" {
        return None;
    }
    let via_end = line_end(first + 2)?;
    let via = &b[first + 2..via_end];
    let value = via
        .strip_prefix(b"Via:")
        .or_else(|| via.strip_prefix(b"v:"))?
        .trim_ascii_start();
    // `SIP/2.0/UDP host[:port];branch=...`: our sent-by first
    let sent_by = value.split(|&c| c == b' ').nth(1)?;
    let sent_by = &sent_by[..sent_by.iter().position(|&c| c == b';')?];
    let host_end = if sent_by.first() == Some(&b'[') {
        sent_by.iter().position(|&c| c == b']')? + 1
    } else {
        sent_by
            .iter()
            .position(|&c| c == b':')
            .unwrap_or(sent_by.len())
    };
    let (host, port) = sent_by.split_at(host_end);
    let port = match port {
        [] => None,
        [b':', digits @ ..] => Some(std::str::from_utf8(digits).ok()?.parse::<u16>().ok()?),
        _ => return None,
    };
    if !local.is_me(host, port) {
        return None;
    }
    let at = value.windows(8).position(|w| w == b";branch=")? + 8;
    let br = &value[at..];
    let br = &br[..br.iter().position(|&c| c == b';').unwrap_or(br.len())];
    parse_branch(br).map(|(key, _)| key)
}

#[cfg(test)]
mod tests;
