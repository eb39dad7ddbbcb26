//! The flags that load the servers of `takt sip capacity`, `sweep` and
//! `torture` with a fleet of agents (`takt sip gen --role agent`) instead
//! of the local generator.

use clap::Args;
use takt_siplab::fleet::{remote_config, FleetOptions};

use crate::error::CmdError;

/// The fleet's flags.
#[derive(Args, Debug)]
pub struct FleetArgs {
    /// Load the servers with the fleet of agents (`takt sip gen --role
    /// agent`) at this NATS server instead of the local generator.
    #[arg(long, value_name = "URL")]
    pub fleet: Option<String>,
    /// A takt-remote configuration file for the coordinator (credentials,
    /// TLS); its url is replaced by --fleet.
    #[arg(long, value_name = "FILE", requires = "fleet")]
    pub fleet_config: Option<std::path::PathBuf>,
    /// Wait for at least this many agents.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "fleet")]
    pub fleet_agents: usize,
    /// How long to wait for them, seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, requires = "fleet")]
    pub fleet_wait: f64,
    /// The agent that plays the UAS (default: the first by name that can).
    #[arg(long, value_name = "NAME", requires = "fleet")]
    pub fleet_uas: Option<String>,
    /// The agents that place calls (comma-separated; default: all that can).
    #[arg(long, value_name = "NAME", value_delimiter = ',', requires = "fleet")]
    pub fleet_uac: Vec<String>,
    /// With --fleet: the address the servers listen on (default: the one
    /// that reaches the NATS server).
    #[arg(long, value_name = "IP", requires = "fleet")]
    pub listen: Option<std::net::IpAddr>,
}

impl FleetArgs {
    /// The fleet's options, if --fleet was given.
    pub fn options(&self) -> Result<Option<FleetOptions>, CmdError> {
        let Some(url) = &self.fleet else {
            return Ok(None);
        };
        Ok(Some(FleetOptions {
            remote: remote_config(url, self.fleet_config.as_deref())?,
            agents: self.fleet_agents,
            wait: std::time::Duration::from_secs_f64(self.fleet_wait.clamp(0.0, 3600.0)),
            uas: self.fleet_uas.clone(),
            uac: self.fleet_uac.clone(),
        }))
    }
}
