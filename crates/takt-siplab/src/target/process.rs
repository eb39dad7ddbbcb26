//! A server process the lab started: in a process group of its own, placed
//! on its CPUs from its first instruction, its stderr kept in a file for
//! error reports, and never left behind — stopped with SIGTERM and a grace
//! period, then SIGKILL to the whole group; dropping it kills the group.
//!
//! CPU placement and the scheduling policy go through the *spawning
//! thread's* settings (set around `spawn`, then restored), which the child
//! inherits across fork and exec, and not through a
//! `pre_exec` hook: a hook forces `fork` instead of `posix_spawn`, and a
//! fork write-protects every page of this process — an in-process load
//! generator's or server's first write to each page then faults (commit
//! cf1f55d measured INVITE/BYE going from 1.6 to 3.2 µs). The process group
//! (`process_group(0)`) is a `posix_spawn` attribute and keeps that path.

use std::fs::File;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use takt_sched::{CpuSet, SchedPolicy, ThreadSpec};

use crate::error::{io, Error, Result};
use crate::server_stats::process_group;

/// How long a server gets to exit after SIGTERM before SIGKILL. Kamailio's
/// main process, after a minute at twice its capacity (gigabytes of
/// transactions in shared memory), took about 20 s.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(30);
/// How long a paused server runs again before it is asked to stop.
const RESUME_SETTLE: Duration = Duration::from_millis(100);
/// Bytes of stderr quoted in an error.
const STDERR_TAIL: u64 = 2_000;

/// A directory removed (with its contents) when dropped.
#[derive(Debug)]
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// A fresh directory under the system's temporary directory.
    pub(crate) fn new(prefix: &str) -> Result<TempDir> {
        let base = std::env::temp_dir();
        for attempt in 0..100u32 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let p = base.join(format!(
                "{prefix}-{}-{nanos:x}-{attempt}",
                std::process::id()
            ));
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(TempDir(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io(format!("creating {}", p.display()))(e)),
            }
        }
        Err(Error::Config(format!(
            "no fresh temporary directory under {}",
            base.display()
        )))
    }

    /// Its path.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The calling thread placed on a CPU set and under a scheduling policy
/// until dropped (what a child spawned meanwhile inherits).
struct Placed {
    cpus: Option<CpuSet>,
    policy: Option<SchedPolicy>,
}

impl Placed {
    fn enter(cpus: Option<&CpuSet>, policy: Option<SchedPolicy>) -> Result<Placed> {
        let mut restore = Placed {
            cpus: None,
            policy: None,
        };
        let mut spec = ThreadSpec::new("spawner");
        if let Some(c) = cpus {
            restore.cpus =
                Some(CpuSet::current_affinity().map_err(|e| {
                    Error::Config(format!("reading this thread's CPU affinity: {e}"))
                })?);
            spec = spec.with_cpus(c.clone());
        }
        if let Some(p) = policy {
            restore.policy = Some(takt_sched::current_policy().map_err(|e| {
                Error::Config(format!("reading this thread's scheduling policy: {e}"))
            })?);
            spec = spec.with_policy(p);
        }
        // on a refusal `restore` (dropped here) puts back what was changed
        spec.apply_to_current()
            .map_err(|e| Error::Config(format!("placing a server: {e}")))?;
        Ok(restore)
    }
}

impl Drop for Placed {
    fn drop(&mut self) {
        // what this thread had a moment ago; nothing to report if the
        // kernel refuses it now (CPUs went offline)
        let mut spec = ThreadSpec::new("spawner");
        if let Some(c) = self.cpus.take() {
            spec = spec.with_cpus(c);
        }
        if let Some(p) = self.policy.take() {
            spec = spec.with_policy(p);
        }
        let _ = spec.apply_to_current();
    }
}

/// A running server process (see the module docs).
#[derive(Debug)]
pub(crate) struct ServerProcess {
    child: Child,
    target: &'static str,
    stderr: PathBuf,
    stopped: bool,
    paused: bool,
}

impl ServerProcess {
    /// Starts `cmd` in a new process group on `cpus` under `policy` (both
    /// inherited from the spawning thread), stdin and stdout detached,
    /// stderr to `stderr`.
    pub(crate) fn spawn(
        mut cmd: Command,
        cpus: Option<&CpuSet>,
        policy: Option<SchedPolicy>,
        target: &'static str,
        stderr: PathBuf,
    ) -> Result<ServerProcess> {
        let log = File::create(&stderr).map_err(io(format!("creating {}", stderr.display())))?;
        let _placed = Placed::enter(cpus, policy)?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .process_group(0)
            .spawn()
            .map_err(|e| Error::Start {
                target,
                reason: format!("{:?}: {e}", cmd.get_program()),
            })?;
        Ok(ServerProcess {
            child,
            target,
            stderr,
            stopped: false,
            paused: false,
        })
    }

