//! Building the messages the proxy sends, into a caller's buffer, by
//! copying spans of the input (RFC 3261 §16.6, §16.7, §8.2.6, §9.1, §17.1.1.3).
//!
//! Nothing here allocates or goes through `core::fmt`: every function
//! appends to `out`, numbers and IPv4 addresses with [`push_dec`] and
//! [`push_ip`].

use std::io::Write as _;
use std::net::IpAddr;

use super::branch::write_branch;
use super::Transport;
use crate::wire::{Header, HeaderName, Message, Rport, Span};

/// This proxy's address as written into Via and Record-Route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Local {
    /// Host (IPv6 in brackets) as advertised.
    pub host: String,
    /// Port.
    pub port: u16,
}

impl Local {
    /// Whether a sent-by / URI host:port names this proxy.
    pub fn is_me(&self, host: &[u8], port: Option<u16>) -> bool {
        // the port first: one comparison, and it tells apart most
        // addresses that are not ours (a client on the proxy's host too)
        port.unwrap_or(5060) == self.port && host.eq_ignore_ascii_case(self.host.as_bytes())
    }
}

/// What RFC 3581 and §18.2.1 add to the top Via of a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamp {
    /// `received=` to add.
    pub received: Option<IpAddr>,
    /// `rport=` value to fill in.
    pub rport: Option<u16>,
}

impl Stamp {
    /// The stamp for a request whose top Via is `m.top_via()` and that came from `src`.
    pub fn for_request(m: &Message<'_>, src: std::net::SocketAddr) -> Stamp {
        let via = m.top_via();
        let b = m.buf();
        let rport = matches!(via.rport, Rport::Requested).then_some(src.port());
        let host = via.host.of(b);
        let host = host
            .strip_prefix(b"[")
            .and_then(|h| h.strip_suffix(b"]"))
            .unwrap_or(host);
        let same = same_ip(host, src.ip());
        let received = (via.received.is_none() && (!same || rport.is_some())).then_some(src.ip());
        Stamp { received, rport }
    }
}

/// Whether the sent-by `host` (brackets stripped) is the literal address
/// `ip`: what parsing `host` would decide, without the parser's cost. For
/// IPv4 that is a match of `ip`'s one text form (the standard parser
/// refuses leading zeros), see [`same_v4`].
fn same_ip(host: &[u8], ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => same_v4(host, v4.octets()),
        IpAddr::V6(_) => same_ip_v6(host, ip),
    }
}

/// Whether `host` is `octets` as a dotted quad (the one text form the
/// standard parser accepts for them).
fn same_v4(host: &[u8], octets: [u8; 4]) -> bool {
    super::route::dotted_quad(host) == Some(octets)
}

#[cold]
fn same_ip_v6(host: &[u8], ip: IpAddr) -> bool {
    std::str::from_utf8(host)
        .ok()
        .and_then(|h| h.parse::<IpAddr>().ok())
        .is_some_and(|h| h == ip)
}

/// The parts of what the proxy writes that depend on its address only,
/// written once: our Via up to the branch value and our Record-Route
/// line, per transport (one copy each on the message path instead of a
/// dozen small appends and a number to format).
#[derive(Debug, Clone)]
pub struct Prebuilt {
    /// `SIP/2.0/<T> host:port;branch=`, by transport (UDP, TCP).
    via: [Vec<u8>; 2],
    /// `Record-Route: <sip:host:port[;transport=tcp];lr>\r\n`, by transport.
    record_route: [Vec<u8>; 2],
}

impl Prebuilt {
    /// The texts for `local`.
    pub fn new(local: &Local) -> Prebuilt {
        let via = |t: Transport| {
            let mut v = b"SIP/2.0/".to_vec();
            v.extend_from_slice(transport_token(t));
            v.push(b' ');
            v.extend_from_slice(local.host.as_bytes());
            v.push(b':');
            push_dec(&mut v, u64::from(local.port));
            v.extend_from_slice(b";branch=");
            v
        };
        let rr = |t: Transport| {
            let mut v = b"Record-Route: <sip:".to_vec();
            v.extend_from_slice(local.host.as_bytes());
            v.push(b':');
            push_dec(&mut v, u64::from(local.port));
            if t == Transport::Tcp {
                v.extend_from_slice(b";transport=tcp");
            }
            v.extend_from_slice(b";lr>\r\n");
            v
        };
        Prebuilt {
            via: [via(Transport::Udp), via(Transport::Tcp)],
            record_route: [rr(Transport::Udp), rr(Transport::Tcp)],
        }
    }

