//! The suite: its parts, their windows and estimates, and the rows they
//! write.

use std::time::{Duration, Instant};

use takt_sched::{SpinBudget, ThreadSpec};

use takt_measure::cancel::Cancel;
use takt_measure::params;
use takt_measure::result::{Better, Document, DocumentBuilder, ResultRow};
use takt_measure::stats::quantile;
use takt_measure::suite::{RunContext, Suite};

use crate::error::RemoteBenchError;
use crate::ractor::RactorError;
use crate::{nats, ractor, server, takt, tcp, threads};

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The reduced run (under 90 s).
    pub quick: bool,
    /// Measured runs per row (one warm-up run precedes them).
    pub runs: usize,
    /// A NATS server to use instead of starting one.
    pub url: Option<String>,
    /// The bridge threads' spec (`--cpus`, `--sched`).
    pub thread: ThreadSpec,
    /// How long the agents' dispatcher threads spin before they sleep.
    pub spin: SpinBudget,
    /// The idle-latency limits the paced runs are repeated under (`None`:
    /// the system's idle policy; `Some(0)`: idle CPUs poll), each held
    /// through [`takt_sched::IdleLatency`] for its runs.
    pub paced_holds: Vec<Option<Duration>>,
    /// Also measure one-way throughput until messages are lost.
    pub one_way: bool,
    /// How to start the answering node's process: this program with these
    /// arguments plus `--url URL --node NAME` (`None`: the current
    /// executable, `takt`, as `bench remote --responder` with the
    /// `--cpus`/`--sched` of [`thread`](Self::thread) and the `--spin`).
    pub responder: Option<(std::path::PathBuf, Vec<String>)>,
    /// The `takt-peer-ractor` executable (`None`: the one next to the
    /// current executable, if it is built; an explicit path must exist).
    pub ractor_peer: Option<std::path::PathBuf>,
    /// Only this part of the run (`None`: every part; `one_way` still
    /// needs [`one_way`](Self::one_way)).
    pub only: Option<Part>,
    /// The `saturated` depths to run (empty: all of [`IN_FLIGHT`]).
    pub in_flight: Vec<usize>,
}

/// One part of the run, for `--only`: a short A/B of one quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The `rtt` rows.
    Rtt,
    /// The `paced_rtt` rows.
    Paced,
    /// The `saturated` and `saturated_ratio` rows.
    Saturated,
    /// The `one_way` rows.
    OneWay,
}

impl std::str::FromStr for Part {
    type Err = RemoteBenchError;

    fn from_str(s: &str) -> Result<Part, RemoteBenchError> {
        match s {
            "rtt" => Ok(Part::Rtt),
            "paced" => Ok(Part::Paced),
            "saturated" => Ok(Part::Saturated),
            "one-way" => Ok(Part::OneWay),
            _ => Err(RemoteBenchError::UnknownPart(s.to_string())),
        }
    }
}

impl Options {
    /// Whether `part` runs.
    fn runs_part(&self, part: Part) -> bool {
        let selected = self.only.is_none_or(|p| p == part);
        selected && (part != Part::OneWay || self.one_way)
    }

    /// The `saturated` depths of this run.
    fn depths(&self) -> Vec<usize> {
        if self.in_flight.is_empty() {
            IN_FLIGHT.to_vec()
        } else {
            self.in_flight.clone()
        }
    }
}

/// The arguments that make the `takt` binary serve as the answering node.
pub fn responder_args(thread: &ThreadSpec, spin: SpinBudget) -> Vec<String> {
    let mut args: Vec<String> = ["bench", "remote", "--responder"]
        .map(String::from)
        .to_vec();
    args.extend(["--spin".to_string(), spin.to_string()]);
    if let Some(c) = thread.cpus() {
        args.extend(["--cpus".to_string(), c.to_string()]);
    }
    if let Some(p) = thread.policy() {
        args.extend(["--sched".to_string(), p.to_string()]);
    }
    args
}

/// Payload sizes of the `rtt` rows.
pub const SIZES: [usize; 3] = [64, 1024, 65536];
/// Paces of the `paced_rtt` rows, in milliseconds.
pub const PACES_MS: [u64; 3] = [75, 80, 100];
/// In-flight counts of the `saturated` rows.
pub const IN_FLIGHT: [usize; 4] = [1, 16, 64, 256];

/// Offered rates of the `one_way` rows, messages per second (0: as fast
/// as the sender can).
pub const ONE_WAY_RATES: [u64; 5] = [20_000, 50_000, 100_000, 200_000, 0];

const PACED_SIZE: usize = 64;
const SATURATED_SIZE: usize = 64;
const ONE_WAY_SIZE: usize = 64;

/// The takt and async-nats implementations of the `saturated` rows.
const SATURATED_IMPLS: usize = 4;

