//! [`Message`]: the zero-copy view and its parser.

use smallvec::SmallVec;

use super::error::{LineError, ParseError, UriError};
use super::lex::{is_wsp, scan_token, trim};
use super::uri::{parse_uri, scan_sip_uri, Uri};
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

fn line_error(req: bool, e: LineError) -> ParseError {
    if req {
        ParseError::RequestLine(e)
    } else {
        ParseError::StatusLine(e)
    }
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

/// Parses `SIP/x.y`; `Ok(true)` for 2.0, `Ok(false)` for another version.
#[inline]
fn version(s: &[u8]) -> Result<bool, ()> {
    if s == b"SIP/2.0" {
        return Ok(true);
    }
    version_slow(s)
}

/// [`version`] of anything but the exact bytes `SIP/2.0`.
#[cold]
#[inline(never)]
fn version_slow(s: &[u8]) -> Result<bool, ()> {
    if s.len() < 7 || !s[..4].eq_ignore_ascii_case(b"SIP/") {
        return Err(());
    }
    let v = &s[4..];
    let dot = v.iter().position(|&c| c == b'.').ok_or(())?;
    let (maj, min) = (&v[..dot], &v[dot + 1..]);
    if maj.is_empty() || min.is_empty() || !maj.iter().chain(min).all(u8::is_ascii_digit) {
        return Err(());
    }
    Ok(v == b"2.0")
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
            // the header line, folds included
            let mut e = find_eol(b, i, line)?;
            while e + 2 < n && is_wsp(b[e + 2]) {
                e = find_eol(b, e + 2, line)?;
            }
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

/// The canonical spellings of the headers a proxy reads (what nearly
/// every UA sends), each followed by its colon, in the slot
/// [`name_slot`] gives it; other slots are empty (all zero bytes).
const NAME_SLOTS: [([u8; 16], HeaderName); 16] = {
    use HeaderName as H;
    const NAMES: [(&[u8], HeaderName); 12] = [
        (b"Via:", H::Via),
        (b"From:", H::From),
        (b"To:", H::To),
        (b"Call-ID:", H::CallId),
        (b"CSeq:", H::CSeq),
        (b"Contact:", H::Contact),
        (b"Content-Length:", H::ContentLength),
        (b"Content-Type:", H::ContentType),
        (b"Max-Forwards:", H::MaxForwards),
        (b"Route:", H::Route),
        (b"Record-Route:", H::RecordRoute),
        (b"Subject:", H::Subject),
    ];
    let mut t = [([0u8; 16], H::Other); 16];
    let mut k = 0;
    while k < NAMES.len() {
        let (pat, name) = NAMES[k];
        let slot = name_slot(pat.len() - 1, pat[1]);
        // a perfect hash: a collision fails the build
        assert!(t[slot].0[0] == 0);
        let mut j = 0;
        while j < pat.len() {
            t[slot].0[j] = pat[j];
            j += 1;
        }
        t[slot].1 = name;
        k += 1;
    }
    t
};

/// The slot in [`NAME_SLOTS`] of a name of `len` bytes whose second byte
/// is `second` (distinct for the twelve names of the table).
#[inline(always)]
const fn name_slot(len: usize, second: u8) -> usize {
    ((len + second as usize * 6) >> 1) & 15
}

/// When `line` starts with one of the names of [`NAME_SLOTS`], spelled
/// as there and directly followed by `:`: the name and its length. What
/// scanning the token and [`HeaderName::from_bytes`] find for such a
/// line, without the scan: the first colon of the line's first 16 bytes
/// gives the length, which with the second byte picks the one name the
/// line can be, compared with it as one 16-byte word.
#[inline]
fn known_name(line: &[u8]) -> Option<(HeaderName, usize)> {
    let chunk: &[u8; 16] = line.get(..16)?.try_into().ok()?;
    let (len, equal) = colon_and_match(chunk, |len| &NAME_SLOTS[name_slot(len, chunk[1])].0);
    // `equal` has bit k set when byte k is the table's: bytes 0..=len
    // must all be (the name and the colon after it; the table's own
    // colon sits at its name's length, so no other name matches)
    let want = (2u32 << (len & 15)) - 1;
    if len < 15 && equal & want == want {
        Some((NAME_SLOTS[name_slot(len, chunk[1])].1, len))
    } else {
        None
    }
}

/// The index of the first colon in `chunk` (16 or more when there is
/// none) and, for that index, the bit mask of the bytes of `chunk` equal
/// to those of `pattern(index)` (any mask when there is none).
#[inline(always)]
fn colon_and_match(chunk: &[u8; 16], pattern: impl Fn(usize) -> &'static [u8; 16]) -> (usize, u32) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
        };
        // SAFETY: both loads read 16 bytes from 16-byte arrays; `loadu`
        // has no alignment requirement; SSE2 is part of the x86_64
        // baseline.
        unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
            let colons = _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b':' as i8))) as u32;
            let len = colons.trailing_zeros() as usize;
            let p = _mm_loadu_si128(pattern(len & 15).as_ptr().cast::<__m128i>());
            (len, _mm_movemask_epi8(_mm_cmpeq_epi8(v, p)) as u32)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        colon_and_match_portable(chunk, pattern)
    }
}

