//! Grammars of the header values the proxy interprets: via-parm,
//! name-addr / addr-spec with parameters, CSeq, Call-ID, numbers, dates.
//!
//! Each parser takes the message bytes and the value's span and returns
//! spans; nothing is copied.

use super::error::ValueError;
use super::lex::{
    find_top_level, is_param_value, is_word, parse_digits, scan_quoted, scan_token, skip_lws, trim,
    DigitsError,
};
use super::uri::{parse_uri, scan_sip_uri};
use super::Span;

/// The `rport` parameter of a Via (RFC 3581).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rport {
    /// Not present.
    Absent,
    /// Present without a value: the client asks for it to be filled in.
    Requested,
    /// Present with a value.
    Value(u16),
}

/// One via-parm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Via {
    /// The via-parm, from the protocol name to its last parameter.
    pub span: Span,
    /// Index of the header line holding it.
    pub header: u16,
    /// The transport token (`UDP`, `TCP`, ...).
    pub transport: Span,
    /// The sent-by host.
    pub host: Span,
    /// The sent-by port.
    pub port: Option<u16>,
    /// The `branch` parameter's value.
    pub branch: Option<Span>,
    /// The `received` parameter's value.
    pub received: Option<Span>,
    /// The `rport` parameter.
    pub rport: Rport,
    /// The `rport` parameter's name (to fill in its value).
    pub rport_span: Option<Span>,
    /// Where the next via-parm of the same header line starts (after the comma), if any.
    pub next_in_line: Option<u32>,
}

/// A name-addr or addr-spec with its header parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NameAddr {
    /// The whole value (display name to last parameter).
    pub span: Span,
    /// The URI (without angle brackets).
    pub uri: Span,
    /// The `tag` parameter's value.
    pub tag: Option<Span>,
    /// Whether the URI carries `;lr`.
    pub lr: bool,
    /// Where the next value of the same header line starts (after the comma), if any.
    pub next_in_line: Option<u32>,
}

/// Where parsed values go: one `push` (the parse keeps them in small
/// vectors; `Extend` with an `Option` costs a generic reserve per value).
pub(crate) trait Push<T> {
    /// Appends one value.
    fn push(&mut self, v: T);
}

impl<T> Push<T> for Vec<T> {
    #[inline]
    fn push(&mut self, v: T) {
        Vec::push(self, v);
    }
}

impl<A: smallvec::Array> Push<A::Item> for smallvec::SmallVec<A> {
    #[inline]
    fn push(&mut self, v: A::Item) {
        smallvec::SmallVec::push(self, v);
    }
}

/// Keeps the last value (a single-valued header: From, To).
impl<T> Push<T> for Option<T> {
    #[inline]
    fn push(&mut self, v: T) {
        *self = Some(v);
    }
}

/// Checks values without keeping them.
pub(crate) struct Discard;

impl<T> Push<T> for Discard {
    #[inline]
    fn push(&mut self, _: T) {}
}

fn digits_err(e: DigitsError) -> ValueError {
    match e {
        DigitsError::Empty => ValueError::Empty,
        DigitsError::NotDigit => ValueError::Number,
        DigitsError::Overflow => ValueError::Overflow,
    }
}

/// Parses a whole value as a number no larger than `max`.
#[inline]
pub(crate) fn number(b: &[u8], v: Span, max: u64) -> Result<u64, ValueError> {
    match parse_digits(v.of(b), max) {
        Ok(n) => Ok(n),
        Err(_) => number_error(b, v, max),
    }
}

/// The error [`number`] gives for a value that is not a number up to
/// `max` (a negative number is told apart).
#[cold]
#[inline(never)]
fn number_error(b: &[u8], v: Span, max: u64) -> Result<u64, ValueError> {
    let s = v.of(b);
    if s.first() == Some(&b'-') && s.len() > 1 && s[1..].iter().all(u8::is_ascii_digit) {
        return Err(ValueError::Negative);
    }
    parse_digits(s, max).map_err(digits_err)
}

