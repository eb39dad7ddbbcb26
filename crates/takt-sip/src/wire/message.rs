//! [`Message`]: the zero-copy view and its parser.

use smallvec::SmallVec;

use super::error::ParseError;
use super::lex::{is_wsp, scan_token, trim};
use super::line::{
    find_eol, find_header_end, is_status_line, known_name, parse_status_line, request_line_slow,
    simple_request_line, simple_status_line,
};
use super::uri::Uri;
use super::values::{self, AddrKind, Discard, NameAddr, Via};
use super::{HeaderName, Method, Span};

/// Most header lines a message may have.
pub const MAX_HEADERS: usize = 256;

/// The first line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartLine {
    /// `Method SP Request-URI SP SIP/2.0`
    Request {
        /// The method.
        method: Method,
        /// The method token.
        method_span: Span,
        /// The Request-URI.
        uri: Span,
    },
    /// `SIP/2.0 SP Status-Code SP Reason-Phrase`
    Response {
        /// The status code.
        code: u16,
        /// The reason phrase (may be empty).
        reason: Span,
    },
}

/// One header line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Its name, classified.
    pub name: HeaderName,
    /// The name as written.
    pub name_span: Span,
    /// The value, LWS trimmed (may hold folds).
    pub value: Span,
    /// The whole line including continuation lines and the final CRLF.
    pub line: Span,
}

/// A parsed SIP message: spans over `buf`.
#[derive(Debug, Clone)]
pub struct Message<'a> {
    buf: &'a [u8],
    start: StartLine,
    start_line: Span,
    headers: SmallVec<[Header; 32]>,
    vias: SmallVec<[Via; 4]>,
    routes: SmallVec<[NameAddr; 2]>,
    request_uri: Option<Uri>,
    from: Option<NameAddr>,
    to: Option<NameAddr>,
    call_id: Span,
    cseq: (u32, Method, Span),
    max_forwards: Option<u32>,
    content_length: Option<u32>,
    headers_end: usize,
    body: Span,
    /// Bit `name as u32 % 32` set for every header name present: a
    /// lookup of a name whose bit is clear needs no scan (a set bit may
    /// be another name's: the scan decides).
    present: u32,
}

/// How much of a message [`Message::parse_with`] checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
    /// Every value with a grammar the parser knows.
    Full,
    /// What a proxy acts on ([`Message::parse_proxy`]).
    Proxy,
}

impl Depth {
    /// Whether this depth leaves the value of `name` unchecked.
    fn skips(self, name: HeaderName) -> bool {
        self == Depth::Proxy && is_passive(name)
    }
}

/// Headers whose values a proxy passes on without acting on them, and
/// whose grammar [`check_passive`] knows.
fn is_passive(name: HeaderName) -> bool {
    matches!(
        name,
        HeaderName::Contact
            | HeaderName::RecordRoute
            | HeaderName::Expires
            | HeaderName::RetryAfter
            | HeaderName::Date
    )
}

/// Checks the value of a passive header (anything else is `Ok`).
fn check_passive(b: &[u8], name: HeaderName, v: Span) -> Result<(), super::ValueError> {
    match name {
        HeaderName::Contact => {
            values::name_addrs(b, v, AddrKind::Contact, &mut Discard)?;
        }
        HeaderName::RecordRoute => {
            values::name_addrs(b, v, AddrKind::Route, &mut Discard)?;
        }
        HeaderName::Expires => {
            values::number(b, v, u64::from(u32::MAX))?;
        }
        HeaderName::RetryAfter => {
            values::delta_seconds_prefix(b, v)?;
        }
        HeaderName::Date => values::date(b, v)?,
        _ => {}
    }
    Ok(())
}

