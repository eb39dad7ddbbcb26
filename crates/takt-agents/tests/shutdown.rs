//! Shutdown is clean: every dispatcher and timer thread is joined, and
//! messages that can no longer be delivered are counted. (Its own test
//! binary: it counts the process's threads.)

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use takt_agents::{Agent, Ctx, Definer};

struct Member {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
}
impl Agent for Member {
    fn define(def: &mut Definer<Self>) {
        def.on(|_: &mut Member, _: &mut Ctx<Member>, _: u8| {});
    }
    fn on_start(&mut self, _: &mut Ctx<Self>) {
        self.log
            .lock()
            .unwrap()
            .push(format!("start {}", self.name));
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.log
            .lock()
            .unwrap()
            .push(format!("finish {}", self.name));
    }
}

#[test]
fn shutdown_joins_every_thread_and_counts_undelivered() {
    let before = thread_count();
    let rt = runtime();
    let d1 = rt.one_thread("one").unwrap();
    let d2 = rt.thread_pool("pool", 2).unwrap();
    let d3 = rt.active_obj("ao").unwrap();
    let d4 = rt.active_group("ag").unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("all");
    let m = |name| Member {
        name,
        log: log.clone(),
    };
    let a = coop.add(m("a"), &d1).unwrap();
    coop.add(m("b"), &d2).unwrap();
    coop.add(m("c"), &d3).unwrap();
    coop.add(m("d"), d4.group("g")).unwrap();
    let _ = coop.register().unwrap();
    let _timer = rt.send_after(&a, 1u8, Duration::from_secs(3600)).unwrap();
    assert!(thread_count() >= before + 6);
    let report = rt.shutdown();
    assert_eq!(report.coops_timed_out, 0);
    assert_eq!(
        log.lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with("finish"))
            .count(),
        4
    );
    assert!(eventually(|| thread_count() == before), "threads leaked");
    // After shutdown, sends are dropped and counted, never lost silently.
    a.send(7u32);
    assert!(a.stats().undelivered >= 1);
}
