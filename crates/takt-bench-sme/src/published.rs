//! The thesis's own figures (Appendix A), as medians of its five runs.
//!
//! Its static orchestration ("BQueue") corresponds to takt's `static`
//! executor and its work list ("CQueue") to `worklist`; it had no other
//! executors and no sequential reference, so its speedups are its 1-thread
//! time over its 2-thread time. Converted to ns per process-step as
//! seconds / (processes × cycles).

use takt_sme::ExecutorKind;

/// (benchmark, processes, model, threads, median seconds, cycles).
const TIMES: &[(&str, usize, ExecutorKind, usize, f64, u64)] = {
    use ExecutorKind::{Static as B, Worklist as C};
    &[
        // A.1.2 / A.1.1: Intel Xeon E3-1245 V2, 100000 cycles.
        ("sync_ring", 20_000, B, 1, 68.193, 100_000),
        ("sync_ring", 20_000, B, 2, 36.526, 100_000),
        ("sync_ring", 20_000, C, 1, 84.627, 100_000),
        ("sync_ring", 20_000, C, 2, 114.136, 100_000),
        ("sync_ring", 50_000, B, 1, 171.201, 100_000),
        ("sync_ring", 50_000, B, 2, 91.706, 100_000),
        ("sync_ring", 50_000, C, 1, 212.672, 100_000),
        ("sync_ring", 50_000, C, 2, 284.893, 100_000),
        // A.3: AMD Opteron 6272.
        ("compute_ring", 200, B, 1, 140.349, 2_000),
        ("compute_ring", 200, B, 2, 67.539, 2_000),
        ("compute_ring", 200, C, 1, 131.193, 2_000),
        ("compute_ring", 200, C, 2, 70.024, 2_000),
        ("compute_ring", 2_000, B, 1, 142.473, 200),
        ("compute_ring", 2_000, B, 2, 68.541, 200),
        ("compute_ring", 2_000, C, 1, 133.693, 200),
        ("compute_ring", 2_000, C, 2, 70.731, 200),
        // A.5.
        ("uneven", 200, B, 1, 85.609, 2_000),
        ("uneven", 200, B, 2, 68.362, 2_000),
        ("uneven", 200, C, 1, 81.701, 2_000),
        ("uneven", 200, C, 2, 43.432, 2_000),
        ("uneven", 2_000, B, 1, 87.132, 200),
        ("uneven", 2_000, B, 2, 69.177, 200),
        ("uneven", 2_000, C, 1, 84.312, 200),
        ("uneven", 2_000, C, 2, 43.720, 200),
    ]
};

/// A.4 weak scaling: (ratio, processes, model, threads, median seconds);
/// cycles are 500 × threads.
const WEAK: &[(&str, usize, ExecutorKind, usize, f64)] = {
    use ExecutorKind::{Static as B, Worklist as C};
    &[
        ("2:1", 250, B, 1, 43.367),
        ("2:1", 250, B, 2, 40.910),
        ("2:1", 250, C, 1, 41.906),
        ("2:1", 250, C, 2, 43.915),
        ("1:1", 500, B, 1, 88.057),
        ("1:1", 500, B, 2, 81.599),
        ("1:1", 500, C, 1, 83.611),
        ("1:1", 500, C, 2, 88.140),
        ("1:2", 1000, B, 1, 177.986),
        ("1:2", 1000, B, 2, 163.420),
        ("1:2", 1000, C, 1, 167.759),
        ("1:2", 1000, C, 2, 175.882),
    ]
};

/// The thesis's model an executor stands for: `static` and `thesis_static`
/// its static orchestration, `worklist` and `thesis_worklist` its work list.
fn model(kind: ExecutorKind) -> Option<ExecutorKind> {
    match kind {
        ExecutorKind::Static | ExecutorKind::ThesisStatic => Some(ExecutorKind::Static),
        ExecutorKind::Worklist | ExecutorKind::ThesisWorklist => Some(ExecutorKind::Worklist),
        _ => None,
    }
}

fn seconds(name: &str, kind: ExecutorKind, threads: usize, processes: usize) -> Option<(f64, u64)> {
    let kind = model(kind)?;
    TIMES
        .iter()
        .find(|r| r.0 == name && r.1 == processes && r.2 == kind && r.3 == threads)
        .map(|r| (r.4, r.5))
}

/// The thesis's ns per process-step for this configuration.
pub(super) fn ns_per_step(
    name: &str,
    kind: ExecutorKind,
    threads: usize,
    processes: usize,
) -> Option<f64> {
    let (s, cycles) = seconds(name, kind, threads, processes)?;
    Some(s * 1e9 / (processes as f64 * cycles as f64))
}

/// The thesis's speedup of `threads` over 1 thread for this model.
pub(super) fn speedup(
    name: &str,
    kind: ExecutorKind,
    threads: usize,
    processes: usize,
) -> Option<f64> {
    let (one, _) = seconds(name, kind, 1, processes)?;
    let (t, _) = seconds(name, kind, threads, processes)?;
    Some(one / t)
}

fn weak_seconds(kind: ExecutorKind, threads: usize, ratio: &str) -> Option<(usize, f64)> {
    let kind = model(kind)?;
    WEAK.iter()
        .find(|r| r.0 == ratio && r.2 == kind && r.3 == threads)
        .map(|r| (r.1, r.4))
}

/// The thesis's weak-scaling ns per process-step.
pub(super) fn weak_ns_per_step(kind: ExecutorKind, threads: usize, ratio: &str) -> Option<f64> {
    let (p, s) = weak_seconds(kind, threads, ratio)?;
    Some(s * 1e9 / (p as f64 * 500.0 * threads as f64))
}

/// The thesis's weak-scaling efficiency (1-thread time / `threads` time).
pub(super) fn weak_efficiency(kind: ExecutorKind, threads: usize, ratio: &str) -> Option<f64> {
    let (_, one) = weak_seconds(kind, 1, ratio)?;
    let (_, t) = weak_seconds(kind, threads, ratio)?;
    Some(one / t)
}
