//! The crate's one error type.

/// What went wrong changing the machine or undoing a change.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A file or a system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A command (`ip`, `sudo`) ran and failed.
    #[error("`{command}` failed: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// What it said on stderr.
        stderr: String,
    },
    /// The change needs privileges this process does not have.
    #[error("{0}")]
    Privilege(String),
    /// A value did not take, or a state file is not ours.
    #[error("{0}")]
    Config(String),
    /// A thread setting or an idle-latency hold was refused.
    #[error(transparent)]
    Sched(#[from] takt_sched::SchedError),
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, HostError>;

/// `map_err` helper: an I/O error while doing `what`.
pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> HostError {
    let what = what.into();
    move |source| HostError::Io { what, source }
}
