//! CPU bandwidth control for a server under test: its processes get
//! `quota` µs of CPU time every `period` µs, whatever else the machine
//! does — so that a generator can offer several times the server's
//! capacity on a machine where it could not outrun the unlimited server,
//! or so that servers are compared under the same CPU budget.
//!
//! A [`CpuLimit`] is a cgroup named `takt-cpu-<pid>-<n>` under the `cpu`
//! controller: cgroup v2 (`cpu.max` in `/sys/fs/cgroup`, the controller
//! enabled in the root's `cgroup.subtree_control`) or v1
//! (`cpu.cfs_quota_us`, `cpu.cfs_period_us` in `/sys/fs/cgroup/cpu`).
//! The group is registered with the [cleanup registry](crate::cleanup)
//! before it is made, as an [`Item::Cgroup`]: dropping the limit moves
//! every process still in it back to the root group and removes the
//! directory — on success, error, panic unwinding and Ctrl-C alike — a
//! second signal undoes it with everything else registered, and a run
//! killed outright leaves it in its journal for the next start's repair.
//! [`CpuLimit::repair`] also removes groups of older versions
//! (`takt-torture-<pid>`) whose process is gone.
//!
//! A short period (≤ 2 ms; default 2 ms) keeps the throttled server from
//! being stalled for long at a time: with half a CPU it runs 1 ms of every
//! 2, not 50 ms of every 100. The kernel's smallest quota is 1 ms, so at a
//! 2 ms period the smallest limit is half a CPU (a whole one at 1 ms).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::cleanup::{self, Guard, Item};
use crate::error::{io, HostError, Result};

/// The longest period allowed, µs.
pub const MAX_PERIOD_US: u64 = 2_000;
/// The default period, µs.
pub const DEFAULT_PERIOD_US: u64 = 2_000;
/// The kernel's smallest quota (and period), µs.
pub const MIN_QUOTA_US: u64 = 1_000;
/// Name prefix of the groups (`takt-cpu-<pid>-<n>`).
const PREFIX: &str = "takt-cpu-";
/// Name prefix of the groups of older versions (`takt-torture-<pid>`).
const LEGACY_PREFIX: &str = "takt-torture-";
/// Groups made by this process so far (names them).
static MADE: AtomicU64 = AtomicU64::new(0);

/// Which cgroup interface carries the `cpu` controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// Where the `cpu` controller's hierarchy is mounted and which version.
fn hierarchy(base: &Path) -> Result<(PathBuf, Version)> {
    let v1 = base.join("cpu");
    if v1.join("cpu.cfs_quota_us").exists() {
        return Ok((v1, Version::V1));
    }
    let controllers = fs::read_to_string(base.join("cgroup.controllers")).unwrap_or_default();
    if controllers.split_whitespace().any(|c| c == "cpu") {
        return Ok((base.to_path_buf(), Version::V2));
    }
    Err(HostError::Config(format!(
        "no cgroup cpu controller under {} (neither v1 cpu/cpu.cfs_quota_us nor v2 cgroup.controllers with cpu)",
        base.display()
    )))
}

/// A CPU bandwidth limit on some processes (see the module docs).
#[derive(Debug)]
pub struct CpuLimit {
    dir: PathBuf,
    root: PathBuf,
    quota_us: u64,
    period_us: u64,
    /// Undoes the group (declared last: dropped after the rest).
    guard: Option<Guard>,
}

/// Throttling counters of a limited group (`cpu.stat`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Throttling {
    /// Periods in which the group ran.
    pub periods: u64,
    /// Of those, periods in which it used up its quota.
    pub throttled: u64,
}

impl CpuLimit {
    /// A new group allowing `cpus` CPUs' worth of time (0.5: half of one
    /// CPU) per `period_us` (1 000..=[`MAX_PERIOD_US`]; the quota
    /// `cpus × period_us` must be at least [`MIN_QUOTA_US`]), under
    /// `/sys/fs/cgroup`. Leftover groups of dead runs are removed first.
    pub fn new(cpus: f64, period_us: u64) -> Result<CpuLimit> {
        CpuLimit::new_in(Path::new("/sys/fs/cgroup"), cpus, period_us)
    }

