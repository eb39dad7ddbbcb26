//! The crate's one error type.

use std::path::PathBuf;
use std::time::Duration;

use crate::ractor::RactorError;

/// Why `takt bench remote` failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteBenchError {
    /// An operating-system call failed: what was being done, and why.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// `nats-server` could not be started.
    #[error("cannot start nats-server ({0}): install it (scripts/setup.sh, Debian package nats-server) or pass --url")]
    NoNatsServer(#[source] std::io::Error),
    /// A process or node the run started did not become ready in time.
    #[error("{what} did not {ready} within {within:?}")]
    NotReady {
        /// The process or node.
        what: String,
        /// What it should have done (`listen`, `serve`, `appear`).
        ready: &'static str,
        /// How long it was given.
        within: Duration,
    },
    /// The answering child exited before it served.
    #[error("the responder exited before serving ({0})")]
    ResponderExited(std::process::ExitStatus),
    /// A bare async-nats operation failed.
    #[error("async-nats {what}: {source}")]
    Nats {
        /// `connect`, `subscribe`, `request`.
        what: &'static str,
        /// The client's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A takt-remote node, export or send failed.
    #[error("{what}: {source}")]
    Remote {
        /// What was being done.
        what: &'static str,
        /// The node's error.
        source: takt_remote::RemoteError,
    },
    /// A takt ask was not answered.
    #[error("{what}: {source}")]
    Ask {
        /// `takt ask`, `takt sink count`.
        what: &'static str,
        /// Why.
        source: takt_agents::AskError,
    },
    /// The answering node's runtime refused a dispatcher or an agent.
    #[error(transparent)]
    Agents(#[from] takt_agents::RegError),
    /// An echo answered with another length than it was sent.
    #[error("{0}: wrong reply length")]
    WrongReply(&'static str),
    /// takt-remote lost messages where the run expects none.
    #[error("takt-remote lost messages during the run: {0:?}")]
    Lost(takt_remote::RemoteStats),
    /// `--ractor-peer` names no file.
    #[error("--ractor-peer {}: no such file (build it with `{}` from the repository root)", .0.display(), crate::ractor::BUILD_HINT)]
    NoRactorPeer(PathBuf),
    /// The ractor_cluster peer failed.
    #[error("ractor-cluster: {0}")]
    Ractor(#[from] RactorError),
    /// `--only` names no part of the run.
    #[error("unknown part {0:?} (rtt, paced, saturated, one-way)")]
    UnknownPart(String),
    /// A thread of the run panicked.
    #[error("{0} thread panicked")]
    Panicked(&'static str),
    /// The run was cancelled (Ctrl-C) before it finished.
    #[error("remote: interrupted")]
    Interrupted,
}

impl RemoteBenchError {
    /// An [`Io`](Self::Io) error while doing `what`.
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let what = what.into();
        move |source| RemoteBenchError::Io { what, source }
    }

    /// A [`Nats`](Self::Nats) error while doing `what`.
    pub(crate) fn nats<E: std::error::Error + Send + Sync + 'static>(
        what: &'static str,
    ) -> impl FnOnce(E) -> Self {
        move |e| RemoteBenchError::Nats {
            what,
            source: Box::new(e),
        }
    }

    /// A [`Remote`](Self::Remote) error while doing `what`.
    pub(crate) fn remote(what: &'static str) -> impl FnOnce(takt_remote::RemoteError) -> Self {
        move |source| RemoteBenchError::Remote { what, source }
    }

    /// An [`Ask`](Self::Ask) error while doing `what`.
    pub(crate) fn ask(what: &'static str) -> impl FnOnce(takt_agents::AskError) -> Self {
        move |source| RemoteBenchError::Ask { what, source }
    }
}
