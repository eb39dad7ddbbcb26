//! C++SME itself, the thesis's implementation, as a peer of
//! `takt bench sme --peers`.
//!
//! The thesis's benchmark programs are run as child processes, one run per
//! process, with the size and executor in their environment
//! (`SME_NODES`, `SME_ITERATIONS`, `SME_THREADS`, `SME_SCHEDS`):
//!
//! | benchmark | program | C++SME's executors |
//! |---|---|---|
//! | `sync_ring` | `test/ring_dynamic` | `SME_SCHEDS=2`: BQueue, its static orchestration (takt's `static` rows compare with it) |
//! | `compute_ring`, `weak_scaling` | `test/ring_heavy` | `SME_SCHEDS=4`: CQueue, its work list (`worklist`) |
//! | `uneven` | `test/ring_uneven` | |
//!
//! Each run prints one line, `... [with T = BQueue] THREADS STEPS NPROCS
//! SECONDS`, its own timer from starting its threads to joining them;
//! [`parse`] accepts that and nothing else, and checks that the program
//! ran what it was asked to.
//!
//! # A run's lifetime
//! 1. The child starts in a process group of its own (so a terminal's
//!    Ctrl-C reaches takt, not it) with stdin closed and its output piped
//!    into two reader threads.
//! 2. takt polls it until it exits, the deadline passes (three times the
//!    run's estimate, at least two seconds: C++SME's barrier waits on a
//!    condition variable with no predicate, and a run can hang) or the run
//!    is cancelled.
//! 3. On a deadline or a cancellation, and whenever the child's guard is
//!    dropped, the whole group is killed with SIGKILL and reaped; the
//!    guard's drop runs on every path out, so no child outlives a run.

mod parse;
mod run;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use takt_host::peers::{self, Peer};

pub use parse::{parse, OutputError, Reported};
pub use takt_host::peers::NotBuilt;

pub use run::{PeerError, PeerSample, Printed, DEADLINE_FACTOR};

/// The commit of C++SME the project builds (its last, 2015-08-18).
pub const COMMIT: &str = "8e12da6";

/// A thesis benchmark program of C++SME.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Program {
    /// `test/ring_dynamic`: the synchronization ring (read, add one, write).
    RingDynamic,
    /// `test/ring_heavy`: every process but the first divides a `long
    /// double` by 3 10000 times per step.
    RingHeavy,
    /// `test/ring_uneven`: the first half as `ring_heavy`, the second half
    /// 2500 divisions per step.
    RingUneven,
}

impl Program {
    /// Its name under `test/`.
    pub fn name(self) -> &'static str {
        match self {
            Program::RingDynamic => "ring_dynamic",
            Program::RingHeavy => "ring_heavy",
            Program::RingUneven => "ring_uneven",
        }
    }

    /// The program of one of the suite's benchmarks.
    pub fn of(benchmark: &str) -> Option<Program> {
        match benchmark {
            "sync_ring" => Some(Program::RingDynamic),
            "compute_ring" | "weak_scaling" => Some(Program::RingHeavy),
            "uneven" => Some(Program::RingUneven),
            _ => None,
        }
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "test/{}", self.name())
    }
}

/// C++SME's two executors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sched {
    /// BQueue: ⌊p/t⌋ processes per thread, the rest on the last.
    Static,
    /// CQueue: one process per `fetch_add` of one shared index.
    Worklist,
}

impl Sched {
    /// Both, in the order the suite runs them.
    pub const ALL: [Sched; 2] = [Sched::Static, Sched::Worklist];

    /// The `executor` parameter of its rows (takt's rows of the same name
    /// are the comparison).
    pub fn name(self) -> &'static str {
        match self {
            Sched::Static => "static",
            Sched::Worklist => "worklist",
        }
    }

    /// `SME_SCHEDS`: bit 1 selects BQueue, bit 2 CQueue (`test/get_env.h`).
    pub fn env(self) -> u32 {
        match self {
            Sched::Static => 2,
            Sched::Worklist => 4,
        }
    }

    /// The class name its output line carries (`[with T = ...]`).
    pub fn queue(self) -> &'static str {
        match self {
            Sched::Static => "BQueue",
            Sched::Worklist => "CQueue",
        }
    }
}

