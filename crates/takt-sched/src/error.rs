//! Errors of the thread layer.

use std::fmt;

/// What went wrong when parsing or applying a scheduling setting.
///
/// Every variant names the setting it concerns so that a message shown to a
/// user says exactly which part of `--sched`/`--cpus` the kernel refused.
#[derive(Debug, thiserror::Error)]
pub enum SchedError {
    /// A setting string could not be parsed.
    #[error("invalid scheduler setting {input:?}: {reason}")]
    Parse {
        /// The text that was given.
        input: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A CPU set string could not be parsed.
    #[error("invalid CPU set {input:?}: {reason}")]
    CpuSet {
        /// The text that was given.
        input: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The kernel refused a setting.
    #[error("kernel refused {setting}: {errno}")]
    Refused {
        /// The setting, as written on the command line (e.g. `rr:prio=10`).
        setting: String,
        /// The OS error (EPERM, EINVAL, ...).
        errno: Errno,
    },
    /// The thread could not be created.
    #[error("cannot spawn thread {name:?}: {source}")]
    Spawn {
        /// The thread's name.
        name: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The operation is not available on this platform.
    #[error("{what} is not supported on this platform (takt-sched targets Linux)")]
    Unsupported {
        /// What was attempted.
        what: &'static str,
    },
}

impl SchedError {
    /// An OS error on `setting` (an operation on a file of `/proc`, `/sys`
    /// or `/dev`) as [`SchedError::Refused`]; `EIO` when the error carries
    /// no errno.
    pub(crate) fn refused_io(setting: String, e: &std::io::Error) -> Self {
        SchedError::Refused {
            setting,
            errno: Errno(e.raw_os_error().unwrap_or(libc::EIO)),
        }
    }
}

/// An OS error number with its symbolic name, e.g. `EPERM (Operation not permitted)`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    /// The calling thread's last OS error.
    pub fn last() -> Self {
        Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }

    /// The symbolic name of the common errnos, `None` for the rest.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            libc::EPERM => "EPERM",
            libc::EINVAL => "EINVAL",
            libc::ESRCH => "ESRCH",
            libc::EBUSY => "EBUSY",
            libc::E2BIG => "E2BIG",
            libc::ENOSYS => "ENOSYS",
            libc::EAGAIN => "EAGAIN",
            libc::EFAULT => "EFAULT",
            libc::EACCES => "EACCES",
            libc::ENOENT => "ENOENT",
            libc::EIO => "EIO",
            _ => return None,
        })
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = std::io::Error::from_raw_os_error(self.0);
        match self.name() {
            Some(name) => write!(f, "{name} ({})", strip_os_suffix(&text.to_string())),
            None => write!(
                f,
                "errno {} ({})",
                self.0,
                strip_os_suffix(&text.to_string())
            ),
        }
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `io::Error`'s Display appends " (os error N)"; keep only the text.
fn strip_os_suffix(s: &str) -> &str {
    s.find(" (os error").map_or(s, |i| &s[..i])
}
