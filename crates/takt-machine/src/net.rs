//! Network (report §5): TCP and UDP round-trip time, TCP peak bandwidth,
//! TCP connection setup and teardown, against
//! - `loopback`: a [`Peer`] on threads of this process at 127.0.0.1,
//! - `netns`: a peer process in a network namespace behind a veth pair
//!   (see [`ns_host`](crate::ns_host)): the report's second machine, without
//!   the wire,
//! - `remote`: `--remote HOST[:PORT]` running `takt machine --serve`.
//!
//! Timings are taken by the client around its own system calls (the report
//! read tcpdump timestamps instead; the client's view includes its own
//! send and receive path, which is what an application sees):
//! - RTT: one byte written and the echo read back, `TCP_NODELAY`; 100 per
//!   sample. UDP the same with datagrams.
//! - bandwidth: 128 KiB blocking writes to a sink that reads 128 KiB at a
//!   time (iperf3's default `-l` on both sides) for a 1 s window per
//!   connection (quick: 0.5 s; full: 2 s), after one discarded warm-up
//!   connection; the bytes the sink
//!   counted over the time to its answer after the writer's shutdown. The
//!   sender and the sink are pinned, and the placement is a parameter:
//!   `same_cpu` (every hand-off is a switch on one CPU, the receiver runs
//!   when the sender blocks) and `cross_cpu` (each side on its own CPU,
//!   every wake-up an inter-processor interrupt — on a VM a hypervisor
//!   exit). On loopback the two differ by 2-3x on the development VMs, so
//!   an unpinned figure is whichever placement the scheduler happened to
//!   choose; `--remote` pins the sender only.
//! - setup: `connect()` until it returns (SYN, SYN-ACK, ACK sent).
//! - teardown: on an established connection whose peer thread has
//!   answered a ready byte (so the peer's `accept` and the creation of its
//!   connection thread happen before the clock starts), `shutdown(SHUT_WR)`
//!   until `read()` returns the peer's FIN: our FIN, the peer's wake-up on
//!   EOF and its `close()`, its FIN back and our wake-up. (Without the
//!   ready byte the peer's thread creation fell inside the bracket, and on
//!   a busy CPU a new thread waits for the running task's slice to end —
//!   up to a 4 ms tick at HZ=250 — which showed as a 3.9 ms teardown.)

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant};

use crate::kinds;
use crate::peer::{Peer, MODE_CLOSE, MODE_ECHO, MODE_SINK, NO_CPU, READY};
use crate::stats::{collect, ticks_ns, Estimate};
use crate::Ctx;

/// Round trips per RTT sample.
const RTTS: usize = 100;
/// Write size of the bandwidth test (iperf3's default).
const CHUNK: usize = 128 << 10;

/// Per-target model inputs for the estimates.
#[derive(Clone, Copy, Debug)]
struct Model {
    /// One-way software path (send syscall + stack + receiver wake-up), µs.
    one_way_us: f64,
    /// What the extra hop costs, µs per direction.
    hop_us: f64,
    hop: &'static str,
}

fn tcp_rtt(addr: SocketAddr, budget: Duration) -> std::io::Result<(Vec<f64>, f64)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(3))?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(3)))?;
    s.write_all(&[MODE_ECHO])?;
    let mut err = None;
    let r = collect(1, 10, 5000, budget, || {
        let mut b = [1u8];
        let t0 = crate::stats::start();
        for _ in 0..RTTS {
            if let Err(e) = s.write_all(&b).and_then(|_| s.read_exact(&mut b)) {
                err = Some(e);
                return f64::NAN;
            }
        }
        ticks_ns(t0, takt_sched::tsc_end()) / 1000.0 / RTTS as f64
    });
    match err {
        Some(e) => Err(e),
        None => Ok(r),
    }
}

fn udp_rtt(addr: SocketAddr, budget: Duration) -> std::io::Result<(Vec<f64>, f64, usize)> {
    let bind: SocketAddr = if addr.is_ipv4() {
        "0.0.0.0:0".parse().expect("literal")
    } else {
        "[::]:0".parse().expect("literal")
    };
    let u = UdpSocket::bind(bind)?;
    u.connect(addr)?;
    u.set_read_timeout(Some(Duration::from_millis(200)))?;
    let mut lost = 0usize;
    let (s, cpu) = collect(1, 10, 5000, budget, || {
        let mut b = [1u8; 1];
        let t0 = crate::stats::start();
        for _ in 0..RTTS {
            if u.send(&b).is_err() || u.recv(&mut b).is_err() {
                lost += 1;
                return f64::NAN;
            }
        }
        ticks_ns(t0, takt_sched::tsc_end()) / 1000.0 / RTTS as f64
    });
    Ok((s.into_iter().filter(|v| v.is_finite()).collect(), cpu, lost))
}

