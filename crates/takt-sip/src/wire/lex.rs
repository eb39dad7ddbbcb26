//! Character classes and the small lexical rules of RFC 3261 §25.1.
//!
//! Every function takes the whole buffer and a position and returns a new
//! position; nothing allocates and nothing panics on any input.

/// Character class bits, looked up in [`CLASS`].
pub(crate) const TOKEN: u8 = 1;
/// `word` (Call-ID) characters.
pub(crate) const WORD: u8 = 2;
/// URI `unreserved`.
pub(crate) const UNRESERVED: u8 = 4;
/// URI user part (`unreserved` / `user-unreserved`).
pub(crate) const USER: u8 = 8;
/// URI password.
pub(crate) const PASSWORD: u8 = 16;
/// URI parameter characters (`paramchar` without escapes).
pub(crate) const PARAM: u8 = 32;
/// URI header characters (`hnv-unreserved` / `unreserved` and `=`, `&`).
pub(crate) const HEADER: u8 = 64;
/// Host name characters (alphanum, `-`, `.`).
pub(crate) const HOST: u8 = 128;

const fn class_of(c: u8) -> u8 {
    let alnum = c.is_ascii_alphanumeric();
    let mark = matches!(
        c,
        b'-' | b'_' | b'.' | b'!' | b'~' | b'*' | b'\'' | b'(' | b')'
    );
    let unreserved = alnum || mark;
    let token = alnum
        || matches!(
            c,
            b'-' | b'.' | b'!' | b'%' | b'*' | b'_' | b'+' | b'`' | b'\'' | b'~'
        );
    let word = token
        || matches!(
            c,
            b'(' | b')'
                | b'<'
                | b'>'
                | b':'
                | b'\\'
                | b'"'
                | b'/'
                | b'['
                | b']'
                | b'?'
                | b'{'
                | b'}'
        );
    let user = unreserved || matches!(c, b'&' | b'=' | b'+' | b'$' | b',' | b';' | b'?' | b'/');
    let password = unreserved || matches!(c, b'&' | b'=' | b'+' | b'$' | b',');
    let param = unreserved || matches!(c, b'[' | b']' | b'/' | b':' | b'&' | b'+' | b'$');
    let header = unreserved
        || matches!(
            c,
            b'[' | b']' | b'/' | b'?' | b':' | b'+' | b'$' | b'=' | b'&'
        );
    let host = alnum || c == b'-' || c == b'.';
    (token as u8 * TOKEN)
        | (word as u8 * WORD)
        | (unreserved as u8 * UNRESERVED)
        | (user as u8 * USER)
        | (password as u8 * PASSWORD)
        | (param as u8 * PARAM)
        | (header as u8 * HEADER)
        | (host as u8 * HOST)
}

const fn build_classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = class_of(i as u8);
        i += 1;
    }
    t
}

/// The class bits of every byte.
pub(crate) static CLASS: [u8; 256] = build_classes();

/// Whether `c` has any of the class bits `mask`.
#[inline(always)]
pub(crate) fn is(c: u8, mask: u8) -> bool {
    CLASS[c as usize] & mask != 0
}

/// Characters of an unquoted generic-param value: `token`, plus `:`,
/// `[` and `]` (a `host`, IPv6 references included).
static PARAM_VALUE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = CLASS[i] & TOKEN != 0 || matches!(i as u8, b':' | b'[' | b']');
        i += 1;
    }
    t
};

/// Whether `c` may appear in an unquoted generic-param value.
#[inline(always)]
pub(crate) fn is_param_value(c: u8) -> bool {
    PARAM_VALUE[c as usize]
}

/// `token` characters: alphanum and `-.!%*_+`'~`.
#[inline(always)]
pub(crate) fn is_token(c: u8) -> bool {
    is(c, TOKEN)
}

/// `word` characters (Call-ID): token plus `()<>:\"/[]?{}`.
#[inline(always)]
pub(crate) fn is_word(c: u8) -> bool {
    is(c, WORD)
}

/// Space or horizontal tab.
#[inline(always)]
pub(crate) const fn is_wsp(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

/// Skips `SWS` (optional linear white space, including folded line breaks:
/// CRLF followed by at least one SP/HTAB). Stops at `end`.
#[inline]
pub(crate) fn skip_lws(b: &[u8], mut i: usize, end: usize) -> usize {
    loop {
        while i < end && is_wsp(b[i]) {
            i += 1;
        }
        if i + 2 < end && b[i] == b'\r' && b[i + 1] == b'\n' && is_wsp(b[i + 2]) {
            i += 3;
            continue;
        }
        return i;
    }
}

/// Scans a token from `i`; returns its end (== `i` when there is none).
#[inline]
pub(crate) fn scan_token(b: &[u8], i: usize, end: usize) -> usize {
    run_while(b, i, end, is_token)
}

/// The end of the run of bytes from `i` (stopping at `end`) for which `f`
/// holds: `i` itself when there is none.
#[inline(always)]
pub(crate) fn run_while(b: &[u8], i: usize, end: usize, f: impl Fn(u8) -> bool) -> usize {
    match b.get(i..end.min(b.len())) {
        Some(s) => i + s.iter().position(|&c| !f(c)).unwrap_or(s.len()),
        None => i,
    }
}

/// Scans a quoted-string whose opening quote is at `i`; returns the index
/// after the closing quote, or `None` when it is not terminated or holds a
/// character a quoted-string may not hold.
pub(crate) fn scan_quoted(b: &[u8], i: usize, end: usize) -> Option<usize> {
    debug_assert!(i < end && b[i] == b'"');
    let mut j = i + 1;
    while j < end {
        match b[j] {
            b'"' => return Some(j + 1),
            b'\\' => {
                // quoted-pair = "\" (%x00-09 / %x0B-0C / %x0E-7F)
                let c = *b.get(j + 1)?;
                if j + 1 >= end || c == b'\n' || c == b'\r' || c > 0x7f {
                    return None;
                }
                j += 2;
            }
            b'\r' => {
                // only a fold may break a quoted string
                if j + 2 < end && b[j + 1] == b'\n' && is_wsp(b[j + 2]) {
                    j += 3;
                } else {
                    return None;
                }
            }
            b'\n' => return None,
            c if c < 0x20 && c != b'\t' => return None,
            0x7f => return None,
            _ => j += 1,
        }
    }
    None
}

/// Parses a run of ASCII digits as `u64`; `None` on empty input, a
/// non-digit, or overflow beyond `max`.
pub(crate) fn parse_digits(s: &[u8], max: u64) -> Result<u64, DigitsError> {
    if s.is_empty() {
        return Err(DigitsError::Empty);
    }
    let mut v: u64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return Err(DigitsError::NotDigit);
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(c - b'0')))
            .ok_or(DigitsError::Overflow)?;
        if v > max {
            return Err(DigitsError::Overflow);
        }
    }
    Ok(v)
}

