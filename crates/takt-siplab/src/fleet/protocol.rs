//! The fleet's messages over takt-remote: what a coordinator asks an
//! agent and what the agent answers. Every type is a [`Remote`] with its
//! own wire name and schema version; an agent exports exactly these
//! queries and nothing else, so it runs only trials.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Serialize};
use takt_remote::{Postcard, Remote};

/// The name an agent exports its queries under.
pub const AGENT_EXPORT: &str = "sip-agent";

/// "Describe yourself": answered with [`AgentInfo`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Hello;

impl Remote for Hello {
    const NAME: &'static str = "takt.fleet.Hello";
    const VERSION: u32 = 1;
    type Codec = Postcard;
}

/// An agent's announcement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    /// Its node name (unique in the fleet).
    pub name: String,
    /// Its host name.
    pub host: String,
    /// The address its sockets bind (the one it reaches the NATS server
    /// from, or the one given with `--address`).
    pub addr: IpAddr,
    /// Online CPUs of its host.
    pub cpus: usize,
    /// Whether it places calls.
    pub uac: bool,
    /// Whether it answers them.
    pub uas: bool,
    /// The port its UAS listens on in every trial (0: no UAS).
    pub uas_port: u16,
}

impl Remote for AgentInfo {
    const NAME: &'static str = "takt.fleet.AgentInfo";
    const VERSION: u32 = 1;
    type Codec = Postcard;
}

/// A clock probe: answered with the agent's wall clock ([`Pong`]).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Ping;

impl Remote for Ping {
    const NAME: &'static str = "takt.fleet.Ping";
    const VERSION: u32 = 1;
    type Codec = Postcard;
}

/// The agent's wall clock when it answered, ns since the Unix epoch.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Pong {
    /// ns since the Unix epoch.
    pub unix_ns: u64,
}

impl Remote for Pong {
    const NAME: &'static str = "takt.fleet.Pong";
    const VERSION: u32 = 1;
    type Codec = Postcard;
}

/// Ends the agent's part of trial `trial` now (the UAS after the
/// UACs' drains, or every agent when the trial is void); answered with
/// whether that trial was running.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Stop {
    /// The trial.
    pub trial: u32,
}

impl Remote for Stop {
    const NAME: &'static str = "takt.fleet.Stop";
    const VERSION: u32 = 1;
    type Codec = Postcard;
}

/// One agent's part of a trial: answered with [`AgentResult`] when it
/// ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialOrder {
    /// The coordinator's trial number.
    pub trial: u32,
    /// The agent's index in the trial (its Call-IDs carry it).
    pub index: u32,
    /// Place calls.
    pub uac: bool,
    /// Answer calls (on the agent's UAS port).
    pub uas: bool,
    /// The server under test.
    pub proxy: SocketAddr,
    /// Where the UAS listens (the calls' Request-URI).
    pub uas_addr: SocketAddr,
    /// Over TCP rather than UDP.
    pub tcp: bool,
    /// This agent's share of the rate, calls/s.
    pub cps: f64,
    /// Its Poisson seed.
    pub seed: u64,
    /// Its run id (written into its Call-IDs).
    pub run_id: u32,
    /// The window of calls, ms.
    pub window_ms: u64,
    /// The drain after the last call, ms.
    pub drain_ms: u64,
    /// The quiet time that ends the drain early, ms (0: none).
    pub drain_quiet_ms: u64,
    /// UAC sockets (UDP) or connections (TCP).
    pub ports: u32,
    /// Preload a Route to the proxy.
    pub route_preload: bool,
    /// When to start, ns since the Unix epoch on the agent's own clock.
    pub start_unix_ns: u64,
    /// Generator-bound when the send lag's p99 exceeds this, µs.
    pub lag_bound_us: u64,
    /// A call is late when its send lag exceeds this, µs (more than 0.1%
    /// late calls: generator-bound).
    pub late_after_us: u64,
    /// Longest the agent's part may last, ms (a lone UAS that is never
    /// stopped ends then).
    pub max_ms: u64,
    /// Retransmissions on (RFC 3261's timers), as a real client
    /// population's; off (the default, every trial of a search): a lost
    /// message fails its call, and the per-kind account compares one to
    /// one.
    #[serde(default)]
    pub retransmit: bool,
    /// UAC: count the calls completed and failed in each interval of
    /// this many ms from the planned start ([`AgentResult::completed_series`]);
    /// 0 (the default): no series.
    #[serde(default)]
    pub series_ms: u64,
    /// UAS: close the socket during the trial and bind the same address
    /// again after the outage (`None`, the default: answer throughout).
    #[serde(default)]
    pub uas_outage: Option<Outage>,
    /// UAC: a second stream of calls beside the first, with its own
    /// rate, start and window (`None`, the default: one stream). Its
    /// calls carry their own run id ([`super::split::stream_run_id`]); the
    /// agent's result counts both streams together.
    #[serde(default)]
    pub second: Option<Stream>,
}

