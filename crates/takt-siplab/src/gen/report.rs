//! What a generator run measured: plain structs, serializable.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;
use takt_sip::ua::{KindCounts, Outcome, UacStats, UasStats};

use super::arrivals::Arrivals;
use super::Role;

/// Percentiles of a latency distribution, in the unit its field names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Samples.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
}

impl Percentiles {
    /// From a histogram of ns, in units of `unit_ns` (1000: µs).
    pub fn of(h: &Histogram<u64>, unit_ns: f64) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        let q = |p: f64| h.value_at_quantile(p) as f64 / unit_ns;
        Percentiles {
            count: h.len(),
            mean: h.mean() / unit_ns,
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p999: q(0.999),
            max: h.max() as f64 / unit_ns,
        }
    }
}

/// One generator thread's time.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ThreadReport {
    /// Its name.
    pub name: String,
    /// The CPUs it was allowed (empty: any).
    pub cpus: String,
    /// Its scheduling policy as the kernel reported it when its loop
    /// started (`fifo:prio=10`; empty if it could not be read).
    pub policy: String,
    /// CPU time it consumed (user + system), s.
    pub cpu_s: f64,
    /// Wall time of its loop, s.
    pub wall_s: f64,
    /// Wall time it was idle: blocked waiting for input or a timer, or
    /// spinning towards the next planned call, s.
    pub idle_s: f64,
    /// `idle_s / wall_s`.
    pub idle_fraction: f64,
    /// Of `idle_s`, the time spent spinning (yielding) towards a planned
    /// send rather than blocked, s: always 0 under a real-time policy.
    pub spin_s: f64,
}

/// Socket-level counts of one side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SocketReport {
    /// Datagrams the kernel dropped at the generator's sockets because
    /// their receive queues were full (`SO_RXQ_OVFL`). `None` over TCP: a
    /// stream drops nothing; what a server drops over TCP shows as shed
    /// calls (503) and timeouts.
    pub drops: Option<u64>,
    /// Messages not sent because a send buffer was full (UDP: the
    /// socket's; TCP: the connection's backlog beyond
    /// [`MAX_BACKLOG`](super::MAX_BACKLOG)).
    pub send_full: u64,
    /// Sends that failed otherwise (UDP: e.g. ICMP port unreachable; TCP:
    /// the message's connection had closed).
    pub send_errors: u64,
    /// Messages longer than the receive slot, dropped.
    pub truncated: u64,
    /// Receive errors.
    pub recv_errors: u64,
    /// TCP: connections opened (UAC) or accepted (UAS).
    pub connections: u64,
    /// TCP: connections closed during the run by the peer or by an error
    /// (the calls on them fail or stay unfinished).
    pub closed: u64,
    /// TCP: connections closed because their stream could not be framed.
    pub unframed: u64,
}

/// Messages per kind (`invite`, `ack`, `bye`, `100`, `180`, `200`,
/// `200bye`, `failure`, `other`; kinds never seen are left out).
pub type ByKind = BTreeMap<&'static str, u64>;

fn by_kind(k: &KindCounts) -> ByKind {
    k.nonzero().collect()
}

/// The calling side of a run.
#[derive(Debug, Clone, Serialize)]
pub struct UacReport {
    /// Calls placed (every planned call that was due before the end).
    pub attempted: u64,
    /// Calls completed (200 to the BYE).
    pub completed: u64,
    /// Calls that ended otherwise.
    pub failed: u64,
    /// Calls still in progress at the end of the drain.
    pub unfinished: u64,
    /// Failed calls by class: `503`, `rejected_other` (other 300–699),
    /// `timeout` (no final response within Timer B), `bye_failed`,
    /// `no_slot` (call table full).
    pub failures: BTreeMap<&'static str, u64>,
    /// Final failure responses (300–699) received, by status code
    /// (retransmissions included).
    pub failure_codes: BTreeMap<u16, u64>,
    /// Messages sent to the proxy, by kind.
    pub sent: ByKind,
    /// Messages received from the proxy, by kind.
    pub received: ByKind,
    /// Retransmissions sent, by kind.
    pub retransmitted: ByKind,
    /// INVITE → first 180, ms.
    pub invite_to_180_ms: Percentiles,
    /// INVITE → 200, ms.
    pub invite_to_200_ms: Percentiles,
    /// How late each call's INVITE left behind its planned start, µs.
    pub send_lag_us: Percentiles,
    /// Calls whose lag exceeded the run's late threshold.
    pub late_calls: u64,
    /// Responses for no call in progress.
    pub stray: u64,
    /// Datagrams that did not parse.
    pub malformed: u64,
    /// Messages the UAC has no part in.
    pub unexpected: u64,
    /// Its sockets.
    pub sockets: SocketReport,
    /// Its thread.
    pub thread: ThreadReport,
    /// The distributions themselves, for merging with other runs' (a
    /// fleet's agents); not in documents.
    #[serde(skip)]
    pub histograms: UacHistograms,
}

