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
    /// Percentage of the machine's CPU time (all CPUs) spent during the
    /// run on work that was not the run's own: busy time from `/proc/stat`
    /// (interrupts and softirqs excluded: the run's own packets cause
    /// them) minus the user + system time of the run's process tree,
    /// reaped children included. `None` in documents written before it
    /// was recorded, or where `/proc/stat` cannot be read.
    #[serde(default)]
    pub others_pct: Option<f64>,
    /// The host name (`/proc/sys/kernel/hostname`).
    #[serde(default)]
    pub host: String,
    /// The first 16 hex digits of the SHA-256 of `/etc/machine-id`: the
    /// same machine across runs, without publishing its id (empty where
    /// the file is missing).
    #[serde(default)]
    pub machine_id: String,
}

impl MachineBlock {
    /// Work that was not the run's own plus the hypervisor's steal, in
    /// percent of the machine's CPU time, when it exceeds
    /// [`DISTURBED_PCT`]: the figures may then be disturbed.
    pub fn disturbed_pct(&self) -> Option<f64> {
        let others = self.others_pct?;
        let sum = others + self.steal_pct;
        (sum > DISTURBED_PCT).then_some(sum)
    }
}

/// Other work plus steal above this share of the machine's CPU time
/// marks a run as disturbed ([`MachineBlock::disturbed_pct`]).
pub const DISTURBED_PCT: f64 = 5.0;

/// Snapshot taken when a run starts; [`RunEnvironment::finish`] turns it into
/// a [`MachineBlock`] with the steal time seen in between.
#[derive(Clone, Debug)]
pub struct RunEnvironment {
    cpu_ticks_start: Option<CpuTicks>,
    own_start: f64,
}

#[derive(Clone, Copy, Debug)]
struct CpuTicks {
    total: u64,
    steal: u64,
    /// user + nice + system: the time some task ran (guest time is
    /// inside user and nice; interrupts, softirqs and iowait are not).
    busy: u64,
}

/// User + system seconds of this process and of its reaped children
/// (and theirs): the run's own CPU time.
fn own_cpu_seconds() -> f64 {
    let secs = |who| {
        // SAFETY: getrusage writes one rusage into the zeroed struct we own.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(who, &mut ru) } != 0 {
            return 0.0;
        }
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        tv(ru.ru_utime) + tv(ru.ru_stime)
    };
    secs(libc::RUSAGE_SELF) + secs(libc::RUSAGE_CHILDREN)
}

/// Clock ticks per second of `/proc/stat`.
fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

/// The share of CPU time between two snapshots that went to work not the
/// run's own, percent (never below 0: rounding of ticks).
fn others_pct(a: CpuTicks, b: CpuTicks, own_seconds: f64) -> Option<f64> {
    let total = b.total.checked_sub(a.total).filter(|t| *t > 0)? as f64;
    let busy = b.busy.saturating_sub(a.busy) as f64;
    let own_ticks = own_seconds * clock_ticks();
    Some((100.0 * (busy - own_ticks) / total).clamp(0.0, 100.0))
}

/// The host name.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The machine's identity: the first 16 hex digits of the SHA-256 of
/// `/etc/machine-id` (empty where it is missing).
pub fn machine_id_hash() -> String {
    use sha2::{Digest, Sha256};
    let Ok(id) = std::fs::read_to_string("/etc/machine-id") else {
        return String::new();
    };
    let id = id.trim();
    if id.is_empty() {
        return String::new();
    }
    Sha256::digest(id.as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
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
        busy: v.iter().take(3).sum(),
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
            own_start: own_cpu_seconds(),
            cpu_ticks_start: read_cpu_ticks(),
        }
    }

    /// The machine block for a run that ends now.
    pub fn finish(&self) -> MachineBlock {
        let end = read_cpu_ticks();
        let own = own_cpu_seconds() - self.own_start;
        let steal_pct = match (self.cpu_ticks_start, end) {
            (Some(a), Some(b)) if b.total > a.total => {
                100.0 * (b.steal - a.steal) as f64 / (b.total - a.total) as f64
            }
            _ => 0.0,
        };
        let others_pct = match (self.cpu_ticks_start, end) {
            (Some(a), Some(b)) => others_pct(a, b, own),
            _ => None,
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
            others_pct,
            host: host_name(),
            machine_id: machine_id_hash(),
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
        assert!(!m.host.is_empty());
        if std::path::Path::new("/etc/machine-id").exists() {
            assert_eq!(m.machine_id.len(), 16, "{}", m.machine_id);
            assert_eq!(m.machine_id, machine_id_hash(), "stable across calls");
        }
    }

    /// Spins the calling thread for `d`.
    fn spin(d: std::time::Duration) {
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < d {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }

    #[test]
    fn own_work_is_not_others() {
        // One of our threads busy the whole time raises the machine's busy
        // time by one CPU's worth, all of it ours: the share of others
        // must not rise by it against an idle window of the same length
        // (measured beside, so that a machine busy with other work passes
        // as well as a quiet one).
        let window = std::time::Duration::from_millis(600);
        let env = RunEnvironment::start();
        std::thread::sleep(window);
        let idle = env.finish().others_pct.expect("/proc/stat is readable");
        let env = RunEnvironment::start();
        spin(window);
        let m = env.finish();
        let busy = m.others_pct.expect("/proc/stat is readable");
        let one_cpu = 100.0 / m.cpus as f64;
        assert!(
            busy - idle < one_cpu / 2.0,
            "own spin counted as others: {busy:.1}% against {idle:.1}% idle (one CPU = {one_cpu:.1}%)"
        );
    }

    #[test]
    fn a_busy_stranger_is_others() {
        // A busy loop in a process outside our tree (its parent exits at
        // once, so it is never our reaped child) for the whole run.
        let out = std::process::Command::new("sh")
            .args([
                "-c",
                "sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!",
            ])
            .output()
            .expect("sh runs");
        let pid: i32 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("a pid");
        std::thread::sleep(std::time::Duration::from_millis(100));
        let env = RunEnvironment::start();
        std::thread::sleep(std::time::Duration::from_millis(800));
        let m = env.finish();
        // SAFETY: kill has no memory effects; pid is the loop we started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let one_cpu = 100.0 / m.cpus as f64;
        let others = m.others_pct.expect("/proc/stat is readable");
        assert!(
            others > one_cpu / 2.0,
            "a busy loop on one CPU not seen: {others:.1}% (one CPU = {one_cpu:.1}%)"
        );
        assert!(m.disturbed_pct().is_some());
    }

    #[test]
    fn old_documents_have_no_others() {
        let json = r#"{"cpu":"x","cpus":2,"kernel":"6","virtualized":true,"commit":"c","rustc":"r",
            "profile":"release","command":"takt","steal_pct":0.0,"load":[2.0,2.0,2.0]}"#;
        let m: MachineBlock = serde_json::from_str(json).unwrap();
        assert_eq!(m.others_pct, None);
        assert_eq!(m.disturbed_pct(), None);
        assert!(m.host.is_empty() && m.machine_id.is_empty());
    }
}
