//! The user agent client: places calls and sees them through.

use std::collections::VecDeque;
use std::net::SocketAddr;

use hdrhistogram::Histogram;

use super::kind::{Kind, KindCounts};
use super::template::{Fill, Template};
use super::timers::{Queues, TimerKind, UaTimers};
use super::token;
use super::{Transmit, UaError};
use crate::proxy::Transport;
use crate::wire::{split_commas, HeaderName, Message, Method};

/// The body of every INVITE (and of the UAS's 200): one PCMU stream.
pub(crate) const SDP: &str = "v=0\r\no=takt 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 6000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n";

/// Longest remote tag kept; a 2xx with a longer one fails its call.
const TAG_MAX: usize = 64;

/// Most distinct (remote target, route set) pairs remembered; dialogs
/// beyond are counted in [`UacStats::dialog_overflow`] and sent along
/// the initial request's path.
const DIALOG_TARGETS_MAX: usize = 1024;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// 200 to the INVITE, ACK, BYE, 200 to the BYE.
    Completed,
    /// The INVITE was refused with 503 (overload).
    Rejected503,
    /// The INVITE was refused with another final response, 300–699.
    RejectedOther,
    /// No final response to the INVITE within Timer B.
    Timeout,
    /// The call was answered, but its BYE got a failure or no final
    /// response within Timer F.
    ByeFailed,
    /// Not placed: every slot of the call table was in use.
    NoSlot,
}

impl Outcome {
    /// How many outcomes there are.
    pub const COUNT: usize = 6;
    /// All outcomes, in report order.
    pub const ALL: [Outcome; Outcome::COUNT] = [
        Outcome::Completed,
        Outcome::Rejected503,
        Outcome::RejectedOther,
        Outcome::Timeout,
        Outcome::ByeFailed,
        Outcome::NoSlot,
    ];

    /// Its stable name.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Rejected503 => "503",
            Outcome::RejectedOther => "rejected_other",
            Outcome::Timeout => "timeout",
            Outcome::ByeFailed => "bye_failed",
            Outcome::NoSlot => "no_slot",
        }
    }
}

/// A counter per [`Outcome`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutcomeCounts([u64; Outcome::COUNT]);

impl OutcomeCounts {
    /// The count of `o`.
    pub fn get(&self, o: Outcome) -> u64 {
        self.0[o as usize]
    }

    /// Calls ended in any outcome but [`Outcome::Completed`].
    pub fn failed(&self) -> u64 {
        self.0.iter().sum::<u64>() - self.get(Outcome::Completed)
    }

    /// Calls ended.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    fn bump(&mut self, o: Outcome) {
        self.0[o as usize] += 1;
    }
}

/// UAC settings.
#[derive(Debug, Clone)]
pub struct UacConfig {
    /// The local address of each socket the calls are spread over (call
    /// `i` uses socket `i % locals.len()`); written into Via, From and
    /// Contact. At least one.
    pub locals: Vec<SocketAddr>,
    /// Where every request goes: the outbound proxy (RFC 3261 §8.1.2),
    /// whatever the Request-URI or the route set names.
    pub proxy: SocketAddr,
    /// The INVITE's Request-URI and To: `sip:service@UAS` (see
    /// [`UacConfig::with_uas`]; as SIPp's `-rsa`), so that a proxy routing
    /// on the Request-URI (§16.5) forwards to the UAS. [`UacConfig::new`]
    /// puts the proxy's address there: a UAS at that address, no proxy
    /// between.
    pub request_uri: String,
    /// A preloaded route (§8.1.2): the value of a `Route:` line written
    /// into every INVITE and into the ACK of a failure response (§17.1.1.3),
    /// e.g. `<sip:127.0.0.1:5060;lr>` ([`UacConfig::with_route_preload`]),
    /// for a proxy that forwards only requests routed through it. `None`:
    /// no Route (in-dialog requests follow the Record-Route either way).
    pub route: Option<String>,
    /// Calls that may be in progress at once (the preallocated table).
    pub max_calls: usize,
    /// Time between the ACK and the BYE, ns.
    pub hold_ns: u64,
    /// Timer settings.
    pub timers: UaTimers,
    /// Distinguishes this run's calls from any other's (in Call-IDs).
    pub run_id: u32,
    /// The transport the requests travel on: written into Via (and, for
    /// TCP, as `;transport=tcp` into Contact); over TCP, a reliable
    /// transport, the INVITE and BYE are never retransmitted (RFC 3261
    /// §17.1.1.2, §17.1.2.2: Timers A and E run only on unreliable
    /// transports), while Timers B and F still end the transactions.
    pub transport: Transport,
}