/// Where the bandwidth test's sender and sink run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The row's `placement` parameter.
    pub(crate) name: &'static str,
    /// The sender's CPU (`None`: not pinned).
    pub(crate) sender: Option<usize>,
    /// The sink's CPU (`None`: not pinned).
    pub(crate) sink: Option<usize>,
}

/// The pinned placements on this machine: `same_cpu` on the first allowed
/// CPU, and `cross_cpu` (sender on the first, sink on the second) when two
/// CPUs are allowed.
pub(crate) fn placements() -> Vec<Placement> {
    let cpus: Vec<usize> = takt_sched::get_affinity()
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    if let Some(&c0) = cpus.first() {
        out.push(Placement {
            name: "same_cpu",
            sender: Some(c0),
            sink: Some(c0),
        });
        if let Some(&c1) = cpus.get(1) {
            out.push(Placement {
                name: "cross_cpu",
                sender: Some(c0),
                sink: Some(c1),
            });
        }
    }
    out
}

/// One sink connection: `(GB/s, whether the sink was pinned as asked)`.
fn sink_connection(
    addr: SocketAddr,
    window: Duration,
    sink_cpu: Option<usize>,
    buf: &[u8],
) -> std::io::Result<(f64, bool)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(3))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let cpu = sink_cpu.map_or(NO_CPU, |c| u8::try_from(c).unwrap_or(NO_CPU));
    s.write_all(&[MODE_SINK, cpu])?;
    let t0 = Instant::now();
    while t0.elapsed() < window {
        s.write_all(buf)?;
    }
    s.shutdown(Shutdown::Write)?;
    let mut n = [0u8; 9];
    s.read_exact(&mut n)?;
    let secs = t0.elapsed().as_secs_f64();
    let mut count = [0u8; 8];
    count.copy_from_slice(&n[..8]);
    // The count includes the CPU byte.
    let bytes = u64::from_le_bytes(count).saturating_sub(1);
    Ok((bytes as f64 / secs / 1e9, n[8] == 1))
}

pub(crate) fn tcp_bandwidth(
    addr: SocketAddr,
    window: Duration,
    samples: usize,
    placement: Placement,
) -> std::io::Result<(Vec<f64>, f64)> {
    let buf = vec![0x42u8; CHUNK];
    let _pin =
        match placement.sender {
            Some(c) => Some(crate::timer::pin_current(c).ok_or_else(|| {
                std::io::Error::other(format!("cannot pin the sender to CPU {c}"))
            })?),
            None => None,
        };
    let cpu0 = takt_sched::process_cpu_time();
    // Warm-up connection (slow start, first touch of the buffers), discarded.
    sink_connection(addr, window / 5, placement.sink, &buf)?;
    let mut out = Vec::new();
    for _ in 0..samples {
        let (gbs, pinned) = sink_connection(addr, window, placement.sink, &buf)?;
        if placement.sink.is_some() && !pinned {
            return Err(std::io::Error::other(format!(
                "the peer could not pin its sink to CPU {}",
                placement.sink.unwrap_or_default()
            )));
        }
        out.push(gbs);
        if crate::interrupted().is_some() {
            break;
        }
    }
    let cpu = takt_sched::process_cpu_time()
        .saturating_sub(cpu0)
        .as_secs_f64()
        / samples as f64;
    Ok((out, cpu))
}

