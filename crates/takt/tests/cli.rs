//! The binary's flag definitions, tested without running the binary: each
//! flag parses in its accepted forms and bad values are usage errors that
//! name the flag (`Cli::try_parse_from`), plus the small value parsers and
//! the error-to-exit-status mapping.
//!
//! The binary's modules are compiled into this test crate (`#[path]`), at
//! its root under their own names so their `crate::…` paths resolve: a
//! binary crate has no library to link against, and keeping the tests
//! here leaves `src/` free of them. Code these tests do not reach (the
//! commands' `run` functions) is compiled but unused here, hence the
//! `dead_code` allowance.
#![allow(dead_code)]

#[path = "../src/args.rs"]
mod args;
#[path = "../src/cli.rs"]
mod cli;
#[path = "../src/cmd_bench.rs"]
mod cmd_bench;
#[path = "../src/cmd_bench_sme.rs"]
mod cmd_bench_sme;
#[path = "../src/cmd_machine.rs"]
mod cmd_machine;
#[path = "../src/cmd_report.rs"]
mod cmd_report;
#[path = "../src/cmd_runs.rs"]
mod cmd_runs;
#[path = "../src/cmd_sched.rs"]
mod cmd_sched;
#[path = "../src/cmd_sip.rs"]
mod cmd_sip;
#[path = "../src/cmd_sip_capacity.rs"]
mod cmd_sip_capacity;
#[path = "../src/cmd_sip_gen.rs"]
mod cmd_sip_gen;
#[path = "../src/cmd_sip_load.rs"]
mod cmd_sip_load;
#[path = "../src/cmd_sip_proxy.rs"]
mod cmd_sip_proxy;
#[path = "../src/cmd_sip_relay.rs"]
mod cmd_sip_relay;
#[path = "../src/cmd_sip_sweep.rs"]
mod cmd_sip_sweep;
#[path = "../src/cmd_sip_torture.rs"]
mod cmd_sip_torture;
#[path = "../src/cmd_sip_tune.rs"]
mod cmd_sip_tune;
#[path = "../src/error.rs"]
mod error;
#[path = "../src/fleet_args.rs"]
mod fleet_args;

/// The top-level commands' flags (`src/cli.rs` and each `cmd_*`).
mod commands {
    use clap::{CommandFactory, Parser};

    use crate::cli::{Cli, Command};
    use crate::{cmd_bench, cmd_runs};

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn sched_flags_parse_and_reject() {
        let ok = Cli::try_parse_from(["takt", "sched", "--cpus", "0", "--sched", "batch"]);
        assert!(ok.is_ok());
        let bad = Cli::try_parse_from(["takt", "sched", "--sched", "rr"]).unwrap_err();
        assert!(bad.to_string().contains("needs prio"), "{bad}");
        let bad = Cli::try_parse_from(["takt", "sched", "--cpus", "x"]).unwrap_err();
        assert!(bad.to_string().contains("invalid CPU set"), "{bad}");
        let ok =
            Cli::try_parse_from(["takt", "sched", "--pid", "42", "--sched", "other:slice=1ms"]);
        assert!(ok.is_ok(), "{ok:?}");
        assert!(Cli::try_parse_from(["takt", "sched", "--pid", "42", "--json"]).is_ok());
        let bad = Cli::try_parse_from(["takt", "sched", "--pid", "x"]).unwrap_err();
        assert!(bad.to_string().contains("invalid digit"), "{bad}");
        let bad = Cli::try_parse_from(["takt", "sched", "--pid", "1", "--cpus", "0"]).unwrap_err();
        assert!(bad.to_string().contains("cannot be used with"), "{bad}");
    }

    #[test]
    fn machine_flags_parse_and_reject() {
        let ok = Cli::try_parse_from(["takt", "machine", "--quick", "--only", "timer,syscall"]);
        assert!(ok.is_ok());
        let ok = Cli::try_parse_from(["takt", "machine", "--full", "--max-file", "2G", "--json"]);
        assert!(ok.is_ok());
        let bad = Cli::try_parse_from(["takt", "machine", "--only", "nope"]).unwrap_err();
        assert!(bad.to_string().contains("unknown measurement"), "{bad}");
        let bad = Cli::try_parse_from(["takt", "machine", "--quick", "--full"]).unwrap_err();
        assert!(bad.to_string().contains("cannot be used with"), "{bad}");
        let bad = Cli::try_parse_from(["takt", "machine", "--max-file", "12x"]).unwrap_err();
        assert!(bad.to_string().contains("invalid size"), "{bad}");
    }

