//! The sweep's [`Load`]: any load, with a scheduler profile's machine-wide
//! part set around each run and the paper's per-point quantities measured
//! beside it.
//!
//! Per run, besides what the inner load measures:
//! - **T_sip and K_rcv** for a server that timestamps its messages (takt:
//!   `/stats` before and after, the window's mean from the cumulative
//!   count × mean of each kind).
//! - **K_rcv estimated by Little's law** for any server: the socket's
//!   receive queue (`rx_queue` of `/proc/PID/net/udp`, bytes of
//!   `truesize`) sampled every [`SAMPLE_EVERY`] on a thread off the
//!   server's CPUs, divided by the bytes one datagram occupies there
//!   ([`truesize`], calibrated at start) gives the mean number of messages
//!   waiting L; with λ the messages sent to the server per second over the
//!   same interval, the mean wait is W = L / λ. It is the socket-queue wait
//!   (the paper's K_sockq^w, the bulk of K_rcv under load), labelled an
//!   estimate wherever it is shown.

use std::cell::RefCell;
use std::net::{SocketAddr, UdpSocket};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use takt_sched::{CpuSet, ThreadSpec};

use crate::capacity::{Load, LoadOutcome};
use crate::error::{io, Error, Result};
use crate::profile::Resolved;
use crate::server_stats::udp_sockets;
use crate::system::SystemSettings;
use crate::target::Target;

/// How often the receive queue is sampled.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(5);
/// Datagrams sent to calibrate [`truesize`].
const CALIBRATION_DATAGRAMS: u64 = 64;
/// The size of a typical message of the call flow, bytes.
const TYPICAL_MESSAGE: usize = 480;

/// What the sweep measures per run beside the inner load's outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PointExtra {
    /// Mean T_sip over the run's messages, µs (takt's timestamps).
    pub t_sip_us: Option<f64>,
    /// Mean K_rcv over the run's messages, µs (takt's timestamps).
    pub k_rcv_us: Option<f64>,
    /// K_rcv estimated by Little's law, µs (any server; an estimate).
    pub k_rcv_est_us: Option<f64>,
    /// Mean messages waiting in the server's socket.
    pub queue_msgs: f64,
    /// Receive-queue samples taken.
    pub queue_samples: u64,
    /// Messages sent to the server per second over the run.
    pub arrival_pps: f64,
    /// Wall time of the run, s.
    pub secs: f64,
}

