//! `takt bench remote`: agents in two nodes over NATS (takt-remote),
//! beside bare async-nats request/reply, raw TCP with `TCP_NODELAY`, and
//! raw TCP with Nagle on and split writes, in the same run.
//!
//! - `rtt`: back-to-back round trips of 64 B, 1 KiB and 64 KiB (µs per
//!   round trip, the mean of each run).
//! - `paced_rtt`: one 64 B round trip every 75, 80 and 100 ms — the seed's
//!   case, where SObjectizer's transport stalled — for 60 s per pace (5 s
//!   with `--quick`), every implementation at once; the rows are the p50,
//!   p99, p99.9 and max of each fifth of the window.
//! - `saturated`: 1, 16, 64 and 256 round trips in flight (round trips/s).
//!
//! The takt rows run two nodes in this process (two connections, two
//! bridge threads); the asking side is a plain thread calling
//! `RemoteAgent::ask`, the answering side an agent on a one_thread
//! dispatcher. The run starts its own nats-server unless given a URL.

mod nats;
mod server;
mod takt;
mod tcp;

use std::time::{Duration, Instant};

use takt_sched::ThreadSpec;

use crate::error::LabError;
use crate::params;
use crate::result::{Better, Document, DocumentBuilder, ResultRow};
use crate::stats::quantile;
use takt_measure::suite::{RunContext, Suite};

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
}

/// Payload sizes of the `rtt` rows.
pub const SIZES: [usize; 3] = [64, 1024, 65536];
/// Paces of the `paced_rtt` rows, in milliseconds.
pub const PACES_MS: [u64; 3] = [75, 80, 100];
/// In-flight counts of the `saturated` rows.
pub const IN_FLIGHT: [usize; 4] = [1, 16, 64, 256];

const PACED_SIZE: usize = 64;
const SATURATED_SIZE: usize = 64;

/// How long the run takes, about.
pub fn expected_duration(o: &Options) -> Duration {
    let paced = paced_window(o) * PACES_MS.len() as u32;
    paced
        + if o.quick {
            // set-up, rtt and saturated rows: 9 s measured (24 s in all)
            Duration::from_secs(10)
        } else {
            Duration::from_secs(120)
        }
}

fn paced_window(o: &Options) -> Duration {
    Duration::from_secs(if o.quick { 5 } else { 60 })
}

/// The implementations, each ready to exchange.
struct Impls {
    takt: takt::TaktEcho,
    nats: nats::BareNats,
    tcp: tcp::TcpEcho,
    nagle: tcp::TcpEcho,
}

enum Which {
    Takt,
    Nats,
    Tcp,
}

impl Which {
    fn name(&self) -> &'static str {
        match self {
            Which::Takt => "takt",
            Which::Nats => "async-nats",
            Which::Tcp => "tcp-nodelay",
        }
    }
}

impl Impls {
    fn round_trip(&mut self, w: &Which, payload: &[u8]) -> Result<Duration, String> {
        match w {
            Which::Takt => self.takt.round_trip(payload),
            Which::Nats => self.nats.round_trip(payload),
            Which::Tcp => self.tcp.round_trip(payload),
        }
    }
}

impl Suite for Options {
    type Output = Document;
    type Error = LabError;

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

    fn run(&self, ctx: &RunContext) -> Result<Document, LabError> {
        run(self, ctx).map_err(|reason| {
            if ctx.is_cancelled() {
                LabError::Interrupted("remote")
            } else {
                LabError::Bench {
                    suite: "remote",
                    reason,
                }
            }
        })
    }
}

/// Checks for Ctrl-C between steps.
fn step(ctx: &RunContext, msg: &str) -> Result<(), String> {
    if ctx.is_cancelled() {
        return Err("interrupted".into());
    }
    ctx.step(msg);
    Ok(())
}

