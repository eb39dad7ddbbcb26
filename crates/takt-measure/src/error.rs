//! The crate's one error type.

use crate::cancel::Signal;

/// What can go wrong running and printing a suite.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// The suite failed; its own error, typed by its crate.
    #[error(transparent)]
    Suite(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The run was cancelled (a signal, or its token) before it produced
    /// a document.
    #[error("{suite}: interrupted{}", signal.map(|s| format!(" by {s}")).unwrap_or_default())]
    Interrupted {
        /// The suite that was running.
        suite: String,
        /// The signal that cancelled it, if one did.
        signal: Option<Signal>,
    },
    /// The signal handlers could not be installed.
    #[error("installing the signal handlers: {0}")]
    Signal(String),
    /// The results could not be written.
    #[error("writing the results: {0}")]
    Output(#[from] std::io::Error),
    /// A chart could not be drawn (no drawable point, a layout error).
    #[error("chart {chart}: {reason}")]
    Chart {
        /// The chart's title (or its axes).
        chart: String,
        /// What went wrong.
        reason: String,
    },
    /// A file could not be written.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

impl MeasureError {
    /// The exit status for a command that ended with this error: `128 + N`
    /// for a run interrupted by signal N, 130 for one cancelled otherwise,
    /// 1 for any other failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            MeasureError::Interrupted { signal, .. } => {
                signal.unwrap_or(Signal::Interrupt).exit_code()
            }
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interruptions_map_to_128_plus_the_signal() {
        let by = |signal| MeasureError::Interrupted {
            suite: "agents".into(),
            signal,
        };
        assert_eq!(by(Some(Signal::Terminate)).exit_code(), 143);
        assert_eq!(by(Some(Signal::Hangup)).exit_code(), 129);
        assert_eq!(by(None).exit_code(), 130);
        assert_eq!(
            by(Some(Signal::Interrupt)).to_string(),
            "agents: interrupted by SIGINT"
        );
        assert_eq!(by(None).to_string(), "agents: interrupted");
        assert_eq!(MeasureError::Signal("x".into()).exit_code(), 1);
    }
}
