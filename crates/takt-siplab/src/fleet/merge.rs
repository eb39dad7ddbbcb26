//! One account of a trial across hosts.
//!
//! Each UAC agent's calls carry its run id in their Call-IDs
//! ([`super::split::run_id`]); the UAS agent counts what it received and
//! sent per run id. So for agent `a` and each message kind, what `a`
//! sent is matched against what the UAS received of `a`'s calls, and what
//! the UAS sent to `a`'s calls against what `a` received — the local
//! generator's rule ([`crate::gen::Account`]: what a transaction-stateful
//! server rightly absorbs is not lost), applied host by host. The fleet's counts are the sums of the agents';
//! its latency distributions are the agents' HDR histograms added
//! together (merged, never averaged); it is generator-bound when any
//! agent was.

use std::collections::BTreeMap;

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::Serialize;

use super::protocol::{AgentResult, Kinds, RunKinds};
use crate::gen::{Account as Rule, ByKind, Counts, Percentiles};

/// Request kinds the UAC sends and the UAS receives.
const REQUESTS: [&str; 3] = ["invite", "ack", "bye"];

/// `k` with the generator's own kind names (a kind no version of the
/// generator counts is left out: nothing sends it).
fn by_kind(k: &Kinds) -> ByKind {
    takt_sip::ua::Kind::ALL
        .iter()
        .map(|kind| kind.name())
        .filter_map(|name| Some((name, *k.get(name)?)))
        .filter(|&(_, n)| n > 0)
        .collect()
}

/// One UAC agent's share of a trial.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentShare {
    /// Its node name.
    pub agent: String,
    /// Its index in the trial.
    pub index: u32,
    /// The rate it was given, calls/s.
    pub cps: f64,
    /// Calls it placed and completed.
    pub attempted: u64,
    /// See `attempted`.
    pub completed: u64,
    /// Calls that failed, and those still unfinished at its end.
    pub failed: u64,
    /// See `failed`.
    pub unfinished: u64,
    /// Messages of its calls sent to the server (its requests and the
    /// UAS's responses to them).
    pub sent: u64,
    /// Of those, messages the other side never received.
    pub lost: u64,
    /// Its clock's offset from the coordinator's, µs (agent − coordinator).
    pub clock_offset_us: f64,
    /// The round trip of the probe that measured it, µs.
    pub clock_rtt_us: f64,
    /// How late it started behind the planned instant, µs.
    pub start_late_us: f64,
    /// Its send lag's p99, µs.
    pub send_lag_p99_us: f64,
    /// It could not keep up.
    pub generator_bound: bool,
    /// Its calls completed per interval of the trial's series (empty:
    /// none was asked for).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub completed_series: Vec<u64>,
    /// Its calls failed per interval.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed_series: Vec<u64>,
}

/// The fleet's merged account of one trial.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Account {
    /// Messages sent to the server, all agents.
    pub sent: u64,
    /// Of those, lost at the server.
    pub lost: u64,
    /// Calls completed and failed (unfinished included).
    pub completed: u64,
    /// See `completed`.
    pub failed: u64,
    /// Of `failed`, the calls still unfinished at the agents' ends.
    pub unfinished: u64,
    /// The failed calls (not the unfinished) by class, summed over the
    /// agents (the local generator's classes: `503`, `timeout`, …).
    pub failures: BTreeMap<String, u64>,
    /// The sum of the agents' achieved rates, calls/s.
    pub achieved_cps: f64,
    /// Any agent was generator-bound (and why).
    pub generator_bound: bool,
    /// The bound agents' reasons, `agent: reason`.
    pub bound_reasons: Vec<String>,
    /// Per kind, sent by the UACs / received by the UAS (requests) and
    /// sent by the UAS / received by the UACs (responses), summed.
    pub kinds: BTreeMap<String, (u64, u64)>,
    /// Send lag over every agent's calls, µs.
    pub send_lag_us: Percentiles,
    /// INVITE → 200 over every agent's calls, ms.
    pub invite_to_200_ms: Percentiles,
    /// Each agent's share.
    pub agents: Vec<AgentShare>,
    /// The interval of the series below, ms (0: none was asked for).
    pub series_ms: u64,
    /// Calls completed per interval from the planned start, summed over
    /// the agents by interval (each agent's intervals start at the
    /// planned instant on its own clock, which the clock probe aligned
    /// with the coordinator's).
    pub completed_series: Vec<u64>,
    /// Calls failed per interval, the same way.
    pub failed_series: Vec<u64>,
    /// With a UAS outage: when the UAS closed its socket and bound it
    /// again, s after the planned start on the coordinator's clock (the
    /// agent's instants less its measured clock offset).
    pub uas_closed_s: Option<f64>,
    /// See `uas_closed_s`.
    pub uas_rebound_s: Option<f64>,
    /// The UAS's 200s never ACKed by Timer H.
    pub uas_ack_timeouts: u64,
}