/// A second Poisson stream of calls in one UAC order (overload: the
/// excess over half the capacity, during the overload window only).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stream {
    /// Its rate, calls/s (this agent's share).
    pub cps: f64,
    /// When it starts, ms after the planned start.
    pub offset_ms: u64,
    /// How long it places calls, ms.
    pub window_ms: u64,
    /// Its drain after its last call, ms.
    pub drain_ms: u64,
}

/// A UAS's outage: its socket closed `after_ms` past the planned start
/// and bound again `for_ms` later. The kernel answers what arrives
/// meanwhile with ICMP port unreachable, as for a process that died.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outage {
    /// When the socket closes, ms after the planned start.
    pub after_ms: u64,
    /// How long it stays closed, ms.
    pub for_ms: u64,
}

impl Remote for TrialOrder {
    const NAME: &'static str = "takt.fleet.TrialOrder";
    const VERSION: u32 = 5;
    type Codec = Postcard;
}

/// Messages per kind (`invite`, `ack`, `200`, …).
pub type Kinds = BTreeMap<String, u64>;

/// What a UAS received and sent for one run id's calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunKinds {
    /// Received, by kind.
    pub received: Kinds,
    /// Sent, by kind.
    pub sent: Kinds,
}

/// One agent's account of a trial.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentResult {
    /// The trial.
    pub trial: u32,
    /// The agent's index.
    pub index: u32,
    /// Why its part failed (bind, connect), if it did.
    pub error: Option<String>,
    /// How late its run started behind the planned instant, µs (its
    /// own clock).
    pub start_late_us: f64,
    /// UAC: calls placed, completed, failed, unfinished.
    pub attempted: u64,
    /// See `attempted`.
    pub completed: u64,
    /// See `attempted`.
    pub failed: u64,
    /// See `attempted`.
    pub unfinished: u64,
    /// UAC: its failed calls by class (`503`, `rejected_other`,
    /// `timeout`, `bye_failed`, `no_slot`: [`crate::gen::UacReport`]'s).
    #[serde(default)]
    pub failures: BTreeMap<String, u64>,
    /// UAC: the rate achieved, calls/s, over `window_s`.
    pub achieved_cps: f64,
    /// UAC: its planned window, s.
    pub window_s: f64,
    /// UAC: messages sent and received, by kind.
    pub uac_sent: Kinds,
    /// See `uac_sent`.
    pub uac_received: Kinds,
    /// UAS: received and sent per run id.
    pub uas_by_run: BTreeMap<u32, RunKinds>,
    /// UAC: send lag, an HDR histogram of ns (V2 serialization).
    pub send_lag_hist: Vec<u8>,
    /// UAC: INVITE → 200, an HDR histogram of ns (V2 serialization).
    pub invite_to_200_hist: Vec<u8>,
    /// UAC: calls whose first 180 came before their 200 (what a
    /// transaction-stateful server may absorb is judged by it:
    /// [`crate::gen::Account`]).
    #[serde(default)]
    pub rang_first: u64,
    /// UAC: calls whose 200 came.
    #[serde(default)]
    pub answered: u64,
    /// Its generator could not keep up.
    pub generator_bound: bool,
    /// Why (the generator's criteria).
    pub bound_reasons: Vec<String>,
    /// Its generator's CPU time, s.
    pub cpu_s: f64,
    /// The wall time of its run, s.
    pub wall_s: f64,
    /// UAC with [`TrialOrder::series_ms`]: calls completed in each
    /// interval from the planned start, in order (the last interval's
    /// end is at or after the run's).
    #[serde(default)]
    pub completed_series: Vec<u64>,
    /// The same for calls that failed.
    #[serde(default)]
    pub failed_series: Vec<u64>,
    /// UAS with an outage: when its socket was closed, ns since the Unix
    /// epoch on the agent's own clock (`None`: it was not).
    #[serde(default)]
    pub uas_closed_unix_ns: Option<u64>,
    /// And when it was bound again (`None`: it was not).
    #[serde(default)]
    pub uas_rebound_unix_ns: Option<u64>,
    /// UAS: 200s it retransmitted until Timer H without the ACK coming
    /// (a dialog message the server lost or shed).
    #[serde(default)]
    pub uas_ack_timeouts: u64,
}