/// [`colon_and_match`] without SIMD: for other targets, and tested
/// against the SSE2 version on x86_64.
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
#[inline(always)]
fn colon_and_match_portable(
    chunk: &[u8; 16],
    pattern: impl Fn(usize) -> &'static [u8; 16],
) -> (usize, u32) {
    let len = chunk.iter().position(|&c| c == b':').unwrap_or(16);
    let p = pattern(len & 15);
    let equal = (0..16).fold(0u32, |m, k| m | (u32::from(chunk[k] == p[k]) << k));
    (len, equal)
}

/// The first CR or LF at or after `i` in `b`.
#[inline(always)]
fn find_cr_or_lf(b: &[u8], mut i: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
            _mm_set1_epi8,
        };
        while i + 16 <= b.len() {
            // SAFETY: `i + 16 <= b.len()`: the 16 bytes read are inside
            // `b`; `loadu` has no alignment requirement; SSE2 is part of
            // the x86_64 baseline.
            let m = unsafe {
                let v = _mm_loadu_si128(b.as_ptr().add(i).cast::<__m128i>());
                let cr = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\r' as i8));
                let lf = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\n' as i8));
                _mm_movemask_epi8(_mm_or_si128(cr, lf)) as u32
            };
            if m != 0 {
                return Some(i + m.trailing_zeros() as usize);
            }
            i += 16;
        }
    }
    let i = i.min(b.len());
    b[i..]
        .iter()
        .position(|&c| c == b'\r' || c == b'\n')
        .map(|p| i + p)
}

/// Finds the CRLF ending the line at `i`; returns the index of its CR.
///
/// One out-of-line copy for every line of a message (inlined, the scan
/// would occupy its code lines once per call site).
#[inline(never)]
fn find_eol(b: &[u8], i: usize, line: u16) -> Result<usize, ParseError> {
    match find_cr_or_lf(b, i) {
        None => Err(ParseError::Unterminated),
        Some(j) => {
            if b[j] == b'\r' && b.get(j + 1) == Some(&b'\n') {
                Ok(j)
            } else if b[j] == b'\r' && j + 1 == b.len() {
                Err(ParseError::Unterminated)
            } else {
                Err(ParseError::LineBreak { line })
            }
        }
    }
}

/// The common shape of a request line, `[s, e)`: `Method SP
/// sip:[user@]host[:port] SP SIP/2.0` (the URI as [`scan_sip_uri`]
/// takes it), with the Request-URI written to `uri`. `None` when it has
/// another shape (`uri` may then have been written); what it returns
/// is what [`request_line_slow`] returns (tested against it in
/// `simple_request_lines_agree_with_the_parser`), in one pass.
#[inline]
fn simple_request_line(b: &[u8], s: usize, e: usize, uri: &mut Option<Uri>) -> Option<StartLine> {
    let m_end = scan_token(b, s, e);
    if m_end == s || b.get(m_end) != Some(&b' ') {
        return None;
    }
    let u = m_end + 1;
    let stop = scan_sip_uri(b, u, e, uri)?;
    if b.get(stop..e)? != b" SIP/2.0" {
        return None;
    }
    let method_span = Span::new(s, m_end);
    Some(StartLine::Request {
        method: Method::from_bytes(method_span.of(b)),
        method_span,
        uri: Span::new(u, stop),
    })
}

