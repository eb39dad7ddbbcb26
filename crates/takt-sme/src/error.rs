//! Errors: the crate's one error type [`Error`], and the narrower types
//! its operations return — building a network ([`BuildError`]), running it
//! ([`RunError`]) and naming an executor ([`UnknownExecutor`]) — each of
//! which converts into it with `?`.

use takt_sched::SchedError;

use crate::ExecutorKind;

/// Anything takt-sme can fail with.
///
/// Each operation returns the narrowest type that says what can go wrong
/// there, so that a `match` on, say, a run's error has no arm for a
/// building mistake: [`NetworkBuilder::build`](crate::NetworkBuilder::build)
/// a [`BuildError`], [`Network::run`](crate::Network::run) a [`RunError`],
/// parsing an [`ExecutorKind`] an [`UnknownExecutor`]. A program that does
/// all three (parse the executor from its command line, build, run) returns
/// this type and lets `?` convert:
///
/// ```
/// use takt_sme::{Executor, ExecutorKind, NetworkBuilder};
/// fn run(executor: &str) -> Result<u64, takt_sme::Error> {
///     let kind: ExecutorKind = executor.parse()?;
///     let mut net = NetworkBuilder::new().build()?;
///     Ok(net.run(&Executor::new(kind, 1), 10)?.cycles)
/// }
/// assert_eq!(run("sequential").unwrap(), 10);
/// assert!(matches!(run("fast"), Err(takt_sme::Error::Executor(_))));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A network that cannot be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// A run that failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// An executor name that is not one of [`ExecutorKind::ALL`].
    #[error(transparent)]
    Executor(#[from] UnknownExecutor),
}

/// A name that is not an executor's (parsing an [`ExecutorKind`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown executor {name:?} (expected {})", expected())]
pub struct UnknownExecutor {
    /// The name given.
    pub name: String,
}

/// The names of [`ExecutorKind::ALL`]: `sequential, static, worklist,
/// stealing, balanced, thesis_static or thesis_worklist`.
fn expected() -> String {
    let names: Vec<&str> = ExecutorKind::ALL.iter().map(|k| k.name()).collect();
    let (last, rest) = names.split_last().expect("there are executors");
    format!("{} or {last}", rest.join(", "))
}

/// A network that cannot be built. Every variant names what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// Two processes claimed the write port of one signal.
    #[error("signal {bus}.{signal} has two writers: process {first:?} and process {second:?} (a signal has exactly one writer)")]
    TwoWriters {
        /// Bus name.
        bus: String,
        /// Signal name.
        signal: String,
        /// The process that claimed it first.
        first: String,
        /// The process that claimed it again.
        second: String,
    },
    /// A process claimed the write port of the same signal twice.
    #[error("process {process:?} claims signal {bus}.{signal} as an output twice")]
    OutputTwice {
        /// Process name.
        process: String,
        /// Bus name.
        bus: String,
        /// Signal name.
        signal: String,
    },
    /// A signal nobody writes.
    #[error(
        "signal {bus}.{signal} has no writer (every signal needs exactly one writing process)"
    )]
    NoWriter {
        /// Bus name.
        bus: String,
        /// Signal name.
        signal: String,
    },
    /// A signal handle from another network builder.
    #[error("process {process:?} uses a signal handle of another network")]
    ForeignSignal {
        /// Process name.
        process: String,
    },
    /// A bus handle from another network builder.
    #[error("bus handle #{bus} does not belong to this network builder")]
    ForeignBus {
        /// The bus handle's index.
        bus: usize,
    },
    /// Two buses with one name, two signals with one name on a bus, or two
    /// processes with one name.
    #[error("duplicate {what} name {name:?}")]
    DuplicateName {
        /// `bus`, `signal` or `process`.
        what: &'static str,
        /// The repeated name.
        name: String,
    },
    /// An empty name.
    #[error("empty {what} name")]
    EmptyName {
        /// `bus`, `signal` or `process`.
        what: &'static str,
    },
    /// A signal type aligned beyond what the value buffers guarantee.
    #[error(
        "signal {bus}.{signal}: type {type_name} needs alignment {align}, at most 16 is supported"
    )]
    AlignTooLarge {
        /// Bus name.
        bus: String,
        /// Signal name.
        signal: String,
        /// The type.
        type_name: &'static str,
        /// Its alignment.
        align: usize,
    },
    /// Beyond the network's capacity.
    #[error("too many {what}: at most {max}")]
    TooMany {
        /// `processes of one type`, `process types`, `signals` or `bytes of signal values`.
        what: &'static str,
        /// The limit.
        max: usize,
    },
}

