//! The transaction record of the stateful proxy: a server transaction
//! (toward the upstream client) and the client transaction it created
//! (toward the next hop), RFC 3261 §17 with RFC 6026's Accepted state.
//!
//! A record is pure data plus deadlines; [`super::Proxy`] drives it with
//! an explicit clock (`now`, nanoseconds), so tests run timers on a
//! virtual clock.
//!
//! | timer | RFC | set when | fires |
//! |---|---|---|---|
//! | A | 17.1.1.2 | INVITE sent over UDP (T1, doubling) | retransmit INVITE |
//! | B | 17.1.1.2 | INVITE sent (64·T1) | give up: 408 upstream |
//! | C | 16.6 step 11 | INVITE sent / provisional received (> 3 min) | CANCEL or 408 |
//! | D | 17.1.1.2 | non-2xx final received (32 s UDP, 0 TCP) | client done |
//! | E | 17.1.2.2 | non-INVITE sent over UDP (T1, doubling to T2) | retransmit |
//! | F | 17.1.2.2 | non-INVITE sent (64·T1) | give up: 408 upstream |
//! | K | 17.1.2.2 | final received (T4 UDP, 0 TCP) | client done |
//! | G | 17.2.1 | non-2xx final sent over UDP (T1, doubling to T2) | retransmit response |
//! | H | 17.2.1 | non-2xx final sent (64·T1) | stop waiting for ACK |
//! | I | 17.2.1 | ACK received (T4 UDP, 0 TCP) | server done |
//! | J | 17.2.2 | non-INVITE final sent (64·T1 UDP, 0 TCP) | server done |
//! | L | RFC 6026 | 2xx forwarded (64·T1) | server done |

use super::Target;

/// Timer base values (RFC 3261 Table 4), in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timers {
    /// T1, RTT estimate (500 ms).
    pub t1: u64,
    /// T2, maximum retransmit interval for non-INVITE requests and INVITE responses (4 s).
    pub t2: u64,
    /// T4, maximum time a message stays in the network (5 s).
    pub t4: u64,
    /// Timer C, proxy INVITE transaction timeout (> 3 min).
    pub c: u64,
}

const MS: u64 = 1_000_000;

impl Default for Timers {
    fn default() -> Self {
        Timers {
            t1: 500 * MS,
            t2: 4_000 * MS,
            t4: 5_000 * MS,
            c: 181_000 * MS,
        }
    }
}

/// Server side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    /// No final response yet (non-INVITE "Trying" included).
    Proceeding,
    /// A final response was sent (non-2xx for INVITE).
    Completed,
    /// INVITE: the ACK for a non-2xx arrived.
    Confirmed,
    /// INVITE: a 2xx was forwarded (RFC 6026).
    Accepted,
    /// Done.
    Terminated,
}

/// Client side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientState {
    /// Request sent, nothing heard ("Trying" for non-INVITE).
    Calling,
    /// A provisional response arrived.
    Proceeding,
    /// A final response arrived; absorbing retransmissions.
    Completed,
    /// Done (or never started: the proxy answered itself).
    Terminated,
}

/// CANCEL progress (§9.1, §16.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelState {
    /// No CANCEL.
    None,
    /// Upstream cancelled before any provisional came back; send on the first one.
    Pending,
    /// Sent downstream.
    Sent,
}

/// What a new record is made from ([`Txn::start`]). The targets are
/// borrowed: they are copied once, into the record, not first into this.
#[derive(Debug, Clone, Copy)]
pub struct Fresh<'t> {
    /// INVITE transaction (else non-INVITE).
    pub invite: bool,
    /// Where responses go.
    pub upstream: &'t Target,
    /// Where the request went.
    pub downstream: &'t Target,
    /// Timer base values.
    pub timers: &'t Timers,
    /// When the request was forwarded.
    pub now: u64,
}

/// One proxy transaction.
#[derive(Debug)]
pub struct Txn {
    /// INVITE transaction (else non-INVITE).
    pub invite: bool,
    /// Server side.
    pub server: ServerState,
    /// Client side.
    pub client: ClientState,
    /// Where responses go.
    pub upstream: Target,
    /// Where the request went.
    pub downstream: Target,
    /// The forwarded request (our Via on top).
    pub request: Vec<u8>,
    /// The last response sent upstream.
    pub response: Vec<u8>,
    /// The ACK sent for a non-2xx final (resent on retransmissions).
    pub ack: Vec<u8>,
    /// The CANCEL sent downstream.
    pub cancel_req: Vec<u8>,
    /// CANCEL progress.
    pub cancel: CancelState,
    /// Next request retransmission (A/E), 0 = off.
    pub t_retx: u64,
    /// Current A/E interval.
    pub retx_interval: u64,
    /// B/F deadline.
    pub t_timeout: u64,
    /// Timer C deadline.
    pub t_c: u64,
    /// D/K deadline.
    pub t_wait: u64,
    /// Next response retransmission (G).
    pub t_resp_retx: u64,
    /// Current G interval.
    pub resp_interval: u64,
    /// H/I/J/L deadline.
    pub t_server_end: u64,
    /// Next CANCEL retransmission (E of the CANCEL's client transaction).
    pub t_cancel_retx: u64,
    /// CANCEL retransmission interval.
    pub cancel_interval: u64,
    /// CANCEL gives up (F of the CANCEL's client transaction).
    pub t_cancel_timeout: u64,
    /// The deadline this record is queued under in its shard's timer wheel (0 = none).
    pub scheduled: u64,
    /// Whether its shard counts it as lingering ([`Txn::only_absorbs`]
    /// held when it was last rescheduled); kept by the shard.
    pub lingering: bool,
    /// The key its shard holds it under (set by the shard when the record
    /// is inserted): the shard's timer and lingering queues name records
    /// by slot, and find the key here instead of probing the index.
    pub key: u64,
}

