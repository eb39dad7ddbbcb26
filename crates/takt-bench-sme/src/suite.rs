//! The suite: its plan (full and `--quick`), the configurations it runs
//! and the rows it writes.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use takt_sched::{SpinBudget, ThreadSpec};
use takt_sme::{Executor, ExecutorKind};

use takt_measure::params;
use takt_measure::result::{Better, Document, DocumentBuilder, ResultRow};
use takt_measure::sampler::{measure, Repetitions};
use takt_measure::suite::{RunContext, Suite};

use crate::cppsme::CppSme;
use crate::error::SmeError;
use crate::networks::{compute_ring, divide, floor_ring, sync_ring, Ring};
use crate::published;

/// Least warm-up time per ring configuration (see `SmeBench::measure_ring`).
const MIN_WARMUP: Duration = Duration::from_millis(100);

/// Divisions per step in the compute-dominated benchmarks (Listing 2).
pub const DIVISIONS: u32 = 10_000;
/// The light half of `uneven` (a fourth of the heavy half).
pub const LIGHT_DIVISIONS: u32 = 2_500;

/// The benchmarks of the suite, by name.
pub const BENCHMARKS: [&str; 5] = [
    "sync_ring",
    "compute_ring",
    "weak_scaling",
    "uneven",
    "sync_cost",
];

/// How to run the suite.
#[derive(Clone, Debug)]
pub struct SmeBench {
    /// The reduced run (targets are judged on it).
    pub quick: bool,
    /// Thread counts run: 1..=max_threads.
    pub max_threads: usize,
    /// Spec the executor threads are made from (`--cpus`, `--sched`).
    pub spec: ThreadSpec,
    /// Barrier spin budget (`--spin`).
    pub spin: SpinBudget,
    /// Warm-up and measured runs per configuration.
    pub reps: Repetitions,
    /// Benchmarks to run (empty: all).
    pub only: Vec<String>,
    /// Also run C++SME's own programs (`--peers`; see [`crate::cppsme`]).
    pub peers: bool,
}

/// One configuration's shape.
#[derive(Clone, Copy, Debug)]
struct Shape {
    processes: usize,
    cycles: u64,
}

/// The parameter sets of a run.
#[derive(Clone, Debug)]
struct Plan {
    sync: Vec<Shape>,
    compute: Vec<Shape>,
    /// (processes, cycles per thread, ratio label).
    weak: Vec<(usize, u64, &'static str)>,
    uneven: Vec<Shape>,
    sync_cost_cycles: u64,
}

impl Plan {
    fn full() -> Plan {
        Plan {
            sync: vec![
                Shape {
                    processes: 20_000,
                    cycles: 100_000,
                },
                Shape {
                    processes: 50_000,
                    cycles: 100_000,
                },
            ],
            compute: vec![
                Shape {
                    processes: 200,
                    cycles: 2_000,
                },
                Shape {
                    processes: 2_000,
                    cycles: 200,
                },
            ],
            weak: vec![(250, 500, "2:1"), (500, 500, "1:1"), (1000, 500, "1:2")],
            uneven: vec![
                Shape {
                    processes: 200,
                    cycles: 2_000,
                },
                Shape {
                    processes: 2_000,
                    cycles: 200,
                },
            ],
            sync_cost_cycles: 1_000_000,
        }
    }

    fn quick() -> Plan {
        Plan {
            sync: vec![
                Shape {
                    processes: 20_000,
                    cycles: 1_000,
                },
                Shape {
                    processes: 50_000,
                    cycles: 400,
                },
            ],
            compute: vec![
                Shape {
                    processes: 200,
                    cycles: 20,
                },
                Shape {
                    processes: 2_000,
                    cycles: 2,
                },
            ],
            weak: vec![(10, 20, "2:1"), (20, 20, "1:1"), (40, 20, "1:2")],
            uneven: vec![Shape {
                processes: 200,
                cycles: 20,
            }],
            sync_cost_cycles: 50_000,
        }
    }

