//! The server's side of the books, from `/proc`, for any server process:
//! its sockets' drop counters, the host's UDP error counters, its CPU time
//! and its threads' scheduler counters — sampled before and after a
//! measured window and subtracted ([`ServerWindow::between`]).
//!
//! - **Socket drops**: the `drops` column of `/proc/net/udp` and
//!   `/proc/net/udp6` (datagrams the kernel discarded for that socket:
//!   receive buffer full, or a filter), found by local port and, when the
//!   server's PIDs are known, by socket inode (the links in
//!   `/proc/PID/fd`). With a PID the tables are read from
//!   `/proc/PID/net/`, i.e. in the server's network namespace.
//! - **Host UDP counters** (`RcvbufErrors`, `InErrors`: what `netstat -su`
//!   shows, the paper's drop figure) of the server's network namespace
//!   (`/proc/PID/net/snmp`), read with takt-sip's parsers into
//!   [`takt_sip::stats::snmp::UdpCounters`].
//! - **CPU time**: utime + stime of each process from `/proc/PID/stat`
//!   (which includes threads that have exited; clock-tick resolution), and
//!   per thread the run time, runqueue wait and context switches from
//!   `/proc/PID/task/TID/schedstat` and `status` (nanosecond run time; the
//!   scheduler study's mean run time per voluntary switch).

use std::collections::HashSet;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Instant;

use serde::Serialize;
use takt_sched::ThreadSchedStats;
use takt_sip::stats::snmp::{self, UdpCounters};

/// One row of `/proc/net/udp` or `udp6`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct UdpSocketEntry {
    /// The bound local address.
    pub local: SocketAddr,
    /// Bytes queued for reading (`rx_queue`).
    pub rx_queue: u64,
    /// Socket inode (links `/proc/PID/fd/*` to the row).
    pub inode: u64,
    /// Datagrams dropped on this socket since it was created.
    pub drops: u64,
}

/// Parses the text of `/proc/net/udp` (or `udp6`; the address width tells
/// them apart). Malformed rows are skipped.
pub fn parse_proc_net_udp(text: &str) -> Vec<UdpSocketEntry> {
    text.lines().skip(1).filter_map(parse_udp_row).collect()
}

fn parse_udp_row(line: &str) -> Option<UdpSocketEntry> {
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 13 {
        return None;
    }
    let local = parse_hex_addr(f[1])?;
    let rx_queue = u64::from_str_radix(f[4].split(':').nth(1)?, 16).ok()?;
    let inode = f[9].parse().ok()?;
    let drops = f[12].parse().ok()?;
    Some(UdpSocketEntry {
        local,
        rx_queue,
        inode,
        drops,
    })
}

