//! The command line: the top-level clap definitions, each command's flags
//! in its `cmd_*` module. `tests/cli.rs` compiles this file and the modules
//! it names to test the flags with `Cli::try_parse_from`.

use clap::{Parser, Subcommand};

use crate::{cmd_bench, cmd_machine, cmd_report, cmd_runs, cmd_sched, cmd_sip};

/// takt: multi-threaded message processing with scheduling you can set,
/// measure and tune.
#[derive(Parser, Debug)]
#[command(name = "takt", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    /// The command to run.
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
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