/// The common form of a port from `i` (before `end`): one to five
/// digits worth at most 65535, read in the pass that finds them. The
/// port and the index after its digits; `None` for anything else (no
/// digit, six or more, or a larger value), which the full grammar then
/// decides.
#[inline(always)]
pub(crate) fn short_port(s: &[u8], i: usize, end: usize) -> Option<(u16, usize)> {
    let end = end.min(s.len());
    let mut v: u32 = 0;
    let mut k = i;
    // no bound on the run (a bound lets the loop be unrolled): past
    // five digits the value wraps, and is not used
    while k < end && s[k].is_ascii_digit() {
        v = v.wrapping_mul(10).wrapping_add(u32::from(s[k] - b'0'));
        k += 1;
    }
    if k == i || k - i > 5 {
        return None;
    }
    Some((u16::try_from(v).ok()?, k))
}

/// Why a run of digits did not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DigitsError {
    Empty,
    NotDigit,
    Overflow,
}

/// Trims LWS from both ends of `[i, end)`.
pub(crate) fn trim(b: &[u8], i: usize, end: usize) -> (usize, usize) {
    let s = skip_lws(b, i, end);
    let mut e = end;
    while e > s && matches!(b[e - 1], b' ' | b'\t' | b'\r' | b'\n') {
        e -= 1;
    }
    (s, e)
}

/// Finds `c` in `[i, end)` outside quoted strings and angle brackets.
pub(crate) fn find_top_level(b: &[u8], mut i: usize, end: usize, c: u8) -> Option<usize> {
    let mut angle = false;
    while i < end {
        let x = b[i];
        if x == c && !angle {
            return Some(i);
        }
        match x {
            b'"' if !angle => match scan_quoted(b, i, end) {
                Some(j) => {
                    i = j;
                    continue;
                }
                None => return None,
            },
            b'<' => angle = true,
            b'>' => angle = false,
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_match_the_grammar() {
        for c in 0..=255u8 {
            let tok = c.is_ascii_alphanumeric() || b"-.!%*_+`'~".contains(&c);
            assert_eq!(is_token(c), tok, "{c}");
        }
        assert!(is_word(b'{') && !is_word(b'@') && !is_word(b' '));
        assert!(is(b';', USER) && !is(b';', PASSWORD) && !is(b'@', USER));
        assert!(is(b'-', HOST) && !is(b'_', HOST));
    }

    #[test]
    fn lws_skips_folds() {
        let b = b"  \r\n \tx";
        assert_eq!(skip_lws(b, 0, b.len()), 6);
        let b = b" \r\nx";
        assert_eq!(skip_lws(b, 0, b.len()), 1);
    }

    #[test]
    fn quoted_pairs_and_errors() {
        let b = b"\"a\\\"b\" rest";
        assert_eq!(scan_quoted(b, 0, b.len()), Some(6));
        let b = b"\"unterminated";
        assert_eq!(scan_quoted(b, 0, b.len()), None);
        let b = b"\"nul \\\x00 ok\"";
        assert_eq!(scan_quoted(b, 0, b.len()), Some(b.len()));
    }

    #[test]
    fn short_ports_agree_with_parse_digits() {
        for p in [
            "0", "5060", "65535", "65536", "99999", "005060", "123456", "", "x", "80x", "1:",
        ] {
            let b = p.as_bytes();
            let run = b.iter().take_while(|c| c.is_ascii_digit()).count();
            match short_port(b, 0, b.len()) {
                Some((v, k)) => {
                    assert_eq!(k, run, "{p}");
                    assert!(run <= 5, "{p}");
                    assert_eq!(parse_digits(&b[..run], 65535), Ok(u64::from(v)), "{p}");
                }
                None => assert!(
                    run == 0 || run > 5 || parse_digits(&b[..run], 65535).is_err(),
                    "{p}"
                ),
            }
        }
    }

    #[test]
    fn digits() {
        assert_eq!(parse_digits(b"0068", 255), Ok(68));
        assert_eq!(parse_digits(b"300", 255), Err(DigitsError::Overflow));
        assert_eq!(parse_digits(b"-1", 255), Err(DigitsError::NotDigit));
        assert_eq!(parse_digits(b"", 255), Err(DigitsError::Empty));
        assert_eq!(
            parse_digits(b"99999999999999999999999999", u64::MAX),
            Err(DigitsError::Overflow)
        );
    }
}