/// A UAC's distributions as histograms of ns, so that several runs'
/// can be merged (added, not averaged).
#[derive(Debug, Clone)]
pub struct UacHistograms {
    /// Send lag, ns.
    pub send_lag_ns: Histogram<u64>,
    /// INVITE → 200, ns.
    pub invite_to_200_ns: Histogram<u64>,
}

impl Default for UacHistograms {
    fn default() -> Self {
        let h = || Histogram::new_with_max(3_600_000_000_000, 3).expect("valid bounds");
        UacHistograms {
            send_lag_ns: h(),
            invite_to_200_ns: h(),
        }
    }
}

/// What a UAS received and sent for the calls of one run id (one
/// fleet agent's calls).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RunCounts {
    /// Messages received from the proxy, by kind.
    pub received: ByKind,
    /// Messages sent to the proxy, by kind.
    pub sent: ByKind,
}

impl UacReport {
    pub(crate) fn new(
        s: &UacStats,
        unfinished: u64,
        lag: &Histogram<u64>,
        late_calls: u64,
        sockets: SocketReport,
        thread: ThreadReport,
    ) -> UacReport {
        UacReport {
            attempted: s.attempted,
            completed: s.outcomes.get(Outcome::Completed),
            failed: s.outcomes.failed(),
            unfinished,
            failures: Outcome::ALL
                .into_iter()
                .filter(|&o| o != Outcome::Completed && s.outcomes.get(o) > 0)
                .map(|o| (o.name(), s.outcomes.get(o)))
                .collect(),
            failure_codes: (300u16..)
                .zip(&s.failure_codes)
                .filter(|&(_, &n)| n > 0)
                .map(|(c, &n)| (c, n))
                .collect(),
            sent: by_kind(&s.sent),
            received: by_kind(&s.received),
            retransmitted: by_kind(&s.retransmitted),
            invite_to_180_ms: Percentiles::of(&s.invite_to_180, 1e6),
            invite_to_200_ms: Percentiles::of(&s.invite_to_200, 1e6),
            send_lag_us: Percentiles::of(lag, 1e3),
            late_calls,
            stray: s.stray,
            malformed: s.malformed,
            unexpected: s.unexpected,
            sockets,
            thread,
            histograms: UacHistograms {
                send_lag_ns: lag.clone(),
                invite_to_200_ns: s.invite_to_200.clone(),
            },
        }
    }
}

/// The answering side of a run.
#[derive(Debug, Clone, Serialize)]
pub struct UasReport {
    /// Calls answered with a 200.
    pub answered: u64,
    /// Messages sent to the proxy, by kind.
    pub sent: ByKind,
    /// Messages received from the proxy, by kind.
    pub received: ByKind,
    /// Retransmissions sent, by kind.
    pub retransmitted: ByKind,
    /// INVITEs refused with 503: the dialog table was full.
    pub full: u64,
    /// 200s whose ACK never came (64·T1).
    pub ack_timeouts: u64,
    /// BYEs that arrived before their ACK.
    pub bye_before_ack: u64,
    /// Dialogs still awaiting their ACK at the end.
    pub awaiting_ack: u64,
    /// ACKs for no dialog.
    pub stray: u64,
    /// Datagrams that did not parse.
    pub malformed: u64,
    /// Messages the UAS has no part in.
    pub unexpected: u64,
    /// Its sockets.
    pub sockets: SocketReport,
    /// Its thread.
    pub thread: ThreadReport,
    /// What it received and sent per run id of the calls' Call-IDs (only
    /// when [`GenConfig::count_by_run`](super::GenConfig::count_by_run)).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_run: BTreeMap<u32, RunCounts>,
}

impl UasReport {
    pub(crate) fn new(
        s: &UasStats,
        awaiting_ack: u64,
        sockets: SocketReport,
        thread: ThreadReport,
    ) -> UasReport {
        UasReport {
            answered: s.answered,
            sent: by_kind(&s.sent),
            received: by_kind(&s.received),
            retransmitted: by_kind(&s.retransmitted),
            full: s.full,
            ack_timeouts: s.ack_timeouts,
            bye_before_ack: s.bye_before_ack,
            awaiting_ack,
            stray: s.stray,
            malformed: s.malformed,
            unexpected: s.unexpected,
            sockets,
            thread,
            by_run: BTreeMap::new(),
        }
    }
}

/// One saturation criterion of the generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaturationCause {
    /// The UAC's send lag p99 exceeded the bound.
    SendLag,
    /// More calls than tolerated started late.
    LateCalls,
    /// A generator socket dropped received datagrams or refused sends.
    SocketDrops,
    /// A generator thread had less idle time than required.
    NoIdle,
}