    fn via(&self, t: Transport) -> &[u8] {
        &self.via[usize::from(t == Transport::Tcp)]
    }

    fn record_route(&self, t: Transport) -> &[u8] {
        &self.record_route[usize::from(t == Transport::Tcp)]
    }
}

/// How to forward a request.
#[derive(Debug, Clone)]
pub struct Forward<'l> {
    /// Transport of the next hop (written into our Via).
    pub transport: Transport,
    /// Branch key and loop hash.
    pub key: u64,
    /// Loop hash.
    pub loop_hash: u32,
    /// Our Via and Record-Route texts ([`Prebuilt::new`] of our address).
    pub local: &'l Prebuilt,
    /// A new Request-URI (strict routing), as a span of the input.
    pub new_ruri: Option<Span>,
    /// Route values to drop (indices into `Message::routes`).
    pub drop_routes: &'l [usize],
    /// A URI to append as the last Route value (strict routing), as a span of the input.
    pub append_route: Option<Span>,
    /// received/rport for the top Via.
    pub stamp: Stamp,
    /// Whether to add our Record-Route.
    pub record_route: bool,
}

/// Appends `bytes`, a span of variable length, to `out`
/// (`Vec::extend_from_slice` as one shared copy that is never inlined).
///
/// Inlined, every such append is a capacity check, a grow call and a
/// `memcpy` call: most of a 64-byte code line, and building a forwarded
/// request makes a dozen of them. A message that finds its core cold
/// fetches each code line it runs (the `proxy` module docs, "Cost of a
/// message"), so one copy reached by 4-instruction calls is cheaper than a
/// dozen inlined (about 10 more instructions executed per append).
/// Literals stay `extend_from_slice`/`push`: their length is known, so
/// they compile to a few stores without a `memcpy` call. So do the copies
/// in header loops ([`Runs`]): a call inside a loop keeps the loop's
/// values in saved registers, which doubled the instructions of such a
/// loop for no fewer code lines.
#[inline(never)]
pub(super) fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(bytes);
}

/// Appends `v` in decimal.
pub fn push_dec(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    put(out, &buf[i..]);
}

/// Appends an address as in a Via `received` parameter: IPv4 dotted, IPv6
/// in brackets (RFC 3261 §25 / RFC 5118).
pub fn push_ip(out: &mut Vec<u8>, ip: IpAddr) {
    match ip {
        IpAddr::V4(v4) => {
            for (k, o) in v4.octets().into_iter().enumerate() {
                if k > 0 {
                    out.push(b'.');
                }
                push_dec(out, u64::from(o));
            }
        }
        IpAddr::V6(v6) => {
            // rare: the standard formatting (RFC 5952 compression) is kept
            let _ = write!(out, "[{v6}]");
        }
    }
}

/// Appends `SIP/2.0 <code> <reason>\r\n`.
fn push_status_line(out: &mut Vec<u8>, code: u16, reason: &str) {
    if (100..1000).contains(&code) {
        // a status code has three digits (RFC 3261 §25.1): one copy
        let d = [
            b'0' + (code / 100) as u8,
            b'0' + (code / 10 % 10) as u8,
            b'0' + (code % 10) as u8,
        ];
        out.extend_from_slice(&[
            b'S', b'I', b'P', b'/', b'2', b'.', b'0', b' ', d[0], d[1], d[2], b' ',
        ]);
    } else {
        out.extend_from_slice(b"SIP/2.0 ");
        push_dec(out, u64::from(code));
        out.push(b' ');
    }
    put(out, reason.as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn transport_token(t: Transport) -> &'static [u8] {
    match t {
        Transport::Udp => b"UDP",
        Transport::Tcp => b"TCP",
    }
}

/// Writes our Via value (without the header name).
pub fn write_our_via(out: &mut Vec<u8>, local: &Local, t: Transport, key: u64, loop_hash: u32) {
    out.extend_from_slice(b"SIP/2.0/");
    put(out, transport_token(t));
    out.push(b' ');
    put(out, local.host.as_bytes());
    out.push(b':');
    push_dec(out, u64::from(local.port));
    out.extend_from_slice(b";branch=");
    write_branch(out, key, loop_hash);
}

/// Writes the top Via's value with received/rport applied.
fn write_stamped_via_value(out: &mut Vec<u8>, m: &Message<'_>, value: Span, stamp: Stamp) {
    let b = m.buf();
    if stamp == Stamp::default() {
        // nothing to add (the common case): the value as it came
        put(out, value.of(b));
        return;
    }
    let via = m.top_via();
    let mut from = value.start();
    if let (Some(p), Some(rs)) = (stamp.rport, via.rport_span) {
        put(out, &b[from..rs.end()]);
        out.push(b'=');
        push_dec(out, u64::from(p));
        from = rs.end();
    }
    put(out, &b[from..via.span.end()]);
    if let Some(ip) = stamp.received {
        out.extend_from_slice(b";received=");
        push_ip(out, ip);
    }
    put(out, &b[via.span.end()..value.end()]);
}

/// Writes a Route header holding the values of line `h` that are not dropped.
fn write_route_line(out: &mut Vec<u8>, m: &Message<'_>, value: Span, drop: &[usize]) {
    let b = m.buf();
    let mut first = true;
    for (k, r) in m.routes().iter().enumerate() {
        if r.span.start() < value.start() || r.span.end() > value.end() || drop.contains(&k) {
            continue;
        }
        put(out, if first { b"Route: " } else { b", " });
        put(out, r.span.of(b));
        first = false;
    }
    if !first {
        out.extend_from_slice(b"\r\n");
    }
}

/// Copies runs of header lines unchanged: consecutive lines are adjacent
/// in the input, so a run of them is one copy.
struct Runs<'b> {
    b: &'b [u8],
    run: Option<(usize, usize)>,
}