/// `0100007F:13C4` or the 32-hex-digit IPv6 form: the kernel prints each
/// 32-bit word of the address in host byte order.
fn parse_hex_addr(s: &str) -> Option<SocketAddr> {
    let (addr, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |i: usize| -> Option<[u8; 4]> {
        let w = u32::from_str_radix(addr.get(8 * i..8 * i + 8)?, 16).ok()?;
        Some(w.to_ne_bytes())
    };
    let ip = match addr.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut b = [0u8; 16];
            for i in 0..4 {
                b[4 * i..4 * i + 4].copy_from_slice(&word(i)?);
            }
            IpAddr::V6(Ipv6Addr::from(b))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// The UDP sockets visible from `pid`'s network namespace (`/proc/PID/net/`),
/// or this process's when `pid` is `None`.
pub fn udp_sockets(pid: Option<i32>) -> io::Result<Vec<UdpSocketEntry>> {
    let base = match pid {
        Some(p) => format!("/proc/{p}/net"),
        None => "/proc/net".to_string(),
    };
    let mut v = parse_proc_net_udp(&std::fs::read_to_string(format!("{base}/udp"))?);
    // udp6 is absent when IPv6 is disabled
    if let Ok(t) = std::fs::read_to_string(format!("{base}/udp6")) {
        v.extend(parse_proc_net_udp(&t));
    }
    Ok(v)
}

/// The UDP counters of `pid`'s network namespace (IPv4 and IPv6 summed;
/// `/proc/PID/net/snmp{,6}`), or this process's when `pid` is `None`.
/// Zeros where the files are missing.
pub fn host_udp(pid: Option<i32>) -> UdpCounters {
    let base = match pid {
        Some(p) => format!("/proc/{p}/net"),
        None => "/proc/net".to_string(),
    };
    let v4 = std::fs::read_to_string(format!("{base}/snmp"))
        .map(|s| snmp::parse_snmp(&s))
        .unwrap_or_default();
    let v6 = std::fs::read_to_string(format!("{base}/snmp6"))
        .map(|s| snmp::parse_snmp6(&s))
        .unwrap_or_default();
    UdpCounters {
        in_datagrams: v4.in_datagrams + v6.in_datagrams,
        in_errors: v4.in_errors + v6.in_errors,
        rcvbuf_errors: v4.rcvbuf_errors + v6.rcvbuf_errors,
        out_datagrams: v4.out_datagrams + v6.out_datagrams,
    }
}

/// The socket inodes process `pid` holds open.
pub fn socket_inodes(pid: i32) -> io::Result<HashSet<u64>> {
    let mut set = HashSet::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        let Ok(e) = e else { continue };
        // an fd may close between read_dir and readlink
        let Ok(link) = std::fs::read_link(e.path()) else {
            continue;
        };
        if let Some(inode) = link
            .to_str()
            .and_then(|l| l.strip_prefix("socket:["))
            .and_then(|l| l.strip_suffix(']'))
            .and_then(|l| l.parse().ok())
        {
            set.insert(inode);
        }
    }
    Ok(set)
}

/// `/proc/PID/stat` fields the lab uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// State letter (`R`, `S`, `Z` for a zombie, …).
    pub state: char,
    /// Parent PID.
    pub ppid: i32,
    /// Process group.
    pub pgrp: i32,
    /// User CPU time, clock ticks.
    pub utime: u64,
    /// System CPU time, clock ticks.
    pub stime: u64,
}

/// Parses `/proc/PID/stat` (or a task's `stat`). The command name is in
/// parentheses and may itself contain spaces and parentheses: fields are
/// counted from the last `)`.
pub fn parse_proc_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // after the name: state(0) ppid(1) pgrp(2) ... utime(11) stime(12)
    Some(ProcStat {
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        utime: f.get(11)?.parse().ok()?,
        stime: f.get(12)?.parse().ok()?,
    })
}

/// Clock ticks per second of `/proc/*/stat` times.
fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// PIDs of the live processes in process group `pgid` (a target started in
/// its own group: the server and any processes it forked). Zombies (exited,
/// waiting for their parent to reap them) are not live and not listed.
pub fn process_group(pgid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut v: Vec<i32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| parse_proc_stat(&s))
                .is_some_and(|s| s.pgrp == pgid && s.state != 'Z')
        })
        .collect();
    v.sort_unstable();
    v
}

/// One thread's counters at a moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadSample {
    /// Process.
    pub pid: i32,
    /// Thread.
    pub tid: i32,
    /// Its name (`comm`).
    pub name: String,
    /// Run time, wait, switches.
    pub sched: ThreadSchedStats,
}

/// Which sockets are the server's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SocketSelector {
    /// Local ports the server listens on.
    pub ports: Vec<u16>,
    /// Match only sockets the server's processes hold (when PIDs are known).
    pub owned_only: bool,
}

/// Everything read about a server at one moment.
#[derive(Debug, Clone)]
pub struct ServerSample {
    /// When.
    pub at: Instant,
    /// The server's sockets.
    pub sockets: Vec<UdpSocketEntry>,
    /// utime + stime of every process, clock ticks.
    pub cpu_ticks: u64,
    /// Every thread of every process.
    pub threads: Vec<ThreadSample>,
    /// The host's UDP counters.
    pub host: UdpCounters,
}