    /// [`CpuLimit::new`] under another cgroup mount (for tests).
    pub fn new_in(base: &Path, cpus: f64, period_us: u64) -> Result<CpuLimit> {
        if !(MIN_QUOTA_US..=MAX_PERIOD_US).contains(&period_us) {
            return Err(HostError::Config(format!(
                "CFS period {period_us} µs is not in 1000..={MAX_PERIOD_US} µs"
            )));
        }
        if !(0.01..=1024.0).contains(&cpus) {
            return Err(HostError::Config(format!(
                "CPU limit {cpus} is not in [0.01, 1024] CPUs"
            )));
        }
        let quota_us = (cpus * period_us as f64).round() as u64;
        if quota_us < MIN_QUOTA_US {
            return Err(HostError::Config(format!(
                "a limit of {cpus} CPUs at a {period_us} µs period is a quota of {quota_us} µs, below the kernel's {MIN_QUOTA_US} µs: at most a {MAX_PERIOD_US} µs period, so at least {} CPUs",
                MIN_QUOTA_US as f64 / MAX_PERIOD_US as f64
            )));
        }
        let (root, version) = hierarchy(base)?;
        repair_in(&root)?;
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(format!("{PREFIX}{}-{n}", std::process::id()));
        if version == Version::V2 {
            // the controller must be on in the root's children
            let _ = fs::write(root.join("cgroup.subtree_control"), "+cpu");
        }
        // journaled before the change it undoes
        let guard = cleanup::register(Item::Cgroup {
            dir: dir.clone(),
            parent: root.clone(),
        });
        match fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(format!("creating the cgroup {}", dir.display()))(e)),
        }
        let limit = CpuLimit {
            dir,
            root,
            quota_us,
            period_us,
            guard: Some(guard),
        };
        let w = |f: &str, v: String| {
            fs::write(limit.dir.join(f), &v).map_err(io(format!(
                "writing {v:?} to {}",
                limit.dir.join(f).display()
            )))
        };
        match version {
            Version::V1 => {
                // the period first: a quota above the old period is refused
                // by some kernels only in the other order
                w("cpu.cfs_period_us", period_us.to_string())?;
                w("cpu.cfs_quota_us", quota_us.to_string())?;
            }
            Version::V2 => w("cpu.max", format!("{quota_us} {period_us}"))?,
        }
        Ok(limit)
    }

    /// The group's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// CPUs' worth of time the group may use (quota ÷ period).
    pub fn cpus(&self) -> f64 {
        self.quota_us as f64 / self.period_us as f64
    }

    /// The CFS period, µs.
    pub fn period_us(&self) -> u64 {
        self.period_us
    }

    /// Moves process `pid` (all its threads; children it forks later
    /// follow) into the group.
    pub fn add(&self, pid: i32) -> Result<()> {
        fs::write(self.dir.join("cgroup.procs"), pid.to_string()).map_err(io(format!(
            "moving process {pid} into {}",
            self.dir.display()
        )))
    }

    /// The processes in the group.
    pub fn pids(&self) -> Vec<i32> {
        read_pids(&self.dir)
    }

    /// The group's throttling counters now.
    pub fn throttling(&self) -> Throttling {
        let stat = fs::read_to_string(self.dir.join("cpu.stat")).unwrap_or_default();
        let mut t = Throttling::default();
        for line in stat.lines() {
            let mut f = line.split_whitespace();
            let (Some(k), Some(v)) = (f.next(), f.next().and_then(|v| v.parse().ok())) else {
                continue;
            };
            match k {
                "nr_periods" => t.periods = v,
                "nr_throttled" => t.throttled = v,
                _ => {}
            }
        }
        t
    }

    /// Removes the group now (what dropping it does), reporting failure
    /// (the registry then keeps it, to try again at the end of the run).
    pub fn remove(mut self) -> Result<()> {
        let r = remove_group(&self.root, &self.dir);
        if let (Ok(()), Some(g)) = (&r, self.guard.take()) {
            g.keep();
        }
        r
    }

    /// Removes the groups left by runs that are no longer running, of
    /// this version and older ones (their processes go back to the root
    /// group); returns how many.
    pub fn repair() -> Result<usize> {
        let (root, _) = hierarchy(Path::new("/sys/fs/cgroup"))?;
        repair_in(&root)
    }
}

