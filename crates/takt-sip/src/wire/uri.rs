//! URIs (RFC 3261 §19.1, §25.1): SIP/SIPS URIs are taken apart into spans;
//! other schemes are checked for `scheme ":" 1*uric` only.

use super::error::UriError;
use super::lex::{is, HEADER, HOST, PARAM, PASSWORD, UNRESERVED, USER};
use super::Span;

/// URI scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `sip:`
    Sip,
    /// `sips:`
    Sips,
    /// `tel:`
    Tel,
    /// Anything else (an absoluteURI).
    Other,
}

/// A URI as spans over the message bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uri {
    /// The whole URI.
    pub span: Span,
    /// Its scheme.
    pub scheme: Scheme,
    /// `user[:password]` before the `@` (SIP/SIPS only).
    pub userinfo: Option<Span>,
    /// The host (brackets included for IPv6 references; empty for non-SIP schemes).
    pub host: Span,
    /// The port, if given.
    pub port: Option<u16>,
    /// The parameters, from the first `;` (empty when none).
    pub params: Span,
    /// The headers after `?` (without the `?`).
    pub headers: Option<Span>,
    /// Whether the `lr` parameter is present.
    pub lr: bool,
    /// The `transport` parameter's value.
    pub transport: Option<Span>,
    /// The `maddr` parameter's value.
    pub maddr: Option<Span>,
}

/// Checks `%HH` escapes and a character class over `[i, end)`.
#[inline]
fn check_escaped(b: &[u8], mut i: usize, end: usize, mask: u8) -> Result<(), UriError> {
    while i < end {
        let c = b[i];
        if c == b'%' {
            if i + 2 >= end || !b[i + 1].is_ascii_hexdigit() || !b[i + 2].is_ascii_hexdigit() {
                return Err(UriError::Escape);
            }
            i += 3;
        } else if is(c, mask) {
            i += 1;
        } else if c <= b' ' || c == 0x7f {
            return Err(UriError::Whitespace);
        } else {
            return Err(UriError::Escape);
        }
    }
    Ok(())
}

/// Scans the common shape `sip:[user@]host[:port]` from `start` (`user`
/// of `unreserved` characters, no escapes; `host` a name or IPv4 literal;
/// lower-case scheme) and stops at the first byte that does not continue
/// it, before `end`: returns the URI over `[start, stop)` and `stop`.
/// `None` when the bytes do not have that shape (the full parser then
/// decides).
///
/// The fast path of [`parse_uri`] and of From/To values: whatever it
/// returns is what [`parse_uri`] returns for `[start, stop)` (tested
/// against it in `simple_form_agrees_with_the_parser`), in one pass over
/// the bytes instead of four.
///
#[inline]
pub(crate) fn simple_sip_uri(b: &[u8], start: usize, end: usize) -> Option<(Uri, usize)> {
    let mut uri = None;
    let stop = scan_sip_uri(b, start, end, &mut uri)?;
    Some((uri?, stop))
}

/// [`simple_sip_uri`], writing the URI to `out` (only when it returns
/// `Some`): the Request-URI goes straight into the view, and a From or
/// To value, which needs only `stop`, is not copied.
#[inline(never)]
pub(crate) fn scan_sip_uri(
    b: &[u8],
    start: usize,
    end: usize,
    out: &mut Option<Uri>,
) -> Option<usize> {
    let s = b.get(..end)?;
    if s.get(start..start + 4)? != b"sip:" {
        return None;
    }
    let first = start + 4;
    let run = |i: usize, mask: u8| super::lex::run_while(s, i, s.len(), |c| is(c, mask));
    let mut i = run(first, HOST);
    let mut userinfo = None;
    if i < s.len() && s[i] != b':' && is(s[i], UNRESERVED) {
        // a user part (a host name holds no `_!~*'()`)
        i = run(i, UNRESERVED);
    }
    if i < s.len() && s[i] == b'@' {
        if i == first {
            return None;
        }
        userinfo = Some(Span::new(first, i));
        let h = i + 1;
        i = run(h, HOST);
        if i == h {
            return None;
        }
    } else if i == first || s[first..i].iter().any(|&c| !is(c, HOST)) {
        return None;
    }
    let host = Span::new(userinfo.map_or(first, |u| u.end() + 1), i);
    let mut port = None;
    if i < s.len() && s[i] == b':' {
        let (p, after) = super::lex::short_port(s, i + 1, s.len())?;
        port = Some(p);
        i = after;
    }
    *out = Some(Uri {
        span: Span::new(start, i),
        scheme: Scheme::Sip,
        userinfo,
        host,
        port,
        params: Span::new(i, i),
        headers: None,
        lr: false,
        transport: None,
        maddr: None,
    });
    Some(i)
}

