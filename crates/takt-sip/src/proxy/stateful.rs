//! The transaction-stateful half of the proxy: matching requests and
//! responses to records, creating records, and running their timers.

use std::io::Write as _;
use std::sync::MutexGuard;

use super::build::{
    ack_for, cancel_for, forward_response, forward_response_as, local_response, trying, LocalOpts,
    Stamp,
};
use super::table::Shard;
use super::txn::{CancelState, ClientState, Fresh, ServerState, Txn};
use super::{
    Disposition, Inbound, MsgKind, Outcome, Plan, Proxy, Scratch, SendError, Sink, Target,
    Transport,
};
use crate::wire::{HeaderName, Message, Method, ParseError};

/// Sends the CANCEL for the record's forwarded INVITE.
fn send_cancel(p: &Proxy, t: &mut Txn, now: u64, s: &mut Scratch) {
    let Ok(req) = Message::parse_proxy(&t.request) else {
        return;
    };
    let start = s.mark();
    cancel_for(&mut s.out, &req);
    t.cancel_req.clear();
    t.cancel_req.extend_from_slice(&s.out[start..]);
    s.queue(t.downstream, start);
    t.cancel = CancelState::Sent;
    let tm = &p.cfg.timers;
    if t.downstream.transport == Transport::Udp {
        t.cancel_interval = tm.t1;
        t.t_cancel_retx = now + tm.t1;
    }
    t.t_cancel_timeout = now + 64 * tm.t1;
}

fn finish(p: &Proxy, sh: &mut Shard, key: u64) {
    sh.reschedule(key);
    p.table.publish(key, sh);
}

/// Matches a request to an existing record (retransmission, ACK, CANCEL)
/// in `sh`, the locked shard of `key`. `None`: no record; the caller
/// treats it as new (or forwards statelessly), still holding the lock,
/// so the record it creates is the one a racing retransmission finds.
pub(super) fn match_request(
    p: &Proxy,
    sh: &mut Shard,
    m: &Message<'_>,
    inb: &Inbound<'_>,
    kind: MsgKind,
    key: u64,
    s: &mut Scratch,
) -> Option<Outcome> {
    let method = m.method()?;
    let Some(t) = sh.get_mut(key) else {
        if !matches!(method, Method::Ack | Method::Cancel) {
            // a new transaction is likely: start loading its record
            sh.prefetch_vacant(inb.bytes.len() + 256);
        }
        return None;
    };
    let now = inb.now;
    let tm = p.cfg.timers;
    let out = match method {
        Method::Ack => {
            if !(t.invite && t.server == ServerState::Completed) {
                return None;
            }
            t.server = ServerState::Confirmed;
            t.t_resp_retx = 0;
            t.t_server_end = if t.upstream.transport == Transport::Udp {
                now + tm.t4
            } else {
                now
            };
            Outcome::new(kind, Disposition::Absorbed)
        }
        Method::Cancel => {
            if !t.invite {
                return None;
            }
            p.reply(m, inb, 200, "OK", b"", s);
            if t.server == ServerState::Proceeding && t.cancel == CancelState::None {
                match t.client {
                    ClientState::Proceeding => send_cancel(p, t, now, s),
                    ClientState::Calling => t.cancel = CancelState::Pending,
                    _ => {}
                }
            }
            Outcome::new(kind, Disposition::Replied(200))
        }
        _ => {
            if !t.response.is_empty()
                && matches!(t.server, ServerState::Proceeding | ServerState::Completed)
            {
                let start = s.mark();
                s.out.extend_from_slice(&t.response);
                s.queue(t.upstream, start);
            } else if t.invite && t.server == ServerState::Proceeding {
                // nothing but our 100 Trying was sent: make it again from
                // the retransmission rather than keeping a copy per call
                let start = s.mark();
                trying(&mut s.out, m, Stamp::for_request(m, inb.from.addr));
                s.queue(t.upstream, start);
            }
            Outcome::new(kind, Disposition::Absorbed)
        }
    };
    finish(p, sh, key);
    Some(out)
}

