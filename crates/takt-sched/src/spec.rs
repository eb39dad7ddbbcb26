//! [`ThreadSpec`]: how a takt thread is placed and scheduled, and the one
//! place where threads are created.

use std::fmt;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::{CpuSet, SchedError, SchedPolicy};

/// Everything that decides where and how a thread runs: its name, the CPUs it
/// may use and its OS scheduling policy.
///
/// `None` fields leave the inherited setting alone. Every thread that takt's
/// runtimes create is made from a `ThreadSpec` through [`ThreadSpec::spawn`],
/// so `--cpus` and `--sched` reach all of them the same way.
///
/// ```
/// use takt_sched::ThreadSpec;
/// let spec = ThreadSpec::new("worker")
///     .with_policy("other:nice=0".parse().unwrap());
/// let t = spec.spawn(|| 6 * 7).unwrap();
/// assert_eq!(t.join().unwrap(), 42);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ThreadSpec {
    name: String,
    cpus: Option<CpuSet>,
    policy: Option<SchedPolicy>,
    reset_on_fork: bool,
}

/// Something the kernel changed while accepting a setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchedWarning {
    /// The EEVDF slice was clamped to the kernel's 0.1–100 ms range (or the
    /// kernel has no custom slices and kept its default).
    SliceClamped {
        /// What was asked for.
        requested: Duration,
        /// What the kernel reports now.
        effective: Duration,
    },
}

impl fmt::Display for SchedWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedWarning::SliceClamped {
                requested,
                effective,
            } => write!(
                f,
                "slice={} was clamped by the kernel to {} (allowed 100us..=100ms)",
                crate::policy::format_duration(*requested),
                crate::policy::format_duration(*effective)
            ),
        }
    }
}

/// The outcome of applying a [`ThreadSpec`], read back from the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// Kernel thread id of the thread the spec was applied to.
    pub tid: i32,
    /// The policy the kernel reports after the change (`None` if the spec set none).
    pub policy: Option<SchedPolicy>,
    /// The CPU set in force after the change (`None` if the spec set none).
    pub cpus: Option<CpuSet>,
    /// Values the kernel adjusted.
    pub warnings: Vec<SchedWarning>,
    /// The kernel reports `SCHED_FLAG_RESET_ON_FORK` set (see
    /// [`ThreadSpec::with_reset_on_fork`]).
    pub reset_on_fork: bool,
}

impl ThreadSpec {
    /// A spec that only names the thread.
    pub fn new(name: impl Into<String>) -> Self {
        ThreadSpec {
            name: name.into(),
            cpus: None,
            policy: None,
            reset_on_fork: false,
        }
    }

    /// Restricts the thread to `cpus`.
    pub fn with_cpus(mut self, cpus: CpuSet) -> Self {
        self.cpus = Some(cpus);
        self
    }