/// The `takt-peer-ractor` this run would use (see [`ractor::locate`]).
fn ractor_peer(o: &Options) -> Result<ractor::Located, RemoteBenchError> {
    let me = std::env::current_exe().map_err(RemoteBenchError::io("the takt executable"))?;
    ractor::locate(o.ractor_peer.as_deref(), &me)
}

/// How long the run takes, about.
pub fn expected_duration(o: &Options) -> Duration {
    // Paced once per idle-latency case.
    let paced = if o.runs_part(Part::Paced) {
        paced_window(o) * (PACES_MS.len() * o.paced_holds.len().max(1)) as u32
    } else {
        Duration::ZERO
    };
    let one_way = if o.runs_part(Part::OneWay) {
        // The window plus the drain and the count queries, measured ~2×.
        one_way_window(o) * (2 * (o.runs.max(5) + 1) * ONE_WAY_RATES.len()) as u32
    } else {
        Duration::ZERO
    };
    let runs = o.runs.max(5) + 1;
    // Each run's window, plus the drain of the last asks.
    let saturated = if o.runs_part(Part::Saturated) {
        let ractor = matches!(ractor_peer(o), Ok(ractor::Located::At(_)));
        saturated_window(o) * (runs * o.depths().len() * (SATURATED_IMPLS + ractor as usize)) as u32
    } else {
        Duration::ZERO
    };
    // Set-up (a child process, four nodes) and the rtt rows: measured
    // under a load of 2-5 on 2 vCPUs, ~6 s with `--quick`, ~30 s without
    // (the set-up alone: ~2 s).
    let rtt = Duration::from_secs(match (o.runs_part(Part::Rtt), o.quick) {
        (false, _) => 2,
        (true, true) => 6,
        (true, false) => 30,
    });
    paced + one_way + saturated + rtt
}

/// Process `pid`'s CPU time: this process's from the kernel's process
/// clock, another's summed over its live threads.
fn cpu_time(pid: u32) -> Duration {
    if pid == std::process::id() {
        takt_sched::process_cpu_time()
    } else {
        threads::Snapshot::of(pid).cpu()
    }
}

/// How long each saturated run issues asks.
fn saturated_window(o: &Options) -> Duration {
    Duration::from_millis(if o.quick { 120 } else { 1000 })
}

fn one_way_window(o: &Options) -> Duration {
    Duration::from_millis(if o.quick { 300 } else { 2000 })
}

fn paced_window(o: &Options) -> Duration {
    Duration::from_secs(if o.quick { 4 } else { 60 })
}

/// The implementations, each ready to exchange.
struct Impls {
    takt: takt::TaktEcho,
    local: takt::TaktEcho,
    nats: nats::BareNats,
    tcp: tcp::TcpEcho,
    nagle: tcp::TcpEcho,
    /// `None` when `takt-peer-ractor` is not built.
    ractor: Option<ractor::RactorPeer>,
}

enum Which {
    Takt,
    TaktInline,
    Local,
    Nats,
    Tcp,
    Ractor,
}

impl Which {
    fn name(&self) -> &'static str {
        match self {
            Which::Takt => "takt",
            Which::TaktInline => "takt-inline",
            Which::Local => "takt-in-process",
            Which::Nats => "async-nats",
            Which::Tcp => "tcp-nodelay",
            Which::Ractor => "ractor-cluster",
        }
    }
}

/// The implementations of the `rtt` rows (ractor-cluster when it runs).
fn rtt_impls(ractor: bool) -> Vec<Which> {
    let mut w = vec![Which::Takt, Which::Local, Which::Nats, Which::Tcp];
    w.extend(ractor.then_some(Which::Ractor));
    w
}

/// The implementations of the `saturated` rows (ractor-cluster when it runs).
fn saturated_impls(ractor: bool) -> Vec<Which> {
    let mut w = vec![Which::Takt, Which::TaktInline, Which::Local, Which::Nats];
    w.extend(ractor.then_some(Which::Ractor));
    w
}

impl Impls {
    fn round_trip(&mut self, w: &Which, payload: &[u8]) -> Result<Duration, RemoteBenchError> {
        match w {
            Which::Takt => self.takt.round_trip(payload),
            Which::TaktInline => self.takt.round_trip_inline(payload),
            Which::Local => self.local.round_trip(payload),
            Which::Nats => self.nats.round_trip(payload),
            Which::Tcp => self.tcp.round_trip(payload),
            Which::Ractor => Ok(self.ractor()?.round_trip(payload)?),
        }
    }

    /// The ractor_cluster peer, which rows ask for only when it runs.
    fn ractor(&mut self) -> Result<&mut ractor::RactorPeer, RactorError> {
        self.ractor.as_mut().ok_or(RactorError::NotRunning)
    }

    /// The implementations of the `rtt` rows.
    fn rtt_impls(&self) -> Vec<Which> {
        rtt_impls(self.ractor.is_some())
    }

