//! Per-message instrumentation, always on.
//!
//! For every message a worker records, after the paper's equations (1):
//! - **K_rcv** = t_sip_in − t_arr: from the kernel's receive timestamp
//!   (`SO_TIMESTAMPNS`, CLOCK_REALTIME) to the moment the SIP layer has the
//!   bytes (CLOCK_REALTIME read right after `recvmsg`/`recvmmsg` returns):
//!   stack, socket-queue wait and copy;
//! - **T_sip**: from that moment until the message is fully handled
//!   (TSC ticks), *minus* the time spent inside send system calls;
//! - **K_snd**: the time inside send system calls made for this message,
//!   a 100 Trying included.
//!
//! Over TCP the kernel timestamp is that of the last segment the
//! `recvmsg` completing the message copied (see the `transport::tcp` source
//! for what that means for a message spread over several segments, or
//! several messages in one read).
//!
//! In the `batched` model one `recvmmsg` returns up to a batch of
//! messages: each gets K_rcv against the single post-return clock read,
//! T_sip is measured around its own handling (sends are only queued), and
//! the one `sendmmsg` at the end of the batch is timed once and its time
//! split over the batch's messages in proportion to how many datagrams
//! each queued.
//!
//! Each worker owns a [`WorkerStats`] behind an uncontended mutex (only
//! snapshots take it from outside): HDR histograms per message kind and
//! component, counts by kind and outcome, parse errors by rule, and the
//! socket's drop counter (`SO_RXQ_OVFL`). [`Registry::snapshot`] merges
//! them with the host's UDP counters into a [`Snapshot`] (JSON) or
//! Prometheus text ([`Snapshot::prometheus`]).

mod endpoint;
pub mod snmp;
mod summary;
mod tcp_counters;
pub use summary::KindRow;
pub(crate) use tcp_counters::bump;
pub use tcp_counters::{TcpCounters, TcpSnapshot};

pub use endpoint::{serve, BadEndpointAddr, Endpoint, EndpointAddr};

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::proxy::{Disposition, MsgKind, Outcome};
use crate::transport::Held;
use snmp::UdpCounters;

/// Largest time recorded (60 s); longer values saturate.
pub const MAX_NS: u64 = 60_000_000_000;

/// The measured components of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample {
    /// K_rcv, when the kernel gave a timestamp.
    pub k_rcv_ns: Option<u64>,
    /// T_sip.
    pub t_sip_ns: u64,
    /// K_snd.
    pub k_snd_ns: u64,
    /// Another worker was handling a message when this one started or
    /// ended (the two may have run at once, competing for the core's
    /// sibling, the memory system and the table's locks).
    pub overlapped: bool,
}

const N_KIND: usize = MsgKind::ALL.len();
const N_DISP: usize = 11;

fn disp_index(d: Disposition) -> usize {
    match d {
        Disposition::Forwarded => 0,
        Disposition::Absorbed => 1,
        Disposition::Replied(_) => 2,
        Disposition::Shed => 3,
        Disposition::DroppedMalformed => 4,
        Disposition::DroppedNotOurs => 5,
        Disposition::DroppedRejected => 6,
        Disposition::SendFailed => 7,
        Disposition::DroppedReordered => 8,
        Disposition::DroppedLate => 9,
        Disposition::AbsorbedShed => 10,
    }
}

const DISP_NAMES: [&str; N_DISP] = [
    "forwarded",
    "absorbed",
    "replied",
    "shed",
    "dropped_malformed",
    "dropped_not_ours",
    "dropped_rejected",
    "send_failed",
    "dropped_reordered",
    "dropped_late",
    "absorbed_shed",
];

fn kind_index(k: MsgKind) -> usize {
    MsgKind::ALL
        .iter()
        .position(|&x| x == k)
        .unwrap_or(N_KIND - 1)
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds")
}

/// One worker's statistics.
#[derive(Debug)]
pub struct WorkerStats {
    name: String,
    /// Per kind: K_rcv, T_sip, K_snd, T_sip of messages that did not overlap.
    hist: Vec<[Histogram<u64>; 4]>,
    disp: [[u64; N_DISP]; N_KIND],
    overlapped: [u64; N_KIND],
    lock_contended: [u64; N_KIND],
    replied: BTreeMap<u16, u64>,
    parse_errors: BTreeMap<&'static str, u64>,
    socket: usize,
    socket_drops: u64,
    invite_socket_drops: u64,
    batches: u64,
    batched_messages: u64,
    /// ICMP errors read from the error queue, and those matched to a branch.
    icmp_errors: u64,
    icmp_errors_matched: u64,
}

