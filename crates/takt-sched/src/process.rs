//! Scheduler settings of *another* process: apply a [`SchedPolicy`] to
//! every thread of a running process and read each back (`takt sched
//! --pid`), or only read them.
//!
//! # Contract
//! 1. The threads are listed from `/proc/PID/task`; each gets
//!    `sched_setattr(tid, …)` — for `SCHED_OTHER` with the EEVDF custom
//!    slice in `sched_runtime` (no slice resets the thread to the kernel
//!    default) — and is read back with `sched_getattr`.
//! 2. The list is read again after the pass; threads born meanwhile are
//!    handled too, up to [`MAX_PASSES`] passes (threads a thread creates
//!    after it was set inherit its setting anyway).
//! 3. A thread that exits between the listing and its turn (`ESRCH`) is
//!    not an error: it is counted in [`ProcessSched::vanished`].
//! 4. A refusal (`EPERM` without `CAP_SYS_NICE` for another user's
//!    process or a real-time policy, `EINVAL`) is an error naming the
//!    setting, the thread and the errno; threads set before it keep their
//!    new setting (the error says how many).
//! 5. A process that does not exist is [`SchedError::Refused`] with
//!    `ESRCH`.
//!
//! What is read back is the kernel's view: the policy, nice or priority,
//! and for the fair policies the slice in force (`sched_runtime` of
//! `sched_getattr`: the custom slice if one is set, else the default).

use std::time::Duration;

use crate::{Errno, SchedError, SchedPolicy, SchedWarning};

/// How many times the thread list is re-read for threads born meanwhile.
pub const MAX_PASSES: usize = 3;

/// One thread's scheduling as the kernel reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSched {
    /// The policy, with nice or priority (the `slice` of `Other` is the
    /// one asked for when the policy was just applied with one, else `None`).
    pub policy: SchedPolicy,
    /// The slice in force for `SCHED_OTHER`/`SCHED_BATCH`/`SCHED_IDLE`
    /// threads (`sched_runtime`); `None` for real-time policies.
    pub slice: Option<Duration>,
}

/// One thread of a process: its setting before and after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadSched {
    /// Kernel thread id.
    pub tid: i32,
    /// Its name (`/proc/PID/task/TID/comm`), empty if it could not be read.
    pub name: String,
    /// The setting before (equal to `after` when only reading).
    pub before: KernelSched,
    /// The setting now.
    pub after: KernelSched,
    /// What the kernel adjusted (a clamped slice).
    pub warnings: Vec<SchedWarning>,
}

/// Every thread of a process, after applying or reading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessSched {
    /// The process.
    pub pid: i32,
    /// What was applied (`None`: only read).
    pub applied: Option<SchedPolicy>,
    /// Its threads, by tid.
    pub threads: Vec<ThreadSched>,
    /// Threads that exited between being listed and being set or read.
    pub vanished: usize,
}

impl ProcessSched {
    /// Whether every thread reports `policy`'s class, nice/priority and
    /// (when it sets one) slice.
    pub fn all_match(&self, policy: SchedPolicy) -> bool {
        self.threads.iter().all(|t| matches(&t.after, policy))
    }
}

/// Whether `got` is what `want` asks for (a clamped slice counts as a
/// mismatch).
pub fn matches(got: &KernelSched, want: SchedPolicy) -> bool {
    match (got.policy, want) {
        (SchedPolicy::Other { nice: a, .. }, SchedPolicy::Other { nice: b, slice }) => {
            a == b && slice.is_none_or(|s| got.slice == Some(s))
        }
        (a, b) => a == b,
    }
}

/// Applies `policy` to every thread of process `pid` and reads each back
/// (see the module docs for the contract).
pub fn apply_to_process(pid: i32, policy: SchedPolicy) -> Result<ProcessSched, SchedError> {
    visit(pid, Some(policy))
}

/// Reads the scheduling of every thread of process `pid`.
pub fn read_process(pid: i32) -> Result<ProcessSched, SchedError> {
    visit(pid, None)
}

/// The thread ids of process `pid`, ascending.
pub fn process_threads(pid: i32) -> Result<Vec<i32>, SchedError> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).map_err(|e| SchedError::Refused {
        setting: format!("listing the threads of pid {pid} (/proc/{pid}/task)"),
        errno: Errno(match e.raw_os_error() {
            Some(libc::ENOENT) | None => libc::ESRCH,
            Some(n) => n,
        }),
    })?;
    let mut tids: Vec<i32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

