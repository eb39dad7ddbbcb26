//! Flags shared by several subcommands, defined once.
//!
//! Values are parsed by the `FromStr` impls of the types that own them
//! (takt-sched's [`CpuSet`], [`SchedPolicy`], [`SpinBudget`]): clap's
//! `value_parser!` picks those up, and their errors become clap's usage
//! errors.

use clap::Args;
use takt_sched::{CpuSet, SchedError, SchedPolicy, SpinBudget, ThreadSpec};

/// Where and how the threads a command creates run.
#[derive(Args, Debug, Clone, Default)]
pub struct SchedArgs {
    /// CPUs the threads may use, e.g. `1`, `0-1`, `0,2-3`.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<CpuSet>,
    /// OS scheduling policy, e.g. `other`, `other:nice=-5,slice=200us`,
    /// `batch`, `idle`, `rr:prio=10`, `fifo:prio=10`.
    #[arg(long, value_name = "POLICY")]
    pub sched: Option<SchedPolicy>,
}

impl SchedArgs {
    /// The spec for a thread named `name`.
    pub fn spec(&self, name: &str) -> ThreadSpec {
        let mut s = ThreadSpec::new(name);
        if let Some(c) = &self.cpus {
            s = s.with_cpus(c.clone());
        }
        if let Some(p) = self.sched {
            s = s.with_policy(p);
        }
        s
    }
}

/// How long waiting threads spin before they sleep.
#[derive(Args, Debug, Clone, Copy, Default)]
pub struct SpinArgs {
    /// Spin budget before parking, e.g. `0`, `20us`, `1ms`.
    #[arg(long, value_name = "DURATION", default_value_t = SpinBudget::DEFAULT)]
    pub spin: SpinBudget,
}

/// Output of measuring commands.
#[derive(Args, Debug, Clone, Copy, Default)]
pub struct OutputArgs {
    /// Print exactly one JSON document on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// The reduced run (under 90 s on a 2-core machine).
    #[arg(long)]
    pub quick: bool,
}

/// An idle-latency limit on the command line: `none` (the system's idle
/// policy), `0` (idle CPUs poll instead of halting) or a duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdleLimit(pub Option<std::time::Duration>);

pub(crate) fn parse_idle_limit(s: &str) -> Result<IdleLimit, String> {
    match s.trim() {
        "none" => Ok(IdleLimit(None)),
        "0" => Ok(IdleLimit(Some(std::time::Duration::ZERO))),
        t => takt_sched::parse_duration(t)
            .map(|d| IdleLimit(Some(d)))
            .ok_or_else(|| format!("bad idle latency {s:?} (none, 0, 20us, 1ms)")),
    }
}

/// A [`SpinBudget`] flag declared outside [`SpinArgs`] (one with another
/// default).
pub(crate) fn parse_spin(s: &str) -> Result<SpinBudget, SchedError> {
    s.parse()
}
