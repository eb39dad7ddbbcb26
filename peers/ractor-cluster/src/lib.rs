//! ractor_cluster — the remoting of ractor, a Rust actor runtime: direct
//! TCP between nodes, no broker — as a peer of `takt bench remote`.
//!
//! One binary, `takt-peer-ractor`, plays both nodes, each in its own
//! process:
//!
//! - **`takt-peer-ractor node-a`** ([`serve_bench`]) is what the bench
//!   starts. It starts node B (the same executable, `node-b GROUP`), then
//!   node A ([`RactorEcho`]): a `NodeServer` on a tokio runtime with one
//!   worker thread, connected to node B, asking node B's echo actor with
//!   ractor's `call` on the remote actor's reference. It answers the
//!   bench's commands on stdin/stdout ([`protocol`]), timing each call
//!   itself, and ends (and node B with it) when its stdin closes.
//! - **`takt-peer-ractor node-b GROUP`** ([`serve_until_stdin_closes`])
//!   runs everything on one thread: a current-thread tokio runtime hosting
//!   its `NodeServer`, the echo actor (joined to process group `GROUP`) and
//!   the session's reader and writer tasks. It accepts on a loopback port
//!   of its own choosing, prints [`READY`] and the port on stdout, and ends
//!   when its stdin closes — when node A drops its handle, or dies in any
//!   way.
//! - **Messages** are `Vec<u8>` both ways, ractor's own `BytesConvertable`
//!   encoding inside its protobuf frames (derived with
//!   `RactorClusterMessage`).
//!
//! This crate is a cargo workspace of its own, outside takt's: ractor_cluster
//! needs ractor's `cluster` feature (every spawned actor then enters a
//! process-wide PID registry), which Cargo would otherwise unify into the
//! ractor that `takt bench agents --peers` measures, and it links rustls
//! with aws-lc-rs. It uses no TLS.

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod child;
mod echo;
mod error;
mod node_a;
mod node_b;
pub mod protocol;

pub use echo::EchoMsg;
pub use error::RactorPeerError;
pub use node_a::RactorEcho;
pub use node_b::{serve_until_stdin_closes, COOKIE, READY};
pub use protocol::serve_bench;
