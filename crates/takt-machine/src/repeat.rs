//! Repeatability: the suite run N times (`takt machine --quick --repeat N`)
//! and, per measurement, how far its medians spread across the runs.
//!
//! The spread of a measurement is `max / min − 1` over its N medians (the
//! same for "lower is better" and "higher is better" rows); it is *within*
//! when at most [`TOLERANCE`] (the issue's ±10% target for the CPU and memory
//! families). Rows are matched across runs by name, implementation and
//! parameters; a row missing from some run is reported with the medians it
//! has. A median at or below zero (an overhead hidden by out-of-order
//! execution) has no ratio: its spread is the absolute difference and it is
//! judged within when that difference is below one TSC tick's worth.
//! Every row is judged by the same rule: procedure calls too, since their
//! loops stopped landing in per-process states a cycle apart
//! (`machine::calls`).
//!
//! Some rows cannot be stable on a VM that shares its host, whatever the
//! method: [`known_unstable`] names them and says why, and the report shows
//! that reason beside the row instead of hiding it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use takt_measure::table::{fmt_num, fmt_value, Table};

use takt_host::cleanup;

use crate::{Family, MachineDocument, MachineError};

/// The target: medians of repeated runs within ±10% of each other.
pub const TOLERANCE: f64 = 0.10;

/// One measurement across the repeated runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepeatRow {
    /// Row name.
    pub name: String,
    /// `takt` or a reference tool.
    #[serde(rename = "impl")]
    pub implementation: String,
    /// Row parameters.
    pub params: Map<String, Value>,
    /// Unit of the medians.
    pub unit: String,
    /// The family that measured it (`None` for `--compare` tool rows).
    pub family: Option<String>,
    /// The median of each run that has the row, in run order.
    pub medians: Vec<f64>,
    /// `max / min − 1` over the medians (`max − min` in the row's unit when
    /// a median is at or below zero; see `ratio`).
    pub spread: f64,
    /// Whether `spread` is a ratio (`false`: an absolute difference).
    pub ratio: bool,
    /// Whether the spread is within [`TOLERANCE`].
    pub within_10pct: bool,
    /// Whether the row belongs to the CPU and memory families the target
    /// applies to (timer … pagefault).
    pub cpu_memory: bool,
    /// Why this row cannot be stable on a shared VM, when it is known not to be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_unstable: Option<String>,
}

/// The repeatability section of a `--repeat` document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Repeatability {
    /// Runs made.
    pub runs: usize,
    /// [`TOLERANCE`].
    pub tolerance: f64,
    /// CPU and memory rows within the tolerance.
    pub cpu_memory_within: usize,
    /// CPU and memory rows in total.
    pub cpu_memory_total: usize,
    /// Every row, in the order of the first run.
    pub rows: Vec<RepeatRow>,
}

/// Whether rows of `family` count toward the CPU and memory target.
pub fn is_cpu_memory(family: &str) -> bool {
    [
        Family::Timer,
        Family::Loop,
        Family::Call,
        Family::Syscall,
        Family::Create,
        Family::Ctxsw,
        Family::Latency,
        Family::Bandwidth,
        Family::Pagefault,
    ]
    .iter()
    .any(|f| f.name() == family)
}

/// Rows that cannot be stable on a VM sharing its host, and why.
pub fn known_unstable(name: &str, params: &Map<String, Value>) -> Option<&'static str> {
    let p = |k: &str| params.get(k).and_then(Value::as_str).unwrap_or("");
    match name {
        "mem_latency" if p("level") == "L3" => Some(
            "the L3 is shared with other guests on the host: the share this guest holds, and so the latency of a working set near its edge, moves with the neighbours' load",
        ),
        "mem_latency" if p("level") == "memory" || p("level").starts_with("plateau") => Some(
            "DRAM latency includes the two-dimensional page walk and the host's memory traffic from other guests",
        ),
        "mem_bandwidth" if params.get("threads").and_then(Value::as_u64).unwrap_or(1) > 1 => Some(
            "all threads: every vCPU must run at once, so any host preemption of one vCPU (steal time) stalls the sample",
        ),
        "mem_bandwidth" => Some(
            "DRAM bandwidth is shared with the host's other guests: one core's read rate moved 31.7 to 35.3 GB/s between two runs seconds apart while each run's per-chunk medians were flat; the three kernels take turns over the whole budget, so they move together",
        ),
        "ctxsw_process" | "ctxsw_thread_futex" | "ctxsw_thread_condvar"
            if p("placement") == "across_cpus" =>
        {
            Some(
                "a cross-CPU wake-up is an inter-processor interrupt, which on a VM is a hypervisor exit whose cost depends on whether the host is running the other vCPU",
            )
        }
        "page_fault" if p("kind") == "major_file" => Some(
            "a major fault reads from the virtual disk, whose latency is the host's I/O path and cache",
        ),
        _ => None,
    }
}