    #[test]
    fn bench_agents_flags() {
        let cli = Cli::try_parse_from([
            "takt", "bench", "agents", "--quick", "--json", "--peers", "--spin", "0", "--cpus",
            "0-1", "--sched", "batch", "--runs", "7",
        ])
        .unwrap();
        let Command::Bench(cmd_bench::BenchCmd::Agents(a)) = cli.command else {
            panic!("parsed as another command");
        };
        assert!(a.out.quick && a.out.json && a.peers);
        assert_eq!(a.runs, 7);
        assert_eq!(a.spin.spin, takt_sched::SpinBudget::NONE);
        let bad = Cli::try_parse_from(["takt", "bench", "agents", "--runs", "3"]).unwrap_err();
        assert!(bad.to_string().contains("3"), "{bad}");
        let bad = Cli::try_parse_from(["takt", "bench", "agents", "--spin", "fast"]).unwrap_err();
        assert!(bad.to_string().contains("spin budget"), "{bad}");
        assert!(Cli::try_parse_from(["takt", "bench"]).is_err());
    }

    #[test]
    fn report_flags_parse_and_reject() {
        let ok = Cli::try_parse_from([
            "takt",
            "report",
            "--quick",
            "--only",
            "sme,machine",
            "--out",
            "r",
        ]);
        assert!(ok.is_ok(), "{ok:?}");
        let ok = Cli::try_parse_from(["takt", "report", "--from", "takt-report", "--out", "again"]);
        assert!(ok.is_ok(), "{ok:?}");
        let bad = Cli::try_parse_from(["takt", "report", "--only", "machine,gpu"]).unwrap_err();
        assert!(bad.to_string().contains("unknown stage `gpu`"), "{bad}");
        let ok = Cli::try_parse_from(["takt", "report", "--run", "3", "--db", "x.db"]);
        assert!(ok.is_ok(), "{ok:?}");
        let bad =
            Cli::try_parse_from(["takt", "report", "--run", "3", "--only", "sme"]).unwrap_err();
        assert!(bad.to_string().contains("cannot be used with"), "{bad}");
        let bad = Cli::try_parse_from(["takt", "report", "--run", "x"]).unwrap_err();
        assert!(bad.to_string().contains("invalid"), "{bad}");
        let bad = Cli::try_parse_from(["takt", "report", "--from", "d", "--quick"]).unwrap_err();
        assert!(bad.to_string().contains("cannot be used with"), "{bad}");
    }

