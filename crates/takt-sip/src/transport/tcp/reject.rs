//! The answer to a request whose stream cannot be framed.
//!
//! When a request's header section arrived whole but its Content-Length
//! is missing or bad (mandatory on streams, RFC 3261 §18.3), or announces
//! a message over the size limit, the connection cannot be read any
//! further: where the next message starts is unknown. Before it closes
//! the connection the transport answers the request, built from the
//! header section alone (§8.2.6: Via, From, To, Call-ID and CSeq copied),
//! with 400 (bad framing) or 413 (too large). Responses and ACKs get no
//! answer; neither does a header section without those headers.

/// Appends to `out` the response `code reason` to the request whose
/// header section (request line to the blank line; what follows the
/// blank line is not looked at) starts `headers`.
/// Returns false, leaving `out` as it was, when there is nothing to
/// answer: a response, an ACK, or a header section lacking a Via, From,
/// To, Call-ID or CSeq.
pub(crate) fn answer(out: &mut Vec<u8>, headers: &[u8], code: u16, reason: &str) -> bool {
    let mut lines = headers.split(|&c| c == b'\n');
    let Some(start) = lines.next() else {
        return false;
    };
    if start.starts_with(b"SIP/") || start.starts_with(b"ACK ") {
        return false;
    }
    let mark = out.len();
    out.extend_from_slice(format!("SIP/2.0 {code} {reason}\r\n").as_bytes());
    let mut seen = [false; 5];
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            continue;
        };
        let name = line[..colon].trim_ascii_end();
        let which = [
            &[&b"via"[..], b"v"][..],
            &[b"from", b"f"],
            &[b"to", b"t"],
            &[b"call-id", b"i"],
            &[b"cseq"],
        ]
        .iter()
        .position(|names| names.iter().any(|n| name.eq_ignore_ascii_case(n)));
        let Some(i) = which else { continue };
        // control characters other than tab are never echoed
        if line.iter().any(|&c| c < 0x20 && c != b'\t' || c == 0x7f) {
            out.truncate(mark);
            return false;
        }
        seen[i] = true;
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    if !seen.iter().all(|&s| s) {
        out.truncate(mark);
        return false;
    }
    out.extend_from_slice(b"Content-Length: 0\r\n\r\n");
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_requests_only_with_the_copied_headers() {
        let h = b"INVITE sip:b@x SIP/2.0\r\nVia: SIP/2.0/TCP a;branch=z9hG4bK1\r\nf: <sip:a@x>;tag=1\r\nTo: <sip:b@x>\r\ni: c1\r\nCSeq: 1 INVITE\r\nContact: <sip:a@y>\r\n\r\nVia: body\r\n";
        let mut out = b"keep".to_vec();
        assert!(answer(&mut out, h, 413, "Request Entity Too Large"));
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("keepSIP/2.0 413 Request Entity Too Large\r\n"));
        assert!(text.contains("\r\nf: <sip:a@x>;tag=1\r\n"));
        assert!(text.contains("\r\ni: c1\r\n"));
        assert!(!text.contains("Contact"));
        assert!(!text.contains("body"));
        assert!(text.ends_with("Content-Length: 0\r\n\r\n"));
        let mut out = Vec::new();
        assert!(!answer(
            &mut out,
            b"SIP/2.0 200 OK\r\nVia: x\r\n\r\n",
            400,
            "Bad Request"
        ));
        assert!(!answer(
            &mut out,
            b"ACK sip:b@x SIP/2.0\r\nVia: x\r\n\r\n",
            400,
            "Bad Request"
        ));
        assert!(!answer(
            &mut out,
            b"OPTIONS sip:b@x SIP/2.0\r\nVia: x\r\n\r\n",
            400,
            "Bad"
        ));
        let nul =
            b"BYE sip:b@x SIP/2.0\r\nVia: a\r\nFrom: a\x00\r\nTo: b\r\ni: c\r\nCSeq: 2 BYE\r\n\r\n";
        assert!(!answer(&mut out, nul, 400, "Bad Request"));
        assert!(out.is_empty());
    }
}
