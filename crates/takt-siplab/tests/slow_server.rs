//! The capacity search against a server whose capacity is known from a
//! queueing argument: a relay with a fixed service time per message.
//!
//! # The argument
//! The server is one thread that takes one datagram at a time from a
//! socket with a small receive buffer (room for K datagrams) and spends
//! `SERVICE` = 200 µs on each (a busy wait on the clock) before
//! forwarding it: a single server with deterministic service and a finite
//! queue, M/D/1/K for the INVITEs' Poisson arrivals. Each call sends 6
//! messages through a stateless relay (INVITE, 180, 200, ACK, BYE, 200),
//! so the server's ceiling is μ = 1 / (6 · SERVICE) = 833 calls/s.
//! - Above μ the excess cannot be served: over a window of T seconds at
//!   load ρ = λ/μ, at least (ρ − 1) · 6λT − K messages are lost, so the 1%
//!   crossing lies at ρ ≤ 1.01 + K / (6λT) ≈ 1.02 here (K ≲ 100, 6λT ≈
//!   7,500); the search's answer is a grid point at or below it.
//! - Below μ a queue of K ≥ 50 absorbs Poisson bursts (a call's messages
//!   come in pairs at most): at ρ = 0.9 the M/D/1/K loss is far below 1%.
//!   The relay's own work per message (two system calls, a few µs) and
//!   the search's conservative decision (its upper 95% bound, up to two
//!   3% grid steps) lower the answer further.
//!
//! So the capacity found must lie in [0.8 μ, 1.05 μ]. A capacity the
//! generator bounded (a loaded host) is a lower bound: only its upper end
//! is judged then.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};
use takt_sched::{CpuSet, ThreadSpec};
use takt_siplab::capacity::{GenLoad, Load, TargetTrial};
use takt_siplab::gen::{Cancel, GenConfig};
use takt_siplab::search::{self, Capacity, Limit, Search, SearchConfig};
use takt_siplab::target::{TargetKind, TargetSetup};

/// Service time per message.
const SERVICE: Duration = Duration::from_micros(200);
/// Messages per call through a stateless relay.
const MESSAGES_PER_CALL: f64 = 6.0;
/// Receive buffer asked for (the kernel doubles it).
const RCVBUF: usize = 64 * 1024;

/// Real-time priority when root (as in CI), so the host's other work
/// cannot take the slow server's CPU or delay the generator — above the
/// priority 10 other tests' generators and proxies run at.
fn spec(name: &str, cpu: usize) -> ThreadSpec {
    let s = ThreadSpec::new(name).with_cpus(CpuSet::single(cpu));
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        s.with_policy("fifo:prio=50".parse().unwrap())
    } else {
        s
    }
}

/// The slow relay: requests to `uas`, responses to where the last request
/// came from (the generator uses one UAC port), each after `SERVICE`.
fn slow_relay(uas: SocketAddr, cpu: usize, stop: Arc<AtomicBool>) -> SocketAddr {
    let sock = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
    sock.set_recv_buffer_size(RCVBUF).unwrap();
    sock.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    let sock: UdpSocket = sock.into();
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let addr = sock.local_addr().unwrap();
    spec("slow-relay", cpu)
        .spawn(move || {
            let mut buf = [0u8; 8192];
            let mut uac = None;
            while !stop.load(Ordering::Relaxed) {
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                let start = Instant::now();
                while start.elapsed() < SERVICE {
                    std::hint::spin_loop();
                }
                let to = if buf[..n].starts_with(b"SIP/2.0 ") {
                    uac
                } else {
                    uac = Some(from);
                    Some(uas)
                };
                if let Some(to) = to {
                    let _ = sock.send_to(&buf[..n], to);
                }
            }
        })
        .unwrap();
    addr
}

#[test]
fn a_server_with_a_fixed_service_time_has_the_capacity_queueing_predicts() {
    let online: Vec<usize> = CpuSet::online().iter().collect();
    let (gen_cpu, server_cpu) = (online[0], *online.last().unwrap());
    let mut gcfg = GenConfig::new("127.0.0.1:9".parse().unwrap(), 1.0);
    gcfg.spec = spec("gen", gen_cpu);
    gcfg.ports = 1;
    gcfg.drain = Duration::from_millis(500);
    // At ~800 calls/s a call placed a few ms late changes the server's
    // queue by a handful of messages; the default bounds (1 ms lag p99)
    // would read a busy host's jitter as the generator's limit and leave
    // only a lower bound. The bounds here still flag a generator that
    // cannot keep the rate.
    gcfg.lag_bound = Duration::from_millis(20);
    gcfg.late_after = Duration::from_millis(50);
    gcfg.late_tolerance = 0.01;
    let load = GenLoad::new(
        gcfg,
        "127.0.0.1".parse().unwrap(),
        Duration::from_millis(1_500),
        100,
        Cancel::default(),
    )
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let relay = slow_relay(load.uas(), server_cpu, stop.clone());
    let target = TargetKind::Addr(relay)
        .start(&TargetSetup::new(load.uas()))
        .unwrap();
    let mut trial = TargetTrial::new(target, load);
    let mut s = Search::new(SearchConfig {
        start_cps: 400.0,
        max_cps: 5_000.0,
        reps: 2,
        ..SearchConfig::default()
    })
    .unwrap();
    let r = search::run(&mut s, &mut trial).unwrap();
    stop.store(true, Ordering::Relaxed);
    let mu = 1.0 / (MESSAGES_PER_CALL * SERVICE.as_secs_f64());
    let (cps, measured) = match r.capacity {
        Some(Capacity::Measured { cps, .. }) => (cps, true),
        // a lower bound: it must not exceed the ceiling either
        Some(Capacity::AtLeast {
            cps,
            limit: Limit::Generator,
        }) => (cps, false),
        _ => panic!("no capacity: {r:#?}"),
    };
    for t in &r.trials {
        eprintln!(
            "{:?} {:>5.0} cps: drop {:.4}{}",
            t.phase,
            t.rate_cps,
            t.outcome.drop_rate(),
            if t.outcome.generator_bound {
                format!(" generator-bound ({})", t.outcome.generator_causes)
            } else {
                String::new()
            }
        );
    }
    eprintln!(
        "slow server: capacity {} cps, predicted ceiling {mu:.0} ({:.2}×), {} trials",
        r.capacity.unwrap(),
        cps / mu,
        r.trials.len()
    );
    assert!(
        cps <= 1.05 * mu,
        "capacity {cps:.0} cps above 1.05 × {mu:.0}: {r:#?}"
    );
    if measured {
        assert!(
            cps >= 0.8 * mu,
            "capacity {cps:.0} cps below 0.8 × {mu:.0}: {r:#?}"
        );
    } else {
        // The host delayed the generator (other real-time work on its
        // CPU) until the flag repeated: the answer is only a lower bound,
        // and the prediction's lower end cannot be judged.
        eprintln!("generator-bound on this host: the lower end is not judged");
    }
}
