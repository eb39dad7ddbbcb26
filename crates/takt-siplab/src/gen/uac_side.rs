//! The `gen-uac` thread: arrivals, the UAC core, its sockets.

use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use takt_sip::proxy::Transport;
use takt_sip::ua::{Outcome, Uac, UacConfig};

use super::io::{SideIo, UdpIo};
use super::report::{ThreadReport, UacReport};
use super::tcp::TcpIo;
use super::{Cancel, GenConfig, Live, Schedule, SPIN_MARGIN};
use crate::Error;

/// Calls placed at most per loop turn when behind (then the loop
/// receives and sends before placing more).
const BURST: usize = 64;

/// Longest single wait, so a cancel is seen promptly.
const MAX_WAIT_NS: u64 = 50_000_000;

/// Longest wait while a stream holds bytes the kernel did not take.
pub(super) const BACKLOG_WAIT_NS: u64 = 1_000_000;

/// Delay from the run's start to the first planned call, so both threads
/// are up.
pub(super) const START_NS: u64 = 2_000_000;

/// The UAC's sockets, by transport.
pub(super) enum UacNet {
    /// `--ports` UDP sockets.
    Udp(Vec<UdpSocket>),
    /// `--connections` TCP connections to the proxy.
    Tcp(Vec<TcpStream>),
}

pub(super) struct Ctx {
    pub(super) cfg: GenConfig,
    pub(super) net: UacNet,
    /// The run's start, clock ticks.
    pub(super) t0: u64,
    pub(super) cancel: Cancel,
    pub(super) live: Arc<Live>,
    /// Holds the send loop from the first to the second time (ns after
    /// the run's start): a stalled generator, for tests.
    #[cfg(test)]
    pub(super) stall: Option<(u64, u64)>,
}

/// When the calls left, against the plan.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sends {
    /// From the first to the last call placed, s.
    pub(super) send_s: f64,
    /// The window the achieved rate is taken over, s
    /// ([`super::arrivals::achieved_rate`]).
    pub(super) window_s: f64,
    /// Calls placed per second over `window_s`.
    pub(super) achieved_cps: f64,
}

/// The calling side's state, owned by its thread.
struct Side<N> {
    uac: Uac,
    io: N,
    plan: Schedule,
    /// The next planned call, ns after the run's start.
    next: Option<u64>,
    t0: u64,
    stage: Vec<u8>,
    planned: Vec<u64>,
    lag: Histogram<u64>,
    late_ns: u64,
    late_calls: u64,
    first_sent: Option<u64>,
    last_sent: u64,
}

impl<N: SideIo> Side<N> {
    fn ns(&self) -> u64 {
        ns_since(self.t0)
    }

    /// Places the calls due now (at most a burst), sends what is queued,
    /// and records each placed call's lag at the moment it is sent.
    fn place_due(&mut self) {
        let now = self.ns();
        self.planned.clear();
        while let Some(p) = self.next {
            if p > now || self.planned.len() == BURST {
                break;
            }
            let _ = self.uac.start_call(now); // a full table is counted as no_slot
            self.planned.push(p);
            self.next = self.plan.next().map(|t| t + START_NS);
        }
        if self.planned.is_empty() {
            return;
        }
        let t = self.send();
        for &p in &self.planned {
            let l = t.saturating_sub(p);
            self.lag.saturating_record(l);
            if l > self.late_ns {
                self.late_calls += 1;
            }
        }
        self.first_sent.get_or_insert(t);
        self.last_sent = t;
    }

    /// Sends everything the UAC has queued; returns the time just before
    /// the first send.
    fn send(&mut self) -> u64 {
        self.stage.clear();
        while let Some(t) = self.uac.poll_transmit(&mut self.stage) {
            let start = self.stage.len() - t.len;
            self.io.push(&t, start, &self.stage);
        }
        let t = self.ns();
        self.io.flush(&self.stage);
        t
    }

    /// Takes everything queued at the sources in `ready`, placing calls
    /// that fall due in between (the arrival schedule comes first).
    fn receive(&mut self, ready: &[usize]) {
        for &i in ready {
            loop {
                let t0 = self.t0;
                let uac = &mut self.uac;
                let r = self.io.recv(i, |bytes, _, _| {
                    let _ = uac.handle(ns_since(t0), bytes); // refusals are counted
                });
                if r.messages > 0 {
                    self.place_due();
                }
                if !r.more {
                    break;
                }
            }
        }
    }
}