impl WorkerStats {
    /// Empty statistics for worker `name`.
    pub fn new(name: impl Into<String>) -> WorkerStats {
        WorkerStats {
            name: name.into(),
            hist: (0..N_KIND)
                .map(|_| [hist(), hist(), hist(), hist()])
                .collect(),
            disp: [[0; N_DISP]; N_KIND],
            overlapped: [0; N_KIND],
            lock_contended: [0; N_KIND],
            replied: BTreeMap::new(),
            parse_errors: BTreeMap::new(),
            socket: usize::MAX,
            socket_drops: 0,
            invite_socket_drops: 0,
            batches: 0,
            batched_messages: 0,
            icmp_errors: 0,
            icmp_errors_matched: 0,
        }
    }

    /// Records one handled message.
    pub fn record(&mut self, s: &Sample, o: &Outcome) {
        let k = kind_index(o.kind);
        let h = &mut self.hist[k];
        if let Some(r) = s.k_rcv_ns {
            h[0].saturating_record(r.max(1));
        }
        h[1].saturating_record(s.t_sip_ns.max(1));
        if s.k_snd_ns > 0 {
            h[2].saturating_record(s.k_snd_ns);
        }
        if s.overlapped {
            self.overlapped[k] += 1;
        } else {
            h[3].saturating_record(s.t_sip_ns.max(1));
        }
        self.lock_contended[k] += u64::from(o.lock_contended);
        self.disp[k][disp_index(o.disposition)] += 1;
        if let Disposition::Replied(c) = o.disposition {
            *self.replied.entry(c).or_insert(0) += 1;
        }
        if let Some(e) = o.error {
            *self.parse_errors.entry(e.name()).or_insert(0) += 1;
        }
    }

    /// Records ICMP errors read from the socket's error queue (`read`)
    /// and how many the handler matched to a branch.
    pub fn record_icmp_errors(&mut self, read: u64, matched: u64) {
        self.icmp_errors += read;
        self.icmp_errors_matched += matched;
    }

    /// Records a datagram refused before parsing (larger than the buffer).
    pub fn record_oversized(&mut self) {
        self.disp[kind_index(MsgKind::Malformed)][disp_index(Disposition::DroppedMalformed)] += 1;
        *self.parse_errors.entry("too_large").or_insert(0) += 1;
    }

    /// Names the socket this worker reads (workers sharing a socket share
    /// its drop counter, which is then counted once).
    pub fn set_socket(&mut self, id: usize) {
        self.socket = id;
    }

    /// Sets the socket's cumulative drop count (from `SO_RXQ_OVFL`).
    pub fn set_socket_drops(&mut self, n: u64) {
        self.socket_drops = self.socket_drops.max(n);
    }

    /// Sets the INVITE socket's cumulative drop count (`SO_RXQ_OVFL`;
    /// the `shared` model's INVITE split, one socket all workers read).
    pub fn set_invite_socket_drops(&mut self, n: u64) {
        self.invite_socket_drops = self.invite_socket_drops.max(n);
    }

    /// Counts a stream that could not be framed, by `rule` (a message
    /// dropped as malformed).
    pub fn record_unframeable(&mut self, rule: &'static str) {
        self.disp[kind_index(MsgKind::Malformed)][disp_index(Disposition::DroppedMalformed)] += 1;
        *self.parse_errors.entry(rule).or_insert(0) += 1;
    }

    /// Counts a response the transport generated itself (`code`).
    pub fn record_reply(&mut self, code: u16) {
        *self.replied.entry(code).or_insert(0) += 1;
    }

    /// Records one receive batch of `n` messages.
    pub fn record_batch(&mut self, n: usize) {
        self.batches += 1;
        self.batched_messages += n as u64;
    }
}

