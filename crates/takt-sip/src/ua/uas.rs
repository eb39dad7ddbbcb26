//! The user agent server: answers calls.
//!
//! An INVITE gets a 180 and a 200 at once (SIPp's `uas` scenario); the
//! 200 is kept in the dialog's slot and resent until the ACK arrives. A
//! BYE gets its 200 built from the BYE itself, so a repeated BYE, or a
//! BYE that overtook a lost ACK, is answered without state.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

use super::kind::{Kind, KindCounts};
use super::timers::{Queues, TimerKind, UaTimers};
use super::token::push_hex64;
use super::uac::SDP;
use super::{Transmit, UaError};
use crate::proxy::Transport;
use crate::wire::{HeaderName, Message, Method};

/// UAS settings.
#[derive(Debug, Clone)]
pub struct UasConfig {
    /// Written into the Contact of its 180 and 200: `host:port` of the
    /// socket requests arrive on.
    pub contact: SocketAddr,
    /// Dialogs awaiting their ACK at once (the preallocated table); an
    /// INVITE beyond gets a 503.
    pub max_dialogs: usize,
    /// Timer settings.
    pub timers: UaTimers,
    /// The transport requests arrive on: for TCP the Contact carries
    /// `;transport=tcp`, so in-dialog requests routed by it stay on TCP.
    /// The 200 to an INVITE is retransmitted until its ACK whatever the
    /// transport (RFC 3261 §13.3.1.4: hops between the UAS and the UAC
    /// may be unreliable).
    pub transport: Transport,
}

impl UasConfig {
    /// Defaults: 65,536 dialogs awaiting their ACK at most, RFC 3261 timers.
    pub fn new(contact: SocketAddr) -> UasConfig {
        UasConfig {
            contact,
            max_dialogs: 1 << 16,
            timers: UaTimers::default(),
            transport: Transport::Udp,
        }
    }
}

/// What the UAS counted.
#[derive(Debug, Clone, Default)]
pub struct UasStats {
    /// Calls answered (new INVITEs given a 200).
    pub answered: u64,
    /// Messages sent, by kind (retransmissions included).
    pub sent: KindCounts,
    /// Messages received, by kind.
    pub received: KindCounts,
    /// Retransmissions sent, by kind (the 200 to the INVITE, and answers
    /// to repeated INVITEs).
    pub retransmitted: KindCounts,
    /// Datagrams that did not parse.
    pub malformed: u64,
    /// ACKs for no dialog awaiting one.
    pub stray: u64,
    /// Messages the UAS has no part in (responses, other methods).
    pub unexpected: u64,
    /// INVITEs refused with 503 because the dialog table was full.
    pub full: u64,
    /// Dialogs whose ACK did not come within 64·T1.
    pub ack_timeouts: u64,
    /// BYEs that arrived before the ACK (the ACK was lost or is late).
    pub bye_before_ack: u64,
}

/// A dialog whose 200 awaits its ACK.
#[derive(Debug, Clone)]
struct Dialog {
    /// Bumped when the slot is taken (timer entries name it).
    seq: u32,
    live: bool,
    key: u64,
    call_id: Vec<u8>,
    /// The 200, as sent.
    ok: Vec<u8>,
    /// Where the 200 goes (the INVITE's source).
    dst: SocketAddr,
    port: usize,
    retx_due: u64,
    retx_every: u64,
    deadline: u64,
}

/// Where a queued message's bytes are.
#[derive(Debug, Clone, Copy)]
enum Src {
    /// `Uas::scratch[start..start + len]`.
    Scratch { start: usize, len: usize },
    /// The 200 of dialog `(slot, seq)`.
    Ok { slot: u32, seq: u32 },
}

#[derive(Debug, Clone, Copy)]
struct Out {
    src: Src,
    kind: Kind,
    dst: SocketAddr,
    port: usize,
}

/// A sans-I/O UAS: see the [module documentation](super).
#[derive(Debug)]
pub struct Uas {
    cfg: UasConfig,
    dialogs: Vec<Dialog>,
    free: Vec<u32>,
    /// FNV-1a of the Call-ID → slot.
    index: HashMap<u64, u32>,
    timers: Queues,
    out: VecDeque<Out>,
    scratch: Vec<u8>,
    /// `Contact: <sip:HOST:PORT>\r\n`
    contact_line: Vec<u8>,
    /// Content-Type, Content-Length, blank line and SDP of the 200.
    sdp_tail: Vec<u8>,
    next_tag: u64,
    stats: UasStats,
}

