//! `--compare`: the reference tools from Debian's packages, run in the same
//! process lifetime on the same quantities, as rows with their own `impl`,
//! and the ratio takt / tool for each pair.
//!
//! | quantity (takt row) | tool | known difference |
//! |---|---|---|
//! | `ctxsw_process` same CPU | `perf bench sched pipe` under `taskset -c CPU` | perf reports a round trip (two switches); its ops move 4-byte ints through pipes, ours one byte |
//! | `syscall_getppid` | `perf bench syscall basic` | perf times `getppid` through libc's `syscall()` wrapper (a few ns of errno handling), as a mean over a loop timed by `gettimeofday` (interruptions included; ours is a median of batches) |
//! | `mem_bandwidth` read/write, 1 thread, 4 KiB pages | `sysbench memory` with the block set to the same buffer size | its loop reads/writes one `size_t` at a time and it reports a mean over whole blocks; ours is vectorized and a median over 16 MiB chunks |
//! | `tcp_bandwidth` loopback | `iperf3` (server `-s -1`, client `-J`) | iperf3 counts received bytes over its own test interval after connection set-up; we count from the first write, slow start included |
//! | `disk_read` O_DIRECT sequential 1 MiB, random 4 KiB | `fio --direct=1 --ioengine=psync` on a file prepared like ours | fio reports completion latency (`clat`, a mean), ours the whole `pread` as the caller sees it (a median) |
//!
//! A missing tool is reported as "not installed: apt-get install PACKAGE";
//! nothing is installed by takt.
//!
//! On a loaded machine, tools that report a mean over a long loop (`perf
//! bench`, `sysbench`) include the time their process spent preempted by
//! others, while takt's rows are medians of short batches: the ratios
//! then drift below 1 for latencies and above 1 for bandwidths. Judge
//! agreement on a quiet machine; each comparison also carries `ratio_best`,
//! takt's best-side 5% quantile over the tool's best run, the two
//! least-disturbed figures.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::cleanup::{register, scratch_dir, Item};
use super::stats::Sampled;
use super::{Comparison, Ctx, Mode};
use crate::result::ResultRow;

/// Tool runs per quantity (CONVENTIONS.md asks for at least 5).
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

