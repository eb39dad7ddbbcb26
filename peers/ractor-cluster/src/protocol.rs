//! How the bench drives node A: one line per command on node A's stdin,
//! one line per answer on its stdout (ASCII, `\n`-terminated, numbers in
//! decimal).
//!
//! 1. Once node B serves and has answered one call, node A prints
//!    `ready NODE_B_PID` (node B's process id, for the bench's CPU
//!    accounting). If it cannot start, it prints `err MESSAGE` and exits
//!    with a failure status.
//! 2. Then, for each command:
//!    - `rtt BYTES` → `ok NANOS`: one call of `BYTES` bytes to the echo
//!      actor; `NANOS` from the send to the reply, timed in node A (the
//!      pipe to the bench is not part of it);
//!    - `saturate BYTES IN_FLIGHT WINDOW_NANOS` → `ok ROUND_TRIPS NANOS`:
//!      calls kept `IN_FLIGHT` outstanding, new ones issued for
//!      `WINDOW_NANOS`, then the last ones awaited; `NANOS` is the whole;
//!    - anything else, a call that fails or times out, or a reply of the
//!      wrong length → `err MESSAGE` (node A keeps serving).
//! 3. When its stdin closes, node A stops, kills and reaps node B, and
//!    exits with success.
//!
//! Payloads are `BYTES` bytes of `0x5a`, at most [`MAX_BYTES`]; at most
//! [`MAX_IN_FLIGHT`] calls in flight and a window of at most
//! [`MAX_WINDOW`].

use std::io::{BufRead, Write};
use std::time::Duration;

use crate::error::{io, RactorPeerError};
use crate::node_a::RactorEcho;

/// The largest payload a command may ask for.
pub const MAX_BYTES: usize = 16 << 20;
/// The most calls a `saturate` command may keep in flight.
pub const MAX_IN_FLIGHT: usize = 65_536;
/// The longest window of a `saturate` command.
pub const MAX_WINDOW: Duration = Duration::from_secs(60);

/// The first word of node B's command line, after the executable.
pub const NODE_B: &str = "node-b";

/// One command from the bench.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `rtt BYTES`.
    Rtt {
        /// Payload size.
        bytes: usize,
    },
    /// `saturate BYTES IN_FLIGHT WINDOW_NANOS`.
    Saturate {
        /// Payload size.
        bytes: usize,
        /// Calls kept outstanding.
        in_flight: usize,
        /// How long new calls are issued.
        window: Duration,
    },
}

impl Command {
    /// Parses one command line (without its `\n`); the error says what is
    /// wrong with it.
    pub fn parse(line: &str) -> Result<Command, String> {
        let words: Vec<&str> = line.split_ascii_whitespace().collect();
        let num = |w: &str, what: &str, max: u64| -> Result<u64, String> {
            let n: u64 = w
                .parse()
                .map_err(|_| format!("{what} {w:?} is not a decimal number"))?;
            if n > max {
                return Err(format!("{what} {n} is above the limit {max}"));
            }
            Ok(n)
        };
        match words.as_slice() {
            ["rtt", b] => Ok(Command::Rtt {
                bytes: num(b, "BYTES", MAX_BYTES as u64)? as usize,
            }),
            ["saturate", b, k, w] => {
                let in_flight = num(k, "IN_FLIGHT", MAX_IN_FLIGHT as u64)? as usize;
                if in_flight == 0 {
                    return Err("IN_FLIGHT 0: at least one call must be in flight".into());
                }
                Ok(Command::Saturate {
                    bytes: num(b, "BYTES", MAX_BYTES as u64)? as usize,
                    in_flight,
                    window: Duration::from_nanos(num(
                        w,
                        "WINDOW_NANOS",
                        MAX_WINDOW.as_nanos() as u64,
                    )?),
                })
            }
            _ => Err(format!(
                "unknown command {line:?} (expected `rtt BYTES` or `saturate BYTES IN_FLIGHT WINDOW_NANOS`)"
            )),
        }
    }
}

/// Serves as node A for the bench (`takt-peer-ractor node-a`): starts node
/// B as this executable, connects, then answers commands on stdin/stdout
/// until stdin closes (see the module docs).
pub fn serve_bench() -> Result<(), RactorPeerError> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let started = std::env::current_exe()
        .map_err(io("this executable's path"))
        .and_then(|me| RactorEcho::start(&me, &[NODE_B.to_string()]));
    let mut echo = match started {
        Ok(e) => e,
        Err(e) => {
            // The bench reads the reason here; the status says it failed.
            let _ = writeln!(out, "err {e}").and_then(|()| out.flush());
            return Err(e);
        }
    };
    writeln!(out, "ready {}", echo.node_b_pid())
        .and_then(|()| out.flush())
        .map_err(io("writing to stdout"))?;
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = line.map_err(io("reading stdin"))?;
        let answer = match Command::parse(&line) {
            Ok(c) => run(&mut echo, c),
            Err(e) => Err(e),
        };
        match answer {
            Ok(a) => writeln!(out, "ok {a}"),
            Err(e) => writeln!(out, "err {}", e.replace('\n', " ")),
        }
        .and_then(|()| out.flush())
        .map_err(io("writing to stdout"))?;
    }
    Ok(())
}

/// Runs one command; the answer's words after `ok`.
fn run(echo: &mut RactorEcho, c: Command) -> Result<String, String> {
    match c {
        Command::Rtt { bytes } => echo
            .round_trip(&vec![0x5a; bytes])
            .map(|d| d.as_nanos().to_string()),
        Command::Saturate {
            bytes,
            in_flight,
            window,
        } => echo
            .saturate(&vec![0x5a; bytes], in_flight, window)
            .map(|(n, d)| format!("{n} {}", d.as_nanos())),
    }
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_and_bad_ones_say_why() {
        assert_eq!(Command::parse("rtt 64"), Ok(Command::Rtt { bytes: 64 }));
        assert_eq!(
            Command::parse(" saturate 64 16  120000000 "),
            Ok(Command::Saturate {
                bytes: 64,
                in_flight: 16,
                window: Duration::from_millis(120),
            })
        );
        for (bad, why) in [
            ("", "unknown command"),
            ("rtt", "unknown command"),
            ("rtt 1 2", "unknown command"),
            ("ping 1", "unknown command"),
            ("rtt -1", "not a decimal"),
            ("rtt 0x10", "not a decimal"),
            ("rtt 16777217", "above the limit"),
            ("saturate 64 0 1000", "at least one"),
            ("saturate 64 65537 1000", "above the limit"),
            ("saturate 64 1 60000000001", "above the limit"),
        ] {
            let e = Command::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }
}
