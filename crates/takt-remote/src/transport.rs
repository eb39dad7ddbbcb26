//! The engine boundary: what the bridge needs from a messaging engine
//! ([`Transport`]), and the headers every message carries ([`Meta`]).
//!
//! The bridge speaks only this trait, so another engine (another broker, a
//! direct TCP mesh) could follow NATS by implementing it. A transport lives
//! on the bridge thread's current-thread runtime.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::Stream;

use crate::RemoteError;

/// Header: the message's [`Remote::NAME`](crate::Remote::NAME).
pub const HDR_TYPE: &str = "Takt-Type";
/// Header: the message's [`Remote::VERSION`](crate::Remote::VERSION).
pub const HDR_VERSION: &str = "Takt-Version";
/// Header: the sending node's origin (`node/incarnation`).
pub const HDR_ORIGIN: &str = "Takt-Origin";
/// Header: on a reply, why there is no answer (`no-reply`, `mismatch`).
pub const HDR_ERROR: &str = "Takt-Error";

/// What travels beside a payload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// The type name ([`Remote::NAME`](crate::Remote::NAME)).
    pub type_name: String,
    /// The schema version.
    pub version: u32,
    /// The sending node's origin (`node/incarnation`).
    pub origin: String,
    /// On a reply: why no answer came.
    pub error: Option<String>,
}

impl Meta {
    /// The bytes these headers take on the wire in the NATS header block
    /// (`NATS/1.0\r\n`, one `Name: value\r\n` each, a closing `\r\n`); the
    /// server counts them against `max_payload`.
    pub fn wire_len(&self) -> usize {
        let line = |n: &str, v: usize| n.len() + 2 + v + 2;
        10 + line(HDR_TYPE, self.type_name.len())
            + line(HDR_VERSION, self.version.to_string().len())
            + line(HDR_ORIGIN, self.origin.len())
            + self.error.as_ref().map_or(0, |e| line(HDR_ERROR, e.len()))
            + 2
    }
}

/// A message as it arrives.
#[derive(Clone, Debug)]
pub struct Inbound {
    /// The subject it was published on.
    pub subject: String,
    /// Where to reply, for a query.
    pub reply: Option<String>,
    /// Its headers; `None` when they are missing or unreadable.
    pub meta: Option<Meta>,
    /// The payload.
    pub payload: Bytes,
    /// The engine's "no responders" answer to a query.
    pub no_responders: bool,
}

/// A messaging engine as the bridge uses it: subjects, publish with an
/// optional reply subject, subscribe, flush. Ordering contract: messages
/// published through one transport on one subject reach each subscriber
/// in the order published, while the connection holds.
pub trait Transport: Clone + Send + Sync + 'static {
    /// The stream of one subscription's messages.
    type Subscription: Stream<Item = Inbound> + Send + Unpin + 'static;

    /// The largest payload plus headers the server accepts, in bytes.
    fn max_payload(&self) -> usize;

    /// Publishes `payload` with `meta` on `subject`. The bridge makes one
    /// `Meta` per message type (and per reply error) and passes the same
    /// `Arc` every time, so a transport may prepare its header block once
    /// per `Arc` and reuse it.
    fn publish(
        &self,
        subject: String,
        reply: Option<String>,
        meta: &Arc<Meta>,
        payload: Bytes,
    ) -> impl Future<Output = Result<(), RemoteError>> + Send;

    /// Subscribes to `subject` (NATS wildcards allowed).
    fn subscribe(
        &self,
        subject: String,
    ) -> impl Future<Output = Result<Self::Subscription, RemoteError>> + Send;

    /// Returns once everything published so far reached the server.
    fn flush(&self) -> impl Future<Output = Result<(), RemoteError>> + Send;
}
