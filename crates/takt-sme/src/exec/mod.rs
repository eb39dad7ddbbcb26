//! Executors: who steps which processes, on which threads.
//!
//! | executor | partitioning | per-cycle shared state | choose it when |
//! |---|---|---|---|
//! | `sequential` | one thread | none | reference; one core; tiny networks |
//! | `static` | even contiguous ranges, fixed | one barrier | processes cost about the same |
//! | `worklist` | chunks claimed from one shared cursor | barrier + one `fetch_add` per chunk | costs vary unpredictably, few cores |
//! | `stealing` | `static` ranges, idle threads steal chunks | barrier + one CAS per chunk | costs vary a little, or cores get preempted |
//! | `balanced` | ranges cut to equal *measured* cost, re-cut on drift | barrier (+ one more per re-balance) | costs differ but are stable |
//! | `thesis_static` | ⌊p/t⌋ processes per thread, the remainder on the last | one barrier | reproducing the thesis's static orchestration |
//! | `thesis_worklist` | one process per claim from one shared cursor | barrier + one `fetch_add` per process | reproducing the thesis's work list |
//!
//! The two `thesis_` flavours are the C++SME thesis's own shapes, kept to
//! reproduce and explain its figures: `thesis_static` gives the last
//! thread up to `t - 1` extra processes (the thesis's zig-zag in speedup
//! as the thread count varies), and `thesis_worklist` makes every thread
//! bounce one cache line per process stepped (its slowdown from one to two
//! threads on cheap processes). `static` and `worklist` are the same
//! designs without those costs: ranges differing by at most one process,
//! and chunks of many processes per claim.
//!
//! All of them produce exactly the same values as `sequential`: processes
//! read last cycle's buffer and write their own signals in this cycle's, so
//! neither order nor placement can change a result.
//!
//! Every executor thread is created by [`takt_sched::ThreadSpec::spawn`]
//! (so `--cpus` and `--sched` apply to all of them; worker `i` is pinned to
//! the `i`-th CPU of the spec's set; with no set given, several workers are
//! pinned to distinct CPUs of the process's affinity when it has one per
//! worker) and waits at a
//! [`takt_sched::SpinBarrier`] once per cycle: spin for the budget, then
//! sleep on a futex — no mutex or condition variable on the per-cycle path.

pub mod claim;
pub(crate) mod partition;
pub(crate) mod run;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use takt_sched::{SpinBudget, ThreadSpec};

use crate::UnknownExecutor;

/// The executor flavours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExecutorKind {
    /// One thread, in execution order: the reference.
    Sequential,
    /// Fixed even partitions, one per thread (the thesis's static orchestration).
    Static,
    /// Chunks claimed from a shared atomic cursor (the thesis's work list).
    Worklist,
    /// Static partitions; idle threads steal chunks from the others' backs.
    Stealing,
    /// Partitions of equal measured cost, re-cut when costs drift.
    Balanced,
    /// The thesis's static split: ⌊p/t⌋ processes to each of the first
    /// `t - 1` threads, the rest to the last.
    ThesisStatic,
    /// The thesis's work list: one process per `fetch_add` of one shared
    /// cursor (`with_chunk` does not apply).
    ThesisWorklist,
}

impl ExecutorKind {
    /// Every flavour, in the order benchmarks list them.
    pub const ALL: [ExecutorKind; 7] = [
        ExecutorKind::Sequential,
        ExecutorKind::Static,
        ExecutorKind::Worklist,
        ExecutorKind::Stealing,
        ExecutorKind::Balanced,
        ExecutorKind::ThesisStatic,
        ExecutorKind::ThesisWorklist,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            ExecutorKind::Sequential => "sequential",
            ExecutorKind::Static => "static",
            ExecutorKind::Worklist => "worklist",
            ExecutorKind::Stealing => "stealing",
            ExecutorKind::Balanced => "balanced",
            ExecutorKind::ThesisStatic => "thesis_static",
            ExecutorKind::ThesisWorklist => "thesis_worklist",
        }
    }
}

