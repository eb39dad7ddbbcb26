//! The SME model's rules, one test each, and the error for each misuse.

mod common;

use common::*;
use takt_sme::*;

struct Writer {
    out: Out<i32>,
    /// Write on cycles where `cycle % every == 0`; 0: never.
    every: u64,
    times: u32,
}
impl Process for Writer {
    fn step(&mut self, io: &mut Io<'_>) {
        if self.every != 0 && io.cycle() % self.every == 0 {
            for _ in 0..self.times {
                io.write(&self.out, io.cycle() as i32 + 100);
            }
        }
    }
}

struct Reader {
    input: In<i32>,
    seen: Out<i32>,
}
impl Process for Reader {
    fn step(&mut self, io: &mut Io<'_>) {
        let v = io.read(self.input);
        io.write(&self.seen, v);
    }
}

/// One writer with `def` writing every `every` cycles, one reader copying
/// what it reads. Returns (net, signal, copy).
fn pair(def: SignalDef<i32>, every: u64, times: u32) -> (Network, Signal<i32>, Signal<i32>) {
    let mut b = NetworkBuilder::new();
    let bus = b.bus("bus").unwrap();
    let s = b.signal(bus, "sig", def).unwrap();
    let copy = b.signal(bus, "copy", SignalDef::new(-1)).unwrap();
    b.process("writer", |p| Writer {
        out: p.output(s),
        every,
        times,
    })
    .unwrap();
    b.process("reader", |p| Reader {
        input: p.input(s),
        seen: p.output(copy),
    })
    .unwrap();
    (b.build().unwrap(), s, copy)
}

fn values_per_cycle(
    mut net: Network,
    s: Signal<i32>,
    copy: Signal<i32>,
    cycles: u64,
) -> Vec<(i32, i32)> {
    (0..cycles)
        .map(|_| {
            net.run(&Executor::sequential(), 1).unwrap();
            (net.value(s), net.value(copy))
        })
        .collect()
}

#[test]
fn reads_see_last_cycles_value() {
    // Writer writes 100 + cycle every cycle; reader sees it one cycle later.
    let (net, s, copy) = pair(SignalDef::new(7), 1, 1);
    let v = values_per_cycle(net, s, copy, 3);
    // Cycle 0: reader reads the initial (default) 7.
    assert_eq!(v, [(100, 7), (101, 100), (102, 101)]);
}

#[test]
fn unwritten_signal_resets_to_default() {
    let (net, s, copy) = pair(SignalDef::new(7), 2, 1);
    let v = values_per_cycle(net, s, copy, 4);
    assert_eq!(v, [(100, 7), (7, 100), (102, 7), (7, 102)]);
}

#[test]
fn unwritten_signal_holds_with_hold_policy() {
    let (net, s, copy) = pair(SignalDef::new(7).hold(), 2, 1);
    let v = values_per_cycle(net, s, copy, 5);
    assert_eq!(
        v,
        [(100, 7), (100, 100), (102, 100), (102, 102), (104, 102)]
    );
}

#[test]
fn initial_values_apply_before_cycle_zero() {
    let (net, s, copy) = pair(SignalDef::new(7).initial(55), 0, 1);
    let v = values_per_cycle(net, s, copy, 2);
    // Cycle 0 reads the initial value; then the never-written signal resets.
    assert_eq!(v, [(7, 55), (7, 7)]);
    let (net, s, copy) = pair(SignalDef::new(7).hold().initial(55), 0, 1);
    assert_eq!(values_per_cycle(net, s, copy, 2), [(55, 55), (55, 55)]);
}

#[test]
fn definedness_follows_the_policies() {
    let (mut net, s, _) = pair(SignalDef::new(7).initially_undefined(), 2, 1);
    assert!(!net.is_defined(s));
    net.run(&Executor::sequential(), 1).unwrap();
    assert!(net.is_defined(s));
    let (mut net, s, _) = pair(SignalDef::new(7).undefined_when_unwritten(), 2, 1);
    assert!(net.is_defined(s), "initially the default");
    net.run(&Executor::sequential(), 1).unwrap();
    assert!(net.is_defined(s), "written in cycle 0");
    net.run(&Executor::sequential(), 1).unwrap();
    assert!(!net.is_defined(s), "unwritten in cycle 1");
    let (mut net, s, _) = pair(SignalDef::new(7).hold().initially_undefined(), 0, 1);
    net.run(&Executor::sequential(), 3).unwrap();
    assert!(!net.is_defined(s), "held undefined stays undefined");
}