fn fnv(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in b {
        h = (h ^ u64::from(c)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl Uas {
    /// A UAS with its dialog table allocated.
    ///
    /// # Panics
    /// If `cfg.max_dialogs` is 0 or above 2^31.
    pub fn new(cfg: UasConfig) -> Uas {
        assert!(
            cfg.max_dialogs > 0 && cfg.max_dialogs <= 1 << 31,
            "dialog table of 1 to 2^31 slots"
        );
        let n = cfg.max_dialogs;
        let free_dialog = Dialog {
            seq: 0,
            live: false,
            key: 0,
            call_id: Vec::new(),
            ok: Vec::new(),
            dst: cfg.contact,
            port: 0,
            retx_due: 0,
            retx_every: 0,
            deadline: 0,
        };
        Uas {
            dialogs: vec![free_dialog; n],
            free: (0..n as u32).rev().collect(),
            index: HashMap::with_capacity(n),
            timers: Queues::default(),
            out: VecDeque::with_capacity(1024),
            scratch: Vec::with_capacity(64 << 10),
            contact_line: format!(
                "Contact: <sip:{}{}>\r\n",
                cfg.contact,
                match cfg.transport {
                    Transport::Udp => "",
                    Transport::Tcp => ";transport=tcp",
                }
            )
            .into_bytes(),
            sdp_tail: format!(
                "Content-Type: application/sdp\r\nContent-Length: {}\r\n\r\n{SDP}",
                SDP.len()
            )
            .into_bytes(),
            next_tag: 1,
            stats: UasStats::default(),
            cfg,
        }
    }

    /// What it counted so far.
    pub fn stats(&self) -> &UasStats {
        &self.stats
    }

    /// Dialogs awaiting their ACK.
    pub fn pending(&self) -> usize {
        self.dialogs.len() - self.free.len()
    }

    /// The next timer deadline, if any.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.timers.next()
    }

    /// Runs every timer due at `now`: resends 200s, gives up on ACKs.
    pub fn handle_timeout(&mut self, now: u64) {
        let t2 = self.cfg.timers.t2_ns;
        while let Some(e) = self.timers.pop_due(now) {
            let d = &mut self.dialogs[e.slot as usize];
            if !d.live || d.seq != e.seq {
                continue;
            }
            match e.kind {
                TimerKind::Retransmit if d.retx_due == e.due => {
                    d.retx_every = (d.retx_every * 2).min(t2);
                    d.retx_due =
                        self.timers
                            .arm(now, d.retx_every, e.slot, e.seq, TimerKind::Retransmit);
                    self.stats.retransmitted.bump(Kind::OkInvite);
                    self.out.push_back(Out {
                        src: Src::Ok {
                            slot: e.slot,
                            seq: e.seq,
                        },
                        kind: Kind::OkInvite,
                        dst: d.dst,
                        port: d.port,
                    });
                }
                TimerKind::Timeout if d.deadline == e.due => {
                    self.stats.ack_timeouts += 1;
                    self.release(e.slot);
                }
                _ => {}
            }
        }
    }

    /// Takes one datagram that arrived on socket `port` from `src`.
    /// Returns its kind, or why it was refused (counted in [`UasStats`]).
    pub fn handle(
        &mut self,
        now: u64,
        port: usize,
        src: SocketAddr,
        bytes: &[u8],
    ) -> Result<Kind, UaError> {
        let Ok(m) = Message::parse_proxy(bytes) else {
            self.stats.malformed += 1;
            return Err(UaError::Malformed);
        };
        let kind = Kind::of(&m);
        self.stats.received.bump(kind);
        match m.method() {
            Some(Method::Invite) => self.invite(now, port, src, &m),
            Some(Method::Ack) => {
                let key = fnv(m.call_id());
                match self.index.get(&key).copied() {
                    Some(slot) if self.dialogs[slot as usize].call_id == m.call_id() => {
                        self.release(slot);
                    }
                    _ => {
                        self.stats.stray += 1;
                        return Err(UaError::Stray);
                    }
                }
            }
            Some(Method::Bye) => {
                let key = fnv(m.call_id());
                if let Some(slot) = self.index.get(&key).copied() {
                    if self.dialogs[slot as usize].call_id == m.call_id() {
                        self.stats.bye_before_ack += 1;
                        self.release(slot);
                    }
                }
                let start = self.scratch.len();
                respond(
                    &m,
                    b"SIP/2.0 200 OK\r\n",
                    None,
                    b"",
                    b"Content-Length: 0\r\n\r\n",
                    &mut self.scratch,
                );
                self.queue_scratch(start, Kind::OkBye, src, port);
            }
            _ => {
                self.stats.unexpected += 1;
                return Err(UaError::Unexpected);
            }
        }
        Ok(kind)
    }

    fn invite(&mut self, now: u64, port: usize, src: SocketAddr, m: &Message<'_>) {
        let key = fnv(m.call_id());
        if let Some(&slot) = self.index.get(&key) {
            let d = &self.dialogs[slot as usize];
            if d.call_id == m.call_id() {
                // A repeated INVITE: its 200 is already on its way; send
                // it again (§13.3.1.4 keeps it going until the ACK).
                self.stats.retransmitted.bump(Kind::OkInvite);
                self.out.push_back(Out {
                    src: Src::Ok { slot, seq: d.seq },
                    kind: Kind::OkInvite,
                    dst: src,
                    port,
                });
                return;
            }
        }
        let mut tag = Vec::with_capacity(16);
        push_hex64(&mut tag, self.next_tag);
        self.next_tag += 1;
        let start = self.scratch.len();
        respond(
            m,
            b"SIP/2.0 180 Ringing\r\n",
            Some(&tag),
            &self.contact_line,
            b"Content-Length: 0\r\n\r\n",
            &mut self.scratch,
        );
        self.queue_scratch(start, Kind::Ringing, src, port);
        let slot = match self.free.pop() {
            Some(s) if !self.index.contains_key(&key) => s,
            other => {
                if let Some(s) = other {
                    self.free.push(s);
                }
                // No room to keep the dialog (or a hash collision with a
                // live one): refuse rather than answer without the means
                // to resend the 200.
                self.stats.full += 1;
                let start = self.scratch.len();
                respond(
                    m,
                    b"SIP/2.0 503 Service Unavailable\r\n",
                    Some(&tag),
                    b"",
                    b"Content-Length: 0\r\n\r\n",
                    &mut self.scratch,
                );
                self.queue_scratch(start, Kind::Failure, src, port);
                return;
            }
        };
        self.stats.answered += 1;
        let t = self.cfg.timers;
        let d = &mut self.dialogs[slot as usize];
        d.seq = d.seq.wrapping_add(1);
        d.live = true;
        d.key = key;
        d.call_id.clear();
        d.call_id.extend_from_slice(m.call_id());
        d.ok.clear();
        respond(
            m,
            b"SIP/2.0 200 OK\r\n",
            Some(&tag),
            &self.contact_line,
            &self.sdp_tail,
            &mut d.ok,
        );
        d.dst = src;
        d.port = port;
        d.retx_every = t.t1_ns;
        let seq = d.seq;
        d.retx_due = if t.retransmit {
            self.timers
                .arm(now, t.t1_ns, slot, seq, TimerKind::Retransmit)
        } else {
            0
        };
        d.deadline = self
            .timers
            .arm(now, t.timeout_ns(), slot, seq, TimerKind::Timeout);
        self.index.insert(key, slot);
        self.out.push_back(Out {
            src: Src::Ok { slot, seq },
            kind: Kind::OkInvite,
            dst: src,
            port,
        });
    }

    fn queue_scratch(&mut self, start: usize, kind: Kind, dst: SocketAddr, port: usize) {
        self.out.push_back(Out {
            src: Src::Scratch {
                start,
                len: self.scratch.len() - start,
            },
            kind,
            dst,
            port,
        });
    }

    fn release(&mut self, slot: u32) {
        let d = &mut self.dialogs[slot as usize];
        d.live = false;
        d.retx_due = 0;
        d.deadline = 0;
        self.index.remove(&d.key);
        self.free.push(slot);
    }

    /// Appends the next datagram to send to `out` and says where it goes.
    pub fn poll_transmit(&mut self, out: &mut Vec<u8>) -> Option<Transmit> {
        loop {
            let o = self.out.pop_front()?;
            let len = match o.src {
                Src::Scratch { start, len } => {
                    out.extend_from_slice(&self.scratch[start..start + len]);
                    len
                }
                Src::Ok { slot, seq } => {
                    let d = &self.dialogs[slot as usize];
                    if d.seq != seq {
                        continue;
                    }
                    out.extend_from_slice(&d.ok);
                    d.ok.len()
                }
            };
            // `scratch` is read only through queued entries.
            if self.out.is_empty() {
                self.scratch.clear();
            }
            self.stats.sent.bump(o.kind);
            return Some(Transmit {
                dst: o.dst,
                port: o.port,
                len,
            });
        }
    }
}

/// Appends the response `status` to the request `m`: its Via,
/// Record-Route, From, Call-ID and CSeq lines copied, its To with `tag`
/// added when it has none, then `contact` and `tail` (Content-Length,
/// blank line, body).
fn respond(
    m: &Message<'_>,
    status: &[u8],
    tag: Option<&[u8]>,
    contact: &[u8],
    tail: &[u8],
    o: &mut Vec<u8>,
) {
    let b = m.buf();
    o.extend_from_slice(status);
    for h in m.headers() {
        match h.name {
            HeaderName::Via
            | HeaderName::RecordRoute
            | HeaderName::From
            | HeaderName::CallId
            | HeaderName::CSeq => o.extend_from_slice(h.line.of(b)),
            HeaderName::To => match tag {
                Some(t) if m.to_tag().is_none() => {
                    o.extend_from_slice(b"To: ");
                    o.extend_from_slice(h.value.of(b));
                    o.extend_from_slice(b";tag=");
                    o.extend_from_slice(t);
                    o.extend_from_slice(b"\r\n");
                }
                _ => o.extend_from_slice(h.line.of(b)),
            },
            _ => {}
        }
    }
    o.extend_from_slice(contact);
    o.extend_from_slice(tail);
}
