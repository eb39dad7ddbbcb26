//! `takt sip proxy`: runs the SIP proxy with a periodic one-line summary
//! on stderr and the full statistics table at exit (Ctrl-C or SIGTERM ends
//! it cleanly; `--duration` ends it after a fixed time).
//!
//! `takt sip load`: SIPp's UAC and UAS against the proxy run in-process,
//! per-message T_sip / K_rcv / K_snd by message type (takt-lab's `sip`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use takt_sched::SpinBudget;
use takt_sip::config::Config;
use takt_sip::proxy::{Mode, Transport};
use takt_sip::stats::{serve, EndpointAddr};
use takt_sip::transport::{Server, WakeOrder, WorkerModel};

use crate::args::{parse_idle_limit, parse_spin, IdleLimit, OutputArgs, SchedArgs};

/// `takt sip`
#[derive(Args, Debug)]
pub struct SipCmd {
    #[command(subcommand)]
    cmd: SipSub,
}

#[derive(Subcommand, Debug)]
enum SipSub {
    /// Run the SIP proxy (RFC 3261) until Ctrl-C.
    Proxy(Box<ProxyArgs>),
    /// SIPp (uac -> proxy -> uas) at a fixed call rate against the proxy
    /// run in-process: T_sip, K_rcv, K_snd per message type.
    Load(Box<LoadArgs>),
    /// The native load generator: Poisson (or constant) call arrivals
    /// through any proxy, UAC and UAS, with send lag and saturation checks.
    Gen(Box<crate::cmd_sip_gen::GenArgs>),
    /// The 1%-drop capacity of one or more targets (takt, Kamailio, the
    /// null relay, any address) under the native generator.
    Capacity(Box<crate::cmd_sip_capacity::CapacityArgs>),
    /// A SIP server under overload (2x and 1.5x its capacity, under a CFS
    /// CPU limit where needed), a UAS killed and restarted, garbage during
    /// live calls, and the soak.
    Torture(Box<crate::cmd_sip_torture::TortureArgs>),
    /// Capacity versus worker threads and scheduler profiles (the paper's
    /// Tables I-III, SVG plots, the run recorded).
    Sweep(Box<crate::cmd_sip_sweep::SweepArgs>),
    /// The best scheduler setting for one server and worker count within a
    /// time budget, confirmed against the default by an interleaved A/B.
    Tune(Box<crate::cmd_sip_tune::TuneArgs>),
    /// The SIP laboratory's null relay (requests to --uas, responses to
    /// --uac or their top Via, no other SIP processing); started by
    /// `takt sip capacity`.
    #[command(hide = true)]
    Relay(Box<crate::cmd_sip_relay::RelayArgs>),
}

