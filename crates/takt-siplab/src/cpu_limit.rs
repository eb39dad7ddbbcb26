//! A CPU quota on a server under test, for the laboratory's commands
//! (`capacity`, `sweep`, `torture` with `--cpu-limit`):
//! [`takt_host::cgroup::CpuLimit`] with this crate's error type. The
//! group is a cleanup-registry item, so no way a run ends leaves it
//! behind (see [`takt_host::cgroup`]).

pub use takt_host::cgroup::{Throttling, DEFAULT_PERIOD_US, MAX_PERIOD_US, MIN_QUOTA_US};

use crate::error::Result;

/// A CPU bandwidth limit on some processes: `cpus` CPUs' worth of time
/// per period. Dropping it puts its processes back and removes it.
#[derive(Debug)]
pub struct CpuLimit(takt_host::cgroup::CpuLimit);

impl CpuLimit {
    /// A new group allowing `cpus` CPUs' worth of time per `period_us`
    /// (see [`takt_host::cgroup::CpuLimit::new`] for the ranges).
    pub fn new(cpus: f64, period_us: u64) -> Result<CpuLimit> {
        Ok(CpuLimit(takt_host::cgroup::CpuLimit::new(cpus, period_us)?))
    }

    /// The group's directory.
    pub fn path(&self) -> &std::path::Path {
        self.0.path()
    }

    /// CPUs' worth of time the group may use.
    pub fn cpus(&self) -> f64 {
        self.0.cpus()
    }

    /// The period, µs.
    pub fn period_us(&self) -> u64 {
        self.0.period_us()
    }

    /// Moves process `pid` (its threads, and the children it forks later)
    /// into the group.
    pub fn add(&self, pid: i32) -> Result<()> {
        Ok(self.0.add(pid)?)
    }

    /// The processes in the group.
    pub fn pids(&self) -> Vec<i32> {
        self.0.pids()
    }

    /// The group's throttling counters now.
    pub fn throttling(&self) -> Throttling {
        self.0.throttling()
    }

    /// Removes the group now, reporting failure.
    pub fn remove(self) -> Result<()> {
        Ok(self.0.remove()?)
    }
}
