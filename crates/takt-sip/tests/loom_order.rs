//! Loom models of the stateless proxy's response ordering gate
//! (`takt_sip::proxy::order::Gate`).
//!
//! Property, over every interleaving (bounded preemptions): workers that
//! send what the gate admits while holding its ticket never put a
//! provisional response after a final response of the same transaction
//! that arrived later; a final response is always sent.
#![cfg(loom)]

use loom::sync::{Arc, Mutex};
use takt_sip::proxy::order::Gate;

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b
}

/// One worker's handling of a response: admit, send (log) under the ticket.
fn worker(g: &Gate, log: &Mutex<Vec<(u16, u64)>>, key: u64, code: u16, arrival: u64) {
    let mut t = g.admit(key, arrival, code < 200);
    if t.forward {
        if code >= 200 {
            t.sent_final(arrival);
        }
        log.lock().unwrap().push((code, arrival));
    }
    drop(t);
}

fn check(log: &[(u16, u64)]) {
    for (i, &(code, arr)) in log.iter().enumerate() {
        if code < 200 {
            // no final that arrived later went before it
            assert!(
                !log[..i].iter().any(|&(c, a)| c >= 200 && a > arr),
                "{log:?}"
            );
        }
    }
    assert!(
        log.iter().any(|&(c, _)| c >= 200),
        "a final is always sent: {log:?}"
    );
}

#[test]
fn ringing_and_ok_from_two_workers() {
    builder().check(|| {
        let g = Arc::new(Gate::with_shards(2));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (g2, l2) = (g.clone(), log.clone());
        let ok = loom::thread::spawn(move || worker(&g2, &l2, 7, 200, 20));
        worker(&g, &log, 7, 180, 10);
        ok.join().unwrap();
        check(&log.lock().unwrap());
    });
}

#[test]
fn ringing_ok_and_a_retransmitted_ok_from_three_workers() {
    builder().check(|| {
        let g = Arc::new(Gate::with_shards(2));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (g2, l2) = (g.clone(), log.clone());
        let ok = loom::thread::spawn(move || worker(&g2, &l2, 9, 200, 20));
        let (g3, l3) = (g.clone(), log.clone());
        let again = loom::thread::spawn(move || worker(&g3, &l3, 9, 200, 30));
        worker(&g, &log, 9, 183, 10);
        ok.join().unwrap();
        again.join().unwrap();
        let l = log.lock().unwrap();
        check(&l);
        assert_eq!(l.iter().filter(|&&(c, _)| c == 200).count(), 2);
    });
}