/// Creates the record for a new request in `sh` (the locked shard of
/// `key`, where [`match_request`] found none) and forwards it.
#[allow(clippy::too_many_arguments)]
pub(super) fn new_transaction(
    p: &Proxy,
    mut sh: MutexGuard<'_, Shard>,
    m: &Message<'_>,
    inb: &Inbound<'_>,
    kind: MsgKind,
    plan: &Plan,
    key: u64,
    lh: u32,
    s: &mut Scratch,
) -> Outcome {
    let invite = m.method() == Some(Method::Invite);
    let upstream = p.response_target(m, inb);
    if invite {
        let st = s.mark();
        trying(&mut s.out, m, plan.stamp);
        s.queue(upstream, st);
    }
    let (start, target) = match p.forward(m, plan, key, lh, s) {
        Ok(x) => x,
        Err(r) => {
            drop(sh);
            s.clear();
            return p.refuse(m, inb, kind, r, s);
        }
    };
    let fresh = Fresh {
        invite,
        upstream: &upstream,
        downstream: &target,
        timers: &p.cfg.timers,
        now: inb.now,
    };
    if sh.insert(key, &fresh, &s.out[start..]) {
        finish(p, &mut sh, key);
        Outcome::new(kind, Disposition::Forwarded)
    } else if invite {
        drop(sh);
        s.clear();
        p.shed(m, inb, s)
    } else {
        // full table: a non-INVITE still goes, statelessly
        Outcome::new(kind, Disposition::Forwarded)
    }
}

/// Forwards response `m` upstream and keeps it as the record's last
/// response; false when it cannot be forwarded (§16.7: no Via of the
/// upstream side left, or it does not render), and then nothing is sent
/// or kept.
fn forward_up(t: &mut Txn, m: &Message<'_>, s: &mut Scratch) -> bool {
    let start = s.mark();
    let code = m.status().unwrap_or(0);
    let ok = if code == 503 {
        // §16.7 step 6: a 503 is not passed on as such
        forward_response_as(&mut s.out, m, 500, "Server Internal Error")
    } else {
        forward_response(&mut s.out, m)
    };
    if ok {
        t.response.clear();
        t.response.extend_from_slice(&s.out[start..]);
        s.queue(t.upstream, start);
    }
    ok
}

