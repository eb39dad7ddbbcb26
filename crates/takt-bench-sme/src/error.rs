//! The crate's one error type.

use takt_sme::ExecutorKind;

/// Why `takt bench sme` failed.
#[derive(Debug, thiserror::Error)]
pub enum SmeError {
    /// An SME network failed to run on an executor.
    #[error("sme {kind} x{threads}: {source}")]
    Run {
        /// The executor.
        kind: ExecutorKind,
        /// Its thread count.
        threads: usize,
        /// The executor's error (boxed: it is large).
        source: Box<takt_sme::RunError>,
    },
    /// A ring did not count the cycles it ran: the executor computed a
    /// wrong result.
    #[error("sme: {kind} x{threads}: ring value {value} after {cycles} cycles")]
    WrongCount {
        /// The executor.
        kind: ExecutorKind,
        /// Its thread count.
        threads: usize,
        /// What process 0 held.
        value: i64,
        /// The cycles run, which it should have held.
        cycles: u64,
    },
    /// The run was cancelled (Ctrl-C) before it finished.
    #[error("sme: interrupted")]
    Interrupted,
}