/// `into` plus `v`, element by element (the longer's length).
fn add_series(into: &mut Vec<u64>, v: &[u64]) {
    if into.len() < v.len() {
        into.resize(v.len(), 0);
    }
    for (a, b) in into.iter_mut().zip(v) {
        *a += b;
    }
}

fn get(k: &Kinds, kind: &str) -> u64 {
    k.get(kind).copied().unwrap_or(0)
}

/// Serializes a histogram (V2, uncompressed) for the wire.
pub fn encode_histogram(h: &Histogram<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    // writing into a Vec cannot fail
    let _ = V2Serializer::new().serialize(h, &mut out);
    out
}

/// Reads a histogram [`encode_histogram`] wrote; `None` if it does not
/// decode.
pub fn decode_histogram(b: &[u8]) -> Option<Histogram<u64>> {
    Deserializer::new().deserialize(&mut &b[..]).ok()
}

fn empty() -> Histogram<u64> {
    Histogram::new_with_max(3_600_000_000_000, 3).expect("valid bounds")
}

/// What a UAS counted of two run ids' calls, together.
fn join(a: &RunKinds, b: &RunKinds) -> RunKinds {
    let mut out = a.clone();
    for (to, from) in [(&mut out.received, &b.received), (&mut out.sent, &b.sent)] {
        for (k, n) in from {
            *to.entry(k.clone()).or_default() += n;
        }
    }
    out
}

