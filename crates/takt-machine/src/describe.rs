//! What the machine is: CPU, caches, memory, kernel, clocks, hypervisor and
//! speculative-execution mitigations, read from `/proc` and `/sys`.
//!
//! The parsers are pure functions over the files' text (tested on fixtures);
//! [`Description::read`] feeds them the live files. A file that cannot be
//! read leaves its fields at "unknown"/0 rather than failing the run.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// One cache as sysfs describes it (`/sys/devices/system/cpu/cpu0/cache/indexN`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheInfo {
    /// 1, 2, 3, ...
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Coherency line size in bytes.
    pub line_bytes: u32,
    /// Associativity (0 when unknown).
    pub ways: u32,
    /// CPUs sharing this cache, as sysfs lists them (`0-1`).
    pub shared_cpus: String,
}

impl CacheInfo {
    /// Whether data goes through this cache (data or unified).
    pub fn holds_data(&self) -> bool {
        self.kind != "Instruction"
    }
}

/// Facts from `/proc/cpuinfo`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuInfo {
    /// `model name`.
    pub model: String,
    /// `vendor_id`.
    pub vendor: String,
    /// `cpu family`, `model`, `stepping`.
    pub family_model_stepping: [u32; 3],
    /// Logical CPUs listed.
    pub logical: usize,
    /// Distinct (physical id, core id) pairs.
    pub cores: usize,
    /// Distinct physical ids.
    pub sockets: usize,
    /// `cpu MHz` of the first CPU (in a VM often the TSC rate, not the core clock).
    pub reported_mhz: f64,
    /// Flags of interest that are present (TSC, virtualization, SMT).
    pub flags: Vec<String>,
}

/// Flags worth reporting out of the hundred-odd in `/proc/cpuinfo`.
const FLAGS_OF_INTEREST: [&str; 12] = [
    "tsc",
    "constant_tsc",
    "nonstop_tsc",
    "tsc_known_freq",
    "rdtscp",
    "tsc_reliable",
    "hypervisor",
    "ht",
    "avx2",
    "avx512f",
    "erms",
    "fsrm",
];

/// Parses `/proc/cpuinfo` text.
pub fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut info = CpuInfo::default();
    let mut cores = BTreeSet::new();
    let mut sockets = BTreeSet::new();
    let mut physical = String::from("0");
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match k {
            "processor" => info.logical += 1,
            "model name" if info.model.is_empty() => info.model = v.into(),
            "vendor_id" if info.vendor.is_empty() => info.vendor = v.into(),
            "cpu family" if info.logical == 1 => {
                info.family_model_stepping[0] = v.parse().unwrap_or(0)
            }
            "model" if info.logical == 1 => info.family_model_stepping[1] = v.parse().unwrap_or(0),
            "stepping" if info.logical == 1 => {
                info.family_model_stepping[2] = v.parse().unwrap_or(0)
            }
            "cpu MHz" if info.reported_mhz == 0.0 => info.reported_mhz = v.parse().unwrap_or(0.0),
            "physical id" => {
                physical = v.into();
                sockets.insert(v.to_string());
            }
            "core id" => {
                cores.insert((physical.clone(), v.to_string()));
            }
            "flags" if info.flags.is_empty() => {
                let have: BTreeSet<&str> = v.split_whitespace().collect();
                info.flags = FLAGS_OF_INTEREST
                    .iter()
                    .filter(|f| have.contains(*f))
                    .map(|f| f.to_string())
                    .collect();
            }
            _ => {}
        }
    }
    info.cores = cores.len().max(usize::from(info.logical > 0));
    info.sockets = sockets.len().max(usize::from(info.logical > 0));
    info
}

/// Parses a sysfs cache size such as `48K`, `1024K`, `32M`, `512`.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, mult) = match t.as_bytes().last()? {
        b'K' | b'k' => (&t[..t.len() - 1], 1u64 << 10),
        b'M' | b'm' => (&t[..t.len() - 1], 1 << 20),
        b'G' | b'g' => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

/// The selected value of a sysfs choice file: `always [madvise] never` → `madvise`.
pub fn bracketed(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(text[start + 1..end].to_string())
}