/// `generic-param` list: `*( SEMI token [ EQUAL (token / host / quoted-string) ] )`.
/// Calls `each(name, value)` per parameter; returns the index after the list.
fn params(
    b: &[u8],
    mut i: usize,
    end: usize,
    mut each: impl FnMut(Span, Option<Span>),
) -> Result<usize, ValueError> {
    loop {
        let k = skip_lws(b, i, end);
        if k >= end || b[k] != b';' {
            return Ok(i);
        }
        let n = skip_lws(b, k + 1, end);
        let ne = scan_token(b, n, end);
        if ne == n {
            return Err(ValueError::Param);
        }
        let mut j = skip_lws(b, ne, end);
        let mut value = None;
        if j < end && b[j] == b'=' {
            let vs = skip_lws(b, j + 1, end);
            let ve = if vs < end && b[vs] == b'"' {
                scan_quoted(b, vs, end).ok_or(ValueError::Quote)?
            } else {
                scan_param_value(b, vs, end)
            };
            if ve == vs {
                return Err(ValueError::Param);
            }
            value = Some(Span::new(vs, ve));
            j = ve;
        } else {
            j = ne;
        }
        each(Span::new(n, ne), value);
        i = j;
    }
}

/// Scans a parameter value (`token`, `host` or IPv6 reference characters) from `i`.
#[inline]
fn scan_param_value(b: &[u8], i: usize, end: usize) -> usize {
    super::lex::run_while(b, i, end, is_param_value)
}

/// What a Via parameter sets, shared by [`parse_via`] and [`simple_via`]
/// so both read parameters the same way.
#[derive(Default)]
struct ViaParams {
    branch: Option<Span>,
    received: Option<Span>,
    rport: Option<Rport>,
    rport_span: Option<Span>,
    bad: bool,
}

impl ViaParams {
    #[inline]
    fn take(&mut self, b: &[u8], name_span: Span, value: Option<Span>) {
        match via_param(b, name_span) {
            ViaParam::Branch => {
                self.branch = value;
                self.bad |= value.is_none();
            }
            ViaParam::Received => {
                self.received = value;
                self.bad |= value.is_none();
            }
            ViaParam::Rport => {
                self.rport_span = Some(name_span);
                self.rport = Some(match value {
                    None => Rport::Requested,
                    Some(v) => match parse_digits(v.of(b), 65535) {
                        Ok(p) => Rport::Value(p as u16),
                        Err(_) => {
                            self.bad = true;
                            Rport::Absent
                        }
                    },
                });
            }
            ViaParam::Other => {}
        }
    }
}

/// The Via parameters a proxy reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ViaParam {
    Branch,
    Received,
    Rport,
    Other,
}

/// Which Via parameter the name `name` of `b` is, ASCII case ignored:
/// its bytes (and what follows them, masked off) as one word, with the
/// case bit of every byte set, against the lower-case names. Setting
/// bit 5 maps only a letter's two cases onto a lower-case letter, so
/// the compare is `eq_ignore_ascii_case`.
#[inline(always)]
fn via_param(b: &[u8], name: Span) -> ViaParam {
    const fn word(s: &[u8; 8]) -> u64 {
        u64::from_le_bytes(*s)
    }
    let len = name.len();
    if !matches!(len, 5 | 6 | 8) {
        return ViaParam::Other;
    }
    let Some(w) = b
        .get(name.start()..name.start() + 8)
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
    else {
        return via_param_short(name.of(b));
    };
    let mask = u64::MAX >> (64 - 8 * len);
    match (u64::from_le_bytes(w) | 0x2020_2020_2020_2020) & mask {
        x if x == word(b"branch\0\0") => ViaParam::Branch,
        x if x == word(b"received") => ViaParam::Received,
        x if x == word(b"rport\0\0\0") => ViaParam::Rport,
        _ => ViaParam::Other,
    }
}

/// [`via_param`] of a name too close to the end of the buffer to be
/// read as a word.
#[cold]
#[inline(never)]
fn via_param_short(name: &[u8]) -> ViaParam {
    if name.eq_ignore_ascii_case(b"branch") {
        ViaParam::Branch
    } else if name.eq_ignore_ascii_case(b"received") {
        ViaParam::Received
    } else if name.eq_ignore_ascii_case(b"rport") {
        ViaParam::Rport
    } else {
        ViaParam::Other
    }
}