/// Whether the calling thread runs under a real-time policy (FIFO, RR),
/// as the kernel reports it (with or without reset-on-fork).
fn realtime() -> bool {
    takt_sched::current_policy().is_ok_and(|p| p.is_realtime())
}

/// ns from `t0` (clock ticks) to now.
pub(super) fn ns_since(t0: u64) -> u64 {
    let c = takt_sched::clock();
    c.ticks_to_ns(c.now().saturating_sub(t0))
}

/// Runs the calling side; returns when the calls left and the report.
pub(super) fn run(ctx: Ctx) -> Result<(Sends, UacReport), Error> {
    #[cfg(test)]
    let stall = ctx.stall;
    let Ctx {
        cfg,
        net,
        t0,
        cancel,
        live,
        ..
    } = ctx;
    let io_err = |what: &str| {
        let what = what.to_string();
        move |source| Error::Io { what, source }
    };
    let parts = Parts {
        cfg,
        t0,
        cancel,
        live,
        #[cfg(test)]
        stall,
    };
    match net {
        UacNet::Udp(socks) => {
            let locals = local_addrs(&socks, UdpSocket::local_addr)
                .map_err(io_err("reading the UAC's socket addresses"))?;
            let io = UdpIo::new(socks, parts.cfg.batch)
                .map_err(io_err("creating the UAC's epoll instance"))?;
            run_on(parts, io, locals, Transport::Udp)
        }
        UacNet::Tcp(streams) => {
            let locals = local_addrs(&streams, TcpStream::local_addr)
                .map_err(io_err("reading the UAC's connection addresses"))?;
            let io = TcpIo::client(streams).map_err(io_err("watching the UAC's connections"))?;
            run_on(parts, io, locals, Transport::Tcp)
        }
    }
}

/// The local address of each socket: the UA core's ports.
fn local_addrs<S>(
    socks: &[S],
    addr: impl Fn(&S) -> std::io::Result<SocketAddr>,
) -> std::io::Result<Vec<SocketAddr>> {
    socks.iter().map(addr).collect()
}

/// The context without the sockets.
struct Parts {
    cfg: GenConfig,
    t0: u64,
    cancel: Cancel,
    live: Arc<Live>,
    #[cfg(test)]
    stall: Option<(u64, u64)>,
}

