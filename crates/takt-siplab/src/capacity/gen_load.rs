//! The native generator ([`crate::gen`]) as a capacity [`Load`].
//!
//! Each trial is one generator run at the trial's rate: `calls` calls
//! (at least `min_calls`, else the rate times the window), then the
//! generator's bounded drain, ended early once neither side has received
//! anything for 100 ms (a lost message is never resent, so a silent call
//! is a lost one). Retransmissions are off, so every message is
//! sent once and the count per kind is exact: a message is *lost at the
//! server* when one side sent it and the other never received it —
//! requests (INVITE, ACK, BYE) from the UAC missing at the UAS, responses
//! the UAS sent missing at the UAC — except a 180 a transaction-stateful
//! target absorbed because its call's 200 had passed it, as RFC 3261
//! requires ([`gen::account`]). A request the proxy answered itself
//! (a 503 when shedding) never reaches the UAS and counts as lost: the
//! capacity is the rate the server *forwards* at. Responses the proxy makes
//! (100 Trying, 503) are not compared. A stateful proxy retransmits a
//! request to a UAS that has not answered within T1 (500 ms), and the
//! UAS's answers to such copies are absorbed or forwarded by the proxy:
//! the per-kind counts then stop matching call for call — but a UAS that
//! slow means a generator-bound trial, which the search never counts.
//! The UAS keeps one address for all
//! trials (the target forwards there): a free port picked at random, or
//! the address given ([`GenLoad::listening`], `--uas`) for a server that
//! forwards to a fixed one. The calls' Request-URI names it and the
//! requests go to the target as an outbound proxy, so a proxy routing on
//! the Request-URI reaches it too. The UAC's ports are new every
//! trial, which real proxies and the null relay (routing by Via) follow.
//! A first trial in which nothing reached the UAS ends the run with a
//! [`UasDiagnosis`] instead of a drop rate; once requests have reached
//! it, a trial that loses them all is an overloaded server's, and counts.
//! Over TCP (the base configuration's transport) the UAC connects anew
//! every trial, a server's drops show as shed and timed-out calls — the
//! lost messages counted the same way — and the UAS listens on TCP.

use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};

use std::time::Duration;
use takt_sip::proxy::Transport;

use super::{Load, LoadOutcome, UasDiagnosis};
use crate::error::{io, Result};
use crate::gen::{self, Cancel, GenConfig};
use crate::target::Target;

/// How long both sides stay quiet before a trial's drain ends early.
const DRAIN_QUIET: Duration = Duration::from_millis(100);

/// The generator as a [`Load`] (see the module docs).
#[derive(Debug)]
pub struct GenLoad {
    base: GenConfig,
    uas: SocketAddr,
    window: Duration,
    min_calls: u64,
    cancel: Cancel,
    /// Some trial's requests reached the UAS.
    reached: bool,
}

impl GenLoad {
    /// A load from `base` (its placement, ports, drain, saturation bounds;
    /// proxy, rate, calls and UAS address are set per trial) with its UAS
    /// on a free port of `ip`, trials of `window` worth of calls (at least
    /// `min_calls`). `cancel` ends a running trial early.
    pub fn new(
        base: GenConfig,
        ip: IpAddr,
        window: Duration,
        min_calls: u64,
        cancel: Cancel,
    ) -> Result<GenLoad> {
        let uas = uas_addr(ip, base.transport)
            .map_err(io(format!("picking the generator's UAS port on {ip}")))?;
        GenLoad::listening(base, uas, window, min_calls, cancel)
    }

    /// A load like [`GenLoad::new`]'s with its UAS on `uas` (for a target
    /// that forwards to a fixed address). An address this host cannot
    /// bind (not one of its own, or taken) is an error naming it.
    pub fn listening(
        mut base: GenConfig,
        uas: SocketAddr,
        window: Duration,
        min_calls: u64,
        cancel: Cancel,
    ) -> Result<GenLoad> {
        let bound = match base.transport {
            Transport::Udp => UdpSocket::bind(uas).map(drop),
            Transport::Tcp => TcpListener::bind(uas).map(drop),
        };
        bound.map_err(io(format!("the generator's UAS cannot listen on {uas}")))?;
        base.timers.retransmit = false;
        base.duration = None;
        // without retransmissions or hold, a call is silent only when a
        // message of it is lost: once nothing has arrived for this long,
        // the server has nothing left to deliver and waiting out the
        // whole drain only costs time (half a second per lossy trial)
        if base.hold.is_zero() {
            base.drain_quiet = Some(DRAIN_QUIET);
        }
        Ok(GenLoad {
            base,
            uas,
            window,
            min_calls,
            cancel,
            reached: false,
        })
    }
}

/// Where the UAS listens for all of a load's trials: a free port below
/// the kernel's ephemeral range (`net.ipv4.ip_local_port_range`), picked
/// at random. Between two trials the port is unbound; an ephemeral one
/// could meanwhile go to any process binding port 0 (a test, a resolver)
/// and the next trial would fail to bind — this has ended sweeps on a
/// shared machine. Only a process choosing that very port can take this
/// one. Without a free port there, an ephemeral one as before.
pub(crate) fn uas_addr(ip: IpAddr, transport: Transport) -> std::io::Result<SocketAddr> {
    let bind = |port| {
        let a = SocketAddr::new(ip, port);
        match transport {
            Transport::Udp => UdpSocket::bind(a).and_then(|s| s.local_addr()),
            Transport::Tcp => TcpListener::bind(a).and_then(|s| s.local_addr()),
        }
    };
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768);
    let from = low.saturating_sub(16_384).max(1_024);
    if from < low {
        let span = u64::from(low - from);
        // a seed that differs between processes and calls
        let mut x = u64::from(std::process::id())
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
        for _ in 0..64 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let port = from + ((x >> 33) % span) as u16;
            if let Ok(a) = bind(port) {
                return Ok(a);
            }
        }
    }
    bind(0)
}

impl Load for GenLoad {
    fn uas(&self) -> SocketAddr {
        self.uas
    }

    fn request_uri(&self) -> String {
        self.base.request_uri(self.uas)
    }

    fn route(&self, target: SocketAddr) -> Option<String> {
        GenConfig {
            proxy: target,
            ..self.base.clone()
        }
        .route()
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
        let (Some(uac), Some(counts)) = (&rep.uac, gen::Counts::of(&rep)) else {
            return Err(crate::Error::Thread(
                "the generator ran without both sides".into(),
            ));
        };
        if !self.reached {
            if let Some(d) = UasDiagnosis::of(&rep, rate_cps) {
                return Err(crate::Error::NothingReachedUas(Box::new(d)));
            }
            self.reached = true;
        }
        let account = gen::Account::of(&counts, target.stateful());
        Ok(LoadOutcome {
            achieved_cps: rep.achieved_cps,
            sent_to_server: account.sent_to_server,
            lost: account.lost,
            completed_calls: uac.completed,
            failed_calls: uac.failed + uac.unfinished,
            generator_bound: rep.saturation.generator_bound,
            generator_causes: rep.saturation.causes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_uas_port_is_free_and_below_the_ephemeral_range() {
        let low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let lo: IpAddr = [127, 0, 0, 1].into();
        for t in [Transport::Udp, Transport::Tcp] {
            let a = uas_addr(lo, t).unwrap();
            assert!(a.port() < low && a.port() >= 1_024, "{a}");
            // free: a trial can bind it
            match t {
                Transport::Udp => drop(UdpSocket::bind(a).unwrap()),
                Transport::Tcp => drop(TcpListener::bind(a).unwrap()),
            }
        }
    }
}