/// The request line `[s, e)` and its Request-URI, by the full grammar.
#[cold]
#[inline(never)]
fn request_line_slow(b: &[u8], s: usize, e: usize) -> Result<(StartLine, Uri), ParseError> {
    let req = true;
    if e > s && is_wsp(b[e - 1]) {
        return Err(line_error(req, LineError::TrailingSpace));
    }
    let m_end = scan_token(b, s, e);
    if m_end == s {
        return Err(line_error(req, LineError::Method));
    }
    if m_end >= e {
        return Err(line_error(req, LineError::Malformed));
    }
    if b[m_end] != b' ' {
        return Err(line_error(
            req,
            if is_wsp(b[m_end]) {
                LineError::ExtraSpace
            } else {
                LineError::Method
            },
        ));
    }
    let u = m_end + 1;
    if u < e && is_wsp(b[u]) {
        return Err(line_error(req, LineError::ExtraSpace));
    }
    let last_sp = b[u..e]
        .iter()
        .rposition(|&c| c == b' ')
        .map(|p| u + p)
        .ok_or(line_error(req, LineError::Malformed))?;
    if last_sp == u {
        return Err(line_error(req, LineError::Malformed));
    }
    if is_wsp(b[last_sp - 1]) {
        return Err(line_error(req, LineError::ExtraSpace));
    }
    match version(&b[last_sp + 1..e]) {
        Ok(true) => {}
        Ok(false) => return Err(ParseError::Version),
        Err(()) => return Err(line_error(req, LineError::Malformed)),
    }
    if b[u] == b'<' {
        return Err(line_error(req, LineError::Bracketed));
    }
    if b[u..last_sp].iter().any(|&c| is_wsp(c)) {
        return Err(ParseError::RequestUri(UriError::Whitespace));
    }
    let uri = parse_uri(b, u, last_sp, false).map_err(ParseError::RequestUri)?;
    let method_span = Span::new(s, m_end);
    let start = StartLine::Request {
        method: Method::from_bytes(method_span.of(b)),
        method_span,
        uri: Span::new(u, last_sp),
    };
    Ok((start, uri))
}

/// Whether the start line `sl` is a status line: it starts with `SIP/`,
/// ASCII case ignored (`S`, `I` and `P` compared with their case bit
/// set, which maps only a letter's two cases onto the lower-case one).
#[inline]
fn is_status_line(sl: &[u8]) -> bool {
    match sl.get(..4).and_then(|w| <[u8; 4]>::try_from(w).ok()) {
        Some(w) => u32::from_le_bytes(w) | 0x0020_2020 == u32::from_le_bytes(*b"sip/"),
        None => false,
    }
}

/// The common shape of a status line, `[s, e)`: `SIP/2.0 SP 3DIGIT SP
/// reason`. `None` when it has another shape; what it returns is what
/// [`parse_status_line`] returns (tested against it in
/// `simple_status_lines_agree_with_the_parser`), in one pass.
#[inline]
fn simple_status_line(b: &[u8], s: usize, e: usize) -> Option<StartLine> {
    let l = b.get(s..e)?;
    if l.len() < 12 || l[..8] != *b"SIP/2.0 " || l[11] != b' ' {
        return None;
    }
    let mut code = 0;
    for &c in &l[8..11] {
        if !c.is_ascii_digit() {
            return None;
        }
        code = code * 10 + u16::from(c - b'0');
    }
    let reason = &l[12..];
    if !(100..=699).contains(&code) || reason.iter().any(|&c| c < 0x20 && c != b'\t') {
        return None;
    }
    Some(StartLine::Response {
        code,
        reason: Span::new(s + 12, e),
    })
}

