//! `takt machine` as one library call: its flags, resolved to what runs.
//!
//! [`run_command`] serves the network peer (`--serve`), runs the suite
//! once through [`takt_measure::suite::run_command`] (announcement,
//! progress, signals, the tables or the JSON document), or with
//! `--repeat N` runs the same command line N times as separate processes
//! and prints the document with its repeatability section.

use std::io::IsTerminal;

use takt_measure::error::MeasureError;
use takt_measure::output;

use crate::{peer, render, repeat, Config, MachineDocument, MachineError};

/// What `takt machine` was asked to do.
#[derive(Clone, Debug)]
pub struct Command {
    /// The suite's configuration. [`Command::new`] fills in what comes
    /// from the process: whether it is interactive, the peer command.
    pub config: Config,
    /// Print exactly one JSON document instead of the report.
    pub json: bool,
    /// Run the suite this many times as separate processes (N ≥ 2).
    pub repeat: Option<u32>,
    /// Serve the network peer on this address until killed, instead.
    pub serve: Option<String>,
    /// This process's arguments after the program name (`--repeat` runs
    /// them again, without `--repeat`, `--json`, `--db` and `--record`).
    pub args: Vec<String>,
}

impl Command {
    /// A command over `config`, with the process's terminal, executable
    /// (the namespace peer is `takt machine --serve`) and arguments.
    pub fn new(mut config: Config) -> Self {
        config.interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        config.peer_command = std::env::current_exe().ok().map(|exe| {
            vec![
                exe.to_string_lossy().into_owned(),
                "machine".into(),
                "--serve".into(),
            ]
        });
        Command {
            config,
            json: false,
            repeat: None,
            serve: None,
            args: std::env::args().skip(1).collect(),
        }
    }
}

/// Runs `cmd`; returns the document printed (none after `--serve`).
/// After a signal, the run's interruption
/// ([`MeasureError::Interrupted`] inside [`MachineError::Measure`], or
/// [`MachineError::Interrupted`]), everything cleaned up.
pub fn run_command(cmd: &Command) -> Result<Option<MachineDocument>, MachineError> {
    if let Some(addr) = &cmd.serve {
        return peer::serve(addr)
            .map(|()| None)
            .map_err(|source| MachineError::Serve {
                addr: addr.clone(),
                source,
            });
    }
    let Some(n) = cmd.repeat else {
        let doc = takt_measure::suite::run_command("takt machine", &cmd.config, cmd.json)?;
        return Ok(Some(doc));
    };
    eprintln!(
        "takt machine: {} run x {n}, expected about {} s",
        cmd.config.mode.name(),
        cmd.config.expected_duration().as_secs() * u64::from(n)
    );
    let doc = repeated(&cmd.args, n as usize)?;
    let text = if cmd.json {
        output::to_json(&doc).map_err(MeasureError::Output)?
    } else {
        render(&doc)
    };
    output::print(&text).map_err(MeasureError::Output)?;
    Ok(Some(doc))
}

/// `--repeat N`: this same command line (without `--repeat` and `--json`,
/// `--db` and `--record`: the children do not record) run N times as
/// separate processes, summarized by [`repeat::run_separately`].
fn repeated(args: &[String], runs: usize) -> Result<MachineDocument, MachineError> {
    let exe = std::env::current_exe().map_err(|source| MachineError::Exe { source })?;
    repeat::run_separately(&exe, &child_args(args), runs, |line| {
        eprintln!("takt machine: {line}")
    })
}

/// `args` without `--repeat N`, `--db PATH` (either form), `--json` and
/// `--record`.
fn child_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--repeat" || a == "--db" {
            it.next();
        } else if !(a.starts_with("--repeat=")
            || a.starts_with("--db=")
            || a == "--json"
            || a == "--record")
        {
            out.push(a.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_run_the_same_command_without_repeat_and_recording() {
        let args: Vec<String> = [
            "machine",
            "--quick",
            "--repeat",
            "3",
            "--json",
            "--db",
            "x.db",
            "--record",
            "--only=timer",
            "--repeat=4",
            "--db=y.db",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(child_args(&args), ["machine", "--quick", "--only=timer"]);
    }
}
