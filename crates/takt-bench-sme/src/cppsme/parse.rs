//! The one line a C++SME benchmark program prints, parsed strictly.
//!
//! `ThreadedRun::start<T>()` prints `__PRETTY_FUNCTION__` and four numbers:
//! `void ThreadedRun::start() [with T = CQueue] 2 1000 20000 0.69`
//! (threads, cycles, processes, seconds). Anything else — another line, a
//! missing or extra field, a number that is not the one asked for — is an
//! [`OutputError`].

use super::{PeerRun, Sched};

/// What a run reported.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reported {
    /// Its executor (`[with T = ...]`).
    pub sched: Sched,
    /// Threads it ran (it lowers the count to the processes when fewer).
    pub threads: usize,
    /// Cycles.
    pub cycles: u64,
    /// Processes.
    pub processes: usize,
    /// Seconds from starting its threads to joining them.
    pub seconds: f64,
}

/// Why a program's output is not what it should be.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OutputError {
    /// It wrote to stderr (the programs never do when all is well).
    #[error("it wrote to stderr")]
    Stderr,
    /// Nothing on stdout.
    #[error("it printed nothing")]
    Empty,
    /// More than the one line.
    #[error("{0} lines where one was expected")]
    Lines(usize),
    /// The line is not `... [with T = X] THREADS STEPS NPROCS SECONDS`.
    #[error("not `... [with T = X] THREADS STEPS NPROCS SECONDS`")]
    Shape,
    /// `T` is neither BQueue nor CQueue.
    #[error("unknown executor class {0:?}")]
    Queue(String),
    /// A field is not a number.
    #[error("{field} {text:?} is not a number")]
    Number {
        /// Which field.
        field: &'static str,
        /// What it held.
        text: String,
    },
    /// The seconds are not a positive finite number.
    #[error("seconds {0:?} is not a positive time")]
    Seconds(String),
    /// It ran something other than what it was asked.
    #[error("it ran {field} {got}, asked for {want}")]
    Mismatch {
        /// Which field.
        field: &'static str,
        /// What it printed.
        got: String,
        /// What its environment said.
        want: String,
    },
}

