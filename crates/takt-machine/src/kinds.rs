//! Every kind of row the suite emits — name, implementation, unit,
//! direction and parameter keys — in one table.
//!
//! The families start every row from its kind ([`RowKind::sampled`]) and
//! add the parameters they measured at; every row passes through
//! [`check`] on its way into the document (`Ctx::push`, `Ctx::push_row`),
//! which in debug builds insists its shape is one listed here. So the
//! table is the suite's document shape, and [`synthetic_rows`] builds one
//! row of every kind from it without measuring anything: the document
//! shape test (`crates/takt/tests/document_shapes.rs`) compares them with
//! its snapshot.
//!
//! The modes (quick, default, full) change sizes, budgets and how many
//! rows of a kind there are (sweep points, placements), never the kinds:
//! one table serves all three. `--compare` adds a reference tool's row of
//! the same name, unit and parameters as the takt row it pairs with
//! ([`COMPARED`]).

use takt_measure::result::{Better, ResultRow};

use crate::stats::Sampled;

/// One kind of row.
#[derive(Debug)]
pub(crate) struct RowKind {
    pub(crate) name: &'static str,
    /// `takt`, or `takt-spec` for the `ThreadSpec` variant of a row.
    pub(crate) implementation: &'static str,
    pub(crate) unit: &'static str,
    pub(crate) better: Better,
    /// Parameter keys, each with an example value for [`synthetic_rows`]
    /// (a number or `true`/`false` is written as one).
    pub(crate) params: &'static [(&'static str, &'static str)],
}

impl RowKind {
    /// A row of this kind measured by `method`: add its parameters (the
    /// keys listed here), estimate and samples.
    pub(crate) fn sampled(&self, method: impl Into<String>) -> Sampled {
        let mut s = Sampled::new(self.name, self.unit, self.better, method);
        s.implementation = self.implementation.into();
        s
    }

    /// Whether `row` is of this kind (name, implementation, unit and the
    /// parameter keys).
    fn matches(&self, implementation: &str, row: &ResultRow) -> bool {
        self.name == row.name
            && implementation == row.implementation
            && self.unit == row.unit
            && self.params.len() == row.params.len()
            && self.params.iter().all(|(k, _)| row.params.contains_key(*k))
    }

    /// A synthetic row of this kind as `implementation`: the example
    /// parameters, three fixed samples.
    fn synthetic(&self, implementation: &str) -> ResultRow {
        let mut s = self.sampled("synthetic: nothing measured");
        s.implementation = implementation.into();
        for (k, v) in self.params {
            s = s.param(k, example(v));
        }
        s.with_samples(vec![1.0, 2.0, 3.0], 0.0).into_row()
    }
}

/// An example value as the families write it: numbers and booleans as
/// such, anything else as a string.
fn example(v: &str) -> serde_json::Value {
    if let Ok(n) = v.parse::<u64>() {
        n.into()
    } else if let Ok(b) = v.parse::<bool>() {
        b.into()
    } else {
        v.into()
    }
}

const fn takt(
    name: &'static str,
    unit: &'static str,
    better: Better,
    params: &'static [(&'static str, &'static str)],
) -> RowKind {
    RowKind {
        name,
        implementation: "takt",
        unit,
        better,
        params,
    }
}

use Better::{Higher, Lower};