impl<'b> Runs<'b> {
    fn new(b: &'b [u8]) -> Self {
        Runs { b, run: None }
    }

    /// Adds the line `l` to the run (flushing the run when not adjacent).
    #[inline]
    fn keep(&mut self, out: &mut Vec<u8>, l: Span) {
        match &mut self.run {
            Some((_, e)) if *e == l.start() => *e = l.end(),
            _ => {
                self.flush(out);
                self.run = Some((l.start(), l.end()));
            }
        }
    }

    /// Writes the run so far (inline, not [`put`]: see there).
    #[inline]
    fn flush(&mut self, out: &mut Vec<u8>) {
        if let Some((a, e)) = self.run.take() {
            out.extend_from_slice(&self.b[a..e]);
        }
    }
}

/// Appends the forwarded request (§16.6 steps 2–8).
pub fn forward_request(out: &mut Vec<u8>, m: &Message<'_>, f: &Forward<'_>) {
    let b = m.buf();
    let (method_span, uri) = match m.start_line() {
        crate::wire::StartLine::Request {
            method_span, uri, ..
        } => (method_span, uri),
        crate::wire::StartLine::Response { .. } => return,
    };
    put(out, method_span.of(b));
    out.push(b' ');
    put(out, f.new_ruri.unwrap_or(uri).of(b));
    out.extend_from_slice(b" SIP/2.0\r\nVia: ");
    put(out, f.local.via(f.transport));
    write_branch(out, f.key, f.loop_hash);
    out.extend_from_slice(b"\r\n");
    if f.record_route {
        put(out, f.local.record_route(f.transport));
    }
    if f.drop_routes.is_empty() {
        write_headers_edited(out, m, f.stamp);
    } else {
        write_headers_dropping_routes(out, m, f);
    }
    if let Some(r) = f.append_route {
        out.extend_from_slice(b"Route: <");
        put(out, r.of(b));
        out.extend_from_slice(b">\r\n");
    }
    // the parser reads both values whenever their lines are present
    if m.max_forwards().is_none() {
        out.extend_from_slice(b"Max-Forwards: 70\r\n");
    }
    if m.content_length().is_none() {
        out.extend_from_slice(b"Content-Length: ");
        push_dec(out, m.body().len() as u64);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    put(out, m.body());
}

/// Appends the header lines of request `m` as forwarded when no Route
/// value is dropped: unchanged but for the Max-Forwards line (decremented)
/// and, when `stamp` adds anything, the top Via's line.
///
/// The parser leaves the header lines back to back in the buffer, so with
/// at most two lines rewritten the rest is at most three spans of the
/// input: a few copies, and no per-line work but finding Max-Forwards.
/// [`write_headers_dropping_routes`] writes the same for any `Forward`
/// (tested in `edited_headers_match_the_line_by_line_copy`).
fn write_headers_edited(out: &mut Vec<u8>, m: &Message<'_>, stamp: Stamp) {
    let b = m.buf();
    let hs = m.headers();
    let via = (stamp != Stamp::default()).then_some(m.top_via().header as usize);
    let mf = if m.max_forwards().is_some() {
        hs.iter().position(|h| h.name == HeaderName::MaxForwards)
    } else {
        None
    };
    let (first, second) = match (via, mf) {
        (Some(v), Some(f)) if f < v => (mf, via),
        _ => (via, mf),
    };
    let mut from = m.start_line_span().end();
    for i in [first, second].into_iter().flatten() {
        let h = &hs[i];
        put(out, &b[from..h.line.start()]);
        if h.name == HeaderName::MaxForwards {
            write_max_forwards(out, m);
        } else {
            write_stamped_via_line(out, m, h, stamp);
        }
        from = h.line.end();
    }
    // up to the empty line, which the caller writes after its additions
    put(out, &b[from..m.headers_end() - 2]);
}

/// Appends the header lines of request `m` as forwarded by `f`, line by
/// line: the Route lines without the values `f` drops, the Max-Forwards
/// line decremented, the top Via's line stamped.
#[inline(never)]
fn write_headers_dropping_routes(out: &mut Vec<u8>, m: &Message<'_>, f: &Forward<'_>) {
    let top_via_header = m.top_via().header as usize;
    let mut runs = Runs::new(m.buf());
    for (i, h) in m.headers().iter().enumerate() {
        match h.name {
            HeaderName::Via if i == top_via_header && f.stamp != Stamp::default() => {
                runs.flush(out);
                write_stamped_via_line(out, m, h, f.stamp);
            }
            HeaderName::MaxForwards => {
                runs.flush(out);
                write_max_forwards(out, m);
            }
            HeaderName::Route if !f.drop_routes.is_empty() => {
                runs.flush(out);
                write_route_line(out, m, h.value, f.drop_routes);
            }
            _ => runs.keep(out, h.line),
        }
    }
    runs.flush(out);
}

/// Appends the Max-Forwards line of a forwarded request (§16.6 step 3).
fn write_max_forwards(out: &mut Vec<u8>, m: &Message<'_>) {
    let v = m.max_forwards().unwrap_or(1).saturating_sub(1);
    out.extend_from_slice(b"Max-Forwards: ");
    push_dec(out, u64::from(v));
    out.extend_from_slice(b"\r\n");
}

/// Appends header line `h`, the top Via's, with `stamp` applied.
fn write_stamped_via_line(out: &mut Vec<u8>, m: &Message<'_>, h: &Header, stamp: Stamp) {
    put(out, h.name_span.of(m.buf()));
    out.extend_from_slice(b": ");
    write_stamped_via_value(out, m, h.value, stamp);
    out.extend_from_slice(b"\r\n");
}

/// Appends a response with our (top) Via removed (§16.7 step 3).
/// Returns false when there is no Via left to send it to.
pub fn forward_response(out: &mut Vec<u8>, m: &Message<'_>) -> bool {
    if m.vias().len() < 2 {
        return false;
    }
    put(out, m.start_line_span().of(m.buf()));
    write_headers_popping_via(out, m);
    true
}

/// Appends the header lines of `m` without its top via-parm (the whole
/// line when it holds no other), then the empty line and the body.
///
/// The parser leaves the start line, the header lines, the empty line and
/// the body back to back in the buffer, so everything but the top Via's
/// line is the span before it and the span after it: two copies, and no
/// loop over the header lines.
fn write_headers_popping_via(out: &mut Vec<u8>, m: &Message<'_>) {
    let b = m.buf();
    let top = m.top_via();
    let h = m.headers()[top.header as usize];
    put(out, &b[m.start_line_span().end()..h.line.start()]);
    if let Some(next) = top.next_in_line {
        put(out, h.name_span.of(b));
        out.extend_from_slice(b": ");
        put(out, &b[next as usize..h.value.end()]);
        out.extend_from_slice(b"\r\n");
    }
    put(out, &b[h.line.end()..m.body_span().end()]);
}

/// Appends a response with a different status line (§16.7 step 6: a 503 is
/// forwarded as 500), our Via removed.
pub fn forward_response_as(out: &mut Vec<u8>, m: &Message<'_>, code: u16, reason: &str) -> bool {
    if m.vias().len() < 2 {
        return false;
    }
    push_status_line(out, code, reason);
    write_headers_popping_via(out, m);
    true
}

/// Options of a locally generated response.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalOpts<'a> {
    /// Leave out the top via-parm (it is ours: the request is our stored copy).
    pub skip_top_via: bool,
    /// received/rport for the top Via (responses to requests as received).
    pub stamp: Stamp,
    /// To tag to add when the request's To has none (not for 100).
    pub to_tag: Option<&'a [u8]>,
    /// Extra header lines, each ending in CRLF.
    pub extra: &'a [u8],
}