fn read_pids(dir: &Path) -> Vec<i32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Moves every process of `dir` to `root` and removes `dir` (a group can
/// only be removed once empty; a process that exits meanwhile is fine).
fn remove_group(root: &Path, dir: &Path) -> Result<()> {
    for _ in 0..50 {
        for pid in read_pids(dir) {
            let _ = fs::write(root.join("cgroup.procs"), pid.to_string());
        }
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
    fs::remove_dir(dir).map_err(io(format!("removing the cgroup {}", dir.display())))
}

/// Whether a process with this PID exists.
fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

fn repair_in(root: &Path) -> Result<usize> {
    let mut removed = 0;
    let Ok(entries) = fs::read_dir(root) else {
        return Ok(0);
    };
    for e in entries.flatten() {
        let name = e.file_name();
        // `takt-cpu-<pid>-<n>` or `takt-torture-<pid>`
        let Some(owner) = name
            .to_str()
            .and_then(|n| {
                n.strip_prefix(PREFIX)
                    .or_else(|| n.strip_prefix(LEGACY_PREFIX))
            })
            .and_then(|p| p.split('-').next()?.parse::<u32>().ok())
        else {
            continue;
        };
        if owner != std::process::id() && !alive(owner) {
            remove_group(root, &e.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn cgroup_of(pid: u32) -> String {
        fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .unwrap_or_default()
            .lines()
            .find(|l| {
                let c = l.split(':').nth(1).unwrap_or("");
                c.split(',').any(|c| c == "cpu") || c.is_empty()
            })
            .map(|l| l.rsplit(':').next().unwrap_or("").to_string())
            .unwrap_or_default()
    }

    /// The limit is written, a process moved in, and dropping the limit
    /// puts the process back and removes the group; a group left by a
    /// dead lab is repaired by the next one.
    #[test]
    fn limit_is_applied_and_removed() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let before = cgroup_of(pid);
        let limit = CpuLimit::new(0.5, 2_000).expect("root and a cpu controller");
        assert!((limit.cpus() - 0.5).abs() < 1e-9);
        let dir = limit.path().to_path_buf();
        limit.add(pid as i32).unwrap();
        assert_eq!(limit.pids(), vec![pid as i32]);
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.starts_with(&format!("{PREFIX}{}-", std::process::id())));
        assert!(cgroup_of(pid).ends_with(&name), "{}", cgroup_of(pid));
        // journaled with the cleanup registry while it exists
        assert!(cleanup::pending()
            .iter()
            .any(|i| matches!(i, Item::Cgroup { dir: d, .. } if *d == dir)));
        let quota = fs::read_to_string(dir.join("cpu.cfs_quota_us"))
            .or_else(|_| fs::read_to_string(dir.join("cpu.max")))
            .unwrap();
        assert!(quota.starts_with("1000"), "{quota}");
        drop(limit);
        assert!(!dir.exists());
        assert!(!cleanup::pending()
            .iter()
            .any(|i| matches!(i, Item::Cgroup { dir: d, .. } if *d == dir)));
        assert_eq!(cgroup_of(pid), before);

        // a group named for a PID that is gone, with a process in it
        let (root, _) = hierarchy(Path::new("/sys/fs/cgroup")).unwrap();
        let stale = root.join(format!("{LEGACY_PREFIX}{}", u32::MAX - 7));
        fs::create_dir_all(&stale).unwrap();
        fs::write(stale.join("cgroup.procs"), pid.to_string()).unwrap();
        let again = CpuLimit::new(0.75, 2_000).unwrap();
        assert!(!stale.exists());
        assert_eq!(cgroup_of(pid), before);
        again.remove().unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(CpuLimit::new(0.5, 10_000).is_err());
        // a quota under the kernel's 1 ms
        assert!(CpuLimit::new(0.25, 2_000).is_err());
        assert!(CpuLimit::new(0.0, 1_000).is_err());
        assert!(CpuLimit::new(f64::NAN, 1_000).is_err());
    }
}
