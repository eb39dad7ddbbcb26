//! The `takt` command: a thin front over takt-lab and the runtimes.
//!
//! `main` parses, dispatches, maps errors to exit codes (1 for a failed
//! command, 2 for bad usage, 128 + N for one a signal cut short: 130 for
//! SIGINT) and treats a closed stdout as success.

// The flags' doc comments are clap's help text, written for a terminal
// (`HOST[:PORT]`, `[::1]:5060`), not intra-doc links.
#![allow(rustdoc::broken_intra_doc_links)]

mod args;
mod cli;
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

use clap::Parser;

use cli::{Cli, Command};

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
