//! The error of `takt sip load` ([`crate::sip`]), which moves to
//! takt-siplab; the orchestration's is [`OrchestrationError`](crate::OrchestrationError).

/// Why a `takt sip load` run failed.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A `takt sip load` run failed.
    #[error(transparent)]
    Load(#[from] crate::sip::LoadError),
    /// The run was cancelled (Ctrl-C) before it finished.
    #[error("{0}: interrupted")]
    Interrupted(&'static str),
}