#[test]
fn csv_trace_marks_undefined_values() {
    let (mut net, _, _) = pair(SignalDef::new(7).undefined_when_unwritten(), 2, 1);
    let (t, buf) = Trace::csv_in_memory();
    net.set_trace(t);
    net.run(&Executor::sequential(), 3).unwrap();
    assert_eq!(
        buf.text(),
        "cycle,bus.sig,bus.copy\n0,100,7\n1,U,100\n2,102,7\n"
    );
}

#[test]
fn vcd_trace_is_well_formed() {
    let (mut net, _, _) = pair(SignalDef::new(7).undefined_when_unwritten(), 2, 1);
    let (t, buf) = Trace::vcd_in_memory();
    net.set_trace(t);
    net.run(&Executor::sequential(), 3).unwrap();
    let text = buf.text();
    assert!(text.contains("$scope module bus $end"), "{text}");
    assert!(text.contains("$var wire 32 ! sig $end"), "{text}");
    assert!(text.contains("$var wire 32 \" copy $end"), "{text}");
    // Before cycle 0: sig = 7, copy = -1 (two's complement).
    let all_ones = "1".repeat(32);
    assert!(
        text.contains(&format!(
            "$enddefinitions $end\n#0\n$dumpvars\nb111 !\nb{all_ones} \"\n$end\n"
        )),
        "{text}"
    );
    // Cycle 1 leaves sig unwritten (undefined policy): x.
    assert!(
        text.contains("#1\nb1100100 !\nb111 \"\n#2\nbx !\nb1100100 \"\n#3\n"),
        "{text}"
    );
}

#[test]
fn double_write_names_process_bus_and_signal() {
    for e in executors() {
        let (mut net, _, _) = pair(SignalDef::new(7), 3, 2);
        let err = net.run(&e, 10).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cycle 0: process \"writer\" wrote signal bus.sig twice in one cycle",
            "{} x{}",
            e.kind(),
            e.threads()
        );
        // The failing cycle completed; the network can go on.
        assert_eq!(net.cycle(), 1);
    }
}

#[test]
fn undefined_read_is_reported_in_debug_mode_only() {
    let (mut net, _, _) = pair(SignalDef::new(7).initially_undefined(), 1, 1);
    net.run(&Executor::sequential(), 2).unwrap();
    let (mut net, _, _) = pair(SignalDef::new(7).initially_undefined(), 1, 1);
    net.set_debug(true);
    let err = net
        .run(&Executor::new(ExecutorKind::Static, 2), 2)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cycle 0: process \"reader\" read signal bus.sig while it was undefined"
    );
    // Written in cycle 0: reading it in cycle 1 is fine.
    net.run(&Executor::sequential(), 1).unwrap();
}

#[test]
fn halting_stops_at_the_cycle_boundary() {
    for e in executors() {
        let (mut net, outs) = diamond(3, 20.0);
        let r = net.run(&e, 1000).unwrap();
        assert!(r.halted);
        let cycles = r.cycles;
        // The cycle that halted was committed: some join exceeds 20 now...
        assert!(outs.iter().any(|&o| net.value(o) > 20.0));
        // ...and none did one cycle earlier.
        let (mut again, outs) = diamond(3, 20.0);
        again.run(&Executor::sequential(), cycles - 1).unwrap();
        assert!(outs.iter().all(|&o| again.value(o) <= 20.0));
    }
}

