//! # takt-machine: the machine characterization suite (`takt machine`)
//!
//! Reproduces the measurements of a CSE 221 system measurement report
//! (UC San Diego, Wu, Xiang and He, March 2017: an Intel i7-860 at 2.8 GHz
//! under Ubuntu 16.04) — timer and loop overhead, procedure and
//! system calls, process and thread creation, context switches, the memory
//! hierarchy, page faults, the network and the file system — with better
//! methods, on the machine it runs on.
//!
//! Every measurement states
//! - its **method** in one line,
//! - an **estimate** computed *before* measuring from a stated model (for
//!   example cycles from documented latencies and the measured core
//!   frequency), as the report does,
//! - the measured median, mean, standard deviation, min, max, p99 and the
//!   sample count, after removing outliers with one documented rule
//!   ([`stats::OUTLIER_RULE`]).
//!
//! The statistics go into the ordinary [`ResultRow`] fields; the method,
//! estimate, p99 and outlier bookkeeping go into the row's `detail` map
//! (see [`stats::Sampled::into_row`]). The machine description, detected
//! cache levels, skipped measurements and `--compare` ratios travel beside
//! the [`Document`] in a [`MachineDocument`], which serializes as the
//! document's own fields plus a few more, so every reader of result
//! documents can read it.
//!
//! Every kind of row (name, implementation, unit, parameter keys) is
//! listed once, in the crate's `kinds` table: the families start their
//! rows from it, debug builds check every row against it on its way into
//! the document, and [`synthetic_rows`] builds one row of each kind from
//! it without measuring (the document shape snapshot's input).
//!
//! ## Families
//! | name | what |
//! |---|---|
//! | `timer` | fenced TSC read pairs, plain `rdtsc`, Paoloni's CPUID method; TSC vs core frequency |
//! | `loop` | loop overhead per iteration, loop lengths 0–50 |
//! | `call` | procedure call with 0–7 arguments |
//! | `syscall` | raw `syscall` getpid, libc getcwd, read/write/stat/open+close |
//! | `create` | fork to the child's first instruction, fork+exit+wait, thread creation |
//! | `ctxsw` | pipe ping-pong between processes, futex and condvar ping-pong between threads, same CPU and across |
//! | `latency` | random-permutation pointer chase 1 KiB … 512 MiB, with and without THP; cache levels |
//! | `bandwidth` | read, write, copy; one thread and all threads |
//! | `pagefault` | minor anonymous, minor file-backed, major file-backed |
//! | `net` | TCP/UDP RTT, TCP bandwidth (sender and sink pinned `same_cpu` / `cross_cpu`), connect, teardown; loopback, a veth namespace host, `--remote` |
//! | `fs` | file cache size sweep, O_DIRECT sequential/random reads, contention 1…10 readers, `--nfs` |
//!
//! ## Modes
//! [`Mode::Quick`] runs every measurement shortened (under 90 s on a 2-core
//! machine), [`Mode::Default`] at its documented size (under 10 minutes),
//! [`Mode::Full`] adds the long file-cache and contention sweeps.
//!
//! ## Repeatability
//! `takt machine --quick --repeat N` runs the same command N times as
//! separate processes and [`repeat::summarize`]s them: per row the N
//! medians, their spread (`max/min − 1`) and whether it is within 10%, in
//! the table and as the document's `repeatability` section. Rows that
//! cannot be stable on a VM sharing its host carry the reason
//! ([`repeat::known_unstable`]).
//!
//! ## `--compare`
//! [`compare`] runs `perf bench`, `sysbench`, `iperf3` and `fio` on the same
//! quantities, set up to measure them the same way (same CPUs, write sizes,
//! file, statistic); each ratio states what still differs. For every tool
//! takt is re-measured the tool's way (perf's loops, sysbench's word-by-word
//! loop, fio's bytes over the run) in back-to-back pairs with the tool's
//! runs, and the median of the pairs' ratios is the verdict
//! ([`Comparison::ratio_interleaved`]).
//!
//! ## Cleanup
//! Every file, network namespace and child process the suite creates is
//! registered with takt-host's [`cleanup`] registry
//! and removed when the run ends, fails or is
//! interrupted (SIGINT, SIGTERM, SIGHUP: the run stops at its next sample
//! and returns [`MachineError::Interrupted`]; a second signal cleans up
//! and ends the process at once).
//!
//! ## Example
//!
//! The timer family in quick mode (about a second), its rows read from
//! the result document:
//!
//! ```
//! use takt_machine::{Config, Family, Mode};
//!
//! let mut cfg = Config::new(Mode::Quick);
//! cfg.only = Some(vec![Family::Timer]);
//! cfg.out_dir = std::env::temp_dir().join("takt-machine-doctest");
//! cfg.progress = false;
//! println!("expected about {:?}", cfg.expected_duration());
//! let doc = takt_machine::run(cfg)?;
//! for row in &doc.document.results {
//!     println!("{} {} {}", row.name, row.value_text(), row.unit);
//! }
//! assert!(!doc.document.results.is_empty());
//! # Ok::<(), takt_machine::MachineError>(())
//! ```

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use takt_measure::progress::Progress;
use takt_measure::result::{Document, DocumentBuilder, ResultRow};
use takt_measure::suite::{Cancel, RunContext, Suite, SuiteOutput};
use takt_measure::table::Table;

