//! `--net veth`: the server in a network namespace of its own behind a
//! veth pair, with receive packet steering (RPS) to the server's CPU.
//!
//! On loopback a UDP `sendto` runs the receiver's network stack inside the
//! sender's system call, on the sender's CPU: the generator pays for the
//! server's receive path. Across a veth pair the packet is queued to the
//! peer device's backlog and processed in softirq context on the CPU that
//! RPS picks — set here to the server's CPU for the namespace side (and to
//! the other CPUs for the root side, where responses arrive), as a NIC's
//! interrupts would place it.
//!
//! # What is changed, and how it is undone
//! 1. A namespace `takt-sut-PID` (`ip netns add`).
//! 2. A veth pair `tksrHEX` (root side) / `tkssHEX` (moved into the
//!    namespace), HEX being this process's PID; addresses from
//!    10.214.0.0/16, a /30 chosen from the PID (root side `.1`, server
//!    side `.2`); both ends and the namespace's loopback up.
//! 3. RPS masks on both ends' receive queue.
//!
//! Nothing else (no sysctl) is touched. Deleting the namespace deletes the
//! pair and with it the masks: [`VethNet`]'s `Drop` does that, so a normal
//! exit, an error, and a Ctrl-C that unwinds all restore the host. A run
//! killed outright leaves its namespace behind: [`repair`], called by
//! every [`VethNet::create`], deletes namespaces and links of this kind
//! whose PID no longer runs.
//!
//! Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2. The server is
//! started through `ip netns exec NAME`, which enters the namespace and
//! execs the server in the same process (its PID, group and placement are
//! kept); Unix sockets by path (takt's statistics, Kamailio's ctl) work
//! across namespaces.

use std::net::{IpAddr, Ipv4Addr};
use std::process::{Command, Stdio};

use takt_sched::CpuSet;

use crate::error::{io, Error, Result};

/// Namespace name prefix.
const NS_PREFIX: &str = "takt-sut-";
/// Root-side and namespace-side device prefixes (names stay ≤ 15 bytes).
const ROOT_DEV: &str = "tksr";
const NS_DEV: &str = "tkss";

/// A namespace and veth pair that exist until dropped (see the module docs).
#[derive(Debug)]
pub struct VethNet {
    ns: String,
    root_dev: String,
    /// The root side's address (the generator binds here).
    pub root_ip: IpAddr,
    /// The namespace side's address (the server listens here).
    pub server_ip: IpAddr,
}

