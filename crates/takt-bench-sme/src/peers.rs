//! `--peers`: C++SME's own programs in the same run as takt's executors,
//! as rows with impl `cppsme`.
//!
//! The rows have takt's names and units (`ns/step`, `speedup`, and for
//! `weak_scaling` `efficiency`) and the parameters that name the
//! workload (`processes`, `executor`, `threads`, and `ratio`), so each
//! finds its takt row of the same executor in the same document; the
//! cycles it ran are in `detail.cycles`, since C++SME takes minutes per
//! point at the thesis's cycle counts here and the comparison is per
//! process-step. `speedup` is over C++SME's own one-thread run of the
//! same executor, as the thesis computed it.

use std::time::Duration;

use serde_json::{Map, Value};
use takt_measure::params;
use takt_measure::result::{Better, DocumentBuilder, ResultRow};
use takt_measure::stats::median;

use crate::cppsme::{estimate, CppSme, PeerError, PeerRun, Program, Sched};
use crate::error::SmeError;
use crate::{published, SmeBench};
use takt_sme::ExecutorKind;

/// One ring shape C++SME runs: processes, cycles (per thread for weak
/// scaling), and for weak scaling its ratio label.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PeerShape {
    pub(crate) processes: usize,
    pub(crate) cycles: u64,
    pub(crate) ratio: Option<&'static str>,
}

const fn shape(processes: usize, cycles: u64) -> PeerShape {
    PeerShape {
        processes,
        cycles,
        ratio: None,
    }
}

const fn weak(processes: usize, cycles: u64, ratio: &'static str) -> PeerShape {
    PeerShape {
        processes,
        cycles,
        ratio: Some(ratio),
    }
}

/// The shapes per benchmark. `--quick` runs takt's own quick shapes; the
/// full run keeps the thesis's processes and scales its cycles to keep
/// C++SME's part near five minutes on two threads here.
pub(crate) fn plan(quick: bool) -> Vec<(&'static str, Vec<PeerShape>)> {
    if quick {
        vec![
            ("sync_ring", vec![shape(20_000, 1_000), shape(50_000, 400)]),
            ("compute_ring", vec![shape(200, 20), shape(2_000, 2)]),
            (
                "weak_scaling",
                vec![
                    weak(10, 20, "2:1"),
                    weak(20, 20, "1:1"),
                    weak(40, 20, "1:2"),
                ],
            ),
            ("uneven", vec![shape(200, 20)]),
        ]
    } else {
        vec![
            (
                "sync_ring",
                vec![shape(20_000, 5_000), shape(50_000, 2_000)],
            ),
            ("compute_ring", vec![shape(200, 50), shape(2_000, 5)]),
            (
                "weak_scaling",
                vec![
                    weak(250, 10, "2:1"),
                    weak(500, 10, "1:1"),
                    weak(1000, 10, "1:2"),
                ],
            ),
            ("uneven", vec![shape(200, 50), shape(2_000, 5)]),
        ]
    }
}

/// The document note describing the peer rows.
pub(crate) const NOTE: &str = "cppsme: C++SME 8e12da6 (the thesis's implementation, g++ -O2), its own programs \
    test/ring_dynamic (sync_ring), test/ring_heavy (compute_ring, weak_scaling) and test/ring_uneven (uneven; its \
    first half heavy, takt's second), one process per run; executor static = its BQueue (⌊p/t⌋ per thread, the rest on \
    the last), worklist = its CQueue (one process per fetch_add); a sample is its own timer (threads started to joined) / \
    (processes × cycles); its cycles are in detail.cycles (scaled down from the thesis's: compare per process-step); \
    its compute steps divide a long double (x87), takt's a double; speedup and efficiency are over its own 1-thread run \
    of the same executor; a run is killed after 3 × its estimate (at least 2 s)";

/// The runs of one configuration (one shape, executor and thread count).
fn config_run(name: &str, s: &PeerShape, sched: Sched, threads: usize) -> Option<PeerRun> {
    let cycles = match s.ratio {
        Some(_) => s.cycles * threads as u64,
        None => s.cycles,
    };
    Some(PeerRun {
        program: Program::of(name)?,
        sched,
        processes: s.processes,
        cycles,
        threads,
    })
}

impl SmeBench {
    /// The C++SME part's expected duration (every configuration's runs at
    /// their estimate).
    pub(crate) fn peer_estimate(&self) -> Duration {
        if !self.peers {
            return Duration::ZERO;
        }
        let runs = (self.reps.warmup + self.reps.runs) as u32;
        let mut total = Duration::ZERO;
        for (name, shapes) in plan(self.quick) {
            if !self.wants(name) {
                continue;
            }
            for s in &shapes {
                for sched in Sched::ALL {
                    for t in 1..=self.max_threads.min(s.processes) {
                        if let Some(run) = config_run(name, s, sched, t) {
                            total += estimate(&run) * runs;
                        }
                    }
                }
            }
        }
        total
    }