/// `takt sip load` flags.
#[derive(Args, Debug)]
pub struct LoadArgs {
    /// Proxy modes (comma-separated; default both).
    #[arg(long, value_name = "stateless,stateful", value_parser = parse_mode, value_delimiter = ',')]
    mode: Vec<Mode>,
    /// Worker models (comma-separated; default all three).
    #[arg(long, value_name = "shared,reuseport,batched", value_parser = parse_model, value_delimiter = ',')]
    model: Vec<WorkerModel>,
    /// Proxy worker threads.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    workers: u32,
    /// What places the calls: `sipp` (SIPp's uac and uas scenarios, child
    /// processes) or `takt` (the native generator, Poisson arrivals, on
    /// threads of this process whose CPU time is not counted as the
    /// proxy's).
    #[arg(long, value_name = "sipp|takt", default_value = "sipp", value_parser = parse_generator)]
    generator: takt_lab::sip::LoadGenerator,
    /// Transport of every hop (UAC to proxy, proxy to UAS): `udp`, or
    /// `tcp` (SIPp with `-t t1`; the native generator over 4 connections).
    #[arg(long, value_name = "udp|tcp", default_value = "udp", value_parser = parse_transport)]
    transport: Transport,
    /// Calls per second the generator places.
    #[arg(long, value_name = "CPS", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    cps: u32,
    /// Calls per measured run (default 5000; 1000 with --quick).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    calls: Option<u64>,
    /// Measured runs per configuration.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// Calls in the discarded warm-up run (default 1000; 300 with --quick; 0: none).
    #[arg(long, value_name = "N")]
    warmup_calls: Option<u64>,
    #[command(flatten)]
    sched: SchedArgs,
    /// Receive buffer per proxy socket, bytes (suffixes k, m).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    rcvbuf: Option<usize>,
    /// How long each UDP worker polls its socket before blocking, e.g.
    /// `0` (default), `200us`, `2ms`: keeps idle vCPUs from halting between
    /// messages that arrive within the budget, at the cost of CPU.
    #[arg(long, value_name = "DURATION", value_parser = parse_spin, default_value = "0")]
    spin: SpinBudget,
    /// Which idle worker of the `shared` model the kernel wakes for a
    /// datagram: `lifo` (default; the one idle shortest, whose caches are
    /// warm) or `fifo` (the one idle longest: blocking recvmsg, OpenSIPS's
    /// order).
    #[arg(long, value_name = "lifo|fifo", value_parser = parse_wake)]
    wake: Option<WakeOrder>,
    /// CPU idle-latency limits to run every configuration under
    /// (comma-separated; each a case of its own, the cases taking turns):
    /// `none` (default: the system's idle policy), `0` (idle CPUs poll
    /// instead of halting), or a duration such as `20us`. Held through
    /// /dev/cpu_dma_latency (root), machine-wide, for each run.
    #[arg(long, value_name = "LIST", value_parser = parse_idle_limit, value_delimiter = ',')]
    idle_latency: Vec<IdleLimit>,
    /// CPUs the generator's UAC and UAS run on (SIPp's processes or the
    /// native generator's threads; default: anywhere), e.g. `0`
    /// with `--cpus 1`: the load generator off the proxy's CPU, as on
    /// separate machines.
    #[arg(long, value_name = "LIST", value_parser = crate::args::parse_cpus)]
    sipp_cpus: Option<takt_sched::CpuSet>,
    #[command(flatten)]
    out: OutputArgs,
    #[command(flatten)]
    record: crate::cmd_runs::RecordArgs,
}

