//! The network peer: what the measuring side talks to, on loopback (a
//! thread of this process), in a network namespace (a `takt machine
//! --serve` process started there), or on another machine (`--remote`).
//!
//! One port serves TCP and UDP. A TCP connection's first byte chooses:
//! - `E` — echo: every byte read is written back (round-trip time);
//! - `S` `cpu` — sink: pin the connection's thread to CPU `cpu` (255: leave
//!   it where the scheduler puts it), read and discard in [`SINK_READ`]
//!   reads until EOF, then answer the byte count as a little-endian `u64`
//!   followed by one byte, 1 if the thread was pinned as asked (bandwidth);
//! - `C` — close: answer one byte `R` once the connection's thread exists
//!   and is about to block in `read`, then close on EOF (teardown: the
//!   client starts its clock only after `R`, so the peer's accept and
//!   thread creation are not part of the teardown);
//! - EOF straight away — close.
//!
//! UDP datagrams are echoed.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use takt_sched::{CpuSet, TaktThread, ThreadSpec};

/// First byte of an echo connection.
pub const MODE_ECHO: u8 = b'E';
/// First byte of a sink connection.
pub const MODE_SINK: u8 = b'S';
/// First byte of a close (teardown) connection.
pub const MODE_CLOSE: u8 = b'C';
/// The close peer's ready byte.
pub const READY: u8 = b'R';
/// The sink's "do not pin" CPU byte.
pub const NO_CPU: u8 = u8::MAX;
/// The sink's read size: iperf3's default `-l` for TCP (128 KiB), the same
/// as the sender's write size, so both sides make the same system calls.
pub const SINK_READ: usize = 128 << 10;
/// How often the UDP loop checks whether to stop.
const UDP_POLL: Duration = Duration::from_millis(100);

fn handle(mut s: TcpStream) {
    let _ = s.set_nodelay(true);
    let mut first = [0u8; 1];
    match s.read(&mut first) {
        Ok(1) if first[0] == MODE_ECHO => {
            let mut buf = [0u8; 64];
            loop {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if s.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                }
            }
        }
        Ok(1) if first[0] == MODE_SINK => {
            let mut cpu = [0u8; 1];
            if s.read_exact(&mut cpu).is_err() {
                return;
            }
            let pinned = cpu[0] != NO_CPU
                && ThreadSpec::new("machine-peer-sink")
                    .with_cpus(CpuSet::single(usize::from(cpu[0])))
                    .apply_to_current()
                    .is_ok();
            let mut buf = vec![0u8; SINK_READ];
            let mut total = 0u64;
            loop {
                match s.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => total += n as u64,
                    Err(_) => return,
                }
            }
            let mut answer = [0u8; 9];
            answer[..8].copy_from_slice(&total.to_le_bytes());
            answer[8] = u8::from(pinned);
            let _ = s.write_all(&answer);
        }
        Ok(1) if first[0] == MODE_CLOSE => {
            let mut b = [0u8; 1];
            if s.write_all(&[READY]).is_ok() {
                // Any byte or EOF ends it; dropping the stream closes it.
                let _ = s.read(&mut b);
            }
        }
        // EOF first (setup/teardown test) or anything else: close.
        _ => {}
    }
}

fn accept_loop(listener: TcpListener, stop: Arc<AtomicBool>) {
    for conn in listener.incoming() {
        // Relaxed: a stand-alone stop flag; the wake-up connection follows it.
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let Ok(s) = conn else { continue };
        let spawned = ThreadSpec::new("machine-peer-conn").spawn(move || handle(s));
        // Connection threads end with their connection.
        drop(spawned);
    }
}

fn udp_loop(sock: UdpSocket, stop: Arc<AtomicBool>) {
    let _ = sock.set_read_timeout(Some(UDP_POLL));
    let mut buf = [0u8; 2048];
    // Relaxed: a stand-alone stop flag polled every UDP_POLL.
    while !stop.load(Ordering::Relaxed) {
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            let _ = sock.send_to(&buf[..n], from);
        }
    }
}