#[test]
fn two_writers_are_rejected_when_building() {
    let mut b = NetworkBuilder::new();
    let bus = b.bus("bus").unwrap();
    let s = b.signal(bus, "sig", SignalDef::new(0i32)).unwrap();
    b.process("first", |p| Writer {
        out: p.output(s),
        every: 1,
        times: 1,
    })
    .unwrap();
    let err = b
        .process("second", |p| Writer {
            out: p.output(s),
            every: 1,
            times: 1,
        })
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "signal bus.sig has two writers: process \"first\" and process \"second\" (a signal has exactly one writer)"
    );
    // The rejected process left no trace: the network still builds.
    assert!(b.build().is_ok());
}

struct TwoOuts {
    a: Out<i32>,
    b: Out<i32>,
}
impl Process for TwoOuts {
    fn step(&mut self, io: &mut Io<'_>) {
        io.write(&self.a, 1);
        io.write(&self.b, 1);
    }
}

#[test]
fn building_reports_each_misuse() {
    let mut b = NetworkBuilder::new();
    let bus = b.bus("bus").unwrap();
    let s = b.signal(bus, "sig", SignalDef::new(0i32)).unwrap();
    let err = b
        .process("twice", |p| TwoOuts {
            a: p.output(s),
            b: p.output(s),
        })
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "process \"twice\" claims signal bus.sig as an output twice"
    );
    assert_eq!(
        b.bus("bus").unwrap_err().to_string(),
        "duplicate bus name \"bus\""
    );
    assert_eq!(
        b.signal(bus, "sig", SignalDef::new(0u8))
            .unwrap_err()
            .to_string(),
        "duplicate signal name \"bus.sig\""
    );
    assert_eq!(b.bus("").unwrap_err().to_string(), "empty bus name");
    let orphan = b.signal(bus, "orphan", SignalDef::new(0i32)).unwrap();
    b.process("w", |p| Writer {
        out: p.output(s),
        every: 1,
        times: 1,
    })
    .unwrap();
    let err = b
        .process("w", |p| Writer {
            out: p.output(orphan),
            every: 1,
            times: 1,
        })
        .unwrap_err();
    assert_eq!(err.to_string(), "duplicate process name \"w\"");
    assert_eq!(
        b.build().unwrap_err().to_string(),
        "signal bus.orphan has no writer (every signal needs exactly one writing process)"
    );
}

#[test]
fn handles_of_another_network_are_rejected() {
    let mut other = NetworkBuilder::new();
    let obus = other.bus("x").unwrap();
    let foreign = other.signal(obus, "s", SignalDef::new(0i32)).unwrap();
    let mut b = NetworkBuilder::new();
    assert_eq!(
        b.signal(obus, "s", SignalDef::new(0i32))
            .unwrap_err()
            .to_string(),
        "bus handle #0 does not belong to this network builder"
    );
    let err = b
        .process("p", |p| Writer {
            out: p.output(foreign),
            every: 1,
            times: 1,
        })
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "process \"p\" uses a signal handle of another network"
    );
}

#[repr(align(32))]
#[derive(Clone, Copy, Debug)]
struct Wide(#[allow(dead_code)] u8);

#[test]
fn over_aligned_signal_types_are_rejected() {
    let mut b = NetworkBuilder::new();
    let bus = b.bus("bus").unwrap();
    let err = b.signal(bus, "w", SignalDef::new(Wide(0))).unwrap_err();
    assert!(
        err.to_string().contains("needs alignment 32, at most 16"),
        "{err}"
    );
}

struct Thief {
    stolen: Option<Out<i32>>,
}
impl Process for Thief {
    fn step(&mut self, io: &mut Io<'_>) {
        if let Some(o) = &self.stolen {
            io.write(o, 5);
        }
    }
}

#[test]
fn writing_through_a_moved_port_is_an_error() {
    // `owner` claims the port, but its state hands it to `thief`.
    let mut b = NetworkBuilder::new();
    let bus = b.bus("bus").unwrap();
    let s = b.signal(bus, "sig", SignalDef::new(0i32)).unwrap();
    let mut port = None;
    b.process("owner", |p| {
        port = Some(p.output(s));
        Thief { stolen: None }
    })
    .unwrap();
    b.process("thief", |_| Thief {
        stolen: port.take(),
    })
    .unwrap();
    let net = b.build().unwrap();
    let mut nets = vec![net];
    for e in executors() {
        let mut net = nets.pop().unwrap();
        let err = net.run(&e, 3).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("cycle {}: process \"thief\" wrote signal bus.sig, which belongs to process \"owner\"", net.cycle() - 1),
            "{} x{}", e.kind(), e.threads()
        );
        nets.push(net);
    }
}

