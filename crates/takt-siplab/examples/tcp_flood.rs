//! Runs [`takt_siplab::tcp_flood::run`] against a running server and
//! prints its report as JSON (`takt sip torture --scenario conn-flood`
//! runs it with calls and probes against a server it starts):
//!
//! ```text
//! cargo run --release -p takt-siplab --example tcp_flood -- ADDR PID N [half]
//! ```

use std::net::SocketAddr;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: tcp_flood ADDR PID CONNECTIONS [half]";
    let (Some(addr), Some(pid), Some(n)) = (args.first(), args.get(1), args.get(2)) else {
        return Err(usage.into());
    };
    let addr: SocketAddr = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
    let mut cfg = takt_siplab::tcp_flood::FloodConfig::new(addr);
    cfg.pids = vec![pid.parse().map_err(|e| format!("{pid}: {e}"))?];
    cfg.connections = n.parse().map_err(|e| format!("{n}: {e}"))?;
    cfg.half_open = args.get(3).is_some_and(|a| a == "half");
    let r = takt_siplab::tcp_flood::run(&cfg)?;
    println!("{}", serde_json::to_string_pretty(&r)?);
    Ok(())
}
