//! An owned SIP message for building and inspecting messages off the hot
//! path (tests, tools, generated requests). [`OwnedMessage::emit`] writes
//! the wire form with a correct Content-Length; [`OwnedMessage::validated`]
//! proves it parses.

use super::{Message, ParseError, StartLine};

/// The first line of an owned message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedStart {
    /// A request.
    Request {
        /// Method token.
        method: String,
        /// Request-URI.
        uri: String,
    },
    /// A response.
    Response {
        /// Status code.
        code: u16,
        /// Reason phrase.
        reason: String,
    },
}

/// An owned message: start line, header lines (name, value) in order, body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedMessage {
    /// Start line.
    pub start: OwnedStart,
    /// Headers in order; Content-Length is computed by `emit` and must not be listed.
    pub headers: Vec<(String, Vec<u8>)>,
    /// Body.
    pub body: Vec<u8>,
}

impl OwnedMessage {
    /// A request with no headers yet.
    pub fn request(method: &str, uri: &str) -> OwnedMessage {
        OwnedMessage {
            start: OwnedStart::Request {
                method: method.into(),
                uri: uri.into(),
            },
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// A response with no headers yet.
    pub fn response(code: u16, reason: &str) -> OwnedMessage {
        OwnedMessage {
            start: OwnedStart::Response {
                code,
                reason: reason.into(),
            },
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Appends a header.
    pub fn header(mut self, name: &str, value: impl AsRef<[u8]>) -> OwnedMessage {
        self.headers.push((name.into(), value.as_ref().to_vec()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl AsRef<[u8]>) -> OwnedMessage {
        self.body = body.as_ref().to_vec();
        self
    }

    /// Copies a parsed message (Content-Length is dropped; `emit` recomputes it).
    pub fn from_message(m: &Message<'_>) -> OwnedMessage {
        let b = m.buf();
        let start = match m.start_line() {
            StartLine::Request {
                method_span, uri, ..
            } => OwnedStart::Request {
                method: String::from_utf8_lossy(method_span.of(b)).into_owned(),
                uri: String::from_utf8_lossy(uri.of(b)).into_owned(),
            },
            StartLine::Response { code, reason } => OwnedStart::Response {
                code,
                reason: String::from_utf8_lossy(reason.of(b)).into_owned(),
            },
        };
        OwnedMessage {
            start,
            headers: m
                .headers()
                .iter()
                .filter(|h| h.name != super::HeaderName::ContentLength)
                .map(|h| {
                    (
                        String::from_utf8_lossy(h.name_span.of(b)).into_owned(),
                        h.value.of(b).to_vec(),
                    )
                })
                .collect(),
            body: m.body().to_vec(),
        }
    }

    /// Writes the wire form, ending the headers with a Content-Length.
    pub fn emit(&self, out: &mut Vec<u8>) {
        match &self.start {
            OwnedStart::Request { method, uri } => {
                out.extend_from_slice(method.as_bytes());
                out.push(b' ');
                out.extend_from_slice(uri.as_bytes());
                out.extend_from_slice(b" SIP/2.0\r\n");
            }
            OwnedStart::Response { code, reason } => {
                out.extend_from_slice(format!("SIP/2.0 {code} {reason}\r\n").as_bytes());
            }
        }
        for (n, v) in &self.headers {
            out.extend_from_slice(n.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", self.body.len()).as_bytes());
        out.extend_from_slice(&self.body);
    }

    /// The wire form.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(512);
        self.emit(&mut v);
        v
    }

    /// The wire form, checked by the parser.
    pub fn validated(&self) -> Result<Vec<u8>, ParseError> {
        let v = self.to_bytes();
        Message::parse(&v)?;
        Ok(v)
    }
}
