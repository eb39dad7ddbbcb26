//! `takt sip torture --quick --target opensips` through the library:
//! every scenario (overload, uas-restart, garbage, a short soak and a
//! reduced conn-flood over TCP) against OpenSIPS stateful under a CFS
//! limit of half a CPU, each row OpenSIPS's, the UAS restart recovered
//! from, the flood's probes answered, and neither an OpenSIPS process nor
//! the limit's cgroup left behind. The build comes from
//! `scripts/peers.sh`; missing, the test fails with the sentence that
//! says how to build it.
//!
//! uas-restart runs its UAS as a `takt sip gen` process: the workspace's
//! `takt` binary beside this test's (`cargo test --workspace` builds it).

use takt_measure::suite::{RunContext, Suite};
use takt_sip::proxy::Mode;
use takt_sip::transport::WorkerModel;
use takt_siplab::target::opensips::Build;
use takt_siplab::torture::{cgroup, Scenario, TortureOptions};

/// The workspace's `takt` binary: `target/<profile>/takt`, beside the
/// `deps` directory this test runs from.
fn takt_exe() -> std::path::PathBuf {
    let me = std::env::current_exe().unwrap();
    let exe = me.parent().and_then(|d| d.parent()).unwrap().join("takt");
    assert!(
        exe.is_file(),
        "uas-restart needs the takt binary at {} (cargo build -p takt)",
        exe.display()
    );
    exe
}

fn own_processes() -> Vec<i32> {
    let mark = format!("takt-siplab-opensips-{}-", std::process::id());
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&mark))
        })
        .collect()
}

fn cgroup_left() -> bool {
    let pid = std::process::id();
    ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup"]
        .iter()
        .any(|b| std::path::Path::new(&format!("{b}/takt-torture-{pid}")).exists())
}

#[test]
fn a_quick_torture_of_opensips() {
    Build::locate().unwrap_or_else(|e| panic!("{e}"));
    let opts = TortureOptions {
        target: "opensips".into(),
        modes: vec![Mode::Stateful],
        scenarios: vec![
            Scenario::Overload,
            Scenario::UasRestart,
            Scenario::Garbage,
            Scenario::Soak,
            Scenario::ConnFlood,
        ],
        model: WorkerModel::Shared,
        workers: 4,
        cpu_limit: Some(0.5),
        period_us: cgroup::DEFAULT_PERIOD_US,
        capacity: Some(1_000.0),
        uas: "127.0.0.1:0".parse().unwrap(),
        cpus: None,
        sched: None,
        gen_cpus: None,
        gen_sched: None,
        ports: 16,
        takt_args: Vec::new(),
        flood_connections: 300,
        soak_secs: Some(8),
        quick: true,
        fleet: None,
        listen: None,
    };
    let mut suite = opts.resolve().unwrap();
    for p in &mut suite.plans {
        p.setup.takt_exe = Some(takt_exe());
    }
    let doc = suite
        .run(&RunContext::quiet())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!cgroup_left(), "the CPU limit's cgroup was left behind");
    assert!(own_processes().is_empty(), "left {:?}", own_processes());
    let doc = serde_json::to_value(&doc).unwrap();
    assert_eq!(doc["suite"], "sip_torture");
    let rows = doc["results"].as_array().unwrap();
    assert!(
        rows.iter()
            .all(|r| r["impl"] == "opensips" && r["params"]["model"] == "processes"),
        "{doc}"
    );
    let named = |n: &str| rows.iter().filter(|r| r["name"] == n).collect::<Vec<_>>();
    for (name, n) in [
        ("capacity", 1),
        ("goodput", 2),
        ("invites_refused", 2),
        ("dialog_lost", 2),
        ("peak_rss", 2),
        ("recovery", 2),
        ("outage_failed_calls", 1),
        ("uas_recovery", 1),
        ("garbage_answered", 9),
        ("live_calls_failed", 1),
        ("new_client_ms", 2),
        ("probes_unanswered", 2),
        ("flood_calls_failed", 1),
    ] {
        assert_eq!(named(name).len(), n, "{name}: {doc}");
    }
    for g in named("goodput") {
        assert_eq!(g["params"]["cpu_limit"], "0.5");
        assert!(
            g["detail"]["throttling"]["periods"].as_u64().unwrap() > 0,
            "{g}"
        );
    }
    for r in named("peak_rss") {
        assert!(r["median"].as_f64().unwrap() > 1.0, "{r}");
    }
    // a Max-Forwards 0 INVITE is answered 483 by the lab's configuration
    let mf0 = named("garbage_answered")
        .into_iter()
        .find(|r| r["params"]["class"] == "max_forwards_0")
        .unwrap();
    assert!(
        mf0["detail"]["responses"]["483"].as_u64().unwrap_or(0) > 0,
        "{mf0}"
    );
    let rec = &named("uas_recovery")[0];
    assert_eq!(rec["detail"]["recovered"], true, "{rec}");
    // the TCP flood's probes (OPTIONS with Max-Forwards 0) all answered
    for r in named("probes_unanswered") {
        assert_eq!(r["median"], 0.0, "{r}");
    }
}