#[cold]
#[inline(never)]
fn parse_status_line(b: &[u8], s: usize, e: usize) -> Result<StartLine, ParseError> {
    let req = false;
    let v_end = b[s..e]
        .iter()
        .position(|&c| c == b' ')
        .map(|p| s + p)
        .ok_or(line_error(req, LineError::Malformed))?;
    match version(&b[s..v_end]) {
        Ok(true) => {}
        Ok(false) => return Err(ParseError::Version),
        Err(()) => return Err(line_error(req, LineError::Malformed)),
    }
    let c = v_end + 1;
    if c < e && is_wsp(b[c]) {
        return Err(line_error(req, LineError::ExtraSpace));
    }
    let mut ce = c;
    while ce < e && b[ce].is_ascii_digit() {
        ce += 1;
    }
    if ce - c != 3 || (ce < e && b[ce] != b' ') {
        return Err(ParseError::StatusCode);
    }
    let code =
        (b[c] - b'0') as u16 * 100 + (b[c + 1] - b'0') as u16 * 10 + (b[c + 2] - b'0') as u16;
    if !(100..=699).contains(&code) {
        return Err(ParseError::StatusCode);
    }
    if ce >= e {
        return Err(line_error(req, LineError::Malformed));
    }
    let reason = Span::new(ce + 1, e);
    if reason.of(b).iter().any(|&c| c < 0x20 && c != b'\t') {
        return Err(line_error(req, LineError::Malformed));
    }
    Ok(StartLine::Response { code, reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_agree_with_scanning() {
        let names: &[&[u8]] = &[
            b"Via",
            b"From",
            b"To",
            b"Call-ID",
            b"CSeq",
            b"Contact",
            b"Content-Length",
            b"Content-Type",
            b"Max-Forwards",
            b"Route",
            b"Record-Route",
            b"Subject",
            b"Contacts",
            b"Content-Lengths",
            b"Content-Encoding",
            b"Call",
            b"V",
            b"Tox",
            b"via",
            b"CSEQ",
            b"Rout",
            b"Record-Routes",
            b"Sub",
            b"M",
            b"C",
            b"Re",
        ];
        let mut known = 0;
        for n in names {
            for tail in [&b":"[..], b" :", b":x", b"", b"x:", b"\t:"] {
                // known names are read from the line and what follows
                // it, 16 bytes at least
                let line = [*n, tail, b"\r\nX-Pad: 0123456789"].concat();
                let Some((name, len)) = known_name(&line) else {
                    continue;
                };
                known += 1;
                let end = scan_token(&line, 0, line.len());
                assert_eq!(len, end, "{}", line.escape_ascii());
                assert_eq!(line[end], b':');
                assert_eq!(name, HeaderName::from_bytes(&line[..end]));
            }
        }
        assert_eq!(known, 24);
    }

    #[test]
    fn simple_request_lines_agree_with_the_parser() {
        use crate::wire::values::tests::{fast_path_agrees, EDITS};
        let lines: &[&[u8]] = &[
            b"INVITE sip:service@127.0.0.1:5060 SIP/2.0",
            b"BYE sip:127.0.0.1:5070 SIP/2.0",
            b"X-Y sip:u_s(e)r@a.b-c:65535 SIP/2.0",
            b"ACK sip:h:99999 SIP/2.0",
        ];
        fast_path_agrees(
            lines,
            EDITS,
            |l| {
                let mut uri = None;
                let got = simple_request_line(l, 0, l.len(), &mut uri)?;
                Some(Ok((got, uri.unwrap())))
            },
            |l| request_line_slow(l, 0, l.len()),
        );
    }

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

    #[test]
    fn simple_status_lines_agree_with_the_parser() {
        use crate::wire::values::tests::{fast_path_agrees, one_edit_away, EDITS};
        let lines: &[&[u8]] = &[
            b"SIP/2.0 200 OK",
            b"SIP/2.0 100 Trying",
            b"SIP/2.0 699 ",
            b"SIP/2.0 180 Ringing\tnow",
            b"SIP/2.0 486 Busy Here",
        ];
        fast_path_agrees(
            lines,
            EDITS,
            |l| simple_status_line(l, 0, l.len()).map(Ok),
            |l| parse_status_line(l, 0, l.len()),
        );
        for l in one_edit_away(lines, EDITS) {
            let sip = l.len() >= 4 && l[..4].eq_ignore_ascii_case(b"SIP/");
            assert_eq!(is_status_line(&l), sip, "{}", l.escape_ascii());
        }
        for c in 0..=255u8 {
            let l = [b'S', b'I', b'P', c];
            assert_eq!(is_status_line(&l), l.eq_ignore_ascii_case(b"SIP/"), "{c}");
            let l = [c, b'i', b'p', b'/'];
            assert_eq!(is_status_line(&l), l.eq_ignore_ascii_case(b"SIP/"), "{c}");
        }
    }

    #[test]
    fn colon_and_match_agrees_without_simd() {
        let mut chunks: Vec<[u8; 16]> = Vec::new();
        for (pat, _) in NAME_SLOTS {
            for k in 0..16 {
                for c in [b':', b'x', 0, pat[k] ^ 0x20] {
                    let mut ch = pat;
                    ch[k] = c;
                    chunks.push(ch);
                }
            }
        }
        chunks.push(*b"no colon at all!");
        chunks.push(*b"Via: SIP/2.0/UDP");
        for ch in chunks {
            let slot = |len: usize| &NAME_SLOTS[name_slot(len, ch[1])].0;
            let (a, am) = colon_and_match(&ch, slot);
            let (p, pm) = colon_and_match_portable(&ch, slot);
            assert_eq!((a.min(16), am), (p.min(16), pm), "{}", ch.escape_ascii());
        }
    }

    #[test]
    fn line_ends_are_found_at_every_offset() {
        for len in 0..48 {
            for at in 0..=len {
                for c in [b'\r', b'\n'] {
                    let mut b = vec![b'x'; len];
                    if at < len {
                        b[at] = c;
                    }
                    for i in 0..=len + 1 {
                        let want = b
                            .iter()
                            .enumerate()
                            .skip(i)
                            .find(|(_, &x)| x == b'\r' || x == b'\n')
                            .map(|(k, _)| k);
                        assert_eq!(find_cr_or_lf(&b, i), want, "len {len} at {at} from {i}");
                    }
                }
            }
        }
    }
}
