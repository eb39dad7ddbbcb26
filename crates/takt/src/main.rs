//! The `takt` command: a thin front over takt-lab and the runtimes.
//!
//! `main` parses, dispatches, maps errors to exit codes (1 for a failed
//! command, 2 for bad usage) and treats a closed stdout as success.

mod args;
mod cmd_bench;
mod cmd_bench_sme;
mod cmd_sched;

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
    /// Apply a scheduler setting to a thread and show what the kernel accepted.
    Sched(cmd_sched::SchedCmd),
    /// Run a benchmark suite.
    #[command(subcommand)]
    Bench(cmd_bench::BenchCmd),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sched(c) => cmd_sched::run(c),
        Command::Bench(c) => cmd_bench::run(c),
    };
    if let Err(e) = result {
        eprintln!("takt: {e}");
        std::process::exit(1);
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
    }

    #[test]
    fn bench_sme_flags_parse_and_reject() {
        let ok = Cli::try_parse_from([
            "takt",
            "bench",
            "sme",
            "--quick",
            "--json",
            "--cpus",
            "0-1",
            "--sched",
            "other",
            "--spin",
            "50us",
            "--threads",
            "2",
            "--only",
            "sync_ring",
            "--only",
            "uneven",
        ]);
        assert!(ok.is_ok(), "{ok:?}");
        for bad in [
            &["takt", "bench", "sme", "--only", "nope"][..],
            &["takt", "bench", "sme", "--runs", "3"],
            &["takt", "bench", "sme", "--threads", "0"],
            &["takt", "bench", "sme", "--spin", "fast"],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?} accepted");
        }
    }
}
