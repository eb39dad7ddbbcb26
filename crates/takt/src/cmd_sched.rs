//! `takt sched`: apply a scheduler setting to a fresh thread and report what
//! the kernel accepted, the clock, and the thread's scheduler statistics;
//! with `--pid`, apply it to (or, without `--sched`, read it from) every
//! thread of a running process. The report is takt-lab's
//! [`sched_check`](takt_lab::sched_check).

use clap::Args;
use takt_lab::sched_check::{check, Target};

use crate::args::SchedArgs;
use crate::error::CmdError;

/// `takt sched` flags.
#[derive(Args, Debug)]
pub struct SchedCmd {
    #[command(flatten)]
    sched: SchedArgs,
    /// Apply `--sched` to every thread of this running process and read
    /// each back (without `--sched`: only read them).
    #[arg(long, value_name = "PID", conflicts_with = "cpus")]
    pid: Option<i32>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: SchedCmd) -> Result<(), CmdError> {
    let target = match cmd.pid {
        Some(pid) => Target::Process {
            pid,
            policy: cmd.sched.sched,
        },
        None => Target::Thread(cmd.sched.spec("takt-check")),
    };
    check(&target, cmd.json).map_err(CmdError::from)
}
