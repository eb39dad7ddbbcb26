//! The generator-bound flag, in a test binary of its own: its busy loops
//! would starve the other tests' generators if they ran beside it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use takt_sched::{CpuSet, ThreadSpec};
use takt_siplab::gen::{Cancel, GenConfig, Generator};

fn config(cps: f64, calls: u64) -> GenConfig {
    let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut c = GenConfig::new(lo, cps);
    c.uas_listen = lo;
    c.calls = Some(calls);
    c.ports = 4;
    c.drain = Duration::from_secs(2);
    c
}

#[test]
fn the_generator_bound_flag_fires_when_its_cpu_is_shared_with_busy_loops() {
    let cpu = CpuSet::online().iter().next().unwrap();
    // UAC straight to the UAS (no proxy): only the generator is measured
    let mut cfg = config(4000.0, 4000);
    cfg.spec = ThreadSpec::new("gen").with_cpus(CpuSet::single(cpu));
    let mut g = Generator::bind(&cfg).unwrap();
    let uas = g.uas_addr().unwrap();
    g.set_proxy(uas).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..3)
        .map(|i| {
            let stop = Arc::clone(&stop);
            ThreadSpec::new(format!("busy{i}"))
                .with_cpus(CpuSet::single(cpu))
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
                .unwrap()
        })
        .collect();
    let r = g.run(&Cancel::default());
    stop.store(true, Ordering::Relaxed);
    for b in busy {
        b.join().unwrap();
    }
    let r = r.unwrap();
    assert!(r.saturation.generator_bound, "{r:#?}");
    assert!(!r.saturation.reasons.is_empty());
    // it fell behind but placed every call
    assert_eq!(r.uac.as_ref().unwrap().attempted, 4000);
}
