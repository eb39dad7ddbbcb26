//! SIPp as a child process: finding it, free ports, a guard that kills it
//! on every path, and its end-of-run statistics file.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use takt_sched::CpuSet;
use takt_sip::proxy::Transport;

use crate::error::Error;

/// Where `sipp` is on `PATH` (Debian package `sip-tester`), if anywhere.
pub fn find_sipp() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("sipp"))
        .find(|f| f.is_file())
}

/// A loopback port free for both UDP and TCP right now (SIPp binds both).
pub fn free_port() -> io::Result<u16> {
    for _ in 0..64 {
        let u = UdpSocket::bind("127.0.0.1:0")?;
        let p = u.local_addr()?.port();
        if TcpListener::bind(("127.0.0.1", p)).is_ok() {
            return Ok(p);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AddrInUse,
        "no loopback port free for both UDP and TCP after 64 tries",
    ))
}

/// Confines the calling thread to a CPU set until dropped, so that a child
/// spawned meanwhile inherits it (`posix_spawn` copies the caller's
/// affinity).
///
/// Not a `pre_exec` hook: one forces `fork`, which write-protects every
/// page of this process, the proxy's included, so that the proxy's first
/// write to each page afterwards faults. Measured: INVITE and BYE, which
/// write fresh transaction records, went from 1.6 to 3.2 µs.
struct Confined {
    restore: CpuSet,
}

impl Confined {
    fn enter(cpus: &CpuSet) -> io::Result<Confined> {
        let restore = CpuSet::current_affinity().map_err(io::Error::other)?;
        takt_sched::pin_calling_thread(cpus)
            .map_err(|e| io::Error::other(format!("confining sipp to CPUs {cpus}: {e}")))?;
        Ok(Confined { restore })
    }
}

impl Drop for Confined {
    fn drop(&mut self) {
        // the set this thread had a moment ago; nothing to report if the
        // kernel refuses it now (its CPUs went offline)
        let _ = takt_sched::pin_calling_thread(&self.restore);
    }
}

/// A child process killed and reaped when dropped, so no path out of a
/// run (error, panic, Ctrl-C unwinding) leaves a SIPp behind.
#[derive(Debug)]
pub(super) struct Kid {
    child: Child,
    what: &'static str,
}

