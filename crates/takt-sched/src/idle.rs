//! CPU idle states, and a process-held limit on how deep idle CPUs sleep.
//!
//! A CPU with nothing to run enters an *idle state* chosen by the kernel's
//! cpuidle governor; the deeper the state, the longer the CPU takes to leave
//! it ([`IdleState::exit_latency`]). On a KVM guest with the `haltpoll`
//! driver there are two: `POLL`, in which the idle loop spins on its
//! need-resched flag (a wake-up is a store to that flag, no interrupt), and
//! `haltpoll`, which executes `HLT`: the vCPU leaves the guest, the host may
//! run other work on the core, and waking it takes an interrupt through the
//! hypervisor. A message that arrives for a thread on a halted vCPU waits
//! for that, and then runs on a core whose caches the host has used.
//!
//! [`IdleLatency::hold`] asks the kernel, through `/dev/cpu_dma_latency` (the
//! CPU latency QoS of `Documentation/power/pm_qos_interface.rst`), that no
//! CPU enter an idle state whose exit latency exceeds a limit. With a limit
//! of zero, idle CPUs poll. The kernel honours the smallest limit of all
//! holders; a hold ends when its file is closed, so it ends with the
//! [`IdleLatency`] value, and with the process however it exits.
//!
//! The price is the point: idle CPUs of the *whole machine* spin instead of
//! sleeping. On a VM the host sees busy vCPUs; on bare metal the package
//! stays out of its power-saving states. The spinning is the idle task's,
//! so it shows in no thread's CPU time.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::SchedError;

/// The kernel's CPU latency QoS device.
pub const CPU_LATENCY_DEVICE: &str = "/dev/cpu_dma_latency";

/// The value the device reads when nobody holds a limit
/// (`PM_QOS_CPU_LATENCY_DEFAULT_VALUE`, 2,000 s in µs).
const NO_LIMIT_US: i32 = 2_000_000_000;

/// A held limit on the exit latency of the idle states CPUs may enter;
/// released when dropped. The crate docs ("Idle CPUs") say when it helps
/// and what it costs.
#[derive(Debug)]
pub struct IdleLatency {
    // Kept open: the kernel drops the request when the file is closed.
    _file: File,
    limit: Duration,
}

impl IdleLatency {
    /// Holds `limit` (whole microseconds; less than 1 µs means "poll")
    /// until the returned value is dropped.
    ///
    /// Fails with [`SchedError::Parse`] for a limit the device cannot
    /// express (over `i32::MAX` µs), and [`SchedError::Refused`] when the
    /// device cannot be opened or written: `EACCES` without root, `ENOENT`
    /// on a kernel without it.
    pub fn hold(limit: Duration) -> Result<IdleLatency, SchedError> {
        Self::hold_at(Path::new(CPU_LATENCY_DEVICE), limit)
    }

    fn hold_at(device: &Path, limit: Duration) -> Result<IdleLatency, SchedError> {
        // whole microseconds, as the kernel takes it
        let setting = || {
            format!(
                "idle-latency={}us ({})",
                limit.as_micros(),
                device.display()
            )
        };
        let us = i32::try_from(limit.as_micros()).map_err(|_| SchedError::Parse {
            input: crate::format_duration(limit),
            reason: format!(
                "an idle latency limit is at most {} µs (i32::MAX)",
                i32::MAX
            ),
        })?;
        let refused = |e: std::io::Error| refusal(setting(), &e);
        let mut file = File::options().write(true).open(device).map_err(refused)?;
        // The device takes the limit as a native-endian s32 (or as a hex
        // string); one write sets this open file's request.
        file.write_all(&us.to_ne_bytes()).map_err(refused)?;
        Ok(IdleLatency { _file: file, limit })
    }

    /// The limit this value holds.
    pub fn limit(&self) -> Duration {
        self.limit
    }
}

/// The limit in force now, the smallest of every holder's; `None` when no
/// process holds one. Reading the device needs root like writing it.
pub fn idle_latency_limit() -> Result<Option<Duration>, SchedError> {
    read_limit(Path::new(CPU_LATENCY_DEVICE))
}

fn read_limit(device: &Path) -> Result<Option<Duration>, SchedError> {
    let refused = |e: std::io::Error| refusal(format!("reading {}", device.display()), &e);
    let mut raw = [0u8; 4];
    File::open(device)
        .and_then(|mut f| f.read_exact(&mut raw))
        .map_err(refused)?;
    let us = i32::from_ne_bytes(raw);
    Ok((us < NO_LIMIT_US).then(|| Duration::from_micros(us.max(0) as u64)))
}

/// One idle state of a CPU, as sysfs describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdleState {
    /// The driver's name for it (`POLL`, `haltpoll`, `C1`, ...).
    pub name: String,
    /// How long leaving it takes, as the driver declares it.
    pub exit_latency: Duration,
    /// Times the CPU entered it since boot.
    pub entered: u64,
    /// Time spent in it since boot.
    pub residency: Duration,
    /// Disabled by the administrator (`disable`).
    pub disabled: bool,
}

/// The idle states of `cpu`, shallowest first, from
/// `/sys/devices/system/cpu/cpuN/cpuidle`; empty when the kernel runs no
/// cpuidle driver (the CPU then only halts).
pub fn idle_states(cpu: usize) -> Result<Vec<IdleState>, SchedError> {
    states_in(&PathBuf::from(format!(
        "/sys/devices/system/cpu/cpu{cpu}/cpuidle"
    )))
}