impl UacConfig {
    /// Defaults: one socket at `local`, calls to `proxy`, 65,536 calls in
    /// progress at most, no hold time, RFC 3261 timers.
    pub fn new(local: SocketAddr, proxy: SocketAddr) -> UacConfig {
        UacConfig {
            locals: vec![local],
            proxy,
            request_uri: format!("sip:service@{proxy}"),
            route: None,
            max_calls: 1 << 16,
            hold_ns: 0,
            timers: UaTimers::default(),
            run_id: 0,
            transport: Transport::Udp,
        }
    }

    /// Over `transport`: for TCP, a Request-URI [`UacConfig::new`] or
    /// [`UacConfig::with_uas`] wrote gains `;transport=tcp` (so that a
    /// proxy routing by Request-URI forwards over TCP too), and so does a
    /// preloaded route.
    pub fn with_transport(mut self, transport: Transport) -> UacConfig {
        self.transport = transport;
        if self.request_uri.starts_with("sip:service@") && !self.request_uri.contains(';') {
            self.request_uri.push_str(self.uri_param());
        }
        if self.route.as_deref() == Some(&format!("<sip:{};lr>", self.proxy)) {
            self = self.with_route_preload();
        }
        self
    }

    /// Calls to a UAS at `uas`: the Request-URI becomes
    /// `sip:service@UAS` (with `;transport=tcp` over TCP). The requests
    /// still go to [`UacConfig::proxy`].
    pub fn with_uas(mut self, uas: SocketAddr) -> UacConfig {
        self.request_uri = format!("sip:service@{uas}{}", self.uri_param());
        self
    }

    /// Preloads the route `<sip:PROXY;lr>` (with `;transport=tcp` over
    /// TCP): see [`UacConfig::route`].
    pub fn with_route_preload(mut self) -> UacConfig {
        self.route = Some(format!("<sip:{}{};lr>", self.proxy, self.uri_param()));
        self
    }

    /// The URI parameter naming the transport (empty for UDP).
    fn uri_param(&self) -> &'static str {
        match self.transport {
            Transport::Udp => "",
            Transport::Tcp => ";transport=tcp",
        }
    }

    /// Whether requests are retransmitted: asked for, and the transport
    /// is unreliable.
    fn retransmits(&self) -> bool {
        self.timers.retransmit && self.transport == Transport::Udp
    }
}

/// What the UAC counted.
#[derive(Debug, Clone)]
pub struct UacStats {
    /// Calls placed (including those refused for [`Outcome::NoSlot`]).
    pub attempted: u64,
    /// How the ended calls ended.
    pub outcomes: OutcomeCounts,
    /// Messages sent, by kind (retransmissions included).
    pub sent: KindCounts,
    /// Messages received, by kind.
    pub received: KindCounts,
    /// Retransmissions sent, by kind (INVITE, BYE, and ACKs repeated for
    /// a repeated 200).
    pub retransmitted: KindCounts,
    /// Datagrams that did not parse.
    pub malformed: u64,
    /// Responses for no call in progress (late retransmissions, or calls
    /// of another run).
    pub stray: u64,
    /// Messages the UAC has no part in (requests; responses out of order).
    pub unexpected: u64,
    /// Dialogs whose remote target and route set could not be kept.
    pub dialog_overflow: u64,
    /// 2xx responses whose Contact URI could not be a Request-URI
    /// (empty, or holding whitespace or control characters, such as a
    /// folded line): the dialog's requests go to the initial Request-URI.
    pub bad_contact: u64,
    /// Final failure responses (300–699) received, by status code: index
    /// `code - 300` (retransmitted ones included).
    pub failure_codes: Vec<u64>,
    /// INVITE sent → first 180 received, ns.
    pub invite_to_180: Histogram<u64>,
    /// INVITE sent → 200 received, ns.
    pub invite_to_200: Histogram<u64>,
}