    #[test]
    fn bench_remote_flags() {
        let cli = Cli::try_parse_from([
            "takt",
            "bench",
            "remote",
            "--quick",
            "--json",
            "--url",
            "nats://127.0.0.1:4999",
            "--cpus",
            "0",
            "--runs",
            "6",
            "--idle-latency",
            "none,0",
            "--one-way",
        ])
        .unwrap();
        let Command::Bench(cmd_bench::BenchCmd::Remote(r)) = cli.command else {
            panic!("parsed as another command");
        };
        assert!(r.out.quick && r.out.json);
        assert_eq!(r.runs, 6);
        assert_eq!(r.idle_latency.len(), 2);
        assert_eq!(r.idle_latency[0].0, None);
        assert_eq!(r.idle_latency[1].0, Some(std::time::Duration::ZERO));
        assert!(r.one_way);
        assert_eq!(r.only, None);
        assert!(r.in_flight.is_empty());
        assert_eq!(r.url.as_deref(), Some("nats://127.0.0.1:4999"));
        assert!(r.sched.cpus.is_some());
        let bad = Cli::try_parse_from(["takt", "bench", "remote", "--runs", "2"]).unwrap_err();
        assert!(bad.to_string().contains("2"), "{bad}");
        // One part at chosen depths: a short A/B.
        let cli = Cli::try_parse_from([
            "takt",
            "bench",
            "remote",
            "--only",
            "saturated",
            "--in-flight",
            "64,256",
        ])
        .unwrap();
        let Command::Bench(cmd_bench::BenchCmd::Remote(r)) = cli.command else {
            panic!("parsed as another command");
        };
        assert_eq!(r.only, Some(takt_bench_remote::Part::Saturated));
        assert_eq!(r.in_flight, [64, 256]);
        for bad in [
            &["takt", "bench", "remote", "--only", "latency"][..],
            &["takt", "bench", "remote", "--in-flight", "0"][..],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
        }
        // The hidden responder mode (the run's child process).
        let cli = Cli::try_parse_from([
            "takt",
            "bench",
            "remote",
            "--responder",
            "--url",
            "nats://127.0.0.1:4999",
            "--node",
            "answer-1",
        ])
        .unwrap();
        let Command::Bench(cmd_bench::BenchCmd::Remote(r)) = cli.command else {
            panic!("parsed as another command");
        };
        assert!(r.responder);
        assert_eq!(r.node.as_deref(), Some("answer-1"));
        for partial in [
            &[
                "takt",
                "bench",
                "remote",
                "--responder",
                "--url",
                "nats://x:1",
            ][..],
            &[
                "takt",
                "bench",
                "remote",
                "--node",
                "n",
                "--url",
                "nats://x:1",
            ][..],
        ] {
            assert!(Cli::try_parse_from(partial).is_err(), "{partial:?}");
        }
    }

    #[test]
    fn sip_proxy_flags_parse_and_reject() {
        let ok = Cli::try_parse_from([
            "takt",
            "sip",
            "proxy",
            "--listen",
            "127.0.0.1:5060",
            "--next-hop",
            "127.0.0.1:5070",
            "--mode",
            "stateless",
            "--model",
            "batched",
            "--workers",
            "4",
            "--cpus",
            "0",
            "--sched",
            "batch",
            "--rcvbuf",
            "4m",
            "--stats",
            "off",
            "--duration",
            "1",
        ]);
        assert!(ok.is_ok(), "{ok:?}");
        for (flag, value, msg) in [
            ("--mode", "weird", "unknown mode"),
            ("--model", "threads", "unknown worker model"),
            ("--workers", "0", "0 is not in 1..=1024"),
            ("--rcvbuf", "lots", "bad byte count"),
            ("--listen", "nowhere", "invalid socket address"),
        ] {
            let e = Cli::try_parse_from(["takt", "sip", "proxy", flag, value]).unwrap_err();
            assert!(e.to_string().contains(msg), "{flag}: {e}");
        }
    }

    #[test]
    fn sip_load_flags_parse_and_reject() {
        let ok = Cli::try_parse_from([
            "takt",
            "sip",
            "load",
            "--mode",
            "stateless,stateful",
            "--model",
            "shared",
            "--workers",
            "4",
            "--cps",
            "500",
            "--calls",
            "100",
            "--runs",
            "5",
            "--warmup-calls",
            "0",
            "--cpus",
            "0",
            "--sched",
            "batch",
            "--json",
            "--quick",
        ]);
        assert!(ok.is_ok(), "{ok:?}");
        for (flag, value, msg) in [
            ("--mode", "weird", "unknown mode"),
            ("--model", "shared,threads", "unknown worker model"),
            ("--cps", "0", "0 is not in 1..=100000"),
            ("--calls", "0", "0 is not in 1.."),
            ("--runs", "0", "0 is not in 1..=1000"),
        ] {
            let e = Cli::try_parse_from(["takt", "sip", "load", flag, value]).unwrap_err();
            assert!(e.to_string().contains(msg), "{flag}: {e}");
        }
    }

