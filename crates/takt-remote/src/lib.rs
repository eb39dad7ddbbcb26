//! # takt-remote: takt-agents beyond one process, over NATS
//!
//! placeholder docs
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod codec;
mod config;
mod error;
mod nats;
mod node;
mod presence;
mod stats;
pub mod transport;

pub use codec::{Codec, Postcard, Remote};
pub use config::{
    Config, Credentials, Tls, DEFAULT_HEARTBEAT, DEFAULT_MISSED_HEARTBEATS, DEFAULT_OUTBOUND_QUEUE,
    DEFAULT_URL,
};
pub use error::RemoteError;
pub use nats::Nats;
pub use node::{Node, RemoteAgent, RemoteMbox};
pub use presence::NodeEvent;
pub use stats::RemoteStats;
pub use transport::{Inbound, Meta, Transport};
