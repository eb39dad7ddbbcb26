//! Per-thread scheduler statistics from `/proc/self/task/<tid>/schedstat`
//! and `status`, and process CPU time.
//!
//! `schedstat` gives the time a thread spent on a CPU, the time it spent
//! runnable but waiting in a runqueue, and the number of timeslices it ran;
//! `status` gives voluntary (it blocked) and involuntary (it was preempted)
//! context switches. Take a snapshot before and after a run and subtract.

use std::ops::Sub;
use std::time::Duration;

use crate::SchedError;

/// One thread's scheduler counters at a moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadSchedStats {
    /// Time spent running on a CPU.
    pub run: Duration,
    /// Time spent runnable, waiting for a CPU.
    pub wait: Duration,
    /// Timeslices run.
    pub timeslices: u64,
    /// Context switches because the thread blocked.
    pub voluntary_switches: u64,
    /// Context switches because the thread was preempted.
    pub involuntary_switches: u64,
}

impl ThreadSchedStats {
    /// The calling thread's counters.
    pub fn current() -> Result<Self, SchedError> {
        Self::of(crate::sys::gettid())
    }

    /// The counters of thread `tid` of this process: a file that cannot be
    /// read is [`SchedError::Refused`] naming it and the errno, contents
    /// not in the kernel's format [`SchedError::Parse`].
    pub fn of(tid: i32) -> Result<Self, SchedError> {
        let base = format!("/proc/self/task/{tid}");
        let read = |file: &str| {
            let path = format!("{base}/{file}");
            std::fs::read_to_string(&path)
                .map_err(|e| SchedError::refused_io(format!("reading {path}"), &e))
        };
        let schedstat = read("schedstat")?;
        let status = read("status")?;
        Self::parse(&schedstat, &status).ok_or_else(|| SchedError::Parse {
            input: schedstat.trim().to_owned(),
            reason: format!("unexpected format in {base}/schedstat or status"),
        })
    }

    /// Parses the two files' contents.
    pub fn parse(schedstat: &str, status: &str) -> Option<Self> {
        let mut f = schedstat.split_whitespace().map(|t| t.parse::<u64>());
        let run = f.next()?.ok()?;
        let wait = f.next()?.ok()?;
        let timeslices = f.next()?.ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        Some(ThreadSchedStats {
            run: Duration::from_nanos(run),
            wait: Duration::from_nanos(wait),
            timeslices,
            voluntary_switches: field("voluntary_ctxt_switches:")?,
            involuntary_switches: field("nonvoluntary_ctxt_switches:")?,
        })
    }
}

impl Sub for ThreadSchedStats {
    type Output = ThreadSchedStats;

    /// The counters accumulated between two snapshots (saturating).
    fn sub(self, earlier: Self) -> Self {
        ThreadSchedStats {
            run: self.run.saturating_sub(earlier.run),
            wait: self.wait.saturating_sub(earlier.wait),
            timeslices: self.timeslices.saturating_sub(earlier.timeslices),
            voluntary_switches: self
                .voluntary_switches
                .saturating_sub(earlier.voluntary_switches),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(earlier.involuntary_switches),
        }
    }
}

/// CPU time (user + system) consumed so far by all threads of this process.
pub fn process_cpu_time() -> Duration {
    rusage(libc::RUSAGE_SELF)
}

/// CPU time (user + system) consumed so far by the calling thread.
pub fn thread_cpu_time() -> Duration {
    rusage(libc::RUSAGE_THREAD)
}

fn rusage(who: libc::c_int) -> Duration {
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    unsafe { libc::getrusage(who, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_formats() {
        let s = ThreadSchedStats::parse(
            "1500 250 7\n",
            "Name:\tx\nvoluntary_ctxt_switches:\t3\nnonvoluntary_ctxt_switches:\t4\n",
        )
        .unwrap();
        assert_eq!(s.run, Duration::from_nanos(1500));
        assert_eq!(s.wait, Duration::from_nanos(250));
        assert_eq!(s.timeslices, 7);
        assert_eq!((s.voluntary_switches, s.involuntary_switches), (3, 4));
        assert!(ThreadSchedStats::parse("x", "").is_none());
    }

    #[test]
    fn current_thread_accumulates_run_time() {
        let a = ThreadSchedStats::current().unwrap();
        // Burn 20 ms of this thread's CPU (not wall) time, so a busy machine
        // cannot make the test flaky.
        let cpu0 = thread_cpu_time();
        while thread_cpu_time() - cpu0 < Duration::from_millis(20) {
            std::hint::black_box(0);
        }
        std::thread::sleep(Duration::from_millis(1));
        let d = ThreadSchedStats::current().unwrap() - a;
        assert!(d.run >= Duration::from_millis(15), "{d:?}");
        assert!(d.voluntary_switches >= 1, "{d:?}");
        assert!(thread_cpu_time() > Duration::ZERO);
        assert!(process_cpu_time() >= thread_cpu_time());
    }
}