impl Txn {
    /// A fresh record for a request forwarded at `now`.
    pub fn new(invite: bool, upstream: Target, downstream: Target, t: &Timers, now: u64) -> Txn {
        let mut x = Txn {
            invite,
            server: ServerState::Proceeding,
            client: ClientState::Calling,
            upstream,
            downstream,
            request: Vec::new(),
            response: Vec::new(),
            ack: Vec::new(),
            cancel_req: Vec::new(),
            cancel: CancelState::None,
            t_retx: 0,
            retx_interval: 0,
            t_timeout: 0,
            t_c: 0,
            t_wait: 0,
            t_resp_retx: 0,
            resp_interval: 0,
            t_server_end: 0,
            t_cancel_retx: 0,
            cancel_interval: 0,
            t_cancel_timeout: 0,
            scheduled: 0,
            lingering: false,
            key: 0,
        };
        x.start(&Fresh {
            invite,
            upstream: &upstream,
            downstream: &downstream,
            timers: t,
            now,
        });
        x
    }

    /// Makes this record the fresh one `f` describes, in place: every
    /// state field and deadline is set as [`Txn::new`] sets it, and the
    /// four buffers are cleared but keep their allocations (a reused slot
    /// allocates nothing). In place rather than from a `Txn` built on the
    /// stack: moving a whole record in and dropping the old one would cost
    /// two hundred instructions on the message path.
    pub fn start(&mut self, f: &Fresh<'_>) {
        let t = f.timers;
        let now = f.now;
        let unreliable = f.downstream.transport == super::Transport::Udp;
        self.request.clear();
        self.response.clear();
        self.ack.clear();
        self.cancel_req.clear();
        self.invite = f.invite;
        self.server = ServerState::Proceeding;
        self.client = ClientState::Calling;
        self.upstream = *f.upstream;
        self.downstream = *f.downstream;
        self.cancel = CancelState::None;
        self.t_retx = if unreliable { now + t.t1 } else { 0 };
        self.retx_interval = t.t1;
        self.t_timeout = now + 64 * t.t1;
        self.t_c = if f.invite { now + t.c } else { 0 };
        self.t_wait = 0;
        self.t_resp_retx = 0;
        self.resp_interval = t.t1;
        self.t_server_end = 0;
        self.t_cancel_retx = 0;
        self.cancel_interval = t.t1;
        self.t_cancel_timeout = 0;
        self.scheduled = 0;
        self.lingering = false;
    }

    /// The earliest deadline, if any timer runs.
    pub fn next_deadline(&self) -> Option<u64> {
        [
            self.t_retx,
            self.t_timeout,
            self.t_c,
            self.t_wait,
            self.t_resp_retx,
            self.t_server_end,
            self.t_cancel_retx,
            self.t_cancel_timeout,
        ]
        .into_iter()
        .filter(|&d| d != 0)
        .min()
    }

    /// Whether the record only waits to absorb retransmissions: both
    /// sides have their final response (the server side Accepted or
    /// Confirmed, or a non-INVITE's Completed; the client side Completed or
    /// Terminated) and no CANCEL is in flight. Such a record sends nothing
    /// on a timer any more (Timers L, I, J, D, K only end it), so ending it
    /// early costs at most the absorption of a late retransmission, which
    /// then travels on statelessly: a retransmitted 2xx or non-2xx goes
    /// upstream by its Via, a retransmitted request downstream, where the
    /// next hop's own transaction absorbs it.
    pub fn only_absorbs(&self) -> bool {
        let server = match self.server {
            ServerState::Accepted | ServerState::Confirmed | ServerState::Terminated => true,
            ServerState::Completed => !self.invite,
            ServerState::Proceeding => false,
        };
        server
            && matches!(
                self.client,
                ClientState::Completed | ClientState::Terminated
            )
            && self.t_cancel_retx == 0
            && self.t_cancel_timeout == 0
    }

    /// Whether the record can go.
    pub fn is_done(&self) -> bool {
        self.server == ServerState::Terminated && self.client == ClientState::Terminated
    }

    fn upstream_unreliable(&self) -> bool {
        self.upstream.transport == super::Transport::Udp
    }

    /// The server side sent a final response (non-2xx for INVITE).
    pub fn server_final_sent(&mut self, t: &Timers, now: u64) {
        self.server = ServerState::Completed;
        if self.invite {
            if self.upstream_unreliable() {
                self.resp_interval = t.t1;
                self.t_resp_retx = now + t.t1;
            }
            self.t_server_end = now + 64 * t.t1; // H
        } else {
            self.t_server_end = if self.upstream_unreliable() {
                now + 64 * t.t1 // J
            } else {
                now
            };
        }
    }

    /// The client side stops retransmitting and timing out.
    pub fn client_stop(&mut self) {
        self.t_retx = 0;
        self.t_timeout = 0;
        self.t_c = 0;
    }

    /// The client side received a final response.
    pub fn client_final(&mut self, t: &Timers, now: u64) {
        self.client_stop();
        self.client = ClientState::Completed;
        let unreliable = self.downstream.transport == super::Transport::Udp;
        self.t_wait = match (self.invite, unreliable) {
            (true, true) => now + 32_000 * MS, // D
            (false, true) => now + t.t4,       // K
            (_, false) => now,
        };
    }
}