impl UacStats {
    fn new() -> UacStats {
        let h = || Histogram::new_with_bounds(1_000, 3_600_000_000_000, 3).expect("valid bounds");
        UacStats {
            attempted: 0,
            outcomes: OutcomeCounts::default(),
            sent: KindCounts::default(),
            received: KindCounts::default(),
            retransmitted: KindCounts::default(),
            malformed: 0,
            stray: 0,
            unexpected: 0,
            dialog_overflow: 0,
            bad_contact: 0,
            failure_codes: vec![0; 400],
            invite_to_180: h(),
            invite_to_200: h(),
        }
    }
}

/// Where a call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Slot unused.
    Free,
    /// INVITE sent, nothing heard yet (retransmitting).
    Calling,
    /// A provisional response arrived.
    Proceeding,
    /// Answered and ACKed; waiting out the hold time.
    Holding,
    /// BYE sent, waiting for its final response.
    Terminating,
}

/// One slot of the call table.
#[derive(Debug, Clone)]
struct Call {
    /// Incarnation: bumped when the slot is taken, so a late response of
    /// an earlier call does not match.
    seq: u32,
    state: State,
    /// Socket index.
    port: u16,
    /// Index into `Uac::dialogs` (0: the initial request's path).
    dialog: u16,
    tag_len: u8,
    tag: [u8; TAG_MAX],
    ringing: bool,
    /// When the INVITE was first sent.
    started: u64,
    /// Deadline of the armed retransmission (0: none).
    retx_due: u64,
    /// Current retransmission interval.
    retx_every: u64,
    /// Deadline of Timer B or F (0: none).
    deadline: u64,
    /// End of the hold time (0: none).
    hold_due: u64,
}

impl Call {
    const FREE: Call = Call {
        seq: 0,
        state: State::Free,
        port: 0,
        dialog: 0,
        tag_len: 0,
        tag: [0; TAG_MAX],
        ringing: false,
        started: 0,
        retx_due: 0,
        retx_every: 0,
        deadline: 0,
        hold_due: 0,
    };
}

/// A message waiting for `poll_transmit`.
#[derive(Debug, Clone, Copy)]
enum Out {
    Invite {
        slot: u32,
        seq: u32,
    },
    Ack {
        slot: u32,
        seq: u32,
    },
    Bye {
        slot: u32,
        seq: u32,
    },
    /// Already rendered into `Uac::raw[start..start + len]`.
    Raw {
        start: usize,
        len: usize,
        port: u16,
    },
}

/// The templates of one socket.
#[derive(Debug)]
struct Templates {
    invite: Template,
    ack: Template,
    /// ACK to a failure response: the INVITE's branch and Request-URI.
    ack_failure: Template,
    bye: Template,
}

impl Templates {
    fn new(local: SocketAddr, ruri: &str, route: Option<&str>, transport: Transport) -> Templates {
        let (via, param) = match transport {
            Transport::Udp => ("UDP", ""),
            Transport::Tcp => ("TCP", ";transport=tcp"),
        };
        let common = |branch: &str| {
            format!(
                "Via: SIP/2.0/{via} {local};branch=z9hG4bK{{token}}{branch};rport\r\nMax-Forwards: 70\r\nFrom: \"takt\" <sip:takt@{local}>;tag={{token}}\r\n"
            )
        };
        let preloaded = route.map_or_else(String::new, |r| format!("Route: {r}\r\n"));
        let invite = format!(
            "INVITE {ruri} SIP/2.0\r\n{}{preloaded}To: <{ruri}>\r\nCall-ID: {{token}}@takt\r\nCSeq: 1 INVITE\r\nContact: <sip:takt@{local}{param}>\r\nSubject: Performance Test\r\nContent-Type: application/sdp\r\nContent-Length: {}\r\n\r\n{SDP}",
            common("i"),
            SDP.len()
        );
        let in_dialog = |method: &str, cseq: u32, branch: &str, target: &str, routes: &str| {
            format!(
                "{method} {target} SIP/2.0\r\n{}{routes}To: <{ruri}>;tag={{totag}}\r\nCall-ID: {{token}}@takt\r\nCSeq: {cseq} {method}\r\nContent-Length: 0\r\n\r\n",
                common(branch)
            )
        };
        Templates {
            invite: Template::new(&invite),
            ack: Template::new(&in_dialog("ACK", 1, "a", "{target}", "{routes}")),
            ack_failure: Template::new(&in_dialog("ACK", 1, "i", ruri, &preloaded)),
            bye: Template::new(&in_dialog("BYE", 2, "b", "{target}", "{routes}")),
        }
    }
}

