//! The SIP wire format (RFC 3261 §7, §20, §25).
//!
//! Two layers, as in smoltcp:
//! - [`Message`] is a zero-copy *view*: [`Message::parse`] checks the
//!   bytes one rule per line and records [`Span`]s (offsets into the
//!   buffer) for the start line, every header line, the values the proxy
//!   interprets (Via, From/To tags, Call-ID, CSeq, Max-Forwards,
//!   Content-Length, Route) and the body. It never allocates for messages
//!   of up to 32 header lines and 4 Vias.
//! - [`Message::parse_proxy`] is the proxy's parse: the same framing,
//!   start-line and header-line checks and the same values parsed, except
//!   the values a proxy only passes on (Contact, Record-Route, Expires,
//!   Retry-After, Date), which RFC 3261 §16.3 step 1 says a proxy ignores
//!   and forwards unchanged; [`Message::check_deferred`] checks them later
//!   with the precise error [`Message::parse`] gives. Every RFC 4475
//!   message [`Message::parse`] rejects is rejected by `parse_proxy` with
//!   the same error, except those whose only defect is in such a value
//!   (`regbadct`, `baddate`), which the proxy forwards unchanged.
//! - [`owned::OwnedMessage`] is an owned, validated representation for
//!   building messages (tests, tools); [`Message::emit`] and
//!   [`owned::OwnedMessage::emit`] write bytes back.
//!
//! Control characters: the scan that finds each line's end finds, in the
//! same pass (16 bytes at a time), every control character (%x00-1F but
//! HTAB, and DEL) in the start line and in every header line, parsed or
//! not: RFC 3261 §25.1 allows one only as the second byte of a
//! quoted-pair inside a quoted string or comment (RFC 4475's `intmeth`).
//! Anything else is [`ParseError::Control`] (counter rule
//! `control_character`), a lone CR or LF [`ParseError::LineBreak`]; the
//! proxy answers such a request 400 with the error in the reason phrase,
//! and drops a response or an ACK.
//!
//! Stream transports (TCP) frame messages with [`stream::Framer`], which
//! requires Content-Length (§18.3).
//!
//! ```
//! use takt_sip::wire::{Message, Method};
//! let raw = b"OPTIONS sip:bob@example.com SIP/2.0\r\n\
//! Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK776\r\n\
//! To: <sip:bob@example.com>\r\nFrom: <sip:alice@example.com>;tag=1\r\n\
//! Call-ID: a@b\r\nCSeq: 1 OPTIONS\r\nl: 0\r\n\r\n";
//! let m = Message::parse(raw).unwrap();
//! assert_eq!(m.method(), Some(Method::Options));
//! assert_eq!(m.top_via().branch.unwrap().of(raw), b"z9hG4bK776");
//! ```

mod error;
mod header;
pub(crate) mod lex;
mod line;
mod message;
mod method;
pub mod owned;
pub mod stream;
mod uri;
mod values;

pub use error::{LineError, ParseError, UriError, ValueError};
pub use header::HeaderName;
pub use message::{Header, Message, StartLine, MAX_HEADERS};
pub use method::Method;
pub use uri::{parse_uri, Scheme, Uri};
pub use values::{split_commas, NameAddr, Rport, Via};

/// A byte range `[start, end)` inside a message buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    start: u32,
    end: u32,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Span {
        debug_assert!(start <= end);
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// First byte.
    pub fn start(&self) -> usize {
        self.start as usize
    }

    /// One past the last byte.
    pub fn end(&self) -> usize {
        self.end as usize
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        (self.end - self.start) as usize
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// The bytes it covers in `buf` (empty if out of range).
    pub fn of<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        buf.get(self.start()..self.end()).unwrap_or(&[])
    }
}
