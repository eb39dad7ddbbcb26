//! Running one program as a child: deadline, cancellation, output, and a
//! guard that kills and reaps it on every path out (see the module doc of
//! [`super`] for the steps).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use takt_sched::CpuSet;

use super::parse::{parse, OutputError, Reported};
use super::{CppSme, PeerRun};

/// How often the parent looks at the child (it sleeps in between, so it
/// costs the measured run nothing noticeable).
const POLL: Duration = Duration::from_millis(20);
/// Most output kept per stream for an error message (the rest is read and
/// dropped, so the child never blocks on a full pipe).
const KEEP_BYTES: usize = 4096;
/// A run is killed after this many times its estimate (see
/// [`super::deadline`]).
pub const DEADLINE_FACTOR: u32 = 3;

/// One run's result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PeerSample {
    /// What it printed.
    pub reported: Reported,
    /// ns per process-step: its seconds / (processes × cycles).
    pub ns_per_step: f64,
    /// CPU time (user + system) the child used, seconds.
    pub cpu_s: f64,
}

/// Why a C++SME run gave no sample. Every variant names the run (program
/// and environment).
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The program could not be started.
    #[error("cppsme: cannot start {run}: {source}")]
    Spawn {
        /// The run.
        run: String,
        /// The OS's reason.
        source: std::io::Error,
    },
    /// It ran past its deadline and was killed.
    #[error("cppsme: {run} hung: killed after {after:.1?} (its estimate: {estimate:.1?})")]
    Hung {
        /// The run.
        run: String,
        /// When it was killed.
        after: Duration,
        /// Its estimate.
        estimate: Duration,
    },
    /// It exited unsuccessfully (or died of a signal).
    #[error("cppsme: {run} failed ({status}); {printed}")]
    Exited {
        /// The run.
        run: String,
        /// Its exit status.
        status: ExitStatus,
        /// What it printed.
        printed: Box<Printed>,
    },
    /// It printed something other than its one result line.
    #[error("cppsme: {run}: unexpected output ({reason}); {printed}")]
    Output {
        /// The run.
        run: String,
        /// What is wrong with it.
        reason: Box<OutputError>,
        /// What it printed.
        printed: Box<Printed>,
    },
    /// The run was cancelled; the child was killed.
    #[error("cppsme: {run}: interrupted (the program was killed)")]
    Interrupted {
        /// The run.
        run: String,
    },
}

/// What a program printed (the first KiBs of each stream).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Printed {
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
}

impl std::fmt::Display for Printed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "it printed {:?}", self.stdout)?;
        if !self.stderr.is_empty() {
            write!(f, " and on stderr {:?}", self.stderr)?;
        }
        Ok(())
    }
}

/// The child, killed with its whole process group and reaped when dropped.
struct Child {
    child: std::process::Child,
    done: bool,
}

impl Child {
    fn kill(&mut self) {
        if self.done {
            return;
        }
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: plain syscall. The group's id is the child's pid (it was
        // made a group leader); the kernel does not hand that id to a new
        // process while any member of the group lives, and with none left
        // the call fails with ESRCH.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.done = true;
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.kill();
    }
}

fn reader(stream: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        if let Some(mut s) = stream {
            let mut buf = [0u8; 4096];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let room = KEEP_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
        String::from_utf8_lossy(&kept).into_owned()
    })
}

/// The children's CPU time so far (user + system), seconds.
fn children_cpu() -> f64 {
    // SAFETY: getrusage writes the zeroed struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

impl CppSme {
    /// Runs `run` once: killed at [`super::deadline`] of `estimate`, or
    /// as soon as `cancelled()` says so; on `cpus`, when given (the
    /// child's affinity, which its threads inherit). Nothing is left
    /// running when this returns, whatever it returns.
    pub fn run_once(
        &self,
        run: &PeerRun,
        estimate: Duration,
        cpus: Option<&CpuSet>,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<PeerSample, PeerError> {
        let name = run.to_string();
        let mut cmd = Command::new(self.program(run.program));
        cmd.current_dir(&self.dir)
            .envs(run.env())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(set) = cpus {
            // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes
            // within it for indices below CPU_SETSIZE.
            let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            for c in set.iter().filter(|&c| c < libc::CPU_SETSIZE as usize) {
                // SAFETY: see above.
                unsafe { libc::CPU_SET(c, &mut mask) };
            }
            // SAFETY: between fork and exec the closure only makes one
            // async-signal-safe syscall on a mask built before the fork.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mask)
                        != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let cpu0 = children_cpu();
        let started = Instant::now();
        let mut child = Child {
            child: cmd.spawn().map_err(|source| PeerError::Spawn {
                run: name.clone(),
                source,
            })?,
            done: false,
        };
        let out = reader(child.child.stdout.take());
        let err = reader(child.child.stderr.take());
        let deadline = super::deadline(estimate);
        let status = loop {
            match child.child.try_wait() {
                Ok(Some(status)) => {
                    child.done = true;
                    break status;
                }
                Ok(None) => {}
                Err(source) => {
                    return Err(PeerError::Spawn { run: name, source });
                }
            }
            if cancelled() {
                child.kill();
                return Err(PeerError::Interrupted { run: name });
            }
            let after = started.elapsed();
            if after > deadline {
                child.kill();
                return Err(PeerError::Hung {
                    run: name,
                    after,
                    estimate,
                });
            }
            std::thread::sleep(POLL);
        };
        let cpu_s = children_cpu() - cpu0;
        // The child has exited; a grandchild holding the pipes open is
        // killed with the group, so both readers end.
        child.done = false;
        child.kill();
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        let printed = Box::new(Printed { stdout, stderr });
        if !status.success() {
            return Err(PeerError::Exited {
                run: name,
                status,
                printed,
            });
        }
        let parsed = if printed.stderr.is_empty() {
            parse(&printed.stdout, run)
        } else {
            Err(OutputError::Stderr)
        };
        match parsed {
            Ok(reported) => Ok(PeerSample {
                ns_per_step: reported.seconds * 1e9 / run.steps(),
                reported,
                cpu_s,
            }),
            Err(reason) => Err(PeerError::Output {
                run: name,
                reason: Box::new(reason),
                printed,
            }),
        }
    }
}
