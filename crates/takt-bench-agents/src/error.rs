//! The crate's one error type, and the error of one run
//! ([`RunError`](crate::runs::RunError)) it wraps.

use crate::runs::RunError;

/// Why `takt bench agents` failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentsError {
    /// One run of a takt benchmark could not be set up, did not complete
    /// or computed a wrong result.
    #[error("agents: {0}")]
    Run(#[from] RunError),
    /// A peer runtime's run failed.
    #[cfg(feature = "peers")]
    #[error("agents: {peer}: {source}")]
    Peer {
        /// The peer's name.
        peer: &'static str,
        /// What went wrong.
        source: crate::peers::PeerError,
    },
    /// The SObjectizer driver failed, hung, printed something unexpected
    /// or was interrupted (the message names the peer and quotes it).
    #[cfg(feature = "peers")]
    #[error("agents: {0}")]
    Sobjectizer(#[from] crate::peers::sobjectizer::So5Error),
    /// The peers were asked for, but this build has none.
    #[error("agents: this build has no peer runtimes (takt-bench-agents feature `peers` is off)")]
    NoPeers,
    /// The idle-latency limit could not be held (root, `/dev/cpu_dma_latency`).
    #[error("--idle-latency: {0}")]
    IdleLatency(#[source] takt_sched::SchedError),
    /// The run was cancelled (Ctrl-C) before it finished.
    #[error("agents: interrupted")]
    Interrupted,
}
