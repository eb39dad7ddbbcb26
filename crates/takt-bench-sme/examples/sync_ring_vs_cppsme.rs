//! sync_ring of 20000 processes on takt-sme and on C++SME, interleaved
//! run by run (so both see the same machine), one and two threads:
//! `cargo run --release -p takt-bench-sme --example sync_ring_vs_cppsme
//! [CYCLES] [RUNS]` (default 1000 cycles, 5 runs; needs `bash
//! scripts/peers.sh cppsme`). Prints the median ns per process-step and
//! each side's two-thread speedup (takt's over its sequential executor,
//! C++SME's over its own one-thread run of the same executor).

use takt_bench_sme::cppsme::{estimate, CppSme, PeerRun, Program, Sched};
use takt_bench_sme::sync_ring;
use takt_measure::stats::median;
use takt_sme::{Executor, ExecutorKind};

const PROCESSES: usize = 20_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let cycles: u64 = args.next().map_or(Ok(1000), |a| a.parse())?;
    let runs: usize = args.next().map_or(Ok(5), |a| a.parse())?;
    let cpp = CppSme::locate()?;
    let takt: Vec<(ExecutorKind, usize)> = vec![
        (ExecutorKind::Sequential, 1),
        (ExecutorKind::Static, 2),
        (ExecutorKind::Worklist, 2),
        (ExecutorKind::Stealing, 2),
        (ExecutorKind::Balanced, 2),
        (ExecutorKind::ThesisStatic, 2),
        (ExecutorKind::ThesisWorklist, 2),
    ];
    let peer: Vec<PeerRun> = [Sched::Static, Sched::Worklist]
        .into_iter()
        .flat_map(|sched| {
            [1, 2].map(|threads| PeerRun {
                program: Program::RingDynamic,
                sched,
                processes: PROCESSES,
                cycles,
                threads,
            })
        })
        .collect();
    let mut t_ns = vec![Vec::new(); takt.len()];
    let mut p_ns = vec![Vec::new(); peer.len()];
    for rep in 0..=runs {
        for (i, &(kind, threads)) in takt.iter().enumerate() {
            let mut ring = sync_ring(PROCESSES);
            let r = ring.net.run(&Executor::new(kind, threads), cycles)?;
            if rep > 0 {
                t_ns[i].push(r.elapsed.as_nanos() as f64 / (PROCESSES as f64 * cycles as f64));
            }
        }
        for (i, run) in peer.iter().enumerate() {
            let s = cpp.run_once(run, estimate(run), None, &|| false)?;
            if rep > 0 {
                p_ns[i].push(s.ns_per_step);
            }
        }
    }
    let seq = median(&t_ns[0]);
    println!("sync_ring {PROCESSES} × {cycles} cycles, {runs} runs (+1 warm-up), medians:");
    for (i, &(kind, threads)) in takt.iter().enumerate() {
        let m = median(&t_ns[i]);
        println!(
            "  takt   {:>15} ×{threads}: {m:8.2} ns/step  speedup {:.2}",
            kind.name(),
            seq / m
        );
    }
    for (i, run) in peer.iter().enumerate() {
        let m = median(&p_ns[i]);
        let one = median(&p_ns[i - (run.threads - 1)]);
        println!(
            "  cppsme {:>15} ×{}: {m:8.2} ns/step  speedup {:.2}",
            run.sched.name(),
            run.threads,
            one / m
        );
    }
    println!(
        "  one thread: C++SME static / takt sequential = {:.1}×",
        median(&p_ns[0]) / seq
    );
    Ok(())
}