/// Static facts about the running server, shown with the statistics.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ServerInfo {
    /// stateless / stateful.
    pub mode: String,
    /// shared / reuseport / batched.
    pub model: String,
    /// The `shared` model's wake order, lifo / fifo (None: other models).
    pub wake: Option<String>,
    /// Worker threads.
    pub workers: usize,
    /// Listening address.
    pub listen: String,
    /// Receive buffer asked for, bytes (0 = system default).
    pub rcvbuf_requested: usize,
    /// Receive buffer the kernel reports (SO_RCVBUF; Linux doubles the
    /// request); with the INVITE split, the dialog socket's.
    pub rcvbuf_effective: usize,
    /// New INVITEs have a socket of their own, which the kernel fills
    /// (and overflows) apart from the dialog socket (the `shared` model's
    /// INVITE split).
    pub invite_split: bool,
    /// The INVITE socket's receive buffer as the kernel reports it (0: no split).
    pub invite_rcvbuf_effective: usize,
    /// Next hop.
    pub next_hop: String,
    /// TCP enabled.
    pub tcp: bool,
}

/// Where workers register their statistics.
#[derive(Debug)]
pub struct Registry {
    workers: Mutex<Vec<Arc<Mutex<WorkerStats>>>>,
    started: Instant,
    snmp_start: UdpCounters,
    info: Mutex<ServerInfo>,
    transactions: AtomicUsize,
    transaction_capacity: AtomicUsize,
    transactions_lingering: AtomicUsize,
    transactions_reclaimed: AtomicU64,
    tcp: Mutex<Option<Arc<TcpCounters>>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl Registry {
    /// A registry; the host UDP counters are read now as the baseline.
    pub fn new() -> Registry {
        Registry {
            workers: Mutex::new(Vec::new()),
            started: Instant::now(),
            snmp_start: UdpCounters::read(),
            info: Mutex::new(ServerInfo::default()),
            transactions: AtomicUsize::new(0),
            transaction_capacity: AtomicUsize::new(0),
            transactions_lingering: AtomicUsize::new(0),
            transactions_reclaimed: AtomicU64::new(0),
            tcp: Mutex::new(None),
        }
    }

    /// Registers the TCP transport's counters (shown as [`Snapshot::tcp`]).
    pub fn set_tcp(&self, counters: Arc<TcpCounters>) {
        *self.tcp.lock().unwrap_or_else(|p| p.into_inner()) = Some(counters);
    }

    /// Adds a worker's statistics.
    pub fn add_worker(&self, name: impl Into<String>) -> Arc<Mutex<WorkerStats>> {
        let w = Arc::new(Mutex::new(WorkerStats::new(name)));
        self.workers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(w.clone());
        w
    }

    /// Sets the server facts.
    pub fn set_info(&self, info: ServerInfo) {
        *self.info.lock().unwrap_or_else(|p| p.into_inner()) = info;
    }

    /// Records the INVITE split and its socket's receive buffer
    /// (`invite_rcvbuf` bytes as the kernel reports them).
    pub(crate) fn set_split(&self, invite_rcvbuf: usize) {
        let mut i = self.info.lock().unwrap_or_else(|p| p.into_inner());
        i.invite_split = true;
        i.invite_rcvbuf_effective = invite_rcvbuf;
    }

    /// Publishes what the handler holds (written by the timer thread).
    pub fn set_transactions(&self, h: Held) {
        // Relaxed: gauges and a counter read for display only.
        self.transactions.store(h.held, Ordering::Relaxed);
        self.transaction_capacity
            .store(h.capacity, Ordering::Relaxed);
        self.transactions_lingering
            .store(h.lingering, Ordering::Relaxed);
        self.transactions_reclaimed
            .store(h.reclaimed, Ordering::Relaxed);
    }

    /// Merges everything into a snapshot, the per-kind distributions
    /// included.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot_with(true)
    }

    /// A snapshot of the counters alone: no distribution is merged, so it
    /// costs a few microseconds where [`Registry::snapshot`] walks every
    /// worker's histograms (milliseconds, each worker's statistics locked
    /// while its own are merged). For pollers that sample often — a
    /// laboratory watching a server under load must not take the
    /// server's CPU to do it. The kinds' distributions are empty
    /// ([`Snapshot::distributions`] is false).
    pub fn counters(&self) -> Snapshot {
        self.snapshot_with(false)
    }