/// Matches a response to its record. `None`: no record (forward statelessly).
///
/// What it sends goes out before the shard lock is released: two workers
/// handling a 180 and a 200 of one transaction at once (the `shared`
/// model) then forward them in the order they changed its state, so a
/// 180 can never overtake the 200 it preceded.
// inlined into `Proxy::handle` (its one caller): a response runs one
// prologue and epilogue fewer, 3-4 code lines (the `proxy` module docs,
// "Cost of a message")
#[inline]
pub(super) fn match_response(
    p: &Proxy,
    m: &Message<'_>,
    key: u64,
    kind: MsgKind,
    now: u64,
    s: &mut Scratch,
    sink: &mut dyn Sink,
) -> Option<Outcome> {
    let mut sh = p.table.shard_noting(key, &mut s.contended);
    // buffers the record no longer needs: (request, response)
    let mut spare = (false, false);
    let t = sh.get_mut(key)?;
    let tm = p.cfg.timers;
    let code = m.status().unwrap_or(0);
    let absorbed = Outcome::new(kind, Disposition::Absorbed);
    let forwarded = Outcome::new(kind, Disposition::Forwarded);
    let out = if m.cseq_method() == Method::Cancel {
        // the answer to our CANCEL ends its retransmissions
        t.t_cancel_retx = 0;
        t.t_cancel_timeout = 0;
        absorbed
    } else if code < 200 {
        match t.client {
            ClientState::Calling => {
                t.client = ClientState::Proceeding;
                if t.invite {
                    t.t_retx = 0;
                    t.t_timeout = 0;
                    t.t_c = now + tm.c;
                } else {
                    t.retx_interval = tm.t2;
                }
            }
            ClientState::Proceeding if t.invite => t.t_c = now + tm.c,
            _ => {}
        }
        if t.cancel == CancelState::Pending && t.client == ClientState::Proceeding {
            send_cancel(p, t, now, s);
        }
        if code == 100 || t.server != ServerState::Proceeding {
            absorbed
        } else {
            forward_up(t, m, s);
            forwarded
        }
    } else if t.invite && code < 300 {
        // every 2xx goes upstream (RFC 6026: the server side is Accepted)
        t.client_stop();
        t.client = ClientState::Terminated;
        t.t_wait = 0;
        if t.server != ServerState::Accepted {
            t.server = ServerState::Accepted;
            t.t_resp_retx = 0;
            t.t_server_end = now + 64 * tm.t1;
        }
        forward_up(t, m, s);
        // Accepted absorbs INVITE retransmissions silently and passes every
        // 2xx on: the stored request and response are not needed any more
        spare = (true, true);
        forwarded
    } else {
        match t.client {
            ClientState::Calling | ClientState::Proceeding => {
                if t.invite {
                    // hop-by-hop ACK (§17.1.1.3)
                    if let Ok(req) = Message::parse_proxy(&t.request) {
                        let start = s.mark();
                        ack_for(&mut s.out, &req, m);
                        t.ack.clear();
                        t.ack.extend_from_slice(&s.out[start..]);
                        s.queue(t.downstream, start);
                    }
                }
                t.client_final(&tm, now);
                if t.server == ServerState::Proceeding {
                    // one branch: its final response is the best response
                    if forward_up(t, m, s) {
                        t.server_final_sent(&tm, now);
                    } else {
                        // it cannot be passed on: the proxy answers itself,
                        // so Timer G retransmits a response it holds (not
                        // an empty or an earlier provisional one)
                        let mut sends = Vec::new();
                        let why = "Server Internal Error (unforwardable response)";
                        local_final(p, t, 500, why, now, &mut sends);
                        for (to, b) in sends {
                            let start = s.mark();
                            s.out.extend_from_slice(&b);
                            s.queue(to, start);
                        }
                    }
                }
                // no retransmission, CANCEL or 408 will need the request now
                spare.0 = true;
                forwarded
            }
            ClientState::Completed => {
                if t.invite && !t.ack.is_empty() {
                    let start = s.mark();
                    s.out.extend_from_slice(&t.ack);
                    s.queue(t.downstream, start);
                }
                absorbed
            }
            ClientState::Terminated => absorbed,
        }
    };
    if spare != (false, false) {
        sh.release(key, spare.0, spare.1);
    }
    finish(p, &mut sh, key);
    let mut out = out;
    if s.flush(sink).failed {
        out.disposition = Disposition::SendFailed;
    }
    drop(sh);
    Some(out)
}

/// §18.1.1: the record's request went over UDP after TCP was refused
/// (`bytes`, rendered for UDP): it is what retransmissions resend, and
/// Timers A/E now run.
pub(super) fn now_over_udp(p: &Proxy, key: u64, udp: Target, bytes: &[u8], now: u64) {
    let mut sh = p.table.shard(key);
    let Some(t) = sh.get_mut(key) else {
        return;
    };
    if t.client != ClientState::Calling || t.downstream.transport != Transport::Tcp {
        return;
    }
    t.request.clear();
    t.request.extend_from_slice(bytes);
    t.downstream = udp;
    t.retx_interval = p.cfg.timers.t1;
    t.t_retx = now + p.cfg.timers.t1;
    finish(p, &mut sh, key);
}

/// See [`Proxy::branch_failed`].
pub(super) fn branch_failed(
    p: &Proxy,
    key: u64,
    to: Option<std::net::SocketAddr>,
    error: SendError,
    now: u64,
    sink: &mut dyn Sink,
) -> Option<u16> {
    let mut sh = p.table.shard(key);
    let t = sh.get_mut(key)?;
    if !matches!(t.client, ClientState::Calling | ClientState::Proceeding)
        || to.is_some_and(|a| a != t.downstream.addr)
    {
        return None;
    }
    // §17.1.1.2 / §17.1.2.2: a transport error ends the client transaction
    t.client_stop();
    t.client = ClientState::Terminated;
    t.t_wait = 0;
    t.t_cancel_retx = 0;
    t.t_cancel_timeout = 0;
    let (code, reason) = match error {
        SendError::TooLarge => (513, "Message Too Large"),
        _ => (500, "Server Internal Error (next hop unreachable)"),
    };
    let mut sends = Vec::new();
    let sent = (t.server == ServerState::Proceeding).then(|| {
        local_final(p, t, code, reason, now, &mut sends);
        code
    });
    finish(p, &mut sh, key);
    for (to, b) in &sends {
        let _ = sink.send(to, b);
    }
    drop(sh);
    sent
}

