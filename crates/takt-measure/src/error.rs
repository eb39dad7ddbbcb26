//! The crate's one error type.

/// What can go wrong running and printing a suite.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// The suite failed; its own error, typed by its crate.
    #[error(transparent)]
    Suite(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The run was cancelled (Ctrl-C) before it produced a document.
    #[error("{suite}: interrupted")]
    Interrupted {
        /// The suite that was running.
        suite: String,
    },
    /// The Ctrl-C handler could not be installed (another one is set).
    #[error("installing the Ctrl-C handler: {0}")]
    Signal(String),
    /// The results could not be written.
    #[error("writing the results: {0}")]
    Output(#[from] std::io::Error),
}
