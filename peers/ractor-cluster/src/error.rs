//! The crate's error type.

/// What went wrong with the ractor_cluster peer.
#[derive(Debug, thiserror::Error)]
pub enum RactorPeerError {
    /// A tokio runtime, socket or stdin failed.
    #[error("ractor peer: {what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The cause.
        source: std::io::Error,
    },
    /// Node B's process could not be started or did not serve.
    #[error("ractor peer: node B: {0}")]
    Child(String),
    /// An actor or the node server could not be spawned.
    #[error("ractor peer: spawning {what}: {reason}")]
    Spawn {
        /// Which actor.
        what: &'static str,
        /// ractor's reason.
        reason: String,
    },
    /// Node A could not connect to node B, or node B's echo actor did not
    /// appear in its group within the start timeout.
    #[error("ractor peer: connecting to node B at {addr}: {reason}")]
    Connect {
        /// Node B's address.
        addr: String,
        /// What failed.
        reason: String,
    },
    /// A call to the remote echo actor failed or timed out.
    #[error("ractor peer: call: {0}")]
    Call(String),
    /// Another instance of the peer lives in this process.
    #[error("ractor peer: one instance per process (ractor_cluster numbers each node server's peers from 0)")]
    Busy,
    /// The echo came back with a different length.
    #[error("ractor peer: the echo of {sent} bytes came back with {got}")]
    WrongReply {
        /// Bytes sent.
        sent: usize,
        /// Bytes received.
        got: usize,
    },
}

/// Maps an I/O error with what was being done.
pub(crate) fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> RactorPeerError {
    move |source| RactorPeerError::Io { what, source }
}
