//! `takt sip proxy`: the SIP proxy until Ctrl-C or SIGTERM (or
//! `--duration`), a summary line every interval on stderr and the
//! statistics at exit on stdout — takt-siplab's `proxy_run` behind flags.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;
use takt_measure::cancel::Cancel;
use takt_measure::error::MeasureError;
use takt_sched::SpinBudget;
use takt_sip::config::Config;
use takt_sip::proxy::{Mode, Transport};
use takt_sip::transport::{WakeOrder, WorkerModel};
use takt_siplab::proxy_run::{exit_text, ProxyRun};

use crate::args::{parse_idle_limit, parse_spin, IdleLimit, SchedArgs};
use crate::cmd_sip::parse_bytes;
use crate::error::CmdError;

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
    #[arg(long, value_name = "udp|tcp")]
    next_hop_transport: Option<Transport>,
    /// Host written into Via and Record-Route (default: the listen address).
    #[arg(long, value_name = "HOST")]
    advertise: Option<String>,
    /// Proxy mode.
    #[arg(long, value_name = "stateless|stateful")]
    mode: Option<Mode>,
    /// Worker model.
    #[arg(long, value_name = "shared|reuseport|batched")]
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
    #[arg(long, value_name = "lifo|fifo")]
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

fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    takt_sched::parse_duration(s)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{s:?} is not a positive duration (e.g. 500ms, 5s)"))
}

pub(crate) fn apply_flags(cfg: &mut Config, a: &ProxyArgs) {
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

pub fn run(a: ProxyArgs) -> Result<(), CmdError> {
    let mut config = match &a.config {
        Some(p) => Config::load(p).map_err(takt_siplab::Error::from)?,
        None => Config::default(),
    };
    apply_flags(&mut config, &a);
    let run = ProxyRun {
        config,
        base: (a.sched.cpus.is_some() || a.sched.sched.is_some()).then(|| a.sched.spec("sip")),
        spin: a.spin,
        idle_latency: a.idle_latency.and_then(|IdleLimit(l)| l),
        duration: a
            .duration
            .and_then(|d| Duration::try_from_secs_f64(d.max(0.0)).ok()),
    };
    let cancel = Cancel::new();
    cancel.on_signals()?;
    let snap = run.run(&cancel, &mut |line| eprintln!("{line}"))?;
    takt_measure::output::print(&exit_text(&snap, a.json)).map_err(MeasureError::from)?;
    Ok(())
}
