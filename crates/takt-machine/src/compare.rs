//! `--compare`: the reference tools from Debian's packages, run in the same
//! process lifetime on the same quantities, as rows with their own `impl`,
//! and the ratio takt / tool for each pair.
//!
//! | quantity (takt row) | tool | known difference |
//! |---|---|---|
//! | `ctxsw_process` same CPU | `perf bench sched pipe -l N` under `taskset -c CPU` | perf (processes, its default; `-T` would use threads) times the whole run of N round trips of a 4-byte int with one `gettimeofday` pair, fork and child exit included (~0.2 ms, ~0.2% of the run), and reports the mean; halved to a switch. The interleaved takt figure does exactly that (forked child, same int, same N, same CPU) with the fork outside its bracket; the row is the median of 200-round-trip batches of one byte |
//! | `syscall_getppid` | `perf bench syscall basic -l N` under `taskset -c CPU` | perf (6.x) calls glibc's `getppid()` N times between two `gettimeofday` calls: a mean, interruptions included. The interleaved takt figure does the same (glibc `getppid()`, same N, same CPU, one TSC bracket); the row is the median of batches through the raw `syscall` instruction |
//! | `mem_bandwidth` read/write, 1 thread, 4 KiB pages | `sysbench memory --memory-access-mode=seq` under `taskset -c CPU`, the block set to the same buffer size, 16 blocks | its loop reads/writes one `size_t` per iteration through `ck_pr` volatile accesses (never vectorized), bytes over the run: one core walking memory word by word, which on a quiet CPU here still reaches what memory delivers (the row's vectorized loops get within 7% of it), but as a figure over wall time it counts every time slice another task takes. The interleaved takt figure runs that loop (volatile word accesses, same buffer size and pages, same blocks, same CPU); the row is vectorized and a median over 16 MiB chunks |
//! | `tcp_bandwidth` loopback, per placement | `iperf3 -l 128K -t W`, server and client each under `taskset -c` on the CPUs of the placement | same write and read size (128 KiB), same CPUs, same window (iperf3 rounds quick's 0.5 s up to 1 s), both after connection set-up; iperf3's client writes through non-blocking sockets woken by `select()` and its server reads into one buffer, ours block in `write`/`read` |
//! | `disk_read` O_DIRECT sequential 1 MiB, random 4 KiB | `taskset -c CPU fio --direct=1 --ioengine=psync --iodepth=1` on **the same file** takt read (kept for it), random offsets with replacement (`--norandommap`) | both issue one `pread` at a time on the same CPU into a page-aligned buffer. 4 KiB: both the median single read (fio's `clat` p50, from its latency histogram, ±1.6% bins); fio times inside its loop, we around `pread`. 1 MiB: both bytes over the run from offset 0 (fio's `bw_bytes` = `io_bytes` / `runtime`, no ramp), each into a fresh untouched anonymous buffer of 4 KiB pages; the row (`buffer=pages`) is the median of 4-read samples. Residual: the host serves each physical segment of a request separately (~2 µs per 4 KiB page), and how many pages of a fresh buffer land physically adjacent differs per process (takt's count is in `detail.takt_segments`, fio's is invisible), which moves single runs 0.8–2 GB/s; the `buffer=huge_page` row is the layout-free figure (one segment, ~2–3 GB/s) |
//!
//! A missing tool is reported as "not installed: apt-get install PACKAGE";
//! nothing is installed by takt.
//!
//! ## Interleaving
//! For every tool, takt's measurement is repeated
//! *alternately* with the tool's runs: pairs of one takt run and one tool
//! run, back to back, takt first in even pairs and the tool first in odd
//! ones (a trend in the load favours neither side). `ratio_interleaved` is
//! the median of the pairs' ratios, and `within_15pct` judges it where
//! there is one. On a shared machine the load moves between the suite's
//! row, measured a minute earlier, and the tool's runs; within a pair both
//! sides see nearly the same machine, and the median over pairs drops a
//! pair that straddled a change.
//!
//! ## What moves a ratio, and how the method answers it
//! - **Load that moves between the row and the tool.** The row is measured
//!   up to a minute before the tool, and `perf bench`, `sysbench` and fio
//!   report means over wall time, which count the slices other tasks
//!   take. Hence the interleaved pairs: takt re-measures the tool's own
//!   quantity (see the table) run for run with the tool, on the same CPU.
//!   The row-vs-tool `ratio` keeps showing the drift; on a quiet CPU under
//!   `chrt -f` the rows and the tools agree within a few percent.
//! - **Placement (iperf3).** Loopback TCP throughput on a small VM depends
//!   mostly on placement: sender and receiver on one CPU hand over on
//!   every block without an interrupt; on two CPUs each wake-up is an IPI
//!   (a hypervisor exit in a VM). Both sides of both measurements are
//!   pinned, per placement (`taskset -c` for iperf3), with the same 128 KiB
//!   writes and reads and the same window.
//! - **The buffer's physical layout (fio sequential 1 MiB).** A virtio-blk
//!   device may serve every scatter-gather segment of a request separately
//!   (Firecracker does): 1 MiB into one transparent huge page is one
//!   segment, into 4 KiB pages up to 256 (less those the allocator placed
//!   adjacently; past the queue's 254 the read is split in two, visible
//!   with `perf record -e block:block_rq_issue`). Each process draws its
//!   layout anew, so single runs differ by up to 2x with no change in the
//!   disk. takt's paired runs read into a fresh untouched mapping, as
//!   fio's malloc'd buffer is, over 10 short pairs (the layouts average
//!   out), and the suite adds a `buffer=huge_page` row: the layout-free
//!   throughput.
//! - **The statistic (fio random 4 KiB).** fio reads takt's own file,
//!   offsets are uniform with replacement on both sides (`--norandommap`),
//!   takt samples single reads, and both sides give the median read (fio's
//!   `clat` p50), not a mean that carries the tail.
//! - **The loop (sysbench).** sysbench walks memory word by word; each
//!   sysbench pair also runs the row's vectorized kernel on the same buffer
//!   right after the scalar one: `detail.vectorized_over_scalar` is the
//!   loop's own share.
//!
//! On a loaded machine, tools that report a mean over a long loop (`perf
//! bench`, `sysbench`) include the time their process spent preempted by
//! others, while takt's rows are medians of short batches: the ratios
//! then drift below 1 for latencies and above 1 for bandwidths; and the
//! tools run after the suite, so load that changes in between moves the
//! ratio. Judge agreement on a quiet machine; each comparison also carries
//! `ratio_best`, takt's best-side 5% quantile over the tool's best run, the
//! two least-disturbed figures.