/// The calling side's loop over `io`, whose ports have the addresses
/// `locals`.
fn run_on<N: SideIo>(
    parts: Parts,
    io: N,
    locals: Vec<SocketAddr>,
    transport: Transport,
) -> Result<(Sends, UacReport), Error> {
    #[cfg(test)]
    let stall = parts.stall;
    let Parts {
        cfg,
        t0,
        cancel,
        live,
        ..
    } = parts;
    let cpu0 = takt_sched::thread_cpu_time();
    let policy = takt_sched::current_policy().map_or_else(|_| String::new(), |p| p.to_string());
    let mut ucfg = UacConfig::new(locals[0], cfg.proxy)
        .with_transport(transport)
        .with_uas(cfg.uas_listen);
    if cfg.route_preload {
        ucfg = ucfg.with_route_preload();
    }
    ucfg.locals = locals;
    ucfg.max_calls = cfg.call_table();
    ucfg.hold_ns = cfg.hold.as_nanos() as u64;
    ucfg.timers = cfg.timers;
    ucfg.run_id = cfg.run_id.unwrap_or_else(|| run_id(cfg.seed));
    let end_ns = cfg.duration.map(|d| d.as_nanos() as u64);
    let mut plan = Schedule::new(cfg.arrivals, cfg.cps, cfg.seed, cfg.calls, end_ns);
    let next = plan.next().map(|t| t + START_NS);
    let mut s = Side {
        uac: Uac::new(ucfg),
        io,
        plan,
        next,
        t0,
        stage: Vec::with_capacity(256 << 10),
        planned: Vec::with_capacity(BURST),
        lag: Histogram::new_with_max(3_600_000_000_000, 3).expect("valid bounds"),
        late_ns: cfg.late_after.as_nanos() as u64,
        late_calls: 0,
        first_sent: None,
        last_sent: 0,
    };
    let mut ready: Vec<usize> = Vec::with_capacity(64);
    let wall0 = s.ns();
    let mut idle_ns = 0u64;
    let mut spin_ns = 0u64;
    let mut drain_end: Option<u64> = None;
    let drain_ns = cfg.drain.as_nanos() as u64;
    let quiet_ns = cfg.drain_quiet.map(|d| d.as_nanos() as u64);
    // when either side last received a message, and the UAS's count then
    let mut heard = (0u64, 0u64);
    // a real-time thread sleeps to the planned time instead (see the
    // module docs: spinning would get it throttled)
    let margin = if realtime() {
        0
    } else {
        SPIN_MARGIN.as_nanos() as u64
    };

    loop {
        if cancel.is_cancelled() {
            break;
        }
        #[cfg(test)]
        if let Some((from, to)) = stall {
            let now = s.ns();
            if (from..to).contains(&now) {
                std::thread::sleep(Duration::from_nanos(to - now));
            }
        }
        // 1. Calls due now; 2. responses (placing calls due meanwhile);
        // 3. timers; 4. what they queued.
        s.place_due();
        s.io.ready(&mut ready);
        s.receive(&ready);
        let now = s.ns();
        if s.uac.poll_timeout().is_some_and(|t| t <= now) {
            s.uac.handle_timeout(now);
        }
        s.send();
        let st = s.uac.stats();
        live.attempted.store(st.attempted, Ordering::Relaxed);
        live.completed
            .store(st.outcomes.get(Outcome::Completed), Ordering::Relaxed);
        live.failed.store(st.outcomes.failed(), Ordering::Relaxed);
        live.retransmitted
            .store(st.retransmitted.total(), Ordering::Relaxed);
        live.max_lag_us.store(s.lag.max() / 1000, Ordering::Relaxed);
        // 5. The end: every planned call placed, then the drain (ended
        //    early once both sides have been quiet, when so configured).
        let now = s.ns();
        if let Some(q) = quiet_ns {
            let uas_got = live.uas_received.load(Ordering::Relaxed);
            if !ready.is_empty() || uas_got != heard.1 {
                heard = (now, uas_got);
            }
            if s.next.is_none() && now.saturating_sub(heard.0.max(s.last_sent)) >= q {
                break;
            }
        }
        if s.next.is_none() {
            let end = *drain_end.get_or_insert(now + drain_ns);
            if s.uac.active() == 0 || now >= end {
                break;
            }
        }
        // 6. Wait: sleep until SPIN_MARGIN before the next planned call
        //    (or the next timer, or input), then spin to the planned time.
        let timer = s.uac.poll_timeout().unwrap_or(u64::MAX);
        let mut wake = timer.min(s.next.or(drain_end).unwrap_or(u64::MAX));
        if let (Some(q), None) = (quiet_ns, s.next) {
            wake = wake.min(heard.0.max(s.last_sent) + q);
        }
        if s.io.backlog() {
            wake = wake.min(now + BACKLOG_WAIT_NS);
        }
        if wake > now + margin {
            let wait = (wake - margin - now).min(MAX_WAIT_NS);
            s.io.wait(Duration::from_nanos(wait));
            idle_ns += s.ns() - now;
        } else if ready.is_empty() && s.next == Some(wake) && wake > now {
            // Yielding, not pausing: a thread sharing this CPU (the UAS,
            // on a one-CPU generator) runs meanwhile; alone on the CPU,
            // sched_yield returns at once and the spin keeps its precision.
            while s.ns() < wake {
                std::thread::yield_now();
            }
            let spun = s.ns() - now;
            idle_ns += spun;
            spin_ns += spun;
        }
    }

    let sockets = s.io.report();
    let wall_ns = s.ns() - wall0;
    let thread = ThreadReport {
        name: "gen-uac".into(),
        policy,
        cpus: cfg
            .spec
            .pinned_nth(0)
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
        spin_s: spin_ns as f64 / 1e9,
    };
    // the plan's window: to its end, or to the cancel
    let planned_end = s
        .plan
        .window_end()
        .unwrap_or_else(|| s.ns().saturating_sub(START_NS));
    let (window_s, achieved_cps) = super::arrivals::achieved_rate(
        s.uac.stats().attempted,
        planned_end,
        s.last_sent.saturating_sub(START_NS),
    );
    let sends = Sends {
        send_s: s
            .first_sent
            .map_or(0.0, |f| s.last_sent.saturating_sub(f) as f64 / 1e9),
        window_s,
        achieved_cps,
    };
    let report = UacReport::new(
        s.uac.stats(),
        s.uac.active() as u64,
        &s.lag,
        s.late_calls,
        sockets,
        thread,
    );
    Ok((sends, report))
}

/// A run identifier for Call-IDs: the seed mixed with the process id and
/// the wall clock, so concurrent and successive runs differ.
fn run_id(seed: u64) -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut z = seed ^ t ^ (u64::from(std::process::id()) << 32);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u32
}