fn run(o: &Options, ctx: &RunContext) -> Result<Document, String> {
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
    let mut im = Impls {
        takt: takt::TaktEcho::start(&url, &o.thread)?,
        nats: nats::BareNats::start(&url)?,
        tcp: tcp::TcpEcho::start(tcp::Mode::NoDelay)?,
        nagle: tcp::TcpEcho::start(tcp::Mode::NagleSplit)?,
    };
    doc.note(format!(
        "server {url}; takt: two nodes in this process (two connections, two bridge threads {}), asked from a plain thread, answered by an agent",
        o.thread
    ));

    // Back-to-back round trips.
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
        for w in [Which::Takt, Which::Nats, Which::Tcp] {
            step(ctx, &format!("rtt {size} B: {}", w.name()))?;
            let n = count(size);
            let mut samples = Vec::with_capacity(runs);
            let mut cpu = Duration::ZERO;
            for r in 0..=runs {
                let c0 = takt_sched::process_cpu_time();
                let mut sum = Duration::ZERO;
                for _ in 0..n {
                    sum += im.round_trip(&w, &payload)?;
                }
                if r > 0 {
                    cpu += takt_sched::process_cpu_time().saturating_sub(c0);
                    samples.push(sum.as_secs_f64() * 1e6 / n as f64);
                }
            }
            doc.push(ResultRow::new(
                "rtt",
                w.name(),
                params![("bytes", size), ("round_trips", n)],
                "us",
                Better::Lower,
                samples,
                cpu.as_secs_f64() / runs as f64,
            ));
        }
    }

    // Paced: every implementation at once, each on its own thread.
    for pace in PACES_MS {
        step(
            ctx,
            &format!("paced {pace} ms for {} s", paced_window(o).as_secs()),
        )?;
        let cancel = ctx.cancel().flag();
        let cancel = &cancel;
        let window = paced_window(o);
        let c0 = takt_sched::process_cpu_time();
        let payload = vec![0x5a; PACED_SIZE];
        let lat: Vec<(&'static str, Result<Vec<f64>, String>)> = std::thread::scope(|s| {
            let Impls {
                takt,
                nats,
                tcp,
                nagle,
            } = &mut im;
            let p = &payload;
            let pace_d = Duration::from_millis(pace);
            let h = vec![
                (
                    "takt",
                    s.spawn(move || paced(|| takt.round_trip(p), pace_d, window, cancel)),
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
            h.into_iter()
                .map(|(n, j)| {
                    (
                        n,
                        j.join()
                            .unwrap_or_else(|_| Err("paced thread panicked".into())),
                    )
                })
                .collect()
        });
        let cpu = takt_sched::process_cpu_time()
            .saturating_sub(c0)
            .as_secs_f64()
            / runs as f64;
        for (name, l) in lat {
            let l = l?;
            let per = (l.len() / runs).max(1);
            for (q, label) in [(0.5, "p50"), (0.99, "p99"), (0.999, "p99.9"), (1.0, "max")] {
                let samples: Vec<f64> = l.chunks(per).take(runs).map(|c| quantile(c, q)).collect();
                doc.push(
                    ResultRow::new(
                        "paced_rtt",
                        name,
                        params![
                            ("bytes", PACED_SIZE),
                            ("pace_ms", pace),
                            ("quantile", label),
                            ("round_trips_per_run", per)
                        ],
                        "us",
                        Better::Lower,
                        samples,
                        cpu,
                    )
                    .with_note("cpu_s: the whole process over the window (all implementations ran at once)"),
                );
            }
        }
    }

    // Saturated.
    let payload = vec![0x5a; SATURATED_SIZE];
    let total = if o.quick { 2000 } else { 20000 };
    for k in IN_FLIGHT {
        for w in [Which::Takt, Which::Nats] {
            step(ctx, &format!("saturated {k} in flight: {}", w.name()))?;
            let mut samples = Vec::with_capacity(runs);
            let mut cpu = Duration::ZERO;
            for r in 0..=runs {
                let c0 = takt_sched::process_cpu_time();
                let d = match w {
                    Which::Takt => im.takt.saturate(&payload, k, total)?,
                    _ => im.nats.saturate(&payload, k, total)?,
                };
                if r > 0 {
                    cpu += takt_sched::process_cpu_time().saturating_sub(c0);
                    samples.push(total as f64 / d.as_secs_f64());
                }
            }
            doc.push(ResultRow::new(
                "saturated",
                w.name(),
                params![
                    ("bytes", SATURATED_SIZE),
                    ("in_flight", k),
                    ("round_trips", total)
                ],
                "rt/s",
                Better::Higher,
                samples,
                cpu.as_secs_f64() / runs as f64,
            ));
        }
    }
    let st = im.takt.stats();
    if st.queue_full + st.too_large + st.undeliverable + st.type_mismatch + st.slow_consumer > 0 {
        return Err(format!("takt-remote lost messages during the run: {st:?}"));
    }
    if o.quick {
        doc.note(format!(
            "--quick: paced windows of {} s (p99 and p99.9 of fewer than 100 round trips are the maximum), {} round trips per saturated run",
            paced_window(o).as_secs(),
            total
        ));
    }
    drop(im);
    drop(server);
    Ok(doc.finish())
}

/// One exchange every `pace` for `window` (or until `cancel`); the
/// latencies in µs, in order.
fn paced(
    mut exchange: impl FnMut() -> Result<Duration, String>,
    pace: Duration,
    window: Duration,
    cancel: &std::sync::atomic::AtomicBool,
) -> Result<Vec<f64>, String> {
    let t0 = Instant::now();
    let mut next = t0;
    let mut out = Vec::new();
    while t0.elapsed() < window {
        if cancel.load(std::sync::atomic::Ordering::Acquire) {
            return Err("interrupted".into());
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
    use std::sync::atomic::{AtomicBool, Ordering};

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
        let cancel = AtomicBool::new(false);
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
        cancel.store(true, Ordering::Release);
        let r = paced(
            || Ok(Duration::ZERO),
            Duration::from_millis(1),
            Duration::from_secs(60),
            &cancel,
        );
        assert!(r.is_err());
    }
}