fn output(prog: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {prog}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{prog} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
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

/// `(bw_bytes, clat mean ns)` of the first job's reads from `fio --output-format=json`.
pub fn parse_fio(json: &str) -> Option<(f64, f64)> {
    // fio may print warnings before the JSON document.
    let start = json.find('{')?;
    let v: Value = serde_json::from_str(&json[start..]).ok()?;
    let r = &v["jobs"][0]["read"];
    Some((r["bw_bytes"].as_f64()?, r["clat_ns"]["mean"].as_f64()?))
}

/// Pushes the tool's row (same name and params as `takt`) and the ratio.
fn pair(ctx: &mut Ctx, takt: &ResultRow, tool: &str, samples: Vec<f64>, method: &str, diff: &str) {
    if samples.is_empty() {
        ctx.skip(
            &format!("{} [{tool}]", takt.name),
            "the tool produced no parsable result",
        );
        return;
    }
    let mut s =
        Sampled::new(&takt.name, &takt.unit, takt.better, method).with_samples(samples, 0.0);
    s.implementation = tool.into();
    s.params = takt.params.clone();
    let row = s.into_row();
    let ratio = takt.summary.median / row.summary.median;
    let (takt_best, tool_best) = match takt.better {
        crate::result::Better::Lower => {
            (crate::stats::quantile(&takt.samples, 0.05), row.summary.min)
        }
        crate::result::Better::Higher => {
            (crate::stats::quantile(&takt.samples, 0.95), row.summary.max)
        }
    };
    ctx.comparisons.push(Comparison {
        ratio_best: takt_best / tool_best,
        name: format!("{} {}", takt.name, crate::output::fmt_params(takt)),
        tool: tool.into(),
        ratio,
        within_15pct: (ratio - 1.0).abs() <= TOLERANCE,
        difference: diff.into(),
    });
    ctx.push_row(row);
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

fn perf(ctx: &mut Ctx) {
    if !need(ctx, "perf", "linux-perf", "perf bench") {
        return;
    }
    let cpu = takt_sched::get_affinity()
        .ok()
        .and_then(|s| s.iter().next())
        .unwrap_or(0)
        .to_string();
    let loops = if ctx.cfg.mode == Mode::Quick {
        "20000"
    } else {
        "100000"
    };
    if let Some(takt) = find(ctx, "ctxsw_process", &[("placement", "same_cpu")]) {
        ctx.progress("compare: perf bench sched pipe");
        let mut s = Vec::new();
        for _ in 0..RUNS {
            match output(
                "taskset",
                &["-c", &cpu, "perf", "bench", "sched", "pipe", "-l", loops],
            ) {
                Ok(t) => s.extend(parse_perf_usecs_per_op(&t).map(|us| us / 2.0)),
                Err(e) => {
                    ctx.skip("compare perf bench sched pipe", e);
                    return;
                }
            }
        }
        pair(
            ctx,
            &takt,
            "perf-bench",
            s,
            "taskset -c CPU perf bench sched pipe -l N; usecs/op / 2 (one op is a round trip)",
            "perf's op is a round trip of 4-byte writes; halved to a switch",
        );
    } else {
        ctx.skip(
            "compare perf bench sched pipe",
            "ctxsw was not measured in this run",
        );
    }
    if let Some(takt) = find(ctx, "syscall_getppid", &[]) {
        ctx.progress("compare: perf bench syscall basic");
        let loops = if ctx.cfg.mode == Mode::Quick {
            "1000000"
        } else {
            "10000000"
        };
        let mut s = Vec::new();
        for _ in 0..RUNS {
            match output(
                "taskset",
                &["-c", &cpu, "perf", "bench", "syscall", "basic", "-l", loops],
            ) {
                Ok(t) => s.extend(parse_perf_usecs_per_op(&t).map(|us| us * 1000.0)),
                Err(e) => {
                    ctx.skip("compare perf bench syscall basic", e);
                    return;
                }
            }
        }
        pair(
            ctx,
            &takt,
            "perf-bench",
            s,
            "taskset -c CPU perf bench syscall basic -l N; usecs/op x 1000",
            "both call getppid; perf through libc syscall() (errno wrapper, a few ns) and timed with gettimeofday around the whole loop (a mean, interruptions included)",
        );
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
        let total = format!("--memory-total-size={}K", (bytes >> 10) * 16);
        let oper = format!("--memory-oper={op}");
        let mut s = Vec::new();
        for _ in 0..RUNS {
            match output(
                "taskset",
                &[
                    "-c",
                    "0",
                    "sysbench",
                    "memory",
                    &block,
                    &total,
                    &oper,
                    "--memory-access-mode=seq",
                    "--threads=1",
                    "run",
                ],
            ) {
                Ok(t) => s.extend(parse_sysbench_mib_s(&t).map(|m| m * 1_048_576.0 / 1e9)),
                Err(e) => {
                    ctx.skip("compare sysbench", e);
                    return;
                }
            }
        }
        pair(
            ctx,
            &takt,
            "sysbench",
            s,
            "taskset -c 0 sysbench memory --memory-block-size=<our buffer> --memory-oper=OP --threads=1; MiB/sec in GB/s",
            "same 4 KiB pages; sysbench loops over one size_t at a time and reports a mean over whole blocks (interruptions included), ours vectorized loops and a median of 16 MiB chunks",
        );
    }
}

fn iperf3(ctx: &mut Ctx) {
    if !need(ctx, "iperf3", "iperf3", "iperf3") {
        return;
    }
    let Some(takt) = find(ctx, "tcp_bandwidth", &[("peer", "loopback")]) else {
        ctx.skip("compare iperf3", "net was not measured in this run");
        return;
    };
    ctx.progress("compare: iperf3");
    let port = (20_000 + std::process::id() % 20_000).to_string();
    let mut s = Vec::new();
    for _ in 0..RUNS {
        let server = Command::new("iperf3")
            .args(["-s", "-1", "-p", &port])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(server) = server else {
            ctx.skip("compare iperf3", "cannot start iperf3 -s");
            return;
        };
        let guard = register(Item::Child(server.id() as i32));
        std::mem::forget(server);
        let mut got = None;
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(40));
            if let Ok(t) = output("iperf3", &["-c", "127.0.0.1", "-p", &port, "-t", "1", "-J"]) {
                got = parse_iperf3_bps(&t);
                break;
            }
        }
        drop(guard);
        s.extend(got.map(|bps| bps / 8e9));
    }
    pair(
        ctx,
        &takt,
        "iperf3",
        s,
        "iperf3 -s -1 / iperf3 -c 127.0.0.1 -t 1 -J; sum_received bits/s in GB/s",
        "iperf3 measures over its own interval after set-up; ours from the first write (slow start included)",
    );
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
    let (dir, _g) = match scratch_dir(&ctx.cfg.scratch_dir) {
        Ok(d) => d,
        Err(e) => {
            ctx.skip("compare fio", format!("no scratch directory: {e}"));
            return;
        }
    };
    let file = dir.join("fio.dat");
    let _fg = register(Item::File(file.clone()));
    let size = if ctx.cfg.mode == Mode::Quick {
        "128M"
    } else {
        "512M"
    };
    let runtime = if ctx.cfg.mode == Mode::Quick {
        "1"
    } else {
        "3"
    };
    let run = |rw: &str, bs: &str, path: &Path| -> Result<Option<(f64, f64)>, String> {
        let name = format!("--filename={}", path.display());
        output(
            "fio",
            &[
                "--name=takt",
                &name,
                &format!("--rw={rw}"),
                &format!("--bs={bs}"),
                "--direct=1",
                "--ioengine=psync",
                &format!("--size={size}"),
                &format!("--runtime={runtime}"),
                "--time_based",
                "--output-format=json",
            ],
        )
        .map(|t| parse_fio(&t))
    };
    for (takt, rw, bs) in [(seq, "read", "1M"), (rnd, "randread", "4k")] {
        let Some(takt) = takt else { continue };
        ctx.progress(&format!("compare: fio {rw} {bs}"));
        let mut s = Vec::new();
        for _ in 0..RUNS {
            match run(rw, bs, &file) {
                Ok(Some((bw, clat))) => s.push(if rw == "read" {
                    bw / 1e6
                } else {
                    clat / 1000.0
                }),
                Ok(None) => {}
                Err(e) => {
                    ctx.skip(&format!("compare fio {rw}"), e);
                    break;
                }
            }
        }
        pair(
            ctx,
            &takt,
            "fio",
            s,
            &format!(
                "fio --rw={rw} --bs={bs} --direct=1 --ioengine=psync --time_based; {}",
                if rw == "read" {
                    "bw_bytes in MB/s"
                } else {
                    "clat mean in us"
                }
            ),
            "fio lays out its own file and reports completion latency; ours times the whole pread",
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
{"jobs":[{"read":{"bw_bytes":1000000000,"clat_ns":{"mean":45000.5}}}]}"#;
        assert_eq!(parse_fio(f), Some((1e9, 45000.5)));
        assert_eq!(parse_fio("{}"), None);
    }
}