/// The proxy answers the upstream side itself (Timer B/F/C: 408).
fn local_final(
    p: &Proxy,
    t: &mut Txn,
    code: u16,
    reason: &str,
    now: u64,
    sends: &mut Vec<(Target, Vec<u8>)>,
) {
    let Ok(req) = Message::parse_proxy(&t.request) else {
        t.server = ServerState::Terminated;
        return;
    };
    let tag = p.local_tag(&req);
    let mut out = Vec::with_capacity(512);
    local_response(
        &mut out,
        &req,
        code,
        reason,
        LocalOpts {
            skip_top_via: true,
            to_tag: Some(&tag),
            ..LocalOpts::default()
        },
    );
    t.response.clone_from(&out);
    sends.push((t.upstream, out));
    t.server_final_sent(&p.cfg.timers, now);
}

fn fire(p: &Proxy, t: &mut Txn, now: u64, sends: &mut Vec<(Target, Vec<u8>)>) {
    let tm = p.cfg.timers;
    let due = |d: u64| d != 0 && d <= now;
    if due(t.t_retx) {
        sends.push((t.downstream, t.request.clone()));
        t.retx_interval = if t.invite {
            t.retx_interval * 2
        } else {
            (t.retx_interval * 2).min(tm.t2)
        };
        t.t_retx = now + t.retx_interval;
    }
    if due(t.t_timeout) {
        t.client_stop();
        t.client = ClientState::Terminated;
        if t.server == ServerState::Proceeding {
            local_final(p, t, 408, "Request Timeout", now, sends);
        }
    }
    if due(t.t_c) {
        t.t_c = 0;
        match t.client {
            ClientState::Proceeding if t.cancel == CancelState::None => {
                let mut s = Scratch::default();
                send_cancel(p, t, now, &mut s);
                for (to, a, b) in s.sends {
                    sends.push((to, s.out[a as usize..b as usize].to_vec()));
                }
            }
            ClientState::Calling => {
                t.client_stop();
                t.client = ClientState::Terminated;
                if t.server == ServerState::Proceeding {
                    local_final(p, t, 408, "Request Timeout", now, sends);
                }
            }
            _ => {}
        }
    }
    if due(t.t_wait) {
        t.t_wait = 0;
        t.client = ClientState::Terminated;
    }
    if due(t.t_resp_retx) {
        if t.server == ServerState::Completed {
            sends.push((t.upstream, t.response.clone()));
            t.resp_interval = (t.resp_interval * 2).min(tm.t2);
            t.t_resp_retx = now + t.resp_interval;
        } else {
            t.t_resp_retx = 0;
        }
    }
    if due(t.t_server_end) {
        t.t_server_end = 0;
        t.t_resp_retx = 0;
        t.server = ServerState::Terminated;
        if t.client == ClientState::Calling || t.client == ClientState::Proceeding {
            // keep the client side until its own timers end it
        }
    }
    if due(t.t_cancel_retx) {
        sends.push((t.downstream, t.cancel_req.clone()));
        t.cancel_interval = (t.cancel_interval * 2).min(tm.t2);
        t.t_cancel_retx = now + t.cancel_interval;
    }
    if due(t.t_cancel_timeout) {
        t.t_cancel_retx = 0;
        t.t_cancel_timeout = 0;
    }
}

/// Most due timers the timer thread runs under one hold of a shard's lock.
///
/// Records linger 32 s and their timers come due in bulk: after a burst
/// of calls, or when the process was stopped for a while (a lab pausing
/// the server between trials, a host that descheduled it), a shard can
/// hold tens of thousands of due timers at once. Run under one hold,
/// they kept every worker whose message hashed to that shard waiting for
/// milliseconds, and the socket buffers overflowed meanwhile. Between
/// batches the lock is released, so a worker waits for at most one batch
/// (a few tens of µs).
pub(super) const TICK_BATCH: usize = 256;