    /// Sets the thread's scheduling policy.
    pub fn with_policy(mut self, policy: SchedPolicy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Sets `SCHED_FLAG_RESET_ON_FORK` with the policy: whatever the thread
    /// creates — threads (through [`ThreadSpec::spawn`] or not) and
    /// processes — starts at `SCHED_OTHER` nice 0 instead of inheriting a
    /// real-time policy or a negative nice value. Only with
    /// [`with_policy`](Self::with_policy); the flag is read back.
    pub fn with_reset_on_fork(mut self) -> Self {
        self.reset_on_fork = true;
        self
    }

    /// Whether [`with_reset_on_fork`](Self::with_reset_on_fork) was asked.
    pub fn resets_on_fork(&self) -> bool {
        self.reset_on_fork
    }

    /// The same placement and policy under another name (e.g. `pool-3`).
    pub fn renamed(&self, name: impl Into<String>) -> Self {
        ThreadSpec {
            name: name.into(),
            ..self.clone()
        }
    }

    /// The same spec pinned to the `i`-th CPU of its set (wrapping), for
    /// spreading `n` workers one per CPU. Unchanged when no CPU set is given.
    pub fn pinned_nth(&self, i: usize) -> Self {
        match self.cpus.as_ref().and_then(|c| c.nth_wrapping(i)) {
            Some(cpu) => ThreadSpec {
                cpus: Some(CpuSet::single(cpu)),
                ..self.clone()
            },
            None => self.clone(),
        }
    }

    /// Builds a spec from the command-line forms of `--cpus` and `--sched`.
    pub fn from_args(
        name: impl Into<String>,
        cpus: Option<&str>,
        sched: Option<&str>,
    ) -> Result<Self, SchedError> {
        let mut spec = ThreadSpec::new(name);
        if let Some(c) = cpus {
            spec.cpus = Some(c.parse()?);
        }
        if let Some(s) = sched {
            spec.policy = Some(s.parse()?);
        }
        Ok(spec)
    }

    /// The thread name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The CPU set, if one is set.
    pub fn cpus(&self) -> Option<&CpuSet> {
        self.cpus.as_ref()
    }

    /// The policy, if one is set.
    pub fn policy(&self) -> Option<SchedPolicy> {
        self.policy
    }

    /// Applies placement and policy to the calling thread and reads them back.
    ///
    /// A refusal (EPERM, EINVAL, ...) is an error naming the setting; a value
    /// the kernel adjusted is returned as a [`SchedWarning`].
    pub fn apply_to_current(&self) -> Result<Applied, SchedError> {
        apply(self)
    }

    /// Creates a thread with this spec applied before `f` runs.
    ///
    /// Returns only after the new thread has applied the spec: if the kernel
    /// refuses it, the thread ends without running `f` and the error is
    /// returned here.
    pub fn spawn<F, T>(&self, f: F) -> Result<TaktThread<T>, SchedError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Applied, SchedError>>(1);
        let spec = self.clone();
        let handle = std::thread::Builder::new()
            .name(self.name.clone())
            .spawn(move || {
                let applied = spec.apply_to_current();
                let ok = applied.is_ok();
                // The receiver waits for exactly this message; it cannot be gone.
                let _ = tx.send(applied);
                if ok {
                    Some(f())
                } else {
                    None
                }
            })
            .map_err(|source| SchedError::Spawn {
                name: self.name.clone(),
                source,
            })?;
        match rx.recv() {
            Ok(Ok(applied)) => Ok(TaktThread { handle, applied }),
            Ok(Err(e)) => {
                let _ = handle.join();
                Err(e)
            }
            Err(_) => {
                let _ = handle.join();
                Err(SchedError::Spawn {
                    name: self.name.clone(),
                    source: std::io::Error::other("thread ended before applying its spec"),
                })
            }
        }
    }
}

impl fmt::Display for ThreadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name)?;
        if let Some(c) = &self.cpus {
            write!(f, " cpus={c}")?;
        }
        if let Some(p) = &self.policy {
            write!(f, " sched={p}")?;
        }
        if self.reset_on_fork {
            write!(f, " reset-on-fork")?;
        }
        Ok(())
    }
}

/// A thread created by [`ThreadSpec::spawn`].
#[derive(Debug)]
pub struct TaktThread<T> {
    handle: JoinHandle<Option<T>>,
    applied: Applied,
}

impl<T> TaktThread<T> {
    /// What the kernel accepted for this thread.
    pub fn applied(&self) -> &Applied {
        &self.applied
    }

    /// The kernel thread id (for `/proc/self/task/<tid>`).
    pub fn tid(&self) -> i32 {
        self.applied.tid
    }

    /// The std handle, e.g. for `thread().unpark()`.
    pub fn thread(&self) -> &std::thread::Thread {
        self.handle.thread()
    }

    /// Whether the thread has finished.
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Waits for the thread; `Err` carries the panic payload if it panicked.
    pub fn join(self) -> std::thread::Result<T> {
        self.handle
            .join()
            // `spawn` returned this handle only after the spec was applied,
            // and then the closure always runs `f`.
            .map(|r| r.expect("spec applied, so the closure ran"))
    }
}

#[cfg(target_os = "linux")]
fn apply(spec: &ThreadSpec) -> Result<Applied, SchedError> {
    use crate::sys::{sched_getattr, sched_setattr, set_affinity};
    let tid = crate::sys::gettid();
    let mut warnings = Vec::new();
    let mut cpus_after = None;
    if let Some(cpus) = &spec.cpus {
        set_affinity(0, cpus).map_err(|errno| SchedError::Refused {
            setting: format!("cpus={cpus}"),
            errno,
        })?;
        cpus_after = Some(crate::sys::get_affinity()?);
    }
    let mut policy_after = None;
    let mut reset_after = false;
    if let Some(policy) = spec.policy {
        let mut attr = attr_of(policy);
        if spec.reset_on_fork {
            attr.sched_flags |= crate::sys::SCHED_FLAG_RESET_ON_FORK;
        }
        sched_setattr(0, &attr).map_err(|errno| SchedError::Refused {
            setting: policy.to_string(),
            errno,
        })?;
        let got = sched_getattr(0).map_err(|errno| SchedError::Refused {
            setting: format!("{policy} (reading it back)"),
            errno,
        })?;
        let effective = policy_from_attr(&got, policy);
        if let (
            SchedPolicy::Other {
                slice: Some(req), ..
            },
            SchedPolicy::Other { slice: eff, .. },
        ) = (policy, effective)
        {
            let eff = eff.unwrap_or_default();
            if eff != req {
                warnings.push(SchedWarning::SliceClamped {
                    requested: req,
                    effective: eff,
                });
            }
        }
        if effective.keyword() != policy.keyword() {
            return Err(SchedError::Refused {
                setting: format!("{policy} (kernel reports {effective})"),
                errno: crate::Errno(libc::EINVAL),
            });
        }
        reset_after = got.sched_flags & crate::sys::SCHED_FLAG_RESET_ON_FORK != 0;
        if spec.reset_on_fork && !reset_after {
            return Err(SchedError::Refused {
                setting: format!("{policy} with reset-on-fork (the kernel reports the flag clear)"),
                errno: crate::Errno(libc::EINVAL),
            });
        }
        policy_after = Some(effective);
    }
    Ok(Applied {
        tid,
        policy: policy_after,
        cpus: cpus_after,
        warnings,
        reset_on_fork: reset_after,
    })
}

