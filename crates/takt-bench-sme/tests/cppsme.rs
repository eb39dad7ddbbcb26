//! C++SME as a peer: its three programs run small and parse; a suite run
//! with `peers` has the right rows; a program that hangs, crashes or
//! prints something unexpected is reported by name and leaves nothing
//! running.
//!
//! The first two need the project's build of C++SME (`bash
//! scripts/peers.sh`, which CI runs): without it they fail, naming the
//! command.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use takt_bench_sme::cppsme::{CppSme, PeerError, PeerRun, Program, Sched};
use takt_bench_sme::SmeBench;
use takt_measure::sampler::Repetitions;
use takt_measure::suite::RunContext;
use takt_sched::{SpinBudget, ThreadSpec};

fn build() -> CppSme {
    CppSme::locate().unwrap_or_else(|e| panic!("{e}"))
}

const NEVER: &dyn Fn() -> bool = &|| false;

#[test]
fn each_program_runs_once_small() {
    let b = build();
    for program in [
        Program::RingDynamic,
        Program::RingHeavy,
        Program::RingUneven,
    ] {
        for (sched, threads) in [(Sched::Static, 1), (Sched::Worklist, 2)] {
            let run = PeerRun {
                program,
                sched,
                processes: 20,
                cycles: 5,
                threads,
            };
            let s = b
                .run_once(&run, Duration::from_secs(20), None, NEVER)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(s.reported.sched, sched);
            assert_eq!(
                (s.reported.threads, s.reported.cycles, s.reported.processes),
                (threads, 5, 20)
            );
            assert!(s.reported.seconds > 0.0, "{run}: {s:?}");
            assert!(
                s.ns_per_step > 0.0 && s.ns_per_step.is_finite(),
                "{run}: {s:?}"
            );
            assert!(s.cpu_s >= 0.0, "{run}: {s:?}");
        }
    }
}

#[test]
fn a_suite_run_with_peers_has_cppsme_rows_beside_takt() {
    build();
    let bench = SmeBench {
        quick: true,
        max_threads: 2,
        spec: ThreadSpec::new("sme-test"),
        spin: SpinBudget::from_micros(20),
        reps: Repetitions { warmup: 0, runs: 2 },
        only: vec!["weak_scaling".into()],
        peers: true,
    };
    let doc = bench.run(&RunContext::quiet()).expect("the run");
    let failures: Vec<&String> = doc
        .notes
        .iter()
        .filter(|n| n.starts_with("cppsme:") && !n.starts_with("cppsme: C++SME"))
        .collect();
    assert!(failures.is_empty(), "{failures:?}");
    let peer: Vec<_> = doc
        .results
        .iter()
        .filter(|r| r.implementation == "cppsme")
        .collect();
    // 3 ratios × 2 executors × 2 thread counts × (ns/step + efficiency).
    assert_eq!(peer.len(), 24, "{peer:#?}");
    for r in &peer {
        let median = r.median().expect("a measured value, not a bound");
        assert!(median > 0.0 && median.is_finite(), "{r:?}");
        assert_eq!(r.samples.len(), 2, "{r:?}");
        assert!(r.detail["cycles"].as_u64().unwrap() > 0, "{r:?}");
        // Every peer row finds takt's row of the same workload.
        assert!(doc.peer_of(r, "takt").is_some(), "no takt row for {r:?}");
    }
}