// timer
pub(crate) const CORE_FREQUENCY: RowKind = takt("core_frequency", "MHz", Higher, &[]);
pub(crate) const TIMER_FENCED: RowKind = takt("timer_fenced", "ns", Lower, &[]);
pub(crate) const TIMER_RDTSC: RowKind = takt("timer_rdtsc", "ns", Lower, &[]);
pub(crate) const TIMER_CPUID: RowKind = takt("timer_cpuid", "ns", Lower, &[]);
pub(crate) const TIMER_INSTANT: RowKind = takt("timer_instant", "ns", Lower, &[]);
// loop
pub(crate) const LOOP_OVERHEAD: RowKind = takt("loop_overhead", "ns/iteration", Lower, &[]);
// call
pub(crate) const PROCEDURE_CALL: RowKind = takt("procedure_call", "ns", Lower, &[("args", "0")]);
// syscall
pub(crate) const SYSCALL_GETPID: RowKind = takt("syscall_getpid", "ns", Lower, &[]);
pub(crate) const SYSCALL_GETPPID: RowKind = takt("syscall_getppid", "ns", Lower, &[]);
pub(crate) const SYSCALL_GETCWD: RowKind = takt("syscall_getcwd", "ns", Lower, &[]);
pub(crate) const SYSCALL_READ: RowKind = takt("syscall_read", "ns", Lower, &[]);
pub(crate) const SYSCALL_WRITE: RowKind = takt("syscall_write", "ns", Lower, &[]);
pub(crate) const SYSCALL_STAT: RowKind = takt("syscall_stat", "ns", Lower, &[]);
pub(crate) const SYSCALL_OPEN_CLOSE: RowKind = takt("syscall_open_close", "ns", Lower, &[]);
// create
pub(crate) const FORK_TO_CHILD: RowKind = takt("fork_to_child", "us", Lower, &[]);
pub(crate) const FORK_EXIT_WAIT: RowKind = takt("fork_exit_wait", "us", Lower, &[]);
pub(crate) const THREAD_TO_FIRST: RowKind = takt("thread_to_first", "us", Lower, &[]);
pub(crate) const THREAD_CREATE_JOIN: RowKind = takt("thread_create_join", "us", Lower, &[]);
pub(crate) const THREAD_CREATE_JOIN_SPEC: RowKind = RowKind {
    implementation: "takt-spec",
    ..THREAD_CREATE_JOIN
};
// ctxsw
const PLACEMENT: &[(&str, &str)] = &[("placement", "same_cpu")];
pub(crate) const CTXSW_PROCESS: RowKind = takt("ctxsw_process", "us/switch", Lower, PLACEMENT);
pub(crate) const CTXSW_THREAD_FUTEX: RowKind =
    takt("ctxsw_thread_futex", "us/switch", Lower, PLACEMENT);
pub(crate) const CTXSW_THREAD_CONDVAR: RowKind =
    takt("ctxsw_thread_condvar", "us/switch", Lower, PLACEMENT);
// latency
pub(crate) const MEM_LATENCY: RowKind = takt(
    "mem_latency",
    "ns",
    Lower,
    &[("level", "L1"), ("thp", "false")],
);
// bandwidth
pub(crate) const MEM_BANDWIDTH: RowKind = takt(
    "mem_bandwidth",
    "GB/s",
    Higher,
    &[
        ("op", "read"),
        ("threads", "1"),
        ("huge_pages", "false"),
        ("bytes", "134217728"),
    ],
);
// pagefault
pub(crate) const PAGE_FAULT: RowKind = takt("page_fault", "us", Lower, &[("kind", "minor_anon")]);
// net
const PEER: &[(&str, &str)] = &[("peer", "loopback")];
pub(crate) const TCP_RTT: RowKind = takt("tcp_rtt", "us", Lower, PEER);
pub(crate) const UDP_RTT: RowKind = takt("udp_rtt", "us", Lower, PEER);
pub(crate) const TCP_BANDWIDTH: RowKind = takt(
    "tcp_bandwidth",
    "GB/s",
    Higher,
    &[
        ("peer", "loopback"),
        ("placement", "same_cpu"),
        ("window_ms", "500"),
    ],
);
pub(crate) const TCP_CONNECT: RowKind = takt("tcp_connect", "us", Lower, PEER);
pub(crate) const TCP_TEARDOWN: RowKind = takt("tcp_teardown", "us", Lower, PEER);
// fs
pub(crate) const FILE_CACHE_READ: RowKind =
    takt("file_cache_read", "ns/block", Lower, &[("file_mib", "16")]);
pub(crate) const FILE_CACHE_SIZE: RowKind = takt("file_cache_size", "MiB", Higher, &[]);
/// O_DIRECT reads of one 4 KiB block.
pub(crate) const DISK_READ_BLOCK: RowKind = takt(
    "disk_read",
    "us/block",
    Lower,
    &[
        ("pattern", "random"),
        ("block", "4096"),
        ("location", "local"),
    ],
);
/// O_DIRECT reads of 1 MiB, by the buffer they read into.
pub(crate) const DISK_READ_MIB: RowKind = takt(
    "disk_read",
    "MB/s",
    Higher,
    &[
        ("pattern", "sequential"),
        ("block", "1048576"),
        ("location", "local"),
        ("buffer", "pages"),
    ],
);
pub(crate) const FS_CONTENTION: RowKind =
    takt("fs_contention", "us/block", Lower, &[("readers", "1")]);