/// Appends a response generated here to request `m` (§8.2.6).
pub fn local_response(
    out: &mut Vec<u8>,
    m: &Message<'_>,
    code: u16,
    reason: &str,
    o: LocalOpts<'_>,
) {
    push_status_line(out, code, reason);
    write_local_headers(out, m, code, o);
}

/// Appends the 100 Trying a stateful proxy sends for INVITE `m`
/// (§16.2): `local_response(out, m, 100, "Trying", ..)` with `stamp`, its
/// status line one copy of a literal (no digits to compute), as the one
/// local response every new INVITE gets.
#[inline(never)]
pub fn trying(out: &mut Vec<u8>, m: &Message<'_>, stamp: Stamp) {
    out.extend_from_slice(b"SIP/2.0 100 Trying\r\n");
    write_local_headers(
        out,
        m,
        100,
        LocalOpts {
            stamp,
            ..LocalOpts::default()
        },
    );
}

/// Appends the header lines of a response with status `code` generated
/// here to request `m`, the empty line after them included.
fn write_local_headers(out: &mut Vec<u8>, m: &Message<'_>, code: u16, o: LocalOpts<'_>) {
    let b = m.buf();
    let top = m.top_via();
    for (i, h) in m.headers().iter().enumerate() {
        match h.name {
            HeaderName::Via => {
                if i == top.header as usize {
                    if o.skip_top_via {
                        if let Some(next) = top.next_in_line {
                            out.extend_from_slice(b"Via: ");
                            put(out, &b[next as usize..h.value.end()]);
                            out.extend_from_slice(b"\r\n");
                        }
                    } else {
                        out.extend_from_slice(b"Via: ");
                        write_stamped_via_value(out, m, h.value, o.stamp);
                        out.extend_from_slice(b"\r\n");
                    }
                } else {
                    put(out, h.line.of(b));
                }
            }
            HeaderName::To => {
                out.extend_from_slice(b"To: ");
                put(out, h.value.of(b));
                if let (Some(t), None, true) = (o.to_tag, m.to_tag(), code > 100) {
                    out.extend_from_slice(b";tag=");
                    put(out, t);
                }
                out.extend_from_slice(b"\r\n");
            }
            HeaderName::From | HeaderName::CallId | HeaderName::CSeq => {
                put(out, h.line.of(b));
            }
            _ => {}
        }
    }
    put(out, o.extra);
    out.extend_from_slice(b"Content-Length: 0\r\n\r\n");
}