/// `takt sip proxy` flags; each overrides the configuration file.
#[derive(Args, Debug)]
pub struct ProxyArgs {
    /// TOML configuration file (see crates/takt-sip/README.md).
    #[arg(long, value_name = "FILE")]
    config: Option<String>,
    /// UDP and TCP listen address, e.g. 127.0.0.1:5060 or [::1]:5060.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// Static next hop (host:port); without it requests go to their Request-URI.
    #[arg(long, value_name = "HOST:PORT")]
    next_hop: Option<String>,
    /// Transport to the next hop.
    #[arg(long, value_name = "udp|tcp", value_parser = parse_transport)]
    next_hop_transport: Option<Transport>,
    /// Host written into Via and Record-Route (default: the listen address).
    #[arg(long, value_name = "HOST")]
    advertise: Option<String>,
    /// Proxy mode.
    #[arg(long, value_name = "stateless|stateful", value_parser = parse_mode)]
    mode: Option<Mode>,
    /// Worker model.
    #[arg(long, value_name = "shared|reuseport|batched", value_parser = parse_model)]
    model: Option<WorkerModel>,
    /// Worker threads.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    workers: Option<u32>,
    #[command(flatten)]
    sched: SchedArgs,
    /// Receive buffer per socket, bytes (suffixes k, m), e.g. 4m.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    rcvbuf: Option<usize>,
    /// How long each UDP worker polls its socket before blocking, e.g.
    /// `0` (default), `200us`, `2ms`: keeps idle vCPUs from halting between
    /// messages that arrive within the budget, at the cost of CPU.
    #[arg(long, value_name = "DURATION", value_parser = parse_spin, default_value = "0")]
    spin: SpinBudget,
    /// Which idle worker of the `shared` model the kernel wakes for a
    /// datagram: `lifo` (default; the one idle shortest, whose caches are
    /// warm) or `fifo` (the one idle longest: blocking recvmsg, OpenSIPS's
    /// order).
    #[arg(long, value_name = "lifo|fifo", value_parser = parse_wake)]
    wake: Option<WakeOrder>,
    /// Hold a CPU idle-latency limit while the proxy runs: `0` keeps idle
    /// CPUs polling instead of halting, `20us` allows only idle states
    /// that wake within 20 µs. Machine-wide, through /dev/cpu_dma_latency
    /// (root); idle CPUs then spin.
    #[arg(long, value_name = "DURATION", value_parser = parse_idle_limit)]
    idle_latency: Option<IdleLimit>,
    /// Datagrams per recvmmsg in the batched model.
    #[arg(long, value_name = "N")]
    batch: Option<usize>,
    /// Do not serve or use TCP.
    #[arg(long)]
    no_tcp: bool,
    /// TCP event-loop threads (default: half the workers, at least 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    tcp_workers: Option<u32>,
    /// Most TCP connections open at once, inbound and outbound (default 16384).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    tcp_max_connections: Option<u64>,
    /// Most inbound TCP connections from one peer IP address (default 512).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    tcp_max_per_peer: Option<u64>,
    /// How long a TCP message may take to arrive once its first byte
    /// has, e.g. 5s (default), 500ms; the connection is closed after it.
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration)]
    tcp_message_deadline: Option<Duration>,
    /// How long a TCP connection may go without traffic before it is
    /// closed, e.g. 120s (default).
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration)]
    tcp_idle_timeout: Option<Duration>,
    /// Do not add Record-Route.
    #[arg(long)]
    no_record_route: bool,
    /// Transaction table bound.
    #[arg(long, value_name = "N")]
    max_transactions: Option<usize>,
    /// Statistics endpoint: ip:port (loopback by default), unix:/path, or off.
    #[arg(long, value_name = "ADDR")]
    stats: Option<String>,
    /// Seconds between summary lines on stderr (0: none).
    #[arg(long, value_name = "SECS")]
    interval: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
    /// Print the final statistics as one JSON document on stdout.
    #[arg(long)]
    json: bool,
}

pub(crate) fn parse_transport(s: &str) -> Result<Transport, String> {
    match s {
        "udp" => Ok(Transport::Udp),
        "tcp" => Ok(Transport::Tcp),
        _ => Err(format!("unknown transport {s:?} (udp, tcp)")),
    }
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    match s {
        "stateless" => Ok(Mode::Stateless),
        "stateful" => Ok(Mode::Stateful),
        _ => Err(format!("unknown mode {s:?} (stateless, stateful)")),
    }
}

fn parse_model(s: &str) -> Result<WorkerModel, String> {
    s.parse()
}

fn parse_wake(s: &str) -> Result<WakeOrder, String> {
    s.parse()
}

fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    takt_sched::parse_duration(s)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{s:?} is not a positive duration (e.g. 500ms, 5s)"))
}

fn parse_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mul) = if let Some(n) = t.strip_suffix('k') {
        (n, 1024)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 1024 * 1024)
    } else {
        (t.as_str(), 1)
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("bad byte count {s:?} (e.g. 212992, 256k, 4m)"))
}

pub fn run(c: SipCmd) -> Result<(), crate::error::CmdError> {
    let r = match c.cmd {
        SipSub::Proxy(a) => proxy(*a),
        SipSub::Load(a) => return load(*a),
        SipSub::Gen(a) => crate::cmd_sip_gen::run(*a),
        SipSub::Capacity(a) => crate::cmd_sip_capacity::run(*a),
        SipSub::Torture(a) => crate::cmd_sip_torture::run(*a),
        SipSub::Sweep(a) => crate::cmd_sip_sweep::run(*a),
        SipSub::Tune(a) => crate::cmd_sip_tune::run(*a),
        SipSub::Relay(a) => crate::cmd_sip_relay::run(*a),
    };
    Ok(r?)
}

