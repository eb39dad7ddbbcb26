//! The `takt` command: a thin front over takt-lab and the runtimes.
//!
//! `main` parses, dispatches, maps errors to exit codes (1 for a failed
//! command, 2 for bad usage, 128 + N for one a signal cut short: 130 for
//! SIGINT) and treats a closed stdout as success.

// The flags' doc comments are clap's help text, written for a terminal
// (`HOST[:PORT]`, `[::1]:5060`), not intra-doc links.
#![allow(rustdoc::broken_intra_doc_links)]

mod args;
mod cmd_bench;
mod cmd_bench_sme;
mod cmd_machine;
mod cmd_report;
mod cmd_runs;
mod cmd_sched;
mod cmd_sip;
mod cmd_sip_capacity;
mod cmd_sip_gen;
mod cmd_sip_load;
mod cmd_sip_proxy;
mod cmd_sip_relay;
mod cmd_sip_sweep;
mod cmd_sip_torture;
mod cmd_sip_tune;
mod error;

use clap::{Parser, Subcommand};

/// takt: multi-threaded message processing with scheduling you can set,
/// measure and tune.
#[derive(Parser, Debug)]
#[command(name = "takt", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Apply a scheduler setting to a thread (or with --pid to every thread
    /// of a running process) and show what the kernel accepted.
    Sched(cmd_sched::SchedCmd),
    /// Characterize this machine: timers, calls, syscalls, processes, context
    /// switches, memory, page faults, network and file system (CSE 221 suite).
    Machine(cmd_machine::MachineCmd),
    /// Run a benchmark suite.
    #[command(subcommand)]
    Bench(cmd_bench::BenchCmd),
    /// The SIP proxy and its tools.
    Sip(cmd_sip::SipCmd),
    /// The main job: run the laboratory on this machine and write an HTML
    /// report (takt-report/index.html) beside its JSON documents.
    Report(cmd_report::ReportCmd),
    /// Stored runs: list them, show one, compare two.
    #[command(subcommand)]
    Runs(cmd_runs::RunsCmd),
}

fn main() {
    let cli = Cli::parse();
    let result: Result<(), error::CmdError> = match cli.command {
        Command::Sched(c) => cmd_sched::run(c),
        Command::Machine(c) => cmd_machine::run(c).map_err(Into::into),
        Command::Bench(c) => cmd_bench::run(c),
        Command::Sip(c) => cmd_sip::run(c),
        Command::Report(c) => match cmd_report::run(c) {
            // The report is written; the status says the run was cut short.
            Ok(takt_lab::report::Finished::Interrupted { signal, .. }) => {
                std::process::exit(signal.exit_code())
            }
            Ok(takt_lab::report::Finished::Complete { .. }) => Ok(()),
            Err(e) => Err(error::CmdError::Failed(e.to_string())),
        },
        Command::Runs(c) => cmd_runs::run(c).map_err(|e| error::CmdError::Failed(e.to_string())),
    };
    if let Err(e) = result {
        eprintln!("takt: {e}");
        // A command that a signal cut short ends with 128 + N.
        std::process::exit(e.exit_code());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

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