use takt_host::cleanup;

mod bandwidth;
mod calls;
mod command;
pub mod compare;
mod create;
mod ctxsw;
pub mod describe;
pub mod fs;
mod kinds;
pub mod latency;
pub mod levels;
mod loops;
mod net;
mod ns_host;
mod pagefault;
pub mod peer;
mod plot;
pub mod repeat;
pub mod stats;
mod syscalls;
mod timer;

pub use command::{run_command, Command};
pub use describe::Description;
#[doc(hidden)]
pub use kinds::synthetic_rows;
pub use latency::{detect_levels, CacheLevel, CurvePoint};
pub use stats::{Estimate, Sampled};

/// The prefix of the scratch directories the suite makes.
pub(crate) const SCRATCH_PREFIX: &str = "takt-machine";

/// Installs the process's signal handling ([`takt_measure::cancel`]); the
/// cleanup registry undoes everything on a second signal. Without
/// handlers (the system refused them) a signal ends the process by its
/// default action, and the next start repairs from the registry's journal.
pub(crate) fn install_signal_handling() {
    let _ = takt_measure::cancel::install();
}

/// The number of the signal that interrupted the run, if one did.
pub(crate) fn interrupted() -> Option<i32> {
    takt_measure::cancel::received().map(takt_measure::cancel::Signal::number)
}

/// How long and how thoroughly to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every measurement, shortened: under 90 s on a 2-core machine.
    Quick,
    /// Every measurement at its documented size: under 10 minutes.
    Default,
    /// Adds the long file-cache and contention sweeps.
    Full,
}

impl Mode {
    /// Scales a default-mode duration: quick gets a fifth, full twice.
    pub fn scale(self, d: Duration) -> Duration {
        match self {
            Mode::Quick => d / 5,
            Mode::Default => d,
            Mode::Full => d * 2,
        }
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Quick => "quick",
            Mode::Default => "default",
            Mode::Full => "full",
        }
    }
}

/// One measurement family (the `--only` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Timer overhead and TSC/core frequency.
    Timer,
    /// Loop overhead.
    Loop,
    /// Procedure calls.
    Call,
    /// System calls.
    Syscall,
    /// Process and thread creation.
    Create,
    /// Context switches.
    Ctxsw,
    /// Memory latency curve.
    Latency,
    /// Memory bandwidth.
    Bandwidth,
    /// Page faults.
    Pagefault,
    /// Network.
    Net,
    /// File system.
    Fs,
}

impl Family {
    /// All families in the order they run.
    pub const ALL: [Family; 11] = [
        Family::Timer,
        Family::Loop,
        Family::Call,
        Family::Syscall,
        Family::Create,
        Family::Ctxsw,
        Family::Latency,
        Family::Bandwidth,
        Family::Pagefault,
        Family::Net,
        Family::Fs,
    ];

    /// The `--only` name.
    pub fn name(self) -> &'static str {
        match self {
            Family::Timer => "timer",
            Family::Loop => "loop",
            Family::Call => "call",
            Family::Syscall => "syscall",
            Family::Create => "create",
            Family::Ctxsw => "ctxsw",
            Family::Latency => "latency",
            Family::Bandwidth => "bandwidth",
            Family::Pagefault => "pagefault",
            Family::Net => "net",
            Family::Fs => "fs",
        }
    }

    /// Parses a comma-separated `--only` list; an unknown name is an error
    /// that lists the valid ones.
    pub fn parse_list(list: &str) -> Result<Vec<Family>, MachineError> {
        let mut out = Vec::new();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let f = Family::ALL
                .into_iter()
                .find(|f| f.name() == name)
                .ok_or_else(|| {
                    MachineError::Only(format!(
                        "unknown measurement `{name}` (valid: {})",
                        Family::ALL.map(Family::name).join(", ")
                    ))
                })?;
            if !out.contains(&f) {
                out.push(f);
            }
        }
        if out.is_empty() {
            return Err(MachineError::Only("empty measurement list".into()));
        }
        out.sort();
        Ok(out)
    }
}

