//! Why a command failed, in the form `main` maps to an exit status.

use std::fmt;

use takt_measure::error::MeasureError;

/// SIGINT's number: an interrupted run exits with 128 + it, as the shell
/// reports a process the signal ended.
const SIGINT: i32 = 2;

/// A command's failure: interrupted by a signal, or failed with a message.
#[derive(Debug)]
pub enum CmdError {
    /// The run was interrupted by `signal` (Ctrl-C: SIGINT) and stopped
    /// cleanly; the message says what was interrupted.
    Interrupted {
        /// What `main` prints.
        message: String,
        /// The signal's number.
        signal: i32,
    },
    /// The command failed; what `main` prints.
    Failed(String),
}

impl CmdError {
    /// The process's exit status for this error: 128 + the signal for an
    /// interruption, 1 for a failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            CmdError::Interrupted { signal, .. } => 128 + signal,
            CmdError::Failed(_) => 1,
        }
    }
}

impl fmt::Display for CmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CmdError::Interrupted { message, .. } | CmdError::Failed(message) => {
                f.write_str(message)
            }
        }
    }
}

impl std::error::Error for CmdError {}

impl From<MeasureError> for CmdError {
    fn from(e: MeasureError) -> Self {
        match e {
            MeasureError::Interrupted { .. } => CmdError::Interrupted {
                message: e.to_string(),
                signal: SIGINT,
            },
            e => CmdError::Failed(e.to_string()),
        }
    }
}

impl From<String> for CmdError {
    fn from(message: String) -> Self {
        CmdError::Failed(message)
    }
}

impl From<&str> for CmdError {
    fn from(message: &str) -> Self {
        CmdError::Failed(message.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupted_run_exits_130_and_a_failure_1() {
        let e = CmdError::from(MeasureError::Interrupted {
            suite: "agents".into(),
        });
        assert_eq!(e.exit_code(), 130);
        assert_eq!(e.to_string(), "agents: interrupted");
        assert_eq!(CmdError::from("no").exit_code(), 1);
        let e = CmdError::from(MeasureError::Signal("taken".into()));
        assert_eq!(e.exit_code(), 1);
    }
}