fn parse_generator(s: &str) -> Result<takt_lab::sip::LoadGenerator, String> {
    match s {
        "sipp" => Ok(takt_lab::sip::LoadGenerator::Sipp),
        "takt" => Ok(takt_lab::sip::LoadGenerator::Takt),
        _ => Err(format!("unknown generator {s:?} (sipp, takt)")),
    }
}

fn load(a: LoadArgs) -> Result<(), crate::error::CmdError> {
    let sipp = match a.generator {
        takt_lab::sip::LoadGenerator::Sipp => takt_lab::sip::find_sipp().ok_or(
            "sipp is not installed (Debian package sip-tester; scripts/setup.sh installs it)",
        )?,
        // not needed
        takt_lab::sip::LoadGenerator::Takt => Default::default(),
    };
    let mut plan = takt_lab::sip::LoadPlan::new(sipp);
    plan.generator = a.generator;
    plan.transport = a.transport;
    if a.out.quick {
        plan = plan.quick();
    }
    let modes = if a.mode.is_empty() {
        vec![Mode::Stateless, Mode::Stateful]
    } else {
        a.mode.clone()
    };
    let models = if a.model.is_empty() {
        vec![
            WorkerModel::Shared,
            WorkerModel::Reuseport,
            WorkerModel::Batched,
        ]
    } else {
        a.model.clone()
    };
    let idle = if a.idle_latency.is_empty() {
        vec![IdleLimit(None)]
    } else {
        a.idle_latency.clone()
    };
    let workers = a.workers as usize;
    plan.cases = Vec::new();
    for &IdleLimit(idle_latency) in &idle {
        for &mode in &modes {
            for &model in &models {
                plan.cases.push(takt_lab::sip::LoadCase {
                    mode,
                    model,
                    workers,
                    idle_latency,
                });
            }
        }
    }
    plan.sipp_cpus = a.sipp_cpus.clone();
    plan.cps = a.cps;
    if let Some(c) = a.calls {
        plan.calls = c;
    }
    if let Some(w) = a.warmup_calls {
        plan.warmup_calls = w;
    }
    plan.runs = a.runs as usize;
    plan.rcvbuf = a.rcvbuf;
    plan.spin = a.spin;
    if let Some(w) = a.wake {
        plan.wake = w;
    }
    plan.spec = a.sched.spec("sip");
    let doc = crate::cmd_bench::measured(takt_measure::suite::run_command(
        "takt sip load",
        &plan,
        a.out.json,
    ))?;
    Ok(a.record.store(&doc)?)
}

fn apply_flags(cfg: &mut Config, a: &ProxyArgs) {
    if let Some(l) = a.listen {
        cfg.proxy.listen = l.to_string();
    }
    if let Some(n) = &a.next_hop {
        cfg.proxy.next_hop = Some(n.clone());
    }
    if let Some(t) = a.next_hop_transport {
        cfg.proxy.next_hop_transport = t;
    }
    if let Some(h) = &a.advertise {
        cfg.proxy.advertise = Some(h.clone());
    }
    if let Some(m) = a.mode {
        cfg.proxy.mode = m;
    }
    if let Some(m) = a.model {
        cfg.workers.model = m;
    }
    if let Some(w) = a.wake {
        cfg.workers.wake = w;
    }
    if let Some(w) = a.workers {
        cfg.workers.count = w as usize;
    }
    if let Some(r) = a.rcvbuf {
        cfg.workers.rcvbuf = Some(r);
    }
    if let Some(b) = a.batch {
        cfg.workers.batch = b;
    }
    if a.no_tcp {
        cfg.workers.tcp = false;
    }
    if let Some(n) = a.tcp_workers {
        cfg.tcp.workers = n as usize;
    }
    if let Some(n) = a.tcp_max_connections {
        cfg.tcp.max_connections = Some(n as usize);
        cfg.workers.max_tcp_connections = None;
    }
    if let Some(n) = a.tcp_max_per_peer {
        cfg.tcp.max_per_peer = n as usize;
    }
    if let Some(d) = a.tcp_message_deadline {
        cfg.tcp.message_deadline_ms = (d.as_millis() as u64).max(1);
    }
    if let Some(d) = a.tcp_idle_timeout {
        cfg.tcp.idle_timeout_s = d.as_secs().max(1);
    }
    if a.no_record_route {
        cfg.proxy.record_route = false;
    }
    if let Some(m) = a.max_transactions {
        cfg.proxy.max_transactions = m;
    }
    if let Some(s) = &a.stats {
        cfg.stats.endpoint = s.clone();
    }
    if let Some(i) = a.interval {
        cfg.stats.interval_s = i;
    }
}

