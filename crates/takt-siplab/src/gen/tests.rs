//! The generator's own checks on real sockets (UAC straight to UAS).

use std::net::SocketAddr;
use std::time::Duration;

use super::{Cancel, GenConfig, GenReport, Generator};

/// 2,000 calls at 2,000 cps from a UAC straight to its UAS, its send loop
/// held over `stall` (from, to after the run's start).
fn stalled_run(stall: (Duration, Duration)) -> (GenConfig, GenReport) {
    let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut cfg = GenConfig::new(lo, 2000.0);
    cfg.uas_listen = lo;
    cfg.calls = Some(2000);
    cfg.ports = 2;
    cfg.drain = Duration::from_secs(2);
    cfg.timers.retransmit = false;
    let mut g = Generator::bind(&cfg).unwrap();
    let uas = g.uas_addr().unwrap();
    g.set_proxy(uas).unwrap();
    g.stall = Some(stall);
    let r = g.run(&Cancel::default()).unwrap();
    (cfg, r)
}

#[test]
fn a_generator_that_stalled_and_caught_up_in_a_burst_reads_no_more_than_the_offered_rate() {
    // the first half of the ~1 s window lost, then the due calls in bursts
    let (cfg, r) = stalled_run((Duration::ZERO, Duration::from_millis(500)));
    let u = r.uac.as_ref().unwrap();
    assert_eq!(u.attempted, 2000, "every planned call is placed");
    assert!(u.send_lag_us.max > 400_000.0, "the stall happened: {r:#?}");
    assert!(r.saturation.generator_bound, "and is flagged");
    // the reading this replaced, calls over the span of the actual sends,
    // is about twice the offered rate here
    let compressed = (u.attempted - 1) as f64 / r.send_s;
    assert!(compressed > 1.5 * cfg.cps, "{compressed}");
    // the achieved rate is the offered one, within the Poisson schedule's
    // sampling noise (3/√N)
    let tol = 3.0 / (u.attempted as f64).sqrt();
    assert!(r.achieved_cps <= cfg.cps * (1.0 + tol), "{r:#?}");
    assert!(r.achieved_cps >= cfg.cps * (1.0 - tol), "{r:#?}");
}

#[test]
fn a_generator_still_behind_at_the_end_reads_below_the_offered_rate() {
    // held from 0.8 s to 1.4 s: the last calls leave ~0.4 s after the plan
    let (cfg, r) = stalled_run((Duration::from_millis(800), Duration::from_millis(1400)));
    assert_eq!(r.uac.as_ref().unwrap().attempted, 2000);
    assert!(r.window_s > 1.3, "{r:#?}");
    assert!(r.achieved_cps < 0.8 * cfg.cps, "{r:#?}");
}
