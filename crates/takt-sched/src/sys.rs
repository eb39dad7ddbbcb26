//! Thin wrappers over the Linux system calls the thread layer needs.
//!
//! Everything OS-specific lives here; on other platforms each call returns
//! [`SchedError::Unsupported`] so the rest of the crate still builds.

use crate::{CpuSet, SchedError};

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use crate::Errno;

    /// `struct sched_attr` as of Linux 4.13 (`SCHED_ATTR_SIZE_VER1`, 56 bytes).
    #[repr(C)]
    #[derive(Debug, Default, Clone, Copy)]
    pub(crate) struct SchedAttr {
        pub size: u32,
        pub sched_policy: u32,
        pub sched_flags: u64,
        pub sched_nice: i32,
        pub sched_priority: u32,
        pub sched_runtime: u64,
        pub sched_deadline: u64,
        pub sched_period: u64,
        pub sched_util_min: u32,
        pub sched_util_max: u32,
    }

    pub(crate) const SCHED_ATTR_SIZE: u32 = std::mem::size_of::<SchedAttr>() as u32;

    /// `sched_attr.sched_flags`: children start at the default policy.
    pub(crate) const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;

    /// The kernel thread id of the calling thread.
    pub fn gettid() -> i32 {
        // SAFETY: gettid has no preconditions and cannot fail.
        unsafe { libc::gettid() }
    }

    pub(crate) fn sched_setattr(tid: i32, attr: &SchedAttr) -> Result<(), Errno> {
        // SAFETY: `attr` points to a valid, initialized SchedAttr whose `size`
        // field the caller set to SCHED_ATTR_SIZE; the kernel only reads it.
        let r = unsafe {
            libc::syscall(
                libc::SYS_sched_setattr,
                tid as libc::c_long,
                attr as *const SchedAttr,
                0 as libc::c_uint,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(Errno::last())
        }
    }

    pub(crate) fn sched_getattr(tid: i32) -> Result<SchedAttr, Errno> {
        let mut attr = SchedAttr::default();
        // SAFETY: `attr` is a writable SchedAttr of SCHED_ATTR_SIZE bytes and we
        // pass that size, so the kernel writes within it.
        let r = unsafe {
            libc::syscall(
                libc::SYS_sched_getattr,
                tid as libc::c_long,
                &mut attr as *mut SchedAttr,
                SCHED_ATTR_SIZE as libc::c_uint,
                0 as libc::c_uint,
            )
        };
        if r == 0 {
            Ok(attr)
        } else {
            Err(Errno::last())
        }
    }

    pub(crate) fn set_affinity(tid: i32, cpus: &CpuSet) -> Result<(), Errno> {
        let words = cpus.words();
        // SAFETY: the kernel reads `size_of_val(words)` bytes from `words`,
        // which is exactly the array's size.
        let r = unsafe {
            libc::syscall(
                libc::SYS_sched_setaffinity,
                tid as libc::c_long,
                std::mem::size_of_val(words),
                words.as_ptr(),
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(Errno::last())
        }
    }

    /// The CPUs the calling thread may run on.
    pub fn get_affinity() -> Result<CpuSet, SchedError> {
        let mut words = [0u64; crate::cpuset::MAX_CPUS / 64];
        // SAFETY: the kernel writes at most `size_of_val(&words)` bytes into `words`.
        let r = unsafe {
            libc::syscall(
                libc::SYS_sched_getaffinity,
                0 as libc::c_long,
                std::mem::size_of_val(&words),
                words.as_mut_ptr(),
            )
        };
        if r < 0 {
            return Err(SchedError::Refused {
                setting: "sched_getaffinity".into(),
                errno: Errno::last(),
            });
        }
        Ok(CpuSet::from_words(words))
    }
}

#[cfg(target_os = "linux")]
pub use linux::{get_affinity, gettid};
#[cfg(target_os = "linux")]
pub(crate) use linux::{
    sched_getattr, sched_setattr, set_affinity, SchedAttr, SCHED_ATTR_SIZE,
    SCHED_FLAG_RESET_ON_FORK,
};

/// Restricts the calling thread to `cpus`. Threads and processes it
/// creates afterwards inherit the set, which is how a child process is
/// placed before its first instruction; it allocates nothing unless the
/// kernel refuses. Threads made by [`crate::ThreadSpec`] are placed by
/// their spec instead.
///
/// A set the kernel refuses is [`SchedError::Refused`] naming it
/// (`cpus=…`), as when a spec's placement is refused.
#[cfg(target_os = "linux")]
pub fn pin_calling_thread(cpus: &CpuSet) -> Result<(), SchedError> {
    set_affinity(0, cpus).map_err(|errno| SchedError::Refused {
        setting: format!("cpus={cpus}"),
        errno,
    })
}

/// Restricts the calling thread to `cpus` (unsupported here).
#[cfg(not(target_os = "linux"))]
pub fn pin_calling_thread(_cpus: &CpuSet) -> Result<(), SchedError> {
    Err(SchedError::Unsupported {
        what: "thread placement",
    })
}

/// The kernel thread id of the calling thread (0 where unsupported).
#[cfg(not(target_os = "linux"))]
pub fn gettid() -> i32 {
    0
}

/// The CPUs the calling thread may run on.
#[cfg(not(target_os = "linux"))]
pub fn get_affinity() -> Result<CpuSet, SchedError> {
    Err(SchedError::Unsupported {
        what: "CPU affinity",
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn pinning_the_calling_thread_reads_back() {
        std::thread::spawn(|| {
            let all = get_affinity().unwrap();
            let first = all.iter().next().unwrap();
            pin_calling_thread(&CpuSet::single(first)).unwrap();
            assert_eq!(get_affinity().unwrap(), CpuSet::single(first));
            // a CPU the machine does not have is refused, not ignored
            let e = pin_calling_thread(&CpuSet::single(crate::MAX_CPUS - 1)).unwrap_err();
            let want = format!("cpus={}", crate::MAX_CPUS - 1);
            assert!(
                matches!(&e, SchedError::Refused { setting, errno }
                    if *setting == want && *errno == crate::Errno(libc::EINVAL)),
                "{e:?}"
            );
        })
        .join()
        .unwrap();
    }
}
