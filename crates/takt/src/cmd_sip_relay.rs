//! `takt sip relay` (hidden): the null relay of the SIP laboratory as its
//! own process — requests to `--uas`, responses (datagrams starting with
//! `SIP/2.0 `) to `--uac` or, without it, to their top Via; no other SIP
//! processing (see takt-siplab's `relay` module). `takt sip capacity` starts it as the `null-relay` target; it
//! runs until SIGINT or SIGTERM and prints its counts on stderr.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Args;
use takt_siplab::relay::{Relay, RelayConfig, DEFAULT_BATCH, MAX_BATCH};

use crate::args::SchedArgs;

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

fn parse_batch(s: &str) -> Result<usize, String> {
    s.parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_BATCH).contains(n))
        .ok_or_else(|| format!("bad batch {s:?} (1..={MAX_BATCH})"))
}

pub fn run(a: RelayArgs) -> Result<(), String> {
    a.sched
        .spec("sip-relay")
        .apply_to_current()
        .map_err(|e| format!("placing the relay: {e}"))?;
    let relay = Relay::bind(RelayConfig {
        listen: a.listen,
        uas: a.uas,
        uac: a.uac,
        rcvbuf: a.rcvbuf,
        batch: a.batch,
    })
    .map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    // Release pairs with the Acquire load in the relay loop.
    ctrlc::set_handler(move || s2.store(true, Ordering::Release))
        .map_err(|e| format!("installing the signal handler: {e}"))?;
    let local = relay.local_addr().map_err(|e| e.to_string())?;
    eprintln!(
        "takt sip relay: {local} -> requests to {}, responses to {}",
        a.uas,
        a.uac
            .map_or_else(|| "their top Via".to_string(), |u| u.to_string())
    );
    let c = relay.run(&stop).map_err(|e| e.to_string())?;
    eprintln!(
        "takt sip relay: {} requests, {} responses in {} batches; dropped {} truncated, {} empty, {} without a usable Via; {} send errors",
        c.requests, c.responses, c.batches, c.truncated, c.empty, c.unroutable, c.send_errors
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_sizes() {
        assert_eq!(parse_batch("1"), Ok(1));
        assert_eq!(parse_batch(&MAX_BATCH.to_string()), Ok(MAX_BATCH));
        assert!(parse_batch("0").is_err());
        assert!(parse_batch("100000").is_err());
        assert!(parse_batch("x").is_err());
    }
}