/// Parses `stdout` of `run` strictly (a final newline is allowed).
pub fn parse(stdout: &str, run: &PeerRun) -> Result<Reported, OutputError> {
    let lines: Vec<&str> = stdout.lines().collect();
    let line = match lines.as_slice() {
        [] => return Err(OutputError::Empty),
        [l] if l.trim().is_empty() => return Err(OutputError::Empty),
        [l] => *l,
        more => return Err(OutputError::Lines(more.len())),
    };
    const OPEN: &str = "[with T = ";
    let at = line.find(OPEN).ok_or(OutputError::Shape)?;
    if !line[..at].contains("ThreadedRun::start") {
        return Err(OutputError::Shape);
    }
    let rest = &line[at + OPEN.len()..];
    let close = rest.find(']').ok_or(OutputError::Shape)?;
    let queue = &rest[..close];
    let sched = Sched::ALL
        .into_iter()
        .find(|s| s.queue() == queue)
        .ok_or_else(|| OutputError::Queue(queue.to_string()))?;
    let fields: Vec<&str> = rest[close + 1..].split_ascii_whitespace().collect();
    let [threads, cycles, processes, seconds] = fields.as_slice() else {
        return Err(OutputError::Shape);
    };
    let int = |field: &'static str, text: &str| {
        text.parse::<u64>().map_err(|_| OutputError::Number {
            field,
            text: text.to_string(),
        })
    };
    let got = Reported {
        sched,
        threads: int("threads", threads)? as usize,
        cycles: int("cycles", cycles)?,
        processes: int("processes", processes)? as usize,
        seconds: seconds.parse::<f64>().map_err(|_| OutputError::Number {
            field: "seconds",
            text: seconds.to_string(),
        })?,
    };
    if !(got.seconds.is_finite() && got.seconds > 0.0) {
        return Err(OutputError::Seconds(seconds.to_string()));
    }
    let mismatch = |field, got: String, want: String| OutputError::Mismatch { field, got, want };
    if got.sched != run.sched {
        return Err(mismatch(
            "executor",
            got.sched.queue().into(),
            run.sched.queue().into(),
        ));
    }
    if got.threads != run.threads {
        return Err(mismatch(
            "threads",
            got.threads.to_string(),
            run.threads.to_string(),
        ));
    }
    if got.cycles != run.cycles {
        return Err(mismatch(
            "cycles",
            got.cycles.to_string(),
            run.cycles.to_string(),
        ));
    }
    if got.processes != run.processes {
        return Err(mismatch(
            "processes",
            got.processes.to_string(),
            run.processes.to_string(),
        ));
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::super::Program;
    use super::*;

    const RUN: PeerRun = PeerRun {
        program: Program::RingDynamic,
        sched: Sched::Worklist,
        processes: 20_000,
        cycles: 1_000,
        threads: 2,
    };

    fn err(out: &str) -> OutputError {
        parse(out, &RUN).unwrap_err()
    }

    #[test]
    fn good_output_parses() {
        let r = parse(
            "void ThreadedRun::start() [with T = CQueue] 2 1000 20000 0.697641\n",
            &RUN,
        )
        .unwrap();
        assert_eq!(
            r,
            Reported {
                sched: Sched::Worklist,
                threads: 2,
                cycles: 1000,
                processes: 20000,
                seconds: 0.697641
            }
        );
        let stat = PeerRun {
            sched: Sched::Static,
            ..RUN
        };
        let r = parse(
            "void ThreadedRun::start() [with T = BQueue] 2 1000 20000 1.5e-3",
            &stat,
        )
        .unwrap();
        assert_eq!(r.seconds, 1.5e-3);
    }

    #[test]
    fn each_malformed_kind_is_named() {
        assert_eq!(err(""), OutputError::Empty);
        assert_eq!(err("\n"), OutputError::Empty);
        assert_eq!(
            err(
                "Less network processes than threads. Limiting number of threads to 1\n\
                 void ThreadedRun::start() [with T = CQueue] 1 1000 20000 0.5\n"
            ),
            OutputError::Lines(2)
        );
        assert_eq!(err("Segmentation fault"), OutputError::Shape);
        assert_eq!(
            err("void main() [with T = CQueue] 2 1000 20000 0.5"),
            OutputError::Shape
        );
        assert_eq!(
            err("void ThreadedRun::start() [with T = CQueue 2 1000 20000 0.5"),
            OutputError::Shape
        );
        assert_eq!(
            err("void ThreadedRun::start() [with T = CQueue] 2 1000 20000"),
            OutputError::Shape
        );
        assert_eq!(
            err("void ThreadedRun::start() [with T = CQueue] 2 1000 20000 0.5 7"),
            OutputError::Shape
        );
        assert_eq!(
            err("void ThreadedRun::start() [with T = DQueue] 2 1000 20000 0.5"),
            OutputError::Queue("DQueue".into())
        );
        assert_eq!(
            err("void ThreadedRun::start() [with T = CQueue] two 1000 20000 0.5"),
            OutputError::Number {
                field: "threads",
                text: "two".into()
            }
        );
        assert_eq!(
            err("void ThreadedRun::start() [with T = CQueue] 2 1000 20000 fast"),
            OutputError::Number {
                field: "seconds",
                text: "fast".into()
            }
        );
        for bad in ["0", "-1.0", "nan", "inf"] {
            assert_eq!(
                err(&format!(
                    "void ThreadedRun::start() [with T = CQueue] 2 1000 20000 {bad}"
                )),
                OutputError::Seconds(bad.into()),
                "{bad}"
            );
        }
        assert!(matches!(
            err("void ThreadedRun::start() [with T = BQueue] 2 1000 20000 0.5"),
            OutputError::Mismatch {
                field: "executor",
                ..
            }
        ));
        assert!(matches!(
            err("void ThreadedRun::start() [with T = CQueue] 1 1000 20000 0.5"),
            OutputError::Mismatch {
                field: "threads",
                ..
            }
        ));
        assert!(matches!(
            err("void ThreadedRun::start() [with T = CQueue] 2 999 20000 0.5"),
            OutputError::Mismatch {
                field: "cycles",
                ..
            }
        ));
        assert!(matches!(
            err("void ThreadedRun::start() [with T = CQueue] 2 1000 2000 0.5"),
            OutputError::Mismatch {
                field: "processes",
                ..
            }
        ));
    }
}