impl<'a> Message<'a> {
    /// Parses a datagram. Content-Length may be absent (the body is then
    /// the rest of the datagram); octets after Content-Length are ignored
    /// (RFC 3261 §18.3, RFC 4475 §3.1.1.8).
    pub fn parse(buf: &'a [u8]) -> Result<Message<'a>, ParseError> {
        Self::parse_with(buf, false, Depth::Full)
    }

    /// Parses one framed message of a stream transport, where
    /// Content-Length is mandatory.
    pub fn parse_stream(buf: &'a [u8]) -> Result<Message<'a>, ParseError> {
        Self::parse_with(buf, true, Depth::Full)
    }

    /// Parses a datagram as a proxy needs it: framing,
    /// the start line and every header line are checked as by
    /// [`Message::parse`], and the values of the headers a proxy acts on
    /// are parsed; the values of the headers it only passes on (Contact,
    /// Record-Route, Expires, Retry-After, Date) are not looked at.
    /// [`Message::check_deferred`] checks them afterwards, with the error
    /// [`Message::parse`] would have given.
    ///
    /// RFC 3261 §16.3 step 1 asks exactly this of a proxy: the components
    /// it uses must be well-formed, and "any other components, well-formed
    /// or not, SHOULD be ignored and remain unchanged when the message is
    /// forwarded".
    pub fn parse_proxy(buf: &'a [u8]) -> Result<Message<'a>, ParseError> {
        Self::parse_with(buf, false, Depth::Proxy)
    }

    /// Checks the values [`Message::parse_proxy`] skipped, in line order;
    /// the error is the one [`Message::parse`] gives for the same bytes
    /// when the skipped values hold the first defect. Always `Ok` for a
    /// message from [`Message::parse`].
    pub fn check_deferred(&self) -> Result<(), ParseError> {
        let b = self.buf;
        for (idx, h) in self.headers.iter().enumerate() {
            if !Depth::Proxy.skips(h.name) {
                continue;
            }
            let line = (idx + 2).min(usize::from(u16::MAX)) as u16;
            check_passive(b, h.name, h.value).map_err(|error| ParseError::Value {
                header: h.name,
                line,
                error,
            })?;
        }
        Ok(())
    }

    fn parse_with(buf: &'a [u8], stream: bool, depth: Depth) -> Result<Message<'a>, ParseError> {
        let mut m = Message::empty(buf);
        m.parse_in_place(stream, depth)?;
        Ok(m)
    }

    /// An empty view of `buf`, to be filled by
    /// [`Message::parse_proxy_in_place`]. Not a parsed message: its
    /// accessors may panic until a parse succeeded.
    pub fn empty(buf: &'a [u8]) -> Message<'a> {
        Message {
            buf,
            start: StartLine::Response {
                code: 0,
                reason: Span::default(),
            },
            start_line: Span::default(),
            headers: SmallVec::new(),
            vias: SmallVec::new(),
            routes: SmallVec::new(),
            request_uri: None,
            from: None,
            to: None,
            call_id: Span::default(),
            cseq: (0, Method::Other, Span::default()),
            max_forwards: None,
            content_length: None,
            headers_end: 0,
            body: Span::default(),
            present: 0,
        }
    }

    /// [`Message::parse_proxy`] of the view's buffer into `self` (what a
    /// previous parse left is discarded): the same checks and the same
    /// result, without moving the view (1.6 KiB, 25 cache lines) to the
    /// caller. After an error the view is not a parsed message (its
    /// accessors may panic).
    pub fn parse_proxy_in_place(&mut self) -> Result<(), ParseError> {
        self.reset();
        self.parse_in_place(false, Depth::Proxy)
    }

    /// [`Message::parse_proxy_in_place`] of a view fresh from
    /// [`Message::empty`], which has nothing to discard: the same result
    /// without the resetting (about two code lines fewer on a proxy's
    /// message path). A debug build checks that the view is empty.
    pub(crate) fn parse_proxy_empty(&mut self) -> Result<(), ParseError> {
        debug_assert!(self.is_empty_view(), "a view from Message::empty");
        self.parse_in_place(false, Depth::Proxy)
    }

    /// Discards what a parse left in the fields the parser fills by
    /// appending or checks for a first occurrence: the view is then as
    /// [`Message::empty`] left it, for [`Message::parse_in_place`].
    fn reset(&mut self) {
        self.present = 0;
        self.headers.clear();
        self.vias.clear();
        self.routes.clear();
        self.from = None;
        self.to = None;
        self.max_forwards = None;
        self.content_length = None;
    }

    /// Whether the fields [`Message::reset`] resets are as it leaves them.
    fn is_empty_view(&self) -> bool {
        self.present == 0
            && self.headers.is_empty()
            && self.vias.is_empty()
            && self.routes.is_empty()
            && self.from.is_none()
            && self.to.is_none()
            && self.max_forwards.is_none()
            && self.content_length.is_none()
    }

    /// Parses the view's buffer into `self`, which must be empty as
    /// [`Message::empty`] or [`Message::reset`] leave it.
    fn parse_in_place(&mut self, stream: bool, depth: Depth) -> Result<(), ParseError> {
        let m = self;
        let b = m.buf;
        let n = b.len();
        // §7.5: CRLFs before the start line are ignored.
        let mut i = 0;
        while i + 1 < n && b[i] == b'\r' && b[i + 1] == b'\n' {
            i += 2;
        }
        if i >= n || (n - i <= 2 && b[i..].iter().all(|&c| c == b'\r' || c == b'\n')) {
            return Err(ParseError::Empty);
        }
        let sl_start = i;
        let eol = find_eol(b, i, 1)?;
        let req = !is_status_line(&b[sl_start..eol]);
        m.start = if !req {
            m.request_uri = None;
            match simple_status_line(b, sl_start, eol) {
                Some(start) => start,
                None => parse_status_line(b, sl_start, eol)?,
            }
        } else if let Some(start) = simple_request_line(b, sl_start, eol, &mut m.request_uri) {
            start
        } else {
            let (start, uri) = request_line_slow(b, sl_start, eol)?;
            m.request_uri = Some(uri);
            start
        };
        m.start_line = Span::new(sl_start, eol + 2);
        let mut have_call_id = false;
        let mut have_cseq = false;
        let mut seen: u32 = 0;
        let mut i = eol + 2;
        let mut line: u16 = 1;
        loop {
            line = line.saturating_add(1);
            if i + 1 < n && b[i] == b'\r' && b[i + 1] == b'\n' {
                i += 2;
                break;
            }
            if i >= n {
                return Err(ParseError::Unterminated);
            }
            if is_wsp(b[i]) {
                return Err(ParseError::HeaderSyntax { line });
            }
            // the header line, folds included, checked for control characters
            let e = find_header_end(b, i, line)?;
            let (name, name_end, c) = match known_name(&b[i..]) {
                Some((name, len)) => (name, i + len, i + len),
                None => {
                    let name_end = scan_token(b, i, e);
                    if name_end == i {
                        return Err(ParseError::HeaderSyntax { line });
                    }
                    let mut c = name_end;
                    while c < e && is_wsp(b[c]) {
                        c += 1;
                    }
                    if c >= e || b[c] != b':' {
                        return Err(ParseError::HeaderSyntax { line });
                    }
                    (HeaderName::from_bytes(&b[i..name_end]), name_end, c)
                }
            };
            // the common shape, `Name: value` with no white space around
            // the value but the one SP, without `trim`'s general scan
            let vs = c + 1 + usize::from(b[c + 1] == b' ');
            let (vs, ve) = if vs < e
                && !matches!(b[vs], b' ' | b'\t' | b'\r')
                && !matches!(b[e - 1], b' ' | b'\t' | b'\r' | b'\n')
            {
                (vs, e)
            } else {
                trim(b, c + 1, e)
            };
            let h = Header {
                name,
                name_span: Span::new(i, name_end),
                value: Span::new(vs, ve),
                line: Span::new(i, e + 2),
            };
            if m.headers.len() >= MAX_HEADERS {
                return Err(ParseError::TooManyHeaders { limit: MAX_HEADERS });
            }
            let idx = m.headers.len() as u16;
            m.headers.push(h);
            let bit = 1u32 << (name as u32 % 32);
            m.present |= bit;
            if name.is_single() {
                if seen & bit != 0 {
                    return Err(ParseError::Duplicate(name));
                }
                seen |= bit;
            }
            let v = h.value;
            let err = |error| ParseError::Value {
                header: name,
                line,
                error,
            };
            if depth.skips(name) {
                i = e + 2;
                continue;
            }
            match name {
                HeaderName::Via => values::vias(b, v, idx, &mut m.vias).map_err(err)?,
                HeaderName::From | HeaderName::To => {
                    // single-valued: `None` until this line (a second
                    // one is a duplicate, refused above)
                    let slot = if name == HeaderName::From {
                        &mut m.from
                    } else {
                        &mut m.to
                    };
                    values::single_name_addr(b, v, slot).map_err(err)?;
                }
                HeaderName::Route => {
                    values::name_addrs(b, v, AddrKind::Route, &mut m.routes).map_err(err)?;
                }
                HeaderName::CallId => {
                    values::call_id(b, v).map_err(err)?;
                    m.call_id = v;
                    have_call_id = true;
                }
                HeaderName::CSeq => {
                    let (num, ms) = values::cseq(b, v).map_err(err)?;
                    m.cseq = (num, Method::from_bytes(ms.of(b)), ms);
                    have_cseq = true;
                }
                HeaderName::MaxForwards => {
                    m.max_forwards = Some(values::number(b, v, 255).map_err(err)? as u32);
                }
                HeaderName::ContentLength => {
                    m.content_length =
                        Some(values::number(b, v, u64::from(u32::MAX)).map_err(err)? as u32);
                }
                _ if is_passive(name) => check_passive(b, name, v).map_err(err)?,
                // no grammar checked (Subject, Content-Type, unknown names)
                _ => {}
            }
            i = e + 2;
        }
        m.headers_end = i;
        for (present, h) in [
            (m.to.is_some(), HeaderName::To),
            (m.from.is_some(), HeaderName::From),
            (have_call_id, HeaderName::CallId),
            (have_cseq, HeaderName::CSeq),
            (!m.vias.is_empty(), HeaderName::Via),
        ] {
            if !present {
                return Err(ParseError::Missing(h));
            }
        }
        if let StartLine::Request { method_span, .. } = m.start {
            if method_span.of(b) != m.cseq.2.of(b) {
                return Err(ParseError::CSeqMismatch);
            }
        }
        let available = n - i;
        m.body = match m.content_length {
            Some(cl) if cl as usize > available => {
                return Err(ParseError::BodyTruncated {
                    declared: cl,
                    available: available as u32,
                })
            }
            Some(cl) => Span::new(i, i + cl as usize),
            None if stream => return Err(ParseError::Missing(HeaderName::ContentLength)),
            None => Span::new(i, n),
        };
        Ok(())
    }

    /// The buffer this view is over.
    pub fn buf(&self) -> &'a [u8] {
        self.buf
    }

    /// The bytes of a span of this message.
    pub fn bytes(&self, s: Span) -> &'a [u8] {
        s.of(self.buf)
    }

    /// The start line.
    pub fn start_line(&self) -> StartLine {
        self.start
    }

    /// The start line's span, CRLF included.
    pub fn start_line_span(&self) -> Span {
        self.start_line
    }

    /// Whether this is a request.
    pub fn is_request(&self) -> bool {
        matches!(self.start, StartLine::Request { .. })
    }

    /// The request method (None for responses).
    pub fn method(&self) -> Option<Method> {
        match self.start {
            StartLine::Request { method, .. } => Some(method),
            StartLine::Response { .. } => None,
        }
    }

    /// The status code (None for requests).
    pub fn status(&self) -> Option<u16> {
        match self.start {
            StartLine::Response { code, .. } => Some(code),
            StartLine::Request { .. } => None,
        }
    }

    /// The Request-URI, taken apart (None for responses).
    pub fn request_uri(&self) -> Option<&Uri> {
        self.request_uri.as_ref()
    }

    /// All header lines in order.
    pub fn headers(&self) -> &[Header] {
        &self.headers
    }

    /// The value of the first header named `name`.
    pub fn header(&self, name: HeaderName) -> Option<&'a [u8]> {
        if !self.may_have(name) {
            return None;
        }
        self.headers
            .iter()
            .find(|h| h.name == name)
            .map(|h| h.value.of(self.buf))
    }

    /// Whether a header named `name` may be present: `false` means it is
    /// not (no scan of the header lines); `true` that it may be.
    pub fn may_have(&self, name: HeaderName) -> bool {
        self.present & (1u32 << (name as u32 % 32)) != 0
    }

    /// Every via-parm, top first.
    pub fn vias(&self) -> &[Via] {
        &self.vias
    }

    /// The top via-parm (a parsed message has at least one).
    pub fn top_via(&self) -> &Via {
        &self.vias[0]
    }

    /// Every Route value, first first.
    pub fn routes(&self) -> &[NameAddr] {
        &self.routes
    }

    /// From.
    pub fn from(&self) -> &NameAddr {
        self.from.as_ref().expect("parsed messages have From")
    }

    /// To.
    pub fn to(&self) -> &NameAddr {
        self.to.as_ref().expect("parsed messages have To")
    }

    /// The From tag.
    pub fn from_tag(&self) -> Option<&'a [u8]> {
        self.from.and_then(|f| f.tag).map(|t| t.of(self.buf))
    }

    /// The To tag.
    pub fn to_tag(&self) -> Option<&'a [u8]> {
        self.to.and_then(|t| t.tag).map(|t| t.of(self.buf))
    }

