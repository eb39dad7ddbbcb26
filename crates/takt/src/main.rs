//! The `takt` command: one binary, subcommands by area, over takt's
//! laboratory crates and runtimes (see the crate's README for the table of
//! commands and the crate that implements each).
//!
//! Each command is its clap flags (`cli.rs` and the `cmd_*` modules) and one
//! library call. `main` parses, dispatches and turns the outcome into the
//! exit status in one place: 0 for a finished command (a closed stdout
//! included), 1 for a failed one, 2 for bad usage, 128 + N for one a signal
//! cut short (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP). Output goes
//! through `takt_measure::output::print`, diagnostics to stderr.
//!
//! The flag tests live in `tests/cli.rs`, which compiles these modules into
//! the test crate.

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
mod fleet_args;

use std::process::ExitCode;

use clap::Parser;
use takt_lab::report::Finished;

use cli::{Cli, Command};
use error::CmdError;

/// The one place a run becomes the process's exit status.
fn main() -> ExitCode {
    let status = match Cli::try_parse() {
        // A bad flag (2), or --help and --version (0): clap prints it.
        Err(e) => usage(&e),
        Ok(cli) => match run(cli.command) {
            Ok(status) => status,
            Err(CmdError::Usage(e)) => usage(&e),
            Err(e) => {
                eprintln!("takt: {e}");
                e.exit_code()
            }
        },
    };
    ExitCode::from(u8::try_from(status).unwrap_or(1))
}

/// Prints clap's message (help on stdout, an error with the usage line on
/// stderr) and returns clap's status for it.
fn usage(e: &clap::Error) -> i32 {
    // As clap's own `exit`: a closed stream leaves the status as it is.
    let _ = e.print();
    e.exit_code()
}

/// Runs one command: the status of a command that finished (0, or 128 + N
/// for a report a signal cut short after writing it), or its error.
fn run(command: Command) -> Result<i32, CmdError> {
    match command {
        Command::Sched(c) => cmd_sched::run(c)?,
        Command::Machine(c) => cmd_machine::run(c)?,
        Command::Bench(c) => cmd_bench::run(c)?,
        Command::Sip(c) => cmd_sip::run(c)?,
        Command::Report(c) => match cmd_report::run(c)? {
            Finished::Interrupted { signal, .. } => return Ok(signal.exit_code()),
            Finished::Complete { .. } => {}
        },
        Command::Runs(c) => cmd_runs::run(c)?,
    }
    Ok(0)
}