impl SaturationCause {
    /// Every cause, in bit order.
    pub const ALL: [SaturationCause; 4] = [
        SaturationCause::SendLag,
        SaturationCause::LateCalls,
        SaturationCause::SocketDrops,
        SaturationCause::NoIdle,
    ];

    /// Its name in documents (kebab-case).
    pub fn name(self) -> &'static str {
        match self {
            SaturationCause::SendLag => "send-lag",
            SaturationCause::LateCalls => "late-calls",
            SaturationCause::SocketDrops => "socket-drops",
            SaturationCause::NoIdle => "no-idle",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of [`SaturationCause`]s: one byte, `Copy`, so that a trial's
/// outcome can carry it. Serializes as the list of cause names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SaturationCauses(u8);

impl SaturationCauses {
    /// The empty set.
    pub const NONE: SaturationCauses = SaturationCauses(0);

    /// Adds `c`.
    pub fn insert(&mut self, c: SaturationCause) {
        self.0 |= c.bit();
    }

    /// Whether `c` is in the set.
    pub fn contains(self, c: SaturationCause) -> bool {
        self.0 & c.bit() != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Both sets together.
    pub fn union(self, other: SaturationCauses) -> SaturationCauses {
        SaturationCauses(self.0 | other.0)
    }

    /// The causes in the set, in [`SaturationCause::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = SaturationCause> {
        SaturationCause::ALL
            .into_iter()
            .filter(move |&c| self.contains(c))
    }
}

impl FromIterator<SaturationCause> for SaturationCauses {
    fn from_iter<I: IntoIterator<Item = SaturationCause>>(it: I) -> Self {
        let mut s = SaturationCauses::NONE;
        for c in it {
            s.insert(c);
        }
        s
    }
}

impl std::fmt::Display for SaturationCauses {
    /// The cause names joined by ", " (empty for the empty set).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, c) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(c.name())?;
        }
        Ok(())
    }
}

impl Serialize for SaturationCauses {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.collect_seq(self.iter().map(SaturationCause::name))
    }
}

/// Whether the generator kept up, and if not, which criterion says so.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Saturation {
    /// The run measured the generator, not (only) the target: its send
    /// lag p99 exceeded the bound, too many calls started late, its
    /// sockets dropped, or a thread had no idle time left.
    pub generator_bound: bool,
    /// Which criteria fired (non-empty exactly when `generator_bound`).
    pub causes: SaturationCauses,
    /// Each criterion that fired, in words.
    pub reasons: Vec<String>,
}

/// Everything one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct GenReport {
    /// Which sides ran.
    pub role: Role,
    /// Offered call rate, calls/s.
    pub cps: f64,
    /// Arrival process.
    pub arrivals: Arrivals,
    /// Seed of the Poisson schedule.
    pub seed: u64,
    /// Hold time, ms.
    pub hold_ms: f64,
    /// `udp` or `tcp`.
    pub transport: &'static str,
    /// UAC sockets (UDP).
    pub ports: usize,
    /// UAC connections (TCP).
    pub connections: usize,
    /// Whether retransmissions were on.
    pub retransmit: bool,
    /// The proxy the UAC sent to.
    pub proxy: String,
    /// The UAS's address.
    pub uas_addr: String,
    /// The calls' Request-URI (roles `uac` and `both`).
    pub request_uri: Option<String>,
    /// The preloaded Route, if any.
    pub route: Option<String>,
    /// From the first to the last call placed, s.
    pub send_s: f64,
    /// The window `achieved_cps` is taken over, s: from the plan's origin
    /// to the end of the planned window, or to the last call placed if
    /// that was later ([`achieved_rate`](super::achieved_rate)).
    pub window_s: f64,
    /// Calls placed per second over `window_s`: the offered rate when the
    /// generator kept to its plan (up to the Poisson schedule's sampling
    /// noise), less when it was still behind at the end — never more
    /// because sends that fell behind left in a burst.
    pub achieved_cps: f64,
    /// The whole run including the drain, s.
    pub wall_s: f64,
    /// The run was cancelled before its end.
    pub cancelled: bool,
    /// The calling side (roles `uac` and `both`).
    pub uac: Option<UacReport>,
    /// The answering side (roles `uas` and `both`).
    pub uas: Option<UasReport>,
    /// Whether the generator was the bottleneck.
    pub saturation: Saturation,
    /// CPU time of all generator threads per call placed, µs (spinning
    /// towards planned sends included).
    pub cpu_us_per_call: Option<f64>,
    /// Busy time (wall time not idle) of all generator threads per call
    /// placed, µs: the generator's work per call, without its waiting.
    pub busy_us_per_call: Option<f64>,
}
