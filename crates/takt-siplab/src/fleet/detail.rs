//! What a fleet run puts into a result document, in one place for
//! `capacity`, `sweep` and `torture` alike: each trial's agents and void
//! attempts as machine-readable detail ([`FleetPoint`], [`points_detail`])
//! and the run's notes ([`notes`]).

use serde::Serialize;
use serde_json::Value;

use super::coordinator::{Fleet, TrialRecord};
use super::merge::AgentShare;

/// Void attempts the notes name one by one (the rows' detail has all).
const NOTED_VOID: usize = 5;

/// One attempt of a trial that did not count, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VoidAttempt {
    /// The coordinator's trial number.
    pub trial: u32,
    /// The rate offered, calls/s.
    pub cps: f64,
    /// Why it was void (an agent fell silent, lost NATS, sent no result
    /// in time, or was generator-bound).
    pub reason: String,
}

/// One search trial run by a fleet: the attempt passed to the search
/// (its merged counts and each agent's share, with its clock offset and
/// probe round trip) and the void attempts run before it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FleetPoint {
    /// The coordinator's number of the attempt passed on.
    pub trial: u32,
    /// The rate offered, calls/s.
    pub cps: f64,
    /// Messages sent to the server, all agents (the agents' `sent` add
    /// up to it).
    pub sent: u64,
    /// Of those, lost at the server.
    pub lost: u64,
    /// Calls completed, all agents.
    pub completed: u64,
    /// Calls failed or unfinished, all agents.
    pub failed: u64,
    /// Of `failed`, the calls unfinished at the agents' ends.
    pub unfinished: u64,
    /// The failed calls (not the unfinished) by class, all agents.
    pub failures: std::collections::BTreeMap<String, u64>,
    /// Still generator-bound after every attempt (the search does not
    /// count it as the server's).
    pub generator_bound: bool,
    /// Wall time of the attempt beyond its window, s.
    pub overhead_s: f64,
    /// Each UAC agent's share: rate, calls, messages sent and lost, clock
    /// offset and round trip, start lateness, send lag.
    pub agents: Vec<AgentShare>,
    /// The attempts before it that did not count.
    pub void: Vec<VoidAttempt>,
}

impl FleetPoint {
    /// The point of `passed` (the attempt handed to the search) after
    /// the void attempts `before`.
    pub fn of(passed: &TrialRecord, before: &[TrialRecord]) -> FleetPoint {
        let a = &passed.account;
        FleetPoint {
            trial: passed.trial,
            cps: passed.cps,
            sent: a.sent,
            lost: a.lost,
            completed: a.completed,
            failed: a.failed,
            unfinished: a.unfinished,
            failures: a.failures.clone(),
            generator_bound: a.generator_bound,
            overhead_s: passed.overhead_s,
            agents: a.agents.clone(),
            void: before
                .iter()
                .map(|r| VoidAttempt {
                    trial: r.trial,
                    cps: r.cps,
                    reason: r.void.clone().unwrap_or_default(),
                })
                .collect(),
        }
    }
}

/// The detail of a row's trials under a fleet, in their order: each
/// trial's [`FleetPoint`] (`null` for one without a fleet); `None` when
/// no trial ran on a fleet, so local runs' documents are unchanged.
pub fn points_detail<'a>(
    points: impl IntoIterator<Item = Option<&'a FleetPoint>>,
) -> Option<Value> {
    let v: Vec<Option<&FleetPoint>> = points.into_iter().collect();
    v.iter()
        .any(Option::is_some)
        .then(|| serde_json::to_value(&v).unwrap_or(Value::Null))
}