    fn snapshot_with(&self, distributions: bool) -> Snapshot {
        let n_hist = if distributions { N_KIND } else { 0 };
        let mut hist: Vec<[Histogram<u64>; 4]> = (0..n_hist)
            .map(|_| [hist(), hist(), hist(), hist()])
            .collect();
        let mut disp = [[0u64; N_DISP]; N_KIND];
        let mut overlapped = [0u64; N_KIND];
        let mut lock_contended = [0u64; N_KIND];
        let mut replied = BTreeMap::new();
        let mut parse_errors = BTreeMap::new();
        let mut drops_by_socket: BTreeMap<usize, u64> = BTreeMap::new();
        let mut invite_socket_drops = 0;
        let mut batches = 0;
        let mut batched = 0;
        let (mut icmp_errors, mut icmp_errors_matched) = (0, 0);
        let mut per_worker = Vec::new();
        for w in self
            .workers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let w = w.lock().unwrap_or_else(|p| p.into_inner());
            for (acc, hs) in hist.iter_mut().zip(&w.hist) {
                for (a, h) in acc.iter_mut().zip(hs) {
                    let _ = a.add(h);
                }
            }
            for k in 0..N_KIND {
                overlapped[k] += w.overlapped[k];
                lock_contended[k] += w.lock_contended[k];
            }
            let mut total = 0;
            for (acc, row) in disp.iter_mut().zip(&w.disp) {
                for (a, n) in acc.iter_mut().zip(row) {
                    *a += n;
                    total += n;
                }
            }
            for (c, n) in &w.replied {
                *replied.entry(c.to_string()).or_insert(0) += n;
            }
            for (e, n) in &w.parse_errors {
                *parse_errors.entry((*e).to_string()).or_insert(0) += n;
            }
            let d = drops_by_socket.entry(w.socket).or_insert(0);
            *d = (*d).max(w.socket_drops);
            invite_socket_drops = invite_socket_drops.max(w.invite_socket_drops);
            batches += w.batches;
            batched += w.batched_messages;
            icmp_errors += w.icmp_errors;
            icmp_errors_matched += w.icmp_errors_matched;
            per_worker.push(WorkerSummary {
                name: w.name.clone(),
                messages: total,
                socket_drops: w.socket_drops,
            });
        }
        let mut kinds = BTreeMap::new();
        let mut total = 0;
        for (k, kind) in MsgKind::ALL.iter().enumerate() {
            let count: u64 = disp[k].iter().sum();
            if count == 0 {
                continue;
            }
            total += count;
            let outcomes = DISP_NAMES
                .iter()
                .zip(disp[k])
                .filter(|(_, n)| *n > 0)
                .map(|(name, n)| ((*name).to_string(), n))
                .collect();
            kinds.insert(
                kind.name().to_string(),
                KindStats {
                    count,
                    outcomes,
                    k_rcv: hist.get(k).map_or_else(Dist::default, |h| Dist::of(&h[0])),
                    t_sip: hist.get(k).map_or_else(Dist::default, |h| Dist::of(&h[1])),
                    k_snd: hist.get(k).map_or_else(Dist::default, |h| Dist::of(&h[2])),
                    t_sip_alone: hist.get(k).map_or_else(Dist::default, |h| Dist::of(&h[3])),
                    overlapped: overlapped[k],
                    lock_contended: lock_contended[k],
                },
            );
        }
        let socket_drops = drops_by_socket.values().sum::<u64>() + invite_socket_drops;
        let host = UdpCounters::read().since(&self.snmp_start);
        let drop_rate = if host.in_datagrams + host.rcvbuf_errors > 0 {
            host.rcvbuf_errors as f64 / (host.in_datagrams + host.rcvbuf_errors) as f64
        } else {
            0.0
        };
        Snapshot {
            uptime_s: self.started.elapsed().as_secs_f64(),
            distributions,
            server: self.info.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            // Relaxed: gauges for display.
            transactions: self.transactions.load(Ordering::Relaxed),
            transaction_capacity: self.transaction_capacity.load(Ordering::Relaxed),
            transactions_lingering: self.transactions_lingering.load(Ordering::Relaxed),
            transactions_reclaimed: self.transactions_reclaimed.load(Ordering::Relaxed),
            messages: total,
            kinds,
            replied,
            parse_errors,
            icmp_errors,
            icmp_errors_matched,
            socket_drops,
            invite_socket_drops,
            host_udp: host,
            host_drop_rate: drop_rate,
            batches,
            mean_batch: if batches > 0 {
                batched as f64 / batches as f64
            } else {
                0.0
            },
            workers: per_worker,
            tcp: self
                .tcp
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map(|c| c.snapshot()),
        }
    }
}