fn key(r: &takt_measure::result::ResultRow) -> String {
    format!(
        "{}\u{1}{}\u{1}{}",
        r.name,
        r.implementation,
        takt_measure::table::params_label(r)
    )
}

/// Spread of `medians`: `(value, is_ratio)`.
pub fn spread(medians: &[f64]) -> (f64, bool) {
    let min = medians.iter().copied().fold(f64::INFINITY, f64::min);
    let max = medians.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if medians.is_empty() {
        (0.0, true)
    } else if min > 0.0 {
        (max / min - 1.0, true)
    } else {
        (max - min, false)
    }
}

/// Summarizes repeated runs of the same configuration.
pub fn summarize(docs: &[MachineDocument]) -> Repeatability {
    let mut order: Vec<String> = Vec::new();
    let mut rows: std::collections::HashMap<String, RepeatRow> = Default::default();
    // Within for absolute spreads: one TSC tick at the slowest plausible
    // rate (1 GHz) is 1 ns.
    const ABS_TOL_NS: f64 = 1.0;
    for doc in docs {
        for r in &doc.document.results {
            let k = key(r);
            let e = rows.entry(k.clone()).or_insert_with(|| {
                order.push(k);
                let family = r
                    .detail
                    .get("family")
                    .and_then(Value::as_str)
                    .map(String::from);
                RepeatRow {
                    name: r.name.clone(),
                    implementation: r.implementation.clone(),
                    params: r.params.clone(),
                    unit: r.unit.clone(),
                    cpu_memory: family.as_deref().is_some_and(is_cpu_memory),
                    family,
                    medians: Vec::new(),
                    spread: 0.0,
                    ratio: true,
                    within_10pct: true,
                    known_unstable: known_unstable(&r.name, &r.params).map(String::from),
                }
            });
            e.medians.extend(r.median());
        }
    }
    let rows: Vec<RepeatRow> = order
        .into_iter()
        .filter_map(|k| rows.remove(&k))
        .map(|mut r| {
            let (s, ratio) = spread(&r.medians);
            r.spread = s;
            r.ratio = ratio;
            r.within_10pct = if ratio {
                s <= TOLERANCE
            } else {
                r.unit == "ns" && s < ABS_TOL_NS
            };
            r
        })
        .collect();
    let cpu_memory: Vec<&RepeatRow> = rows.iter().filter(|r| r.cpu_memory).collect();
    Repeatability {
        runs: docs.len(),
        tolerance: TOLERANCE,
        cpu_memory_within: cpu_memory.iter().filter(|r| r.within_10pct).count(),
        cpu_memory_total: cpu_memory.len(),
        rows,
    }
}

/// The human table: one line per row with its medians and spread.
pub fn render(rep: &Repeatability) -> String {
    let mut out = format!(
        "\nrepeatability over {} runs (spread = max/min - 1 of the medians; target within {:.0}% for CPU and memory rows): {} of {} CPU and memory rows within\n",
        rep.runs,
        rep.tolerance * 100.0,
        rep.cpu_memory_within,
        rep.cpu_memory_total
    );
    let mut reasons: Vec<String> = Vec::new();
    let mut t = Table::new()
        .text("measurement")
        .text("impl")
        .text("params")
        .text("medians")
        .number("spread")
        .text("verdict");
    for r in &rep.rows {
        let spread = if r.ratio {
            format!("{:.1}%", r.spread * 100.0)
        } else {
            format!("{} {}", fmt_num(r.spread), r.unit)
        };
        let verdict = match (r.within_10pct, r.cpu_memory, &r.known_unstable) {
            (true, _, _) => "ok".to_string(),
            (false, _, Some(why)) => {
                let n = match reasons.iter().position(|x| x == why) {
                    Some(i) => i + 1,
                    None => {
                        reasons.push(why.clone());
                        reasons.len()
                    }
                };
                format!("OVER (known [{n}])")
            }
            (false, true, None) => "OVER".to_string(),
            (false, false, None) => "over (not a CPU/memory row)".to_string(),
        };
        t.push(vec![
            r.name.clone(),
            r.implementation.clone(),
            r.params
                .iter()
                .map(|(k, v)| format!("{k}={}", fmt_value(v)))
                .collect::<Vec<_>>()
                .join(" "),
            r.medians
                .iter()
                .map(|m| fmt_num(*m))
                .collect::<Vec<_>>()
                .join(" "),
            spread,
            verdict,
        ]);
    }
    out.push_str(&t.render());
    for (i, why) in reasons.iter().enumerate() {
        out.push_str(&format!("  [{}] {why}\n", i + 1));
    }
    out
}