    #[test]
    fn sip_capacity_and_sweep_server_flags_parse_and_reject() {
        for cmd in ["capacity", "sweep"] {
            let ok = Cli::try_parse_from([
                "takt",
                "sip",
                cmd,
                "--target",
                "127.0.0.1:5060",
                "--uas",
                "127.0.0.1:5070",
                "--route-preload",
                "--cpu-limit",
                "0.5",
                "--step",
                "200cps",
            ]);
            assert!(ok.is_ok(), "{cmd}: {ok:?}");
            let ok =
                Cli::try_parse_from(["takt", "sip", cmd, "--uas", "[::1]:5070", "--step", "0.05"]);
            assert!(ok.is_ok(), "{cmd}: {ok:?}");
            for (flag, value, msg) in [
                (
                    "--uas",
                    "127.0.0.1",
                    "invalid value '127.0.0.1' for '--uas <ADDR>'",
                ),
                ("--uas", "uas.example:5070", "for '--uas <ADDR>'"),
                ("--step", "0cps", "step \"0cps\" is neither"),
                ("--step", "1e9", "step \"1e9\" is neither"),
                ("--step", "0.5", "step \"0.5\" is neither"),
                ("--step", "fast", "for '--step <STEP>'"),
                ("--cpu-limit", "half", "for '--cpu-limit <CPUS>'"),
            ] {
                let e = Cli::try_parse_from(["takt", "sip", cmd, flag, value]).unwrap_err();
                assert_eq!(
                    e.kind(),
                    clap::error::ErrorKind::ValueValidation,
                    "{cmd} {flag}: {e}"
                );
                assert!(e.to_string().contains(msg), "{cmd} {flag} {value}: {e}");
            }
        }
        let ok = Cli::try_parse_from(["takt", "sip", "sweep", "--wake", "lifo,fifo"]);
        assert!(ok.is_ok(), "{ok:?}");
        let e = Cli::try_parse_from(["takt", "sip", "sweep", "--wake", "lifo,lilo"]).unwrap_err();
        assert!(e.to_string().contains("for '--wake <lifo,fifo>'"), "{e}");
        assert!(e.to_string().contains("lilo"), "{e}");
        // the generator's Route option, and its UAS address
        let ok = Cli::try_parse_from([
            "takt",
            "sip",
            "gen",
            "--proxy",
            "127.0.0.1:5060",
            "--route-preload",
            "--uas-listen",
            "127.0.0.1:5070",
        ]);
        assert!(ok.is_ok(), "{ok:?}");
        let e = Cli::try_parse_from(["takt", "sip", "gen", "--uas-listen", "5070"]).unwrap_err();
        assert!(e.to_string().contains("--uas-listen <ADDR>"), "{e}");
    }

    #[test]
    fn runs_flags_parse_and_reject() {
        let cli = Cli::try_parse_from(["takt", "runs", "diff", "3", "5", "--db", "x.db", "--json"])
            .unwrap();
        let Command::Runs(cmd_runs::RunsCmd::Diff(d)) = cli.command else {
            panic!("parsed as another command");
        };
        assert_eq!((d.a, d.b), (Some(3), Some(5)));
        assert!(d.records.json && !d.changed);
        assert_eq!(d.records.db, std::path::Path::new("x.db"));
        assert_eq!(d.min_change, takt_records::compare::DEFAULT_MIN_CHANGE_PCT);
        let cli = Cli::try_parse_from(["takt", "runs", "diff", "1", "2", "--min-change", "2.5%"])
            .unwrap();
        let Command::Runs(cmd_runs::RunsCmd::Diff(d)) = cli.command else {
            panic!("parsed as another command");
        };
        assert_eq!(d.min_change, 2.5);
        let cli = Cli::try_parse_from(["takt", "runs", "list"]).unwrap();
        let Command::Runs(cmd_runs::RunsCmd::List(l)) = cli.command else {
            panic!("parsed as another command");
        };
        assert_eq!(
            l.records.db,
            std::path::Path::new(takt_records::DEFAULT_PATH)
        );
        for (args, msg) in [
            (&["takt", "runs", "show", "one"][..], "invalid digit"),
            (&["takt", "runs", "diff", "1"][..], "required"),
            (
                &["takt", "runs", "diff", "1", "2", "3"][..],
                "unexpected argument",
            ),
            (
                &["takt", "runs", "list", "--last", "0"][..],
                "0 is not in 1..",
            ),
        ] {
            let e = Cli::try_parse_from(args).unwrap_err();
            assert!(e.to_string().contains(msg), "{args:?}: {e}");
        }
    }