/// Runs every due timer of every shard, at most [`TICK_BATCH`] per hold
/// of a shard's lock (its sends go out between holds).
pub(super) fn tick(p: &Proxy, now: u64, sink: &mut dyn Sink) -> usize {
    let mut sends = Vec::new();
    let mut fired = 0;
    for i in 0..p.table.shard_count() {
        if !p.table.may_be_due(i, now) {
            continue;
        }
        loop {
            let mut sh = p.table.shard_at(i);
            let mut popped = 0;
            while popped < TICK_BATCH {
                let Some(key) = sh.pop_due(now) else { break };
                popped += 1;
                if let Some(t) = sh.get_mut(key) {
                    fire(p, t, now, &mut sends);
                    fired += 1;
                }
                finish(p, &mut sh, key);
            }
            p.table.publish_at(i, &sh);
            drop(sh);
            for (to, b) in sends.drain(..) {
                let _ = sink.send(&to, &b);
            }
            if popped < TICK_BATCH {
                break;
            }
        }
    }
    fired
}

/// Answers a malformed request when enough of it is there (Via, From, To,
/// Call-ID, CSeq lines): 400 (505 for a version, 513 for size) to the
/// sender, the error in the reason phrase. Never answers an ACK or a
/// response, and never when a line it would copy into the answer is the
/// one holding a control character ([`ParseError::Control`]): the answer
/// would carry it back. Returns the status sent.
pub(super) fn answer_malformed(inb: &Inbound<'_>, e: ParseError, out: &mut Vec<u8>) -> Option<u16> {
    let b = inb.bytes;
    let first_end = b.windows(2).position(|w| w == b"\r\n")?;
    let first = &b[..first_end];
    if first.len() < 4 || first[..4].eq_ignore_ascii_case(b"SIP/") || first.starts_with(b"ACK ") {
        return None;
    }
    let head_end = b
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(b.len(), |p| p + 2);
    let mut lines: [Option<(usize, usize)>; 5] = [None; 5];
    let mut vias: smallvec::SmallVec<[(usize, usize); 4]> = smallvec::SmallVec::new();
    // the line (numbered as the parser does, folds included) a copied
    // line must not be
    let bad_line = match e {
        ParseError::Control { line, .. } => line,
        _ => 0,
    };
    let mut line_no: u16 = 1;
    let mut i = first_end + 2;
    while i < head_end {
        line_no = line_no.saturating_add(1);
        let mut e_ = i + b[i..head_end].windows(2).position(|w| w == b"\r\n")?;
        while e_ + 2 < head_end && matches!(b[e_ + 2], b' ' | b'\t') {
            e_ += 2 + b[e_ + 2..head_end].windows(2).position(|w| w == b"\r\n")?;
        }
        let line = &b[i..e_];
        if let Some(c) = line.iter().position(|&x| x == b':') {
            let name = HeaderName::from_bytes(line[..c].trim_ascii());
            let copied = matches!(
                name,
                HeaderName::Via
                    | HeaderName::From
                    | HeaderName::To
                    | HeaderName::CallId
                    | HeaderName::CSeq
            );
            if copied && line_no == bad_line {
                return None;
            }
            let slot = match name {
                HeaderName::Via => {
                    vias.push((i, e_ + 2));
                    None
                }
                HeaderName::From => Some(0),
                HeaderName::To => Some(1),
                HeaderName::CallId => Some(2),
                HeaderName::CSeq => Some(3),
                _ => None,
            };
            if let Some(k) = slot {
                lines[k].get_or_insert((i, e_ + 2));
            }
        }
        i = e_ + 2;
    }
    if vias.is_empty() || lines[..4].iter().any(Option::is_none) {
        return None;
    }
    let code = e.status();
    let reason = match code {
        505 => "Version Not Supported",
        513 => "Message Too Large",
        _ => "Bad Request",
    };
    let _ = write!(out, "SIP/2.0 {code} {reason} ({e})\r\n");
    for (a, z) in vias {
        out.extend_from_slice(&b[a..z]);
    }
    for (a, z) in lines.iter().take(4).flatten() {
        out.extend_from_slice(&b[*a..*z]);
    }
    out.extend_from_slice(b"Content-Length: 0\r\n\r\n");
    Some(code)
}
