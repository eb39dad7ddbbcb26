//! Line-level scanning for the parser: start lines (request and status,
//! a fast path for the common shapes and the full grammar behind it),
//! line ends, and header names read 16 bytes at a time.

use super::error::{LineError, ParseError, UriError};
use super::lex::{is_wsp, scan_token};
use super::message::StartLine;
use super::uri::{parse_uri, scan_sip_uri, Uri};
use super::{HeaderName, Method, Span};

/// The error of a malformed request line (`req`) or status line.
fn line_error(req: bool, e: LineError) -> ParseError {
    if req {
        ParseError::RequestLine(e)
    } else {
        ParseError::StatusLine(e)
    }
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
pub(super) fn known_name(line: &[u8]) -> Option<(HeaderName, usize)> {
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

/// Whether `c` is a control character: %x00-1F except HTAB, and DEL
/// (CR and LF among them). RFC 3261's grammar allows none of them in a
/// start line or header value, except CRLF ending a line (or folding it)
/// and, inside a quoted string or comment, as the second byte of a
/// `quoted-pair` (`"\" (%x00-09 / %x0B-0C / %x0E-7F)`).
#[inline(always)]
pub(crate) const fn is_ctl(c: u8) -> bool {
    (c < 0x20 && c != b'\t') || c == 0x7f
}

/// Whether the line scan stops at `c`: a control character ([`is_ctl`],
/// CR and LF among them), HTAB, or a byte of 0x80 and up. The scan's one
/// SIMD test flags exactly these (see [`find_flagged`]); its callers
/// classify the flagged byte, and go on past HTAB and bytes >= 0x80 (UTF-8,
/// allowed in values).
#[inline(always)]
const fn is_flagged(c: u8) -> bool {
    c < 0x20 || c >= 0x7f
}

/// The first flagged byte ([`is_flagged`]) at or after `i` in `b`.
///
/// One SSE2 test per 16 bytes: `v + 1 < 0x21` as signed bytes holds for
/// 0x00..=0x1F (which become 0x01..=0x20), for DEL (0x80, the most
/// negative byte) and for every byte >= 0x80 (0x81..=0xFF and 0x00, all
/// below 0x21 as signed bytes) — an add, a compare and a movemask. CR,
/// LF, the other control characters and DEL are found in the same pass;
/// only the flagged lanes are classified, by the caller, and in the
/// messages of nearly every UA the first flagged byte of a line is the
/// CR of its CRLF.
#[inline(always)]
fn find_flagged(b: &[u8], mut i: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_add_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8,
            _mm_set1_epi8,
        };
        while i + 16 <= b.len() {
            // SAFETY: `i + 16 <= b.len()`: the 16 bytes read are inside
            // `b`; `loadu` has no alignment requirement; SSE2 is part of
            // the x86_64 baseline.
            let m = unsafe {
                let v = _mm_loadu_si128(b.as_ptr().add(i).cast::<__m128i>());
                let shifted = _mm_add_epi8(v, _mm_set1_epi8(1));
                _mm_movemask_epi8(_mm_cmplt_epi8(shifted, _mm_set1_epi8(0x21))) as u32
            };
            if m != 0 {
                return Some(i + m.trailing_zeros() as usize);
            }
            i += 16;
        }
    }
    let i = i.min(b.len());
    b[i..].iter().position(|&c| is_flagged(c)).map(|p| i + p)
}

/// The first control character ([`is_ctl`]) at or after `i` in `b`:
/// [`find_flagged`], past HTAB and bytes >= 0x80.
#[inline(always)]
fn find_ctl(b: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let j = find_flagged(b, i)?;
        if is_ctl(b[j]) {
            return Some(j);
        }
        i = j + 1;
    }
}

/// Whether a CRLF starts at `j`.
#[inline(always)]
fn crlf_at(b: &[u8], j: usize) -> bool {
    b.get(j..j + 2) == Some(b"\r\n")
}

/// Finds the CRLF ending the start line at `i`; returns the index of its
/// CR. A control character before it is [`ParseError::Control`].
///
/// One out-of-line copy (inlined, the scan would occupy its code lines
/// once per call site).
#[inline(never)]
pub(super) fn find_eol(b: &[u8], i: usize, line: u16) -> Result<usize, ParseError> {
    match find_flagged(b, i) {
        Some(j) if crlf_at(b, j) => Ok(j),
        Some(j) => eol_slow(b, j, line),
        None => Err(ParseError::Unterminated),
    }
}

/// [`find_eol`] from its first flagged byte `j` when that is not a CRLF.
#[cold]
#[inline(never)]
fn eol_slow(b: &[u8], j: usize, line: u16) -> Result<usize, ParseError> {
    let j = find_ctl(b, j).ok_or(ParseError::Unterminated)?;
    line_end(b, j, line)
}

/// What the control character at `j` means when it is not the second byte
/// of a quoted-pair: the line's end (`Ok`: the CR of a CRLF) or an error.
#[inline(always)]
fn line_end(b: &[u8], j: usize, line: u16) -> Result<usize, ParseError> {
    match b[j] {
        b'\r' if b.get(j + 1) == Some(&b'\n') => Ok(j),
        b'\r' if j + 1 == b.len() => Err(ParseError::Unterminated),
        b'\r' | b'\n' => Err(ParseError::LineBreak { line }),
        byte => Err(ParseError::Control { line, byte }),
    }
}