/// The common shape of a Via value, one via-parm without white space
/// inside: `SIP/2.0/transport SP host[:port]*(;name[=value])` with
/// unquoted values, the whole of `[start, end)`. `None` when it has
/// another shape; what it returns is what [`parse_via`] returns (tested
/// against it in `simple_forms_agree_with_the_parser`), in one pass.
#[inline]
fn simple_via(b: &[u8], start: usize, end: usize, header: u16) -> Option<Via> {
    let s = b.get(..end)?;
    if s.get(start..start + 8)? != b"SIP/2.0/" {
        return None;
    }
    let ts = start + 8;
    let te = scan_token(s, ts, end);
    if te == ts || s.get(te) != Some(&b' ') {
        return None;
    }
    let h = te + 1;
    let mut i = h;
    while i < end && (s[i].is_ascii_alphanumeric() || matches!(s[i], b'-' | b'.')) {
        i += 1;
    }
    if i == h {
        return None;
    }
    let host = Span::new(h, i);
    let mut port = None;
    if i < end && s[i] == b':' {
        let (p, after) = super::lex::short_port(s, i + 1, end)?;
        port = Some(p);
        i = after;
    }
    let mut ps = ViaParams::default();
    while i < end && s[i] == b';' {
        let n = i + 1;
        let ne = scan_token(s, n, end);
        if ne == n {
            return None;
        }
        let mut value = None;
        i = ne;
        if i < end && s[i] == b'=' {
            let vs = i + 1;
            let ve = scan_param_value(s, vs, end);
            if ve == vs {
                return None;
            }
            value = Some(Span::new(vs, ve));
            i = ve;
        }
        ps.take(s, Span::new(n, ne), value);
    }
    if i != end || ps.bad {
        return None;
    }
    Some(Via {
        span: Span::new(start, end),
        header,
        transport: Span::new(ts, te),
        host,
        port,
        branch: ps.branch,
        received: ps.received,
        rport: ps.rport.unwrap_or(Rport::Absent),
        rport_span: ps.rport_span,
        next_in_line: None,
    })
}

/// Parses the via-parms of one Via header value, appending to `out`.
pub(crate) fn vias(
    b: &[u8],
    v: Span,
    header: u16,
    out: &mut impl Push<Via>,
) -> Result<(), ValueError> {
    let end = v.end();
    let i = v.start();
    if let Some(via) = simple_via(b, i, end, header) {
        out.push(via);
        return Ok(());
    }
    vias_slow(b, v, header, out)
}

/// [`vias`] without its fast path.
#[cold]
#[inline(never)]
fn vias_slow(b: &[u8], v: Span, header: u16, out: &mut impl Push<Via>) -> Result<(), ValueError> {
    let end = v.end();
    let mut i = v.start();
    loop {
        let start = skip_lws(b, i, end);
        let mut via = parse_via(b, start, end, header)?;
        let j = skip_lws(b, via.span.end(), end);
        if j == end {
            out.push(via);
            return Ok(());
        }
        if b[j] != b',' {
            return Err(ValueError::Trailing);
        }
        via.next_in_line = Some(skip_lws(b, j + 1, end) as u32);
        out.push(via);
        i = j + 1;
    }
}

fn parse_via(b: &[u8], start: usize, end: usize, header: u16) -> Result<Via, ValueError> {
    // sent-protocol = protocol-name SLASH protocol-version SLASH transport
    let mut i = start;
    let mut fields = [Span::new(0, 0); 3];
    for (n, f) in fields.iter_mut().enumerate() {
        if n > 0 {
            i = skip_lws(b, i, end);
            if i >= end || b[i] != b'/' {
                return Err(ValueError::Via);
            }
            i = skip_lws(b, i + 1, end);
        }
        let e = scan_token(b, i, end);
        if e == i {
            return Err(ValueError::Via);
        }
        *f = Span::new(i, e);
        i = e;
    }
    if !fields[0].of(b).eq_ignore_ascii_case(b"SIP") {
        return Err(ValueError::Via);
    }
    // LWS sent-by
    let h = skip_lws(b, i, end);
    if h == i {
        return Err(ValueError::Via);
    }
    let mut e = h;
    if e < end && b[e] == b'[' {
        while e < end && b[e] != b']' {
            e += 1;
        }
        if e >= end {
            return Err(ValueError::Via);
        }
        e += 1;
    } else {
        while e < end && (b[e].is_ascii_alphanumeric() || matches!(b[e], b'-' | b'.')) {
            e += 1;
        }
    }
    if e == h {
        return Err(ValueError::Via);
    }
    let host = Span::new(h, e);
    let mut port = None;
    let mut i = e;
    let c = skip_lws(b, e, end);
    if c < end && b[c] == b':' {
        let p = skip_lws(b, c + 1, end);
        let mut pe = p;
        while pe < end && b[pe].is_ascii_digit() {
            pe += 1;
        }
        port = Some(parse_digits(&b[p..pe], 65535).map_err(|_| ValueError::Via)? as u16);
        i = pe;
    }
    let mut ps = ViaParams::default();
    let pe = params(b, i, end, |name_span, value| ps.take(b, name_span, value))?;
    if ps.bad {
        return Err(ValueError::Param);
    }
    Ok(Via {
        span: Span::new(start, pe),
        header,
        transport: fields[2],
        host,
        port,
        branch: ps.branch,
        received: ps.received,
        rport: ps.rport.unwrap_or(Rport::Absent),
        rport_span: ps.rport_span,
        next_in_line: None,
    })
}