    const QUICK_NOTE: &'static str = "--quick: same networks and work per step as the thesis, fewer cycles: \
        sync_ring 20000 processes × 1000 cycles and 50000 × 400 (thesis: 100000), \
        compute_ring 200 × 20 and 2000 × 2 (thesis: 2000 and 200), \
        weak_scaling 10/20/40 processes × 20·threads cycles (thesis: 250/500/1000 × 500·threads, same ratios), \
        uneven 200 × 20 only (thesis: 200 × 2000 and 2000 × 200), sync_cost 50000 cycles";
}

/// One compute step (`divide(DIVISIONS)`) on this thread: the fastest of
/// seven, so that a preemption during the calibration does not inflate
/// an estimate by orders of magnitude.
pub fn compute_step() -> Duration {
    (0..7)
        .map(|_| {
            let t0 = Instant::now();
            std::hint::black_box(divide(std::hint::black_box(DIVISIONS)));
            t0.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// Per-thread-count executors: sequential once, every parallel flavour at
/// every thread count.
fn executors(max_threads: usize) -> Vec<(ExecutorKind, usize)> {
    let mut v = vec![(ExecutorKind::Sequential, 1)];
    for kind in &ExecutorKind::ALL[1..] {
        for t in 1..=max_threads {
            v.push((*kind, t));
        }
    }
    v
}

impl Suite for SmeBench {
    type Output = Document;
    type Error = SmeError;

    fn name(&self) -> &str {
        "sme"
    }

    fn estimate(&self) -> Duration {
        SmeBench::estimate(self)
    }

    fn describe(&self) -> String {
        format!(
            "{} parameters, threads 1..={}{}",
            if self.quick {
                "--quick"
            } else {
                "the thesis's full"
            },
            self.max_threads,
            if self.peers {
                format!(
                    "; C++SME's own programs beside (about {:.0} s of it)",
                    self.peer_estimate().as_secs_f64()
                )
            } else {
                String::new()
            }
        )
    }

    fn run(&self, ctx: &RunContext) -> Result<Document, SmeError> {
        SmeBench::run(self, ctx)
    }
}

thread_local! {
    /// Set while [`SmeBench::synthetic_rows`] builds rows from fixed samples.
    static SYNTHETIC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl SmeBench {
    /// The largest thread count when none is given: the CPUs of `cpus`
    /// (`--cpus`), else every online CPU.
    pub fn default_threads(cpus: Option<&takt_sched::CpuSet>) -> usize {
        match cpus {
            Some(c) => c.len().max(1),
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    /// Every kind of row the suite can emit (two threads, every benchmark),
    /// each from fixed samples: the input of the document-shape snapshot
    /// test. Runs nothing.
    #[doc(hidden)]
    pub fn synthetic_rows() -> Vec<ResultRow> {
        let bench = SmeBench {
            quick: true,
            max_threads: 2,
            spec: ThreadSpec::default(),
            spin: SpinBudget::DEFAULT,
            reps: Repetitions { warmup: 0, runs: 5 },
            only: Vec::new(),
            peers: true,
        };
        SYNTHETIC.set(true);
        let doc = bench.run_rows(&mut |_| Ok(()), &|| false);
        SYNTHETIC.set(false);
        doc.expect("synthetic rows").results
    }

    pub(crate) fn wants(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == name)
    }

    fn executor(&self, kind: ExecutorKind, threads: usize) -> Executor {
        Executor::new(kind, threads)
            .with_spec(self.spec.clone())
            .with_spin(self.spin)
    }

    fn plan(&self) -> Plan {
        if self.quick {
            Plan::quick()
        } else {
            Plan::full()
        }
    }

    /// A rough duration of the whole run, from a quick calibration of one
    /// compute step ([`compute_step`]) and an assumed ~3 ns per
    /// synchronization-ring step, plus, with `peers`, C++SME's runs at
    /// their estimates ([`crate::cppsme::estimate`]).
    pub fn estimate(&self) -> Duration {
        self.estimate_with_step(compute_step())
    }

    /// [`SmeBench::estimate`] for a compute step (`divide(DIVISIONS)`)
    /// taking `step`; never less than 20 µs a step.
    pub fn estimate_with_step(&self, step: Duration) -> Duration {
        let step_ns = (step.as_nanos() as f64).max(20_000.0);
        let plan = self.plan();
        let runs = (self.reps.warmup + self.reps.runs) as f64;
        let execs = executors(self.max_threads);
        // Wall per configuration ≈ work / threads (+1 for the floor row).
        let spread: f64 = execs.iter().map(|&(_, t)| 1.0 / t as f64).sum::<f64>() + 1.0;
        let mut secs = 0.0;
        if self.wants("sync_ring") {
            for s in &plan.sync {
                secs += s.processes as f64 * s.cycles as f64 * 3e-9 * spread * runs;
            }
        }
        if self.wants("compute_ring") {
            for s in &plan.compute {
                secs += s.processes as f64 * s.cycles as f64 * step_ns * 1e-9 * spread * runs;
            }
        }
        if self.wants("weak_scaling") {
            for &(p, c, _) in &plan.weak {
                secs += p as f64 * c as f64 * step_ns * 1e-9 * execs.len() as f64 * runs;
            }
        }
        if self.wants("uneven") {
            for s in &plan.uneven {
                secs += s.processes as f64 * s.cycles as f64 * step_ns * 0.625e-9 * spread * runs;
            }
        }
        // The minimum warm-up of every executor configuration of each shape.
        let shapes = [
            ("sync_ring", plan.sync.len()),
            ("compute_ring", plan.compute.len()),
            ("weak_scaling", plan.weak.len()),
            ("uneven", plan.uneven.len()),
            ("sync_cost", 1),
        ];
        let warm: usize = shapes
            .iter()
            .filter(|(name, _)| self.wants(name))
            .map(|(_, n)| n)
            .sum();
        secs += MIN_WARMUP.as_secs_f64() * (warm * execs.len()) as f64;
        Duration::from_secs_f64(secs) + self.peer_estimate()
    }

    /// Runs the suite, one progress step per configuration; stops with
    /// [`SmeError::Interrupted`] at the next configuration once `ctx` is
    /// cancelled.
    pub fn run(&self, ctx: &RunContext) -> Result<Document, SmeError> {
        let mut progress = |line: &str| {
            if ctx.is_cancelled() {
                return Err(SmeError::Interrupted);
            }
            ctx.step(line);
            Ok(())
        };
        self.run_rows(&mut progress, &|| ctx.is_cancelled())
    }

    fn run_rows(
        &self,
        progress: &mut dyn FnMut(&str) -> Result<(), SmeError>,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Document, SmeError> {
        let plan = self.plan();
        let mut doc = DocumentBuilder::start("sme");
        // C++SME's build, or why there is none (said in the notes).
        let build = match (self.peers, SYNTHETIC.get()) {
            (false, _) => Err(None),
            (true, true) => Ok(None),
            (true, false) => CppSme::locate().map(Some).map_err(Some),
        };
        if self.peers {
            doc.note(crate::peers::NOTE);
        }
        if let Err(Some(why)) = &build {
            doc.note(format!("cppsme: not measured: {why}"));
        }
        let peer_rows = |doc: &mut DocumentBuilder,
                         name: &str,
                         progress: &mut dyn FnMut(&str) -> Result<(), SmeError>|
         -> Result<(), SmeError> {
            match &build {
                Ok(b) => self.peer_rows(doc, name, b.as_ref(), progress, cancelled),
                Err(_) => Ok(()),
            }
        };
        if self.quick {
            doc.note(Plan::QUICK_NOTE);
        }
        doc.note(format!(
            "executor threads from spec `{}`, barrier spin {}; {} warm-up + {} measured runs each; \
             published: the thesis's Appendix A medians (C++SME, g++ 4.9; sync_ring on a Xeon E3-1245 V2, \
             the others on an Opteron 6272), its static model = takt static, its work list = takt worklist; \
             published speedups are its 1-thread time over its 2-thread time",
            self.spec, self.spin, self.reps.warmup, self.reps.runs
        ));
        if self.wants("sync_ring") {
            for s in &plan.sync {
                self.ring_bench(&mut doc, "sync_ring", *s, None, progress)?;
            }
            peer_rows(&mut doc, "sync_ring", progress)?;
        }
        if self.wants("compute_ring") {
            for s in &plan.compute {
                self.ring_bench(&mut doc, "compute_ring", *s, Some(&|_| DIVISIONS), progress)?;
            }
            peer_rows(&mut doc, "compute_ring", progress)?;
        }
        if self.wants("weak_scaling") {
            for &(p, c, ratio) in &plan.weak {
                self.weak_bench(&mut doc, p, c, ratio, progress)?;
            }
            peer_rows(&mut doc, "weak_scaling", progress)?;
        }
        if self.wants("uneven") {
            for s in &plan.uneven {
                let half = s.processes / 2;
                let div = move |i: usize| if i < half { LIGHT_DIVISIONS } else { DIVISIONS };
                self.ring_bench(&mut doc, "uneven", *s, Some(&div), progress)?;
            }
            peer_rows(&mut doc, "uneven", progress)?;
        }
        if self.wants("sync_cost") {
            self.sync_cost(&mut doc, plan.sync_cost_cycles, progress)?;
        }
        Ok(doc.finish())
    }

    /// Runs `kind` × `threads` on a fresh ring `reps` times; ns per step
    /// samples and cpu seconds per run.
    fn measure_ring(
        &self,
        make: &dyn Fn() -> Ring,
        kind: ExecutorKind,
        threads: usize,
        cycles: u64,
    ) -> Result<(Vec<f64>, f64), SmeError> {
        if SYNTHETIC.get() {
            return Ok((vec![1.0; 5], 0.0));
        }
        let mut ring = make();
        let exec = self.executor(kind, threads);
        let steps = ring.net.processes() as f64 * cycles as f64;
        // Short runs also warm up for a minimum time: one quick run is not
        // enough for the caches, the TLB and a CPU clock ramping up after
        // idle, and the first configuration measured (the `sequential`
        // baseline) would otherwise carry the slow start.
        let mut warm_runs = 0u64;
        let warm_start = Instant::now();
        while warm_start.elapsed() < MIN_WARMUP {
            ring.net
                .run(&exec, cycles)
                .map_err(|source| SmeError::Run {
                    kind,
                    threads,
                    source: Box::new(source),
                })?;
            warm_runs += 1;
        }
        let mut failure = None;
        let m = measure(self.reps, || match ring.net.run(&exec, cycles) {
            Ok(r) => r.elapsed.as_nanos() as f64 / steps,
            Err(e) => {
                failure.get_or_insert(e);
                f64::NAN
            }
        });
        if let Some(source) = failure {
            return Err(SmeError::Run {
                kind,
                threads,
                source: Box::new(source),
            });
        }
        // Every run advanced the ring by `cycles`: process 0 holds the count.
        let expected = ((self.reps.warmup + m.samples.len()) as u64 + warm_runs) * cycles;
        if ring.net.value(ring.first) != expected as i64 {
            return Err(SmeError::WrongCount {
                kind,
                threads,
                value: ring.net.value(ring.first),
                cycles: expected,
            });
        }
        Ok((m.samples, m.cpu_s))
    }

    fn ring_bench(
        &self,
        doc: &mut DocumentBuilder,
        name: &str,
        shape: Shape,
        divisions: Option<&dyn Fn(usize) -> u32>,
        progress: &mut dyn FnMut(&str) -> Result<(), SmeError>,
    ) -> Result<(), SmeError> {
        let Shape { processes, cycles } = shape;
        let make = || match divisions {
            None => sync_ring(processes),
            Some(d) => compute_ring(processes, d),
        };
        let base = |kind: &str, threads: usize| -> Map<String, Value> {
            let mut p = params![("processes", processes), ("cycles", cycles)];
            if kind != "floor" {
                p.insert("executor".into(), kind.into());
            }
            p.insert("threads".into(), threads.into());
            p
        };
        let mut sequential: Option<Vec<f64>> = None;
        for (kind, threads) in executors(self.max_threads) {
            progress(&format!(
                "{name}: {processes} processes × {cycles} cycles, {kind} × {threads}"
            ))?;
            let (samples, cpu_s) = self.measure_ring(&make, kind, threads, cycles)?;
            let ns = ResultRow::new(
                name,
                "takt",
                base(kind.name(), threads),
                "ns/step",
                Better::Lower,
                samples.clone(),
                cpu_s,
            );
            let ns = match published::ns_per_step(name, kind, threads, processes) {
                Some(v) => ns.with_published(v),
                None => ns,
            };
            doc.push(ns);
            let per_s: Vec<f64> = samples
                .iter()
                .map(|ns| 1e9 / (ns * processes as f64))
                .collect();
            doc.push(ResultRow::new(
                name,
                "takt",
                base(kind.name(), threads),
                "cycles/s",
                Better::Higher,
                per_s,
                cpu_s,
            ));
            match &sequential {
                None => sequential = Some(samples),
                Some(seq) => {
                    let seq_median = takt_measure::stats::median(seq);
                    let speedup: Vec<f64> = samples.iter().map(|s| seq_median / s).collect();
                    let row = ResultRow::new(
                        name,
                        "takt",
                        base(kind.name(), threads),
                        "speedup",
                        Better::Higher,
                        speedup,
                        cpu_s,
                    )
                    .with_note("sequential median / this run");
                    let row = match published::speedup(name, kind, threads, processes) {
                        Some(v) => row.with_published(v),
                        None => row,
                    };
                    doc.push(row);
                }
            }
        }
        // The floor: same ring, plain loop, one thread.
        progress(&format!(
            "{name}: {processes} processes × {cycles} cycles, floor"
        ))?;
        let div: &dyn Fn(usize) -> u32 = divisions.unwrap_or(&|_| 0);
        let m = if SYNTHETIC.get() {
            measure(self.reps, || 1.0)
        } else {
            measure(self.reps, || floor_ring(processes, cycles, div))
        };
        doc.push(
            ResultRow::new(
                name,
                "floor",
                base("floor", 1),
                "ns/step",
                Better::Lower,
                m.samples,
                m.cpu_s,
            )
            .with_note("the same ring as a plain loop over an array, no framework"),
        );
        Ok(())
    }

    fn weak_bench(
        &self,
        doc: &mut DocumentBuilder,
        processes: usize,
        cycles_per_thread: u64,
        ratio: &str,
        progress: &mut dyn FnMut(&str) -> Result<(), SmeError>,
    ) -> Result<(), SmeError> {
        let make = || compute_ring(processes, |_| DIVISIONS);
        let mut one_thread: Option<f64> = None;
        for (kind, threads) in executors(self.max_threads) {
            let cycles = cycles_per_thread * threads as u64;
            progress(&format!(
                "weak_scaling {ratio}: {processes} processes × {cycles} cycles, {kind} × {threads}"
            ))?;
            let (samples, cpu_s) = self.measure_ring(&make, kind, threads, cycles)?;
            let p = params![
                ("ratio", ratio),
                ("processes", processes),
                ("cycles", cycles),
                ("executor", kind.name()),
                ("threads", threads)
            ];
            let row = ResultRow::new(
                "weak_scaling",
                "takt",
                p.clone(),
                "ns/step",
                Better::Lower,
                samples.clone(),
                cpu_s,
            );
            let row = match published::weak_ns_per_step(kind, threads, ratio) {
                Some(v) => row.with_published(v),
                None => row,
            };
            doc.push(row);
            // Run time per sample; the sequential run is the reference.
            let steps = processes as f64 * cycles as f64;
            let times: Vec<f64> = samples.iter().map(|s| s * steps).collect();
            match one_thread {
                None => one_thread = Some(takt_measure::stats::median(&times)),
                Some(t1) => {
                    let eff: Vec<f64> = times.iter().map(|t| t1 / t).collect();
                    let row = ResultRow::new(
                        "weak_scaling",
                        "takt",
                        p,
                        "efficiency",
                        Better::Higher,
                        eff,
                        cpu_s,
                    )
                    .with_note("sequential time at 1× the cycles / this time at threads× the cycles (ideal 1)");
                    let row = match published::weak_efficiency(kind, threads, ratio) {
                        Some(v) => row.with_published(v),
                        None => row,
                    };
                    doc.push(row);
                }
            }
        }
        Ok(())
    }

    fn sync_cost(
        &self,
        doc: &mut DocumentBuilder,
        cycles: u64,
        progress: &mut dyn FnMut(&str) -> Result<(), SmeError>,
    ) -> Result<(), SmeError> {
        // A ring with one trivial process per thread: each cycle is almost
        // nothing but the barrier.
        for (kind, threads) in executors(self.max_threads) {
            let processes = threads.max(2);
            progress(&format!("sync_cost: {kind} × {threads}, {cycles} cycles"))?;
            let make = || sync_ring(processes);
            let (samples, cpu_s) = self.measure_ring(&make, kind, threads, cycles)?;
            let us: Vec<f64> = samples
                .iter()
                .map(|ns| ns * processes as f64 / 1e3)
                .collect();
            doc.push(
                ResultRow::new(
                    "sync_cost",
                    "takt",
                    params![
                        ("processes", processes),
                        ("cycles", cycles),
                        ("executor", kind.name()),
                        ("threads", threads)
                    ],
                    "us/cycle",
                    Better::Lower,
                    us,
                    cpu_s,
                )
                .with_note("wall time per cycle of a ring with ~1 trivial process per thread: the price of one cycle's synchronization"),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_figures_convert_to_ns_per_step() {
        let ns = published::ns_per_step("sync_ring", ExecutorKind::Static, 1, 20_000).unwrap();
        assert!((ns - 34.1).abs() < 0.1, "{ns}");
        let s = published::speedup("sync_ring", ExecutorKind::Worklist, 2, 20_000).unwrap();
        assert!((s - 0.741).abs() < 0.01, "{s}");
        assert!(published::ns_per_step("sync_ring", ExecutorKind::Balanced, 1, 20_000).is_none());
        let e = published::weak_efficiency(ExecutorKind::Static, 2, "1:2").unwrap();
        assert!((e - 1.089).abs() < 0.01, "{e}");
    }

    #[test]
    fn rings_run_and_the_floor_agrees() {
        for (kind, threads) in executors(2) {
            let mut ring = compute_ring(6, |i| if i < 3 { 10 } else { 40 });
            ring.net
                .run(&Executor::new(kind, threads), 25)
                .expect("the ring runs");
            assert_eq!(ring.net.value(ring.first), 25);
        }
        let ns = floor_ring(16, 100, |_| 0);
        assert!(ns.is_finite() && ns > 0.0);
    }
}