/// Parses the URI in `[start, end)`. `allow_headers` is false for a
/// Request-URI (RFC 3261 §19.1.1 forbids headers there).
///
/// The common shapes take one pass ([`simple_sip_uri`]): a URI without
/// parameters, and one whose only parameter is a loose router's `;lr`
/// (every Route and Record-Route value of a dialog through a loose
/// router), both tested against the full grammar in
/// `simple_forms_agree_with_the_parser`.
pub fn parse_uri(b: &[u8], start: usize, end: usize, allow_headers: bool) -> Result<Uri, UriError> {
    if let Some((mut u, stop)) = simple_sip_uri(b, start, end) {
        if stop == end {
            return Ok(u);
        }
        if b.get(stop..end) == Some(LR) {
            u.span = Span::new(start, end);
            u.params = Span::new(stop, end);
            u.lr = true;
            return Ok(u);
        }
    }
    parse_uri_slow(b, start, end, allow_headers)
}

/// A loose router's URI parameter, as [`parse_uri`]'s fast path takes it.
pub(crate) const LR: &[u8] = b";lr";

/// [`parse_uri`] without its fast path.
#[cold]
#[inline(never)]
pub(crate) fn parse_uri_slow(
    b: &[u8],
    start: usize,
    end: usize,
    allow_headers: bool,
) -> Result<Uri, UriError> {
    parse_uri_inner(b, start, end, allow_headers).map_err(|e| {
        if e != UriError::Whitespace
            && b[start.min(end)..end.min(b.len())]
                .iter()
                .any(|&c| c <= b' ' || c == 0x7f)
        {
            UriError::Whitespace
        } else {
            e
        }
    })
}