/// Runs `program args... --json` `runs` times as separate processes (N
/// independent runs, as a user would make them, none inheriting the
/// previous one's address space or page cache state) and returns the
/// first run's document with the `repeatability` section over all of them.
/// `args` must not hold `--repeat` or `--json`. A signal that interrupts
/// this process is passed on to the running child, which cleans up after
/// itself; then this returns [`MachineError::Interrupted`]. A second
/// signal kills and reaps the child.
pub fn run_separately(
    program: &std::path::Path,
    args: &[String],
    runs: usize,
    mut progress: impl FnMut(&str),
) -> Result<MachineDocument, MachineError> {
    crate::install_signal_handling();
    let mut docs = Vec::with_capacity(runs);
    for i in 1..=runs {
        progress(&format!("run {i} of {runs}"));
        let failed = |reason: String| MachineError::Repeat {
            run: i,
            runs,
            reason,
        };
        let mut child = std::process::Command::new(program)
            .args(args)
            .arg("--json")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .map_err(|e| failed(format!("cannot start {}: {e}", program.display())))?;
        let guard = cleanup::register(cleanup::Item::Child(child.id() as i32));
        let (status, stdout) = wait_forwarding(&mut child).map_err(|e| failed(e.to_string()))?;
        guard.keep();
        if let Some(sig) = crate::interrupted() {
            return Err(MachineError::Interrupted(sig));
        }
        let out = std::process::Output {
            status,
            stdout,
            stderr: Vec::new(),
        };
        if !out.status.success() {
            return Err(failed(out.status.to_string()));
        }
        let doc: MachineDocument = serde_json::from_slice(&out.stdout)
            .map_err(|e| failed(format!("unreadable JSON document: {e}")))?;
        docs.push(doc);
    }
    if docs.is_empty() {
        return Err(MachineError::Repeat {
            run: 0,
            runs,
            reason: "no runs".into(),
        });
    }
    let rep = summarize(&docs);
    let mut first = docs.swap_remove(0);
    first.document.notes.push(format!(
        "--repeat {runs}: {runs} separate runs of the same command; rows are those of run 1, repeatability compares the medians of all {runs}"
    ));
    first.repeatability = Some(rep);
    Ok(first)
}

/// How often [`wait_forwarding`] looks at the child and at signals.
const CHILD_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// Waits for `child` while reading its stdout, passing the first signal
/// this process receives on to it.
fn wait_forwarding(
    child: &mut std::process::Child,
) -> std::io::Result<(std::process::ExitStatus, Vec<u8>)> {
    use std::io::Read;
    let mut pipe = child.stdout.take().expect("stdout is piped");
    let reader = takt_sched::ThreadSpec::new("takt-repeat-out")
        .spawn(move || {
            let mut out = Vec::new();
            pipe.read_to_end(&mut out).map(|_| out)
        })
        .map_err(std::io::Error::other)?;
    let mut forwarded = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if let (false, Some(sig)) = (forwarded, crate::interrupted()) {
            // SAFETY: kill on our own child, not yet reaped (try_wait
            // returned None), so the pid is still its.
            unsafe { libc::kill(child.id() as i32, sig) };
            forwarded = true;
        }
        std::thread::sleep(CHILD_POLL);
    };
    let out = reader
        .join()
        .map_err(|_| std::io::Error::other("the stdout reader panicked"))??;
    Ok((status, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_a_ratio_or_an_absolute_difference() {
        let (s, r) = spread(&[10.0, 11.0, 10.5]);
        assert!(r && (s - 0.1).abs() < 1e-12);
        assert_eq!(spread(&[2.0]), (0.0, true));
        let (s, r) = spread(&[0.0, 0.4]);
        assert!(!r && (s - 0.4).abs() < 1e-12);
    }

    #[test]
    fn known_unstable_rows_say_why() {
        let mut p = Map::new();
        p.insert("level".into(), "L3".into());
        assert!(known_unstable("mem_latency", &p).is_some());
        p.insert("level".into(), "L1".into());
        assert!(known_unstable("mem_latency", &p).is_none());
        assert!(is_cpu_memory("syscall") && !is_cpu_memory("net"));
    }
}
