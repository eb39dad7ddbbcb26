//! The crate's one error type.

use std::io;

/// What went wrong in the SIP laboratory.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A setting is out of range or inconsistent (search parameters,
    /// target options, a host that cannot provide what was asked).
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A name that is none of a setting's values (a target, a scenario,
    /// a network path, an arrival process).
    #[error("unknown {what} {name:?} ({choices})")]
    Unknown {
        /// What was being named (`target`, `scenario`).
        what: &'static str,
        /// The name given.
        name: String,
        /// The names accepted.
        choices: &'static str,
    },
    /// A combination of settings a command cannot run with (the command
    /// line's fault: `takt` exits with status 2).
    #[error("{0}")]
    Usage(#[source] Box<Error>),
    /// A tool the target needs is not installed.
    #[error("{tool} is not installed ({hint})")]
    Missing {
        /// The program.
        tool: &'static str,
        /// Where to get it.
        hint: &'static str,
    },
    /// An operating-system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A thread could not be made as specified.
    #[error(transparent)]
    Sched(#[from] takt_sched::SchedError),
    /// A machine-wide change (a setting, a namespace) failed.
    #[error(transparent)]
    Host(#[from] takt_host::HostError),
    /// A peer the target needs (OpenSIPS) is not built: the sentence
    /// names the command that builds it.
    #[error(transparent)]
    NotBuilt(#[from] takt_host::peers::NotBuilt),
    /// A thread of the run failed.
    #[error("{0}")]
    Thread(String),
    /// A target did not come up.
    #[error("{target} did not start: {reason}")]
    Start {
        /// The target's name.
        target: &'static str,
        /// Why (its exit status and the tail of its stderr, or a timeout).
        reason: String,
    },
    /// A target's process exited while it was in use.
    #[error("{target} exited unexpectedly: {reason}")]
    Exited {
        /// The target's name.
        target: &'static str,
        /// Its exit status and the tail of its stderr.
        reason: String,
    },
    /// A target did not stop cleanly (it had exited before, failed on
    /// SIGTERM, or had to be killed); none of its processes is left.
    #[error("{target} did not stop cleanly: {reason}")]
    Stop {
        /// The target's name.
        target: &'static str,
        /// What happened.
        reason: String,
    },
    /// One case of a capacity run failed.
    #[error("{case}: {source}")]
    Case {
        /// The case's label (`kamailio stateful`).
        case: String,
        /// What went wrong.
        #[source]
        source: Box<Error>,
    },
    /// The proxy's configuration (file or flags) is invalid.
    #[error(transparent)]
    ProxyConfig(#[from] takt_sip::config::ConfigError),
    /// A CPU idle-latency limit could not be held (root,
    /// `/dev/cpu_dma_latency`).
    #[error("--idle-latency: {0}")]
    IdleLatency(#[source] takt_sched::SchedError),
    /// The results or artefacts could not be encoded.
    #[error("encoding {what}: {source}")]
    Encode {
        /// What was being encoded.
        what: String,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// takt-measure failed: a chart could not be drawn or written.
    #[error(transparent)]
    Measure(#[from] takt_measure::error::MeasureError),
    /// SIPp misbehaved (fatal exit, no statistics, hung).
    #[error("sipp: {0}")]
    Sipp(String),
    /// SIPp could not bind its port (taken between choosing and binding
    /// it, e.g. by another program's ephemeral socket); `takt sip load`
    /// retries the run on other ports.
    #[error("sipp: {0}")]
    SippBind(String),
    /// A capacity trial's calls never reached the generator's UAS: the
    /// target does not forward to it (the diagnosis says what was seen).
    #[error("{0}")]
    NothingReachedUas(Box<crate::capacity::UasDiagnosis>),
    /// The run was interrupted (Ctrl-C); finished points are kept.
    #[error("interrupted")]
    Interrupted,
    /// The fleet's NATS side failed (connect, credentials, TLS).
    #[error("fleet: {0}")]
    Remote(#[from] takt_remote::RemoteError),
    /// The fleet could not run a trial (too few agents, an agent's own
    /// failure, the UAS agent lost).
    #[error("fleet: {0}")]
    Fleet(String),
    /// A target's control or statistics interface answered nonsense.
    #[error("{target} statistics: {reason}")]
    Stats {
        /// The target's name.
        target: &'static str,
        /// What was wrong.
        reason: String,
    },
}

/// `Error::Io` with a description, for `map_err`.
pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

/// `Error::Unknown` for `name`.
pub(crate) fn unknown(what: &'static str, name: &str, choices: &'static str) -> Error {
    Error::Unknown {
        what,
        name: name.to_string(),
        choices,
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