    #[test]
    fn record_flags_on_the_measuring_commands() {
        for args in [
            &["takt", "bench", "agents", "--record"][..],
            &["takt", "bench", "sme", "--record", "--db", "r.db"][..],
            &["takt", "bench", "remote", "--quick", "--record"][..],
            &["takt", "machine", "--quick", "--record", "--db", "r.db"][..],
            &["takt", "sip", "load", "--quick", "--record"][..],
        ] {
            assert!(Cli::try_parse_from(args).is_ok(), "{args:?}");
        }
        for args in [
            &["takt", "bench", "agents", "--db", "r.db"][..],
            &["takt", "bench", "remote", "--db", "r.db"][..],
            &["takt", "machine", "--db", "r.db"][..],
            &["takt", "sip", "load", "--db", "r.db"][..],
        ] {
            let e = Cli::try_parse_from(args).unwrap_err();
            assert!(e.to_string().contains("--record"), "{args:?}: {e}");
        }
        let e = Cli::try_parse_from(["takt", "machine", "--serve", "0.0.0.0:7878", "--record"])
            .unwrap_err();
        assert!(e.to_string().contains("cannot be used with"), "{e}");
    }
}

/// The flags several commands share (`src/args.rs`).
mod shared_args {
    use takt_sched::{CpuSet, SchedPolicy, SpinBudget};

    use crate::args::{parse_spin, OutputArgs, SchedArgs, SpinArgs};
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Flags {
        #[command(flatten)]
        sched: SchedArgs,
        #[command(flatten)]
        spin: SpinArgs,
        #[command(flatten)]
        out: OutputArgs,
    }

    fn parse(args: &[&str]) -> Result<Flags, clap::Error> {
        Flags::try_parse_from(std::iter::once("t").chain(args.iter().copied()))
    }

    #[test]
    fn shared_flags_parse_through_the_types_from_str() {
        let f = parse(&["--cpus", "0-1", "--sched", "other:nice=-5", "--spin", "0"]).unwrap();
        assert_eq!(f.sched.cpus, Some("0-1".parse().unwrap()));
        assert_eq!(f.sched.sched, Some("other:nice=-5".parse().unwrap()));
        assert_eq!(f.spin.spin, "0".parse().unwrap());
        assert!(!f.out.json && !f.out.quick);
        let spec = f.sched.spec("w");
        assert_eq!(spec.cpus().map(|c| c.to_string()), Some("0-1".into()));
        let f = parse(&["--json", "--quick"]).unwrap();
        assert_eq!(f.spin.spin, SpinBudget::DEFAULT);
        assert!(f.out.json && f.out.quick && f.sched.cpus.is_none());
    }

    #[test]
    fn bad_values_are_usage_errors_that_name_the_flag() {
        for (args, flag) in [
            (&["--cpus", "x"][..], "--cpus"),
            (&["--sched", "rr"][..], "--sched"),
            (&["--spin", "soon"][..], "--spin"),
        ] {
            let e = parse(args).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{e}");
            assert!(e.to_string().contains(flag), "{e}");
        }
        assert!("0,2-3".parse::<CpuSet>().is_ok() && "batch".parse::<SchedPolicy>().is_ok());
        assert!(parse_spin("20us").is_ok() && parse_spin("x").is_err());
    }
}

/// `takt machine`'s value parsers.
mod machine {
    use crate::cmd_machine::parse_size;
    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert!(parse_size("10").is_err());
        assert!(parse_size("xG").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}

/// The SIP commands' shared value parsers.
mod sip {
    use crate::args::{parse_idle_limit, IdleLimit};
    use crate::cmd_sip::parse_bytes;

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("4m"), Ok(4 << 20));
        assert_eq!(parse_bytes("256K"), Ok(256 << 10));
        assert_eq!(parse_bytes("212992"), Ok(212_992));
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("x").is_err());
    }

    #[test]
    fn idle_limits() {
        use std::time::Duration;
        assert_eq!(parse_idle_limit("none"), Ok(IdleLimit(None)));
        assert_eq!(parse_idle_limit("0"), Ok(IdleLimit(Some(Duration::ZERO))));
        assert_eq!(
            parse_idle_limit("20us"),
            Ok(IdleLimit(Some(Duration::from_micros(20))))
        );
        let e = parse_idle_limit("soon").unwrap_err();
        assert!(e.contains("bad idle latency \"soon\""), "{e}");
    }
}

