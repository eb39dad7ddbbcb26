//! `takt sip proxy`: the proxy in this process until it is stopped, with
//! a summary line every interval and the statistics at exit.
//!
//! [`ProxyRun::run`] starts a [`Server`] from a [`Config`] (the file with
//! the command line's overrides applied), serves its statistics endpoint,
//! holds a CPU idle-latency limit if asked, and returns the final
//! [`Snapshot`] when its [`Cancel`] is raised (Ctrl-C, SIGTERM) or its
//! duration is over; [`exit_text`] lays that out ([`render_exit_summary`])
//! or encodes it as JSON.
//!
//! This supervision lives in the laboratory, not in takt-sip: takt-sip is
//! a runtime that depends on takt-sched only and has no opinion on
//! signals, progress or result tables, while running it as a command
//! uses the laboratory's shared pieces — takt-measure's cancellation
//! (one handler per process) and table model.

mod summary;

use std::time::{Duration, Instant};

use takt_measure::cancel::Cancel;
use takt_measure::result::idle_latency_param;
use takt_sched::{IdleLatency, SpinBudget, ThreadSpec};
use takt_sip::config::Config;
use takt_sip::stats::{serve, EndpointAddr, Snapshot};
use takt_sip::transport::Server;

pub use summary::render_exit_summary;

use crate::error::{io, Error, Result};

/// How often the loop looks at its cancellation flag and clock.
const POLL: Duration = Duration::from_millis(50);

/// One `takt sip proxy` run.
#[derive(Debug, Clone)]
pub struct ProxyRun {
    /// The configuration, flags applied.
    pub config: Config,
    /// CPU set and policy from the command line (`None`: the file's
    /// `workers.cpus` and `workers.sched`).
    pub base: Option<ThreadSpec>,
    /// How long UDP workers poll before blocking.
    pub spin: SpinBudget,
    /// A CPU idle-latency limit held while the proxy runs.
    pub idle_latency: Option<Duration>,
    /// Stop after this long (`None`: when cancelled).
    pub duration: Option<Duration>,
}

impl ProxyRun {
    /// Runs the proxy until `cancel` is raised or the duration is over;
    /// what it has to say (warnings, the line naming what runs, the
    /// periodic summary lines) goes to `log`. Returns the statistics at
    /// exit.
    pub fn run(&self, cancel: &Cancel, log: &mut dyn FnMut(&str)) -> Result<Snapshot> {
        let cfg = &self.config;
        let (pcfg, mut scfg) = cfg.runtime(self.base.clone())?;
        scfg.spin = self.spin;
        let endpoint_addr = cfg.endpoint()?;
        if let Some(EndpointAddr::Tcp(sa)) = &endpoint_addr {
            if !sa.ip().is_loopback() {
                log(&format!(
                    "warning: statistics endpoint {sa} is reachable from the network"
                ));
            }
        }
        let idle_hold = self
            .idle_latency
            .map(IdleLatency::hold)
            .transpose()
            .map_err(Error::IdleLatency)?;
        let spec = scfg.spec.clone();
        let server = Server::start(pcfg, scfg).map_err(io("starting the proxy"))?;
        let endpoint = match endpoint_addr {
            Some(addr) => Some(
                serve(addr, server.registry().clone(), &spec.renamed("sip-stats"))
                    .map_err(io("starting the statistics endpoint"))?,
            ),
            None => None,
        };
        let first = server.snapshot();
        if let Some(t) = first.tcp.filter(|t| t.fd_limit < t.fd_needed) {
            log(&format!(
                "warning: the open-file limit is {} (the hard limit allows no more), the TCP \
                 connection limit needs {}: connections beyond it fail with EMFILE. Raise the \
                 hard limit (ulimit -Hn, LimitNOFILE=) or lower --tcp-max-connections",
                t.fd_limit, t.fd_needed
            ));
        }
        let info = first.server;
        log(&format!(
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
                .map(|h| format!(", idle latency {}", idle_latency_param(Some(h.limit()))))
                .unwrap_or_default(),
            endpoint
                .as_ref()
                .map(|e| format!(", stats at {:?}", e.addr()))
                .unwrap_or_default()
        ));
        let start = Instant::now();
        let interval = Duration::from_secs(cfg.stats.interval_s);
        let mut last_print = Instant::now();
        let mut prev = None;
        while !cancel.is_cancelled() {
            std::thread::sleep(POLL);
            if self.duration.is_some_and(|d| start.elapsed() >= d) {
                break;
            }
            if !interval.is_zero() && last_print.elapsed() >= interval {
                last_print = Instant::now();
                let snap = server.snapshot();
                log(&snap.summary_line(prev.as_ref()));
                prev = Some(snap);
            }
        }
        drop(endpoint);
        Ok(server.stop())
    }
}

/// The statistics at exit as `takt sip proxy` prints them: one JSON
/// document (`json`) or the summary tables.
pub fn exit_text(snap: &Snapshot, json: bool) -> String {
    if json {
        format!("{}\n", snap.json())
    } else {
        render_exit_summary(snap)
    }
}
