//! The crate's one error type.

/// Why a laboratory suite failed.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A benchmark could not be set up or did not complete: a runtime
    /// refused a dispatcher, cooperation or thread, a run exceeded its
    /// deadline, or its result was wrong. `reason` is the runtime's own
    /// message.
    #[error("{suite}: {reason}")]
    Bench {
        /// The suite (`agents`, `sme`).
        suite: &'static str,
        /// What went wrong.
        reason: String,
    },
    /// An SME network failed to run in a configuration.
    #[error("sme {config}: {source}")]
    Sme {
        /// Executor and thread count.
        config: String,
        /// The executor's error (boxed: it is large).
        source: Box<takt_sme::RunError>,
    },
    /// The idle-latency limit could not be held (root, `/dev/cpu_dma_latency`).
    #[error("--idle-latency: {0}")]
    IdleLatency(#[source] takt_sched::SchedError),
    /// The run was cancelled (Ctrl-C) before it finished.
    #[error("{0}: interrupted")]
    Interrupted(&'static str),
}

impl LabError {
    /// A `Bench` error of `suite` from a runtime's message.
    pub(crate) fn bench(suite: &'static str) -> impl FnOnce(String) -> LabError {
        move |reason| LabError::Bench { suite, reason }
    }
}