/// `takt sip gen`'s flags.
mod sip_gen {
    use clap::Parser;

    use crate::cli::Cli;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        let mut v = vec!["takt", "sip", "gen"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v)
    }

    #[test]
    fn flags_parse_in_short_and_bad_values_are_refused() {
        assert!(parse(&[
            "--proxy",
            "127.0.0.1:5060",
            "--cps",
            "5000",
            "--calls",
            "200000"
        ])
        .is_ok());
        assert!(parse(&[
            "--proxy",
            "127.0.0.1:5060",
            "--arrivals",
            "constant",
            "--ports",
            "4",
            "--role",
            "uac",
            "--hold",
            "500ms",
            "--duration",
            "10s",
            "--no-retrans",
            "--json"
        ])
        .is_ok());
        assert!(parse(&[
            "--proxy",
            "127.0.0.1:5060",
            "--transport",
            "tcp",
            "--connections",
            "8"
        ])
        .is_ok());
        for bad in [
            &["--cps", "0"][..],
            &["--cps", "fast"],
            &["--arrivals", "bursty"],
            &["--role", "proxy"],
            &["--ports", "0"],
            &["--transport", "sctp"],
            &["--connections", "0"],
            &["--connections", "1025"],
            &["--calls", "0"],
            &["--hold", "soon"],
            &["--proxy", "localhost"],
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
    }
}

/// The fleet's flags: an agent's, and the coordinator's on `capacity`,
/// `sweep` and `torture`.
mod sip_fleet {
    use clap::Parser;

    use crate::cli::Cli;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        let mut v = vec!["takt", "sip"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v)
    }

    #[test]
    fn agent_and_coordinator_flags_parse_and_bad_ones_are_refused() {
        let agent = ["gen", "--role", "agent", "--fleet", "nats://10.0.0.1:4222"];
        assert!(parse(&agent).is_ok());
        let mut a = agent.to_vec();
        a.extend(["--agent-sides", "uac", "--address", "10.0.0.2"]);
        a.extend(["--fleet-config", "f.toml", "--sched", "other"]);
        assert!(parse(&a).is_ok());
        let cap = ["capacity", "--target", "takt", "--fleet", "nats://h:4222"];
        let mut c = cap.to_vec();
        c.extend([
            "--fleet-agents",
            "3",
            "--fleet-uas",
            "a0",
            "--fleet-uac",
            "a1,a2",
        ]);
        c.extend(["--listen", "10.0.0.1", "--fleet-wait", "5"]);
        assert!(parse(&c).is_ok());
        for bad in [
            &["gen", "--role", "agents"][..],
            &["gen", "--role", "agent", "--agent-sides", "agent"],
            &["gen", "--role", "agent", "--address", "host"],
            // the fleet's options need --fleet
            &["capacity", "--fleet-agents", "2"],
            &["capacity", "--listen", "10.0.0.1"],
            &["capacity", "--fleet", "nats://h", "--fleet-agents", "x"],
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
    }

    #[test]
    fn sweep_and_torture_take_the_same_fleet_flags_as_capacity() {
        let flags = [
            "--fleet",
            "nats://h:4222",
            "--fleet-config",
            "f.toml",
            "--fleet-agents",
            "2",
            "--fleet-wait",
            "5",
            "--fleet-uas",
            "a0",
            "--fleet-uac",
            "a1,a2",
            "--listen",
            "10.0.0.1",
        ];
        for cmd in [
            &["sweep", "--target", "takt"][..],
            &["torture", "--scenario", "soak"],
        ] {
            let mut c = cmd.to_vec();
            c.extend(flags);
            assert!(parse(&c).is_ok(), "{c:?}");
            for bad in [&["--fleet-uas", "a0"][..], &["--listen", "10.0.0.1"]] {
                let mut c = cmd.to_vec();
                c.extend(bad);
                let e = parse(&c).unwrap_err();
                assert_eq!(e.exit_code(), 2, "{c:?}: the fleet's options need --fleet");
            }
        }
    }
}