/// Where in-dialog requests of a dialog go.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DialogTarget {
    /// The Request-URI: the remote Contact's URI.
    target: Vec<u8>,
    /// `Route:` lines, from the Record-Route of the 2xx in reverse.
    routes: Vec<u8>,
}

/// A sans-I/O UAC: see the [module documentation](super).
#[derive(Debug)]
pub struct Uac {
    cfg: UacConfig,
    templates: Vec<Templates>,
    calls: Vec<Call>,
    /// Free slots, taken last in, first out.
    free: Vec<u32>,
    timers: Queues,
    out: VecDeque<Out>,
    /// Rendered messages (ACKs to failures) waiting in `out`.
    raw: Vec<u8>,
    /// Index 0: the initial request's path (Request-URI, no routes).
    dialogs: Vec<DialogTarget>,
    /// A 2xx's target and routes being interned (reused buffer).
    scratch: DialogTarget,
    stats: UacStats,
}

impl Uac {
    /// A UAC with every slot of its call table allocated.
    ///
    /// # Panics
    /// If `cfg.locals` is empty, holds more than 65,536 sockets, or
    /// `cfg.max_calls` is 0 or above 2^31.
    pub fn new(cfg: UacConfig) -> Uac {
        assert!(
            !cfg.locals.is_empty() && cfg.locals.len() <= 1 << 16,
            "1 to 65536 local sockets"
        );
        assert!(
            cfg.max_calls > 0 && cfg.max_calls <= 1 << 31,
            "call table of 1 to 2^31 slots"
        );
        let templates = cfg
            .locals
            .iter()
            .map(|&l| Templates::new(l, &cfg.request_uri, cfg.route.as_deref(), cfg.transport))
            .collect();
        let n = cfg.max_calls;
        let initial = DialogTarget {
            target: cfg.request_uri.clone().into_bytes(),
            routes: Vec::new(),
        };
        Uac {
            templates,
            calls: vec![Call::FREE; n],
            free: (0..n as u32).rev().collect(),
            timers: Queues::default(),
            out: VecDeque::with_capacity(1024),
            raw: Vec::with_capacity(16 << 10),
            dialogs: vec![initial],
            scratch: DialogTarget {
                target: Vec::with_capacity(128),
                routes: Vec::with_capacity(256),
            },
            stats: UacStats::new(),
            cfg,
        }
    }

    /// Its settings.
    pub fn config(&self) -> &UacConfig {
        &self.cfg
    }

    /// What it counted so far.
    pub fn stats(&self) -> &UacStats {
        &self.stats
    }

    /// Calls in progress.
    pub fn active(&self) -> usize {
        self.calls.len() - self.free.len()
    }

    /// Places a call at `now`: its INVITE is queued for
    /// [`poll_transmit`](Self::poll_transmit). Returns the call's slot, or
    /// [`UaError::Full`] when every slot is in use (the call is then
    /// counted as attempted and ended as [`Outcome::NoSlot`]).
    pub fn start_call(&mut self, now: u64) -> Result<u32, UaError> {
        let port = (self.stats.attempted % self.templates.len() as u64) as u16;
        self.stats.attempted += 1;
        let Some(slot) = self.free.pop() else {
            self.stats.outcomes.bump(Outcome::NoSlot);
            return Err(UaError::Full);
        };
        let t = self.cfg.timers;
        let retransmits = self.cfg.retransmits();
        let c = &mut self.calls[slot as usize];
        c.seq = c.seq.wrapping_add(1);
        c.state = State::Calling;
        c.port = port;
        c.dialog = 0;
        c.tag_len = 0;
        c.ringing = false;
        c.started = now;
        c.hold_due = 0;
        let seq = c.seq;
        c.retx_every = t.t1_ns;
        c.retx_due = if retransmits {
            self.timers
                .arm(now, t.t1_ns, slot, seq, TimerKind::Retransmit)
        } else {
            0
        };
        c.deadline = self
            .timers
            .arm(now, t.timeout_ns(), slot, seq, TimerKind::Timeout);
        self.out.push_back(Out::Invite { slot, seq });
        Ok(slot)
    }

