//! `takt bench sme`: the C++SME thesis benchmarks (see takt-bench-sme).

use clap::Args;
use takt_bench_sme::{SmeBench, BENCHMARKS};
use takt_measure::sampler::Repetitions;
use takt_measure::suite::run_command;

use crate::args::{OutputArgs, SchedArgs, SpinArgs};
use crate::cmd_runs::RecordArgs;
use crate::error::CmdError;

/// `takt bench sme` flags.
#[derive(Args, Debug)]
pub struct SmeCmd {
    #[command(flatten)]
    sched: SchedArgs,
    #[command(flatten)]
    spin: SpinArgs,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    record: RecordArgs,
    /// Largest thread count (default: the CPUs of `--cpus`, else all online).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
    /// Run only these benchmarks (repeatable).
    #[arg(long, value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(BENCHMARKS))]
    only: Vec<String>,
    /// Also run C++SME's own programs (the thesis's implementation, built
    /// by `scripts/peers.sh`) in the same run: rows with impl `cppsme`.
    #[arg(long)]
    peers: bool,
    /// Measured runs per configuration (at least 5), after one warm-up.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u16).range(5..=1000))]
    runs: u16,
}

pub fn run(cmd: SmeCmd) -> Result<(), CmdError> {
    let bench = SmeBench {
        quick: cmd.output.quick,
        max_threads: cmd.threads.map_or_else(
            || SmeBench::default_threads(cmd.sched.cpus.as_ref()),
            usize::from,
        ),
        spec: cmd.sched.spec("sme"),
        spin: cmd.spin.spin,
        reps: Repetitions {
            warmup: 1,
            runs: cmd.runs as usize,
        },
        only: cmd.only,
        peers: cmd.peers,
    };
    let doc = run_command("takt bench sme", &bench, cmd.output.json)?;
    Ok(cmd.record.store(&doc)?)
}