/// A run that failed. The network's committed state is that of the end of
/// the cycle in which the error happened (for [`RunError::Spawn`], of the
/// cycle before the run).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A signal written twice in one cycle.
    #[error("cycle {cycle}: process {process:?} wrote signal {bus}.{signal} twice in one cycle")]
    DoubleWrite {
        /// Cycle number.
        cycle: u64,
        /// Writing process.
        process: String,
        /// Bus name.
        bus: String,
        /// Signal name.
        signal: String,
    },
    /// A write through a port the process does not own (a write handle moved
    /// into another process).
    #[error("cycle {cycle}: process {process:?} wrote signal {bus}.{signal}, which belongs to process {owner:?}")]
    NotOwner {
        /// Cycle number.
        cycle: u64,
        /// The process that wrote.
        process: String,
        /// Bus name.
        bus: String,
        /// Signal name.
        signal: String,
        /// Its registered writer.
        owner: String,
    },
    /// A read of an undefined value (debug mode).
    #[error(
        "cycle {cycle}: process {process:?} read signal {bus}.{signal} while it was undefined"
    )]
    UndefinedRead {
        /// Cycle number.
        cycle: u64,
        /// Reading process.
        process: String,
        /// Bus name.
        bus: String,
        /// Signal name.
        signal: String,
    },
    /// A process panicked in `step`; the network is poisoned.
    #[error("cycle {cycle}: process {process:?} panicked: {message}")]
    Panicked {
        /// Cycle number.
        cycle: u64,
        /// The process.
        process: String,
        /// The panic payload, if it was a string.
        message: String,
    },
    /// An earlier run ended with a panic; process states may be inconsistent.
    #[error("the network is poisoned: a process panicked in an earlier run")]
    Poisoned,
    /// An executor asked for no threads, or for more than the executor
    /// supports.
    #[error("invalid executor configuration: {requested} threads requested; between 1 and {max} are supported")]
    Threads {
        /// The thread count asked for.
        requested: usize,
        /// The most an executor may use ([`MAX_THREADS`](crate::MAX_THREADS)).
        max: usize,
    },
    /// A worker thread could not be created with its spec.
    #[error("cannot start executor thread: {0}")]
    Spawn(#[from] SchedError),
    /// Writing the trace failed.
    #[error("trace output failed: {0}")]
    Trace(#[from] std::io::Error),
}

/// A fault as workers record it: indices only, resolved to names after the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    DoubleWrite {
        cycle: u64,
        process: u32,
        signal: u32,
    },
    NotOwner {
        cycle: u64,
        process: u32,
        signal: u32,
        owner: u32,
    },
    UndefinedRead {
        cycle: u64,
        process: u32,
        signal: u32,
    },
    Panicked {
        cycle: u64,
        process: u32,
        message: String,
    },
}

impl Fault {
    /// Orders faults so the reported one does not depend on the executor:
    /// earliest cycle, then first process in execution order (packed ids
    /// order like execution indices).
    pub(crate) fn key(&self) -> (u64, u32) {
        match *self {
            Fault::DoubleWrite { cycle, process, .. }
            | Fault::NotOwner { cycle, process, .. }
            | Fault::UndefinedRead { cycle, process, .. }
            | Fault::Panicked { cycle, process, .. } => (cycle, process),
        }
    }
}
