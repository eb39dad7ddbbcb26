//! The crate's one error type.

use takt_sched::SchedPolicy;

/// Why a laboratory run failed.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A `takt sip load` run failed.
    #[error(transparent)]
    Load(#[from] crate::sip::LoadError),
    /// A scheduler setting could not be applied or read (`takt sched`).
    #[error(transparent)]
    Sched(takt_sched::SchedError),
    /// A policy applied to a process's threads is not what some of them
    /// report (`takt sched --pid`).
    #[error("{threads} thread(s) of pid {pid} do not report {policy} (see the table)")]
    NotApplied {
        /// How many threads differ.
        threads: usize,
        /// The process.
        pid: i32,
        /// The policy applied.
        policy: SchedPolicy,
    },
    /// A thread of the laboratory panicked.
    #[error("{0} thread panicked")]
    Panicked(&'static str),
    /// The output could not be written.
    #[error("writing the output: {0}")]
    Output(#[from] std::io::Error),
    /// The run was cancelled (Ctrl-C) before it finished.
    #[error("{0}: interrupted")]
    Interrupted(&'static str),
}
