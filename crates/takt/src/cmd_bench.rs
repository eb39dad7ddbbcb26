//! `takt bench …`: the benchmark suites. Each suite is a subcommand of
//! `bench` (`takt bench agents`, `takt bench sme`).

use clap::{Args, Subcommand};
use takt_bench_agents as agents;
use takt_bench_remote as remote;
use takt_measure::suite::run_command;

use crate::args::{parse_idle_limit, IdleLimit, OutputArgs, SchedArgs, SpinArgs};
use crate::cmd_bench_sme;
use crate::cmd_runs::RecordArgs;
use crate::error::CmdError;

/// `takt bench` subcommands.
#[derive(Subcommand, Debug)]
pub enum BenchCmd {
    /// The SObjectizer-derived agent benchmarks (send_msg, customer_ring,
    /// ping_pong, skynet, ...) on takt-agents; `--peers` adds actix, kameo,
    /// ractor, CAF (C++) and a crossbeam floor in the same run.
    Agents(AgentsCmd),
    /// The C++SME thesis benchmarks (sync_ring, compute_ring, weak_scaling,
    /// uneven, sync_cost) over every SME executor and thread count;
    /// `--peers` adds C++SME's own programs in the same run.
    Sme(cmd_bench_sme::SmeCmd),
    /// Agents in two nodes over NATS (takt-remote): round trips by size,
    /// paced at 75/80/100 ms, saturated at 1-256 in flight, beside bare
    /// async-nats, raw TCP with TCP_NODELAY, raw TCP with Nagle on and
    /// ractor_cluster (the separately built `takt-peer-ractor`).
    Remote(RemoteCmd),
}

/// `takt bench remote` flags.
#[derive(Args, Debug)]
pub struct RemoteCmd {
    /// Measured runs per row (at least 5; one warm-up run precedes them).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(5..=1000))]
    pub runs: u32,
    /// A NATS server to use (default: start nats-server on a free loopback port).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Repeat the paced runs under each CPU idle-latency limit
    /// (comma-separated): `none` (default: the system's idle policy), `0`
    /// (idle CPUs poll instead of halting), or a duration such as `20us`.
    /// Held through /dev/cpu_dma_latency (root), machine-wide; rows carry
    /// `idle_latency`.
    #[arg(long, value_name = "LIST", value_parser = parse_idle_limit, value_delimiter = ',')]
    pub idle_latency: Vec<IdleLimit>,
    /// Also measure one-way throughput at offered rates up to the sender's
    /// maximum, until the outbound queue overflows or the receiver's
    /// engine reports slow consumers.
    #[arg(long)]
    pub one_way: bool,
    /// Only this part of the run: `rtt`, `paced`, `saturated` or `one-way`
    /// (which also needs --one-way); for a short A/B of one quantity.
    #[arg(long, value_name = "PART", value_parser = clap::value_parser!(remote::Part))]
    pub only: Option<remote::Part>,
    /// The saturated rows' depths, requests in flight (comma-separated;
    /// default 1,16,64,256).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub in_flight: Vec<u32>,
    /// The `takt-peer-ractor` executable of the ractor-cluster rows
    /// (default: the one next to this `takt`; without one the run leaves
    /// the rows out and says how to build it).
    #[arg(long, value_name = "PATH")]
    pub ractor_peer: Option<std::path::PathBuf>,
    /// Internal: serve as the answering node of a `takt bench remote` run
    /// (its child process) on --url as --node, until stdin closes.
    #[arg(long, hide = true, requires_all = ["url", "node"])]
    pub responder: bool,
    /// Internal: the answering node's name (with --responder).
    #[arg(long, hide = true, value_name = "NAME", requires = "responder")]
    pub node: Option<String>,
    #[command(flatten)]
    pub sched: SchedArgs,
    #[command(flatten)]
    pub spin: SpinArgs,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub record: RecordArgs,
}

/// `takt bench agents` flags.
#[derive(Args, Debug)]
pub struct AgentsCmd {
    /// Also run ping_pong, customer_ring and skynet on the peer runtimes.
    #[arg(long)]
    pub peers: bool,
    /// Measured runs per row (at least 5; one warm-up run precedes them).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(5..=1000))]
    pub runs: u32,
    #[command(flatten)]
    pub sched: SchedArgs,
    #[command(flatten)]
    pub spin: SpinArgs,
    /// Hold a CPU idle-latency limit for the whole run: `0` keeps idle
    /// CPUs polling instead of halting, so waking a parked dispatcher
    /// thread needs no interrupt. Machine-wide (the peers run under it
    /// too), through /dev/cpu_dma_latency (root); rows carry
    /// `idle_latency`.
    #[arg(long, value_name = "DURATION", value_parser = parse_idle_limit)]
    pub idle_latency: Option<IdleLimit>,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub record: RecordArgs,
}

pub fn run(cmd: BenchCmd) -> Result<(), CmdError> {
    match cmd {
        BenchCmd::Agents(a) => run_agents(a),
        BenchCmd::Sme(c) => cmd_bench_sme::run(c),
        BenchCmd::Remote(c) => run_remote(c),
    }
}

fn run_remote(cmd: RemoteCmd) -> Result<(), CmdError> {
    if cmd.responder {
        let (Some(url), Some(node)) = (&cmd.url, &cmd.node) else {
            return Err("--responder needs --url and --node".into());
        };
        return remote::responder::serve_until_stdin_closes(
            url,
            node,
            &cmd.sched.spec("takt-remote"),
            cmd.spin.spin,
        )
        .map_err(CmdError::from);
    }
    let opts = remote::Options {
        quick: cmd.out.quick,
        runs: cmd.runs as usize,
        url: cmd.url,
        thread: cmd.sched.spec("takt-remote"),
        spin: cmd.spin.spin,
        paced_holds: cmd.idle_latency.iter().map(|&IdleLimit(l)| l).collect(),
        one_way: cmd.one_way,
        responder: None,
        ractor_peer: cmd.ractor_peer,
        only: cmd.only,
        in_flight: cmd.in_flight.iter().map(|&k| k as usize).collect(),
    };
    let doc = run_command("takt bench remote", &opts, cmd.out.json)?;
    Ok(cmd.record.store(&doc)?)
}

fn run_agents(cmd: AgentsCmd) -> Result<(), CmdError> {
    let opts = agents::Options {
        quick: cmd.out.quick,
        peers: cmd.peers,
        spin: cmd.spin.spin,
        thread: cmd.sched.spec("takt-agents"),
        runs: cmd.runs as usize,
        idle_latency: cmd.idle_latency.and_then(|IdleLimit(l)| l),
    };
    let doc = run_command("takt bench agents", &opts, cmd.out.json)?;
    Ok(cmd.record.store(&doc)?)
}