/// A distribution summary, nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Dist {
    /// Samples.
    pub count: u64,
    /// Minimum.
    pub min: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Maximum.
    pub max: u64,
    /// Mean.
    pub mean: f64,
}

impl Dist {
    fn of(h: &Histogram<u64>) -> Dist {
        if h.is_empty() {
            return Dist::default();
        }
        Dist {
            count: h.len(),
            min: h.min(),
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
            mean: h.mean(),
        }
    }
}

/// Statistics of one message kind.
#[derive(Debug, Clone, Serialize)]
pub struct KindStats {
    /// Messages.
    pub count: u64,
    /// By outcome.
    pub outcomes: BTreeMap<String, u64>,
    /// K_rcv, ns.
    pub k_rcv: Dist,
    /// T_sip, ns.
    pub t_sip: Dist,
    /// K_snd, ns.
    pub k_snd: Dist,
    /// T_sip of the messages no other worker was handling at their start
    /// or end, ns.
    pub t_sip_alone: Dist,
    /// Messages another worker was handling at their start or end.
    pub overlapped: u64,
    /// Stateful: messages that found their shard of the transaction
    /// table locked by another thread.
    pub lock_contended: u64,
}

/// One worker's totals.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerSummary {
    /// Thread name.
    pub name: String,
    /// Messages handled.
    pub messages: u64,
    /// Its socket's drops.
    pub socket_drops: u64,
}

/// Everything, at one moment.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    /// Seconds since start.
    pub uptime_s: f64,
    /// Whether the kinds' distributions (K_rcv, T_sip, K_snd) were
    /// merged; false in [`Registry::counters`], whose distributions are
    /// all empty.
    pub distributions: bool,
    /// Server facts.
    pub server: ServerInfo,
    /// Transactions held.
    pub transactions: usize,
    /// Table capacity.
    pub transaction_capacity: usize,
    /// Of the transactions held, those kept only to absorb retransmissions
    /// (lingering; they give their room up to new ones).
    pub transactions_lingering: usize,
    /// Lingering transactions ended early to make room for new ones.
    pub transactions_reclaimed: u64,
    /// Messages handled.
    pub messages: u64,
    /// By kind (only kinds seen).
    pub kinds: BTreeMap<String, KindStats>,
    /// Responses generated here, by status.
    pub replied: BTreeMap<String, u64>,
    /// Parse errors by rule.
    pub parse_errors: BTreeMap<String, u64>,
    /// ICMP errors for sent datagrams read from the UDP sockets' error
    /// queues (`IP_RECVERR`).
    pub icmp_errors: u64,
    /// Of those, the ones the handler matched to a branch (for the proxy:
    /// a transaction answered at once, RFC 3261 §16.9).
    pub icmp_errors_matched: u64,
    /// Datagrams the proxy's sockets dropped (SO_RXQ_OVFL, summed over sockets).
    pub socket_drops: u64,
    /// Of those, the INVITE socket's (the `shared` model's INVITE split):
    /// new INVITEs the kernel dropped, every other message having its own
    /// socket.
    pub invite_socket_drops: u64,
    /// Host UDP counters since start (all processes).
    pub host_udp: UdpCounters,
    /// Host RcvbufErrors / (InDatagrams + RcvbufErrors) since start.
    pub host_drop_rate: f64,
    /// Receive batches (batched model).
    pub batches: u64,
    /// Mean messages per batch.
    pub mean_batch: f64,
    /// Per worker.
    pub workers: Vec<WorkerSummary>,
    /// The TCP transport's connections and limits (None: TCP is off).
    pub tcp: Option<TcpSnapshot>,
}

