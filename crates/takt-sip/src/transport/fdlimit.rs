//! The process's open-file limit (`RLIMIT_NOFILE`), raised to what the
//! configuration needs.
//!
//! Every TCP connection is a file descriptor; the usual soft limit (1,024)
//! is far below a configured connection limit of thousands, and a process
//! that runs out gets `EMFILE` from `accept` while the connection waits in
//! the listen queue. The soft limit may be raised by any process up to its
//! hard limit; [`raise`] does that and reports where it ended, so the
//! caller can warn when the hard limit is too low.

use std::io;

/// The open-file limit after [`raise`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdLimit {
    /// Descriptors the configuration needs.
    pub needed: u64,
    /// The soft limit now.
    pub soft: u64,
    /// The most the soft limit may become: the hard limit, or the
    /// kernel's `fs.nr_open` when lower.
    pub hard: u64,
}

impl FdLimit {
    /// Whether the soft limit covers what is needed.
    pub fn sufficient(&self) -> bool {
        self.soft >= self.needed
    }
}

fn get() -> io::Result<libc::rlimit> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid rlimit for the kernel to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r)
}

/// Raises the soft `RLIMIT_NOFILE` to `needed` (never lowers it, never
/// above the hard limit) and returns the limits now.
pub fn raise(needed: u64) -> io::Result<FdLimit> {
    let r = get()?;
    // the kernel refuses a soft limit above fs.nr_open, even under an
    // unlimited hard one
    let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(u64::MAX);
    let want = needed.min(r.rlim_max).min(nr_open);
    if want > r.rlim_cur {
        let n = libc::rlimit {
            rlim_cur: want,
            rlim_max: r.rlim_max,
        };
        // SAFETY: `n` is a valid rlimit; the soft value is at most the hard one.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &n) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    let r = get()?;
    Ok(FdLimit {
        needed,
        soft: r.rlim_cur,
        hard: r.rlim_max.min(nr_open),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raises_up_to_the_hard_limit_and_never_lowers() {
        let before = get().unwrap();
        let l = raise(0).unwrap();
        assert_eq!(l.soft, before.rlim_cur);
        assert!(l.sufficient());
        let l = raise(u64::MAX).unwrap();
        assert_eq!(l.soft, l.hard);
        assert!(!l.sufficient());
        assert!(raise(l.hard).unwrap().sufficient());
    }
}
