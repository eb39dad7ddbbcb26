//! The machine block of a result document: what ran, where, and how busy
//! the machine was meanwhile.

use serde::{Deserialize, Serialize};

/// Machine, build and run conditions recorded with every result document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineBlock {
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu: String,
    /// Online CPUs.
    pub cpus: usize,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Whether a hypervisor flag is present.
    pub virtualized: bool,
    /// Git commit takt was built from (`-dirty` when the tree had changes).
    pub commit: String,
    /// Compiler version.
    pub rustc: String,
    /// Cargo profile (`release`, `debug`).
    pub profile: String,
    /// The command line that produced the document.
    pub command: String,
    /// Percentage of CPU time stolen by the hypervisor during the run.
    pub steal_pct: f64,
    /// Load averages (1, 5, 15 min) at the end of the run.
    pub load: [f64; 3],
}

/// Snapshot taken when a run starts; [`RunEnvironment::finish`] turns it into
/// a [`MachineBlock`] with the steal time seen in between.
#[derive(Clone, Debug)]
pub struct RunEnvironment {
    cpu_ticks_start: Option<CpuTicks>,
}

#[derive(Clone, Copy, Debug)]
struct CpuTicks {
    total: u64,
    steal: u64,
}

fn read_cpu_ticks() -> Option<CpuTicks> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal guest guest_nice;
    // guest time is already included in user/nice.
    let total = v.iter().take(8).sum();
    Some(CpuTicks {
        total,
        steal: *v.get(7)?,
    })
}

fn first_line_value(path: &str, key: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    })
}

/// Kernel release, e.g. `6.18.44`.
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// CPU model name.
pub fn cpu_model() -> String {
    first_line_value("/proc/cpuinfo", "model name").unwrap_or_else(|| "unknown".into())
}

/// Whether `/proc/cpuinfo` has the `hypervisor` flag.
pub fn is_virtualized() -> bool {
    first_line_value("/proc/cpuinfo", "flags")
        .is_some_and(|f| f.split_whitespace().any(|w| w == "hypervisor"))
}

impl RunEnvironment {
    /// Starts observing the machine.
    pub fn start() -> Self {
        RunEnvironment {
            cpu_ticks_start: read_cpu_ticks(),
        }
    }

    /// The machine block for a run that ends now.
    pub fn finish(&self) -> MachineBlock {
        let steal_pct = match (self.cpu_ticks_start, read_cpu_ticks()) {
            (Some(a), Some(b)) if b.total > a.total => {
                100.0 * (b.steal - a.steal) as f64 / (b.total - a.total) as f64
            }
            _ => 0.0,
        };
        let load = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .map(|s| {
                let mut it = s.split_whitespace().filter_map(|t| t.parse::<f64>().ok());
                [
                    it.next().unwrap_or(0.0),
                    it.next().unwrap_or(0.0),
                    it.next().unwrap_or(0.0),
                ]
            })
            .unwrap_or_default();
        MachineBlock {
            cpu: cpu_model(),
            cpus: takt_sched::CpuSet::online().len(),
            kernel: kernel_release(),
            virtualized: is_virtualized(),
            commit: env!("TAKT_GIT_COMMIT").to_string(),
            rustc: env!("TAKT_RUSTC_VERSION").to_string(),
            profile: if cfg!(debug_assertions) {
                "debug".into()
            } else {
                "release".into()
            },
            command: std::env::args().collect::<Vec<_>>().join(" "),
            steal_pct,
            load,
        }
    }
}

/// Now as an RFC 3339 UTC timestamp, e.g. `2026-11-22T10:00:00Z`.
pub fn utc_now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339_from_unix(secs)
}

/// Formats Unix seconds as RFC 3339 UTC (Howard Hinnant's civil-from-days).
pub fn rfc3339_from_unix(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_timestamps() {
        assert_eq!(rfc3339_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_from_unix(1_795_860_000), "2026-11-28T10:00:00Z");
        assert_eq!(rfc3339_from_unix(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn machine_block_is_filled() {
        let env = RunEnvironment::start();
        let m = env.finish();
        assert!(m.cpus >= 1);
        assert!(!m.kernel.is_empty());
        assert!((0.0..=100.0).contains(&m.steal_pct));
    }
}