fn thread_name(pid: i32, tid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default()
}

#[cfg(target_os = "linux")]
fn visit(pid: i32, policy: Option<SchedPolicy>) -> Result<ProcessSched, SchedError> {
    let mut out = ProcessSched {
        pid,
        applied: policy,
        threads: Vec::new(),
        vanished: 0,
    };
    let mut seen = std::collections::HashSet::new();
    for _ in 0..MAX_PASSES {
        let fresh: Vec<i32> = process_threads(pid)?
            .into_iter()
            .filter(|t| !seen.contains(t))
            .collect();
        if fresh.is_empty() {
            break;
        }
        for tid in fresh {
            seen.insert(tid);
            match one(pid, tid, policy, out.threads.len()) {
                Ok(Some(t)) => out.threads.push(t),
                Ok(None) => out.vanished += 1,
                Err(e) => return Err(e),
            }
        }
    }
    if out.threads.is_empty() {
        return Err(SchedError::Refused {
            setting: format!("the threads of pid {pid} (all exited)"),
            errno: Errno(libc::ESRCH),
        });
    }
    out.threads.sort_by_key(|t| t.tid);
    Ok(out)
}

/// Reads (and with `policy`, first sets) one thread; `Ok(None)` if it is gone.
#[cfg(target_os = "linux")]
fn one(
    pid: i32,
    tid: i32,
    policy: Option<SchedPolicy>,
    done: usize,
) -> Result<Option<ThreadSched>, SchedError> {
    use crate::spec::{attr_of, policy_from_attr};
    use crate::sys::{sched_getattr, sched_setattr};
    let gone = |e: Errno| e.0 == libc::ESRCH;
    let read = |asked: SchedPolicy| -> Result<Option<KernelSched>, Errno> {
        match sched_getattr(tid) {
            Ok(a) => {
                let p = policy_from_attr(&a, asked);
                Ok(Some(KernelSched {
                    policy: p,
                    slice: (!p.is_realtime()).then(|| Duration::from_nanos(a.sched_runtime)),
                }))
            }
            Err(e) if gone(e) => Ok(None),
            Err(e) => Err(e),
        }
    };
    let name = thread_name(pid, tid);
    let refused = |what: String, errno: Errno| SchedError::Refused {
        setting: format!(
            "{what} for thread {tid} ({name}) of pid {pid}{}",
            if done > 0 && policy.is_some() {
                format!("; {done} thread(s) before it were already set")
            } else {
                String::new()
            }
        ),
        errno,
    };
    let Some(before) =
        read(SchedPolicy::DEFAULT).map_err(|e| refused("sched_getattr".into(), e))?
    else {
        return Ok(None);
    };
    let Some(policy) = policy else {
        return Ok(Some(ThreadSched {
            tid,
            name,
            before,
            after: before,
            warnings: Vec::new(),
        }));
    };
    match sched_setattr(tid, &attr_of(policy)) {
        Ok(()) => {}
        Err(e) if gone(e) => return Ok(None),
        Err(e) => return Err(refused(policy.to_string(), e)),
    }
    let Some(after) =
        read(policy).map_err(|e| refused(format!("{policy} (reading it back)"), e))?
    else {
        return Ok(None);
    };
    if after.policy.keyword() != policy.keyword() {
        return Err(refused(
            format!("{policy} (kernel reports {})", after.policy),
            Errno(libc::EINVAL),
        ));
    }
    let mut warnings = Vec::new();
    if let SchedPolicy::Other {
        slice: Some(req), ..
    } = policy
    {
        let eff = after.slice.unwrap_or_default();
        if eff != req {
            warnings.push(SchedWarning::SliceClamped {
                requested: req,
                effective: eff,
            });
        }
    }
    Ok(Some(ThreadSched {
        tid,
        name,
        before,
        after,
        warnings,
    }))
}