/// What to run and where.
#[derive(Clone, Debug)]
pub struct Config {
    /// Quick, default or full.
    pub mode: Mode,
    /// Families to run (all when `None`).
    pub only: Option<Vec<Family>>,
    /// Where SVG plots go (created if missing).
    pub out_dir: PathBuf,
    /// Directory for the scratch files of `pagefault` and `fs`.
    pub scratch_dir: PathBuf,
    /// Upper bound of the file-cache sweep, bytes (`None`: the mode's default).
    pub max_file: Option<u64>,
    /// A host running `takt machine --serve` to measure the network against.
    pub remote: Option<String>,
    /// A file on an NFS mount to measure remote file reads with.
    pub nfs: Option<PathBuf>,
    /// Also run the reference tools and print ratios.
    pub compare: bool,
    /// The command that runs a network peer: `[program, args...]`, to which
    /// the listen address is appended (the binary passes
    /// `[takt, machine, --serve]`). Without it the namespace host is skipped.
    pub peer_command: Option<Vec<String>>,
    /// Whether the user can be asked questions on the terminal.
    pub interactive: bool,
    /// Print progress on stderr when run through [`run`] (a
    /// [`RunContext`] given to [`run_with`] decides for itself).
    pub progress: bool,
}

impl Config {
    /// The default configuration for `mode`.
    pub fn new(mode: Mode) -> Self {
        Config {
            mode,
            only: None,
            out_dir: PathBuf::from("takt-machine"),
            scratch_dir: std::env::temp_dir(),
            max_file: None,
            remote: None,
            nfs: None,
            compare: false,
            peer_command: None,
            interactive: false,
            progress: true,
        }
    }

    /// Whether `family` is selected.
    pub fn runs(&self, family: Family) -> bool {
        self.only.as_ref().is_none_or(|o| o.contains(&family))
    }

    /// Expected wall time of `family` in this configuration's mode.
    pub fn family_duration(&self, family: Family) -> Duration {
        // Default-mode seconds per family; quick is about a fifth.
        let secs = match family {
            Family::Timer => 5,
            Family::Loop => 10,
            Family::Call => 8,
            Family::Syscall => 15,
            Family::Create => 20,
            Family::Ctxsw => 20,
            Family::Latency => 120,
            Family::Bandwidth => 40,
            Family::Pagefault => 25,
            Family::Net => 60,
            Family::Fs => 90,
        };
        let base = Duration::from_secs(secs);
        match self.mode {
            Mode::Quick => base / 5,
            Mode::Default => base,
            Mode::Full => base * 3,
        }
    }

    /// Expected wall time of the selected families, for the announcement.
    pub fn expected_duration(&self) -> Duration {
        Family::ALL
            .into_iter()
            .filter(|&f| self.runs(f))
            .map(|f| self.family_duration(f))
            .sum()
    }
}

/// A measurement that was not taken, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// Measurement (row name or family).
    pub name: String,
    /// Why it was skipped, and what would enable it.
    pub reason: String,
}

/// A `--compare` pairing: our row against a reference tool's row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The quantity compared (row name).
    pub name: String,
    /// The reference tool (`perf-bench`, `sysbench`, `iperf3`, `fio`).
    pub tool: String,
    /// takt's median divided by the tool's median.
    pub ratio: f64,
    /// Whether the ratio is within ±15%.
    pub within_15pct: bool,
    /// takt's best-side 5% quantile (p5 of a latency, p95 of a bandwidth)
    /// divided by the tool's best run: both sides' least-disturbed figures,
    /// for machines where other load inflates the tool's means.
    pub ratio_best: f64,
    /// What the two measure differently.
    pub difference: String,
    /// takt re-measured the tool's way, alternately with the tool's runs
    /// (back-to-back pairs, the order swapped every pair): the median of
    /// the pairs' ratios takt / tool. On a shared machine the load moves
    /// between the suite's row and the tool's runs, and within a pair both
    /// sides see the same machine. When present, `within_15pct` judges
    /// this ratio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_interleaved: Option<f64>,
}

