//! The engine boundary: what the bridge needs from a messaging engine
//! ([`Transport`]).
//!
//! The bridge speaks only this trait, so another engine (another broker, a
//! direct TCP mesh) could follow NATS by implementing it. A transport lives
//! on the bridge thread's current-thread runtime. It carries opaque
//! payloads: what a message is (its type's name and version, its origin)
//! travels inside the payload, in the bridge's own envelope, so an engine
//! needs no header support.

use std::future::Future;

use bytes::Bytes;
use futures_util::Stream;

use crate::RemoteError;

/// A message as it arrives.
#[derive(Clone, Debug)]
pub struct Inbound {
    /// The subject it was published on (UTF-8).
    pub subject: Bytes,
    /// Where to reply, for a query (UTF-8).
    pub reply: Option<Bytes>,
    /// The payload, envelope included.
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

    /// The largest payload the server accepts, in bytes.
    fn max_payload(&self) -> usize;

    /// Publishes `payload` on `subject`, with `reply` as the subject to
    /// answer on. Subjects are UTF-8 (the bridge makes them so); they come
    /// as `Bytes` so that the bridge can keep one per destination and pass
    /// it without copying.
    fn publish(
        &self,
        subject: Bytes,
        reply: Option<Bytes>,
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
