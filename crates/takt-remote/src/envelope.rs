//! The envelope: the few bytes before every payload that say what it is —
//! the message type's wire name and schema version, the sending node's
//! origin, and on a reply why no answer came.
//!
//! ## Layout (format 1; integers little-endian)
//! | bytes | field |
//! |---|---|
//! | 1 | [`MAGIC`]: a takt envelope, format 1 |
//! | 1 | kind: 0 a message, else a [`Failure`] code |
//! | 4 | schema version (`u32`) |
//! | 2 + n | type name: length `n` (`u16`), then `n` bytes of UTF-8 |
//! | 2 + m | origin (`node/incarnation`): length `m` (`u16`), then `m` bytes |
//! | rest | the payload, as the type's codec wrote it |
//!
//! The head is the same for every message of one type from one node, so
//! a node builds it once per type ([`Head`]) and copies it in front of
//! each encoding; a receiver reads it in place ([`open`]) and compares the
//! name and version with the type it expects, without allocating.
//!
//! Why not NATS headers: the async-nats client keeps headers in a hash
//! map of vectors of strings, built for every message received and
//! formatted for every message sent; on the bridges that was about half
//! of the instructions per round trip.

use bytes::Bytes;

use crate::RemoteError;

/// The first byte of every envelope (format 1).
pub(crate) const MAGIC: u8 = 0xA7;

/// Bytes of a head before the type name: magic, kind, version, name length.
const FIXED: usize = 1 + 1 + 4 + 2;

/// Why a reply carries no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The agent dropped the query unanswered.
    NoReply = 1,
    /// The answering side's own wait timed out.
    Timeout = 2,
    /// The query's type or version is not one the name answers.
    Mismatch = 3,
    /// Anything else (the answer could not be encoded or sent, the handler
    /// panicked).
    Other = 4,
}

impl Failure {
    /// Every failure, by code.
    pub(crate) const ALL: [Failure; 4] = [
        Failure::NoReply,
        Failure::Timeout,
        Failure::Mismatch,
        Failure::Other,
    ];

    /// The failure of a kind byte; an unknown code reads as `Other`.
    fn from_kind(kind: u8) -> Failure {
        match kind {
            1 => Failure::NoReply,
            2 => Failure::Timeout,
            3 => Failure::Mismatch,
            _ => Failure::Other,
        }
    }
}

/// A prepared envelope head: one per message type (or failure) and node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Head(Bytes);

impl Head {
    /// The head of messages of type `name` version `version` from `origin`.
    /// Fails when the name or the origin is longer than 65,535 bytes.
    pub(crate) fn message(name: &str, version: u32, origin: &str) -> Result<Head, RemoteError> {
        Head::build(0, name, version, origin)
    }

    /// The head of a reply that carries `failure` instead of an answer.
    pub(crate) fn failure(failure: Failure, origin: &str) -> Result<Head, RemoteError> {
        Head::build(failure as u8, "", 0, origin)
    }

    fn build(kind: u8, name: &str, version: u32, origin: &str) -> Result<Head, RemoteError> {
        let len = |s: &str| {
            u16::try_from(s.len()).map_err(|_| {
                RemoteError::Codec(format!("{} bytes: too long for an envelope", s.len()))
            })
        };
        let (n, m) = (len(name)?, len(origin)?);
        let mut b = Vec::with_capacity(FIXED + name.len() + 2 + origin.len());
        b.extend_from_slice(&[MAGIC, kind]);
        b.extend_from_slice(&version.to_le_bytes());
        b.extend_from_slice(&n.to_le_bytes());
        b.extend_from_slice(name.as_bytes());
        b.extend_from_slice(&m.to_le_bytes());
        b.extend_from_slice(origin.as_bytes());
        Ok(Head(Bytes::from(b)))
    }

    /// The head's bytes, to put before a payload.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The head alone as a whole message (a failure reply has no payload).
    pub(crate) fn to_bytes(&self) -> Bytes {
        self.0.clone()
    }
}

/// A received envelope, read in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Envelope<'a> {
    /// Why there is no answer (a reply), or `None` for a message.
    pub(crate) failure: Option<Failure>,
    /// The schema version.
    pub(crate) version: u32,
    /// The type name's bytes (UTF-8 unless the sender is broken).
    pub(crate) name: &'a [u8],
    /// The sending node's origin.
    pub(crate) origin: &'a [u8],
    /// The payload after the head.
    pub(crate) body: &'a [u8],
}

impl Envelope<'_> {
    /// Whether it carries a message of type `name` version `version`.
    pub(crate) fn is(&self, name: &str, version: u32) -> bool {
        self.failure.is_none() && self.version == version && self.name == name.as_bytes()
    }

    /// `name vN`, for error messages.
    pub(crate) fn describe(&self) -> String {
        format!("{} v{}", String::from_utf8_lossy(self.name), self.version)
    }
}

/// Reads the envelope at the start of `bytes`; `None` when there is none
/// (another format, or cut short).
pub(crate) fn open(bytes: &[u8]) -> Option<Envelope<'_>> {
    let (&[magic, kind, v0, v1, v2, v3], rest) = bytes.split_first_chunk::<6>()?;
    if magic != MAGIC {
        return None;
    }
    let (name, rest) = field(rest)?;
    let (origin, body) = field(rest)?;
    Some(Envelope {
        failure: (kind != 0).then(|| Failure::from_kind(kind)),
        version: u32::from_le_bytes([v0, v1, v2, v3]),
        name,
        origin,
        body,
    })
}

/// A `u16`-length-prefixed field and what follows it.
fn field(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = b.split_first_chunk::<2>()?;
    let n = usize::from(u16::from_le_bytes(*len));
    (rest.len() >= n).then(|| rest.split_at(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_head_reads_back_with_its_payload() {
        let h = Head::message("shop.Order", 7, "billing-1/42").unwrap();
        let mut wire = h.as_bytes().to_vec();
        wire.extend_from_slice(b"payload");
        let e = open(&wire).unwrap();
        assert_eq!(e.failure, None);
        assert!(e.is("shop.Order", 7));
        assert!(!e.is("shop.Order", 8), "another version");
        assert!(!e.is("shop.Orde", 7), "another name");
        assert_eq!(e.origin, b"billing-1/42");
        assert_eq!(e.body, b"payload");
        assert_eq!(e.describe(), "shop.Order v7");
    }

    #[test]
    fn a_failure_head_is_never_a_message() {
        for f in Failure::ALL {
            let h = Head::failure(f, "n/1").unwrap();
            let e = open(h.as_bytes()).unwrap();
            assert_eq!(e.failure, Some(f));
            assert!(!e.is("", 0));
            assert!(e.body.is_empty());
        }
        // An unknown code from a newer sender reads as `Other`.
        let mut b = Head::failure(Failure::NoReply, "n/1")
            .unwrap()
            .as_bytes()
            .to_vec();
        b[1] = 200;
        assert_eq!(open(&b).unwrap().failure, Some(Failure::Other));
    }

    #[test]
    fn anything_else_is_no_envelope() {
        let h = Head::message("t", 1, "origin").unwrap();
        let full = h.as_bytes();
        // Every cut inside the head, and another first byte.
        for cut in 0..full.len() {
            assert_eq!(open(&full[..cut]), None, "cut at {cut}");
        }
        let mut other = full.to_vec();
        other[0] = b'{';
        assert_eq!(open(&other), None);
        assert!(open(full).is_some());
        let long = "x".repeat(70_000);
        assert!(Head::message(&long, 1, "o").is_err());
        assert!(Head::failure(Failure::Other, &long).is_err());
    }
}