/// `takt sip proxy`'s flags over its configuration file.
mod sip_proxy {
    use std::time::Duration;

    use takt_sip::config::Config;

    use crate::cmd_sip_proxy::{apply_flags, ProxyArgs};
    #[test]
    fn tcp_flags_override_the_file() {
        use clap::Parser;
        #[derive(Parser)]
        struct P {
            #[command(flatten)]
            a: ProxyArgs,
        }
        let p = P::try_parse_from([
            "p",
            "--tcp-workers",
            "2",
            "--tcp-max-connections",
            "100",
            "--tcp-max-per-peer",
            "3",
            "--tcp-message-deadline",
            "250ms",
            "--tcp-idle-timeout",
            "30s",
        ])
        .unwrap();
        let mut cfg = Config::parse("[workers]\nmax_tcp_connections = 9\n", "x").unwrap();
        apply_flags(&mut cfg, &p.a);
        let (_, sc) = cfg.runtime(Some(takt_sched::ThreadSpec::new("t"))).unwrap();
        let l = sc.tcp_limits;
        assert_eq!((l.workers, l.max_connections, l.max_per_peer), (2, 100, 3));
        assert_eq!(l.message_deadline, Duration::from_millis(250));
        assert_eq!(l.idle_timeout, Duration::from_secs(30));
        for bad in [
            &["p", "--tcp-max-connections", "0"][..],
            &["p", "--tcp-message-deadline", "0"],
            &["p", "--tcp-idle-timeout", "soon"],
            &["p", "--tcp-workers", "0"],
        ] {
            assert!(P::try_parse_from(bad).is_err(), "{bad:?}");
        }
    }
}

/// `takt sip relay`'s value parsers.
mod sip_relay {
    use takt_siplab::relay::MAX_BATCH;

    use crate::cmd_sip_relay::parse_batch;
    #[test]
    fn batch_sizes() {
        assert_eq!(parse_batch("1"), Ok(1));
        assert_eq!(parse_batch(&MAX_BATCH.to_string()), Ok(MAX_BATCH));
        assert!(parse_batch("0").is_err());
        assert!(parse_batch("100000").is_err());
        assert!(parse_batch("x").is_err());
    }
}

/// How a command's error becomes the exit status (`src/error.rs`).
mod exit_status {
    use takt_measure::error::MeasureError;

    use takt_measure::cancel::Signal;

    use crate::error::CmdError;

    #[test]
    fn an_interrupted_run_exits_128_plus_the_signal_and_a_failure_1() {
        let e = CmdError::from(MeasureError::Interrupted {
            suite: "agents".into(),
            signal: Some(Signal::Interrupt),
        });
        assert_eq!(e.exit_code(), 130);
        assert!(e.to_string().starts_with("agents: interrupted"), "{e}");
        let e = CmdError::from(MeasureError::Interrupted {
            suite: "agents".into(),
            signal: Some(Signal::Terminate),
        });
        assert_eq!(e.exit_code(), 143);
        assert_eq!(CmdError::from("no").exit_code(), 1);
        let e = CmdError::from(MeasureError::Signal("taken".into()));
        assert_eq!(e.exit_code(), 1);
    }

    #[test]
    fn a_usage_error_exits_2_and_an_interrupted_machine_run_128_plus_the_signal() {
        use clap::CommandFactory;
        let usage = crate::cli::Cli::command()
            .error(clap::error::ErrorKind::ArgumentConflict, "no such pairing");
        let e = CmdError::Usage(usage);
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("no such pairing"), "{e}");
        let e = CmdError::from(takt_machine::MachineError::Interrupted(15));
        assert_eq!(e.exit_code(), 143);
        let e = CmdError::from(takt_machine::MachineError::Measure(
            MeasureError::Interrupted {
                suite: "machine".into(),
                signal: Some(Signal::Interrupt),
            },
        ));
        assert_eq!(e.exit_code(), 130);
        let e = CmdError::from(takt_machine::MachineError::Only("x".into()));
        assert_eq!(e.exit_code(), 1);
    }
}
