//! `takt machine`: characterize this machine (the CSE 221 suite).

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use takt_machine::{self as machine, Config, Family, Mode};

/// `takt machine` flags.
#[derive(Args, Debug)]
pub struct MachineCmd {
    /// Print exactly one JSON document on stdout instead of the report.
    #[arg(long)]
    json: bool,
    /// Every measurement, shortened (under 90 s on a 2-core machine).
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// Adds the long file-cache and contention sweeps.
    #[arg(long)]
    full: bool,
    /// Only these measurements, e.g. `timer,syscall` (timer, loop, call,
    /// syscall, create, ctxsw, latency, bandwidth, pagefault, net, fs).
    #[arg(long, value_name = "NAME,...", value_parser = parse_only)]
    only: Option<FamilyList>,
    /// Directory for the SVG plots.
    #[arg(long, value_name = "DIR", default_value = "takt-machine")]
    out: PathBuf,
    /// Directory for scratch files (page-fault and file-system tests).
    #[arg(long, value_name = "DIR")]
    scratch: Option<PathBuf>,
    /// Upper bound of the file-cache sweep, e.g. `2G`, `512M`.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_file: Option<u64>,
    /// Measure the network against HOST[:PORT] running `takt machine --serve`.
    #[arg(long, value_name = "HOST")]
    remote: Option<String>,
    /// A file on an NFS mount for the remote file read measurement.
    #[arg(long, value_name = "PATH")]
    nfs: Option<PathBuf>,
    /// Also run perf bench, sysbench, iperf3 and fio and print ratios.
    #[arg(long)]
    compare: bool,
    /// Run the suite N times (N >= 2) and report, per measurement, the
    /// spread of its medians (max/min - 1) and whether it is within 10%.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=100))]
    repeat: Option<u32>,
    /// Run the network peer on ADDR (e.g. `0.0.0.0:7878`) for another
    /// machine's `--remote`, until killed.
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["json", "quick", "full", "only", "compare", "remote", "repeat", "record"])]
    serve: Option<String>,
    #[command(flatten)]
    record: crate::cmd_runs::RecordArgs,
}

/// A parsed `--only` list (a newtype so clap takes it as one value).
#[derive(Clone, Debug)]
struct FamilyList(Vec<Family>);

fn parse_only(s: &str) -> Result<FamilyList, machine::MachineError> {
    Family::parse_list(s).map(FamilyList)
}

fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        Some((i, 'T' | 't')) => (&t[..i], 1 << 40),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|&n| n >= 1 << 20)
        .ok_or_else(|| format!("invalid size `{s}` (e.g. 512M, 4G; at least 1M)"))
}

pub fn run(cmd: MachineCmd) -> Result<(), String> {
    if let Some(addr) = cmd.serve {
        return machine::peer::serve(&addr).map_err(|e| format!("--serve {addr}: {e}"));
    }
    let mode = if cmd.quick {
        Mode::Quick
    } else if cmd.full {
        Mode::Full
    } else {
        Mode::Default
    };
    let mut cfg = Config::new(mode);
    cfg.only = cmd.only.map(|l| l.0);
    cfg.out_dir = cmd.out;
    if let Some(s) = cmd.scratch {
        cfg.scratch_dir = s;
    }
    cfg.max_file = cmd.max_file;
    cfg.remote = cmd.remote;
    cfg.nfs = cmd.nfs;
    cfg.compare = cmd.compare;
    cfg.interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    cfg.peer_command = std::env::current_exe().ok().map(|exe| {
        vec![
            exe.to_string_lossy().into_owned(),
            "machine".into(),
            "--serve".into(),
        ]
    });
    let Some(n) = cmd.repeat else {
        return match takt_measure::suite::run_command("takt machine", &cfg, cmd.json) {
            Ok(doc) => cmd.record.store(&doc),
            // After a signal, whatever the run returned, exit as the signal's
            // watcher does (`run_all` waits for its removals), so the status
            // says "interrupted" whichever thread gets there first.
            Err(e) => match machine::cleanup::interrupted() {
                Some(sig) => {
                    machine::cleanup::run_all();
                    eprintln!("takt machine: {e}");
                    std::process::exit(128 + sig);
                }
                None => Err(e.to_string()),
            },
        };
    };
    eprintln!(
        "takt machine: {} run x {n}, expected about {} s",
        mode.name(),
        cfg.expected_duration().as_secs() * u64::from(n)
    );
    let doc = repeated(n as usize)?;
    let text = if cmd.json {
        takt_measure::output::to_json(&doc).map_err(|e| e.to_string())?
    } else {
        machine::render(&doc)
    };
    takt_measure::output::print(&text).map_err(|e| e.to_string())?;
    // With --repeat, the runs are children that do not record; this
    // process stores the document with the repeatability section.
    cmd.record.store(&doc)
}

/// `--repeat N`: runs this same command line (without `--repeat`, with
/// `--json`) N times as separate processes — N independent runs, as a user
/// would make them, none inheriting the previous one's address space or
/// page cache state — and summarizes their medians. The document is the
/// first run's with the `repeatability` section added.
fn repeated(runs: usize) -> Result<machine::MachineDocument, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the takt binary: {e}"))?;
    let mut args: Vec<String> = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        if a == "--repeat" || a == "--db" {
            it.next();
        } else if a.starts_with("--repeat=")
            || a.starts_with("--db=")
            || a == "--json"
            || a == "--record"
        {
        } else {
            args.push(a);
        }
    }
    args.push("--json".into());
    machine::cleanup::install_interrupt_handler();
    let mut docs = Vec::with_capacity(runs);
    for i in 0..runs {
        eprintln!("takt machine: run {} of {runs}", i + 1);
        let child = std::process::Command::new(&exe)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start run {}: {e}", i + 1))?;
        // Killed and reaped if we are interrupted; the run cleans up after
        // itself on its own SIGINT/SIGTERM.
        let guard = machine::cleanup::register(machine::cleanup::Item::Child(child.id() as i32));
        let out = child
            .wait_with_output()
            .map_err(|e| format!("run {}: {e}", i + 1))?;
        guard.keep();
        if !out.status.success() {
            return Err(format!("run {} of {runs} failed: {}", i + 1, out.status));
        }
        let doc: machine::MachineDocument = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("run {}: unreadable JSON document: {e}", i + 1))?;
        docs.push(doc);
    }
    let rep = machine::repeat::summarize(&docs);
    let mut first = docs.swap_remove(0);
    first.document.notes.push(format!(
        "--repeat {runs}: {runs} separate runs of the same command; rows are those of run 1, repeatability compares the medians of all {runs}"
    ));
    first.repeatability = Some(rep);
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert!(parse_size("10").is_err());
        assert!(parse_size("xG").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}
