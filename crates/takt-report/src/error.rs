//! The crate's one error type.

use std::path::{Path, PathBuf};

/// What can go wrong making a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A document or manifest is not the JSON it should be.
    #[error("{path}: {source}")]
    Json {
        /// The file (or directory) concerned.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A manifest that names something it may not.
    #[error("{path}: {reason}")]
    BadManifest {
        /// The manifest.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// An `--only` name that is not a stage.
    #[error("unknown stage `{0}` (machine, agents, sme, sip, capacity, remote)")]
    UnknownStage(String),
    /// A stage's process could not be started.
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The Ctrl-C handler could not be installed.
    #[error("cannot install the interrupt handler: {0}")]
    Signal(std::io::Error),
}

impl ReportError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        ReportError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn json(path: &Path, source: serde_json::Error) -> Self {
        ReportError::Json {
            path: path.to_path_buf(),
            source,
        }
    }
}
