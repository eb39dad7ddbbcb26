//! The `gen-uas` thread: the UAS core on its socket (UDP) or its
//! listener and the connections made to it (TCP).

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use std::collections::BTreeMap;
use takt_sip::proxy::Transport;
use takt_sip::ua::{token, Kind, Uas, UasConfig};
use takt_sip::wire::Message;

use super::io::{SideIo, UdpIo};
use super::report::{RunCounts, ThreadReport, UasReport};
use super::tcp::TcpIo;
use super::uac_side::{ns_since, BACKLOG_WAIT_NS};
use super::{Cancel, GenConfig, Live};
use crate::Error;

/// Longest single wait, so a stop is seen promptly.
const MAX_WAIT_NS: u64 = 20_000_000;

/// The UAS's socket, by transport.
pub(super) enum UasNet {
    /// One UDP socket.
    Udp(UdpSocket),
    /// A TCP listener; the proxy connects to it.
    Tcp(TcpListener),
}

pub(super) struct Ctx {
    pub(super) cfg: GenConfig,
    pub(super) net: UasNet,
    /// The run's start, clock ticks.
    pub(super) t0: u64,
    pub(super) cancel: Cancel,
    /// Set once the UAC side (role `both`) has finished.
    pub(super) uac_done: Arc<AtomicBool>,
    pub(super) live: Arc<Live>,
}

/// Runs the answering side until the UAC is done (role `both`), the
/// duration ends (role `uas`), or the run is cancelled.
pub(super) fn run(ctx: Ctx) -> Result<UasReport, Error> {
    let io_err = |what: &str| {
        let what = what.to_string();
        move |source| Error::Io { what, source }
    };
    let Ctx {
        cfg,
        net,
        t0,
        cancel,
        uac_done,
        live,
    } = ctx;
    let contact = match &net {
        UasNet::Udp(s) => s.local_addr(),
        UasNet::Tcp(l) => l.local_addr(),
    }
    .map_err(io_err("reading the UAS's address"))?;
    let parts = (cfg, t0, cancel, uac_done, live);
    match net {
        UasNet::Udp(sock) => {
            let io = UdpIo::new(vec![sock], parts.0.batch)
                .map_err(io_err("creating the UAS's epoll instance"))?;
            run_on(parts, io, contact, Transport::Udp)
        }
        UasNet::Tcp(listener) => {
            let io = TcpIo::server(listener).map_err(io_err("watching the UAS's listener"))?;
            run_on(parts, io, contact, Transport::Tcp)
        }
    }
}

/// The context without the socket.
type Parts = (GenConfig, u64, Cancel, Arc<AtomicBool>, Arc<Live>);

/// The answering side's loop over `io`, its Contact `contact`.
fn run_on<N: SideIo>(
    parts: Parts,
    mut io: N,
    contact: SocketAddr,
    transport: Transport,
) -> Result<UasReport, Error> {
    let (cfg, t0, cancel, uac_done, live) = parts;
    let ns = || ns_since(t0);
    let cpu0 = takt_sched::thread_cpu_time();
    let policy = takt_sched::current_policy().map_or_else(|_| String::new(), |p| p.to_string());
    let wall0 = ns();
    let mut scfg = UasConfig::new(contact);
    scfg.max_dialogs = cfg.max_dialogs;
    scfg.timers = cfg.timers;
    scfg.transport = transport;
    let mut uas = Uas::new(scfg);
    let mut by_run = cfg.count_by_run.then(RunTally::default);
    let mut stage: Vec<u8> = Vec::with_capacity(256 << 10);
    let mut ready = Vec::with_capacity(64);
    let mut idle_ns = 0u64;
    let end = match cfg.role {
        super::Role::Uas => cfg.duration.map(|d| d.as_nanos() as u64),
        _ => None,
    };

    loop {
        if cancel.is_cancelled() || uac_done.load(Ordering::Acquire) {
            break;
        }
        let now = ns();
        if end.is_some_and(|e| now >= e) {
            break;
        }
        io.ready(&mut ready);
        let mut got = 0;
        for &key in &ready {
            loop {
                let r = io.recv(key, |bytes, src, port| {
                    if let Some(t) = by_run.as_mut() {
                        t.count(bytes, true);
                    }
                    let _ = uas.handle(ns(), port, src, bytes); // refusals are counted
                });
                got += r.messages;
                if !r.more {
                    break;
                }
            }
        }
        let now = ns();
        if uas.poll_timeout().is_some_and(|t| t <= now) {
            uas.handle_timeout(now);
        }
        stage.clear();
        while let Some(t) = uas.poll_transmit(&mut stage) {
            let at = stage.len() - t.len;
            if let Some(tally) = by_run.as_mut() {
                tally.count(&stage[at..], false);
            }
            io.push(&t, at, &stage);
        }
        io.flush(&stage);
        live.answered.store(uas.stats().answered, Ordering::Relaxed);
        if got > 0 {
            live.uas_received.fetch_add(got as u64, Ordering::Relaxed);
        }
        if got == 0 {
            let now = ns();
            let mut wake = uas
                .poll_timeout()
                .unwrap_or(u64::MAX)
                .min(end.unwrap_or(u64::MAX));
            if io.backlog() {
                wake = wake.min(now + BACKLOG_WAIT_NS);
            }
            if wake > now {
                io.wait(Duration::from_nanos((wake - now).min(MAX_WAIT_NS)));
                idle_ns += ns() - now;
            }
        }
    }

    let sockets = io.report();
    let wall_ns = ns() - wall0;
    let thread = ThreadReport {
        name: "gen-uas".into(),
        policy,
        cpus: cfg
            .spec
            .pinned_nth(1)
            .cpus()
            .map_or(String::new(), |c| c.to_string()),
        cpu_s: (takt_sched::thread_cpu_time() - cpu0).as_secs_f64(),
        wall_s: wall_ns as f64 / 1e9,
        idle_s: idle_ns as f64 / 1e9,
        idle_fraction: if wall_ns > 0 {
            idle_ns as f64 / wall_ns as f64
        } else {
            0.0
        },
        spin_s: 0.0, // it never spins: it blocks when idle
    };
    let mut report = UasReport::new(uas.stats(), uas.pending() as u64, sockets, thread);
    if let Some(t) = by_run {
        report.by_run = t.runs;
    }
    Ok(report)
}

/// The UAS's messages counted per run id of their Call-ID (a fleet's
/// account: which agent's calls they belong to).
#[derive(Default)]
struct RunTally {
    runs: BTreeMap<u32, RunCounts>,
}

impl RunTally {
    /// Counts one message (`received`, or sent); one that does not parse
    /// or whose Call-ID carries no UAC token is not counted here (the
    /// UAS's own counters have it).
    fn count(&mut self, bytes: &[u8], received: bool) {
        let Ok(m) = Message::parse(bytes) else {
            return;
        };
        let Some((_, _, run)) = token::decode(m.call_id()) else {
            return;
        };
        let c = self.runs.entry(run).or_default();
        let side = if received {
            &mut c.received
        } else {
            &mut c.sent
        };
        *side.entry(Kind::of(&m).name()).or_insert(0) += 1;
    }
}