impl fmt::Display for ExecutorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ExecutorKind {
    type Err = UnknownExecutor;
    fn from_str(s: &str) -> Result<Self, UnknownExecutor> {
        ExecutorKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownExecutor { name: s.to_owned() })
    }
}

/// How to run a network: flavour, threads, thread spec and tuning.
///
/// ```
/// use takt_sme::{Executor, ExecutorKind};
/// let e = Executor::new(ExecutorKind::Static, 2);
/// assert_eq!(e.threads(), 2);
/// ```
#[derive(Clone, Debug)]
pub struct Executor {
    kind: ExecutorKind,
    threads: usize,
    spec: ThreadSpec,
    spin: SpinBudget,
    chunk: Option<u32>,
    rebalance_every: u64,
    adaptive: bool,
    drift: f64,
}

/// `balanced`: the shortest default interval between cost checks, in cycles.
pub const DEFAULT_REBALANCE_EVERY: u64 = 1024;

/// Most worker threads an executor may use.
pub const MAX_THREADS: usize = 1024;

impl Executor {
    /// A `kind` executor on `threads` threads (`sequential` always uses one).
    pub fn new(kind: ExecutorKind, threads: usize) -> Self {
        Executor {
            kind,
            threads: if kind == ExecutorKind::Sequential {
                1
            } else {
                threads
            },
            spec: ThreadSpec::new("sme"),
            spin: SpinBudget::DEFAULT,
            chunk: None,
            rebalance_every: DEFAULT_REBALANCE_EVERY,
            adaptive: true,
            drift: 1.05,
        }
    }

    /// The reference executor.
    pub fn sequential() -> Self {
        Self::new(ExecutorKind::Sequential, 1)
    }

    /// Workers are made from `spec` (renamed `<name>-<i>`, pinned to the
    /// `i`-th CPU of its set when it has one).
    pub fn with_spec(mut self, spec: ThreadSpec) -> Self {
        self.spec = spec;
        self
    }

    /// How long a worker spins at the cycle barrier before sleeping.
    pub fn with_spin(mut self, spin: SpinBudget) -> Self {
        self.spin = spin;
        self
    }

    /// Processes per claimed chunk (`worklist`, `stealing`; always one for
    /// `thesis_worklist`); by default
    /// chosen from the network size and thread count.
    pub fn with_chunk(mut self, processes: u32) -> Self {
        self.chunk = Some(processes.max(1));
        self
    }

    /// `balanced`: re-measure costs exactly every `cycles` cycles (0: only
    /// the trial cycle), and re-cut when the current partition's slowest
    /// thread is `drift` times (default 1.05) the best cut's.
    ///
    /// By default the executor checks every [`DEFAULT_REBALANCE_EVERY`]
    /// cycles or less often, lengthening the interval so that measuring
    /// (one timed cycle) and re-cutting stay near 1% of the run time.
    pub fn with_rebalance(mut self, cycles: u64, drift: f64) -> Self {
        self.rebalance_every = cycles;
        self.adaptive = false;
        self.drift = drift.max(1.0);
        self
    }

    /// The flavour.
    pub fn kind(&self) -> ExecutorKind {
        self.kind
    }

    /// Worker threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The spin budget.
    pub fn spin(&self) -> SpinBudget {
        self.spin
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunReport {
    /// Cycles executed by this run.
    pub cycles: u64,
    /// Whether a process halted the network.
    pub halted: bool,
    /// Wall time from releasing the workers to the last one finishing
    /// (thread creation excluded).
    pub elapsed: Duration,
    /// `balanced`: how many times the partition was re-cut after the trial.
    pub rebalances: u32,
    /// Per worker: processes stepped in the last cycle.
    pub last_cycle_processes: Vec<u32>,
    /// Per worker: times it slept in the kernel at the barrier.
    pub barrier_sleeps: Vec<u64>,
}