/// The `takt machine` result: a regular result document (flattened) plus
/// the machine description, detected cache levels, skipped measurements
/// and comparisons.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineDocument {
    /// The regular document (suite `machine`).
    #[serde(flatten)]
    pub document: Document,
    /// Quick, default or full.
    pub mode: Mode,
    /// What the machine is.
    pub description: Description,
    /// Cache levels detected from the latency curve, checked against sysfs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache_levels: Vec<CacheLevel>,
    /// The memory latency curve (both THP settings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency_curve: Vec<CurvePoint>,
    /// Measurements not taken and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    /// `--compare` ratios.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<Comparison>,
    /// SVG files written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plots: Vec<PathBuf>,
    /// With `--repeat N`: the spread of every row's median over the N runs
    /// (the document's rows are those of the first run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeatability: Option<repeat::Repeatability>,
}

/// Errors that stop the whole run (single measurements that fail are
/// reported as skipped instead).
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    /// The output directory could not be created.
    #[error("cannot create output directory {path}: {source}")]
    OutDir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The run was interrupted by a signal; everything was cleaned up.
    #[error("interrupted by signal {0}; cleaned up")]
    Interrupted(i32),
    /// A run of [`repeat::run_separately`] failed.
    #[error("run {run} of {runs}: {reason}")]
    Repeat {
        /// Which run (1-based).
        run: usize,
        /// Of how many.
        runs: usize,
        /// What went wrong.
        reason: String,
    },
    /// The run's [`RunContext`] was cancelled; everything was cleaned up.
    #[error("cancelled; cleaned up")]
    Cancelled,
    /// An `--only` list named no measurement or an unknown one.
    #[error("{0}")]
    Only(String),
    /// Running the suite as a command (announcing, printing, signals).
    #[error(transparent)]
    Measure(#[from] takt_measure::error::MeasureError),
    /// `--serve` could not serve.
    #[error("--serve {addr}: {source}")]
    Serve {
        /// The address asked for.
        addr: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// `--repeat` could not find the program to run again.
    #[error("cannot find the takt binary: {source}")]
    Exe {
        /// The OS error.
        source: std::io::Error,
    },
}

/// A curve for the plots: a named series of (x, y) points.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points.
    pub points: Vec<(f64, f64)>,
}

/// State shared by the families during one run.
#[derive(Debug)]
pub(crate) struct Ctx {
    pub(crate) cfg: Config,
    pub(crate) doc: DocumentBuilder,
    pub(crate) skipped: Vec<Skipped>,
    pub(crate) levels: Vec<CacheLevel>,
    pub(crate) comparisons: Vec<Comparison>,
    pub(crate) desc: Description,
    /// Latency curves (with/without THP) for the plot.
    pub(crate) latency_series: Vec<Series>,
    /// Latency curve points for the document.
    pub(crate) latency_curve: Vec<CurvePoint>,
    /// Contention curve (readers → µs per block).
    pub(crate) contention_series: Vec<Series>,
    /// File-cache sweep (MiB → ns per 4 KiB block).
    pub(crate) filecache_series: Vec<Series>,
    /// The O_DIRECT test file, kept for `--compare` (fio reads the same file).
    pub(crate) direct_file: Option<(PathBuf, u64, Vec<cleanup::Guard>)>,
    /// The family running now (tags its rows' `detail.family`).
    family: Option<Family>,
    /// Core clock measured for estimates when `timer` did not run.
    core_mhz: std::sync::OnceLock<f64>,
    run_ctx: RunContext,
}

impl Ctx {
    pub(crate) fn progress(&self, msg: &str) {
        self.run_ctx.step(msg);
    }

    pub(crate) fn push(&mut self, mut s: Sampled) {
        if s.samples.is_empty() {
            self.skip(&s.name, "no samples were taken");
            return;
        }
        if let Some(f) = self.family {
            s = s.extra("family", f.name());
        }
        let row = s.into_row();
        kinds::check(&row);
        self.doc.push(row);
    }

    pub(crate) fn push_row(&mut self, row: ResultRow) {
        kinds::check(&row);
        self.doc.push(row);
    }

