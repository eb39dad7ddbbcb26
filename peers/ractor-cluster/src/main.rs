//! `takt-peer-ractor`: ractor_cluster's two nodes for `takt bench remote`.
//!
//! - `takt-peer-ractor node-a`: starts node B (this executable) and node A,
//!   then answers the bench's commands on stdin/stdout until stdin closes
//!   (see the library's `protocol` module).
//! - `takt-peer-ractor node-b GROUP`: serves the echo actor in process
//!   group GROUP until stdin closes.

use std::process::ExitCode;

const USAGE: &str = "usage: takt-peer-ractor node-a | takt-peer-ractor node-b GROUP\n\
     ractor_cluster's two nodes for `takt bench remote`, which starts `node-a` and\n\
     speaks to it on stdin/stdout; node A starts `node-b` itself.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let served = match args.as_slice() {
        ["node-a"] => takt_peer_ractor::serve_bench(),
        ["node-b", group] if !group.is_empty() => takt_peer_ractor::serve_until_stdin_closes(group),
        ["-h" | "--help"] => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("takt-peer-ractor: {e}");
            ExitCode::FAILURE
        }
    }
}
