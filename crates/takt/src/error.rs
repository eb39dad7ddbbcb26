//! Why a command failed, in the form `main` maps to an exit status.

use std::fmt;

use takt_measure::cancel;
use takt_measure::error::MeasureError;

/// A command's failure: a library's error (an interruption among them), a
/// usage error found after parsing, or a message.
#[derive(Debug)]
pub enum CmdError {
    /// Flags that parse but do not fit together (found once the command
    /// resolves them): clap's error, printed with the usage line, status 2.
    Usage(clap::Error),
    /// A suite run through `takt_measure::suite::run_command` failed or
    /// was interrupted by a signal.
    Measure(MeasureError),
    /// A laboratory call outside a suite failed: `takt report`, `takt
    /// runs`, `takt sched`, or storing a run for `--record`.
    Lab(takt_lab::OrchestrationError),
    /// `takt machine` failed or a signal interrupted it.
    Machine(takt_machine::MachineError),
    /// The answering node of `takt bench remote` (its child process) failed.
    Remote(takt_bench_remote::RemoteBenchError),
    /// A SIP laboratory command failed outside its suite (its flags
    /// resolved to nothing runnable, the proxy or the relay failed).
    Sip(takt_siplab::Error),
    /// The command failed; what `main` prints.
    Failed(String),
}

impl CmdError {
    /// The process's exit status for this error: 2 for a usage error,
    /// 128 + N for a run that signal N interrupted (130 for Ctrl-C), else
    /// 128 + N if a signal arrived while the command failed, else 1.
    pub fn exit_code(&self) -> i32 {
        match self {
            CmdError::Usage(e) => e.exit_code(),
            CmdError::Measure(e @ MeasureError::Interrupted { .. })
            | CmdError::Lab(takt_lab::OrchestrationError::Signal(
                e @ MeasureError::Interrupted { .. },
            ))
            | CmdError::Machine(takt_machine::MachineError::Measure(
                e @ MeasureError::Interrupted { .. },
            )) => e.exit_code(),
            CmdError::Machine(takt_machine::MachineError::Interrupted(signal)) => 128 + signal,
            _ => cancel::received().map_or(1, |s| s.exit_code()),
        }
    }
}

impl fmt::Display for CmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CmdError::Usage(e) => write!(f, "{e}"),
            CmdError::Measure(e) => write!(f, "{e}"),
            CmdError::Lab(e) => write!(f, "{e}"),
            CmdError::Machine(e) => write!(f, "{e}"),
            CmdError::Remote(e) => write!(f, "{e}"),
            CmdError::Sip(e) => write!(f, "{e}"),
            CmdError::Failed(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for CmdError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CmdError::Usage(e) => Some(e),
            CmdError::Measure(e) => Some(e),
            CmdError::Lab(e) => Some(e),
            CmdError::Machine(e) => Some(e),
            CmdError::Remote(e) => Some(e),
            CmdError::Sip(e) => Some(e),
            CmdError::Failed(_) => None,
        }
    }
}

impl From<takt_lab::OrchestrationError> for CmdError {
    fn from(e: takt_lab::OrchestrationError) -> Self {
        CmdError::Lab(e)
    }
}

impl From<takt_machine::MachineError> for CmdError {
    fn from(e: takt_machine::MachineError) -> Self {
        CmdError::Machine(e)
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