/// Reads a [`ServerSample`] of processes `pids` (may be empty: an external
/// server, sockets found by port in this namespace only). Processes or
/// threads that vanish while being read are skipped.
pub fn sample(pids: &[i32], sel: &SocketSelector) -> io::Result<ServerSample> {
    let at = Instant::now();
    let host = host_udp(pids.first().copied());
    let table = udp_sockets(pids.first().copied())?;
    let owned: Option<HashSet<u64>> = if sel.owned_only && !pids.is_empty() {
        let mut s = HashSet::new();
        for &p in pids {
            if let Ok(i) = socket_inodes(p) {
                s.extend(i);
            }
        }
        Some(s)
    } else {
        None
    };
    let sockets = table
        .into_iter()
        .filter(|e| sel.ports.contains(&e.local.port()))
        .filter(|e| owned.as_ref().is_none_or(|o| o.contains(&e.inode)))
        .collect();
    let mut cpu_ticks = 0;
    let mut threads = Vec::new();
    for &pid in pids {
        let Some(st) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| parse_proc_stat(&s))
        else {
            continue;
        };
        cpu_ticks += st.utime + st.stime;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let base = format!("/proc/{pid}/task/{tid}");
            let (Ok(ss), Ok(status)) = (
                std::fs::read_to_string(format!("{base}/schedstat")),
                std::fs::read_to_string(format!("{base}/status")),
            ) else {
                continue;
            };
            let Some(sched) = ThreadSchedStats::parse(&ss, &status) else {
                continue;
            };
            let name = std::fs::read_to_string(format!("{base}/comm"))
                .map(|s| s.trim_end().to_string())
                .unwrap_or_default();
            threads.push(ThreadSample {
                pid,
                tid,
                name,
                sched,
            });
        }
    }
    Ok(ServerSample {
        at,
        sockets,
        cpu_ticks,
        threads,
        host,
    })
}

/// One thread over a window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadWindow {
    /// Process.
    pub pid: i32,
    /// Thread.
    pub tid: i32,
    /// Name.
    pub name: String,
    /// Seconds on a CPU.
    pub run_s: f64,
    /// Seconds runnable but waiting for a CPU.
    pub wait_s: f64,
    /// Switches because it blocked.
    pub voluntary_switches: u64,
    /// Switches because it was preempted.
    pub involuntary_switches: u64,
    /// Run time per voluntary switch, µs (how long it ran per wake-up);
    /// `None` without voluntary switches.
    pub run_per_wakeup_us: Option<f64>,
}

/// A server over a measured window: the difference of two samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerWindow {
    /// Window length, seconds.
    pub secs: f64,
    /// Datagrams the server's sockets dropped.
    pub socket_drops: u64,
    /// The UDP counter increases of the server's network namespace (all
    /// its sockets: the host's, unless it runs in a namespace of its own).
    pub host: UdpCounters,
    /// utime + stime of the server's processes, seconds (tick resolution).
    pub cpu_s: f64,
    /// Run time of the threads seen in both samples, seconds (ns resolution;
    /// threads born or gone within the window are missing).
    pub run_s: f64,
    /// Per thread (present in both samples).
    pub threads: Vec<ThreadWindow>,
}

impl ServerWindow {
    /// `after − before`. Sockets are matched by inode (a socket created in
    /// the window counts from zero); counters saturate at zero.
    pub fn between(before: &ServerSample, after: &ServerSample) -> ServerWindow {
        let socket_drops = after
            .sockets
            .iter()
            .map(|s| {
                let was = before
                    .sockets
                    .iter()
                    .find(|b| b.inode == s.inode)
                    .map_or(0, |b| b.drops);
                s.drops.saturating_sub(was)
            })
            .sum();
        let threads: Vec<ThreadWindow> = after
            .threads
            .iter()
            .filter_map(|a| {
                let b = before.threads.iter().find(|b| b.tid == a.tid)?;
                let d = a.sched - b.sched;
                Some(ThreadWindow {
                    pid: a.pid,
                    tid: a.tid,
                    name: a.name.clone(),
                    run_s: d.run.as_secs_f64(),
                    wait_s: d.wait.as_secs_f64(),
                    voluntary_switches: d.voluntary_switches,
                    involuntary_switches: d.involuntary_switches,
                    run_per_wakeup_us: (d.voluntary_switches > 0)
                        .then(|| d.run.as_secs_f64() * 1e6 / d.voluntary_switches as f64),
                })
            })
            .collect();
        ServerWindow {
            secs: after.at.saturating_duration_since(before.at).as_secs_f64(),
            socket_drops,
            host: after.host.since(&before.host),
            cpu_s: after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64 / clock_ticks() as f64,
            run_s: threads.iter().map(|t| t.run_s).sum(),
            threads,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const UDP: &str = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  123: 0100007F:13C4 00000000:0000 07 00000000:00000A00 00:00000000 00000000     0        0 41234 2 0000000000000000 17
  456: 00000000:0044 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 999 2 0000000000000000 0
  bad line
";
    const UDP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  77: 00000000000000000000000001000000:13C4 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 55 2 0000000000000000 3
";

    #[test]
    fn parses_udp_tables() {
        let v = parse_proc_net_udp(UDP);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].local, "127.0.0.1:5060".parse().unwrap());
        assert_eq!((v[0].rx_queue, v[0].inode, v[0].drops), (0xA00, 41234, 17));
        assert_eq!(v[1].local, "0.0.0.0:68".parse().unwrap());
        let v6 = parse_proc_net_udp(UDP6);
        assert_eq!(v6.len(), 1);
        assert_eq!(v6[0].local, "[::1]:5060".parse().unwrap());
        assert_eq!(v6[0].drops, 3);
        assert!(parse_proc_net_udp("header only\n").is_empty());
    }