    /// The implementations of the `saturated` rows.
    fn saturated_impls(&self) -> Vec<Which> {
        saturated_impls(self.ractor.is_some())
    }

    /// The process that asks for implementation `w`'s round trips, and the
    /// one that answers them if it is another process.
    fn processes(&self, w: &Which) -> (u32, Option<u32>) {
        match (w, &self.ractor) {
            (Which::Ractor, Some(r)) => (r.node_a_pid(), Some(r.node_b_pid())),
            (Which::Takt | Which::TaktInline, _) => (std::process::id(), self.takt.answerer_pid()),
            _ => (std::process::id(), None),
        }
    }
}

impl Suite for Options {
    type Output = Document;
    type Error = RemoteBenchError;

    fn name(&self) -> &str {
        "remote"
    }

    fn estimate(&self) -> Duration {
        expected_duration(self)
    }

    fn describe(&self) -> String {
        format!(
            "(server {}, bridge threads {})",
            self.url.as_deref().unwrap_or("started here"),
            self.thread
        )
    }

    fn run(&self, ctx: &RunContext) -> Result<Document, RemoteBenchError> {
        run(self, ctx).map_err(|e| {
            if ctx.is_cancelled() {
                RemoteBenchError::Interrupted
            } else {
                e
            }
        })
    }
}

/// Checks for Ctrl-C between steps.
fn step(ctx: &RunContext, msg: &str) -> Result<(), RemoteBenchError> {
    if ctx.is_cancelled() {
        return Err(RemoteBenchError::Interrupted);
    }
    ctx.step(msg);
    Ok(())
}

fn run(o: &Options, ctx: &RunContext) -> Result<Document, RemoteBenchError> {
    let runs = o.runs.max(5);
    let mut doc = DocumentBuilder::start("remote");
    let server = match &o.url {
        Some(_) => None,
        None => Some(server::NatsServer::start()?),
    };
    let url = o
        .url
        .clone()
        .or_else(|| server.as_ref().map(|s| s.url()))
        .unwrap_or_default();
    let (program, mut args) = match &o.responder {
        Some((p, a)) => (p.clone(), a.clone()),
        None => (
            std::env::current_exe().map_err(RemoteBenchError::io("the takt executable"))?,
            responder_args(&o.thread, o.spin),
        ),
    };
    let name = format!("answer-{}", std::process::id());
    args.extend([
        "--url".to_string(),
        url.clone(),
        "--node".to_string(),
        name.clone(),
    ]);
    let mut im = Impls {
        takt: takt::TaktEcho::start(
            &url,
            &o.thread,
            o.spin,
            &name,
            takt::Placement::Child { program, args },
        )?,
        local: takt::TaktEcho::start(
            &url,
            &o.thread,
            o.spin,
            &format!("{name}-local"),
            takt::Placement::InProcess,
        )?,
        nats: nats::BareNats::start(&url)?,
        tcp: tcp::TcpEcho::start(tcp::Mode::NoDelay)?,
        nagle: tcp::TcpEcho::start(tcp::Mode::NagleSplit)?,
        ractor: match ractor_peer(o)? {
            ractor::Located::At(p) => {
                doc.note(format!(
                    "ractor-cluster: ractor_cluster 0.16 (ractor's remoting, direct TCP with TCP_NODELAY, no broker) from {}, both nodes in child processes: node A on a tokio runtime with one worker thread, asking with `call` and timing each round trip itself; node B's echo actor, node server and session on one current-thread runtime; payloads are `Vec<u8>` in ractor's protobuf frames; no ratio target",
                    p.display()
                ));
                Some(ractor::RactorPeer::start(&p)?)
            }
            ractor::Located::Missing(why) => {
                doc.note(why);
                None
            }
        },
    };
    doc.note(format!(
        "server {url}; takt: the asking node here, the answering node in a child process (bridge threads {}), asked from a plain thread, answered by an agent on a one_thread dispatcher (spin {}); takt-in-process: both nodes in this process; payloads are `bytes::Bytes`",
        o.thread, o.spin
    ));

    // Back-to-back round trips.
    if o.runs_part(Part::Rtt) {
        rtt_runs(o, ctx, &mut im, runs, &mut doc)?;
    }
    if o.runs_part(Part::Paced) {
        // Paced: every implementation at once, each on its own thread;
        // without, then with, an idle-latency hold.
        let holds = if o.paced_holds.is_empty() {
            vec![None]
        } else {
            o.paced_holds.clone()
        };
        for hold in holds {
            let _held = match hold.map(takt_sched::IdleLatency::hold) {
                None => None,
                Some(Ok(h)) => Some(h),
                Some(Err(e)) => {
                    doc.note(format!(
                        "paced runs with an idle-latency hold skipped: {e} (needs root)"
                    ));
                    continue;
                }
            };
            paced_runs(o, ctx, &mut im, runs, hold, &mut doc)?;
        }
    }
    if o.runs_part(Part::Saturated) {
        saturated_runs(o, ctx, &mut im, runs, &mut doc)?;
    }
    for st in [im.takt.stats(), im.local.stats()] {
        if st.queue_full + st.too_large + st.undeliverable + st.type_mismatch + st.slow_consumer > 0
        {
            return Err(RemoteBenchError::Lost(st));
        }
    }

    // One-way, until something gives (losses expected: not checked above).
    if o.runs_part(Part::OneWay) {
        one_way(o, ctx, &mut im.takt, runs, &mut doc)?;
    }
    if o.quick {
        doc.note(format!(
            "--quick: paced windows of {} s (p99 and p99.9 of fewer than 100 round trips are the maximum), saturated windows of {} ms",
            paced_window(o).as_secs(),
            saturated_window(o).as_millis()
        ));
    }
    drop(im);
    drop(server);
    Ok(doc.finish())
}