/// One run of one program: what goes into its environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerRun {
    /// The program.
    pub program: Program,
    /// Its executor.
    pub sched: Sched,
    /// `SME_NODES`: processes in the ring.
    pub processes: usize,
    /// `SME_ITERATIONS`: cycles.
    pub cycles: u64,
    /// `SME_THREADS`.
    pub threads: usize,
}

impl PeerRun {
    /// The environment the program reads.
    pub fn env(&self) -> [(&'static str, String); 4] {
        [
            ("SME_NODES", self.processes.to_string()),
            ("SME_ITERATIONS", self.cycles.to_string()),
            ("SME_THREADS", self.threads.to_string()),
            ("SME_SCHEDS", self.sched.env().to_string()),
        ]
    }

    /// Process-steps of the run.
    pub fn steps(&self) -> f64 {
        self.processes as f64 * self.cycles as f64
    }
}

impl fmt::Display for PeerRun {
    /// `test/ring_dynamic SME_NODES=20000 SME_ITERATIONS=1000
    /// SME_THREADS=2 SME_SCHEDS=4 (CQueue)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.program)?;
        for (k, v) in self.env() {
            write!(f, " {k}={v}")?;
        }
        write!(f, " ({})", self.sched.queue())
    }
}

/// A C++SME build: the directory holding `test/ring_dynamic` and the
/// other programs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CppSme {
    dir: PathBuf,
}

impl CppSme {
    /// The build in `dir` (a C++SME source tree with the programs built
    /// under `test/`), as it is; [`CppSme::check`] says whether it is
    /// complete. Tests point this at stub programs.
    pub fn at(dir: impl Into<PathBuf>) -> CppSme {
        CppSme { dir: dir.into() }
    }

    /// The project's build (`scripts/peers.sh`), found by
    /// [`takt_host::peers::locate`], with every program present.
    pub fn locate() -> Result<CppSme, NotBuilt> {
        let me = CppSme::at(peers::locate(Peer::CppSme)?);
        me.check()?;
        Ok(me)
    }

    /// The build's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of `program`.
    pub fn program(&self, program: Program) -> PathBuf {
        self.dir.join("test").join(program.name())
    }

    /// Every program is there and executable.
    pub fn check(&self) -> Result<(), NotBuilt> {
        for p in [
            Program::RingDynamic,
            Program::RingHeavy,
            Program::RingUneven,
        ] {
            let path = self.program(p);
            let ok = std::fs::metadata(&path).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            });
            if !ok {
                return Err(NotBuilt {
                    peer: Peer::CppSme,
                    path,
                });
            }
        }
        Ok(())
    }
}

/// How long a run should take: start-up plus the model below, from runs
/// on the 2-vCPU development machine (AMD EPYC, under load). A run is
/// killed at [`deadline`] of this.
pub fn estimate(run: &PeerRun) -> Duration {
    /// Starting the program and building its network.
    const STARTUP_S: f64 = 0.05;
    /// `ring_dynamic`, per process-step, whatever the thread count (its
    /// threads never beat one here).
    const SYNC_STEP_S: f64 = 25e-9;
    /// `ring_heavy`, per process-step on one thread (10000 x87 divisions).
    const HEAVY_STEP_S: f64 = 130e-6;
    /// Its two condition-variable barriers per cycle, when threads > 1.
    const BARRIERS_S: f64 = 100e-6;
    let t = run.threads.max(1) as f64;
    let work = match run.program {
        Program::RingDynamic => run.steps() * SYNC_STEP_S,
        Program::RingHeavy => run.steps() * HEAVY_STEP_S / t,
        Program::RingUneven => run.steps() * HEAVY_STEP_S * 0.625 / t,
    };
    let sync = if run.threads > 1 {
        run.cycles as f64 * BARRIERS_S
    } else {
        0.0
    };
    Duration::from_secs_f64(STARTUP_S + work + sync)
}

/// When a run of `estimate` is killed: [`DEADLINE_FACTOR`] times it, and
/// never before [`MIN_DEADLINE`] (starting a process on a loaded machine
/// can take longer than a short run).
pub fn deadline(estimate: Duration) -> Duration {
    (estimate * DEADLINE_FACTOR).max(MIN_DEADLINE)
}

/// The least time a run is given.
pub const MIN_DEADLINE: Duration = Duration::from_secs(2);
