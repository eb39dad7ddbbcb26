//! A fleet in the commands that search capacities (`capacity`, `sweep`,
//! `torture`): the address their servers listen on ([`listen_ip`]),
//! the connection ([`connect`]), a trial's settings from the local
//! generator's ([`base_spec`]), and the local generator or the fleet as
//! one [`Load`] type ([`AnyLoad`]) behind the commands' own seams.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use takt_sip::proxy::Transport;

use super::agent::url_addr;
use super::coordinator::{Fleet, FleetLoad, FleetOptions, TrialSpec};
use super::detail::FleetPoint;
use crate::capacity::{GenLoad, Load, LoadOutcome};
use crate::error::{io, Error, Result};
use crate::gen::{Cancel, GenConfig};
use crate::target::Target;

/// A fleet shared by every case's load (one trial at a time).
pub type SharedFleet = Arc<Mutex<Fleet>>;

/// How long the agents' drain goes on once neither side hears anything.
const DRAIN_QUIET: Duration = Duration::from_millis(100);

/// The address servers loaded by `fleet` listen on: `listen` if given,
/// else the one this host reaches the NATS server from (which the
/// agents reach too). Without a fleet, `listen` is refused.
pub fn listen_ip(fleet: Option<&FleetOptions>, listen: Option<IpAddr>) -> Result<Option<IpAddr>> {
    let Some(f) = fleet else {
        return match listen {
            Some(_) => Err(Error::Config(
                "--listen is for servers loaded by a --fleet".into(),
            )),
            None => Ok(None),
        };
    };
    if let Some(ip) = listen {
        return Ok(Some(ip));
    }
    let nats = url_addr(&f.remote.url)
        .ok_or_else(|| Error::Config(format!("--fleet {}: no host:port to reach", f.remote.url)))?;
    crate::gen::local_ip_towards(nats)
        .map(Some)
        .map_err(io(format!("finding the address that reaches {nats}")))
}

/// Connects to the fleet (see [`Fleet::connect`]), its trials ended by
/// `cancel`, and tells `say` of each agent.
pub fn connect(opts: &FleetOptions, cancel: Cancel, say: impl Fn(&str)) -> Result<SharedFleet> {
    let fleet = Fleet::connect(opts)?.with_cancel(cancel);
    for a in fleet.agents() {
        say(&format!(
            "fleet agent {} host={} addr={} cpus={} uac={} uas={}",
            a.name, a.host, a.addr, a.cpus, a.uac, a.uas
        ));
    }
    Ok(Arc::new(Mutex::new(fleet)))
}

/// A fleet trial's settings from the local generator's (`gen`: its
/// transport, sockets, Route, drain and saturation bounds) and a window;
/// the proxy and the rate are set per trial.
pub fn base_spec(gen: &GenConfig, window: Duration) -> TrialSpec {
    TrialSpec {
        proxy: SocketAddr::new([127, 0, 0, 1].into(), 9),
        cps: 1.0,
        window,
        drain: gen.drain,
        drain_quiet: Some(DRAIN_QUIET),
        transport: gen.transport,
        ports: match gen.transport {
            Transport::Udp => gen.ports,
            Transport::Tcp => gen.connections,
        },
        route_preload: gen.route_preload,
        lag_bound: gen.lag_bound,
        late_after: gen.late_after,
        stateful: false,
        retransmit: false,
        series: None,
        uas_outage: None,
        second: None,
    }
}

/// The local generator or a fleet, as one [`Load`] type.
#[derive(Debug)]
pub enum AnyLoad {
    /// The local generator.
    Local(Box<GenLoad>),
    /// The fleet.
    Fleet(Box<FleetLoad>),
}

impl AnyLoad {
    /// The fleet's load over `fleet` when there is one, else `local()`:
    /// trials of `window` with `gen`'s settings.
    pub fn new(
        fleet: Option<&SharedFleet>,
        gen: &GenConfig,
        window: Duration,
        cancel: Cancel,
        local: impl FnOnce() -> Result<GenLoad>,
    ) -> Result<AnyLoad> {
        Ok(match fleet {
            Some(f) => AnyLoad::Fleet(Box::new(FleetLoad::new(
                Arc::clone(f),
                base_spec(gen, window),
                cancel,
            ))),
            None => AnyLoad::Local(Box::new(local()?)),
        })
    }
}

impl Load for AnyLoad {
    fn uas(&self) -> SocketAddr {
        match self {
            AnyLoad::Local(l) => l.uas(),
            AnyLoad::Fleet(l) => l.uas(),
        }
    }

    fn request_uri(&self) -> String {
        match self {
            AnyLoad::Local(l) => l.request_uri(),
            AnyLoad::Fleet(l) => l.request_uri(),
        }
    }

    fn route(&self, target: SocketAddr) -> Option<String> {
        match self {
            AnyLoad::Local(l) => l.route(target),
            AnyLoad::Fleet(l) => l.route(target),
        }
    }

    fn run(&mut self, target: &Target, rate_cps: f64) -> Result<LoadOutcome> {
        match self {
            AnyLoad::Local(l) => l.run(target, rate_cps),
            AnyLoad::Fleet(l) => l.run(target, rate_cps),
        }
    }

    fn fleet_point(&mut self) -> Option<FleetPoint> {
        match self {
            AnyLoad::Local(l) => l.fleet_point(),
            AnyLoad::Fleet(l) => l.fleet_point(),
        }
    }
}