/// The bytes one datagram of a typical message size (480 bytes) occupies in a UDP
/// socket's receive queue on loopback (its `truesize`, what `rx_queue`
/// counts), measured by sending 64 such datagrams to a socket that
/// does not read.
pub fn truesize() -> Result<f64> {
    let rx = UdpSocket::bind("127.0.0.1:0").map_err(io("binding a calibration socket"))?;
    let tx = UdpSocket::bind("127.0.0.1:0").map_err(io("binding a calibration socket"))?;
    let to = rx.local_addr().map_err(io("calibration socket address"))?;
    let msg = vec![b'x'; TYPICAL_MESSAGE];
    for _ in 0..CALIBRATION_DATAGRAMS {
        tx.send_to(&msg, to)
            .map_err(io("sending calibration datagrams"))?;
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let q: u64 = udp_sockets(None)
            .map_err(io("reading /proc/net/udp"))?
            .iter()
            .filter(|e| e.local == to)
            .map(|e| e.rx_queue)
            .sum();
        if q > 0 {
            let per = q as f64 / CALIBRATION_DATAGRAMS as f64;
            if per >= TYPICAL_MESSAGE as f64 {
                return Ok(per);
            }
        }
        if Instant::now() > deadline {
            return Err(Error::Config(format!(
                "calibrating the receive queue: {q} bytes queued after {CALIBRATION_DATAGRAMS} datagrams"
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Per-point results collected in run order.
pub type Extras = Rc<RefCell<Vec<PointExtra>>>;

/// The sweep's load (see the module docs).
#[derive(Debug)]
pub struct SweepLoad<L> {
    inner: L,
    profile: Resolved,
    sys: Rc<RefCell<SystemSettings>>,
    extras: Extras,
    truesize: f64,
    sampler_cpus: Option<CpuSet>,
}

impl<L: Load> SweepLoad<L> {
    /// Wraps `inner`; each run enters `profile`'s machine-wide part in
    /// `sys` first and pushes its [`PointExtra`] to `extras`. The sampler
    /// thread runs on `sampler_cpus` (keep it off the server's).
    pub fn new(
        inner: L,
        profile: Resolved,
        sys: Rc<RefCell<SystemSettings>>,
        truesize: f64,
        sampler_cpus: Option<CpuSet>,
    ) -> SweepLoad<L> {
        SweepLoad {
            inner,
            profile,
            sys,
            extras: Rc::default(),
            truesize,
            sampler_cpus,
        }
    }

    /// Where the per-run results go (index `i` is the `i`-th run).
    pub fn extras(&self) -> Extras {
        self.extras.clone()
    }
}

/// Σ count and Σ count × mean of a `/stats` field (`t_sip`, `k_rcv`) over
/// all kinds.
fn totals(stats: Option<&serde_json::Value>, field: &str) -> (f64, f64) {
    let Some(kinds) = stats.and_then(|s| s.as_object()) else {
        return (0.0, 0.0);
    };
    kinds.values().fold((0.0, 0.0), |(n, sum), k| {
        let c = k[field]["count"].as_f64().unwrap_or(0.0);
        let m = k[field]["mean"].as_f64().unwrap_or(0.0);
        (n + c, sum + c * m)
    })
}

/// The window's mean of `field` in µs from two cumulative snapshots.
fn window_mean_us(
    before: Option<&serde_json::Value>,
    after: Option<&serde_json::Value>,
    field: &str,
) -> Option<f64> {
    let (n0, s0) = totals(before, field);
    let (n1, s1) = totals(after, field);
    (n1 > n0).then(|| (s1 - s0) / (n1 - n0) / 1e3)
}

fn kinds(target: &Target) -> Result<Option<serde_json::Value>> {
    match target.takt_stats() {
        Some(s) => Ok(s?.get("kinds").cloned()),
        None => Ok(None),
    }
}

/// Samples the summed `rx_queue` of the server's sockets on `port` until
/// stopped; returns (Σ bytes, samples).
fn sample_queue(
    pid: Option<i32>,
    port: u16,
    stop: &AtomicBool,
) -> std::result::Result<(u64, u64), String> {
    let (mut sum, mut n) = (0u64, 0u64);
    // Acquire pairs with the Release store after the run.
    while !stop.load(Ordering::Acquire) {
        let q: u64 = udp_sockets(pid)
            .map_err(|e| format!("reading /proc/net/udp: {e}"))?
            .iter()
            .filter(|e| e.local.port() == port)
            .map(|e| e.rx_queue)
            .sum();
        sum += q;
        n += 1;
        std::thread::sleep(SAMPLE_EVERY);
    }
    Ok((sum, n))
}

impl<L: Load> Load for SweepLoad<L> {
    fn uas(&self) -> SocketAddr {
        self.inner.uas()
    }

    fn request_uri(&self) -> String {
        self.inner.request_uri()
    }

    fn route(&self, target: SocketAddr) -> Option<String> {
        self.inner.route(target)
    }

    fn fleet_point(&mut self) -> Option<crate::fleet::FleetPoint> {
        self.inner.fleet_point()
    }

    fn run(&mut self, target: &Target, rate_cps: f64) -> Result<LoadOutcome> {
        self.profile.enter(&mut self.sys.borrow_mut())?;
        let before = kinds(target)?;
        let stop = Arc::new(AtomicBool::new(false));
        let pid = target.pids().first().copied();
        let port = target.listen().port();
        let mut spec = ThreadSpec::new("sweep-rxq");
        if let Some(c) = &self.sampler_cpus {
            spec = spec.with_cpus(c.clone());
        }
        let sampler = {
            let stop = stop.clone();
            spec.spawn(move || sample_queue(pid, port, &stop))?
        };
        let start = Instant::now();
        let outcome = self.inner.run(target, rate_cps);
        let secs = start.elapsed().as_secs_f64();
        // Release pairs with the sampler's Acquire load.
        stop.store(true, Ordering::Release);
        let sampled = sampler
            .join()
            .map_err(|_| Error::Thread("the queue sampler panicked".into()))?;
        let outcome = outcome?;
        let (sum, n) = sampled.map_err(Error::Thread)?;
        let after = kinds(target)?;
        let queue_msgs = if n == 0 {
            0.0
        } else {
            sum as f64 / n as f64 / self.truesize
        };
        let arrival_pps = outcome.sent_to_server as f64 / secs.max(1e-9);
        self.extras.borrow_mut().push(PointExtra {
            t_sip_us: window_mean_us(before.as_ref(), after.as_ref(), "t_sip"),
            k_rcv_us: window_mean_us(before.as_ref(), after.as_ref(), "k_rcv"),
            k_rcv_est_us: (arrival_pps > 0.0 && n > 0).then(|| queue_msgs / arrival_pps * 1e6),
            queue_msgs,
            queue_samples: n,
            arrival_pps,
            secs,
        });
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn window_means_from_cumulative_snapshots() {
        let a = json!({"invite": {"t_sip": {"count": 100, "mean": 2000.0}},
                       "ack": {"t_sip": {"count": 100, "mean": 1000.0}}});
        let b = json!({"invite": {"t_sip": {"count": 200, "mean": 3000.0}},
                       "ack": {"t_sip": {"count": 100, "mean": 1000.0}},
                       "bye": {"t_sip": {"count": 100, "mean": 4000.0}}});
        // new messages: 100 invites at 4,000 ns and 100 byes at 4,000 ns
        let m = window_mean_us(Some(&a), Some(&b), "t_sip").unwrap();
        assert!((m - 4.0).abs() < 1e-9, "{m}");
        assert_eq!(window_mean_us(Some(&a), Some(&a), "t_sip"), None);
        assert_eq!(window_mean_us(None, None, "k_rcv"), None);
    }

    #[test]
    fn truesize_is_at_least_the_payload() {
        let t = truesize().unwrap();
        assert!(t >= TYPICAL_MESSAGE as f64 && t < 16_384.0, "{t}");
    }
}
