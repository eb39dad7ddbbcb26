//! A fleet of generators: one trial's load spread over agents on several
//! hosts, joined through a NATS server by takt-remote, with one account
//! of what was sent and what arrived across them.
//!
//! - [`agent`]: `takt sip gen --role agent --fleet nats://HOST:4222`, a
//!   process that announces itself, takes trial orders and runs only
//!   those (each one side of a trial, with the local generator).
//! - [`coordinator`]: finds the agents, measures their clocks, runs a
//!   trial over them ([`Fleet::run_trial`]) and is a capacity
//!   [`Load`](crate::capacity::Load) ([`FleetLoad`]).
//! - [`split`]: a trial's Poisson rate as independent Poisson streams,
//!   one per UAC agent, whose rates add up to it.
//! - [`merge`]: the one account across hosts.
//! - [`protocol`]: the messages.
//! - [`load`]: a fleet in the commands that search capacities (the
//!   servers' address, the connection, the local generator or the fleet
//!   as one load).
//! - [`detail`]: what a fleet run puts into a result document: each
//!   trial's agents and void attempts, and the notes.
//!
//! One agent plays the UAS (the server under test forwards to one
//! address); every UAC agent places its share of the calls; an agent may
//! play both. A fleet of one agent runs the same two generator threads as
//! the local generator.

pub mod agent;
pub mod coordinator;
pub mod detail;
pub mod load;
pub mod merge;
pub mod protocol;
pub mod split;

pub use agent::{remote_config, run_agent, Agent, AgentOptions};
pub use coordinator::{Fleet, FleetLoad, FleetOptions, TrialRecord, TrialSpec};
pub use detail::{FleetPoint, VoidAttempt};
pub use load::{AnyLoad, SharedFleet};

/// This host's wall clock, ns since the Unix epoch: the clock a fleet's
/// planned instants, agents' reports and series are written in.
pub fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
pub use protocol::Outage;