/// A `/proc/meminfo` value in bytes (`MemTotal: 24580000 kB`).
pub fn meminfo_bytes(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.split(':').next() == Some(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// Reads the caches of CPU 0 from a sysfs `cache` directory.
pub fn read_caches(dir: &Path) -> Vec<CacheInfo> {
    let mut out = Vec::new();
    for i in 0..16 {
        let d = dir.join(format!("index{i}"));
        let read = |f: &str| fs::read_to_string(d.join(f)).map(|s| s.trim().to_string());
        let Ok(level) = read("level") else { break };
        out.push(CacheInfo {
            level: level.parse().unwrap_or(0),
            kind: read("type").unwrap_or_default(),
            size_bytes: read("size").ok().and_then(|s| parse_size(&s)).unwrap_or(0),
            line_bytes: read("coherency_line_size")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0),
            ways: read("ways_of_associativity")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0),
            shared_cpus: read("shared_cpu_list").unwrap_or_default(),
        });
    }
    out
}

/// The machine, as the suite reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Description {
    /// From `/proc/cpuinfo`.
    pub cpu: CpuInfo,
    /// Hardware threads per core.
    pub threads_per_core: usize,
    /// Caches of CPU 0.
    pub caches: Vec<CacheInfo>,
    /// `MemTotal`, bytes.
    pub mem_total: u64,
    /// `MemAvailable` at the start, bytes.
    pub mem_available: u64,
    /// Base page size, bytes.
    pub page_size: u64,
    /// Transparent huge pages mode (`always`, `madvise`, `never`).
    pub thp: String,
    /// Kernel release.
    pub kernel: String,
    /// `/proc/version` build line.
    pub kernel_build: String,
    /// The CPU scheduler (EEVDF from Linux 6.6, CFS before).
    pub scheduler: String,
    /// Preemption model as the build line states it.
    pub preempt: String,
    /// Current clocksource.
    pub clocksource: String,
    /// Available clocksources.
    pub clocksources_available: String,
    /// TSC rate in MHz measured against CLOCK_MONOTONIC (0 without a TSC clock).
    pub tsc_mhz: f64,
    /// Hypervisor, if any (`KVM`, `Microsoft Hv`, ... from CPUID 0x40000000).
    pub hypervisor: Option<String>,
    /// `(vulnerability, status)` from `/sys/devices/system/cpu/vulnerabilities`.
    pub mitigations: Vec<(String, String)>,
    /// Whether this process runs as root (drop_caches, namespaces).
    pub root: bool,
}