    /// The leader's PID (also the process group's ID).
    pub(crate) fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Every live process of the group: the server and what it forked.
    pub(crate) fn pids(&self) -> Vec<i32> {
        process_group(self.pid())
    }

    /// The last lines of its stderr, on one line (empty if none).
    pub(crate) fn stderr_tail(&self) -> String {
        stderr_tail(&self.stderr)
    }

    /// The exit status and the tail of stderr, for an error message.
    fn describe(&self, st: ExitStatus) -> String {
        let tail = stderr_tail(&self.stderr);
        if tail.is_empty() {
            format!("{st}")
        } else {
            format!("{st}; stderr: {tail}")
        }
    }

    /// `Err(Exited)` if the server has exited.
    pub(crate) fn check_alive(&mut self) -> Result<()> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(st)) => Err(Error::Exited {
                target: self.target,
                reason: self.describe(st),
            }),
            Err(e) => Err(io(format!("waiting for {}", self.target))(e)),
        }
    }

    /// Like [`ServerProcess::check_alive`], as a start-up failure.
    pub(crate) fn check_started(&mut self) -> Result<()> {
        self.check_alive().map_err(|e| match e {
            Error::Exited { target, reason } => Error::Start { target, reason },
            e => e,
        })
    }

    /// SIGTERM, up to [`STOP_GRACE`] to exit, then SIGKILL to the group;
    /// returns once no process of the group is left. `Err` if the server
    /// had exited before ([`Error::Exited`]), or had to be killed or exited
    /// with a failure ([`Error::Stop`]).
    pub(crate) fn stop(&mut self) -> Result<()> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        if let Ok(Some(st)) = self.child.try_wait() {
            self.kill_group();
            return Err(Error::Exited {
                target: self.target,
                reason: self.describe(st),
            });
        }
        // a paused group would not act on SIGTERM before SIGCONT; give it
        // a moment to run again (Kamailio's main process, signalled while
        // its children were still catching up, did not finish its shutdown)
        if self.paused {
            self.set_paused(false);
        }
        signal(self.pid(), libc::SIGTERM);
        let deadline = Instant::now() + STOP_GRACE;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(st)) => break Some(st),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => break None,
            }
        };
        self.kill_group();
        match status {
            // a signal-terminated exit from our SIGTERM is a clean stop
            Some(st) if st.success() || st.code().is_none() => Ok(()),
            Some(st) => Err(Error::Stop {
                target: self.target,
                reason: format!("on SIGTERM: {}", self.describe(st)),
            }),
            None => Err(Error::Stop {
                target: self.target,
                reason: format!(
                    "still running {} s after SIGTERM; killed",
                    STOP_GRACE.as_secs()
                ),
            }),
        }
    }

    /// Stops (`SIGSTOP`) or continues (`SIGCONT`) every process of the
    /// group. Continuing a paused group returns after [`RESUME_SETTLE`],
    /// once its processes have caught up with what happened meanwhile
    /// (timers, signals from each other).
    pub(crate) fn set_paused(&mut self, paused: bool) {
        let was = std::mem::replace(&mut self.paused, paused);
        signal(
            -self.pid(),
            if paused { libc::SIGSTOP } else { libc::SIGCONT },
        );
        if was && !paused {
            std::thread::sleep(RESUME_SETTLE);
        }
    }

    /// SIGKILL to every process of the group, reap the leader, and wait
    /// (up to 2 s) until the group is empty.
    fn kill_group(&mut self) {
        signal(-self.pid(), libc::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
        let deadline = Instant::now() + Duration::from_secs(2);
        while !self.pids().is_empty() && Instant::now() < deadline {
            signal(-self.pid(), libc::SIGKILL);
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if !self.stopped {
            self.stopped = true;
            self.kill_group();
        }
    }
}

/// kill(2); `pid < 0` signals the group. A vanished target is not an error.
fn signal(pid: i32, sig: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions. The pid is a child
    // of this process or the group it leads; the kernel does not hand that
    // number to another process while the unreaped child or any member of
    // its group remains, so no unrelated process is signalled.
    unsafe { libc::kill(pid, sig) };
}

/// The last [`STDERR_TAIL`] bytes of a log, on one line.
pub(crate) fn stderr_tail(path: &Path) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let mut buf = Vec::new();
    use std::io::Seek;
    let _ = f.seek(std::io::SeekFrom::Start(len.saturating_sub(STDERR_TAIL)));
    let _ = f.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
}