impl Kid {
    /// Spawns `cmd` (stdin, stdout, stderr detached), confined to `cpus`
    /// from its first instruction when given.
    pub(super) fn spawn(
        mut cmd: Command,
        cpus: Option<&CpuSet>,
        what: &'static str,
    ) -> io::Result<Kid> {
        let _confined = cpus.map(Confined::enter).transpose()?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("starting sipp {what}: {e}")))?;
        Ok(Kid { child, what })
    }

    /// Waits for the exit until `deadline`; `Ok(None)` if it is still running.
    pub(super) fn wait_until(
        &mut self,
        deadline: Instant,
    ) -> io::Result<Option<std::process::ExitStatus>> {
        loop {
            if let Some(st) = self.child.try_wait()? {
                return Ok(Some(st));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether it has exited already (e.g. it could not bind its port).
    pub(super) fn exited(&mut self) -> io::Result<Option<std::process::ExitStatus>> {
        self.child.try_wait()
    }

    /// `uas` or `uac`.
    pub(super) fn what(&self) -> &'static str {
        self.what
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until something holds `port` of `transport` on 127.0.0.1 (SIPp's
/// UAS has bound it), the child exits, or `timeout` passes.
pub(super) fn wait_bound(
    kid: &mut Kid,
    port: u16,
    transport: Transport,
    timeout: Duration,
) -> io::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(st) = kid.exited()? {
            return Err(io::Error::other(format!(
                "sipp {} exited before binding 127.0.0.1:{port} ({st})",
                kid.what()
            )));
        }
        let bound = match transport {
            Transport::Udp => UdpSocket::bind(("127.0.0.1", port)).map(drop),
            Transport::Tcp => TcpListener::bind(("127.0.0.1", port)).map(drop),
        };
        if matches!(bound, Err(e) if e.kind() == io::ErrorKind::AddrInUse) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("sipp {} did not bind 127.0.0.1:{port}", kid.what()),
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A scratch directory removed when dropped (SIPp's working directory and
/// statistics file).
#[derive(Debug)]
pub(super) struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Creates a fresh directory under the system temporary directory.
    pub(super) fn new() -> io::Result<ScratchDir> {
        static N: AtomicUsize = AtomicUsize::new(0);
        // Relaxed: only uniqueness within the process matters.
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("takt-sip-load-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p)?;
        Ok(ScratchDir(p))
    }

    /// The directory.
    pub(super) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The UAC's totals at the end of a run, from its `-trace_stat` file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UacTotals {
    /// Calls created (`TotalCallCreated`).
    pub attempted: u64,
    /// Calls completed successfully (`SuccessfulCall(C)`).
    pub succeeded: u64,
    /// Calls failed (`FailedCall(C)`).
    pub failed: u64,
    /// Retransmissions SIPp sent (`Retransmissions(C)`).
    pub retransmissions: u64,
}

/// Parses the last line of a SIPp statistics file (`;`-separated, header
/// first; the `(C)` columns are cumulative).
pub fn parse_stat_csv(text: &str) -> Result<UacTotals, Error> {
    let bad = |what: String| Error::Sipp(what);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = lines
        .next()
        .ok_or_else(|| bad("empty SIPp statistics file".into()))?;
    let last = lines
        .next_back()
        .ok_or_else(|| bad("SIPp statistics file has no data line".into()))?;
    let cols: HashMap<&str, &str> = header
        .split(';')
        .map(str::trim)
        .zip(last.split(';').map(str::trim))
        .collect();
    let get = |k: &str| -> Result<u64, Error> {
        let v = cols
            .get(k)
            .ok_or_else(|| bad(format!("SIPp statistics file has no column {k}")))?;
        v.parse()
            .map_err(|_| bad(format!("SIPp statistics column {k}: not a count: {v:?}")))
    };
    Ok(UacTotals {
        attempted: get("TotalCallCreated")?,
        succeeded: get("SuccessfulCall(C)")?,
        failed: get("FailedCall(C)")?,
        retransmissions: get("Retransmissions(C)")?,
    })
}

/// `sipp -sn uas` on 127.0.0.1:`port`, over UDP.
pub(super) fn uas(sipp: &Path, port: u16, transport: Transport, dir: &Path) -> Command {
    let mut c = Command::new(sipp);
    c.current_dir(dir).args([
        "-sn",
        "uas",
        "-i",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-t",
        transport_flag(transport),
        "-nostdin",
    ]);
    c
}

/// `sipp -sn uac` on 127.0.0.1:`port` calling `proxy` at `cps` for
/// `calls` calls, writing its statistics to `dir/uac.csv`.
#[allow(clippy::too_many_arguments)]
pub(super) fn uac(
    sipp: &Path,
    port: u16,
    proxy: SocketAddr,
    transport: Transport,
    cps: u32,
    calls: u64,
    timeout: Duration,
    dir: &Path,
) -> Command {
    let mut c = Command::new(sipp);
    c.current_dir(dir)
        .args(["-sn", "uac", "-i", "127.0.0.1", "-p", &port.to_string()])
        .arg(proxy.to_string())
        .args(["-t", transport_flag(transport)])
        .args(["-r", &cps.to_string(), "-m", &calls.to_string()])
        .args(["-nostdin", "-trace_stat", "-stf"])
        .arg(dir.join("uac.csv"))
        .args(["-fd", "1"])
        .args(["-timeout", &format!("{}s", timeout.as_secs().max(1))])
        .arg("-timeout_error");
    c
}

/// SIPp's `-t` for `transport`: one socket (UDP) or one connection (TCP).
fn transport_flag(transport: Transport) -> &'static str {
    match transport {
        Transport::Udp => "u1",
        Transport::Tcp => "t1",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_file_last_line_wins() {
        let t = "StartTime;TotalCallCreated;SuccessfulCall(P);SuccessfulCall(C);FailedCall(C);Retransmissions(C);\n\
                 x;10;10;10;0;0;\n\
                 x;50;40;49;1;3;\n";
        assert_eq!(
            parse_stat_csv(t).unwrap(),
            UacTotals {
                attempted: 50,
                succeeded: 49,
                failed: 1,
                retransmissions: 3
            }
        );
        assert!(parse_stat_csv("").is_err());
        assert!(parse_stat_csv("TotalCallCreated;\n").is_err());
        let e = parse_stat_csv("TotalCallCreated;\n5;\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("SuccessfulCall(C)"), "{e}");
    }
}
