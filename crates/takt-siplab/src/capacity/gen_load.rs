//! The native generator ([`crate::gen`]) as a capacity [`Load`].
//!
//! Each trial is one generator run at the trial's rate: `calls` calls
//! (at least `min_calls`, else the rate times the window), then the
//! generator's bounded drain. Retransmissions are off, so every message is
//! sent once and the count per kind is exact: a message is *lost at the
//! server* when one side sent it and the other never received it —
//! requests (INVITE, ACK, BYE) from the UAC missing at the UAS, responses
//! the UAS sent missing at the UAC. A request the proxy answered itself
//! (a 503 when shedding) never reaches the UAS and counts as lost: the
//! capacity is the rate the server *forwards* at. Responses the proxy makes
//! (100 Trying, 503) are not compared. A stateful proxy retransmits a
//! request to a UAS that has not answered within T1 (500 ms), and the
//! UAS's answers to such copies are absorbed or forwarded by the proxy:
//! the per-kind counts then stop matching call for call — but a UAS that
//! slow means a generator-bound trial, which the search never counts.
//! The UAS keeps one address for all
//! trials (the target forwards there); the UAC's ports are new every
//! trial, which real proxies and the null relay (routing by Via) follow.
//! Over TCP (the base configuration's transport) the UAC connects anew
//! every trial, a server's drops show as shed and timed-out calls — the
//! lost messages counted the same way — and the UAS listens on TCP.

use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};

use std::time::Duration;
use takt_sip::proxy::Transport;

use super::{Load, LoadOutcome};
use crate::error::{io, Result};
use crate::gen::{self, Cancel, GenConfig};
use crate::target::Target;

/// Request kinds the UAC sends and the UAS receives.
const REQUESTS: [&str; 3] = ["invite", "ack", "bye"];

/// The generator as a [`Load`] (see the module docs).
#[derive(Debug)]
pub struct GenLoad {
    base: GenConfig,
    uas: SocketAddr,
    window: Duration,
    min_calls: u64,
    cancel: Cancel,
}

impl GenLoad {
    /// A load from `base` (its placement, ports, drain, saturation bounds;
    /// proxy, rate, calls and UAS address are set per trial) with its UAS
    /// on a free port of `ip`, trials of `window` worth of calls (at least
    /// `min_calls`). `cancel` ends a running trial early.
    pub fn new(
        mut base: GenConfig,
        ip: IpAddr,
        window: Duration,
        min_calls: u64,
        cancel: Cancel,
    ) -> Result<GenLoad> {
        let any = SocketAddr::new(ip, 0);
        let uas = match base.transport {
            Transport::Udp => UdpSocket::bind(any).and_then(|s| s.local_addr()),
            Transport::Tcp => TcpListener::bind(any).and_then(|s| s.local_addr()),
        }
        .map_err(io(format!("picking the generator's UAS port on {ip}")))?;
        base.timers.retransmit = false;
        base.duration = None;
        Ok(GenLoad {
            base,
            uas,
            window,
            min_calls,
            cancel,
        })
    }
}

impl Load for GenLoad {
    fn uas(&self) -> SocketAddr {
        self.uas
    }

    fn run(&mut self, target: &Target, rate_cps: f64) -> Result<LoadOutcome> {
        let mut cfg = self.base.clone();
        cfg.proxy = target.listen();
        cfg.uas_listen = self.uas;
        cfg.cps = rate_cps;
        cfg.calls =
            Some(((rate_cps * self.window.as_secs_f64()).ceil() as u64).max(self.min_calls));
        let rep = gen::run(&cfg, &self.cancel)?;
        if self.cancel.is_cancelled() {
            return Err(crate::Error::Interrupted);
        }
        let (Some(uac), Some(uas)) = (&rep.uac, &rep.uas) else {
            return Err(crate::Error::Thread(
                "the generator ran without both sides".into(),
            ));
        };
        let get = |m: &gen::ByKind, k: &str| m.get(k).copied().unwrap_or(0);
        let mut lost = 0;
        for k in REQUESTS {
            lost += get(&uac.sent, k).saturating_sub(get(&uas.received, k));
        }
        for (k, &n) in &uas.sent {
            lost += n.saturating_sub(get(&uac.received, k));
        }
        Ok(LoadOutcome {
            achieved_cps: rep.achieved_cps,
            sent_to_server: uac.sent.values().sum::<u64>() + uas.sent.values().sum::<u64>(),
            lost,
            completed_calls: uac.completed,
            failed_calls: uac.failed + uac.unfinished,
            generator_bound: rep.saturation.generator_bound,
            generator_causes: rep.saturation.causes,
        })
    }
}
