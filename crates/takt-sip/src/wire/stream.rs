//! Framing SIP messages on a byte stream (TCP, RFC 3261 §18.3): the header
//! section ends at the first empty line; Content-Length, mandatory on
//! streams, gives the body size. CRLF keep-alives (RFC 5626 §3.5.1)
//! between messages are skipped.

/// What the framer found at the front of its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// A whole message of this many bytes is at the front (skipped leading
    /// CRLFs included in `skip`).
    Message {
        /// Bytes of leading CRLF to drop first.
        skip: usize,
        /// Bytes of the message after them.
        len: usize,
    },
    /// More bytes are needed.
    Incomplete,
}

/// Why a stream cannot be framed any further (the connection must close).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The header section exceeds the limit without ending.
    #[error("header section longer than {0} bytes")]
    HeadersTooLarge(usize),
    /// Content-Length is missing, malformed, or larger than the limit.
    #[error("missing or bad Content-Length")]
    ContentLength,
    /// The whole message exceeds the limit.
    #[error("message longer than {0} bytes")]
    TooLarge(usize),
}

/// Finds message boundaries in a stream buffer.
#[derive(Debug, Clone, Copy)]
pub struct Framer {
    max_message: usize,
}

impl Framer {
    /// A framer refusing messages longer than `max_message` bytes.
    pub fn new(max_message: usize) -> Framer {
        Framer { max_message }
    }

    /// Looks at the front of `buf`.
    pub fn frame(&self, buf: &[u8]) -> Result<Frame, FrameError> {
        let mut skip = 0;
        while skip + 1 < buf.len() && buf[skip] == b'\r' && buf[skip + 1] == b'\n' {
            skip += 2;
        }
        let b = &buf[skip..];
        let Some(h_end) = find_blank_line(b) else {
            if b.len() > self.max_message {
                return Err(FrameError::HeadersTooLarge(self.max_message));
            }
            return Ok(Frame::Incomplete);
        };
        let cl = content_length(&b[..h_end]).ok_or(FrameError::ContentLength)?;
        let len = h_end.checked_add(cl).ok_or(FrameError::ContentLength)?;
        if len > self.max_message {
            return Err(FrameError::TooLarge(self.max_message));
        }
        if b.len() < len {
            return Ok(Frame::Incomplete);
        }
        Ok(Frame::Message { skip, len })
    }
}

impl Framer {
    /// When the header section at the front of `buf` is complete and
    /// frames: the length `buf` must reach (leading CRLFs included) before
    /// [`Framer::frame`] can find the message. `None` while the header
    /// section is incomplete, or when it does not frame. A reader that
    /// gets more bytes one at a time waits for this length instead of
    /// re-framing on every read.
    pub fn needed(&self, buf: &[u8]) -> Option<usize> {
        let mut skip = 0;
        while skip + 1 < buf.len() && buf[skip] == b'\r' && buf[skip + 1] == b'\n' {
            skip += 2;
        }
        let b = &buf[skip..];
        let h_end = find_blank_line(b)?;
        let cl = content_length(&b[..h_end])?;
        skip.checked_add(h_end)?.checked_add(cl)
    }
}

/// Index after the `\r\n\r\n` ending the header section.
fn find_blank_line(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

/// Content-Length (or `l`) from a header section, ignoring folding subtleties
/// (the full parser re-checks the message).
fn content_length(h: &[u8]) -> Option<usize> {
    let mut found = None;
    for line in h.split(|&c| c == b'\n').skip(1) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            continue;
        };
        let name = line[..colon].trim_ascii_end();
        if name.eq_ignore_ascii_case(b"content-length") || name.eq_ignore_ascii_case(b"l") {
            let v = line[colon + 1..].trim_ascii();
            if v.is_empty() || v.len() > 9 || !v.iter().all(u8::is_ascii_digit) || found.is_some() {
                return None;
            }
            found = Some(
                v.iter()
                    .fold(0usize, |a, &d| a * 10 + usize::from(d - b'0')),
            );
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_messages_in_pieces() {
        let f = Framer::new(4096);
        let m = b"\r\n\r\nBYE sip:a@b SIP/2.0\r\nl: 3\r\n\r\nabcNEXT";
        assert_eq!(f.frame(&m[..20]), Ok(Frame::Incomplete));
        assert_eq!(f.frame(&m[..m.len() - 5]), Ok(Frame::Incomplete));
        assert_eq!(f.frame(m), Ok(Frame::Message { skip: 4, len: 32 }));
        let no_cl = b"BYE sip:a@b SIP/2.0\r\nVia: x\r\n\r\n";
        assert_eq!(f.frame(no_cl), Err(FrameError::ContentLength));
        let big = b"BYE sip:a@b SIP/2.0\r\nContent-Length: 100000\r\n\r\n";
        assert_eq!(f.frame(big), Err(FrameError::TooLarge(4096)));
        assert_eq!(
            Framer::new(8).frame(b"INVITE sip:"),
            Err(FrameError::HeadersTooLarge(8))
        );
        // what a reader must wait for
        assert_eq!(f.needed(&m[..20]), None);
        assert_eq!(f.needed(&m[..m.len() - 6]), Some(36));
        assert_eq!(f.needed(no_cl), None);
    }
}