/// Merges the UAC agents' results (`uacs`: each with its share's node
/// name, rate, run id and clock probe) and the UAS's; `stateful`: the
/// server is transaction-stateful.
pub fn merge(
    uacs: &[(AgentShare, u32, &AgentResult)],
    uas: &AgentResult,
    stateful: bool,
) -> Account {
    let mut a = Account {
        uas_ack_timeouts: uas.uas_ack_timeouts,
        ..Account::default()
    };
    let mut lag = empty();
    let mut i200 = empty();
    let none = RunKinds::default();
    for (share, run, r) in uacs {
        // the agent's calls: its run id's, and its second stream's
        let second = uas.uas_by_run.get(&super::split::stream_run_id(*run));
        let joined;
        let at_uas = match (uas.uas_by_run.get(run), second) {
            (Some(a), Some(b)) => {
                joined = join(a, b);
                &joined
            }
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => &none,
        };
        let mut s = share.clone();
        for k in REQUESTS {
            let (tx, rx) = (get(&r.uac_sent, k), get(&at_uas.received, k));
            let e = a.kinds.entry(k.to_string()).or_default();
            (e.0, e.1) = (e.0 + tx, e.1 + rx);
        }
        for (k, &tx) in &at_uas.sent {
            let rx = get(&r.uac_received, k);
            let e = a.kinds.entry(k.clone()).or_default();
            (e.0, e.1) = (e.0 + tx, e.1 + rx);
        }
        let (uac_sent, uac_received) = (by_kind(&r.uac_sent), by_kind(&r.uac_received));
        let (uas_sent, uas_received) = (by_kind(&at_uas.sent), by_kind(&at_uas.received));
        let rule = Rule::of(
            &Counts {
                uac_sent: &uac_sent,
                uac_received: &uac_received,
                uas_sent: &uas_sent,
                uas_received: &uas_received,
                rang_first: r.rang_first,
                answered: r.answered,
            },
            stateful,
        );
        let (sent, lost) = (rule.sent_to_server, rule.lost);
        s.sent = sent;
        s.lost = lost;
        s.attempted = r.attempted;
        s.completed = r.completed;
        s.failed = r.failed;
        s.unfinished = r.unfinished;
        s.start_late_us = r.start_late_us;
        s.completed_series = r.completed_series.clone();
        s.failed_series = r.failed_series.clone();
        add_series(&mut a.completed_series, &r.completed_series);
        add_series(&mut a.failed_series, &r.failed_series);
        s.generator_bound = r.generator_bound;
        if let Some(h) = decode_histogram(&r.send_lag_hist) {
            s.send_lag_p99_us = Percentiles::of(&h, 1e3).p99;
            let _ = lag.add(&h);
        }
        if let Some(h) = decode_histogram(&r.invite_to_200_hist) {
            let _ = i200.add(&h);
        }
        a.sent += sent;
        a.lost += lost;
        a.completed += r.completed;
        a.failed += r.failed + r.unfinished;
        a.unfinished += r.unfinished;
        for (k, n) in &r.failures {
            *a.failures.entry(k.clone()).or_default() += n;
        }
        a.achieved_cps += r.achieved_cps;
        if r.generator_bound {
            a.generator_bound = true;
            a.bound_reasons.extend(
                r.bound_reasons
                    .iter()
                    .map(|x| format!("{}: {x}", share.agent)),
            );
        }
        a.agents.push(s);
    }
    if uas.generator_bound {
        a.generator_bound = true;
        a.bound_reasons.extend(
            uas.bound_reasons
                .iter()
                .map(|x| format!("uas {}: {x}", uas.index)),
        );
    }
    a.send_lag_us = Percentiles::of(&lag, 1e3);
    a.invite_to_200_ms = Percentiles::of(&i200, 1e6);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(v: &[(&str, u64)]) -> Kinds {
        v.iter().map(|(k, n)| (k.to_string(), *n)).collect()
    }

    #[test]
    fn agents_are_matched_by_run_id_and_histograms_merged() {
        let mut h1 = empty();
        let mut h2 = empty();
        for v in 1..=1000u64 {
            h1.record(v * 1_000).unwrap(); // 1..1000 µs
            h2.record(1_000_000 + v).unwrap(); // ~1 ms
        }
        let uac = |i: u32, inv: u64, rx200: u64, h: &Histogram<u64>| AgentResult {
            index: i,
            attempted: inv,
            completed: rx200,
            uac_sent: kinds(&[("invite", inv), ("ack", rx200), ("bye", rx200)]),
            uac_received: kinds(&[("180", inv), ("200", rx200), ("200bye", rx200)]),
            send_lag_hist: encode_histogram(h),
            achieved_cps: 500.0,
            ..AgentResult::default()
        };
        let a0 = uac(0, 100, 100, &h1);
        // agent 1: one INVITE never reached the UAS
        let a1 = uac(1, 50, 49, &h2);
        let mut uas = AgentResult::default();
        uas.uas_by_run.insert(
            10,
            RunKinds {
                received: kinds(&[("invite", 100), ("ack", 100), ("bye", 100)]),
                sent: kinds(&[("180", 100), ("200", 100), ("200bye", 100)]),
            },
        );
        uas.uas_by_run.insert(
            11,
            RunKinds {
                received: kinds(&[("invite", 49), ("ack", 49), ("bye", 49)]),
                sent: kinds(&[("180", 49), ("200", 49), ("200bye", 49)]),
            },
        );
        // a stale run's messages are not counted
        uas.uas_by_run.insert(99, RunKinds::default());
        uas.uas_ack_timeouts = 1;
        let share = |n: &str, i| AgentShare {
            agent: n.into(),
            index: i,
            ..AgentShare::default()
        };
        let acc = merge(
            &[(share("a", 0), 10, &a0), (share("b", 1), 11, &a1)],
            &uas,
            false,
        );
        assert_eq!(acc.agents[0].lost, 0);
        assert_eq!(acc.agents[1].lost, 1);
        assert_eq!(acc.lost, 1);
        // the merged counts are the sums of the agents'
        assert_eq!(acc.sent, acc.agents.iter().map(|s| s.sent).sum::<u64>());
        assert_eq!(acc.kinds["invite"], (150, 149));
        assert_eq!(acc.completed, 149);
        assert_eq!(acc.uas_ack_timeouts, 1);
        assert_eq!(acc.achieved_cps, 1_000.0);
        // merged, not averaged: 2000 samples, p99 from agent b's ~1 ms
        assert_eq!(acc.send_lag_us.count, 2000);
        assert!(
            (acc.send_lag_us.p99 - 1000.0).abs() < 5.0,
            "{:?}",
            acc.send_lag_us
        );
        assert!((acc.send_lag_us.p50 - 1000.0).abs() < 5.0);
        assert!(!acc.generator_bound);
    }

    /// A transaction-stateful server absorbs the 180s their calls' 200s
    /// overtook: not lost in a fleet's account, as in the local one; a
    /// stateless server's missing 180s stay lost.
    #[test]
    fn absorbed_180s_follow_the_local_rule() {
        let uac = AgentResult {
            attempted: 100,
            completed: 100,
            uac_sent: kinds(&[("invite", 100), ("ack", 100), ("bye", 100)]),
            // 30 calls' 200 came first, their 180 never
            uac_received: kinds(&[("180", 70), ("200", 100), ("200bye", 100)]),
            rang_first: 70,
            answered: 100,
            ..AgentResult::default()
        };
        let mut uas = AgentResult::default();
        uas.uas_by_run.insert(
            10,
            RunKinds {
                received: kinds(&[("invite", 100), ("ack", 100), ("bye", 100)]),
                sent: kinds(&[("180", 100), ("200", 100), ("200bye", 100)]),
            },
        );
        let a = AgentShare {
            agent: "a".into(),
            ..AgentShare::default()
        };
        let shares = [(a, 10, &uac)];
        let stateful = merge(&shares, &uas, true);
        assert_eq!((stateful.sent, stateful.lost), (600, 0));
        assert_eq!(stateful.agents[0].lost, 0);
        let stateless = merge(&shares, &uas, false);
        assert_eq!(stateless.lost, 30);
        // the per-kind tally still shows what arrived
        assert_eq!(stateful.kinds["180"], (100, 70));
    }
}