/// Every kind, in the order the families run.
pub(crate) const ALL: &[&RowKind] = &[
    &CORE_FREQUENCY,
    &TIMER_FENCED,
    &TIMER_RDTSC,
    &TIMER_CPUID,
    &TIMER_INSTANT,
    &LOOP_OVERHEAD,
    &PROCEDURE_CALL,
    &SYSCALL_GETPID,
    &SYSCALL_GETPPID,
    &SYSCALL_GETCWD,
    &SYSCALL_READ,
    &SYSCALL_WRITE,
    &SYSCALL_STAT,
    &SYSCALL_OPEN_CLOSE,
    &FORK_TO_CHILD,
    &FORK_EXIT_WAIT,
    &THREAD_TO_FIRST,
    &THREAD_CREATE_JOIN,
    &THREAD_CREATE_JOIN_SPEC,
    &CTXSW_PROCESS,
    &CTXSW_THREAD_FUTEX,
    &CTXSW_THREAD_CONDVAR,
    &MEM_LATENCY,
    &MEM_BANDWIDTH,
    &PAGE_FAULT,
    &TCP_RTT,
    &UDP_RTT,
    &TCP_BANDWIDTH,
    &TCP_CONNECT,
    &TCP_TEARDOWN,
    &FILE_CACHE_READ,
    &FILE_CACHE_SIZE,
    &DISK_READ_BLOCK,
    &DISK_READ_MIB,
    &FS_CONTENTION,
];

/// `--compare`: the reference tool whose row pairs with a takt kind (same
/// name, unit and parameters; the tool's name as the implementation).
pub(crate) const COMPARED: &[(&RowKind, &str)] = &[
    (&CTXSW_PROCESS, "perf-bench"),
    (&SYSCALL_GETPPID, "perf-bench"),
    (&MEM_BANDWIDTH, "sysbench"),
    (&TCP_BANDWIDTH, "iperf3"),
    (&DISK_READ_BLOCK, "fio"),
    (&DISK_READ_MIB, "fio"),
];

/// Whether `row`'s shape is one of the table's (a takt kind, or a
/// reference tool's row paired with one).
pub(crate) fn known(row: &ResultRow) -> bool {
    ALL.iter().any(|k| k.matches(k.implementation, row))
        || COMPARED.iter().any(|(k, tool)| k.matches(tool, row))
}

/// Checks, in debug builds, that `row` is of a listed kind: a row built
/// outside the table would leave the document shape snapshot behind.
pub(crate) fn check(row: &ResultRow) {
    debug_assert!(
        known(row),
        "takt-machine: row {} [{}] in {} with params {:?} is not in kinds.rs",
        row.name,
        row.implementation,
        row.unit,
        row.params.keys().collect::<Vec<_>>()
    );
}

/// One row of every kind the suite emits, in every mode, with `--compare`
/// — built from the table on fixed synthetic samples, without measuring or
/// touching the system (for the document shape test).
#[doc(hidden)]
pub fn synthetic_rows() -> Vec<ResultRow> {
    let mut rows: Vec<ResultRow> = ALL.iter().map(|k| k.synthetic(k.implementation)).collect();
    rows.extend(COMPARED.iter().map(|(k, tool)| k.synthetic(tool)));
    for r in &rows {
        check(r);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_rows_are_of_their_kinds_and_others_are_not() {
        let rows = synthetic_rows();
        assert_eq!(rows.len(), ALL.len() + COMPARED.len());
        assert!(rows.iter().all(known));
        let mut other = rows[0].clone();
        other.name = "not_a_kind".into();
        assert!(!known(&other));
        let mut extra_param = rows[0].clone();
        extra_param.params.insert("extra".into(), 1.into());
        assert!(!known(&extra_param));
    }
}
