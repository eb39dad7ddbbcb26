//! # takt-remote: takt-agents beyond one process, over NATS
//!
//! Agents in several processes, on one machine or many, talk through the
//! same kinds of handles they use at home ([`Recipient`](takt_agents::Recipient),
//! [`Requester`](takt_agents::Requester), named mailboxes), carried by a
//! [NATS](https://nats.io) server: one small broker that gives subjects for
//! addressing, request/reply with "no responders", and credentials and TLS.
//! A process joins the cluster as a [`Node`]; the node's bridge thread runs
//! the NATS client.
//!
//! ```no_run
//! use std::time::Duration;
//! use serde::{Deserialize, Serialize};
//! use takt_agents::{Agent, Config as RtConfig, Ctx, Definer, Runtime};
//! use takt_remote::{Config, Node, Postcard, Remote};
//!
//! #[derive(Clone, Serialize, Deserialize)]
//! struct Order { id: u64 }
//! impl Remote for Order {
//!     const NAME: &'static str = "shop.Order";
//!     const VERSION: u32 = 1;
//!     type Codec = Postcard;
//! }
//!
//! struct Billing;
//! impl Agent for Billing {
//!     fn define(def: &mut Definer<Self>) {
//!         def.on(|_: &mut Billing, _: &mut Ctx<Billing>, o: Order| println!("bill {}", o.id))
//!             .on_ask(|_: &mut Billing, _: &mut Ctx<Billing>, id: u64| id * 100);
//!     }
//! }
//!
//! // Process 1: export an agent under a name.
//! let rt = Runtime::new(RtConfig::default());
//! let disp = rt.one_thread("main")?;
//! let mut coop = rt.coop("billing");
//! let billing = coop.add(Billing, &disp)?;
//! coop.register()?;
//! let node = Node::start(Config { node: "billing-1".into(), ..Config::default() })?;
//! node.export::<Order>("billing", billing.recipient())?;
//! node.export_ask::<u64, u64>("billing", billing.requester())?;
//!
//! // Process 2: look it up and talk to it.
//! let node = Node::start(Config { node: "shop-1".into(), ..Config::default() })?;
//! let billing = node.lookup("billing", Duration::from_secs(5))?;
//! billing.send(Order { id: 7 })?;
//! let cents: u64 = billing.ask(7u64, Duration::from_secs(1)).wait()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Addressing
//! - **Exported agents**: [`Node::export`] (messages) and
//!   [`Node::export_ask`] (queries) put a local handle under a name;
//!   [`Node::lookup`] finds the node that exports it (from the presence
//!   announcements) and returns a [`RemoteAgent`], which sends, asks, and
//!   turns into a `Recipient`/`Requester` for code that should not know
//!   where the agent lives. [`Node::remote`] addresses `node`/`name`
//!   without waiting. [`Node::export_ask_inline`] answers queries with
//!   a closure on the bridge thread itself, for handlers that are cheap
//!   and never block (two thread hand-offs fewer per round trip).
//! - **Mailboxes**: [`Node::export_mbox`] joins a local named
//!   [`Mbox`](takt_agents::Mbox) to the cluster; a publish through the
//!   returned [`RemoteMbox`] on any node reaches the subscribers of every
//!   node's mailbox of that name, each exactly once (the publishing node
//!   delivers locally and ignores its own message coming back).
//! - **Ask** across nodes completes a [`Pending`](takt_agents::Pending)
//!   (blocking or as a future): with the reply; at once with
//!   `AskError::Unreachable` when the node is down or nobody subscribes
//!   there (NATS "no responders"); with `AskError::Timeout` after the
//!   timeout; with `AskError::Rejected` when the query or reply cannot
//!   cross (type mismatch, queue full, too large).
//!
//! ## Messages
//! A message type implements [`Remote`]: serde, a wire name, a schema
//! version and a [`Codec`] ([`Postcard`] by default). The name and version
//! travel in a small envelope before the payload (with the sender's origin;
//! built once per type and node, read in place); a receiver that expects
//! another name or version rejects the message and counts it
//! ([`RemoteStats::type_mismatch`]), never misreads it. A message whose
//! envelope and payload exceed the server's `max_payload` (1 MiB by
//! default) is refused at the sender with [`RemoteError::TooLarge`].
//!
//! ## Guarantees
//! - **At most once.** Nothing is retried or persisted; a message is
//!   delivered once or not at all.
//! - **FIFO per sender→receiver pair while the connection holds**: messages
//!   from one thread to one exported name (or mailbox) arrive in the order
//!   sent. The bridge keeps one queue and one connection per node, and
//!   NATS keeps per-publisher order per subscriber.
//! - **What a reconnect loses**: when the connection to the server drops,
//!   the client reconnects by itself (forever, with back-off) and
//!   re-subscribes. Messages published by other nodes while this node is
//!   disconnected are lost for it (core NATS stores nothing); messages this
//!   node sends meanwhile wait in the client's buffer and the bridge's
//!   queue and go out after the reconnect, except those the client had
//!   already written to the dead socket. Order is kept: what arrives
//!   after a reconnect is never older than what arrived before it (the
//!   restart test checks strictly increasing sequence numbers).
//! - Sends to a node known to be down fail at once and are counted
//!   ([`RemoteStats::undeliverable`]).
//!
//! ## Presence
//! Every node announces itself on start and every [`Config::heartbeat`]
//! (default 1 s) with the names it exports; [`Node::watch`] delivers
//! [`NodeEvent::Up`] and [`NodeEvent::Down`]. A node silent for
//! `heartbeat × missed_heartbeats` (default 3) is down — a crashed process
//! and a host that falls silent alike, long before NATS's own ping timeout
//! would notice — and a node that shuts down says so at once.
//!
//! ## Back-pressure
//! The bridge never blocks an agent's thread: a send encodes on the
//! caller's thread and puts the message on a bounded queue
//! ([`Config::outbound_queue`]) without waiting; a full queue is
//! [`RemoteError::QueueFull`] and, through a recipient made with
//! [`RemoteAgent::recipient_with`], the chosen
//! [`Overflow`](takt_agents::Overflow) reaction (drop, abort, redirect,
//! transform). On the receiving side the local agent's own
//! [`Limits`](takt_agents::Limits) apply; when the bridge itself falls
//! behind, the NATS client drops messages and reports a slow consumer,
//! counted in [`RemoteStats::slow_consumer`].
//!
//! ## Configuration
//! [`Config`] from code, or [`Config::from_file`] for a TOML file (the
//! `config` module docs list every key): server URL (default
//! `nats://127.0.0.1:4222`), node name, cluster (subject prefix),
//! heartbeat, queue size, credentials (token, user and password, NKey
//! seed), TLS (CA, client certificate), and the bridge thread's name, CPUs
//! and scheduling policy (a takt-sched `ThreadSpec`, as for every takt
//! thread).
//!
//! ## Which NATS client
//! `async-nats` 0.42, without default features but `ring`. Newer
//! releases raise their minimum Rust past the workspace's 1.88 (0.51
//! declares 1.89) and turn on features for server 2.10+ by default; core
//! NATS (publish, subscribe, no-responders) is what this crate
//! uses, and nats-server 2.9 (Debian's) serves all of it: the tests run
//! against it. The engine sits behind the [`Transport`] trait, so another
//! engine could follow.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

/// The README's example, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod codec;
pub mod config;
mod envelope;
mod error;
mod nats;
mod node;
mod outbox;
mod presence;
mod stats;
pub mod transport;

pub use codec::{Codec, Postcard, Remote};
pub use config::{Config, Credentials, Tls};
pub use error::RemoteError;
pub use nats::Nats;
pub use node::{Node, RemoteAgent, RemoteMbox};
pub use presence::NodeEvent;
pub use stats::RemoteStats;
pub use transport::{Inbound, Transport};