    #[test]
    fn parses_stat_with_awkward_names() {
        let s =
            "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 37 0 0 20 0 3 0 100 0 0";
        let p = parse_proc_stat(s).unwrap();
        assert_eq!(
            p,
            ProcStat {
                state: 'S',
                ppid: 1,
                pgrp: 4242,
                utime: 250,
                stime: 37
            }
        );
        assert!(parse_proc_stat("12 (x) S 1").is_none());
        assert!(parse_proc_stat("garbage").is_none());
    }

    #[test]
    fn windows_subtract_by_inode_and_thread() {
        let t = |tid, run_ms, vol| ThreadSample {
            pid: 1,
            tid,
            name: format!("w{tid}"),
            sched: ThreadSchedStats {
                run: Duration::from_millis(run_ms),
                voluntary_switches: vol,
                ..ThreadSchedStats::default()
            },
        };
        let sock = |inode, drops| UdpSocketEntry {
            local: "127.0.0.1:5060".parse().unwrap(),
            rx_queue: 0,
            inode,
            drops,
        };
        let at = Instant::now();
        let before = ServerSample {
            at,
            sockets: vec![sock(1, 10)],
            cpu_ticks: 100,
            threads: vec![t(10, 5, 100), t(11, 1, 1)],
            host: UdpCounters::default(),
        };
        let after = ServerSample {
            at: at + Duration::from_secs(2),
            sockets: vec![sock(1, 15), sock(2, 4)],
            cpu_ticks: 100 + 2 * clock_ticks(),
            threads: vec![t(10, 25, 300), t(12, 9, 9)],
            host: UdpCounters {
                rcvbuf_errors: 9,
                ..UdpCounters::default()
            },
        };
        let w = ServerWindow::between(&before, &after);
        assert_eq!(w.socket_drops, 5 + 4);
        assert_eq!(w.host.rcvbuf_errors, 9);
        assert!((w.cpu_s - 2.0).abs() < 1e-9 && (w.secs - 2.0).abs() < 1e-9);
        assert_eq!(w.threads.len(), 1);
        assert!((w.run_s - 0.020).abs() < 1e-9);
        assert_eq!(w.threads[0].voluntary_switches, 200);
        assert!((w.threads[0].run_per_wakeup_us.unwrap() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn finds_own_socket_and_threads() {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = s.local_addr().unwrap().port();
        let pid = std::process::id() as i32;
        let inodes = socket_inodes(pid).unwrap();
        let sel = SocketSelector {
            ports: vec![port],
            owned_only: true,
        };
        let smp = sample(&[pid], &sel).unwrap();
        assert_eq!(smp.sockets.len(), 1, "{:?}", smp.sockets);
        assert!(inodes.contains(&smp.sockets[0].inode));
        assert!(!smp.threads.is_empty());
        // our own process group holds at least this process
        let me = parse_proc_stat(&std::fs::read_to_string("/proc/self/stat").unwrap()).unwrap();
        assert!(process_group(me.pgrp).contains(&pid));
    }
}
