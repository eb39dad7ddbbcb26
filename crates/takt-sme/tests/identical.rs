//! Results never depend on the executor or the thread count: CSV and VCD
//! traces of several networks are byte-identical to the sequential ones.

mod common;

use common::*;
use takt_sme::*;

fn csv_trace(mut net: Network, exec: &Executor, cycles: u64) -> (String, u64) {
    net.set_debug(false);
    let (trace, buf) = Trace::csv_in_memory();
    net.set_trace(trace);
    // Two runs: continuing a run must not change anything either.
    let first = net.run(exec, cycles / 2).unwrap();
    let second = if first.halted {
        RunReport::default()
    } else {
        net.run(exec, cycles - cycles / 2).unwrap()
    };
    (buf.text(), first.cycles + second.cycles)
}

fn vcd_trace(mut net: Network, exec: &Executor, cycles: u64) -> String {
    let (trace, buf) = Trace::vcd_in_memory();
    net.set_trace(trace);
    net.run(exec, cycles).unwrap();
    buf.text()
}

fn check(name: &str, make: impl Fn() -> Network, cycles: u64) {
    let execs = executors();
    let (reference, ran) = csv_trace(make(), &execs[0], cycles);
    assert!(
        reference.lines().count() as u64 == ran + 1,
        "{name}: one row per cycle"
    );
    let vcd = vcd_trace(make(), &execs[0], ran);
    for e in &execs[1..] {
        let (got, got_ran) = csv_trace(make(), e, cycles);
        assert_eq!(
            got_ran,
            ran,
            "{name}: {} x{} ran a different number of cycles",
            e.kind(),
            e.threads()
        );
        assert!(
            got == reference,
            "{name}: {} x{} CSV trace differs",
            e.kind(),
            e.threads()
        );
        let got = vcd_trace(make(), e, ran);
        assert!(
            got == vcd,
            "{name}: {} x{} VCD trace differs",
            e.kind(),
            e.threads()
        );
    }
}

#[test]
fn ring_is_identical_everywhere() {
    check("ring", || ring(61).0, scaled(120));
}

#[test]
fn pipeline_with_delay_line_is_identical_everywhere() {
    check("pipeline", || pipeline(23).0, scaled(150));
}

#[test]
fn diamonds_halting_are_identical_everywhere() {
    // Halts part-way (around cycle 90): every executor stops at the same cycle.
    check("diamond", || diamond(9, 200.0).0, 400);
}

/// Under valgrind (scripts/valgrind.sh) everything runs ~50× slower.
fn under_valgrind() -> bool {
    std::env::var_os("TAKT_UNDER_VALGRIND").is_some()
}

fn scaled(cycles: u64) -> u64 {
    if under_valgrind() {
        (cycles / 4).max(8)
    } else {
        cycles
    }
}

#[test]
fn random_networks_are_identical_everywhere() {
    let seeds: &[u64] = if under_valgrind() { &[1] } else { &[1, 2, 3] };
    for &seed in seeds {
        check(
            &format!("random seed {seed}"),
            || random(97, seed),
            scaled(100),
        );
    }
}

#[test]
fn final_values_agree_with_the_model() {
    // After c cycles, ring process i holds (initial of i - c) + c.
    let n = 13;
    for e in executors() {
        let (mut net, sigs) = ring(n);
        net.run(&e, 40).unwrap();
        for (i, s) in sigs.iter().enumerate() {
            let from = (i + n * 40 - 40) % n;
            assert_eq!(
                net.value(*s),
                from as i64 * 1000 + 40,
                "{} x{}",
                e.kind(),
                e.threads()
            );
        }
    }
}

#[test]
fn thesis_executors_oversubscribed_are_identical() {
    // A stress of the thesis's shapes: one shared-cursor claim per process
    // (thesis_worklist) with more threads than cores, so workers are
    // preempted between claims, and the uneven static split with a
    // remainder on the last thread (97 processes over 4 and 7 threads).
    let cycles = scaled(300);
    let (reference, ran) = csv_trace(random(97, 5), &Executor::sequential(), cycles);
    for kind in [ExecutorKind::ThesisWorklist, ExecutorKind::ThesisStatic] {
        for threads in [4, 7] {
            let e = Executor::new(kind, threads).with_spin(takt_sched::SpinBudget::from_micros(5));
            let (got, got_ran) = csv_trace(random(97, 5), &e, cycles);
            assert_eq!(got_ran, ran, "{kind} x{threads}");
            assert!(got == reference, "{kind} x{threads}: CSV trace differs");
        }
    }
}