/// A peer running on threads of this process; stopped on drop.
#[derive(Debug)]
pub struct Peer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    threads: Vec<TaktThread<()>>,
}

impl Peer {
    /// Starts a peer bound to `addr` (port 0 picks a free port for both
    /// protocols).
    pub fn start(addr: SocketAddr) -> std::io::Result<Peer> {
        let (listener, udp) = bind_pair(addr)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let (s1, s2) = (Arc::clone(&stop), Arc::clone(&stop));
        let t1 = ThreadSpec::new("machine-peer-tcp")
            .spawn(move || accept_loop(listener, s1))
            .map_err(std::io::Error::other)?;
        let t2 = ThreadSpec::new("machine-peer-udp")
            .spawn(move || udp_loop(udp, s2))
            .map_err(std::io::Error::other)?;
        Ok(Peer {
            addr,
            stop,
            threads: vec![t1, t2],
        })
    }

    /// Where it listens (TCP and UDP).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Binds TCP and UDP on the same port (retrying when port 0 picked a TCP
/// port whose UDP twin is taken).
fn bind_pair(addr: SocketAddr) -> std::io::Result<(TcpListener, UdpSocket)> {
    let mut last = None;
    for _ in 0..16 {
        let listener = TcpListener::bind(addr)?;
        let port = listener.local_addr()?.port();
        let mut ua = addr;
        ua.set_port(port);
        match UdpSocket::bind(ua) {
            Ok(u) => return Ok((listener, u)),
            Err(e) if addr.port() == 0 => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no port for TCP and UDP")))
}

/// Serves until the process is killed (`takt machine --serve ADDR`).
pub fn serve(addr: &str) -> std::io::Result<()> {
    let addr: SocketAddr = addr
        .parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{e}")))?;
    let peer = Peer::start(addr)?;
    eprintln!("takt machine: serving TCP and UDP on {}", peer.addr());
    loop {
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_sink_and_udp() {
        let peer = Peer::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut s = TcpStream::connect(peer.addr()).unwrap();
        s.write_all(&[MODE_ECHO, 7]).unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).unwrap();
        assert_eq!(b[0], 7);
        drop(s);
        let mut s = TcpStream::connect(peer.addr()).unwrap();
        s.write_all(&[MODE_SINK, NO_CPU]).unwrap();
        s.write_all(&[1u8; 1000]).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut n = [0u8; 9];
        s.read_exact(&mut n).unwrap();
        assert_eq!(u64::from_le_bytes(n[..8].try_into().unwrap()), 1000);
        assert_eq!(n[8], 0, "not asked to pin");
        // A pinned sink says so.
        let cpu = takt_sched::get_affinity().unwrap().iter().next().unwrap() as u8;
        let mut s = TcpStream::connect(peer.addr()).unwrap();
        s.write_all(&[MODE_SINK, cpu, 9, 9]).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        s.read_exact(&mut n).unwrap();
        assert_eq!(u64::from_le_bytes(n[..8].try_into().unwrap()), 2);
        assert_eq!(n[8], 1, "asked to pin to an allowed CPU");
        // Close mode: ready byte first, then the peer's FIN after ours.
        let mut s = TcpStream::connect(peer.addr()).unwrap();
        s.write_all(&[MODE_CLOSE]).unwrap();
        s.read_exact(&mut b).unwrap();
        assert_eq!(b[0], READY);
        s.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(s.read(&mut b).unwrap(), 0);
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        u.send_to(b"x", peer.addr()).unwrap();
        let mut ub = [0u8; 8];
        let (n, _) = u.recv_from(&mut ub).unwrap();
        assert_eq!(&ub[..n], b"x");
        // Setup/teardown: EOF first, the peer closes.
        let mut s = TcpStream::connect(peer.addr()).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(s.read(&mut b).unwrap(), 0);
    }
}