fn proxy(a: ProxyArgs) -> Result<(), String> {
    let mut cfg = match &a.config {
        Some(p) => Config::load(p).map_err(|e| e.to_string())?,
        None => Config::default(),
    };
    apply_flags(&mut cfg, &a);
    let base = (a.sched.cpus.is_some() || a.sched.sched.is_some()).then(|| a.sched.spec("sip"));
    let (pcfg, mut scfg) = cfg.runtime(base).map_err(|e| e.to_string())?;
    scfg.spin = a.spin;
    let endpoint_addr = cfg.endpoint().map_err(|e| e.to_string())?;
    if let Some(EndpointAddr::Tcp(sa)) = &endpoint_addr {
        if !sa.ip().is_loopback() {
            eprintln!("warning: statistics endpoint {sa} is reachable from the network");
        }
    }
    let idle_hold = match a.idle_latency {
        Some(IdleLimit(Some(limit))) => {
            Some(takt_sched::IdleLatency::hold(limit).map_err(|e| format!("--idle-latency: {e}"))?)
        }
        _ => None,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    // Release pairs with the Acquire loads in the loop below.
    ctrlc::set_handler(move || s2.store(true, Ordering::Release))
        .map_err(|e| format!("installing the Ctrl-C handler: {e}"))?;
    let spec = scfg.spec.clone();
    let server = Server::start(pcfg, scfg).map_err(|e| format!("starting the proxy: {e}"))?;
    let endpoint = match endpoint_addr {
        Some(addr) => Some(
            serve(addr, server.registry().clone(), &spec.renamed("sip-stats"))
                .map_err(|e| format!("starting the statistics endpoint: {e}"))?,
        ),
        None => None,
    };
    let first = server.snapshot();
    if let Some(t) = first.tcp.filter(|t| t.fd_limit < t.fd_needed) {
        eprintln!(
            "warning: the open-file limit is {} (the hard limit allows no more), the TCP \
             connection limit needs {}: connections beyond it fail with EMFILE. Raise the \
             hard limit (ulimit -Hn, LimitNOFILE=) or lower --tcp-max-connections",
            t.fd_limit, t.fd_needed
        );
    }
    let info = first.server;
    eprintln!(
        "takt sip proxy: {} {}{} x{} on {} (udp{}), next hop {}, rcvbuf {} B{}{}{}",
        info.mode,
        info.model,
        info.wake
            .map(|w| format!(" ({w} wake)"))
            .unwrap_or_default(),
        info.workers,
        server.local_addr(),
        if info.tcp { "+tcp" } else { "" },
        info.next_hop,
        info.rcvbuf_effective,
        if info.invite_split {
            format!(
                " (INVITEs on their own socket, rcvbuf {} B)",
                info.invite_rcvbuf_effective
            )
        } else {
            String::new()
        },
        idle_hold
            .as_ref()
            .map(|h| format!(
                ", idle latency {}",
                takt_lab::result::idle_latency_param(Some(h.limit()))
            ))
            .unwrap_or_default(),
        endpoint
            .as_ref()
            .map(|e| format!(", stats at {:?}", e.addr()))
            .unwrap_or_default()
    );
    let start = Instant::now();
    let interval = Duration::from_secs(cfg.stats.interval_s);
    let mut last_print = Instant::now();
    let mut prev = None;
    // Acquire pairs with the Release store in the signal handler.
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(50));
        if a.duration
            .is_some_and(|d| start.elapsed().as_secs_f64() >= d)
        {
            break;
        }
        if !interval.is_zero() && last_print.elapsed() >= interval {
            last_print = Instant::now();
            let snap = server.snapshot();
            eprintln!("{}", snap.summary_line(prev.as_ref()));
            prev = Some(snap);
        }
    }
    drop(endpoint);
    let snap = server.stop();
    if a.json {
        println!("{}", snap.json());
    } else {
        print!("{}", takt_lab::sip::render_exit_summary(&snap));
    }
    Ok(())
}

