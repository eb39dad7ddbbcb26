//! # takt-sip: an RFC 3261 SIP proxy, multi-threaded, instrumented per message
//!
//! The server under test of Krishnamurthy & Rouskas' study of scheduler
//! settings and multi-threaded SIP proxies, done right: every thread is a
//! takt-sched thread with its CPU set and policy, and every message carries
//! the paper's time components (K_rcv, T_sip, K_snd) into HDR histograms.
//!
//! - [`wire`]: zero-copy parser, emitter, stream framing.
//! - [`proxy`]: the proxy core of RFC 3261 §16 — stateless (§16.11) and
//!   transaction-stateful (§17), driven by an explicit clock.
//! - [`transport`]: UDP (IPv4/IPv6) and TCP, worker models `shared`,
//!   `reuseport`, `batched`; TCP on event-loop threads with connection
//!   limits (total, per peer), a message deadline and an idle lifetime.
//! - [`stats`]: per-message instrumentation, JSON and Prometheus output.
//! - [`config`]: the TOML configuration.
//! - [`ua`]: a sans-I/O UAC and UAS (the load generator's call flow), and
//!   SIPp-shaped calls without sockets timed on a hot core ([`ua::synth`]).
//!
//! The crate README runs the proxy from the command line
//! (`takt sip proxy`) and from a program
//! ([`transport::Server::start`]), and states what is measured per
//! message and what the proxy does under overload and bad input. It
//! forwards to one next hop (no forking, no RFC 3263 lookups, no TLS, no
//! registrar): a proxy built to be measured, not a production edge proxy.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod config;
pub mod proxy;
pub mod stats;
pub mod transport;
pub mod ua;

#[cfg(test)]
mod test_util;
pub mod wire;