/// Which name-addr header is being parsed (they differ in what they allow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddrKind {
    /// From / To: one value, name-addr or addr-spec.
    Single,
    /// Contact: a list of values, or `*`.
    Contact,
    /// Route / Record-Route: a list of name-addrs (angle brackets required).
    Route,
}

/// Parses a name-addr list (or a single one), appending to `out`.
pub(crate) fn name_addrs(
    b: &[u8],
    v: Span,
    kind: AddrKind,
    out: &mut impl Push<NameAddr>,
) -> Result<(), ValueError> {
    let end = v.end();
    if kind == AddrKind::Contact && v.of(b) == b"*" {
        return Ok(());
    }
    if kind == AddrKind::Single {
        let mut one = None;
        if simple_name_addr(b, v.start(), end, &mut one).is_some() {
            if let Some(na) = one {
                out.push(na);
            }
            return Ok(());
        }
    }
    if kind == AddrKind::Route {
        if let Some(na) = simple_route(b, v.start(), end) {
            out.push(na);
            return Ok(());
        }
    }
    name_addrs_slow(b, v, kind, out)
}

/// The common shape of a Route value, the whole of `[start, end)`: one
/// `<sip:[user@]host[:port]>`, with `;lr` before the `>` or not (see
/// [`simple_sip_uri`]). `None` when it has another shape; what it returns
/// is what [`name_addrs_slow`] returns (tested against it in
/// `simple_forms_agree_with_the_parser`), in one pass.
#[inline]
fn simple_route(b: &[u8], start: usize, end: usize) -> Option<NameAddr> {
    let s = b.get(..end)?;
    if s.get(start) != Some(&b'<') {
        return None;
    }
    let r = scan_sip_uri(s, start + 1, end, &mut None)?;
    let lr = s.get(r..r + 3) == Some(super::uri::LR);
    let close = if lr { r + 3 } else { r };
    if s.get(close) != Some(&b'>') || close + 1 != end {
        return None;
    }
    Some(NameAddr {
        span: Span::new(start, end),
        uri: Span::new(start + 1, close),
        tag: None,
        lr,
        next_in_line: None,
    })
}

/// [`name_addrs`] of a From or To value, into `out` (set when `Ok`):
/// the fast path writes the view's field without a copy.
#[inline]
pub(crate) fn single_name_addr(
    b: &[u8],
    v: Span,
    out: &mut Option<NameAddr>,
) -> Result<(), ValueError> {
    if simple_name_addr(b, v.start(), v.end(), out).is_some() {
        return Ok(());
    }
    name_addrs_slow(b, v, AddrKind::Single, out)
}

/// [`name_addrs`] without its fast path.
#[inline(never)]
fn name_addrs_slow(
    b: &[u8],
    v: Span,
    kind: AddrKind,
    out: &mut impl Push<NameAddr>,
) -> Result<(), ValueError> {
    let end = v.end();
    let mut i = v.start();
    loop {
        let start = skip_lws(b, i, end);
        let mut na = name_addr(b, start, end, kind)?;
        let j = skip_lws(b, na.span.end(), end);
        if j == end {
            out.push(na);
            return Ok(());
        }
        if b[j] != b',' || kind == AddrKind::Single {
            return Err(ValueError::Trailing);
        }
        na.next_in_line = Some(skip_lws(b, j + 1, end) as u32);
        out.push(na);
        i = j + 1;
    }
}