/// `rtt` rows: back-to-back round trips per size and implementation.
fn rtt_runs(
    o: &Options,
    ctx: &RunContext,
    im: &mut Impls,
    runs: usize,
    doc: &mut DocumentBuilder,
) -> Result<(), RemoteBenchError> {
    let count = |size: usize| {
        let base = if o.quick { 300 } else { 3000 };
        if size >= 65536 {
            base / 5
        } else {
            base
        }
    };
    for size in SIZES {
        let payload = vec![0x5a; size];
        for w in im.rtt_impls() {
            step(ctx, &format!("rtt {size} B: {}", w.name()))?;
            let n = count(size);
            let mut samples = Vec::with_capacity(runs);
            let mut cpu = Duration::ZERO;
            // The asking process's CPU time (node A's for ractor-cluster).
            let (asker, _) = im.processes(&w);
            for r in 0..=runs {
                let c0 = cpu_time(asker);
                let mut sum = Duration::ZERO;
                for _ in 0..n {
                    sum += im.round_trip(&w, &payload)?;
                }
                if r > 0 {
                    cpu += cpu_time(asker).saturating_sub(c0);
                    samples.push(sum.as_secs_f64() * 1e6 / n as f64);
                }
            }
            doc.push(rtt_row(
                &w,
                size,
                n,
                samples,
                cpu.as_secs_f64() / runs as f64,
            ));
        }
    }
    Ok(())
}

/// An `rtt` row: `n` back-to-back round trips of `size` bytes per sample.
fn rtt_row(w: &Which, size: usize, n: usize, samples: Vec<f64>, cpu_s: f64) -> ResultRow {
    ResultRow::new(
        "rtt",
        w.name(),
        params![("bytes", size), ("round_trips", n)],
        "us",
        Better::Lower,
        samples,
        cpu_s,
    )
}

