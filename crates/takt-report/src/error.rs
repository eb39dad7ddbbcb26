//! The crate's one error type.

use std::path::{Path, PathBuf};

/// What can go wrong writing or reading a report directory.
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