/// The common shape of a From or To value, the whole of `[start, end)`:
/// `[token SP | quoted [SP]]<sip:[user@]host[:port]>[;tag=token]` (see
/// [`simple_sip_uri`]; `quoted` a quoted string of printable ASCII
/// without `\`). `None` when it has another shape; what it returns
/// is what [`name_addr`] returns (tested against it in
/// `simple_forms_agree_with_the_parser`), in one pass.
#[inline]
fn simple_name_addr(b: &[u8], start: usize, end: usize, out: &mut Option<NameAddr>) -> Option<()> {
    let s = b.get(..end)?;
    let mut l = start;
    if s.get(l) == Some(&b'"') {
        // a display name without quoted pairs: up to the next quote
        let q = super::lex::run_while(s, l + 1, end, |c| {
            matches!(c, b' '..=b'~') && c != b'"' && c != b'\\'
        });
        if s.get(q) != Some(&b'"') {
            return None;
        }
        l = q + 1;
        if s.get(l) == Some(&b' ') {
            l += 1;
        }
        if s.get(l) != Some(&b'<') {
            return None;
        }
    } else if s.get(l) != Some(&b'<') {
        l = scan_token(s, start, end);
        if l == start || s.get(l) != Some(&b' ') {
            return None;
        }
        l += 1;
        if s.get(l) != Some(&b'<') {
            return None;
        }
    }
    let r = scan_sip_uri(s, l + 1, end, &mut None)?;
    if s.get(r) != Some(&b'>') {
        return None;
    }
    let after = r + 1;
    let tag = if after == end {
        None
    } else {
        let vs = after + 5;
        if s.get(after..vs)? != b";tag=" {
            return None;
        }
        let ve = scan_token(s, vs, end);
        if ve == vs || ve != end {
            return None;
        }
        Some(Span::new(vs, ve))
    };
    *out = Some(NameAddr {
        span: Span::new(start, end),
        uri: Span::new(l + 1, r),
        tag,
        lr: false,
        next_in_line: None,
    });
    Some(())
}

fn name_addr(b: &[u8], start: usize, end: usize, kind: AddrKind) -> Result<NameAddr, ValueError> {
    if start >= end {
        return Err(ValueError::Empty);
    }
    // Find '<' after an optional display name.
    let mut i = start;
    let mut laquot = None;
    if b[i] == b'"' {
        let q = scan_quoted(b, i, end).ok_or(ValueError::Quote)?;
        let k = skip_lws(b, q, end);
        if k >= end || b[k] != b'<' {
            return Err(ValueError::NameAddr);
        }
        laquot = Some(k);
    } else if b[i] == b'<' {
        laquot = Some(i);
    } else {
        // *(token LWS) "<"  or an addr-spec
        loop {
            let t = scan_token(b, i, end);
            if t == i {
                break;
            }
            let k = skip_lws(b, t, end);
            if k < end && b[k] == b'<' {
                laquot = Some(k);
                break;
            }
            if k == t {
                break;
            }
            i = k;
        }
    }
    let (uri, after) = match laquot {
        Some(l) => {
            let r = b[l..end]
                .iter()
                .position(|&c| c == b'>')
                .map(|p| l + p)
                .ok_or(ValueError::NameAddr)?;
            (Span::new(l + 1, r), r + 1)
        }
        None => {
            if kind == AddrKind::Route {
                return Err(ValueError::NameAddr);
            }
            // addr-spec: runs to ';', ',' or white space; it may not hold
            // ',', ';' or '?' of its own (RFC 3261 §20).
            let mut e = start;
            while e < end && !matches!(b[e], b';' | b',' | b' ' | b'\t' | b'\r') {
                if b[e] == b'?' || b[e] == b'"' || b[e] == b'<' || b[e] == b'>' {
                    return Err(ValueError::NameAddr);
                }
                e += 1;
            }
            (Span::new(start, e), e)
        }
    };
    let parsed = parse_uri(b, uri.start(), uri.end(), true).map_err(|e| {
        if laquot.is_none() || e == super::error::UriError::Whitespace {
            ValueError::NameAddr
        } else {
            ValueError::Uri(e)
        }
    })?;
    let mut tag = None;
    let pe = params(b, after, end, |name, value| {
        if name.of(b).eq_ignore_ascii_case(b"tag") {
            tag = value;
        }
    })?;
    Ok(NameAddr {
        span: Span::new(start, pe),
        uri,
        tag,
        lr: parsed.lr,
        next_in_line: None,
    })
}

/// CSeq: `1*DIGIT LWS Method`; the number is below 2**31 (RFC 3261 §8.1.1.5).
#[inline]
pub(crate) fn cseq(b: &[u8], v: Span) -> Result<(u32, Span), ValueError> {
    match simple_cseq(b, v) {
        Some(c) => Ok(c),
        None => cseq_slow(b, v),
    }
}

/// The common shape of a CSeq value, the whole of `v`: one to nine
/// digits (below 2**31 whatever they are), one SP, the method token.
/// `None` when it has another shape; what it returns is what
/// [`cseq_slow`] returns (tested against it in
/// `simple_forms_agree_with_the_parser`), in one pass.
#[inline(always)]
fn simple_cseq(b: &[u8], v: Span) -> Option<(u32, Span)> {
    let s = b.get(v.start()..v.end())?;
    let mut n: u32 = 0;
    let mut k = 0;
    while k < s.len() && k < 9 && s[k].is_ascii_digit() {
        n = n * 10 + u32::from(s[k] - b'0');
        k += 1;
    }
    // a tenth digit is not the SP
    if k == 0 || s.get(k) != Some(&b' ') {
        return None;
    }
    let m = k + 1;
    let me = scan_token(s, m, s.len());
    if me == m || me != s.len() {
        return None;
    }
    Some((n, Span::new(v.start() + m, v.start() + me)))
}

