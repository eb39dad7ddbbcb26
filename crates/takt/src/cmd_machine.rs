//! `takt machine`: characterize this machine (the CSE 221 suite).

use std::path::PathBuf;

use clap::Args;
use takt_machine::{self as machine, Config, Family, Mode};

use crate::error::CmdError;

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

pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
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

/// Runs `takt machine`.
pub fn run(cmd: MachineCmd) -> Result<(), CmdError> {
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
    let mut run = machine::Command::new(cfg);
    run.json = cmd.json;
    run.repeat = cmd.repeat;
    run.serve = cmd.serve;
    // After a signal the run returns its interruption, cleaned up; `main`
    // turns it into the exit status 128 + N. With --repeat the runs are
    // children that do not record: this process stores the document with
    // the repeatability section.
    match machine::run_command(&run)? {
        Some(doc) => Ok(cmd.record.store(&doc)?),
        None => Ok(()),
    }
}