/// Finds the end of the header line at `i`, folded continuation lines
/// (CRLF followed by SP or HTAB) included; returns the index of the CR of
/// the CRLF that ends it. Every byte is checked on the way: a control
/// character other than HTAB is [`ParseError::Control`] unless it is the
/// second byte of a quoted-pair inside a quoted string or comment (RFC
/// 4475's `intmeth` carries NUL, BEL and DEL that way); a lone CR or LF is
/// [`ParseError::LineBreak`].
///
/// One scan, 16 bytes at a time ([`find_flagged`]). This function holds
/// only the common case — the flagged bytes are the CRLFs of the line and
/// its folds — so it keeps no state; the first other flagged byte (HTAB,
/// UTF-8, a control character) hands the rest of the line to
/// [`header_end_slow`].
#[inline(never)]
pub(super) fn find_header_end(b: &[u8], i: usize, line: u16) -> Result<usize, ParseError> {
    let mut k = i;
    loop {
        match find_flagged(b, k) {
            Some(j) if crlf_at(b, j) => {
                if !b.get(j + 2).is_some_and(|&c| is_wsp(c)) {
                    return Ok(j);
                }
                // a fold: the header line goes on
                k = j + 2;
            }
            Some(j) => return header_end_slow(b, i, j, line),
            None => return Err(ParseError::Unterminated),
        }
    }
}

/// [`find_header_end`] of the line at `i` from its flagged byte `j`, which
/// is not a CRLF: classifies every flagged byte, quoted-pairs included (a
/// quoted-pair control costs one pass over the bytes since the previous
/// one).
#[cold]
#[inline(never)]
fn header_end_slow(b: &[u8], i: usize, mut j: usize, line: u16) -> Result<usize, ParseError> {
    let mut q = Quoting::at(i);
    loop {
        let c = b[j];
        if c == b'\t' || c >= 0x80 {
            // allowed in a value
        } else if crlf_at(b, j) {
            if !b.get(j + 2).is_some_and(|&c| is_wsp(c)) {
                return Ok(j);
            }
            j += 1;
        } else if matches!(c, b'\r' | b'\n') || !q.quoted_pair_at(b, j) {
            return line_end(b, j, line);
        }
        j = find_flagged(b, j + 1).ok_or(ParseError::Unterminated)?;
    }
}

/// Where a header line's scan is with respect to quoted strings, comments
/// and quoted-pairs (RFC 3261 §25.1), advanced lazily up to the control
/// characters found: the state after `b[..pos]`.
#[derive(Debug, Clone, Copy)]
struct Quoting {
    pos: usize,
    in_quote: bool,
    /// Comment nesting (outside quoted strings).
    depth: u32,
    /// The previous byte was a quoted-pair's backslash.
    escaped: bool,
}

impl Quoting {
    fn at(pos: usize) -> Quoting {
        Quoting {
            pos,
            in_quote: false,
            depth: 0,
            escaped: false,
        }
    }

    /// Whether `b[j]` (`j >= pos`) is the second byte of a quoted-pair;
    /// consumes the bytes up to and including `j`.
    fn quoted_pair_at(&mut self, b: &[u8], j: usize) -> bool {
        for &c in &b[self.pos..j] {
            self.step(c);
        }
        let pair = self.escaped;
        self.step(b[j]);
        self.pos = j + 1;
        pair
    }

    fn step(&mut self, c: u8) {
        if self.escaped {
            self.escaped = false;
        } else if (self.in_quote || self.depth > 0) && c == b'\\' {
            self.escaped = true;
        } else if c == b'"' && self.depth == 0 {
            self.in_quote = !self.in_quote;
        } else if !self.in_quote && c == b'(' {
            self.depth = self.depth.saturating_add(1);
        } else if !self.in_quote && c == b')' && self.depth > 0 {
            self.depth -= 1;
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
pub(super) fn simple_request_line(
    b: &[u8],
    s: usize,
    e: usize,
    uri: &mut Option<Uri>,
) -> Option<StartLine> {
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
pub(super) fn request_line_slow(
    b: &[u8],
    s: usize,
    e: usize,
) -> Result<(StartLine, Uri), ParseError> {
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
pub(super) fn is_status_line(sl: &[u8]) -> bool {
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
pub(super) fn simple_status_line(b: &[u8], s: usize, e: usize) -> Option<StartLine> {
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
pub(super) fn parse_status_line(b: &[u8], s: usize, e: usize) -> Result<StartLine, ParseError> {
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
    fn control_characters_are_found_at_every_offset() {
        for len in 0..48 {
            for at in 0..=len {
                for c in [b'\r', b'\n', 0, 0x1b, 0x1f, 0x7f, b'\t', b' ', 0x80, 0xff] {
                    let mut b = vec![b'x'; len];
                    if at < len {
                        b[at] = c;
                    }
                    for i in 0..=len + 1 {
                        let want = b
                            .iter()
                            .enumerate()
                            .skip(i)
                            .find(|(_, &x)| x < 0x20 && x != b'\t' || x == 0x7f)
                            .map(|(k, _)| k);
                        assert_eq!(find_ctl(&b, i), want, "{c:#x}: len {len} at {at} from {i}");
                        let flagged = b.iter().skip(i).position(|&x| !(0x20..0x7f).contains(&x));
                        assert_eq!(
                            find_flagged(&b, i),
                            flagged.map(|p| p + i),
                            "{c:#x}: len {len} at {at} from {i}"
                        );
                    }
                }
            }
        }
    }
}