fn parse_uri_inner(
    b: &[u8],
    start: usize,
    end: usize,
    allow_headers: bool,
) -> Result<Uri, UriError> {
    if start >= end || end > b.len() {
        return Err(UriError::Scheme);
    }
    // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
    let mut i = start;
    if !b[i].is_ascii_alphabetic() {
        return Err(UriError::Scheme);
    }
    while i < end && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'+' | b'-' | b'.')) {
        i += 1;
    }
    if i >= end || b[i] != b':' {
        return Err(UriError::Scheme);
    }
    let scheme_bytes = &b[start..i];
    let scheme = if scheme_bytes.eq_ignore_ascii_case(b"sip") {
        Scheme::Sip
    } else if scheme_bytes.eq_ignore_ascii_case(b"sips") {
        Scheme::Sips
    } else if scheme_bytes.eq_ignore_ascii_case(b"tel") {
        Scheme::Tel
    } else {
        Scheme::Other
    };
    i += 1;
    let mut uri = Uri {
        span: Span::new(start, end),
        scheme,
        userinfo: None,
        host: Span::new(i, i),
        port: None,
        params: Span::new(end, end),
        headers: None,
        lr: false,
        transport: None,
        maddr: None,
    };
    if !matches!(scheme, Scheme::Sip | Scheme::Sips) {
        if i >= end {
            return Err(UriError::Host);
        }
        if b[i..end].iter().any(|&c| c <= b' ' || c == 0x7f) {
            return Err(UriError::Whitespace);
        }
        return Ok(uri);
    }
    // userinfo: up to the first '@' (user and password cannot hold '@')
    let at = b[i..end].iter().position(|&c| c == b'@').map(|p| i + p);
    if let Some(at) = at {
        let colon = b[i..at].iter().position(|&c| c == b':').map(|p| i + p);
        let user_end = colon.unwrap_or(at);
        if user_end == i {
            return Err(UriError::Host);
        }
        check_escaped(b, i, user_end, USER)?;
        if let Some(c) = colon {
            check_escaped(b, c + 1, at, PASSWORD)?;
        }
        uri.userinfo = Some(Span::new(i, at));
        i = at + 1;
    }
    // host
    let host_start = i;
    if i < end && b[i] == b'[' {
        while i < end && b[i] != b']' {
            if !(b[i].is_ascii_hexdigit() || matches!(b[i], b':' | b'.' | b'[')) {
                return Err(UriError::Host);
            }
            i += 1;
        }
        if i >= end {
            return Err(UriError::Host);
        }
        i += 1;
    } else {
        while i < end && is(b[i], HOST) {
            i += 1;
        }
    }
    if i == host_start {
        return Err(UriError::Host);
    }
    uri.host = Span::new(host_start, i);
    if i < end && b[i] == b':' {
        let p = i + 1;
        i = p;
        while i < end && b[i].is_ascii_digit() {
            i += 1;
        }
        let port = super::lex::parse_digits(&b[p..i], 65535).map_err(|_| UriError::Port)?;
        uri.port = Some(port as u16);
    }
    // parameters
    let params_start = i;
    while i < end && b[i] == b';' {
        let n = i + 1;
        let mut j = n;
        while j < end && b[j] != b';' && b[j] != b'?' {
            j += 1;
        }
        let eq = b[n..j].iter().position(|&c| c == b'=').map(|p| n + p);
        let name_end = eq.unwrap_or(j);
        if name_end == n {
            return Err(UriError::Param);
        }
        check_escaped(b, n, name_end, PARAM).map_err(|_| UriError::Param)?;
        if let Some(e) = eq {
            if e + 1 == j {
                return Err(UriError::Param);
            }
            check_escaped(b, e + 1, j, PARAM).map_err(|_| UriError::Param)?;
        }
        let name = &b[n..name_end];
        let value = eq.map(|e| Span::new(e + 1, j));
        if name.eq_ignore_ascii_case(b"lr") {
            uri.lr = true;
        } else if name.eq_ignore_ascii_case(b"transport") {
            uri.transport = value;
        } else if name.eq_ignore_ascii_case(b"maddr") {
            uri.maddr = value;
        }
        i = j;
    }
    uri.params = Span::new(params_start, i);
    if i < end && b[i] == b'?' {
        if !allow_headers {
            return Err(UriError::Headers);
        }
        check_escaped(b, i + 1, end, HEADER).map_err(|_| UriError::Headers)?;
        uri.headers = Some(Span::new(i + 1, end));
        i = end;
    }
    if i != end {
        // say why precisely: a space or control character, or a bad host
        if b[i..end].iter().any(|&c| c <= b' ' || c == 0x7f) {
            return Err(UriError::Whitespace);
        }
        return Err(UriError::Host);
    }
    Ok(uri)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Uri, UriError> {
        parse_uri(s.as_bytes(), 0, s.len(), true)
    }

    #[test]
    fn sip_uris() {
        let u = p("sip:alice@atlanta.com:5070;transport=tcp;lr").unwrap();
        assert_eq!(u.scheme, Scheme::Sip);
        assert_eq!(u.port, Some(5070));
        assert!(u.lr);
        assert_eq!(
            u.host.of(b"sip:alice@atlanta.com:5070;transport=tcp;lr"),
            b"atlanta.com"
        );
        let u = p("sip:[2001:db8::10]:5060").unwrap();
        assert_eq!(u.port, Some(5060));
        assert!(p("sip:user;par=u%40example.net@example.com").is_ok());
        assert!(p("sips:user@example.com?Subject=x&Priority=urgent").is_ok());
        assert_eq!(
            parse_uri(b"sip:u@h?Route=x", 0, 15, false),
            Err(UriError::Headers)
        );
    }

    #[test]
    fn bad_uris() {
        assert_eq!(p("sip:user@example.com; lr"), Err(UriError::Whitespace));
        assert_eq!(p("sip:@example.com").unwrap_err(), UriError::Host);
        assert_eq!(p("sip:host:99999").unwrap_err(), UriError::Port);
        assert_eq!(p("nocolon").unwrap_err(), UriError::Scheme);
        assert_eq!(p("sip:a%zz@host").unwrap_err(), UriError::Escape);
        assert_eq!(p("sip:host;").unwrap_err(), UriError::Param);
        assert!(p("soap.beep://192.0.2.103:3002").is_ok());
    }
}
