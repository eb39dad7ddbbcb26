//! The crate's one error type.

use thiserror::Error;

/// What went wrong in takt-remote: every fallible function of the crate
/// returns it.
///
/// It is `Clone` and `Eq`, so a caller can keep an error, hand it to
/// several waiters and compare a result with an expected one
/// (`assert_eq!(to.send(m), Err(RemoteError::NodeDown(name)))`). For that
/// reason the variants hold values (names, sizes, capacities) and, where
/// the cause is another library's error type that is neither (the NATS
/// client's, postcard's, the TOML parser's, a refused thread setting), that
/// error's message; the variant says which operation failed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteError {
    /// The configuration is invalid (the text says what and where).
    #[error("configuration: {0}")]
    Config(String),
    /// Connecting to the NATS server failed (unreachable, refused
    /// credentials, TLS handshake).
    #[error("cannot connect to {url}: {reason}")]
    Connect {
        /// The server URL.
        url: String,
        /// Why, as the client reported it.
        reason: String,
    },
    /// The bridge thread could not be started.
    #[error("bridge thread: {0}")]
    Thread(String),
    /// Encoding or decoding failed.
    #[error("codec: {0}")]
    Codec(String),
    /// A message of another type or schema version arrived where this one
    /// was expected.
    #[error("type mismatch: expected {expected}, got {got}")]
    TypeMismatch {
        /// `NAME vVERSION` expected here.
        expected: String,
        /// `NAME vVERSION` that came.
        got: String,
    },
    /// The encoded message is larger than the server accepts.
    #[error("message of {size} bytes exceeds the server's max_payload of {max} bytes")]
    TooLarge {
        /// Envelope plus payload, in bytes.
        size: usize,
        /// The server's `max_payload`.
        max: usize,
    },
    /// The bridge's outbound queue is full (the overload reaction applied).
    #[error("outbound queue full ({capacity} messages)")]
    QueueFull {
        /// The queue's capacity.
        capacity: usize,
    },
    /// The peer node is down (missed heartbeats) or left.
    #[error("node '{0}' is down")]
    NodeDown(String),
    /// No node exports that name (within the lookup's timeout).
    #[error("no node exports '{0}'")]
    NotFound(String),
    /// The name is already exported on this node for this message type.
    #[error("'{0}' is already exported for this message type")]
    AlreadyExported(String),
    /// A name that cannot be a NATS subject token (empty, or with `.`,
    /// `*`, `>` or white space).
    #[error("invalid name '{0}': use letters, digits, '-' and '_'")]
    InvalidName(String),
    /// The engine failed an operation (publish, subscribe, flush).
    #[error("engine: {0}")]
    Engine(String),
    /// The bridge has shut down.
    #[error("the bridge has shut down")]
    Closed,
}