#[cfg(not(target_os = "linux"))]
fn visit(_pid: i32, _policy: Option<SchedPolicy>) -> Result<ProcessSched, SchedError> {
    Err(SchedError::Unsupported {
        what: "scheduling policies of other processes",
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::process::{Child, Command, Stdio};
    use std::time::Instant;

    /// Threads the helper child keeps alive.
    const CHILD_THREADS: usize = 4;
    const CHILD_ENV: &str = "TAKT_SCHED_PROCESS_TEST_CHILD";

    /// Not a test of its own: when the parent test re-runs this binary
    /// with [`CHILD_ENV`] set, this becomes the multi-threaded child
    /// (it sleeps until killed, at most a minute).
    #[test]
    fn child_helper() {
        let Some(mode) = std::env::var_os(CHILD_ENV) else {
            return;
        };
        if mode == "refuse" {
            // SAFETY: plain system calls without memory arguments.
            unsafe {
                if libc::geteuid() == 0 {
                    assert_eq!(libc::setgid(65534), 0);
                    assert_eq!(libc::setuid(65534), 0);
                }
            }
            // SAFETY: getppid has no preconditions.
            let parent = unsafe { libc::getppid() };
            let nice: SchedPolicy = "other:nice=-5".parse().unwrap();
            match apply_to_process(parent, nice) {
                Ok(p) => println!("APPLIED: {p:?}"),
                Err(e) => println!("REFUSED: {e}"),
            }
            return;
        }
        let hs: Vec<_> = (0..CHILD_THREADS)
            .map(|i| {
                std::thread::Builder::new()
                    .name(format!("child-{i}"))
                    .spawn(|| std::thread::sleep(Duration::from_secs(60)))
                    .unwrap()
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    }

    struct Kid(Child);
    impl Drop for Kid {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn spawn_child() -> Kid {
        let exe = std::env::current_exe().unwrap();
        let child = Command::new(exe)
            .args([
                "--exact",
                "process::tests::child_helper",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let kid = Kid(child);
        let pid = kid.0.id() as i32;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let n = process_threads(pid).map_or(0, |t| t.len());
            // the main thread, the test thread and the helper's threads
            if n >= CHILD_THREADS + 2 {
                return kid;
            }
            assert!(Instant::now() < deadline, "child has {n} threads");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn sets_and_reads_back_every_thread_of_a_child() {
        let kid = spawn_child();
        let pid = kid.0.id() as i32;
        let p: SchedPolicy = "other:slice=300us".parse().unwrap();
        let got = apply_to_process(pid, p).unwrap();
        assert!(got.threads.len() >= CHILD_THREADS + 2, "{got:?}");
        assert!(got.all_match(p), "{got:?}");
        assert!(got.threads.iter().any(|t| t.name == "child-2"), "{got:?}");
        // read back independently
        let now = read_process(pid).unwrap();
        assert!(now
            .threads
            .iter()
            .all(|t| t.after.slice == Some(Duration::from_micros(300))));
        // batch, then back to the default slice
        let b = apply_to_process(pid, SchedPolicy::Batch { nice: 0 }).unwrap();
        assert!(b.all_match(SchedPolicy::Batch { nice: 0 }), "{b:?}");
        let d = apply_to_process(pid, SchedPolicy::DEFAULT).unwrap();
        assert!(d.all_match(SchedPolicy::DEFAULT));
        assert!(d
            .threads
            .iter()
            .all(|t| t.after.slice != Some(Duration::from_micros(300))));
        // a slice below the kernel's range is clamped and said so
        let tiny: SchedPolicy = "other:slice=10us".parse().unwrap();
        let c = apply_to_process(pid, tiny).unwrap();
        assert!(c.threads.iter().all(|t| !t.warnings.is_empty()), "{c:?}");
    }

    #[test]
    fn a_missing_process_is_esrch() {
        // PIDs above pid_max do not exist
        let e = apply_to_process(i32::MAX, SchedPolicy::DEFAULT).unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("ESRCH") && s.contains(&i32::MAX.to_string()),
            "{s}"
        );
    }

    /// A refusal names the setting, the thread and the errno: an
    /// unprivileged process (the helper, dropped to `nobody` when this
    /// runs as root) may not lower the nice value of another's threads.
    #[test]
    fn refusals_name_the_thread() {
        let exe = std::env::current_exe().unwrap();
        let out = Command::new(exe)
            .args([
                "--exact",
                "process::tests::child_helper",
                "--test-threads=1",
                "--nocapture",
            ])
            .env(CHILD_ENV, "refuse")
            .stderr(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find_map(|l| l.split_once("REFUSED: ").map(|(_, r)| r))
            .unwrap_or_else(|| panic!("no refusal reported: {text}"));
        assert!(line.contains("EPERM"), "{line}");
        assert!(line.contains("other:nice=-5"), "{line}");
        assert!(
            line.contains(&format!("of pid {}", std::process::id())),
            "{line}"
        );
    }
}