    /// The next timer deadline, if any (call
    /// [`handle_timeout`](Self::handle_timeout) once `now` reaches it).
    pub fn poll_timeout(&self) -> Option<u64> {
        self.timers.next()
    }

    /// Runs every timer due at `now`: retransmissions, Timer B and F,
    /// ends of hold time.
    pub fn handle_timeout(&mut self, now: u64) {
        let t = self.cfg.timers;
        while let Some(e) = self.timers.pop_due(now) {
            let c = &mut self.calls[e.slot as usize];
            if c.seq != e.seq || c.state == State::Free {
                continue;
            }
            match e.kind {
                TimerKind::Retransmit if c.retx_due == e.due => {
                    let (out, kind, every) = match c.state {
                        State::Calling => (
                            Out::Invite {
                                slot: e.slot,
                                seq: e.seq,
                            },
                            Kind::Invite,
                            c.retx_every * 2,
                        ),
                        State::Terminating => (
                            Out::Bye {
                                slot: e.slot,
                                seq: e.seq,
                            },
                            Kind::Bye,
                            (c.retx_every * 2).min(t.t2_ns),
                        ),
                        _ => continue,
                    };
                    c.retx_every = every;
                    c.retx_due = self
                        .timers
                        .arm(now, every, e.slot, e.seq, TimerKind::Retransmit);
                    self.stats.retransmitted.bump(kind);
                    self.out.push_back(out);
                }
                TimerKind::Timeout if c.deadline == e.due => {
                    let o = if c.state == State::Terminating {
                        Outcome::ByeFailed
                    } else {
                        Outcome::Timeout
                    };
                    self.end(e.slot, o);
                }
                TimerKind::Hold if c.hold_due == e.due && c.state == State::Holding => {
                    self.send_bye(now, e.slot);
                }
                _ => {}
            }
        }
    }

    /// Takes one received datagram (on any of its sockets: the Call-ID
    /// names the call). Returns its kind, or why it was refused (counted
    /// in [`UacStats`]).
    pub fn handle(&mut self, now: u64, bytes: &[u8]) -> Result<Kind, UaError> {
        let Ok(m) = Message::parse_proxy(bytes) else {
            self.stats.malformed += 1;
            return Err(UaError::Malformed);
        };
        let kind = Kind::of(&m);
        self.stats.received.bump(kind);
        let Some(code) = m.status() else {
            self.stats.unexpected += 1;
            return Err(UaError::Unexpected);
        };
        let method = m.cseq_method();
        if let Some(n) = (code as usize)
            .checked_sub(300)
            .and_then(|i| self.stats.failure_codes.get_mut(i))
        {
            *n += 1;
        }
        let call = token::decode(m.call_id()).and_then(|(slot, seq, run)| {
            let c = self.calls.get(slot as usize)?;
            (run == self.cfg.run_id && c.seq == seq && c.state != State::Free).then_some(slot)
        });
        let Some(slot) = call else {
            // A repeated failure response after its call ended still needs
            // its ACK, or the server retransmits it until Timer H.
            if method == Method::Invite && code >= 300 {
                if let Some((_, _, run)) = token::decode(m.call_id()) {
                    if run == self.cfg.run_id {
                        self.ack_failure(&m);
                        self.stats.retransmitted.bump(Kind::Ack);
                    }
                }
            }
            self.stats.stray += 1;
            return Err(UaError::Stray);
        };
        let c = &mut self.calls[slot as usize];
        let seq = c.seq;
        match (method, code, c.state) {
            (Method::Invite, 100..=199, State::Calling | State::Proceeding) => {
                c.state = State::Proceeding;
                c.retx_due = 0;
                if code == 180 && !c.ringing {
                    c.ringing = true;
                    let dt = now.saturating_sub(c.started).max(1);
                    self.stats.invite_to_180.saturating_record(dt);
                }
            }
            (Method::Invite, 200..=299, State::Calling | State::Proceeding) => {
                let dt = now.saturating_sub(c.started).max(1);
                self.stats.invite_to_200.saturating_record(dt);
                let Some(tag) = m.to_tag().filter(|t| t.len() <= TAG_MAX) else {
                    // No usable remote tag: the dialog cannot be addressed.
                    self.stats.unexpected += 1;
                    self.end(slot, Outcome::RejectedOther);
                    return Ok(kind);
                };
                c.tag[..tag.len()].copy_from_slice(tag);
                c.tag_len = tag.len() as u8;
                c.retx_due = 0;
                c.deadline = 0;
                let d = self.intern_dialog(&m);
                let c = &mut self.calls[slot as usize];
                c.dialog = d;
                self.out.push_back(Out::Ack { slot, seq });
                if self.cfg.hold_ns == 0 {
                    self.send_bye(now, slot);
                } else {
                    c.state = State::Holding;
                    c.hold_due = self
                        .timers
                        .arm(now, self.cfg.hold_ns, slot, seq, TimerKind::Hold);
                }
            }
            (Method::Invite, 200..=299, State::Holding | State::Terminating) => {
                // The UAS did not get our ACK: repeat it (§13.2.2.4).
                self.stats.retransmitted.bump(Kind::Ack);
                self.out.push_back(Out::Ack { slot, seq });
            }
            (Method::Invite, 300..=699, State::Calling | State::Proceeding) => {
                self.ack_failure(&m);
                let o = if code == 503 {
                    Outcome::Rejected503
                } else {
                    Outcome::RejectedOther
                };
                self.end(slot, o);
            }
            (Method::Bye, 100..=199, State::Terminating) => {}
            (Method::Bye, 200..=299, State::Terminating) => self.end(slot, Outcome::Completed),
            (Method::Bye, 300..=699, State::Terminating) => self.end(slot, Outcome::ByeFailed),
            _ => {
                self.stats.unexpected += 1;
                return Err(UaError::Unexpected);
            }
        }
        Ok(kind)
    }