impl Description {
    /// Reads the live machine.
    pub fn read() -> Description {
        let rd = |p: &str| fs::read_to_string(p).unwrap_or_default();
        let cpu = parse_cpuinfo(&rd("/proc/cpuinfo"));
        let meminfo = rd("/proc/meminfo");
        let build = rd("/proc/version").trim().to_string();
        let kernel = takt_measure::env::kernel_release();
        let c = takt_sched::clock();
        let tsc_mhz = match c.source() {
            takt_sched::ClockSource::Tsc => c.frequency_hz() / 1e6,
            takt_sched::ClockSource::Monotonic => 0.0,
        };
        let mut mitigations: Vec<(String, String)> =
            fs::read_dir("/sys/devices/system/cpu/vulnerabilities")
                .map(|d| {
                    d.filter_map(Result::ok)
                        .map(|e| {
                            (
                                e.file_name().to_string_lossy().into_owned(),
                                fs::read_to_string(e.path())
                                    .unwrap_or_default()
                                    .trim()
                                    .to_string(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
        mitigations.sort();
        let threads_per_core = cpu.logical.checked_div(cpu.cores).unwrap_or(1).max(1);
        Description {
            threads_per_core,
            caches: read_caches(Path::new("/sys/devices/system/cpu/cpu0/cache")),
            mem_total: meminfo_bytes(&meminfo, "MemTotal").unwrap_or(0),
            mem_available: meminfo_bytes(&meminfo, "MemAvailable").unwrap_or(0),
            // SAFETY: sysconf has no preconditions.
            page_size: unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64,
            thp: bracketed(&rd("/sys/kernel/mm/transparent_hugepage/enabled"))
                .unwrap_or_else(|| "unavailable".into()),
            scheduler: scheduler_of(&kernel),
            preempt: preempt_of(&build),
            kernel,
            kernel_build: build,
            clocksource: rd("/sys/devices/system/clocksource/clocksource0/current_clocksource")
                .trim()
                .to_string(),
            clocksources_available: rd(
                "/sys/devices/system/clocksource/clocksource0/available_clocksource",
            )
            .trim()
            .to_string(),
            tsc_mhz,
            hypervisor: if cpu.flags.iter().any(|f| f == "hypervisor") {
                Some(hypervisor_vendor())
            } else {
                None
            },
            mitigations,
            // SAFETY: geteuid has no preconditions.
            root: unsafe { libc::geteuid() } == 0,
            cpu,
        }
    }

    /// The sysfs cache of `level` that holds data.
    pub fn data_cache(&self, level: u32) -> Option<&CacheInfo> {
        self.caches
            .iter()
            .find(|c| c.level == level && c.holds_data())
    }

    /// The cache line size (L1 data), 64 when unknown.
    pub fn line_size(&self) -> u32 {
        self.data_cache(1)
            .map(|c| c.line_bytes)
            .filter(|&l| l > 0)
            .unwrap_or(64)
    }

    /// Whether a mitigation is active at kernel entry (changes syscall costs).
    pub fn entry_mitigations(&self) -> Vec<String> {
        self.mitigations
            .iter()
            .filter(|(name, status)| {
                let s = status.to_ascii_lowercase();
                matches!(
                    name.as_str(),
                    "meltdown" | "retbleed" | "spec_rstack_overflow" | "spectre_v2" | "mds"
                ) && s.starts_with("mitigation")
                    && (s.contains("pti")
                        || s.contains("ibrs")
                        || s.contains("safe ret")
                        || s.contains("untrained return")
                        || s.contains("ibpb")
                        || s.contains("clear cpu buffers"))
            })
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// The human description block.
    pub fn render(&self) -> String {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let mut s = String::new();
        let c = &self.cpu;
        s.push_str(&format!(
            "cpu:          {} ({} family {} model {} stepping {})\n",
            c.model,
            c.vendor,
            c.family_model_stepping[0],
            c.family_model_stepping[1],
            c.family_model_stepping[2]
        ));
        s.push_str(&format!(
            "topology:     {} logical CPUs, {} cores, {} socket(s), {} thread(s)/core\n",
            c.logical, c.cores, c.sockets, self.threads_per_core
        ));
        for k in &self.caches {
            s.push_str(&format!(
                "cache:        L{} {:<11} {:>7} KiB, line {} B, {}-way, shared by {}\n",
                k.level,
                k.kind,
                k.size_bytes / 1024,
                k.line_bytes,
                k.ways,
                k.shared_cpus
            ));
        }
        s.push_str(&format!(
            "memory:       {:.1} GiB total, {:.1} GiB available, page {} B, THP {}\n",
            gib(self.mem_total),
            gib(self.mem_available),
            self.page_size,
            self.thp
        ));
        s.push_str(&format!(
            "kernel:       {} ({} scheduler, {})\n",
            self.kernel, self.scheduler, self.preempt
        ));
        s.push_str(&format!(
            "clock:        {} (available: {}); TSC {:.1} MHz; flags {}\n",
            self.clocksource,
            self.clocksources_available,
            self.tsc_mhz,
            c.flags.join(" ")
        ));
        s.push_str(&format!(
            "cpu MHz:      {:.1} (as /proc/cpuinfo reports it)\n",
            c.reported_mhz
        ));
        s.push_str(&format!(
            "virtualized:  {}\n",
            self.hypervisor.as_deref().unwrap_or("no")
        ));
        let active: Vec<String> = self
            .mitigations
            .iter()
            .filter(|(_, st)| st.starts_with("Mitigation"))
            .map(|(n, st)| format!("{n} ({})", st.trim_start_matches("Mitigation: ")))
            .collect();
        s.push_str(&format!("mitigations:  {}\n", active.join("; ")));
        s
    }
}

/// EEVDF replaced CFS in Linux 6.6.
pub fn scheduler_of(release: &str) -> String {
    let mut it = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|t| t.parse::<u32>().ok());
    let (major, minor) = (it.next().unwrap_or(0), it.next().unwrap_or(0));
    if (major, minor) >= (6, 6) {
        "EEVDF".into()
    } else {
        "CFS".into()
    }
}

/// The preemption model named in the kernel build line.
pub fn preempt_of(build: &str) -> String {
    for key in ["PREEMPT_RT", "PREEMPT_DYNAMIC", "PREEMPT_LAZY", "PREEMPT"] {
        if build.split_whitespace().any(|w| w == key) {
            let dynamic = std::fs::read_to_string("/sys/kernel/debug/sched/preempt")
                .ok()
                .and_then(|t| bracketed(&t));
            return match dynamic {
                Some(mode) => format!("{key}, booted as {mode}"),
                None => key.into(),
            };
        }
    }
    "no preemption (server)".into()
}

/// The hypervisor vendor signature from CPUID leaf 0x40000000 (this causes
/// one VM exit, outside any timed region).
fn hypervisor_vendor() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        // The hypervisor leaf is defined whenever the hypervisor flag is set.
        let r = core::arch::x86_64::__cpuid(0x4000_0000);
        let mut b = Vec::with_capacity(12);
        for w in [r.ebx, r.ecx, r.edx] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        let sig = String::from_utf8_lossy(&b)
            .trim_matches(char::from(0))
            .trim()
            .to_string();
        match sig.as_str() {
            "KVMKVMKVM" => "KVM".into(),
            "" => "unknown hypervisor".into(),
            other => other.into(),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        "unknown hypervisor".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPUINFO: &str = "processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
stepping\t: 1
cpu MHz\t\t: 2445.406
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu tsc msr constant_tsc rep_good nopl nonstop_tsc hypervisor rdtscp avx2

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
stepping\t: 1
cpu MHz\t\t: 2445.406
physical id\t: 0
core id\t\t: 1
flags\t\t: fpu tsc msr constant_tsc rep_good nopl nonstop_tsc hypervisor rdtscp avx2
";

    #[test]
    fn cpuinfo_fixture() {
        let c = parse_cpuinfo(CPUINFO);
        assert_eq!(c.model, "AMD EPYC");
        assert_eq!(c.vendor, "AuthenticAMD");
        assert_eq!(c.family_model_stepping, [25, 1, 1]);
        assert_eq!((c.logical, c.cores, c.sockets), (2, 2, 1));
        assert_eq!(c.reported_mhz, 2445.406);
        assert!(c.flags.contains(&"constant_tsc".to_string()));
        assert!(c.flags.contains(&"hypervisor".to_string()));
        assert!(!c.flags.contains(&"fpu".to_string()));
    }

    #[test]
    fn smt_fixture_counts_cores() {
        // Two logical CPUs on one core.
        let t = "processor : 0\nphysical id : 0\ncore id : 0\n\nprocessor : 1\nphysical id : 0\ncore id : 0\n";
        let c = parse_cpuinfo(t);
        assert_eq!((c.logical, c.cores), (2, 1));
    }

    #[test]
    fn sizes_and_choices() {
        assert_eq!(parse_size("48K"), Some(48 * 1024));
        assert_eq!(parse_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(
            bracketed("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        assert_eq!(bracketed("none"), None);
    }

    #[test]
    fn meminfo_fixture() {
        let t = "MemTotal:       24580000 kB\nMemFree:        23000000 kB\nMemAvailable:   23500000 kB\n";
        assert_eq!(meminfo_bytes(t, "MemTotal"), Some(24_580_000 * 1024));
        assert_eq!(meminfo_bytes(t, "MemAvailable"), Some(23_500_000 * 1024));
        assert_eq!(meminfo_bytes(t, "Mem"), None);
    }

    #[test]
    fn scheduler_by_release() {
        assert_eq!(scheduler_of("6.18.44"), "EEVDF");
        assert_eq!(scheduler_of("6.6.0-rc1"), "EEVDF");
        assert_eq!(scheduler_of("6.1.0-27-amd64"), "CFS");
        assert_eq!(scheduler_of("4.4.0-57-generic"), "CFS");
    }

    #[test]
    fn sysfs_caches_fixture() {
        let dir = std::env::temp_dir().join(format!("takt-cache-fixture-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for (i, (level, kind, size)) in [(1, "Data", "48K"), (2, "Unified", "1024K")]
            .iter()
            .enumerate()
        {
            let d = dir.join(format!("index{i}"));
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("level"), format!("{level}\n")).unwrap();
            fs::write(d.join("type"), format!("{kind}\n")).unwrap();
            fs::write(d.join("size"), format!("{size}\n")).unwrap();
            fs::write(d.join("coherency_line_size"), "64\n").unwrap();
            fs::write(d.join("ways_of_associativity"), "12\n").unwrap();
            fs::write(d.join("shared_cpu_list"), "0\n").unwrap();
        }
        let caches = read_caches(&dir);
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(caches.len(), 2);
        assert_eq!(caches[0].size_bytes, 48 * 1024);
        assert_eq!(caches[1].kind, "Unified");
        assert_eq!(caches[1].line_bytes, 64);
        let d = Description {
            caches,
            ..Default::default()
        };
        assert_eq!(d.line_size(), 64);
        assert_eq!(d.data_cache(2).unwrap().size_bytes, 1 << 20);
    }
}