/// The `sched_attr` that sets `policy` (a custom slice through
/// `sched_runtime`; no slice means the kernel default).
#[cfg(target_os = "linux")]
pub(crate) fn attr_of(policy: SchedPolicy) -> crate::sys::SchedAttr {
    let mut attr = crate::sys::SchedAttr {
        size: crate::sys::SCHED_ATTR_SIZE,
        ..Default::default()
    };
    match policy {
        SchedPolicy::Other { nice, slice } => {
            attr.sched_policy = libc::SCHED_OTHER as u32;
            attr.sched_nice = nice.into();
            attr.sched_runtime = slice.map_or(0, |s| s.as_nanos().min(u64::MAX as u128) as u64);
        }
        SchedPolicy::Batch { nice } => {
            attr.sched_policy = libc::SCHED_BATCH as u32;
            attr.sched_nice = nice.into();
        }
        SchedPolicy::Idle => attr.sched_policy = libc::SCHED_IDLE as u32,
        SchedPolicy::Fifo { prio } => {
            attr.sched_policy = libc::SCHED_FIFO as u32;
            attr.sched_priority = prio.into();
        }
        SchedPolicy::Rr { prio } => {
            attr.sched_policy = libc::SCHED_RR as u32;
            attr.sched_priority = prio.into();
        }
    }
    attr
}

/// Converts what `sched_getattr` reports back into a policy. `asked` decides
/// whether a custom slice is reported: the kernel always reports a slice, and
/// only one that was asked for is meaningful to compare.
#[cfg(target_os = "linux")]
pub(crate) fn policy_from_attr(attr: &crate::sys::SchedAttr, asked: SchedPolicy) -> SchedPolicy {
    let nice = attr.sched_nice.clamp(-20, 19) as i8;
    let prio = attr.sched_priority.min(99) as u8;
    match attr.sched_policy as i32 {
        libc::SCHED_BATCH => SchedPolicy::Batch { nice },
        libc::SCHED_IDLE => SchedPolicy::Idle,
        libc::SCHED_FIFO => SchedPolicy::Fifo { prio },
        libc::SCHED_RR => SchedPolicy::Rr { prio },
        _ => SchedPolicy::Other {
            nice,
            slice: match asked {
                SchedPolicy::Other { slice: Some(_), .. } => {
                    Some(Duration::from_nanos(attr.sched_runtime))
                }
                _ => None,
            },
        },
    }
}

/// Reads the calling thread's current policy from the kernel.
pub fn current_policy() -> Result<SchedPolicy, SchedError> {
    #[cfg(target_os = "linux")]
    {
        let got = crate::sys::sched_getattr(0).map_err(|errno| SchedError::Refused {
            setting: "sched_getattr".into(),
            errno,
        })?;
        Ok(policy_from_attr(&got, SchedPolicy::DEFAULT))
    }
    #[cfg(not(target_os = "linux"))]
    Err(SchedError::Unsupported {
        what: "scheduling policies",
    })
}

#[cfg(not(target_os = "linux"))]
fn apply(spec: &ThreadSpec) -> Result<Applied, SchedError> {
    if spec.cpus.is_some() || spec.policy.is_some() {
        return Err(SchedError::Unsupported {
            what: "thread placement and scheduling policies",
        });
    }
    Ok(Applied {
        tid: 0,
        policy: None,
        cpus: None,
        warnings: Vec::new(),
        reset_on_fork: false,
    })
}