/// [`cseq`] without its fast path.
#[cold]
#[inline(never)]
fn cseq_slow(b: &[u8], v: Span) -> Result<(u32, Span), ValueError> {
    let end = v.end();
    let s = v.start();
    let mut e = s;
    while e < end && b[e].is_ascii_digit() {
        e += 1;
    }
    if e == s {
        return Err(if s < end && b[s] == b'-' {
            ValueError::Negative
        } else {
            ValueError::Number
        });
    }
    let n = parse_digits(&b[s..e], (1 << 31) - 1).map_err(digits_err)? as u32;
    let m = skip_lws(b, e, end);
    if m == e {
        return Err(ValueError::Method);
    }
    let me = scan_token(b, m, end);
    if me == m || skip_lws(b, me, end) != end {
        return Err(ValueError::Method);
    }
    Ok((n, Span::new(m, me)))
}

/// Call-ID: `word ["@" word]`.
#[inline(always)]
pub(crate) fn call_id(b: &[u8], v: Span) -> Result<(), ValueError> {
    let s = v.of(b);
    if s.is_empty() {
        return Err(ValueError::Empty);
    }
    let mut at = false;
    for (k, &c) in s.iter().enumerate() {
        if c == b'@' {
            if at || k == 0 || k + 1 == s.len() {
                return Err(ValueError::Word);
            }
            at = true;
        } else if !is_word(c) {
            return Err(ValueError::Word);
        }
    }
    Ok(())
}