impl Remote for AgentResult {
    const NAME: &'static str = "takt.fleet.AgentResult";
    const VERSION: u32 = 4;
    type Codec = Postcard;
}

/// Answer to [`Stop`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Stopped {
    /// Whether that trial was running.
    pub was_running: bool,
}

impl Remote for Stopped {
    const NAME: &'static str = "takt.fleet.Stopped";
    const VERSION: u32 = 1;
    type Codec = Postcard;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `m` through postcard, takt-remote's codec.
    fn round_trip<M: Serialize + serde::de::DeserializeOwned>(m: &M) -> M {
        postcard::from_bytes(&postcard::to_allocvec(m).unwrap()).unwrap()
    }

    /// An agent's failed calls by class cross the wire.
    #[test]
    fn a_result_round_trips_with_its_failures() {
        let r = AgentResult {
            trial: 3,
            attempted: 10,
            failed: 2,
            failures: [("503".to_string(), 1), ("timeout".to_string(), 1)].into(),
            ..AgentResult::default()
        };
        assert_eq!(round_trip(&r), r);
        let r = AgentResult {
            completed_series: vec![3, 0, 5],
            failed_series: vec![0, 2, 0],
            uas_closed_unix_ns: Some(1),
            uas_rebound_unix_ns: Some(2),
            uas_ack_timeouts: 4,
            ..r
        };
        assert_eq!(round_trip(&r), r);
    }

    fn order() -> TrialOrder {
        TrialOrder {
            trial: 1,
            index: 0,
            uac: false,
            uas: true,
            proxy: "10.0.0.1:5060".parse().unwrap(),
            uas_addr: "10.0.0.2:5070".parse().unwrap(),
            tcp: false,
            cps: 0.0,
            seed: 7,
            run_id: 9,
            window_ms: 8_000,
            drain_ms: 500,
            drain_quiet_ms: 100,
            ports: 4,
            route_preload: false,
            start_unix_ns: 1,
            lag_bound_us: 1_000,
            late_after_us: 10_000,
            max_ms: 20_000,
            retransmit: true,
            series_ms: 10,
            uas_outage: Some(Outage {
                after_ms: 2_666,
                for_ms: 2_000,
            }),
            second: Some(Stream {
                cps: 750.0,
                offset_ms: 0,
                window_ms: 6_000,
                drain_ms: 200,
            }),
        }
    }

    /// An order with an outage, a series and retransmissions crosses
    /// the wire whole.
    #[test]
    fn an_order_round_trips_with_its_outage() {
        let o = order();
        assert_eq!(round_trip(&o), o);
    }

    /// What an order of the previous version said (no outage, no series,
    /// retransmissions off) is what the new fields default to: an order
    /// written without them — in a self-describing format; postcard's
    /// versions never meet, takt-remote refuses a version it does not
    /// expect — is a search's trial.
    #[test]
    fn an_order_without_the_new_fields_is_a_plain_trial() {
        let mut v = serde_json::to_value(order()).unwrap();
        for k in ["retransmit", "series_ms", "uas_outage", "second"] {
            v.as_object_mut().unwrap().remove(k);
        }
        let o: TrialOrder = serde_json::from_value(v).unwrap();
        assert!(!o.retransmit);
        assert_eq!(o.series_ms, 0);
        assert_eq!(o.uas_outage, None);
        assert_eq!(o.second, None);
        let r: AgentResult = serde_json::from_value(serde_json::json!({
            "trial": 1, "index": 0, "error": null, "start_late_us": 0.0,
            "attempted": 1, "completed": 1, "failed": 0, "unfinished": 0,
            "achieved_cps": 1.0, "window_s": 1.0, "uac_sent": {}, "uac_received": {},
            "uas_by_run": {}, "send_lag_hist": [], "invite_to_200_hist": [],
            "generator_bound": false, "bound_reasons": [], "cpu_s": 0.0, "wall_s": 1.0
        }))
        .unwrap();
        assert!(r.failures.is_empty() && r.completed_series.is_empty());
        assert_eq!((r.uas_closed_unix_ns, r.uas_rebound_unix_ns), (None, None));
        assert_eq!(r.uas_ack_timeouts, 0);
    }
}