    /// Appends the next datagram to send to `out` and says where it goes.
    pub fn poll_transmit(&mut self, out: &mut Vec<u8>) -> Option<Transmit> {
        loop {
            let o = self.out.pop_front()?;
            let (slot, seq, kind) = match o {
                Out::Raw { start, len, port } => {
                    out.extend_from_slice(&self.raw[start..start + len]);
                    // `raw` is read only through queued entries.
                    if self.out.is_empty() {
                        self.raw.clear();
                    }
                    self.stats.sent.bump(Kind::Ack);
                    return Some(Transmit {
                        dst: self.cfg.proxy,
                        port: usize::from(port),
                        len,
                    });
                }
                Out::Invite { slot, seq } => (slot, seq, Kind::Invite),
                Out::Ack { slot, seq } => (slot, seq, Kind::Ack),
                Out::Bye { slot, seq } => (slot, seq, Kind::Bye),
            };
            if self.out.is_empty() {
                self.raw.clear();
            }
            let c = &self.calls[slot as usize];
            if c.seq != seq || c.state == State::Free {
                continue; // the call ended before its message left
            }
            let tok = token::encode(slot, seq, self.cfg.run_id);
            let d = &self.dialogs[usize::from(c.dialog)];
            let fill = Fill {
                token: &tok,
                to_tag: &c.tag[..usize::from(c.tag_len)],
                target: &d.target,
                routes: &d.routes,
            };
            let t = &self.templates[usize::from(c.port)];
            let len = match kind {
                Kind::Invite => t.invite.render(&fill, out),
                Kind::Ack => t.ack.render(&fill, out),
                _ => t.bye.render(&fill, out),
            };
            self.stats.sent.bump(kind);
            return Some(Transmit {
                dst: self.cfg.proxy,
                port: usize::from(c.port),
                len,
            });
        }
    }

    /// Sends the BYE of the answered call in `slot`.
    fn send_bye(&mut self, now: u64, slot: u32) {
        let t = self.cfg.timers;
        let retransmits = self.cfg.retransmits();
        let c = &mut self.calls[slot as usize];
        let seq = c.seq;
        c.state = State::Terminating;
        c.hold_due = 0;
        c.retx_every = t.t1_ns;
        c.retx_due = if retransmits {
            self.timers
                .arm(now, t.t1_ns, slot, seq, TimerKind::Retransmit)
        } else {
            0
        };
        c.deadline = self
            .timers
            .arm(now, t.timeout_ns(), slot, seq, TimerKind::Timeout);
        self.out.push_back(Out::Bye { slot, seq });
    }

