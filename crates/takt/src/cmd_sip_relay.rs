//! `takt sip relay` (hidden): the null relay of the SIP laboratory as its
//! own process — requests to `--uas`, responses (datagrams starting with
//! `SIP/2.0 `) to `--uac` or, without it, to their top Via; no other SIP
//! processing (takt-siplab's `relay`). `takt sip capacity` starts it as
//! the `null-relay` target; it runs until SIGINT or SIGTERM and prints its
//! counts on stderr.

use std::net::SocketAddr;

use clap::Args;
use takt_measure::cancel::Cancel;
use takt_siplab::relay::{serve, RelayConfig, DEFAULT_BATCH, MAX_BATCH};

use crate::args::SchedArgs;
use crate::error::CmdError;

/// `takt sip relay` flags.
#[derive(Args, Debug)]
pub struct RelayArgs {
    /// Address to receive on, e.g. 127.0.0.1:5060 (port 0: any free port).
    #[arg(long, value_name = "ADDR")]
    listen: SocketAddr,
    /// Where requests go.
    #[arg(long, value_name = "ADDR")]
    uas: SocketAddr,
    /// Where responses go (default: the sent-by of their top Via).
    #[arg(long, value_name = "ADDR")]
    uac: Option<SocketAddr>,
    /// Receive buffer, bytes (default: the system's).
    #[arg(long, value_name = "BYTES")]
    rcvbuf: Option<usize>,
    /// Datagrams per recvmmsg/sendmmsg.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BATCH, value_parser = parse_batch)]
    batch: usize,
    #[command(flatten)]
    sched: SchedArgs,
}

pub(crate) fn parse_batch(s: &str) -> Result<usize, String> {
    s.parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_BATCH).contains(n))
        .ok_or_else(|| format!("bad batch {s:?} (1..={MAX_BATCH})"))
}

pub fn run(a: RelayArgs) -> Result<(), CmdError> {
    let cancel = Cancel::new();
    cancel.on_signals()?;
    let cfg = RelayConfig {
        listen: a.listen,
        uas: a.uas,
        uac: a.uac,
        rcvbuf: a.rcvbuf,
        batch: a.batch,
    };
    serve(cfg, &a.sched.spec("sip-relay"), &cancel, &mut |l| {
        eprintln!("{l}")
    })?;
    Ok(())
}