fn states_in(dir: &Path) -> Result<Vec<IdleState>, SchedError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(sysfs_error(dir, &e)),
    };
    let mut numbered = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| sysfs_error(dir, &e))?;
        let name = entry.file_name();
        let Some(n) = name
            .to_str()
            .and_then(|s| s.strip_prefix("state"))
            .and_then(|s| s.parse::<usize>().ok())
        else {
            continue;
        };
        numbered.push((n, entry.path()));
    }
    numbered.sort_unstable_by_key(|(n, _)| *n);
    numbered.into_iter().map(|(_, p)| read_state(&p)).collect()
}

fn read_state(dir: &Path) -> Result<IdleState, SchedError> {
    let field = |f: &str| {
        let p = dir.join(f);
        std::fs::read_to_string(&p)
            .map(|s| s.trim().to_owned())
            .map_err(|e| sysfs_error(&p, &e))
    };
    let number = |f: &str| -> Result<u64, SchedError> {
        let v = field(f)?;
        v.parse().map_err(|_| SchedError::Parse {
            input: v,
            reason: format!("{} is not a number", dir.join(f).display()),
        })
    };
    Ok(IdleState {
        name: field("name")?,
        exit_latency: Duration::from_micros(number("latency")?),
        entered: number("usage")?,
        residency: Duration::from_micros(number("time")?),
        disabled: number("disable")? != 0,
    })
}

fn sysfs_error(path: &Path, e: &std::io::Error) -> SchedError {
    refusal(format!("reading {}", path.display()), e)
}

/// An OS error on `setting` as [`SchedError::Refused`].
fn refusal(setting: String, e: &std::io::Error) -> SchedError {
    SchedError::refused_io(setting, e)
}

/// The cpuidle driver and governor in use (`haltpoll`, `menu`, `teo`...),
/// or `None` without cpuidle.
pub fn idle_driver() -> Option<(String, String)> {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/sys/devices/system/cpu/cpuidle/{f}"))
            .ok()
            .map(|s| s.trim().to_owned())
    };
    Some((
        read("current_driver")?,
        read("current_governor_ro").or_else(|| read("current_governor"))?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    /// Every hold-related check in one test: holders in one process share
    /// the kernel's aggregate, so parallel tests would see each other.
    #[test]
    fn holds_combine_to_the_smallest_and_end_when_dropped() {
        if !root() {
            let e = IdleLatency::hold(Duration::ZERO).unwrap_err();
            assert!(e.to_string().contains("EACCES"), "{e}");
            return;
        }
        let before = idle_latency_limit().unwrap();
        let loose = IdleLatency::hold(Duration::from_micros(50)).unwrap();
        assert_eq!(loose.limit(), Duration::from_micros(50));
        let expect_loose = before.map_or(Duration::from_micros(50), |b| {
            b.min(Duration::from_micros(50))
        });
        assert_eq!(idle_latency_limit().unwrap(), Some(expect_loose));
        {
            let _poll = IdleLatency::hold(Duration::from_nanos(900)).unwrap();
            assert_eq!(idle_latency_limit().unwrap(), Some(Duration::ZERO));
        }
        assert_eq!(idle_latency_limit().unwrap(), Some(expect_loose));
        drop(loose);
        assert_eq!(idle_latency_limit().unwrap(), before);
    }

    #[test]
    fn refusals_name_the_setting_and_the_errno() {
        let missing = Path::new("/nonexistent/cpu_dma_latency");
        let e = IdleLatency::hold_at(missing, Duration::ZERO).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("idle-latency=0"), "{text}");
        assert!(text.contains("/nonexistent/cpu_dma_latency"), "{text}");
        assert!(text.contains("No such file"), "{text}");
        assert!(read_limit(missing).is_err());
        let huge = Duration::from_secs(3_000);
        let e = IdleLatency::hold_at(missing, huge).unwrap_err();
        assert!(matches!(e, SchedError::Parse { .. }), "{e}");
    }

    #[test]
    fn states_are_read_in_order_and_a_missing_directory_is_none() {
        let dir = std::env::temp_dir().join(format!("takt-idle-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (n, name, lat) in [(10, "deep", "120"), (0, "POLL", "0"), (2, "C1", "2")] {
            let s = dir.join(format!("state{n}"));
            std::fs::create_dir_all(&s).unwrap();
            for (f, v) in [
                ("name", name),
                ("latency", lat),
                ("usage", "7"),
                ("time", "1500"),
                ("disable", if n == 2 { "1" } else { "0" }),
            ] {
                std::fs::write(s.join(f), format!("{v}\n")).unwrap();
            }
        }
        std::fs::create_dir_all(dir.join("driver")).unwrap();
        let states = states_in(&dir).unwrap();
        let names: Vec<_> = states.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["POLL", "C1", "deep"]);
        assert_eq!(states[2].exit_latency, Duration::from_micros(120));
        assert_eq!(states[1].residency, Duration::from_micros(1500));
        assert_eq!(states[1].entered, 7);
        assert!(states[1].disabled && !states[0].disabled);
        std::fs::write(dir.join("state0/latency"), "x\n").unwrap();
        assert!(states_in(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(states_in(&dir).unwrap(), Vec::new());
    }

    #[test]
    fn this_machines_states_get_deeper() {
        let states = idle_states(0).unwrap();
        for w in states.windows(2) {
            assert!(w[0].exit_latency <= w[1].exit_latency, "{states:?}");
        }
        if let Some(first) = states.first() {
            assert!(!first.name.is_empty());
        }
    }
}