    /// Queues the ACK to the failure response `m` (§17.1.1.3): the
    /// INVITE's branch, the response's To tag.
    fn ack_failure(&mut self, m: &Message<'_>) {
        let Some((slot, seq, run)) = token::decode(m.call_id()) else {
            return;
        };
        let tag = m.to_tag().unwrap_or_default();
        let port = self
            .calls
            .get(slot as usize)
            .filter(|c| c.seq == seq)
            .map_or(0, |c| c.port);
        let tok = token::encode(slot, seq, run);
        let start = self.raw.len();
        let len = self.templates[usize::from(port)].ack_failure.render(
            &Fill {
                token: &tok,
                to_tag: tag,
                target: b"",
                routes: b"",
            },
            &mut self.raw,
        );
        self.out.push_back(Out::Raw { start, len, port });
    }

    /// The dialog-target index of the 2xx `m`: its Contact's URI and its
    /// Record-Route reversed, kept once for all dialogs that share them.
    fn intern_dialog(&mut self, m: &Message<'_>) -> u16 {
        let b = m.buf();
        let s = &mut self.scratch;
        s.target.clear();
        s.routes.clear();
        // The URI becomes the Request-URI of the ACK and BYE: one that
        // would break their request line (or inject a header line) is
        // refused, and the dialog keeps the initial Request-URI.
        match m.header(HeaderName::Contact).map(contact_uri) {
            Some(u) if request_uri_ok(u) => s.target.extend_from_slice(u),
            bad => {
                if bad.is_some() {
                    self.stats.bad_contact += 1;
                }
                s.target.extend_from_slice(self.cfg.request_uri.as_bytes());
            }
        }
        for h in m.headers().iter().rev() {
            if h.name == HeaderName::RecordRoute {
                let vals: smallvec::SmallVec<[_; 4]> = split_commas(b, h.value).collect();
                for v in vals.iter().rev() {
                    s.routes.extend_from_slice(b"Route: ");
                    s.routes.extend_from_slice(v.of(b));
                    s.routes.extend_from_slice(b"\r\n");
                }
            }
        }
        // Most recent first: a run through one proxy has one entry.
        if let Some(i) = self.dialogs.iter().rposition(|d| *d == self.scratch) {
            return i as u16;
        }
        if self.dialogs.len() >= DIALOG_TARGETS_MAX {
            self.stats.dialog_overflow += 1;
            return 0;
        }
        self.dialogs.push(self.scratch.clone());
        (self.dialogs.len() - 1) as u16
    }

    /// Ends the call in `slot` with `o` and frees the slot.
    fn end(&mut self, slot: u32, o: Outcome) {
        let c = &mut self.calls[slot as usize];
        c.state = State::Free;
        c.retx_due = 0;
        c.deadline = 0;
        c.hold_due = 0;
        self.stats.outcomes.bump(o);
        self.free.push(slot);
    }
}

/// Whether `u` can stand as a Request-URI: no whitespace, control
/// character or angle bracket (RFC 3261 §25.1: none belongs in a URI
/// unescaped), and a URI as a request line takes it (scheme, host, port).
fn request_uri_ok(u: &[u8]) -> bool {
    u.iter()
        .all(|&c| c > b' ' && c != 0x7f && c != b'<' && c != b'>')
        && crate::wire::parse_uri(u, 0, u.len(), false).is_ok()
}

/// The URI of a Contact value: between `<` and `>`, or up to the first
/// `;` of an addr-spec.
fn contact_uri(v: &[u8]) -> &[u8] {
    if let Some(i) = v.iter().position(|&c| c == b'<') {
        let rest = &v[i + 1..];
        let j = rest.iter().position(|&c| c == b'>').unwrap_or(rest.len());
        &rest[..j]
    } else {
        let j = v.iter().position(|&c| c == b';').unwrap_or(v.len());
        &v[..j]
    }
}