/// Copies the Route lines of `req` (for ACK and CANCEL, which carry the
/// INVITE's route set).
fn copy_lines(out: &mut Vec<u8>, m: &Message<'_>, names: &[HeaderName]) {
    let b = m.buf();
    for h in m.headers() {
        if names.contains(&h.name) {
            put(out, h.line.of(b));
        }
    }
}

fn write_request_line_and_top_via(out: &mut Vec<u8>, method: &[u8], req: &Message<'_>) {
    let b = req.buf();
    put(out, method);
    out.push(b' ');
    put(out, req.request_uri().map(|u| u.span.of(b)).unwrap_or(b""));
    out.extend_from_slice(b" SIP/2.0\r\nVia: ");
    put(out, req.top_via().span.of(b));
    out.extend_from_slice(b"\r\nMax-Forwards: 70\r\n");
}

/// The ACK a client transaction sends for a non-2xx final response
/// (§17.1.1.3): built from our forwarded INVITE `req` and the response.
pub fn ack_for(out: &mut Vec<u8>, req: &Message<'_>, resp: &Message<'_>) {
    write_request_line_and_top_via(out, b"ACK", req);
    copy_lines(
        out,
        req,
        &[HeaderName::Route, HeaderName::From, HeaderName::CallId],
    );
    out.extend_from_slice(b"To: ");
    put(out, resp.to().span.of(resp.buf()));
    out.extend_from_slice(b"\r\nCSeq: ");
    push_dec(out, u64::from(req.cseq_num()));
    out.extend_from_slice(b" ACK\r\nContent-Length: 0\r\n\r\n");
}

/// The CANCEL for our forwarded INVITE `req` (§9.1).
pub fn cancel_for(out: &mut Vec<u8>, req: &Message<'_>) {
    write_request_line_and_top_via(out, b"CANCEL", req);
    copy_lines(
        out,
        req,
        &[
            HeaderName::Route,
            HeaderName::From,
            HeaderName::To,
            HeaderName::CallId,
        ],
    );
    out.extend_from_slice(b"CSeq: ");
    push_dec(out, u64::from(req.cseq_num()));
    out.extend_from_slice(b" CANCEL\r\nContent-Length: 0\r\n\r\n");
}

#[cfg(test)]
mod tests;