/// The document's notes on a fleet run: its agents, the attempts (and
/// why some were void), each agent's share in the last counted trial,
/// the clocks, and what coordination cost per trial.
pub fn notes(f: &Fleet) -> Vec<String> {
    let mut notes = vec![format!(
        "fleet: {} agent(s) over NATS ({}), the UAS on {}: {}",
        f.agents().len(),
        f.name(),
        f.uas_addr(),
        f.agents()
            .iter()
            .map(|a| format!("{} ({} CPUs, {})", a.name, a.cpus, a.addr))
            .collect::<Vec<_>>()
            .join(", ")
    )];
    let counted: Vec<&TrialRecord> = f.records.iter().filter(|r| r.void.is_none()).collect();
    let void: Vec<&TrialRecord> = f.records.iter().filter(|r| r.void.is_some()).collect();
    let listed: String = void
        .iter()
        .take(NOTED_VOID)
        .map(|r| {
            format!(
                "; trial {} at {:.0} cps: {}",
                r.trial,
                r.cps,
                r.void.as_deref().unwrap_or("")
            )
        })
        .collect();
    let more = void.len().saturating_sub(NOTED_VOID);
    notes.push(format!(
        "fleet trials: {} counted, {} void and re-run{listed}{} (each trial's agents and void attempts: `fleet` in the rows' detail)",
        counted.len(),
        void.len(),
        if more > 0 {
            format!("; {more} more")
        } else {
            String::new()
        }
    ));
    if counted.is_empty() {
        return notes;
    }
    let overhead = counted.iter().map(|r| r.overhead_s).sum::<f64>() / counted.len() as f64;
    let max = |f: &dyn Fn(&AgentShare) -> f64| {
        counted
            .iter()
            .flat_map(|r| r.account.agents.iter().map(f))
            .fold(0.0f64, f64::max)
    };
    let (offsets, rtt, late) = (
        max(&|a| a.clock_offset_us.abs()),
        max(&|a| a.clock_rtt_us),
        max(&|a| a.start_late_us),
    );
    notes.push(format!(
        "fleet coordination: {overhead:.2} s per trial beyond its window (mean wall time minus window: clock probes, start lead, drain, results); clock offsets up to {offsets:.0} µs, probe round trips up to {rtt:.0} µs, starts up to {late:.0} µs behind the planned instant"
    ));
    if let Some(last) = counted.last() {
        notes.push(format!(
            "fleet shares in the last counted trial ({:.0} cps): {}",
            last.cps,
            last.account
                .agents
                .iter()
                .map(|a| format!(
                    "{} {:.0} cps, {} of {} messages lost, offset {:.0} µs",
                    a.agent, a.cps, a.lost, a.sent, a.clock_offset_us
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::merge::Account;

    #[test]
    fn a_point_carries_the_passed_attempt_and_the_void_ones_before_it() {
        let share = |n: &str, sent| AgentShare {
            agent: n.into(),
            sent,
            ..AgentShare::default()
        };
        let void = TrialRecord {
            trial: 4,
            cps: 900.0,
            void: Some("agent2 fell silent".into()),
            account: Account::default(),
            overhead_s: 0.3,
            start_unix_ns: 0,
        };
        let passed = TrialRecord {
            trial: 5,
            cps: 900.0,
            void: None,
            account: Account {
                sent: 30,
                agents: vec![share("agent1", 10), share("agent2", 20)],
                ..Account::default()
            },
            overhead_s: 0.25,
            start_unix_ns: 0,
        };
        let p = FleetPoint::of(&passed, std::slice::from_ref(&void));
        assert_eq!((p.trial, p.sent), (5, 30));
        assert_eq!(p.agents.iter().map(|a| a.sent).sum::<u64>(), p.sent);
        assert_eq!(p.void.len(), 1);
        assert_eq!(p.void[0].reason, "agent2 fell silent");
        // no fleet point: no detail; else one entry per trial, in order
        assert_eq!(points_detail([None, None]), None);
        let d = points_detail([None, Some(&p)]).unwrap();
        assert!(d[0].is_null());
        assert_eq!(d[1]["agents"][1]["sent"], 20);
        assert_eq!(d[1]["void"][0]["trial"], 4);
    }
}