fn ip(args: &[&str]) -> Result<String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(io("running ip (iproute2; scripts/setup.sh installs it)"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(Error::Config(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// The kernel's CPU mask format: comma-separated 32-bit hex groups, most
/// significant first.
pub fn cpu_mask(cpus: &CpuSet) -> String {
    let top = cpus.iter().max().unwrap_or(0);
    let groups = top / 32 + 1;
    let mut words = vec![0u32; groups];
    for c in cpus.iter() {
        words[c / 32] |= 1 << (c % 32);
    }
    words
        .iter()
        .rev()
        .map(|w| format!("{w:x}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The /30 for `pid`: (root side, server side).
fn addresses(pid: u32) -> (Ipv4Addr, Ipv4Addr) {
    let n = (pid % 16_384) * 4;
    let (hi, lo) = ((n >> 8) as u8, (n & 0xff) as u8);
    (
        Ipv4Addr::new(10, 214, hi, lo + 1),
        Ipv4Addr::new(10, 214, hi, lo + 2),
    )
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Deletes namespaces and root-side links of this kind left by runs that
/// no longer exist. Returns what it deleted.
pub fn repair() -> Result<Vec<String>> {
    let mut gone = Vec::new();
    for line in ip(&["netns", "list"])?.lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        if let Some(pid) = name.strip_prefix(NS_PREFIX).and_then(|p| p.parse().ok()) {
            if !alive(pid) {
                ip(&["netns", "del", name])?;
                gone.push(name.to_string());
            }
        }
    }
    for line in ip(&["-o", "link", "show"])?.lines() {
        // "7: tksr1a2b@if6: <...>"
        let Some(dev) = line
            .split(": ")
            .nth(1)
            .map(|d| d.split('@').next().unwrap_or(d))
        else {
            continue;
        };
        if let Some(pid) = dev
            .strip_prefix(ROOT_DEV)
            .and_then(|h| u32::from_str_radix(h, 16).ok())
        {
            if !alive(pid) {
                ip(&["link", "del", dev])?;
                gone.push(dev.to_string());
            }
        }
    }
    Ok(gone)
}

impl VethNet {
    /// Repairs what dead runs left, then creates this run's namespace and
    /// pair with RPS of the namespace side to `server_cpus` and of the root
    /// side to the other online CPUs. On any error what was created is
    /// removed again.
    pub fn create(server_cpus: &CpuSet) -> Result<VethNet> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err(Error::Config(
                "--net veth needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN)".into(),
            ));
        }
        repair()?;
        let pid = std::process::id();
        let (root_ip, server_ip) = addresses(pid);
        let net = VethNet {
            ns: format!("{NS_PREFIX}{pid}"),
            root_dev: format!("{ROOT_DEV}{pid:x}"),
            root_ip: IpAddr::V4(root_ip),
            server_ip: IpAddr::V4(server_ip),
        };
        let ns_dev = format!("{NS_DEV}{pid:x}");
        ip(&["netns", "add", &net.ns])?;
        // from here on, dropping `net` undoes everything
        ip(&[
            "link",
            "add",
            &net.root_dev,
            "type",
            "veth",
            "peer",
            "name",
            &ns_dev,
            "netns",
            &net.ns,
        ])?;
        ip(&[
            "addr",
            "add",
            &format!("{root_ip}/30"),
            "dev",
            &net.root_dev,
        ])?;
        ip(&["link", "set", &net.root_dev, "up"])?;
        let in_ns = |args: &[&str]| {
            let mut a = vec!["netns", "exec", net.ns.as_str(), "ip"];
            a.extend_from_slice(args);
            ip(&a)
        };
        in_ns(&["addr", "add", &format!("{server_ip}/30"), "dev", &ns_dev])?;
        in_ns(&["link", "set", &ns_dev, "up"])?;
        in_ns(&["link", "set", "lo", "up"])?;
        let mask = cpu_mask(server_cpus);
        // the namespace side's sysfs is only visible inside the namespace
        // (ip netns exec mounts it there)
        let out = Command::new("ip")
            .args(["netns", "exec", &net.ns, "sh", "-c"])
            .arg(format!(
                "echo {mask} > /sys/class/net/{ns_dev}/queues/rx-0/rps_cpus"
            ))
            .output()
            .map_err(io("setting the server side's RPS mask"))?;
        if !out.status.success() {
            return Err(Error::Config(format!(
                "setting RPS of {ns_dev} to {mask}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let mut others = CpuSet::empty();
        for c in CpuSet::online()
            .iter()
            .filter(|c| !server_cpus.contains(*c))
        {
            others.insert(c);
        }
        if !others.is_empty() {
            let p = format!("/sys/class/net/{}/queues/rx-0/rps_cpus", net.root_dev);
            std::fs::write(&p, cpu_mask(&others)).map_err(io(format!("writing {p}")))?;
        }
        Ok(net)
    }

    /// The namespace's name (for `ip netns exec`).
    pub fn namespace(&self) -> &str {
        &self.ns
    }
}

impl Drop for VethNet {
    fn drop(&mut self) {
        // deleting the root end removes its peer at once; the namespace
        // goes next (and would take the pair with it anyway)
        let _ = ip(&["link", "del", &self.root_dev]);
        let _ = ip(&["netns", "del", &self.ns]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_addresses() {
        assert_eq!(cpu_mask(&"1".parse().unwrap()), "2");
        assert_eq!(cpu_mask(&"0-3".parse().unwrap()), "f");
        assert_eq!(cpu_mask(&"0,33".parse().unwrap()), "2,1");
        let (r, s) = addresses(16_384 + 65);
        assert_eq!(
            (r, s),
            ("10.214.1.5".parse().unwrap(), "10.214.1.6".parse().unwrap())
        );
        let (r, _) = addresses(16_383);
        assert_eq!(r, "10.214.255.253".parse::<Ipv4Addr>().unwrap());
    }
}