/// `saturated` and `saturated_ratio` rows: per depth, each implementation
/// issues asks for a fixed window per run.
fn saturated_runs(
    o: &Options,
    ctx: &RunContext,
    im: &mut Impls,
    runs: usize,
    doc: &mut DocumentBuilder,
) -> Result<(), RemoteBenchError> {
    // Saturated: each run issues asks for a fixed window.
    let payload = vec![0x5a; SATURATED_SIZE];
    let window = saturated_window(o);
    for k in o.depths() {
        let mut by_impl: Vec<(&'static str, Vec<f64>)> = Vec::new();
        for w in im.saturated_impls() {
            step(ctx, &format!("saturated {k} in flight: {}", w.name()))?;
            let mut samples = Vec::with_capacity(runs);
            let mut cpu = Duration::ZERO;
            let mut total = 0u64;
            let (asker, child) = im.processes(&w);
            let (mut before, mut before_child) = Default::default();
            for r in 0..=runs {
                if r == 1 {
                    before = threads::Snapshot::of(asker);
                    before_child = child.map(threads::Snapshot::of);
                }
                let c0 = cpu_time(asker);
                let (n, d) = match w {
                    Which::Takt => im.takt.saturate(&payload, k, window, false)?,
                    Which::TaktInline => im.takt.saturate(&payload, k, window, true)?,
                    Which::Local => im.local.saturate(&payload, k, window, false)?,
                    Which::Ractor => im.ractor()?.saturate(&payload, k, window)?,
                    _ => im.nats.saturate(&payload, k, window)?,
                };
                if r > 0 {
                    cpu += cpu_time(asker).saturating_sub(c0);
                    samples.push(n as f64 / d.as_secs_f64());
                    total += n;
                }
            }
            let asking = if asker == std::process::id() {
                "this process"
            } else {
                "the asking process"
            };
            let mut note = format!(
                "per round trip: {asking} {}",
                threads::Snapshot::of(asker).per_op(&before, total, 4)
            );
            if let (Some(pid), Some(b)) = (child, &before_child) {
                note.push_str(&format!(
                    "; the answering process {}",
                    threads::Snapshot::of(pid).per_op(b, total, 3)
                ));
            }
            note.push_str(" (thread µs CPU voluntary/involuntary switches)");
            doc.push(saturated_row(
                &w,
                k,
                window,
                samples.clone(),
                cpu.as_secs_f64() / runs as f64,
                note,
            ));
            by_impl.push((w.name(), samples));
        }
        saturated_ratios(&by_impl, k, window, doc);
    }
    Ok(())
}

/// A `saturated` row: round trips/s of `w` with `in_flight` asks
/// outstanding over windows of `window`.
fn saturated_row(
    w: &Which,
    in_flight: usize,
    window: Duration,
    samples: Vec<f64>,
    cpu_s: f64,
    note: String,
) -> ResultRow {
    ResultRow::new(
        "saturated",
        w.name(),
        params![
            ("bytes", SATURATED_SIZE),
            ("in_flight", in_flight),
            ("window_ms", window.as_millis() as u64)
        ],
        "rt/s",
        Better::Higher,
        samples,
        cpu_s,
    )
    .with_note(note)
}

/// `saturated_ratio` rows: each takt variant's round trips/s over bare
/// async-nats's at one depth, run by run (the i-th run of each; the
/// implementations ran one after the other).
fn saturated_ratios(
    by_impl: &[(&'static str, Vec<f64>)],
    in_flight: usize,
    window: Duration,
    doc: &mut DocumentBuilder,
) {
    let Some((_, nats)) = by_impl.iter().find(|(n, _)| *n == Which::Nats.name()) else {
        return;
    };
    // The takt variants only: the other peers are reported, not targeted.
    for (name, s) in by_impl.iter().filter(|(n, _)| n.starts_with("takt")) {
        let ratios: Vec<f64> = s
            .iter()
            .zip(nats)
            .filter(|(_, n)| **n > 0.0)
            .map(|(t, n)| t / n)
            .collect();
        if ratios.is_empty() {
            continue;
        }
        doc.push(
            ResultRow::new(
                "saturated_ratio",
                *name,
                params![
                    ("bytes", SATURATED_SIZE),
                    ("in_flight", in_flight),
                    ("window_ms", window.as_millis() as u64),
                    ("versus", Which::Nats.name())
                ],
                "ratio",
                Better::Higher,
                ratios,
                0.0,
            )
            .with_note("round trips/s over bare async-nats's, run i against run i (cpu_s: see the saturated rows)"),
        );
    }
}

/// One paced window per pace, every implementation at once.
fn paced_runs(
    o: &Options,
    ctx: &RunContext,
    im: &mut Impls,
    runs: usize,
    hold: Option<Duration>,
    doc: &mut DocumentBuilder,
) -> Result<(), RemoteBenchError> {
    for pace in PACES_MS {
        step(
            ctx,
            &format!(
                "paced {pace} ms for {} s, idle latency {}",
                paced_window(o).as_secs(),
                takt_measure::result::idle_latency_param(hold)
            ),
        )?;
        let cancel = ctx.cancel();
        let window = paced_window(o);
        let c0 = takt_sched::process_cpu_time();
        let payload = vec![0x5a; PACED_SIZE];
        let lat: Vec<(&'static str, Result<Vec<f64>, RemoteBenchError>)> =
            std::thread::scope(|s| {
                let Impls {
                    takt,
                    local,
                    nats,
                    tcp,
                    nagle,
                    ractor,
                } = im;
                let p = &payload;
                let pace_d = Duration::from_millis(pace);
                let mut h = vec![
                    (
                        "takt",
                        s.spawn(move || paced(|| takt.round_trip(p), pace_d, window, cancel)),
                    ),
                    (
                        "takt-in-process",
                        s.spawn(move || paced(|| local.round_trip(p), pace_d, window, cancel)),
                    ),
                    (
                        "async-nats",
                        s.spawn(move || paced(|| nats.round_trip(p), pace_d, window, cancel)),
                    ),
                    (
                        "tcp-nodelay",
                        s.spawn(move || paced(|| tcp.round_trip(p), pace_d, window, cancel)),
                    ),
                    (
                        "tcp-nagle-split",
                        s.spawn(move || paced(|| nagle.round_trip(p), pace_d, window, cancel)),
                    ),
                ];
                if let Some(r) = ractor.as_mut() {
                    h.push((
                        Which::Ractor.name(),
                        s.spawn(move || paced(|| Ok(r.round_trip(p)?), pace_d, window, cancel)),
                    ));
                }
                h.into_iter()
                    .map(|(n, j)| {
                        (
                            n,
                            j.join()
                                .unwrap_or_else(|_| Err(RemoteBenchError::Panicked("paced"))),
                        )
                    })
                    .collect()
            });
        let cpu = takt_sched::process_cpu_time()
            .saturating_sub(c0)
            .as_secs_f64()
            / runs as f64;
        for (name, l) in lat {
            for row in paced_rows(name, pace, hold, &l?, runs, cpu) {
                doc.push(row);
            }
        }
    }
    Ok(())
}

/// The `paced_rtt` rows of one implementation at one pace: the round-trip
/// times `l` (µs) split into `runs` runs, each run's p50, p99, p99.9 and
/// maximum.
fn paced_rows(
    name: &str,
    pace: u64,
    hold: Option<Duration>,
    l: &[f64],
    runs: usize,
    cpu: f64,
) -> Vec<ResultRow> {
    let per = (l.len() / runs).max(1);
    [(0.5, "p50"), (0.99, "p99"), (0.999, "p99.9"), (1.0, "max")]
        .into_iter()
        .map(|(q, label)| {
            let samples: Vec<f64> = l.chunks(per).take(runs).map(|c| quantile(c, q)).collect();
            ResultRow::new(
                "paced_rtt",
                name,
                params![
                    ("bytes", PACED_SIZE),
                    ("pace_ms", pace),
                    (
                        "idle_latency",
                        takt_measure::result::idle_latency_param(hold)
                    ),
                    ("quantile", label),
                    ("round_trips_per_run", per)
                ],
                "us",
                Better::Lower,
                samples,
                cpu,
            )
            .with_note("cpu_s: the whole process over the window (all implementations ran at once)")
        })
        .collect()
}

/// A `one_way` row: messages/s delivered to the sink at an offered rate
/// (`max`: as fast as the sender goes).
fn one_way_row(offered: &str, window: Duration, samples: Vec<f64>, cpu_s: f64) -> ResultRow {
    ResultRow::new(
        "one_way",
        "takt",
        params![
            ("bytes", ONE_WAY_SIZE),
            ("offered_msg_s", offered),
            ("window_ms", window.as_millis() as u64)
        ],
        "msg/s",
        Better::Higher,
        samples,
        cpu_s,
    )
}

/// Every kind of row the suite can emit (every implementation, ractor-cluster
/// included), each built by the suite's row builders from fixed samples:
/// the input of the document-shape snapshot test. Starts nothing.
#[doc(hidden)]
pub fn synthetic_rows() -> Vec<ResultRow> {
    let samples = vec![1.0; 5];
    let window = Duration::from_millis(100);
    let mut doc = DocumentBuilder::start("remote");
    for w in rtt_impls(true) {
        doc.push(rtt_row(&w, SIZES[0], 10, samples.clone(), 0.0));
    }
    let by_impl: Vec<(&'static str, Vec<f64>)> = saturated_impls(true)
        .iter()
        .map(|w| (w.name(), samples.clone()))
        .collect();
    for w in saturated_impls(true) {
        doc.push(saturated_row(
            &w,
            1,
            window,
            samples.clone(),
            0.0,
            String::new(),
        ));
    }
    saturated_ratios(&by_impl, 1, window, &mut doc);
    // the implementations `paced_runs` runs at once
    for name in [
        Which::Takt.name(),
        Which::Local.name(),
        Which::Nats.name(),
        Which::Tcp.name(),
        "tcp-nagle-split",
        Which::Ractor.name(),
    ] {
        for row in paced_rows(name, PACES_MS[0], None, &samples, 5, 0.0) {
            doc.push(row);
        }
    }
    for offered in ["max", "20000"] {
        doc.push(one_way_row(offered, window, samples.clone(), 0.0));
    }
    doc.finish().results
}

/// `one_way` rows: per offered rate, messages/s delivered to the sink.
fn one_way(
    o: &Options,
    ctx: &RunContext,
    takt: &mut takt::TaktEcho,
    runs: usize,
    doc: &mut DocumentBuilder,
) -> Result<(), RemoteBenchError> {
    let payload = vec![0x5a; ONE_WAY_SIZE];
    let window = one_way_window(o);
    let mut breaks: Option<String> = None;
    for rate in ONE_WAY_RATES {
        let offered = if rate == 0 {
            "max".to_string()
        } else {
            rate.to_string()
        };
        step(ctx, &format!("one-way, offered {offered} msg/s"))?;
        let mut samples = Vec::with_capacity(runs);
        let (mut sent_all, mut full_all, mut lost_all, mut slow_all) = (0, 0, 0, 0);
        let mut cpu = Duration::ZERO;
        for r in 0..=runs {
            let before = takt.sink_count()?;
            let c0 = takt_sched::process_cpu_time();
            let (sent, full, elapsed) = takt.one_way(&payload, rate, window)?;
            // Drained when the count reaches what was sent or stops moving.
            let t0 = Instant::now();
            let mut last = before;
            let mut still = Instant::now();
            let after = loop {
                let c = takt.sink_count()?;
                if c.received - before.received >= sent {
                    break c;
                }
                if c.received != last.received {
                    still = Instant::now();
                }
                if still.elapsed() > Duration::from_millis(300)
                    || t0.elapsed() > Duration::from_secs(10)
                {
                    break c;
                }
                last = c;
                std::thread::sleep(Duration::from_millis(10));
            };
            let received = after.received - before.received;
            let drained = t0.elapsed();
            if r > 0 {
                cpu += takt_sched::process_cpu_time().saturating_sub(c0);
                samples.push(received as f64 / (elapsed + drained).as_secs_f64());
                sent_all += sent;
                full_all += full;
                lost_all += sent.saturating_sub(received);
                slow_all += after.slow_consumer - before.slow_consumer;
            }
        }
        if breaks.is_none() && (full_all + lost_all + slow_all) > 0 {
            breaks = Some(offered.clone());
        }
        doc.push(
            one_way_row(&offered, window, samples, cpu.as_secs_f64() / runs as f64).with_note(
                format!(
                    "over {runs} runs: {sent_all} sent, {full_all} dropped at the sender (outbound queue full), {lost_all} sent but not delivered, {slow_all} slow-consumer events at the receiver; delivered/s counts the drain after the window",
                ),
            ),
        );
    }
    doc.note(match breaks {
        Some(at) => {
            format!("one_way: the first losses at an offered {at} msg/s (see the rows' notes)")
        }
        None => "one_way: no losses at any offered rate".to_string(),
    });
    Ok(())
}

/// One exchange every `pace` for `window` (or until `cancel`); the
/// latencies in µs, in order.
fn paced(
    mut exchange: impl FnMut() -> Result<Duration, RemoteBenchError>,
    pace: Duration,
    window: Duration,
    cancel: &Cancel,
) -> Result<Vec<f64>, RemoteBenchError> {
    let t0 = Instant::now();
    let mut next = t0;
    let mut out = Vec::new();
    while t0.elapsed() < window {
        if cancel.is_cancelled() {
            return Err(RemoteBenchError::Interrupted);
        }
        out.push(exchange()?.as_secs_f64() * 1e6);
        next += pace;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::responder;

    /// The child side of the responder tests: serves when the test binary
    /// is run with a `nats://` URL and a node name among its arguments
    /// (libtest takes them for name filters that match nothing else).
    #[test]
    fn responder_child_entry() {
        let args: Vec<String> = std::env::args().collect();
        let Some(i) = args.iter().position(|a| a.starts_with("nats://")) else {
            return;
        };
        let node = args.get(i + 1).expect("a node name after the URL");
        responder::serve_until_stdin_closes(
            &args[i],
            node,
            &ThreadSpec::new("child"),
            SpinBudget::DEFAULT,
        )
        .unwrap();
    }

    fn child_args(url: &str, node: &str) -> Vec<String> {
        [
            "--exact",
            "suite::tests::responder_child_entry",
            "--nocapture",
            "--test-threads=1",
            url,
            node,
        ]
        .map(String::from)
        .to_vec()
    }

    fn gone(pid: u32) -> bool {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    }

    /// The answering node in a child process answers; dropping the bench's
    /// handle kills and reaps it; a child whose parent vanishes (its stdin
    /// closes) ends by itself.
    #[test]
    fn responder_child_answers_is_reaped_on_drop_and_ends_with_its_parent() {
        let server = server::NatsServer::start().expect("nats-server (scripts/setup.sh)");
        let url = server.url();
        let exe = std::env::current_exe().unwrap();
        let name = format!("t{}", std::process::id());
        let mut echo = takt::TaktEcho::start(
            &url,
            &ThreadSpec::new("asker"),
            SpinBudget::DEFAULT,
            &name,
            takt::Placement::Child {
                program: exe.clone(),
                args: child_args(&url, &name),
            },
        )
        .unwrap();
        echo.round_trip(&[7; 100]).unwrap();
        echo.round_trip_inline(&[7; 100]).unwrap();
        let (n, d) = echo
            .saturate(&[7; 64], 16, Duration::from_millis(50), false)
            .unwrap();
        assert!(n >= 16, "{n} round trips");
        assert!(d >= Duration::from_millis(50), "{d:?}");
        let (n, d) = echo
            .saturate(&[7; 64], 16, Duration::from_millis(50), true)
            .unwrap();
        assert!(n >= 16, "{n} round trips");
        assert!(d >= Duration::from_millis(50), "{d:?}");
        drop(echo);

        let r = responder::Responder::spawn(&exe, &child_args(&url, "t-drop"), "t-drop").unwrap();
        let pid = r.pid();
        assert!(!gone(pid));
        drop(r);
        assert!(gone(pid), "the child {pid} outlived its handle");

        let mut r =
            responder::Responder::spawn(&exe, &child_args(&url, "t-orphan"), "t-orphan").unwrap();
        assert!(
            r.close_stdin_and_wait(Duration::from_secs(20)),
            "the child did not end when its stdin closed"
        );
    }

    fn options(quick: bool) -> Options {
        Options {
            quick,
            runs: 5,
            url: None,
            thread: ThreadSpec::new("t"),
            spin: SpinBudget::DEFAULT,
            paced_holds: vec![None, Some(Duration::ZERO)],
            one_way: true,
            responder: None,
            ractor_peer: None,
            only: None,
            in_flight: Vec::new(),
        }
    }

    /// The saturated rows run for fixed windows, so the estimate is the
    /// windows' sum plus a measured allowance: the quick run with every
    /// option stays within the conventions' 90 s, the default within the
    /// 20-minute report's share.
    #[test]
    fn expected_duration_counts_the_windows() {
        let quick = options(true);
        assert!(expected_duration(&quick) <= Duration::from_secs(90));
        let mut default = options(false);
        default.one_way = false;
        default.paced_holds.clear();
        let runs = 6 * IN_FLIGHT.len() * SATURATED_IMPLS;
        let saturated = Duration::from_secs(runs as u64);
        let paced = Duration::from_secs(60 * PACES_MS.len() as u64);
        assert_eq!(
            expected_duration(&default),
            paced + saturated + Duration::from_secs(30)
        );
        default.runs = 10;
        assert_eq!(
            expected_duration(&default) - paced - Duration::from_secs(30),
            saturated * 11 / 6
        );
    }

    /// `--only` runs one part (one-way still needs `one_way`), and the
    /// estimate counts only what runs, at the chosen depths.
    #[test]
    fn only_one_part_runs_and_is_estimated() {
        let mut o = options(true);
        assert!([Part::Rtt, Part::Paced, Part::Saturated, Part::OneWay]
            .iter()
            .all(|&p| o.runs_part(p)));
        o.only = Some(Part::Saturated);
        o.in_flight = vec![64];
        assert!(o.runs_part(Part::Saturated));
        assert!(!o.runs_part(Part::Rtt) && !o.runs_part(Part::Paced));
        assert!(!o.runs_part(Part::OneWay));
        assert_eq!(o.depths(), [64]);
        let saturated = Duration::from_millis(120) * (6 * SATURATED_IMPLS) as u32;
        assert_eq!(expected_duration(&o), saturated + Duration::from_secs(2));
        o.only = Some(Part::OneWay);
        o.one_way = false;
        assert!(!o.runs_part(Part::OneWay));
        assert_eq!("one-way".parse::<Part>().unwrap(), Part::OneWay);
        assert!("latency".parse::<Part>().is_err());
    }

    /// A ratio row per takt variant (none for the other peers), run i over
    /// run i of async-nats; a run of async-nats that completed nothing is
    /// left out, not divided by.
    #[test]
    fn saturated_ratios_pair_runs_and_skip_empty_ones() {
        let mut doc = DocumentBuilder::start("remote");
        let by_impl = vec![
            ("takt", vec![40.0, 60.0, 10.0]),
            ("takt-inline", vec![80.0, 90.0, 10.0]),
            ("async-nats", vec![100.0, 120.0, 0.0]),
            // Reported, not targeted: no ratio row.
            ("ractor-cluster", vec![50.0, 50.0, 50.0]),
        ];
        saturated_ratios(&by_impl, 64, Duration::from_millis(120), &mut doc);
        let d = doc.finish();
        assert_eq!(d.results.len(), 2);
        let r = &d.results[0];
        assert_eq!(
            (r.name.as_str(), r.implementation.as_str()),
            ("saturated_ratio", "takt")
        );
        assert_eq!(r.samples, vec![0.4, 0.5]);
        assert_eq!(d.results[1].samples, vec![0.8, 0.75]);
        let mut doc = DocumentBuilder::start("remote");
        saturated_ratios(&by_impl[..2], 64, Duration::ZERO, &mut doc);
        assert!(doc.finish().results.is_empty());
    }

    #[test]
    fn tcp_echo_round_trips_in_both_modes() {
        for mode in [tcp::Mode::NoDelay, tcp::Mode::NagleSplit] {
            let mut e = tcp::TcpEcho::start(mode).unwrap();
            for size in [0, 1, 64, 70_000] {
                e.round_trip(&vec![7; size]).unwrap();
            }
        }
    }

    #[test]
    fn paced_keeps_the_pace_and_stops_when_cancelled() {
        let cancel = Cancel::new();
        let mut n = 0;
        let t0 = Instant::now();
        let l = paced(
            || {
                n += 1;
                Ok(Duration::from_micros(5))
            },
            Duration::from_millis(20),
            Duration::from_millis(200),
            &cancel,
        )
        .unwrap();
        assert!(t0.elapsed() >= Duration::from_millis(200));
        assert!((8..=11).contains(&l.len()), "{} exchanges", l.len());
        assert!(l.iter().all(|&us| us == 5.0));
        cancel.cancel();
        let r = paced(
            || Ok(Duration::ZERO),
            Duration::from_millis(1),
            Duration::from_secs(60),
            &cancel,
        );
        assert!(r.is_err());
    }
}
