//! `takt sip load`: SIPp's UAC and UAS (or the native generator) against
//! the proxy run in-process, per-message T_sip / K_rcv / K_snd by message
//! type — takt-siplab's `load` behind flags.

use clap::Args;
use takt_sched::{CpuSet, SpinBudget};
use takt_sip::proxy::{Mode, Transport};
use takt_sip::transport::{WakeOrder, WorkerModel};
use takt_siplab::load::{LoadGenerator, LoadOptions};

use crate::args::{parse_idle_limit, parse_spin, IdleLimit, OutputArgs, SchedArgs};
use crate::cmd_sip::parse_bytes;
use crate::error::CmdError;

/// `takt sip load` flags.
#[derive(Args, Debug)]
pub struct LoadArgs {
    /// Proxy modes (comma-separated; default both).
    #[arg(long, value_name = "stateless,stateful", value_delimiter = ',')]
    mode: Vec<Mode>,
    /// Worker models (comma-separated; default all three).
    #[arg(long, value_name = "shared,reuseport,batched", value_delimiter = ',')]
    model: Vec<WorkerModel>,
    /// Proxy worker threads.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    workers: u32,
    /// What places the calls: `sipp` (SIPp's uac and uas scenarios, child
    /// processes) or `takt` (the native generator, Poisson arrivals, on
    /// threads of this process whose CPU time is not counted as the
    /// proxy's).
    #[arg(long, value_name = "sipp|takt", default_value = "sipp")]
    generator: LoadGenerator,
    /// Transport of every hop (UAC to proxy, proxy to UAS): `udp`, or
    /// `tcp` (SIPp with `-t t1`; the native generator over 4 connections).
    #[arg(long, value_name = "udp|tcp", default_value = "udp")]
    transport: Transport,
    /// Calls per second the generator places.
    #[arg(long, value_name = "CPS", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    cps: u32,
    /// Calls per measured run (default 5000; 1000 with --quick).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    calls: Option<u64>,
    /// Measured runs per configuration.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// Calls in the discarded warm-up run (default 1000; 300 with --quick; 0: none).
    #[arg(long, value_name = "N")]
    warmup_calls: Option<u64>,
    #[command(flatten)]
    sched: SchedArgs,
    /// Receive buffer per proxy socket, bytes (suffixes k, m).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    rcvbuf: Option<usize>,
    /// How long each UDP worker polls its socket before blocking, e.g.
    /// `0` (default), `200us`, `2ms`: keeps idle vCPUs from halting between
    /// messages that arrive within the budget, at the cost of CPU.
    #[arg(long, value_name = "DURATION", value_parser = parse_spin, default_value = "0")]
    spin: SpinBudget,
    /// Which idle worker of the `shared` model the kernel wakes for a
    /// datagram: `lifo` (default; the one idle shortest, whose caches are
    /// warm) or `fifo` (the one idle longest: blocking recvmsg, OpenSIPS's
    /// order).
    #[arg(long, value_name = "lifo|fifo")]
    wake: Option<WakeOrder>,
    /// CPU idle-latency limits to run every configuration under
    /// (comma-separated; each a case of its own, the cases taking turns):
    /// `none` (default: the system's idle policy), `0` (idle CPUs poll
    /// instead of halting), or a duration such as `20us`. Held through
    /// /dev/cpu_dma_latency (root), machine-wide, for each run.
    #[arg(long, value_name = "LIST", value_parser = parse_idle_limit, value_delimiter = ',')]
    idle_latency: Vec<IdleLimit>,
    /// CPUs the generator's UAC and UAS run on (SIPp's processes or the
    /// native generator's threads; default: anywhere), e.g. `0`
    /// with `--cpus 1`: the load generator off the proxy's CPU, as on
    /// separate machines.
    #[arg(long, value_name = "LIST", value_parser = clap::value_parser!(CpuSet))]
    sipp_cpus: Option<CpuSet>,
    #[command(flatten)]
    out: OutputArgs,
    #[command(flatten)]
    record: crate::cmd_runs::RecordArgs,
}

pub fn run(a: LoadArgs) -> Result<(), CmdError> {
    let plan = LoadOptions {
        modes: a.mode,
        models: a.model,
        workers: a.workers as usize,
        generator: a.generator,
        transport: a.transport,
        cps: a.cps,
        calls: a.calls,
        runs: a.runs as usize,
        warmup_calls: a.warmup_calls,
        spec: a.sched.spec("sip"),
        rcvbuf: a.rcvbuf,
        spin: a.spin,
        wake: a.wake,
        idle_latency: a.idle_latency.iter().map(|&IdleLimit(l)| l).collect(),
        sipp_cpus: a.sipp_cpus,
        quick: a.out.quick,
    }
    .plan()?;
    let doc = takt_measure::suite::run_command("takt sip load", &plan, a.out.json)?;
    Ok(a.record.store(&doc)?)
}
