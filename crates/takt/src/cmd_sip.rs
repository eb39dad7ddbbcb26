//! `takt sip …`: the SIP proxy and its laboratory. Each subcommand is its
//! flags (a `cmd_sip_*.rs` file) and one call into takt-siplab.

use crate::error::CmdError;
use clap::{Args, Subcommand};

/// `takt sip`
#[derive(Args, Debug)]
pub struct SipCmd {
    #[command(subcommand)]
    cmd: SipSub,
}

#[derive(Subcommand, Debug)]
enum SipSub {
    /// Run the SIP proxy (RFC 3261) until Ctrl-C.
    Proxy(Box<crate::cmd_sip_proxy::ProxyArgs>),
    /// SIPp (uac -> proxy -> uas) at a fixed call rate against the proxy
    /// run in-process: T_sip, K_rcv, K_snd per message type.
    Load(Box<crate::cmd_sip_load::LoadArgs>),
    /// The native load generator: Poisson (or constant) call arrivals
    /// through any proxy, UAC and UAS, with send lag and saturation checks.
    Gen(Box<crate::cmd_sip_gen::GenArgs>),
    /// The 1%-drop capacity of one or more targets (takt, Kamailio, OpenSIPS, the
    /// null relay, any address) under the native generator.
    Capacity(Box<crate::cmd_sip_capacity::CapacityArgs>),
    /// A SIP server under overload (2x and 1.5x its capacity, under a CFS
    /// CPU limit where needed), a UAS killed and restarted, garbage during
    /// live calls, and the soak.
    Torture(Box<crate::cmd_sip_torture::TortureArgs>),
    /// Capacity versus worker threads and scheduler profiles (the paper's
    /// Tables I-III, SVG plots, the run recorded).
    Sweep(Box<crate::cmd_sip_sweep::SweepArgs>),
    /// The best scheduler setting for one server and worker count within a
    /// time budget, confirmed against the default by an interleaved A/B.
    Tune(Box<crate::cmd_sip_tune::TuneArgs>),
    /// The SIP laboratory's null relay (requests to --uas, responses to
    /// --uac or their top Via, no other SIP processing); started by
    /// `takt sip capacity`.
    #[command(hide = true)]
    Relay(Box<crate::cmd_sip_relay::RelayArgs>),
}

pub fn run(c: SipCmd) -> Result<(), CmdError> {
    match c.cmd {
        SipSub::Proxy(a) => crate::cmd_sip_proxy::run(*a),
        SipSub::Load(a) => crate::cmd_sip_load::run(*a),
        SipSub::Gen(a) => crate::cmd_sip_gen::run(*a),
        SipSub::Capacity(a) => crate::cmd_sip_capacity::run(*a),
        SipSub::Torture(a) => crate::cmd_sip_torture::run(*a),
        SipSub::Sweep(a) => crate::cmd_sip_sweep::run(*a),
        SipSub::Tune(a) => crate::cmd_sip_tune::run(*a),
        SipSub::Relay(a) => crate::cmd_sip_relay::run(*a),
    }
}

/// A byte count with an optional `k` or `m` suffix (`212992`, `256k`,
/// `4m`), more than zero.
pub(crate) fn parse_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mul) = if let Some(n) = t.strip_suffix('k') {
        (n, 1024)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 1024 * 1024)
    } else {
        (t.as_str(), 1)
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("bad byte count {s:?} (e.g. 212992, 256k, 4m)"))
}
