//! The `gen-uas` thread: the UAS core on its socket.

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use takt_sip::ua::{Uas, UasConfig};

use super::report::{SocketReport, ThreadReport, UasReport};
use super::socket::{Poller, RecvBatch, SendFailures, SendQueue};
use super::{Cancel, GenConfig, Live};
use crate::Error;

/// Longest single wait, so a stop is seen promptly.
const MAX_WAIT_NS: u64 = 20_000_000;

pub(super) struct Ctx {
    pub(super) cfg: GenConfig,
    pub(super) sock: UdpSocket,
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
    let Ctx {
        cfg,
        sock,
        t0,
        cancel,
        uac_done,
        live,
    } = ctx;
    let clock = takt_sched::clock();
    let ns = || clock.ticks_to_ns(clock.now().saturating_sub(t0));
    let cpu0 = takt_sched::thread_cpu_time();
    let wall0 = ns();
    let contact = sock.local_addr().map_err(|source| Error::Io {
        what: "reading the UAS's socket address".into(),
        source,
    })?;
    let mut scfg = UasConfig::new(contact);
    scfg.max_dialogs = cfg.max_dialogs;
    scfg.timers = cfg.timers;
    let mut uas = Uas::new(scfg);
    let socks = [sock];
    let mut poller = Poller::new(&socks).map_err(|source| Error::Io {
        what: "creating the UAS's epoll instance".into(),
        source,
    })?;
    let mut rb = RecvBatch::new(cfg.batch);
    let mut q = SendQueue::new();
    let mut stage: Vec<u8> = Vec::with_capacity(256 << 10);
    let mut ready = Vec::with_capacity(1);
    let mut drops = 0u32;
    let mut sockets = SocketReport::default();
    let mut fails = SendFailures::default();
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
        poller.ready(&mut ready);
        let mut got = 0;
        if !ready.is_empty() {
            loop {
                match rb.recv(&socks[0]) {
                    Ok(0) => break,
                    Ok(n) => {
                        got += n;
                        if let Some(d) = rb.drops {
                            drops = drops.max(d);
                        }
                        let t = ns();
                        for j in 0..n {
                            let (bytes, src, trunc) = rb.get(j);
                            if trunc {
                                sockets.truncated += 1;
                            } else {
                                let _ = uas.handle(t, 0, src, bytes); // refusals are counted
                            }
                        }
                        if n < rb.capacity() {
                            break;
                        }
                    }
                    Err(_) => {
                        sockets.recv_errors += 1;
                        break;
                    }
                }
            }
        }
        let now = ns();
        if uas.poll_timeout().is_some_and(|t| t <= now) {
            uas.handle_timeout(now);
        }
        stage.clear();
        while let Some(t) = uas.poll_transmit(&mut stage) {
            q.push(t.dst, stage.len() - t.len, t.len);
        }
        if !q.is_empty() {
            q.flush(&socks[0], &stage, &mut fails);
        }
        live.answered.store(uas.stats().answered, Ordering::Relaxed);
        if got == 0 {
            let now = ns();
            let wake = uas
                .poll_timeout()
                .unwrap_or(u64::MAX)
                .min(end.unwrap_or(u64::MAX));
            if wake > now {
                poller.wait(Duration::from_nanos((wake - now).min(MAX_WAIT_NS)));
                idle_ns += ns() - now;
            }
        }
    }

    sockets.drops = u64::from(drops);
    sockets.send_full = fails.full;
    sockets.send_errors = fails.errors;
    let wall_ns = ns() - wall0;
    let thread = ThreadReport {
        name: "gen-uas".into(),
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
    };
    Ok(UasReport::new(
        uas.stats(),
        uas.pending() as u64,
        sockets,
        thread,
    ))
}