    /// C++SME's rows of benchmark `name` (nothing when it has no program or
    /// `--peers` is off). A hung or failed configuration becomes a note
    /// naming it, and the run goes on; a cancellation ends the run.
    pub(crate) fn peer_rows(
        &self,
        doc: &mut DocumentBuilder,
        name: &str,
        build: Option<&CppSme>,
        progress: &mut dyn FnMut(&str) -> Result<(), SmeError>,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<(), SmeError> {
        let Some(shapes) = plan(self.quick)
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| s)
        else {
            return Ok(());
        };
        for s in &shapes {
            for sched in Sched::ALL {
                let mut one_thread: Option<f64> = None;
                for threads in 1..=self.max_threads {
                    let Some(run) = config_run(name, s, sched, threads) else {
                        continue;
                    };
                    if threads > s.processes {
                        doc.note(format!(
                            "cppsme: {name} {} processes × {threads} threads not run: C++SME runs no more threads than processes",
                            s.processes
                        ));
                        continue;
                    }
                    progress(&format!("cppsme {run}"))?;
                    let measured = match build {
                        Some(b) => self.peer_samples(b, &run, cancelled),
                        None => Ok(synthetic(&run, self.reps.runs)),
                    };
                    let (samples, cpu_s) = match measured {
                        Ok(m) => m,
                        Err(PeerError::Interrupted { .. }) => return Err(SmeError::Interrupted),
                        Err(e) => {
                            doc.note(format!("{e}; this configuration's rows are missing"));
                            continue;
                        }
                    };
                    self.push_peer_rows(doc, name, s, &run, &samples, cpu_s, &mut one_thread);
                }
            }
        }
        Ok(())
    }

    /// Warm-up and measured runs of one configuration: ns per step per run
    /// and the mean CPU seconds per run.
    fn peer_samples(
        &self,
        build: &CppSme,
        run: &PeerRun,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<(Vec<f64>, f64), PeerError> {
        let mut est = estimate(run);
        let mut samples = Vec::with_capacity(self.reps.runs);
        let mut cpu = 0.0;
        for i in 0..self.reps.warmup + self.reps.runs {
            let s = build.run_once(run, est, self.spec.cpus(), cancelled)?;
            // A slow machine: later runs' deadlines follow what this took.
            est = est.max(Duration::from_secs_f64(s.reported.seconds + 0.1));
            if i >= self.reps.warmup {
                samples.push(s.ns_per_step);
                cpu += s.cpu_s;
            }
        }
        let n = samples.len().max(1) as f64;
        Ok((samples, cpu / n))
    }

    #[allow(clippy::too_many_arguments)]
    fn push_peer_rows(
        &self,
        doc: &mut DocumentBuilder,
        name: &str,
        s: &PeerShape,
        run: &PeerRun,
        samples: &[f64],
        cpu_s: f64,
        one_thread: &mut Option<f64>,
    ) {
        let mut p: Map<String, Value> = Map::new();
        if let Some(r) = s.ratio {
            p.insert("ratio".into(), r.into());
        }
        p.extend(params![
            ("processes", s.processes),
            ("executor", run.sched.name()),
            ("threads", run.threads)
        ]);
        let detail = params![("cycles", run.cycles), ("program", run.program.to_string())];
        let kind = match run.sched {
            Sched::Static => ExecutorKind::Static,
            Sched::Worklist => ExecutorKind::Worklist,
        };
        let (t, n) = (run.threads, s.processes);
        let (pub_ns, pub_ratio) = match s.ratio {
            Some(r) => (
                published::weak_ns_per_step(kind, t, r),
                published::weak_efficiency(kind, t, r),
            ),
            None => (
                published::ns_per_step(name, kind, t, n),
                published::speedup(name, kind, t, n),
            ),
        };
        let row = ResultRow::new(
            name,
            "cppsme",
            p.clone(),
            "ns/step",
            Better::Lower,
            samples.to_vec(),
            cpu_s,
        )
        .with_detail(detail.clone());
        doc.push(match pub_ns {
            Some(v) => row.with_published(v),
            None => row,
        });
        // Run times, so weak scaling (cycles grow with threads) compares
        // times and the others per-step figures alike.
        let steps = run.steps();
        let times: Vec<f64> = samples.iter().map(|ns| ns * steps).collect();
        if run.threads == 1 {
            *one_thread = Some(median(&times));
        }
        // Without its one-thread run (it failed, and a note says so) there
        // is no speedup to give.
        let Some(t1) = *one_thread else {
            return;
        };
        let ratio: Vec<f64> = times.iter().map(|t| t1 / t).collect();
        let (unit, note) = match s.ratio {
            Some(_) => (
                "efficiency",
                "its 1-thread time at 1× the cycles / this time at threads× the cycles (ideal 1)",
            ),
            None => (
                "speedup",
                "its own 1-thread median (same executor) / this run",
            ),
        };
        let row = ResultRow::new(name, "cppsme", p, unit, Better::Higher, ratio, cpu_s)
            .with_note(note)
            .with_detail(detail);
        doc.push(match pub_ratio.filter(|_| t > 1) {
            Some(v) => row.with_published(v),
            None => row,
        });
    }
}

/// Fixed samples for the document-shape snapshot.
fn synthetic(_run: &PeerRun, runs: usize) -> (Vec<f64>, f64) {
    (vec![1.0; runs], 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use takt_measure::sampler::Repetitions;
    use takt_sched::{SpinBudget, ThreadSpec};

    fn bench(quick: bool) -> SmeBench {
        SmeBench {
            quick,
            max_threads: 2,
            spec: ThreadSpec::default(),
            spin: SpinBudget::DEFAULT,
            reps: Repetitions { warmup: 1, runs: 5 },
            only: Vec::new(),
            peers: true,
        }
    }

    #[test]
    fn the_peer_part_fits_its_budgets_on_two_threads() {
        let quick = bench(true).peer_estimate();
        let full = bench(false).peer_estimate();
        eprintln!("C++SME part: --quick {quick:?}, full {full:?}");
        assert!(quick < Duration::from_secs(90), "{quick:?}");
        assert!(full < Duration::from_secs(600), "{full:?}");
        let off = SmeBench {
            peers: false,
            ..bench(true)
        };
        assert_eq!(off.peer_estimate(), Duration::ZERO);
    }
}