/// The generator's policy for a laboratory command: `given`
/// (`--gen-sched`), else real-time where the process may use it (takt-siplab's
/// `gen::policy`). What its result must say — the fallback to `SCHED_OTHER`,
/// a real-time generator sharing the server's CPUs — is said here once on
/// stderr, and the caller stamps it into the document.
pub(crate) fn gen_policy(
    given: Option<takt_sched::SchedPolicy>,
    server: &takt_sched::CpuSet,
    generator: &takt_sched::CpuSet,
) -> Result<takt_siplab::gen::GenPolicy, String> {
    let g = takt_siplab::gen::GenPolicy::choose(given)
        .map_err(|e| e.to_string())?
        .placed(server, generator);
    for n in g.notes() {
        eprintln!("{n}");
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("4m"), Ok(4 << 20));
        assert_eq!(parse_bytes("256K"), Ok(256 << 10));
        assert_eq!(parse_bytes("212992"), Ok(212_992));
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("x").is_err());
    }

    #[test]
    fn tcp_flags_override_the_file() {
        use clap::Parser;
        #[derive(Parser)]
        struct P {
            #[command(flatten)]
            a: ProxyArgs,
        }
        let p = P::try_parse_from([
            "p",
            "--tcp-workers",
            "2",
            "--tcp-max-connections",
            "100",
            "--tcp-max-per-peer",
            "3",
            "--tcp-message-deadline",
            "250ms",
            "--tcp-idle-timeout",
            "30s",
        ])
        .unwrap();
        let mut cfg = Config::parse("[workers]\nmax_tcp_connections = 9\n", "x").unwrap();
        apply_flags(&mut cfg, &p.a);
        let (_, sc) = cfg.runtime(Some(takt_sched::ThreadSpec::new("t"))).unwrap();
        let l = sc.tcp_limits;
        assert_eq!((l.workers, l.max_connections, l.max_per_peer), (2, 100, 3));
        assert_eq!(l.message_deadline, Duration::from_millis(250));
        assert_eq!(l.idle_timeout, Duration::from_secs(30));
        for bad in [
            &["p", "--tcp-max-connections", "0"][..],
            &["p", "--tcp-message-deadline", "0"],
            &["p", "--tcp-idle-timeout", "soon"],
            &["p", "--tcp-workers", "0"],
        ] {
            assert!(P::try_parse_from(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn idle_limits() {
        use std::time::Duration;
        assert_eq!(parse_idle_limit("none"), Ok(IdleLimit(None)));
        assert_eq!(parse_idle_limit("0"), Ok(IdleLimit(Some(Duration::ZERO))));
        assert_eq!(
            parse_idle_limit("20us"),
            Ok(IdleLimit(Some(Duration::from_micros(20))))
        );
        let e = parse_idle_limit("soon").unwrap_err();
        assert!(e.contains("bad idle latency \"soon\""), "{e}");
    }
}