impl Snapshot {
    /// JSON text.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".into())
    }

    /// Prometheus text exposition format.
    pub fn prometheus(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::with_capacity(4096);
        let _ = writeln!(
            o,
            "# HELP takt_sip_messages_total SIP messages handled, by kind and outcome."
        );
        let _ = writeln!(o, "# TYPE takt_sip_messages_total counter");
        for (k, s) in &self.kinds {
            for (d, n) in &s.outcomes {
                let _ = writeln!(
                    o,
                    "takt_sip_messages_total{{kind=\"{k}\",outcome=\"{d}\"}} {n}"
                );
            }
        }
        let _ = writeln!(
            o,
            "# HELP takt_sip_time_seconds Per-message time components (K_rcv, T_sip, K_snd)."
        );
        let _ = writeln!(o, "# TYPE takt_sip_time_seconds summary");
        for (k, s) in &self.kinds {
            for (c, d) in [
                ("k_rcv", &s.k_rcv),
                ("t_sip", &s.t_sip),
                ("k_snd", &s.k_snd),
            ] {
                if d.count == 0 {
                    continue;
                }
                for (q, v) in [("0.5", d.p50), ("0.9", d.p90), ("0.99", d.p99)] {
                    let _ = writeln!(
                        o,
                        "takt_sip_time_seconds{{kind=\"{k}\",component=\"{c}\",quantile=\"{q}\"}} {}",
                        v as f64 / 1e9
                    );
                }
                let _ = writeln!(
                    o,
                    "takt_sip_time_seconds_sum{{kind=\"{k}\",component=\"{c}\"}} {}",
                    d.mean * d.count as f64 / 1e9
                );
                let _ = writeln!(
                    o,
                    "takt_sip_time_seconds_count{{kind=\"{k}\",component=\"{c}\"}} {}",
                    d.count
                );
            }
        }
        let _ = writeln!(
            o,
            "# HELP takt_sip_replied_total Responses generated by the proxy, by status."
        );
        let _ = writeln!(o, "# TYPE takt_sip_replied_total counter");
        for (c, n) in &self.replied {
            let _ = writeln!(o, "takt_sip_replied_total{{status=\"{c}\"}} {n}");
        }
        let _ = writeln!(
            o,
            "# HELP takt_sip_parse_errors_total Messages that did not parse, by rule."
        );
        let _ = writeln!(o, "# TYPE takt_sip_parse_errors_total counter");
        for (e, n) in &self.parse_errors {
            let _ = writeln!(o, "takt_sip_parse_errors_total{{rule=\"{e}\"}} {n}");
        }
        for (name, help, v) in [
            (
                "takt_sip_icmp_errors_total",
                "ICMP errors for sent datagrams read from the sockets' error queues.",
                self.icmp_errors,
            ),
            (
                "takt_sip_icmp_errors_matched_total",
                "ICMP errors matched to a transaction's branch (answered at once).",
                self.icmp_errors_matched,
            ),
            (
                "takt_sip_socket_drops_total",
                "Datagrams dropped by the proxy's sockets (SO_RXQ_OVFL).",
                self.socket_drops,
            ),
            (
                "takt_sip_invite_socket_drops_total",
                "Of those, the INVITE socket's (new INVITEs; the shared model's INVITE split).",
                self.invite_socket_drops,
            ),
            (
                "takt_sip_host_udp_rcvbuf_errors_total",
                "Host UDP RcvbufErrors since start.",
                self.host_udp.rcvbuf_errors,
            ),
            (
                "takt_sip_host_udp_in_errors_total",
                "Host UDP InErrors since start.",
                self.host_udp.in_errors,
            ),
            (
                "takt_sip_host_udp_in_datagrams_total",
                "Host UDP InDatagrams since start.",
                self.host_udp.in_datagrams,
            ),
        ] {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
        }
        if let Some(t) = &self.tcp {
            for (name, help, v) in [
                (
                    "takt_sip_tcp_accepted_total",
                    "TCP connections accepted.",
                    t.accepted,
                ),
                (
                    "takt_sip_tcp_connected_total",
                    "TCP connections opened by the proxy.",
                    t.connected,
                ),
                (
                    "takt_sip_tcp_closed_total",
                    "TCP connections closed.",
                    t.closed,
                ),
                (
                    "takt_sip_tcp_refused_total_limit_total",
                    "TCP connections refused: total limit reached.",
                    t.refused_total_limit,
                ),
                (
                    "takt_sip_tcp_refused_peer_limit_total",
                    "TCP connections refused: per-peer limit reached.",
                    t.refused_peer_limit,
                ),
                (
                    "takt_sip_tcp_evicted_total",
                    "TCP connections evicted to make room at the total limit.",
                    t.evicted,
                ),
                (
                    "takt_sip_tcp_message_timeouts_total",
                    "TCP connections closed: a message missed its deadline.",
                    t.message_timeouts,
                ),
                (
                    "takt_sip_tcp_idle_timeouts_total",
                    "TCP connections closed: idle lifetime over.",
                    t.idle_timeouts,
                ),
                (
                    "takt_sip_tcp_unframeable_total",
                    "TCP connections closed: stream could not be framed.",
                    t.unframeable,
                ),
                (
                    "takt_sip_tcp_send_overflows_total",
                    "Messages not sent: a TCP send buffer was full.",
                    t.send_overflows,
                ),
                (
                    "takt_sip_tcp_accept_errors_total",
                    "TCP accept failures.",
                    t.accept_errors,
                ),
                (
                    "takt_sip_tcp_connect_failures_total",
                    "Outbound TCP connects that failed after the send returned.",
                    t.connect_failures,
                ),
            ] {
                let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
            }
            let _ = writeln!(
                o,
                "# HELP takt_sip_tcp_connections TCP connections open.\n# TYPE takt_sip_tcp_connections gauge\ntakt_sip_tcp_connections {}",
                t.open
            );
        }
        let _ = writeln!(
            o,
            "# HELP takt_sip_transactions Transactions held.\n# TYPE takt_sip_transactions gauge\ntakt_sip_transactions {}",
            self.transactions
        );
        let _ = writeln!(
            o,
            "# HELP takt_sip_transactions_lingering Transactions held only to absorb retransmissions.\n# TYPE takt_sip_transactions_lingering gauge\ntakt_sip_transactions_lingering {}",
            self.transactions_lingering
        );
        let _ = writeln!(
            o,
            "# HELP takt_sip_transactions_reclaimed_total Lingering transactions ended early to make room.\n# TYPE takt_sip_transactions_reclaimed_total counter\ntakt_sip_transactions_reclaimed_total {}",
            self.transactions_reclaimed
        );
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::Outcome;

    #[test]
    fn records_merge_into_snapshots() {
        let r = Registry::new();
        let w1 = r.add_worker("w1");
        let w2 = r.add_worker("w2");
        let fwd = Outcome {
            kind: MsgKind::Invite,
            disposition: Disposition::Forwarded,
            error: None,
            lock_contended: false,
        };
        for i in 1..=100u64 {
            let s = Sample {
                k_rcv_ns: Some(10_000 + i),
                t_sip_ns: 1_000 + i,
                k_snd_ns: 5_000,
                overlapped: i > 90,
            };
            w1.lock().unwrap().record(&s, &fwd);
            w2.lock().unwrap().record(&s, &fwd);
        }
        w2.lock().unwrap().set_socket_drops(3);
        let s = r.snapshot();
        let inv = &s.kinds["invite"];
        assert_eq!(inv.count, 200);
        assert_eq!(inv.outcomes["forwarded"], 200);
        assert!((1_040..=1_060).contains(&inv.t_sip.p50), "{:?}", inv.t_sip);
        assert_eq!(inv.overlapped, 20);
        assert_eq!(inv.t_sip_alone.count, 180);
        assert!((1_085..=1_095).contains(&inv.t_sip_alone.max));
        assert_eq!(inv.lock_contended, 0);
        assert_eq!(s.socket_drops, 3);
        let p = s.prometheus();
        assert!(p.contains("takt_sip_messages_total{kind=\"invite\",outcome=\"forwarded\"} 200"));
        assert!(p.contains("component=\"t_sip\",quantile=\"0.5\""));
        let j: serde_json::Value = serde_json::from_str(&s.json()).unwrap();
        assert_eq!(j["kinds"]["invite"]["count"], 200);
        assert_eq!(j["distributions"], true);

        // the counters alone: the same counts, no distribution merged
        let c = r.counters();
        assert!(!c.distributions && s.distributions);
        let ci = &c.kinds["invite"];
        assert_eq!((ci.count, ci.overlapped), (inv.count, inv.overlapped));
        assert_eq!(ci.outcomes, inv.outcomes);
        assert_eq!((c.messages, c.socket_drops), (s.messages, s.socket_drops));
        assert_eq!(ci.t_sip, Dist::default());
        assert_eq!(ci.k_rcv.count + ci.k_snd.count + ci.t_sip_alone.count, 0);
    }
}
