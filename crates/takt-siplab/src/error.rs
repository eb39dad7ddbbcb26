//! The crate's error type.

/// What went wrong in the SIP laboratory.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A setting is out of range or inconsistent.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A thread could not be made as specified.
    #[error(transparent)]
    Sched(#[from] takt_sched::SchedError),
    /// A thread of the run failed.
    #[error("{0}")]
    Thread(String),
}