/// rfc1123-date: `wkday "," SP 2DIGIT SP month SP 4DIGIT SP 2DIGIT ":" 2DIGIT ":" 2DIGIT SP "GMT"`.
pub(crate) fn date(b: &[u8], v: Span) -> Result<(), ValueError> {
    let s = v.of(b);
    const WK: [&[u8]; 7] = [b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat", b"Sun"];
    const MO: [&[u8]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    let ok = s.len() == 29
        && WK.contains(&&s[0..3])
        && &s[3..5] == b", "
        && s[5..7].iter().all(u8::is_ascii_digit)
        && s[7] == b' '
        && MO.contains(&&s[8..11])
        && s[11] == b' '
        && s[12..16].iter().all(u8::is_ascii_digit)
        && s[16] == b' '
        && s[17..19].iter().all(u8::is_ascii_digit)
        && s[19] == b':'
        && s[20..22].iter().all(u8::is_ascii_digit)
        && s[22] == b':'
        && s[23..25].iter().all(u8::is_ascii_digit)
        && &s[25..29] == b" GMT";
    if ok {
        Ok(())
    } else {
        Err(ValueError::Date)
    }
}

/// Retry-After: `delta-seconds [ comment ] *( SEMI retry-param )`; only the
/// number is checked (it must fit 32 bits).
pub(crate) fn delta_seconds_prefix(b: &[u8], v: Span) -> Result<u64, ValueError> {
    let end = v.end();
    let s = v.start();
    let mut e = s;
    while e < end && b[e].is_ascii_digit() {
        e += 1;
    }
    parse_digits(&b[s..e], u64::from(u32::MAX)).map_err(digits_err)
}

/// Splits `v` at top-level commas, returning trimmed parts (used for the
/// comma-separated headers the proxy only needs to read, e.g. Proxy-Require).
pub fn split_commas(b: &[u8], v: Span) -> impl Iterator<Item = Span> + '_ {
    let mut i = v.start();
    let end = v.end();
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let c = find_top_level(b, i, end, b',').unwrap_or(end);
        let (s, e) = trim(b, i, c);
        if c >= end {
            done = true;
        }
        i = c + 1;
        Some(Span::new(s, e))
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn s(x: &[u8]) -> Span {
        Span::new(0, x.len())
    }

    #[test]
    fn via_list_with_params() {
        let b = b"SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1;rport, SIP / 2.0 / TCP h.example.com;received=1.2.3.4;rport=9";
        let mut v: Vec<Via> = Vec::new();
        vias(b, s(b), 0, &mut v).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].port, Some(5060));
        assert_eq!(v[0].branch.unwrap().of(b), b"z9hG4bK1");
        assert_eq!(v[0].rport, Rport::Requested);
        assert_eq!(v[1].transport.of(b), b"TCP");
        assert_eq!(v[1].rport, Rport::Value(9));
        assert!(v[0].next_in_line.is_some());
        let bad = b"SIP/2.0/UDP 192.0.2.15;;,;,,";
        assert_eq!(vias(bad, s(bad), 0, &mut v), Err(ValueError::Param));
    }

    pub(crate) use crate::test_util::{fast_path_agrees, one_edit_away};

    pub(crate) const EDITS: &[u8] = b" \t\r\n<>;=:@%\",?[]/\\&_!.-aZ09tT\x00\x7f\xff";

    #[test]
    fn simple_forms_agree_with_the_parser() {
        let tos: &[&[u8]] = &[
            b"sipp <sip:sipp@127.0.0.1:5061>;tag=42SIPpTag001",
            b"service <sip:service@127.0.0.1:5060>",
            b"<sip:bob@biloxi.example.com>;tag=a6c85cf",
            b"<sip:h.example.com:99999>",
            b"Bob <sip:b_o!b@x-y.z>",
            b"<sip:alice@[::1]>",
            b"\"takt\" <sip:takt@127.0.0.1:5061>;tag=0123456789abcdef",
            b"\"A. G. Bell\"<sip:agb@bell-telephone.com>",
            b"\"\" <sip:h>",
        ];
        fast_path_agrees(
            tos,
            EDITS,
            |v| {
                let mut one = None;
                simple_name_addr(v, 0, v.len(), &mut one)?;
                Some(Ok(one.into_iter().collect::<Vec<NameAddr>>()))
            },
            |v| {
                let mut want: Vec<NameAddr> = Vec::new();
                name_addrs_slow(v, s(v), AddrKind::Single, &mut want).map(|()| want)
            },
        );
        // the generator's From and a loose router's Route take the fast paths
        let from = b"\"takt\" <sip:takt@127.0.0.1:5061>;tag=ab";
        let mut one = None;
        assert!(simple_name_addr(from, 0, from.len(), &mut one).is_some());
        assert_eq!(one.unwrap().tag.unwrap().of(from), b"ab");
        assert!(simple_route(b"<sip:127.0.0.1:5060;lr>", 0, 23).unwrap().lr);
        let routes: &[&[u8]] = &[
            b"<sip:127.0.0.1:5060;lr>",
            b"<sip:proxy@p1.example.com;lr>",
            b"<sip:h.example.com:5070>",
            b"<sip:[::1]:5060;lr>",
        ];
        fast_path_agrees(
            routes,
            EDITS,
            |v| simple_route(v, 0, v.len()).map(|na| Ok(vec![na])),
            |v| {
                let mut want: Vec<NameAddr> = Vec::new();
                name_addrs_slow(v, s(v), AddrKind::Route, &mut want).map(|()| want)
            },
        );
        let vias: &[&[u8]] = &[
            b"SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bK-42-1-0",
            b"SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bKtk0123456789abcdef.01234567;rport=5;received=1.2.3.4",
            b"SIP/2.0/TCP pc33.atlanta.com;branch=z9hG4bK776asdhds;rport;maddr=[::1]",
            b"SIP/2.0/UDP h:70000;branch=x",
        ];
        fast_path_agrees(
            vias,
            EDITS,
            |v| simple_via(v, 0, v.len(), 3).map(|via| Ok(vec![via])),
            |v| {
                let mut want: Vec<Via> = Vec::new();
                vias_slow(v, s(v), 3, &mut want).map(|()| want)
            },
        );
        let cseqs: &[&[u8]] = &[
            b"1 INVITE",
            b"314159 BYE",
            b"123456789 ACK",
            b"2147483647 X",
        ];
        fast_path_agrees(
            cseqs,
            EDITS,
            |v| simple_cseq(v, s(v)).map(Ok),
            |v| cseq_slow(v, s(v)),
        );
        let uris: &[&[u8]] = &[
            b"sip:service@127.0.0.1:5060",
            b"sip:127.0.0.1:5070",
            b"sip:a.b-c",
            b"sip:u_s(e)r@h:65535",
            b"sip:user:pw@host",
        ];
        let mut fast = 0;
        for v in one_edit_away(uris, EDITS) {
            for allow in [false, true] {
                if let Some((u, stop)) = super::super::uri::simple_sip_uri(&v, 0, v.len()) {
                    fast += 1;
                    let want = super::super::uri::parse_uri_slow(&v, 0, stop, allow);
                    assert_eq!(Ok(u), want, "{}", v.escape_ascii());
                }
            }
        }
        assert!(fast > 100, "the fast path took {fast} values");
        // parse_uri's fast paths (`;lr` included) against the full grammar
        let uris: &[&[u8]] = &[
            b"sip:127.0.0.1:5070;lr",
            b"sip:p1.example.com;lr",
            b"sip:service@127.0.0.1:5060",
        ];
        for allow in [false, true] {
            fast_path_agrees(
                uris,
                EDITS,
                |v| {
                    let (_, stop) = super::super::uri::simple_sip_uri(v, 0, v.len())?;
                    (stop == v.len() || &v[stop..] == super::super::uri::LR)
                        .then(|| parse_uri(v, 0, v.len(), allow))
                },
                |v| super::super::uri::parse_uri_slow(v, 0, v.len(), allow),
            );
        }
    }

    #[test]
    fn via_params_ignore_case_as_words() {
        let names: &[&[u8]] = &[
            b"branch",
            b"BRANCH",
            b"bRaNcH",
            b"received",
            b"Received",
            b"rport",
            b"RPORT",
            b"branc",
            b"branchx",
            b"rports",
            b"receive",
            b"bRanch\x00",
            b"b\x02anch",
            b"rpor\x14",
            b"brAnCh",
            b"r`ort",
            b"rp@rt",
            b"ttl",
            b"maddr",
            b"recei\xe5ed",
        ];
        for n in names {
            let want = via_param_short(n);
            // at the end of the buffer, and followed by bytes masked off
            for tail in [&b""[..], b"=z9hG4bK", b"\xff\xff\xff"] {
                let b = [*n, tail].concat();
                assert_eq!(
                    via_param(&b, Span::new(0, n.len())),
                    want,
                    "{}",
                    b.escape_ascii()
                );
            }
        }
        assert_eq!(via_param(b"BrAnCh=1", Span::new(0, 6)), ViaParam::Branch);
        assert_eq!(via_param(b"rPoRt;x", Span::new(0, 5)), ViaParam::Rport);
    }

    #[test]
    fn name_addr_forms() {
        let mut v: Vec<NameAddr> = Vec::new();
        let b = b"\"A \\\"B\\\"\" <sip:a@b.c>;tag=x1";
        name_addrs(b, s(b), AddrKind::Single, &mut v).unwrap();
        assert_eq!(v[0].tag.unwrap().of(b), b"x1");
        let b = b"caller<sip:caller@example.com>;tag=323";
        name_addrs(b, s(b), AddrKind::Single, &mut v).unwrap();
        let b = b"sip:+1972@gw1.example.net;unknownparam";
        name_addrs(b, s(b), AddrKind::Contact, &mut v).unwrap();
        let b = b"\"Watson, Thomas\" < sip:t.watson@example.org >";
        assert_eq!(
            name_addrs(b, s(b), AddrKind::Single, &mut v),
            Err(ValueError::NameAddr)
        );
        let b = b"\"Mr. J. User <sip:j.user@example.com>";
        assert_eq!(
            name_addrs(b, s(b), AddrKind::Single, &mut v),
            Err(ValueError::Quote)
        );
        let b = b"<sip:p1.example.com;lr>, <sip:p2.example.com;lr>";
        v.clear();
        name_addrs(b, s(b), AddrKind::Route, &mut v).unwrap();
        assert_eq!(v.len(), 2);
        assert!(v[0].lr);
    }

    #[test]
    fn cseq_and_call_id() {
        let b = b"0009\r\n  INVITE";
        let (n, m) = cseq(b, s(b)).unwrap();
        assert_eq!(n, 9);
        assert_eq!(m.of(b), b"INVITE");
        let b = b"36893488147419103232 REGISTER";
        assert_eq!(cseq(b, s(b)), Err(ValueError::Overflow));
        assert!(call_id(b"a@b", s(b"a@b")).is_ok());
        assert_eq!(call_id(b"a b", s(b"a b")), Err(ValueError::Word));
        assert!(date(
            b"Sat, 13 Nov 2010 23:29:00 GMT",
            s(b"Sat, 13 Nov 2010 23:29:00 GMT")
        )
        .is_ok());
        assert_eq!(
            date(
                b"Fri, 01 Jan 2010 16:00:00 EST",
                s(b"Fri, 01 Jan 2010 16:00:00 EST")
            ),
            Err(ValueError::Date)
        );
    }
}