    pub(crate) fn skip(&mut self, name: &str, reason: impl Into<String>) {
        let reason = reason.into();
        self.progress(&format!("skipped {name}: {reason}"));
        self.skipped.push(Skipped {
            name: name.into(),
            reason,
        });
    }

    /// The median of an already measured takt row, for later estimates.
    pub(crate) fn measured(&self, name: &str, param: Option<(&str, &str)>) -> Option<f64> {
        self.doc
            .rows()
            .iter()
            .find(|r| {
                r.implementation == "takt"
                    && r.name == name
                    && param.is_none_or(|(k, v)| {
                        r.params.get(k).and_then(|x| x.as_str()) == Some(v)
                            || r.params.get(k).map(|x| x.to_string()).as_deref() == Some(v)
                    })
            })
            .and_then(|r| r.median())
    }

    /// The time budget for one measurement whose default-mode budget is `d`.
    pub(crate) fn budget(&self, d: Duration) -> Duration {
        self.cfg.mode.scale(d)
    }

    /// Core clock in GHz: the `timer` family's row, else a quick
    /// measurement taken once for the estimates.
    pub(crate) fn core_ghz(&self) -> f64 {
        self.measured("core_frequency", None)
            .unwrap_or_else(|| *self.core_mhz.get_or_init(timer::quick_core_mhz))
            / 1000.0
    }
}

/// Runs the selected measurements and returns the document, with
/// progress lines on stderr when `cfg.progress` is set.
///
/// Installs the process's signal handling first
/// ([`takt_measure::cancel::install`]): after SIGINT, SIGTERM or
/// SIGHUP the run stops at its next sample, removes everything it created
/// and returns [`MachineError::Interrupted`].
pub fn run(cfg: Config) -> Result<MachineDocument, MachineError> {
    let progress = if cfg.progress {
        Progress::lines()
    } else {
        Progress::hidden()
    };
    run_with(cfg, &RunContext::new(progress, Cancel::new()))
}

impl SuiteOutput for MachineDocument {
    fn document(&self) -> &Document {
        &self.document
    }
    fn render(&self) -> String {
        render(self)
    }
}

impl Suite for Config {
    type Output = MachineDocument;
    type Error = MachineError;

    fn name(&self) -> &str {
        "machine"
    }

    fn estimate(&self) -> Duration {
        self.expected_duration()
    }

    fn describe(&self) -> String {
        format!("{} run", self.mode.name())
    }

    fn run(&self, ctx: &RunContext) -> Result<MachineDocument, MachineError> {
        run_with(self.clone(), ctx)
    }
}