/// A directory with stub programs: `ring_dynamic` is `script`, the others
/// are missing.
fn stub(name: &str, script: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("takt-cppsme-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("test")).unwrap();
    let prog = dir.join("test/ring_dynamic");
    std::fs::write(&prog, format!("#!/bin/sh\n{script}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

const RUN: PeerRun = PeerRun {
    program: Program::RingDynamic,
    sched: Sched::Worklist,
    processes: 20,
    cycles: 5,
    threads: 2,
};

/// Whether `pid` still runs two seconds on (a zombie waiting for init
/// does not; SIGKILL to a process of the group is delivered
/// asynchronously).
fn alive(pid: &str) -> bool {
    let running = || match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    };
    let t0 = Instant::now();
    while running() {
        if t0.elapsed() > Duration::from_secs(2) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn pids(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("pids"))
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// Waits for the stub to have written both pids.
fn wait_for_pids(dir: &Path) -> Vec<String> {
    let t0 = Instant::now();
    loop {
        let p = pids(dir);
        if p.len() == 2 || t0.elapsed() > Duration::from_secs(10) {
            return p;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_hanging_program_is_killed_at_its_deadline_with_its_children() {
    // The program and a child of its own, both waiting forever.
    let dir = stub(
        "hang",
        "sleep 600 &\necho $$ $! > \"$(dirname \"$0\")/../pids\"\nwait",
    );
    let b = CppSme::at(&dir);
    let t0 = Instant::now();
    let err = b
        .run_once(&RUN, Duration::from_millis(300), None, NEVER)
        .unwrap_err();
    let took = t0.elapsed();
    assert!(matches!(err, PeerError::Hung { .. }), "{err}");
    let msg = err.to_string();
    for part in [
        "cppsme",
        "test/ring_dynamic",
        "SME_NODES=20",
        "SME_ITERATIONS=5",
        "SME_THREADS=2",
        "SME_SCHEDS=4",
        "hung",
    ] {
        assert!(msg.contains(part), "{part:?} missing from {msg:?}");
    }
    assert!(
        took >= takt_bench_sme::cppsme::MIN_DEADLINE && took < Duration::from_secs(10),
        "{took:?}"
    );
    let p = wait_for_pids(&dir);
    assert_eq!(p.len(), 2, "the stub wrote its pids");
    for pid in &p {
        assert!(!alive(pid), "process {pid} is still running");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_cancelled_run_kills_the_program() {
    let dir = stub(
        "cancel",
        "sleep 600 &\necho $$ $! > \"$(dirname \"$0\")/../pids\"\nwait",
    );
    let b = CppSme::at(&dir);
    let stop = AtomicBool::new(false);
    let err = std::thread::scope(|s| {
        s.spawn(|| {
            wait_for_pids(&dir);
            stop.store(true, Ordering::Relaxed);
        });
        b.run_once(&RUN, Duration::from_secs(60), None, &|| {
            stop.load(Ordering::Relaxed)
        })
        .unwrap_err()
    });
    assert!(matches!(err, PeerError::Interrupted { .. }), "{err}");
    for pid in &pids(&dir) {
        assert!(!alive(pid), "process {pid} is still running");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unexpected_output_and_failures_quote_what_the_program_printed() {
    let cases = [
        ("garbage", "echo 'hello from a stub'", "unexpected output"),
        (
            "wrong",
            "echo 'void ThreadedRun::start() [with T = BQueue] 2 5 20 0.5'",
            "it ran executor BQueue, asked for CQueue",
        ),
        (
            "stderr",
            "echo 'void ThreadedRun::start() [with T = CQueue] 2 5 20 0.5'; echo 'oops' >&2",
            "it wrote to stderr",
        ),
        ("exit", "echo 'terminate called'; exit 3", "exit status: 3"),
        ("signal", "kill -SEGV $$", "signal: 11"),
    ];
    for (name, script, expect) in cases {
        let dir = stub(name, script);
        let err = CppSme::at(&dir)
            .run_once(&RUN, Duration::from_secs(10), None, NEVER)
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("cppsme: ") && msg.contains("test/ring_dynamic"),
            "{msg}"
        );
        assert!(
            msg.contains(expect),
            "{name}: {expect:?} missing from {msg:?}"
        );
        if name == "garbage" {
            assert!(msg.contains("hello from a stub"), "{msg}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_missing_build_names_the_command_that_builds_it() {
    let dir = stub("missing", "true");
    let why = CppSme::at(&dir).check().unwrap_err().to_string();
    assert!(why.contains("ring_heavy"), "{why}");
    assert!(why.ends_with("run `bash scripts/peers.sh cppsme`"), "{why}");
    let _ = std::fs::remove_dir_all(&dir);
}
