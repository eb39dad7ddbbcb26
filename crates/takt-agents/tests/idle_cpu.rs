//! An idle runtime parks: after the spin budget its threads use < 1% CPU.
//! (Its own test binary: CPU time is per process, so no other test may run
//! beside it.)

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use takt_agents::{Addr, Agent, Config, Ctx, Definer, Runtime};

struct Member {
    log: Arc<Mutex<u32>>,
}
impl Agent for Member {
    fn define(def: &mut Definer<Self>) {
        def.on(|_: &mut Member, _: &mut Ctx<Member>, _: u8| {});
    }
    fn on_start(&mut self, _: &mut Ctx<Self>) {
        *self.log.lock().unwrap() += 1;
    }
}

#[test]
fn idle_runtime_uses_under_one_percent_cpu() {
    let rt = Runtime::new(Config::default()); // default 20 µs spin
    let d1 = rt.one_thread("one").unwrap();
    let d2 = rt.thread_pool("pool", 2).unwrap();
    let d3 = rt.work_stealing("ws", 2).unwrap();
    let d4 = rt.priority("prio").unwrap();
    let log = Arc::new(Mutex::new(0));
    let mut coop = rt.coop("idle");
    let m = || Member { log: log.clone() };
    let a: Addr<Member> = coop.add(m(), &d1).unwrap();
    coop.add(m(), &d2).unwrap();
    coop.add(m(), &d3).unwrap();
    coop.add(m(), d4.priority(3)).unwrap();
    let coop = coop.register().unwrap();
    // A far timer keeps the timer thread alive (and asleep).
    let every = rt
        .send_every(&a, 0u8, Duration::from_secs(10), Duration::from_secs(10))
        .unwrap();
    assert!(eventually(|| *log.lock().unwrap() == 4));
    std::thread::sleep(Duration::from_millis(100));
    let c0 = takt_sched::process_cpu_time();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    let cpu = takt_sched::process_cpu_time() - c0;
    let wall = t0.elapsed();
    // Under valgrind (scripts/valgrind.sh) CPU time measures the emulator.
    let under_valgrind = std::env::var_os("TAKT_UNDER_VALGRIND").is_some();
    assert!(
        under_valgrind || cpu.as_secs_f64() < 0.01 * wall.as_secs_f64(),
        "idle runtime used {cpu:?} CPU in {wall:?}"
    );
    every.cancel();
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
}