    /// The Call-ID.
    pub fn call_id(&self) -> &'a [u8] {
        self.call_id.of(self.buf)
    }

    /// CSeq number.
    pub fn cseq_num(&self) -> u32 {
        self.cseq.0
    }

    /// CSeq method.
    pub fn cseq_method(&self) -> Method {
        self.cseq.1
    }

    /// CSeq method token.
    pub fn cseq_method_bytes(&self) -> &'a [u8] {
        self.cseq.2.of(self.buf)
    }

    /// Max-Forwards, if present.
    pub fn max_forwards(&self) -> Option<u32> {
        self.max_forwards
    }

    /// Content-Length, if present.
    pub fn content_length(&self) -> Option<u32> {
        self.content_length
    }

    /// Where the header section ends (after the empty line).
    pub fn headers_end(&self) -> usize {
        self.headers_end
    }

    /// The body.
    pub fn body(&self) -> &'a [u8] {
        self.body.of(self.buf)
    }

    /// The body's span.
    pub fn body_span(&self) -> Span {
        self.body
    }

    /// Total length of the message in the buffer (start line to end of body).
    pub fn len(&self) -> usize {
        self.body.end()
    }

    /// Whether the message is empty (never, for a parsed message).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the message back: the start line and each header line as
    /// `Name: value` (names as written, folds kept), the empty line and
    /// the body. Parsing the output yields an equal view.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.start_line.of(self.buf));
        for h in &self.headers {
            out.extend_from_slice(h.name_span.of(self.buf));
            out.extend_from_slice(b": ");
            out.extend_from_slice(h.value.of(self.buf));
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(self.body());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing_in_place_again_and_into_an_empty_view_match_parse_proxy() {
        let texts: [&[u8]; 3] = [
            b"INVITE sip:b@y SIP/2.0\r\nVia: SIP/2.0/UDP c;branch=z9hG4bK1, SIP/2.0/UDP d\r\n\
              Route: <sip:r1;lr>\r\nFrom: <sip:a@x>;tag=1\r\nTo: <sip:b@y>\r\nCall-ID: c1\r\n\
              CSeq: 1 INVITE\r\nMax-Forwards: 70\r\nContent-Length: 4\r\n\r\nbody",
            b"SIP/2.0 180 Ringing\r\nv: SIP/2.0/UDP p;branch=z9hG4bK1\r\nv: SIP/2.0/UDP c\r\n\
              f: <sip:a@x>;tag=1\r\nt: <sip:b@y>;tag=2\r\ni: c2\r\nCSeq: 1 INVITE\r\n\r\n",
            // fails: From twice
            b"BYE sip:b@y SIP/2.0\r\nVia: SIP/2.0/UDP c\r\nFrom: <sip:a@x>;tag=1\r\n\
              From: <sip:a@x>;tag=1\r\nTo: <sip:b@y>\r\nCall-ID: c3\r\nCSeq: 1 BYE\r\n\r\n",
        ];
        for text in texts {
            let want = Message::parse_proxy(text).map(|m| format!("{m:?}"));
            let mut fresh = Message::empty(text);
            let got = fresh.parse_proxy_empty().map(|()| format!("{fresh:?}"));
            assert_eq!(got, want);
            // a second parse of the same view discards what the first left
            let mut again = Message::empty(text);
            for _ in 0..2 {
                let got = again.parse_proxy_in_place().map(|()| format!("{again:?}"));
                assert_eq!(got, want);
            }
        }
    }
}