use std::ops::Not;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::peer::Peer;
use crate::stats::Sampled;
use crate::{Comparison, Ctx, Mode};
use takt_host::cleanup::{register, Item};
use takt_measure::result::ResultRow;

/// Tool runs per quantity (result documents want at least 5).
const RUNS: usize = 5;
/// Agreement target.
const TOLERANCE: f64 = 0.15;

fn installed(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Why a reference tool gave no output.
#[derive(Debug, thiserror::Error)]
enum ToolError {
    /// It could not be started.
    #[error("cannot run {prog}: {source}")]
    Run {
        prog: String,
        source: std::io::Error,
    },
    /// It ran and failed.
    #[error("`{command}` failed: {stderr}")]
    Failed { command: String, stderr: String },
}

fn output(prog: &str, args: &[&str]) -> Result<String, ToolError> {
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| ToolError::Run {
            prog: prog.to_string(),
            source,
        })?;
    if !out.status.success() {
        return Err(ToolError::Failed {
            command: format!("{prog} {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The number before `usecs/op` in `perf bench` output.
pub fn parse_perf_usecs_per_op(text: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.contains("usecs/op"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.replace(',', "").parse().ok())
}

/// `(X MiB/sec)` from `sysbench memory` output.
pub fn parse_sysbench_mib_s(text: &str) -> Option<f64> {
    let l = text.lines().find(|l| l.contains("MiB/sec"))?;
    let open = l.find('(')?;
    l[open + 1..].split_whitespace().next()?.parse().ok()
}

/// `end.sum_received.bits_per_second` from `iperf3 -J`.
pub fn parse_iperf3_bps(json: &str) -> Option<f64> {
    let v: Value = serde_json::from_str(json).ok()?;
    v["end"]["sum_received"]["bits_per_second"].as_f64()
}

/// The first job's reads from `fio --output-format=json`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FioReads {
    /// `bw_bytes`: bytes per second over the run.
    pub bw_bytes: f64,
    /// `clat_ns.mean`.
    pub clat_mean_ns: f64,
    /// `clat_ns.percentile["50.000000"]` (needs `--percentile_list` with 50,
    /// or fio's default list).
    pub clat_p50_ns: Option<f64>,
}

/// Parses [`FioReads`] from `fio --output-format=json` (warnings fio prints
/// before the document are skipped).
pub fn parse_fio(json: &str) -> Option<FioReads> {
    let start = json.find('{')?;
    let v: Value = serde_json::from_str(&json[start..]).ok()?;
    let r = &v["jobs"][0]["read"];
    let clat = &r["clat_ns"];
    let p50 = clat["percentile"].as_object().and_then(|m| {
        m.iter()
            .find(|(k, _)| k.parse::<f64>().is_ok_and(|p| (p - 50.0).abs() < 1e-9))
            .and_then(|(_, v)| v.as_f64())
    });
    Some(FioReads {
        bw_bytes: r["bw_bytes"].as_f64()?,
        clat_mean_ns: clat["mean"].as_f64()?,
        clat_p50_ns: p50,
    })
}

/// What a tool run produced, for [`pair_with`].
#[derive(Debug, Default)]
struct ToolRuns {
    /// The tool's figure per run, in takt's unit.
    samples: Vec<f64>,
    /// The tool's command line and what is read from its output.
    method: String,
    /// What the two measure differently.
    diff: String,
    /// Extra `detail` entries on the tool's row.
    extra: Map<String, Value>,
    /// takt's figure per run, measured alternately with the tool's runs:
    /// `interleaved[i]` pairs with `samples[i]` (both sides of a pair are
    /// pushed only when both succeeded).
    interleaved: Option<Vec<f64>>,
}

/// Pushes the tool's row (same name and params as `takt`) and the
/// comparison: the ratio of the medians and, with interleaved takt runs,
/// the median of the paired ratios.
fn pair_with(ctx: &mut Ctx, takt: &ResultRow, tool: &str, runs: ToolRuns) {
    let ToolRuns {
        samples,
        method,
        diff,
        extra,
        interleaved,
    } = runs;
    let (method, diff) = (method.as_str(), diff.as_str());
    if samples.is_empty() {
        ctx.skip(
            &format!("{} [{tool}]", takt.name),
            "the tool produced no parsable result",
        );
        return;
    }
    // Paired with the raw runs: the row drops outliers, the pairs keep all.
    let ratio_interleaved = interleaved
        .as_ref()
        .filter(|v| !v.is_empty())
        .map(|v| paired_ratio(v, &samples));
    let mut s =
        Sampled::new(&takt.name, &takt.unit, takt.better, method).with_samples(samples, 0.0);
    s.implementation = tool.into();
    s.params = takt.params.clone();
    s.extra = extra;
    if let Some(v) = interleaved.as_ref().filter(|v| !v.is_empty()) {
        s.extra
            .insert("takt_interleaved".into(), serde_json::json!(v));
    }
    let row = s.into_row();
    let tool_summary = row.summary.clone().expect("a row built from samples");
    let ratio = takt.median().unwrap_or(f64::NAN) / tool_summary.median;
    let (takt_best, tool_best) = match takt.better {
        takt_measure::result::Better::Lower => (
            takt_measure::stats::quantile(&takt.samples, 0.05),
            tool_summary.min,
        ),
        takt_measure::result::Better::Higher => (
            takt_measure::stats::quantile(&takt.samples, 0.95),
            tool_summary.max,
        ),
    };
    ctx.comparisons.push(Comparison {
        ratio_best: takt_best / tool_best,
        name: format!("{} {}", takt.name, takt_measure::table::params_label(takt)),
        tool: tool.into(),
        ratio,
        within_15pct: (ratio_interleaved.unwrap_or(ratio) - 1.0).abs() <= TOLERANCE,
        difference: diff.into(),
        ratio_interleaved,
    });
    ctx.push_row(row);
}

/// The median of the run-for-run ratios `takt[i] / tool[i]` (pairs taken
/// back to back, so load that drifts over seconds cancels within a pair);
/// the ratio of the two medians when the runs do not pair up.
pub fn paired_ratio(takt: &[f64], tool: &[f64]) -> f64 {
    if takt.len() == tool.len() && !takt.is_empty() {
        let r: Vec<f64> = takt.iter().zip(tool).map(|(a, b)| a / b).collect();
        takt_measure::stats::median(&r)
    } else {
        takt_measure::stats::median(takt) / takt_measure::stats::median(tool)
    }
}

fn find(ctx: &Ctx, name: &str, kv: &[(&str, &str)]) -> Option<ResultRow> {
    ctx.doc
        .rows()
        .iter()
        .find(|r| {
            r.implementation == "takt"
                && r.name == name
                && kv.iter().all(|(k, v)| {
                    r.params.get(*k).is_some_and(|x| {
                        x.as_str() == Some(v)
                            || x.as_u64().is_some_and(|n| v.parse::<u64>() == Ok(n))
                            || x.as_bool().is_some_and(|b| v.parse::<bool>() == Ok(b))
                    })
                })
        })
        .cloned()
}

fn need(ctx: &mut Ctx, tool: &str, package: &str, what: &str) -> bool {
    if installed(tool) {
        true
    } else {
        ctx.skip(
            &format!("compare {what}"),
            format!("not installed: apt-get install {package}"),
        );
        false
    }
}

/// `runs` pairs of one takt run and one tool run, back to back, the order
/// alternating (takt first in even pairs, the tool first in odd ones) so a
/// trend in the load favours neither side. A pair counts only when both
/// runs produced a figure. Returns `(takt, tool)`, index for index, or the
/// tool's error.
fn alternate<E>(
    runs: usize,
    mut takt: impl FnMut() -> Option<f64>,
    mut tool: impl FnMut() -> Result<Option<f64>, E>,
) -> Result<(Vec<f64>, Vec<f64>), E> {
    let (mut ours, mut theirs) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for i in 0..runs {
        let (a, b) = if i % 2 == 0 {
            let a = takt();
            (a, tool()?)
        } else {
            let b = tool()?;
            (takt(), b)
        };
        if let (Some(a), Some(b)) = (a, b) {
            ours.push(a);
            theirs.push(b);
        }
        if crate::interrupted().is_some() {
            break;
        }
    }
    Ok((ours, theirs))
}

/// The CPU the single-CPU comparisons run on: the first one allowed.
fn first_cpu() -> usize {
    takt_sched::get_affinity()
        .ok()
        .and_then(|s| s.iter().next())
        .unwrap_or(0)
}

fn perf(ctx: &mut Ctx) {
    if !need(ctx, "perf", "linux-perf", "perf bench") {
        return;
    }
    let cpu_n = first_cpu();
    let cpu = cpu_n.to_string();
    let loops: u32 = if ctx.cfg.mode == Mode::Quick {
        20_000
    } else {
        100_000
    };
    let loops_s = loops.to_string();
    if let Some(takt) = find(ctx, "ctxsw_process", &[("placement", "same_cpu")]) {
        ctx.progress("compare: perf bench sched pipe");
        let pin = crate::timer::pin_current(cpu_n);
        let got = alternate(
            RUNS,
            // Per switch, like the row: half a round trip.
            || crate::ctxsw::perf_pipe_round_trip_us(cpu_n, loops).map(|us| us / 2.0),
            || {
                output(
                    "taskset",
                    &["-c", &cpu, "perf", "bench", "sched", "pipe", "-l", &loops_s],
                )
                .map(|t| parse_perf_usecs_per_op(&t).map(|us| us / 2.0))
            },
        );
        drop(pin);
        match got {
            Ok((ours, s)) => pair_with(
                ctx,
                &takt,
                "perf-bench",
                ToolRuns {
                    samples: s,
                    method: format!("taskset -c {cpu} perf bench sched pipe -l {loops}; usecs/op / 2 (one op is a round trip)"),
                    diff: format!("perf: two processes on CPU {cpu} pass a 4-byte int through two pipes {loops} times, one gettimeofday pair around the whole run (fork and exit included, ~0.2%), a mean per round trip; ratio_interleaved compares takt doing exactly that (its pinned thread and a forked child, same int, same loop count, one TSC bracket around the loop, fork outside) run for run; the row itself is the median of 200-round-trip batches, which leaves out the time slices other tasks take"),
                    extra: Map::new(),
                    interleaved: Some(ours),
                },
            ),
            Err(e) => ctx.skip("compare perf bench sched pipe", e.to_string()),
        }
    } else {
        ctx.skip(
            "compare perf bench sched pipe",
            "ctxsw was not measured in this run",
        );
    }
    if let Some(takt) = find(ctx, "syscall_getppid", &[]) {
        ctx.progress("compare: perf bench syscall basic");
        let loops: u32 = if ctx.cfg.mode == Mode::Quick {
            1_000_000
        } else {
            2_000_000
        };
        let loops_s = loops.to_string();
        let pin = crate::timer::pin_current(cpu_n);
        let got = alternate(
            RUNS,
            || Some(crate::syscalls::perf_getppid_loop_ns(loops)),
            || {
                output(
                    "taskset",
                    &[
                        "-c", &cpu, "perf", "bench", "syscall", "basic", "-l", &loops_s,
                    ],
                )
                .map(|t| parse_perf_usecs_per_op(&t).map(|us| us * 1000.0))
            },
        );
        drop(pin);
        match got {
            Ok((ours, s)) => pair_with(
                ctx,
                &takt,
                "perf-bench",
                ToolRuns {
                    samples: s,
                    method: format!("taskset -c {cpu} perf bench syscall basic -l {loops}; usecs/op x 1000"),
                    diff: format!("perf calls glibc getppid() {loops} times between two gettimeofday calls on CPU {cpu}: a mean with interruptions included. ratio_interleaved compares takt doing the same (glibc getppid(), same count, same CPU, one TSC bracket) run for run; the row is the median of 200-call batches through the raw syscall instruction"),
                    extra: Map::new(),
                    interleaved: Some(ours),
                },
            ),
            Err(e) => ctx.skip("compare perf bench syscall basic", e.to_string()),
        }
    } else {
        ctx.skip(
            "compare perf bench syscall",
            "syscall was not measured in this run",
        );
    }
}

fn sysbench(ctx: &mut Ctx) {
    if !need(ctx, "sysbench", "sysbench", "sysbench memory") {
        return;
    }
    let cpu_n = first_cpu();
    let cpu = cpu_n.to_string();
    // sysbench's default --memory-total-size is 100G; 16 blocks keep a run
    // near 0.1 s.
    const BLOCKS: u32 = 16;
    for op in ["read", "write"] {
        let Some(takt) = find(
            ctx,
            "mem_bandwidth",
            &[("op", op), ("threads", "1"), ("huge_pages", "false")],
        ) else {
            ctx.skip(
                &format!("compare sysbench memory {op}"),
                "bandwidth was not measured in this run",
            );
            continue;
        };
        ctx.progress(&format!("compare: sysbench memory {op}"));
        let bytes = takt
            .params
            .get("bytes")
            .and_then(Value::as_u64)
            .unwrap_or(128 << 20);
        let block = format!("--memory-block-size={}K", bytes >> 10);
        let total = format!("--memory-total-size={}K", (bytes >> 10) * u64::from(BLOCKS));
        let oper = format!("--memory-oper={op}");
        let pin = crate::timer::pin_current(cpu_n);
        // The row's vectorized kernel over the same buffer, right after
        // each scalar turn: the vectorized/scalar ratio at one moment.
        let mut vectorized = Vec::new();
        let got = alternate(
            RUNS,
            || {
                let scalar =
                    crate::bandwidth::sysbench_like_gbs(op, bytes as usize, BLOCKS, false)?;
                if let Some(v) =
                    crate::bandwidth::sysbench_like_gbs(op, bytes as usize, BLOCKS, true)
                {
                    vectorized.push(v / scalar);
                }
                Some(scalar)
            },
            || {
                output(
                    "taskset",
                    &[
                        "-c",
                        &cpu,
                        "sysbench",
                        "memory",
                        &block,
                        &total,
                        &oper,
                        "--memory-access-mode=seq",
                        "--threads=1",
                        "run",
                    ],
                )
                .map(|t| parse_sysbench_mib_s(&t).map(|m| m * 1_048_576.0 / 1e9))
            },
        );
        drop(pin);
        let vs = if vectorized.is_empty() {
            f64::NAN
        } else {
            takt_measure::stats::median(&vectorized)
        };
        let mut extra = Map::new();
        extra.insert(
            "vectorized_over_scalar".into(),
            serde_json::json!(vectorized),
        );
        match got {
            Ok((ours, s)) => pair_with(
                ctx,
                &takt,
                "sysbench",
                ToolRuns {
                    samples: s,
                    method: format!("taskset -c {cpu} sysbench memory --memory-block-size=<our buffer> --memory-total-size={BLOCKS}x --memory-oper={op} --memory-access-mode=seq --threads=1 run; MiB/sec in GB/s"),
                    diff: format!("sysbench {op}s one 8-byte word per loop iteration (ck_pr volatile accesses, never vectorized) over the whole block, {BLOCKS} blocks, bytes over the run: bytes over wall time, so time slices other tasks take count against it; the row is vectorized {op}s over 16 MiB chunks and a median. ratio_interleaved compares takt doing sysbench's loop (volatile word {op}s over the same 4 KiB-page buffer, same blocks, same CPU, bytes over the run) run for run. The row-vs-tool ratio also spans a minute of host time: one core's DRAM bandwidth here moves between ~23 and ~30 GB/s from one run to the next (seen in both takt's scalar runs and sysbench's within one compare run); the loop's own share, vectorized over scalar on the same buffer moments apart, is detail.vectorized_over_scalar (median {vs:.2})"),
                    extra,
                    interleaved: Some(ours),
                },
            ),
            Err(e) => ctx.skip("compare sysbench", e.to_string()),
        }
    }
}

/// One iperf3 run with the server on `server_cpu` and the client on
/// `client_cpu`: received GB/s.
fn iperf3_once(port: &str, secs: &str, client_cpu: &str, server_cpu: &str) -> Option<f64> {
    let server = Command::new("taskset")
        .args(["-c", server_cpu, "iperf3", "-s", "-1", "-p", port])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let guard = register(Item::Child(server.id() as i32));
    std::mem::forget(server);
    let mut got = None;
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(40));
        if let Ok(t) = output(
            "taskset",
            &[
                "-c",
                client_cpu,
                "iperf3",
                "-c",
                "127.0.0.1",
                "-p",
                port,
                "-l",
                "128K",
                "-t",
                secs,
                "-J",
            ],
        ) {
            got = parse_iperf3_bps(&t);
            break;
        }
    }
    // Kills and reaps the server (already gone after its one test).
    drop(guard);
    got.map(|bps| bps / 8e9)
}

fn iperf3(ctx: &mut Ctx) {
    if !need(ctx, "iperf3", "iperf3", "iperf3") {
        return;
    }
    let port = (20_000 + std::process::id() % 20_000).to_string();
    let mut any = false;
    for placement in crate::net::placements() {
        let Some(takt) = find(
            ctx,
            "tcp_bandwidth",
            &[("peer", "loopback"), ("placement", placement.name)],
        ) else {
            continue;
        };
        any = true;
        let (Some(client), Some(server)) = (placement.sender, placement.sink) else {
            continue;
        };
        // iperf3 takes whole seconds: the same window, or 1 s for quick's
        // 0.5 s (slow start on loopback ends within a millisecond, so the
        // window's length does not move the rate).
        let window_ms = takt
            .params
            .get("window_ms")
            .and_then(Value::as_u64)
            .unwrap_or(1000);
        let secs = window_ms.div_ceil(1000).max(1).to_string();
        ctx.progress(&format!("compare: iperf3 {}", placement.name));
        let (client_s, server_s) = (client.to_string(), server.to_string());
        // takt and iperf3 alternate, one window each, against a fresh
        // loopback peer, so both see the same load.
        let peer = Peer::start("127.0.0.1:0".parse().expect("literal")).ok();
        let window = Duration::from_millis(window_ms);
        let (ours, s) = alternate(
            RUNS,
            || {
                let p = peer.as_ref()?;
                let (v, _) = crate::net::tcp_bandwidth(p.addr(), window, 1, placement).ok()?;
                (!v.is_empty()).then(|| takt_measure::stats::median(&v))
            },
            || Ok::<_, ToolError>(iperf3_once(&port, &secs, &client_s, &server_s)),
        )
        .unwrap_or_default();
        drop(peer);
        pair_with(
            ctx,
            &takt,
            "iperf3",
            ToolRuns {
                samples: s,
                method: format!("taskset -c {server} iperf3 -s -1 / taskset -c {client} iperf3 -c 127.0.0.1 -l 128K -t {secs} -J; sum_received bits/s in GB/s"),
                diff: "same 128 KiB writes and reads and CPUs, window rounded up to whole seconds for iperf3; iperf3's client writes through non-blocking sockets woken by select() (a select per up to 10 writes) and it is two processes, ours blocking calls between two threads of one process. ratio_interleaved runs the row's own method (fresh peer, same CPUs, one window) run for run with iperf3. The row itself was measured in the suite's net phase, up to a minute before: loopback throughput is two memory copies per byte through caches shared with the host's other guests, and it moved 20-28% between the two phases on a quiet machine (row 0.72-0.79 of iperf3 while the same method rerun beside iperf3 gave 0.99-1.00), so the row-vs-tool ratio measures that drift, not the method".into(),
                extra: Map::new(),
                interleaved: Some(ours),
            },
        );
    }
    if !any {
        ctx.skip("compare iperf3", "net was not measured in this run");
    }
}

/// fio's pairs per pattern: quick 10 pairs of 200 ms runs, otherwise 12
/// of 500 ms. An even count, so each side runs first equally often; many
/// short pairs rather than few long ones, because for 1 MiB reads the
/// run-to-run spread comes from each run's buffer layout (see
/// [`crate::fs::BufKind`]), which only more runs average out.
fn fio_plan(mode: Mode) -> (usize, Duration) {
    if mode == Mode::Quick {
        (10, Duration::from_millis(200))
    } else {
        (12, Duration::from_millis(500))
    }
}

fn fio(ctx: &mut Ctx) {
    if !need(ctx, "fio", "fio", "fio") {
        return;
    }
    let seq = find(
        ctx,
        "disk_read",
        &[
            ("pattern", "sequential"),
            ("block", "1048576"),
            ("location", "local"),
            ("buffer", "pages"),
        ],
    );
    let rnd = find(
        ctx,
        "disk_read",
        &[
            ("pattern", "random"),
            ("block", "4096"),
            ("location", "local"),
        ],
    );
    if seq.is_none() && rnd.is_none() {
        ctx.skip("compare fio", "fs was not measured in this run");
        return;
    }
    let Some((file, bytes)) = ctx.direct_file.as_ref().map(|(p, b, _)| (p.clone(), *b)) else {
        ctx.skip("compare fio", "the O_DIRECT test file was not kept");
        return;
    };
    let (pairs, segment) = fio_plan(ctx.cfg.mode);
    let runtime = format!("{}ms", segment.as_millis());
    let cpu_n = first_cpu();
    let cpu = cpu_n.to_string();
    for (takt, rw, bs) in [(seq, "read", "1M"), (rnd, "randread", "4k")] {
        let Some(takt) = takt else { continue };
        ctx.progress(&format!("compare: fio {rw} {bs}"));
        let sequential = rw == "read";
        let len = if sequential { 1usize << 20 } else { 4096 };
        let mut means = Vec::new();
        let mut segments = Vec::new();
        let args = [
            "-c".to_string(),
            cpu.clone(),
            "fio".into(),
            "--name=takt".into(),
            format!("--filename={}", file.display()),
            format!("--size={bytes}"),
            format!("--rw={rw}"),
            format!("--bs={bs}"),
            "--direct=1".into(),
            "--ioengine=psync".into(),
            "--iodepth=1".into(),
            "--norandommap".into(),
            "--randrepeat=0".into(),
            "--percentile_list=50".into(),
            format!("--runtime={runtime}"),
            "--time_based".into(),
            "--output-format=json".into(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let pin = crate::timer::pin_current(cpu_n);
        let got = alternate(
            pairs,
            || {
                // takt's reads of the same file, on the same CPU, for as
                // long as fio's run, into a fresh untouched anonymous
                // buffer (fio's malloc'd one is that), summarized as fio
                // summarizes.
                let r = crate::fs::direct_reads(
                    &file,
                    bytes,
                    len,
                    sequential.not(),
                    segment,
                    1,
                    crate::fs::BufKind::Pages,
                )?;
                segments.push(r.segments);
                let us = r.us;
                if us.is_empty() {
                    None
                } else if sequential {
                    // Bytes over the time spent reading (fio's bw_bytes).
                    Some(len as f64 * us.len() as f64 / us.iter().sum::<f64>())
                } else {
                    Some(takt_measure::stats::median(&us))
                }
            },
            || {
                let r = output("taskset", &args).map(|t| parse_fio(&t))?;
                Ok::<_, ToolError>(match r {
                    Some(r) if sequential => Some(r.bw_bytes / 1e6),
                    Some(r) => {
                        means.push(r.clat_mean_ns / 1000.0);
                        r.clat_p50_ns.map(|ns| ns / 1000.0)
                    }
                    None => None,
                })
            },
        );
        drop(pin);
        let (ours, s) = match got {
            Ok(v) => v,
            Err(e) => {
                ctx.skip(&format!("compare fio {rw}"), e.to_string());
                continue;
            }
        };
        let common = format!("taskset -c {cpu} fio --filename=<takt's file> --size={bytes} --bs={bs} --direct=1 --ioengine=psync --iodepth=1 --norandommap --randrepeat=0 --percentile_list=50 --runtime={runtime} --time_based");
        let (method, diff) = if sequential {
            (
                format!("{common} --rw=read; bw_bytes in MB/s"),
                format!("same file from offset 0, same 1 MiB O_DIRECT pread()s one at a time on CPU {cpu}, each side into a fresh untouched anonymous buffer of 4 KiB pages; {pairs} pairs of {runtime} runs alternating with takt's, judged by the median of the pairs' ratios. Both figures are bytes over the run (the row: the median of 4-read samples). Residual: this host serves every physical segment of a request separately (~2 us per 4 KiB page), so a run's figure depends on how many of its buffer's 256 pages the allocator happened to place adjacently (fewer segments: faster; over 254: the read splits in two); each process draws that anew (takt's draws are in detail.takt_segments; fio's cannot be seen), which moves single runs 0.8-2 GB/s on either side; the disk_read buffer=huge_page row (one segment) is the layout-free figure"),
            )
        } else {
            (
                format!("{common} --rw=randread; clat 50th percentile in us"),
                format!("same file, block, alignment, CPU and uniform offsets with replacement; both the median single read (fio's from its latency histogram, bins ~1.6% wide; its mean, with the tail, is in detail.clat_mean_us); {pairs} pairs of {runtime} runs alternating with takt's, the median of the pairs' ratios"),
            )
        };
        let mut extra = Map::new();
        if sequential {
            extra.insert("takt_segments".into(), serde_json::json!(segments));
        }
        if !means.is_empty() {
            extra.insert("clat_mean_us".into(), serde_json::json!(means));
        }
        pair_with(
            ctx,
            &takt,
            "fio",
            ToolRuns {
                samples: s,
                method,
                diff,
                extra,
                interleaved: Some(ours),
            },
        );
    }
}

pub(crate) fn run(ctx: &mut Ctx) {
    perf(ctx);
    sysbench(ctx);
    iperf3(ctx);
    fio(ctx);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_ratio_is_the_median_of_run_for_run_ratios() {
        // The load doubles between pairs; within a pair both sides see it.
        let takt = [100.0, 210.0, 400.0, 820.0, 1600.0];
        let tool = [100.0, 200.0, 400.0, 800.0, 1600.0];
        assert!((paired_ratio(&takt, &tool) - 1.0).abs() < 1e-12);
        // Unpaired runs fall back to the ratio of the medians.
        assert!((paired_ratio(&[2.0, 4.0, 6.0], &[2.0, 4.0]) - 4.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn alternate_swaps_the_order_and_drops_half_pairs() {
        let log = std::cell::RefCell::new(Vec::new());
        let mut n = 0;
        let (ours, theirs) = alternate(
            4,
            || {
                log.borrow_mut().push('t');
                n += 1;
                // The third takt run fails: its pair is dropped.
                (n != 3).then_some(n as f64)
            },
            || {
                log.borrow_mut().push('T');
                Ok::<_, String>(Some(10.0))
            },
        )
        .unwrap();
        assert_eq!(log.into_inner().iter().collect::<String>(), "tTTttTTt");
        assert_eq!(ours, vec![1.0, 2.0, 4.0]);
        assert_eq!(theirs.len(), 3);
        let err = alternate(3, || Some(1.0), || Err("boom".to_string()));
        assert_eq!(err, Err("boom".to_string()));
    }

    #[test]
    fn parses_perf_bench() {
        let t = "# Running 'sched/pipe' benchmark:\n# Executed 20000 pipe operations between two processes\n\n     Total time: 0.122 [sec]\n\n       6.100000 usecs/op\n         163934 ops/sec\n";
        assert_eq!(parse_perf_usecs_per_op(t), Some(6.1));
        assert_eq!(parse_perf_usecs_per_op("nothing"), None);
    }

    #[test]
    fn parses_sysbench() {
        let t = "Total operations: 16 ( 9.9 per second)\n\n2048.00 MiB transferred (19800.52 MiB/sec)\n";
        assert_eq!(parse_sysbench_mib_s(t), Some(19800.52));
    }

    #[test]
    fn parses_iperf3_and_fio() {
        let j = r#"{"end":{"sum_received":{"bits_per_second":48000000000.0}}}"#;
        assert_eq!(parse_iperf3_bps(j), Some(4.8e10));
        let f = r#"note: both iodepth >= 1 and synchronous I/O engine are selected
{"jobs":[{"read":{"bw_bytes":1000000000,"clat_ns":{"mean":45000.5,"percentile":{"50.000000":44032}}}}]}"#;
        assert_eq!(
            parse_fio(f),
            Some(FioReads {
                bw_bytes: 1e9,
                clat_mean_ns: 45000.5,
                clat_p50_ns: Some(44032.0)
            })
        );
        let no_pct = r#"{"jobs":[{"read":{"bw_bytes":5,"clat_ns":{"mean":1.0}}}]}"#;
        assert_eq!(parse_fio(no_pct).unwrap().clat_p50_ns, None);
        assert_eq!(parse_fio("{}"), None);
    }
}
