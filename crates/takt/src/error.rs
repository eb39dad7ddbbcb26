//! Why a command failed, in the form `main` maps to an exit status.

use std::fmt;

use takt_measure::cancel;
use takt_measure::error::MeasureError;

/// A command's failure: a measuring command's error (an interruption
/// among them), or a message.
#[derive(Debug)]
pub enum CmdError {
    /// A suite run through `takt_measure::suite::run_command` failed or
    /// was interrupted by a signal.
    Measure(MeasureError),
    /// A laboratory call outside a suite failed (`takt sched`).
    Lab(takt_lab::OrchestrationError),
    /// The answering node of `takt bench remote` (its child process) failed.
    Remote(takt_bench_remote::RemoteBenchError),
    /// A SIP laboratory command failed outside its suite (its flags
    /// resolved to nothing runnable, the proxy or the relay failed).
    Sip(takt_siplab::Error),
    /// The command failed; what `main` prints.
    Failed(String),
}

impl CmdError {
    /// The process's exit status for this error: 128 + N for a run that
    /// signal N interrupted (130 for Ctrl-C), else 128 + N if a signal
    /// arrived while the command failed, else 1.
    pub fn exit_code(&self) -> i32 {
        match self {
            CmdError::Measure(e @ MeasureError::Interrupted { .. }) => e.exit_code(),
            _ => cancel::received().map_or(1, |s| s.exit_code()),
        }
    }
}

impl fmt::Display for CmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CmdError::Measure(e) => write!(f, "{e}"),
            CmdError::Lab(e) => write!(f, "{e}"),
            CmdError::Remote(e) => write!(f, "{e}"),
            CmdError::Sip(e) => write!(f, "{e}"),
            CmdError::Failed(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for CmdError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CmdError::Measure(e) => Some(e),
            CmdError::Lab(e) => Some(e),
            CmdError::Remote(e) => Some(e),
            CmdError::Sip(e) => Some(e),
            CmdError::Failed(_) => None,
        }
    }
}

/// For a command whose functions still return their failure as text: the
/// message, while the exit status of an interrupted run still comes out
/// right, from the signal the process received (see
/// [`CmdError::exit_code`]).
impl From<CmdError> for String {
    fn from(e: CmdError) -> String {
        e.to_string()
    }
}

impl From<takt_lab::OrchestrationError> for CmdError {
    fn from(e: takt_lab::OrchestrationError) -> Self {
        CmdError::Lab(e)
    }
}

impl From<takt_bench_remote::RemoteBenchError> for CmdError {
    fn from(e: takt_bench_remote::RemoteBenchError) -> Self {
        CmdError::Remote(e)
    }
}

impl From<takt_siplab::Error> for CmdError {
    fn from(e: takt_siplab::Error) -> Self {
        CmdError::Sip(e)
    }
}

impl From<MeasureError> for CmdError {
    fn from(e: MeasureError) -> Self {
        CmdError::Measure(e)
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
