//! Network namespaces behind veth pairs: a second host on this machine.
//!
//! [`Veth::create`] makes a namespace, a veth pair with one end moved into
//! it, an address on each end (a /30) and the links up, with iproute2
//! (`ip netns add`, `ip link add … type veth peer … netns`, `ip -n NS
//! addr add`), optionally through `sudo -n`. Every step is registered with
//! the [cleanup registry](crate::cleanup) as soon as it exists, so the
//! pair and the namespace go when the [`Veth`] drops, when the run ends or
//! is interrupted, and — through the registry's journal — at the next
//! start after a run that was killed. [`Veth::exec`] runs a program inside
//! (`ip netns exec NS`, which enters the namespace and execs the program
//! in the same process: its pid, group and placement are kept; Unix
//! sockets by path work across namespaces).
//!
//! Two uses, each with its own names and subnet:
//! - the SIP laboratory's `--net veth` ([`VethNet`]): the server in
//!   `takt-sut-PID` behind `tksrHEX`/`tkssHEX` on 10.214.0.0/16, with
//!   receive packet steering (RPS) of the namespace side to the server's
//!   CPUs and of the root side to the others. On loopback a UDP `sendto`
//!   runs the receiver's network stack inside the sender's system call,
//!   on the sender's CPU: the generator pays for the server's receive
//!   path. Across a veth pair the packet is queued to the peer device's
//!   backlog and processed in softirq context on the CPU that RPS picks,
//!   as a NIC's interrupts would place it. [`repair`] also deletes such
//!   namespaces and links whose PID no longer runs.
//! - the machine suite's namespace host (`takt machine`): a
//!   `takt machine --serve` peer in `takt-mPID` on 10.213.0.0/16.
//!
//! Needs CAP_NET_ADMIN and CAP_SYS_ADMIN (root, or `sudo` without a
//! password) and iproute2.

use std::net::{IpAddr, Ipv4Addr};
use std::process::{Command, Stdio};

use takt_sched::CpuSet;

use crate::cleanup::{register, Guard, Item};
use crate::error::{io, HostError, Result};

/// What to create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VethSpec {
    /// The namespace's name.
    pub namespace: String,
    /// The root side's device (≤ 15 bytes).
    pub root_dev: String,
    /// The namespace side's device (≤ 15 bytes).
    pub ns_dev: String,
    /// The root side's address.
    pub root_ip: Ipv4Addr,
    /// The namespace side's address (same /30).
    pub ns_ip: Ipv4Addr,
    /// Run `ip` through `sudo -n`.
    pub sudo: bool,
}

/// A namespace and veth pair that exist until dropped.
#[derive(Debug)]
pub struct Veth {
    spec: VethSpec,
    // Fields drop in declaration order: the root side's RPS mask first,
    // then the pair (deleted at once, rather than when the kernel gets
    // round to destroying the namespace), then the namespace.
    rps: Vec<Guard>,
    _link: Guard,
    _ns: Guard,
}