fn connect_teardown(
    addr: SocketAddr,
    budget: Duration,
) -> std::io::Result<(Vec<f64>, Vec<f64>, f64)> {
    let mut setup = Vec::new();
    let mut down = Vec::new();
    let cpu0 = takt_sched::process_cpu_time();
    let t_end = Instant::now() + budget;
    let mut n = 0;
    while n < 12 || (Instant::now() < t_end && n < 3000) {
        let t0 = crate::stats::start();
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(3))?;
        let t1 = takt_sched::tsc_end();
        s.set_read_timeout(Some(Duration::from_secs(3)))?;
        // Wait until the peer's connection thread exists and is about to
        // block in read: its accept and thread creation stay outside the
        // teardown bracket.
        let mut b = [0u8; 1];
        s.write_all(&[MODE_CLOSE])?;
        s.read_exact(&mut b)?;
        if b[0] != READY {
            return Err(std::io::Error::other(
                "peer did not answer the close-test ready byte",
            ));
        }
        let t2 = crate::stats::start();
        s.shutdown(Shutdown::Write)?;
        let got = s.read(&mut b)?;
        let t3 = takt_sched::tsc_end();
        if got != 0 {
            return Err(std::io::Error::other(
                "peer sent data on a setup/teardown connection",
            ));
        }
        drop(s);
        if n >= 2 {
            // The first two are warm-up.
            setup.push(ticks_ns(t0, t1) / 1000.0);
            down.push(ticks_ns(t2, t3) / 1000.0);
        }
        n += 1;
        if crate::interrupted().is_some() {
            break;
        }
    }
    let cpu = takt_sched::process_cpu_time()
        .saturating_sub(cpu0)
        .as_secs_f64()
        / n.max(1) as f64;
    Ok((setup, down, cpu))
}

fn measure_target(ctx: &mut Ctx, peer: &str, addr: SocketAddr, model: Model) {
    let budget = ctx.budget(Duration::from_secs(2));
    let remote = peer != "loopback";
    let hop = model.hop_us;
    let rtt_est = 2.0 * (model.one_way_us + hop);
    let rtt_model = format!(
        "2 x (send syscall + stack + receiver wake-up {} us + {} {hop} us)",
        model.one_way_us, model.hop
    );
    ctx.progress(&format!("net {peer}: tcp rtt"));
    match tcp_rtt(addr, budget) {
        Ok((s, cpu)) => ctx.push(
            kinds::TCP_RTT
                .sampled("1-byte write + read of the echo, TCP_NODELAY, 100 round trips per sample")
                .param("peer", peer)
                .estimate(Estimate::new(rtt_est, rtt_model.clone()))
                .published(if remote { 338.0 } else { 28.0 })
                .with_samples(s, cpu),
        ),
        Err(e) => ctx.skip(&format!("tcp_rtt {peer}"), format!("{addr}: {e}")),
    }
    let tcp = ctx
        .measured("tcp_rtt", Some(("peer", peer)))
        .unwrap_or(rtt_est);
    ctx.progress(&format!("net {peer}: udp rtt"));
    match udp_rtt(addr, budget) {
        Ok((s, cpu, lost)) if !s.is_empty() => ctx.push(
            kinds::UDP_RTT.sampled("1-byte datagram and its echo on a connected UDP socket, 100 round trips per sample")
                .param("peer", peer)
                .estimate(Estimate::new(
                    rtt_est * 0.9,
                    format!("{rtt_model}; UDP skips TCP's ACK and congestion work (-10%)"),
                ))
                .extra("samples_with_loss", lost)
                .with_samples(s, cpu),
        ),
        Ok(_) => ctx.skip(&format!("udp_rtt {peer}"), "every sample lost a datagram"),
        Err(e) => ctx.skip(&format!("udp_rtt {peer}"), format!("{addr}: {e}")),
    }
    let (window, n) = match ctx.cfg.mode {
        crate::Mode::Quick => (Duration::from_millis(500), 5),
        crate::Mode::Default => (Duration::from_secs(1), 5),
        crate::Mode::Full => (Duration::from_secs(2), 10),
    };
    let copy = ctx
        .measured("mem_bandwidth", Some(("op", "copy")))
        .unwrap_or(10.0);
    let placements: Vec<Placement> = if peer == "remote" {
        // The remote host's CPUs are not ours to name: pin the sender only.
        placements()
            .into_iter()
            .take(1)
            .map(|p| Placement {
                name: "sender_pinned",
                sink: None,
                ..p
            })
            .collect()
    } else {
        placements()
    };
    for placement in placements {
        ctx.progress(&format!("net {peer}: tcp bandwidth {}", placement.name));
        let (est, est_model) = match placement.name {
            "same_cpu" => (
                copy / 2.0,
                format!("two memory copies per byte (user->skb, skb->user) at the {copy:.1} GB/s copy bandwidth, one after the other on one CPU"),
            ),
            _ => (
                copy,
                format!("two memory copies per byte (user->skb, skb->user) at the {copy:.1} GB/s copy bandwidth, overlapped on two CPUs"),
            ),
        };
        match tcp_bandwidth(addr, window, n, placement) {
            Ok((s, cpu)) => ctx.push(
                kinds::TCP_BANDWIDTH.sampled(format!(
                        "blocking 128 KiB writes to a sink reading 128 KiB, {} ms per connection after a discarded warm-up connection; bytes the sink counted / time to its answer; sender on CPU {}, sink {}",
                        window.as_millis(),
                        placement.sender.map_or("unpinned".into(), |c| c.to_string()),
                        placement.sink.map_or("unpinned".into(), |c| format!("on CPU {c}")),
                    ),
                )
                .param("peer", peer)
                .param("placement", placement.name)
                .param("window_ms", window.as_millis() as u64)
                .estimate(Estimate::new(est, est_model))
                .published(if remote { 0.112 } else { 2.7 })
                .with_samples(s, cpu),
            ),
            Err(e) => ctx.skip(
                &format!("tcp_bandwidth {peer} {}", placement.name),
                format!("{addr}: {e}"),
            ),
        }
    }
    ctx.progress(&format!("net {peer}: connect/teardown"));
    match connect_teardown(addr, budget) {
        Ok((setup, down, cpu)) => {
            ctx.push(
                kinds::TCP_CONNECT.sampled("connect() until it returns (SYN, SYN-ACK, ACK), fenced TSC")
                    .param("peer", peer)
                    .estimate(Estimate::new(
                        2.0 * (3.0 + hop) + 4.0,
                        format!("SYN and SYN-ACK each ~3 us of stack processed in softirq without a wake-up + {} {hop} us each, socket and request allocation ~4 us", model.hop),
                    ))
                    .published(if remote { 353.0 } else { 29.0 })
                    .with_samples(setup, cpu / 2.0),
            );
            ctx.push(
                kinds::TCP_TEARDOWN.sampled("after the peer's connection thread answered a ready byte: shutdown(SHUT_WR) until read() returns the peer's FIN (the peer wakes on EOF and closes); peer accept and thread creation outside the bracket")
                    .param("peer", peer)
                    .estimate(Estimate::new(
                        tcp + 3.0,
                        format!("one round trip with a wake-up on each side (the measured TCP RTT {tcp:.1} us) + close ~3 us"),
                    ))
                    .published(if remote { 361.0 } else { 42.0 })
                    .with_samples(down, cpu / 2.0),
            );
        }
        Err(e) => ctx.skip(&format!("tcp_connect {peer}"), format!("{addr}: {e}")),
    }
}