struct Bomb;
impl Process for Bomb {
    fn step(&mut self, io: &mut Io<'_>) {
        if io.cycle() == 2 {
            panic!("boom");
        }
    }
}

#[test]
fn a_panicking_process_poisons_the_network_without_hanging() {
    for e in executors() {
        let mut b = NetworkBuilder::new();
        let (mut net, _) = {
            for i in 0..5 {
                b.process(format!("bomb{i}"), |_| Bomb).unwrap();
            }
            (b.build().unwrap(), ())
        };
        let err = net.run(&e, 10).unwrap_err();
        assert_eq!(err.to_string(), "cycle 2: process \"bomb0\" panicked: boom");
        assert!(matches!(net.run(&e, 1), Err(RunError::Poisoned)));
    }
}

#[test]
fn bad_configuration_is_an_error() {
    let (mut net, _) = ring(3);
    let err = net
        .run(&Executor::new(ExecutorKind::Static, 0), 1)
        .unwrap_err();
    assert!(err.to_string().contains("0 threads requested"), "{err}");
    assert!(
        matches!(err, RunError::Threads { requested: 0, max } if max == takt_sme::MAX_THREADS),
        "{err:?}"
    );
    let unknown = "nope".parse::<ExecutorKind>().unwrap_err();
    assert_eq!(unknown.name, "nope");
    assert_eq!(
        unknown.to_string(),
        "unknown executor \"nope\" (expected sequential, static, worklist, stealing, balanced, thesis_static or thesis_worklist)"
    );
    assert_eq!(
        "balanced".parse::<ExecutorKind>().unwrap(),
        ExecutorKind::Balanced
    );
}

#[test]
fn more_threads_than_processes_work() {
    let (mut net, sigs) = ring(2);
    net.run(&Executor::new(ExecutorKind::Stealing, 3), 5)
        .unwrap();
    assert_eq!(net.value(sigs[0]), 1000 + 5);
}

#[test]
fn balanced_recuts_when_costs_drift() {
    // Cost per process changes over time; with a tight drift threshold the
    // executor re-cuts, and results stay those of the reference.
    let (mut a, sa) = ring(40);
    let (mut b, sb) = ring(40);
    a.run(&Executor::sequential(), 200).unwrap();
    let r = b
        .run(
            &Executor::new(ExecutorKind::Balanced, 2).with_rebalance(10, 1.0),
            200,
        )
        .unwrap();
    assert_eq!(r.cycles, 200);
    for (x, y) in sa.iter().zip(&sb) {
        assert_eq!(a.value(*x), b.value(*y));
    }
}

#[test]
fn every_process_steps_once_per_cycle_split_across_workers() {
    for e in executors() {
        let (mut net, _) = ring(10);
        let r = net.run(&e, 3).unwrap();
        assert_eq!(r.last_cycle_processes.len(), e.threads());
        assert_eq!(
            r.last_cycle_processes.iter().sum::<u32>(),
            10,
            "{} x{}",
            e.kind(),
            e.threads()
        );
        if e.kind() == ExecutorKind::Static {
            // Even contiguous partitions.
            let (lo, hi) = (10 / e.threads() as u32, 10u32.div_ceil(e.threads() as u32));
            assert!(
                r.last_cycle_processes.iter().all(|&n| n == lo || n == hi),
                "{r:?}"
            );
        }
        if e.kind() == ExecutorKind::ThesisStatic {
            // The thesis's split: ⌊10/t⌋ each, the rest on the last thread.
            let q = 10 / e.threads() as u32;
            let (last, first) = r.last_cycle_processes.split_last().unwrap();
            assert!(first.iter().all(|&n| n == q), "{r:?}");
            assert_eq!(*last, 10 - q * (e.threads() as u32 - 1), "{r:?}");
        }
    }
}