/// `ip ARGS`, through `sudo -n` when asked; its stdout.
fn ip(sudo: bool, args: &[&str]) -> Result<String> {
    let mut argv: Vec<&str> = if sudo { vec!["-n", "ip"] } else { vec![] };
    argv.extend_from_slice(args);
    let prog = if sudo { "sudo" } else { "ip" };
    let out = Command::new(prog)
        .args(&argv)
        .stdin(Stdio::null())
        .output()
        .map_err(io(format!("running {prog} (install iproute2)")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(HostError::Command {
            command: format!("{prog} {}", argv.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// `[sudo, -n,] ip ARGS` as an argument vector (for the registry).
fn ip_argv(sudo: bool, args: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = if sudo {
        vec!["sudo".into(), "-n".into()]
    } else {
        vec![]
    };
    v.push("ip".into());
    v.extend(args.iter().map(|s| s.to_string()));
    v
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

impl Veth {
    /// Creates the namespace and pair of `spec`, addresses on both ends
    /// and the links (and the namespace's loopback) up. On any error what
    /// was created is removed again.
    pub fn create(spec: VethSpec) -> Result<Veth> {
        let sudo = spec.sudo;
        let ns = spec.namespace.as_str();
        ip(sudo, &["netns", "add", ns])?;
        let ns_guard = register(if sudo {
            Item::Command(ip_argv(true, &["netns", "del", ns]))
        } else {
            Item::Netns(ns.to_string())
        });
        let link_add = [
            "link",
            "add",
            &spec.root_dev,
            "type",
            "veth",
            "peer",
            "name",
            &spec.ns_dev,
            "netns",
            ns,
        ];
        ip(sudo, &link_add)?;
        let link_guard = register(Item::Command(ip_argv(
            sudo,
            &["link", "del", &spec.root_dev],
        )));
        let root_cidr = format!("{}/30", spec.root_ip);
        let ns_cidr = format!("{}/30", spec.ns_ip);
        ip(sudo, &["addr", "add", &root_cidr, "dev", &spec.root_dev])?;
        ip(sudo, &["link", "set", &spec.root_dev, "up"])?;
        ip(
            sudo,
            &["-n", ns, "addr", "add", &ns_cidr, "dev", &spec.ns_dev],
        )?;
        ip(sudo, &["-n", ns, "link", "set", &spec.ns_dev, "up"])?;
        ip(sudo, &["-n", ns, "link", "set", "lo", "up"])?;
        Ok(Veth {
            spec,
            rps: Vec::new(),
            _link: link_guard,
            _ns: ns_guard,
        })
    }

    /// What was created.
    pub fn spec(&self) -> &VethSpec {
        &self.spec
    }

    /// The namespace's name (for `ip netns exec`).
    pub fn namespace(&self) -> &str {
        &self.spec.namespace
    }

    /// A command that runs `program` inside the namespace
    /// (`[sudo -n] ip netns exec NS program`); add its arguments.
    pub fn exec(&self, program: &str) -> Command {
        let mut c = if self.spec.sudo {
            let mut c = Command::new("sudo");
            c.args(["-n", "ip"]);
            c
        } else {
            Command::new("ip")
        };
        c.args(["netns", "exec", self.namespace(), program]);
        c
    }

    /// Sets receive packet steering: the namespace side's queue to
    /// `ns_cpus`, the root side's to `root_cpus` (left alone when empty).
    /// The root side's original mask is a registry item ([`Item::Write`]),
    /// put back when the pair drops; the namespace side's goes with the
    /// namespace (its sysfs is only visible inside it).
    pub fn set_rps(&mut self, ns_cpus: &CpuSet, root_cpus: &CpuSet) -> Result<()> {
        let mask = cpu_mask(ns_cpus);
        // the namespace side's sysfs is only visible inside the namespace
        // (ip netns exec mounts it there)
        let out = self
            .exec("sh")
            .arg("-c")
            .arg(format!(
                "echo {mask} > /sys/class/net/{}/queues/rx-0/rps_cpus",
                self.spec.ns_dev
            ))
            .stdin(Stdio::null())
            .output()
            .map_err(io("setting the namespace side's RPS mask"))?;
        if !out.status.success() {
            return Err(HostError::Command {
                command: format!("RPS of {} to {mask}", self.spec.ns_dev),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        if !root_cpus.is_empty() {
            let p = format!("/sys/class/net/{}/queues/rx-0/rps_cpus", self.spec.root_dev);
            let original = std::fs::read_to_string(&p).map_err(io(format!("reading {p}")))?;
            self.rps.push(register(Item::Write {
                path: p.clone().into(),
                original: original.trim().to_string(),
            }));
            std::fs::write(&p, cpu_mask(root_cpus)).map_err(io(format!("writing {p}")))?;
        }
        Ok(())
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

/// The SIP laboratory's namespace name prefix.
const NS_PREFIX: &str = "takt-sut-";
/// Its root-side and namespace-side device prefixes (names stay ≤ 15 bytes).
const ROOT_DEV: &str = "tksr";
const NS_DEV: &str = "tkss";

/// The /30 for `pid` in 10.214.0.0/16: (root side, server side).
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

/// Deletes the SIP laboratory's namespaces and root-side links left by
/// runs that no longer exist (also those of runs older than the cleanup
/// journal). Returns what it deleted.
pub fn repair() -> Result<Vec<String>> {
    let mut gone = Vec::new();
    for line in ip(false, &["netns", "list"])?.lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        if let Some(pid) = name.strip_prefix(NS_PREFIX).and_then(|p| p.parse().ok()) {
            if !alive(pid) {
                ip(false, &["netns", "del", name])?;
                gone.push(name.to_string());
            }
        }
    }
    for line in ip(false, &["-o", "link", "show"])?.lines() {
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
                ip(false, &["link", "del", dev])?;
                gone.push(dev.to_string());
            }
        }
    }
    Ok(gone)
}

/// The fleet's namespace name prefix (`takt-fleet-PID-I`).
const FLEET_NS_PREFIX: &str = "takt-fleet-";

/// Indexed namespaces on one bridge: `n` hosts on this machine, each
/// with its own address, all reaching each other and the root namespace
/// (a fleet of generators in a test). The bridge `tkfbHEX` in the root
/// namespace holds `10.216.B.1/24`; namespace `I` (`takt-fleet-PID-I`)
/// holds `10.216.B.(I+2)/24` behind a veth pair whose root side is a
/// port of the bridge, and a default route through the bridge. `B`
/// comes from the PID, so concurrent runs use different subnets. Every
/// step is registered with the cleanup registry: the namespaces, pairs
/// and bridge go when this drops, and after a killed run at the next
/// start.
#[derive(Debug)]
pub struct IndexedNets {
    /// The namespaces' names, in index order.
    names: Vec<String>,
    /// The bridge's address (a server here is reached from every
    /// namespace).
    pub bridge_ip: Ipv4Addr,
    /// Each namespace's address, in index order.
    pub ips: Vec<Ipv4Addr>,
    sudo: bool,
    // dropped in order: the pairs, the namespaces, then the bridge
    _pairs: Vec<Guard>,
    _ns: Vec<Guard>,
    _bridge: Guard,
}

impl IndexedNets {
    /// Creates `n` (1..=200) namespaces on a fresh bridge. Needs root
    /// (or `sudo -n` when `sudo`). On any error what was created is
    /// removed again.
    pub fn create(n: usize, sudo: bool) -> Result<IndexedNets> {
        if !(1..=200).contains(&n) {
            return Err(HostError::Config(format!(
                "{n} namespaces: between 1 and 200"
            )));
        }
        let pid = std::process::id();
        let b = (pid % 251) as u8 + 1;
        let bridge = format!("tkfb{pid:x}");
        let bridge_ip = Ipv4Addr::new(10, 216, b, 1);
        ip(sudo, &["link", "add", &bridge, "type", "bridge"])?;
        let bridge_guard = register(Item::Command(ip_argv(sudo, &["link", "del", &bridge])));
        ip(
            sudo,
            &["addr", "add", &format!("{bridge_ip}/24"), "dev", &bridge],
        )?;
        ip(sudo, &["link", "set", &bridge, "up"])?;
        let mut nets = IndexedNets {
            names: Vec::new(),
            bridge_ip,
            ips: Vec::new(),
            sudo,
            _pairs: Vec::new(),
            _ns: Vec::new(),
            _bridge: bridge_guard,
        };
        for i in 0..n {
            let ns = format!("{FLEET_NS_PREFIX}{pid}-{i}");
            let root_dev = format!("tkfr{pid:x}-{i}");
            let ns_dev = format!("tkfn{pid:x}-{i}");
            let addr = Ipv4Addr::new(10, 216, b, i as u8 + 2);
            ip(sudo, &["netns", "add", &ns])?;
            nets._ns.push(register(if sudo {
                Item::Command(ip_argv(true, &["netns", "del", &ns]))
            } else {
                Item::Netns(ns.clone())
            }));
            ip(
                sudo,
                &[
                    "link", "add", &root_dev, "type", "veth", "peer", "name", &ns_dev, "netns", &ns,
                ],
            )?;
            nets._pairs.push(register(Item::Command(ip_argv(
                sudo,
                &["link", "del", &root_dev],
            ))));
            ip(sudo, &["link", "set", &root_dev, "master", &bridge])?;
            ip(sudo, &["link", "set", &root_dev, "up"])?;
            let cidr = format!("{addr}/24");
            ip(sudo, &["-n", &ns, "addr", "add", &cidr, "dev", &ns_dev])?;
            ip(sudo, &["-n", &ns, "link", "set", &ns_dev, "up"])?;
            ip(sudo, &["-n", &ns, "link", "set", "lo", "up"])?;
            let via = bridge_ip.to_string();
            ip(sudo, &["-n", &ns, "route", "add", "default", "via", &via])?;
            nets.names.push(ns);
            nets.ips.push(addr);
        }
        Ok(nets)
    }

    /// The namespaces' names, in index order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// A command that runs `program` inside namespace `i`
    /// (`[sudo -n] ip netns exec NS program`); add its arguments.
    pub fn exec(&self, i: usize, program: &str) -> Command {
        let mut c = if self.sudo {
            let mut c = Command::new("sudo");
            c.args(["-n", "ip"]);
            c
        } else {
            Command::new("ip")
        };
        c.args(["netns", "exec", &self.names[i], program]);
        c
    }
}

/// `--net veth`: the server in a namespace of its own (see the module
/// docs); exists until dropped.
#[derive(Debug)]
pub struct VethNet {
    veth: Veth,
    /// The root side's address (the generator binds here).
    pub root_ip: IpAddr,
    /// The namespace side's address (the server listens here).
    pub server_ip: IpAddr,
}

impl VethNet {
    /// Repairs what dead runs left, then creates this run's namespace and
    /// pair with RPS of the namespace side to `server_cpus` and of the root
    /// side to the other online CPUs. Needs root. On any error what was
    /// created is removed again.
    pub fn create(server_cpus: &CpuSet) -> Result<VethNet> {
        if !is_root() {
            return Err(HostError::Privilege(
                "--net veth needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN)".into(),
            ));
        }
        repair()?;
        let pid = std::process::id();
        let (root_ip, server_ip) = addresses(pid);
        let mut veth = Veth::create(VethSpec {
            namespace: format!("{NS_PREFIX}{pid}"),
            root_dev: format!("{ROOT_DEV}{pid:x}"),
            ns_dev: format!("{NS_DEV}{pid:x}"),
            root_ip,
            ns_ip: server_ip,
            sudo: false,
        })?;
        let mut others = CpuSet::empty();
        for c in CpuSet::online()
            .iter()
            .filter(|c| !server_cpus.contains(*c))
        {
            others.insert(c);
        }
        veth.set_rps(server_cpus, &others)?;
        Ok(VethNet {
            veth,
            root_ip: IpAddr::V4(root_ip),
            server_ip: IpAddr::V4(server_ip),
        })
    }

    /// The namespace's name (for `ip netns exec`).
    pub fn namespace(&self) -> &str {
        self.veth.namespace()
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
        assert_eq!(
            ip_argv(true, &["netns", "del", "x"]),
            ["sudo", "-n", "ip", "netns", "del", "x"]
        );
        assert_eq!(
            ip_argv(false, &["link", "del", "d"]),
            ["ip", "link", "del", "d"]
        );
    }

    #[test]
    fn indexed_namespaces_reach_each_other_and_go_away() {
        if !is_root() || ip(false, &["netns", "list"]).is_err() {
            eprintln!("skipped: needs root and iproute2");
            return;
        }
        let nets = match IndexedNets::create(2, false) {
            Ok(n) => n,
            Err(e) => return eprintln!("skipped: {e}"),
        };
        let names = nets.names().to_vec();
        assert_eq!(names.len(), 2);
        assert_ne!(nets.ips[0], nets.ips[1]);
        // each namespace reaches a socket on the bridge's address
        let sock = std::net::UdpSocket::bind((nets.bridge_ip, 0)).unwrap();
        sock.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let to = sock.local_addr().unwrap();
        for i in 0..2 {
            let out = nets
                .exec(i, "bash")
                .args([
                    "-c",
                    &format!("echo ns{i} > /dev/udp/{}/{}", to.ip(), to.port()),
                ])
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            let mut buf = [0u8; 16];
            let (n, from) = sock.recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], format!("ns{i}\n").as_bytes());
            assert_eq!(from.ip(), std::net::IpAddr::V4(nets.ips[i]));
        }
        drop(nets);
        let list = ip(false, &["netns", "list"]).unwrap();
        assert!(names.iter().all(|n| !list.contains(n.as_str())), "{list}");
    }

    #[test]
    fn a_pair_is_created_and_removed_as_root() {
        if !is_root() || ip(false, &["netns", "list"]).is_err() {
            eprintln!("skipped: needs root and iproute2");
            return;
        }
        let pid = std::process::id();
        let spec = VethSpec {
            namespace: format!("takt-hosttest-{pid}"),
            root_dev: format!("tkht{:x}a", pid % 0x10000),
            ns_dev: format!("tkht{:x}b", pid % 0x10000),
            root_ip: Ipv4Addr::new(10, 215, 0, 1),
            ns_ip: Ipv4Addr::new(10, 215, 0, 2),
            sudo: false,
        };
        let v = match Veth::create(spec.clone()) {
            Ok(v) => v,
            // a container without the capabilities
            Err(e) => return eprintln!("skipped: {e}"),
        };
        assert!(ip(false, &["netns", "list"])
            .unwrap()
            .contains(&spec.namespace));
        let out = v.exec("ip").args(["-o", "addr"]).output().unwrap();
        assert!(String::from_utf8_lossy(&out.stdout).contains("10.215.0.2"));
        drop(v);
        assert!(!ip(false, &["netns", "list"])
            .unwrap()
            .contains(&spec.namespace));
        assert!(!ip(false, &["-o", "link", "show"])
            .unwrap()
            .contains(&spec.root_dev));
    }
}