/// [`run`] with progress and cancellation from `ctx`: one progress stage
/// per family with its estimated time; a cancelled `ctx` stops the run
/// after the current family ([`MachineError::Cancelled`]), cleaned up.
pub fn run_with(cfg: Config, run_ctx: &RunContext) -> Result<MachineDocument, MachineError> {
    crate::install_signal_handling();
    std::fs::create_dir_all(&cfg.out_dir).map_err(|source| MachineError::OutDir {
        path: cfg.out_dir.clone(),
        source,
    })?;
    let desc = Description::read();
    let mut ctx = Ctx {
        doc: DocumentBuilder::start("machine"),
        skipped: Vec::new(),
        levels: Vec::new(),
        comparisons: Vec::new(),
        desc,
        latency_series: Vec::new(),
        latency_curve: Vec::new(),
        contention_series: Vec::new(),
        filecache_series: Vec::new(),
        direct_file: None,
        family: None,
        core_mhz: std::sync::OnceLock::new(),
        run_ctx: run_ctx.clone(),
        cfg,
    };
    ctx.doc.note(format!(
        "mode {}; outliers: {}",
        ctx.cfg.mode.name(),
        stats::OUTLIER_RULE
    ));
    if ctx.desc.tsc_mhz <= 0.0 {
        ctx.doc
            .note("no invariant TSC: timings use CLOCK_MONOTONIC (coarser)");
    }
    for family in Family::ALL {
        if !ctx.cfg.runs(family) {
            continue;
        }
        let stage = run_ctx.stage(family.name(), ctx.cfg.family_duration(family));
        ctx.family = Some(family);
        match family {
            Family::Timer => timer::run(&mut ctx),
            Family::Loop => loops::run(&mut ctx),
            Family::Call => calls::run(&mut ctx),
            Family::Syscall => syscalls::run(&mut ctx),
            Family::Create => create::run(&mut ctx),
            Family::Ctxsw => ctxsw::run(&mut ctx),
            Family::Latency => latency::run(&mut ctx),
            Family::Bandwidth => bandwidth::run(&mut ctx),
            Family::Pagefault => pagefault::run(&mut ctx),
            Family::Net => net::run(&mut ctx),
            Family::Fs => fs::run(&mut ctx),
        }
        stage.finish();
        if let Some(sig) = crate::interrupted() {
            cleanup::run_all();
            return Err(MachineError::Interrupted(sig));
        }
        if run_ctx.is_cancelled() {
            cleanup::run_all();
            return Err(MachineError::Cancelled);
        }
    }
    ctx.family = None;
    if ctx.cfg.compare {
        compare::run(&mut ctx);
    }
    // The file kept for fio.
    ctx.direct_file = None;
    if ctx.cfg.nfs.is_none() && ctx.cfg.runs(Family::Fs) {
        ctx.skip(
            "nfs_read",
            "not measured: no --nfs PATH given (a file on an NFS mount)",
        );
    }
    let plots = plot::write_all(&ctx);
    cleanup::run_all();
    let mut plot_paths = Vec::new();
    for p in plots {
        match p {
            Ok(path) => plot_paths.push(path),
            Err(e) => ctx.doc.note(format!("plot not written: {e}")),
        }
    }
    for s in &ctx.skipped {
        ctx.doc
            .note(format!("not measured: {}: {}", s.name, s.reason));
    }
    let document = ctx.doc.finish();
    Ok(MachineDocument {
        document,
        mode: ctx.cfg.mode,
        description: ctx.desc,
        cache_levels: ctx.levels,
        latency_curve: ctx.latency_curve,
        skipped: ctx.skipped,
        comparisons: ctx.comparisons,
        plots: plot_paths,
        repeatability: None,
    })
}

/// Renders the human report: the description, a table with method,
/// estimate and measured statistics, cache levels, comparisons.
pub fn render(doc: &MachineDocument) -> String {
    let mut out = doc.description.render();
    out.push('\n');
    out.push_str(&stats::render_rows(&doc.document));
    if !doc.cache_levels.is_empty() {
        out.push_str("\ncache levels detected from the latency curve:\n");
        for l in &doc.cache_levels {
            out.push_str(&format!("  {}\n", l.describe()));
        }
    }
    if !doc.comparisons.is_empty() {
        let mut t = Table::titled("\n--compare (takt / reference tool, same run)")
            .text("quantity")
            .text("tool")
            .number("ratio")
            .number("interleaved")
            .text("within 15%")
            .number("best vs best");
        let mut differences = String::new();
        for c in &doc.comparisons {
            t.push(vec![
                c.name.clone(),
                c.tool.clone(),
                format!("{:.3}", c.ratio),
                c.ratio_interleaved
                    .map(|r| format!("{r:.3}"))
                    .unwrap_or_default(),
                if c.within_15pct { "ok" } else { "OFF" }.into(),
                format!("{:.3}", c.ratio_best),
            ]);
            differences.push_str(&format!("  {} / {}: {}\n", c.name, c.tool, c.difference));
        }
        t.drop_empty_columns();
        out.push_str(&t.render());
        out.push_str("what differs:\n");
        out.push_str(&differences);
    }
    if let Some(rep) = &doc.repeatability {
        out.push_str(&repeat::render(rep));
    }
    for p in &doc.plots {
        out.push_str(&format!("plot: {}\n", p.display()));
    }
    out.push('\n');
    out.push_str(&takt_measure::output::machine_line(&doc.document));
    for n in &doc.document.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_list_parses_and_rejects() {
        assert_eq!(
            Family::parse_list("syscall,timer,timer").unwrap(),
            vec![Family::Timer, Family::Syscall]
        );
        let e = Family::parse_list("timer,bogus").unwrap_err().to_string();
        assert!(e.contains("unknown measurement `bogus`"), "{e}");
        assert!(e.contains("pagefault"), "{e}");
        assert!(Family::parse_list(",").is_err());
    }

    #[test]
    fn expected_duration_fits_targets() {
        let q = Config::new(Mode::Quick).expected_duration();
        assert!(q < Duration::from_secs(90), "{q:?}");
        let d = Config::new(Mode::Default).expected_duration();
        assert!(d < Duration::from_secs(600), "{d:?}");
    }
}
