//! `takt bench <suite>`: the benchmark suites.

use clap::Subcommand;

use crate::cmd_bench_sme;

/// The suites.
#[derive(Subcommand, Debug)]
pub enum BenchCmd {
    /// The C++SME thesis benchmarks (sync_ring, compute_ring, weak_scaling,
    /// uneven, sync_cost) over every SME executor and thread count.
    Sme(cmd_bench_sme::SmeCmd),
}

pub fn run(cmd: BenchCmd) -> Result<(), String> {
    match cmd {
        BenchCmd::Sme(c) => cmd_bench_sme::run(c),
    }
}