pub(crate) fn run(ctx: &mut Ctx) {
    let vm = ctx.desc.hypervisor.is_some();
    let wake = if vm { 6.0 } else { 3.0 };
    let loopback = Model {
        one_way_us: 2.0 + wake,
        hop_us: 0.0,
        hop: "no hop",
    };
    match Peer::start("127.0.0.1:0".parse().expect("literal")) {
        Ok(peer) => {
            let addr = peer.addr();
            measure_target(ctx, "loopback", addr, loopback);
            drop(peer);
        }
        Err(e) => ctx.skip(
            "net loopback",
            format!("cannot start the loopback peer: {e}"),
        ),
    }
    match ctx.cfg.peer_command.clone() {
        None => ctx.skip(
            "net netns",
            "no peer command (library use without the takt binary)",
        ),
        Some(cmd) => match crate::ns_host::create(&cmd, ctx.desc.root, ctx.cfg.interactive) {
            Ok(host) => {
                ctx.doc.note(format!("namespace host: {}", host.name));
                measure_target(
                    ctx,
                    "netns",
                    host.addr,
                    Model {
                        hop_us: 1.0,
                        hop: "veth crossing and namespace routing",
                        ..loopback
                    },
                );
                drop(host);
            }
            Err(e) => ctx.skip("net netns", e.to_string()),
        },
    }
    if let Some(remote) = ctx.cfg.remote.clone() {
        let with_port = if remote.contains(':') && !remote.ends_with(']') {
            remote.clone()
        } else {
            format!("{remote}:{}", crate::ns_host::PEER_PORT)
        };
        match with_port.to_socket_addrs().map(|mut a| a.next()) {
            Ok(Some(addr)) => measure_target(
                ctx,
                "remote",
                addr,
                Model {
                    hop_us: 25.0,
                    hop: "NIC, wire and the remote host's wake-up",
                    ..loopback
                },
            ),
            Ok(None) => ctx.skip("net remote", format!("{remote}: no address")),
            Err(e) => ctx.skip("net remote", format!("{remote}: {e}")),
        }
    }
}
