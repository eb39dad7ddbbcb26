//! The TOML configuration of `takt sip proxy` (every key optional; command
//! line flags override the file).
//!
//! ```toml
//! [proxy]
//! mode = "stateful"            # or "stateless"
//! listen = "127.0.0.1:5060"    # UDP and TCP; [::1]:5060 for IPv6
//! advertise = "127.0.0.1"      # host written into Via/Record-Route (default: listen address)
//! next_hop = "127.0.0.1:5070"  # static next hop; absent: route by Request-URI
//! next_hop_transport = "udp"   # or "tcp"
//! record_route = true
//! max_transactions = 262144
//! shards = 0                   # 0: two per worker (power of two, 2..=64)
//! udp_size_limit = 1300        # larger requests go over TCP (RFC 3261 §18.1.1)
//! order_responses = true       # stateless: never send a 1xx after a later final (proxy::order)
//! resolve_names = true         # look names in Route/Request-URIs up (false: 404, IP literals only)
//!
//! [timers]
//! t1_ms = 500
//! t2_ms = 4000
//! t4_ms = 5000
//! c_s = 181
//!
//! [workers]
//! model = "shared"             # shared | reuseport | batched
//! wake = "lifo"                # shared: lifo (idle shortest first) | fifo
//! count = 2
//! rcvbuf = 4194304             # bytes per socket
//! batch = 32
//! tcp = true
//! max_message = 65535
//! cpus = "0"                   # takt-sched CPU list
//! sched = "other"              # takt-sched policy
//!
//! [tcp]
//! workers = 0                  # event-loop threads (0: half the UDP workers, at least 1)
//! max_connections = 16384      # open at once, inbound and outbound
//! max_per_peer = 512           # inbound, per peer IP address
//! message_deadline_ms = 5000   # a message completes within this after its first byte
//! idle_timeout_s = 120         # a connection without traffic either way is closed
//! max_send_buffer = 1048576    # bytes held for a peer that does not read
//!
//! [overload]
//! table_high_water = 0.9
//! queue_delay_ms = 300          # K_rcv at which every new INVITE is shed
//! queue_delay_ramp_ms = 100     # K_rcv at which shedding starts (0 → 100%)
//! drop_delay_ms = 500           # K_rcv past which a new INVITE is dropped unanswered
//! retry_after_s = 5
//! split_invites = true          # shared model, lifo: new INVITEs on a socket of their own
//! invite_rcvbuf = 16777216      # that socket's receive buffer, bytes
//!
//! [stats]
//! endpoint = "127.0.0.1:9060"  # or "unix:/run/takt-sip.sock", or "off"
//! interval_s = 1               # stderr summary period (0: off)
//! ```

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;
use takt_sched::ThreadSpec;

use crate::proxy::build::Local;
use crate::proxy::txn::Timers;
use crate::proxy::{Mode, ProxyConfig, ShedPolicy, Target, Transport};
use crate::stats::EndpointAddr;
use crate::transport::{ServerConfig, TcpLimits, WakeOrder, WorkerModel};

/// A configuration problem, naming the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML for this schema.
    #[error("parsing {path}: {message}")]
    Parse {
        /// The path.
        path: String,
        /// The parser's message.
        message: String,
    },
    /// A value is out of range or malformed.
    #[error("{key}: {message}")]
    Value {
        /// The key.
        key: &'static str,
        /// What is wrong.
        message: String,
    },
}

fn bad(key: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError::Value {
        key,
        message: message.into(),
    }
}

/// `[proxy]`
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProxySection {
    /// Mode.
    pub mode: Mode,
    /// Listen address.
    pub listen: String,
    /// Advertised host.
    pub advertise: Option<String>,
    /// Static next hop.
    pub next_hop: Option<String>,
    /// Its transport.
    pub next_hop_transport: Transport,
    /// Record-Route.
    pub record_route: bool,
    /// Table bound.
    pub max_transactions: usize,
    /// Table shards.
    pub shards: usize,
    /// UDP size limit.
    pub udp_size_limit: usize,
    /// Stateless response ordering gate.
    pub order_responses: bool,
    /// Look host names up (else only IP literals route).
    pub resolve_names: bool,
}

impl Default for ProxySection {
    fn default() -> Self {
        ProxySection {
            mode: Mode::Stateful,
            listen: "127.0.0.1:5060".into(),
            advertise: None,
            next_hop: None,
            next_hop_transport: Transport::Udp,
            record_route: true,
            max_transactions: 262_144,
            shards: 0,
            udp_size_limit: 1300,
            order_responses: true,
            resolve_names: true,
        }
    }
}

/// `[timers]`
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TimerSection {
    /// T1 ms.
    pub t1_ms: u64,
    /// T2 ms.
    pub t2_ms: u64,
    /// T4 ms.
    pub t4_ms: u64,
    /// Timer C s.
    pub c_s: u64,
}

impl Default for TimerSection {
    fn default() -> Self {
        TimerSection {
            t1_ms: 500,
            t2_ms: 4000,
            t4_ms: 5000,
            c_s: 181,
        }
    }
}

/// `[workers]`
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerSection {
    /// Model.
    pub model: WorkerModel,
    /// Wake order of the `shared` model's idle workers.
    pub wake: WakeOrder,
    /// Count.
    pub count: usize,
    /// Receive buffer.
    pub rcvbuf: Option<usize>,
    /// recvmmsg batch (also the backlog at which a `shared` worker with
    /// `lifo` wake wakes a parked one).
    pub batch: usize,
    /// TCP on.
    pub tcp: bool,
    /// Largest message.
    pub max_message: usize,
    /// Most TCP connections: the older spelling of `[tcp]
    /// max_connections` (both may not be given).
    pub max_tcp_connections: Option<usize>,
    /// CPU list.
    pub cpus: Option<String>,
    /// Policy.
    pub sched: Option<String>,
}

impl Default for WorkerSection {
    fn default() -> Self {
        WorkerSection {
            model: WorkerModel::Shared,
            wake: WakeOrder::Lifo,
            count: 2,
            rcvbuf: None,
            batch: 32,
            tcp: true,
            max_message: 65_535,
            max_tcp_connections: None,
            cpus: None,
            sched: None,
        }
    }
}

/// `[tcp]`: the TCP transport's threads, limits and deadlines (see
/// [`TcpLimits`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpSection {
    /// Event-loop threads (0: half the UDP workers, at least one).
    pub workers: usize,
    /// Most connections open at once.
    pub max_connections: Option<usize>,
    /// Most inbound connections per peer IP address.
    pub max_per_peer: usize,
    /// Message deadline, ms.
    pub message_deadline_ms: u64,
    /// Idle lifetime, s.
    pub idle_timeout_s: u64,
    /// Send buffer bound per connection, bytes.
    pub max_send_buffer: usize,
}

impl Default for TcpSection {
    fn default() -> Self {
        let d = TcpLimits::default();
        TcpSection {
            workers: d.workers,
            max_connections: None,
            max_per_peer: d.max_per_peer,
            message_deadline_ms: d.message_deadline.as_millis() as u64,
            idle_timeout_s: d.idle_timeout.as_secs(),
            max_send_buffer: d.max_send_buffer,
        }
    }
}

impl TcpSection {
    /// The limits, checked; `legacy` is `[workers] max_tcp_connections`.
    fn limits(&self, legacy: Option<usize>, max_message: usize) -> Result<TcpLimits, ConfigError> {
        let max_connections = match (self.max_connections, legacy) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    "tcp.max_connections",
                    "also given as workers.max_tcp_connections; keep one",
                ))
            }
            (Some(n), None) | (None, Some(n)) => n,
            (None, None) => TcpLimits::default().max_connections,
        };
        if max_connections == 0 {
            return Err(bad("tcp.max_connections", "must be at least 1"));
        }
        if self.max_per_peer == 0 {
            return Err(bad("tcp.max_per_peer", "must be at least 1"));
        }
        if self.message_deadline_ms == 0 {
            return Err(bad("tcp.message_deadline_ms", "must be at least 1"));
        }
        if self.idle_timeout_s == 0 {
            return Err(bad("tcp.idle_timeout_s", "must be at least 1"));
        }
        if self.max_send_buffer < max_message {
            return Err(bad(
                "tcp.max_send_buffer",
                format!("must hold one largest message (workers.max_message = {max_message})"),
            ));
        }
        Ok(TcpLimits {
            workers: self.workers,
            max_connections,
            max_per_peer: self.max_per_peer,
            message_deadline: Duration::from_millis(self.message_deadline_ms),
            idle_timeout: Duration::from_secs(self.idle_timeout_s),
            max_send_buffer: self.max_send_buffer,
        })
    }
}

/// `[overload]`
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OverloadSection {
    /// Shed new INVITEs when a shard of the table is fuller than this
    /// fraction with records that do not linger.
    pub table_high_water: f64,
    /// Queue delay (K_rcv) at which every new INVITE is shed, ms.
    pub queue_delay_ms: u64,
    /// Queue delay at which shedding new INVITEs starts, ms: the share
    /// shed rises linearly to `queue_delay_ms`.
    pub queue_delay_ramp_ms: u64,
    /// Queue delay past which a new INVITE is dropped without an answer,
    /// ms (at least `queue_delay_ms`).
    pub drop_delay_ms: u64,
    /// Retry-After.
    pub retry_after_s: u32,
    /// The `shared` model with `lifo` wake: let the kernel put new
    /// INVITEs on a socket of their own (the transport module's Overload
    /// section).
    pub split_invites: bool,
    /// That socket's receive buffer, bytes.
    pub invite_rcvbuf: usize,
}

impl Default for OverloadSection {
    fn default() -> Self {
        OverloadSection {
            table_high_water: 0.9,
            queue_delay_ms: crate::proxy::QUEUE_DELAY_MS,
            queue_delay_ramp_ms: crate::proxy::QUEUE_DELAY_RAMP_MS,
            drop_delay_ms: crate::proxy::DROP_DELAY_MS,
            retry_after_s: 5,
            split_invites: true,
            invite_rcvbuf: crate::transport::SPLIT_INVITE_RCVBUF,
        }
    }
}

/// `[stats]`
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StatsSection {
    /// Endpoint address or "off".
    pub endpoint: String,
    /// Summary period, s.
    pub interval_s: u64,
}

impl Default for StatsSection {
    fn default() -> Self {
        StatsSection {
            endpoint: "127.0.0.1:9060".into(),
            interval_s: 1,
        }
    }
}

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// `[proxy]`
    pub proxy: ProxySection,
    /// `[timers]`
    pub timers: TimerSection,
    /// `[workers]`
    pub workers: WorkerSection,
    /// `[tcp]`
    pub tcp: TcpSection,
    /// `[overload]`
    pub overload: OverloadSection,
    /// `[stats]`
    pub stats: StatsSection,
}

impl Config {
    /// Parses TOML text.
    pub fn parse(text: &str, path: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.into(),
            message: e.to_string(),
        })
    }

    /// Reads and parses a file.
    pub fn load(path: &str) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.into(),
            source,
        })?;
        Config::parse(&text, path)
    }

    /// The statistics endpoint (None when "off").
    pub fn endpoint(&self) -> Result<Option<EndpointAddr>, ConfigError> {
        if self.stats.endpoint == "off" || self.stats.endpoint.is_empty() {
            return Ok(None);
        }
        self.stats
            .endpoint
            .parse()
            .map(Some)
            .map_err(|e: crate::stats::BadEndpointAddr| bad("stats.endpoint", e.to_string()))
    }

    /// Builds the proxy and server settings. `base` carries CPU set and
    /// policy when the caller already parsed them (CLI); otherwise the
    /// file's `workers.cpus` / `workers.sched` are used.
    pub fn runtime(
        &self,
        base: Option<ThreadSpec>,
    ) -> Result<(ProxyConfig, ServerConfig), ConfigError> {
        let p = &self.proxy;
        let listen: SocketAddr = p
            .listen
            .parse()
            .map_err(|e| bad("proxy.listen", format!("{e}")))?;
        let next_hop = match &p.next_hop {
            None => None,
            Some(s) => {
                let addr = std::net::ToSocketAddrs::to_socket_addrs(s.as_str())
                    .map_err(|e| bad("proxy.next_hop", format!("{s}: {e}")))?
                    .next()
                    .ok_or_else(|| bad("proxy.next_hop", format!("{s}: no address")))?;
                Some(Target {
                    addr,
                    transport: p.next_hop_transport,
                    conn: None,
                })
            }
        };
        if p.max_transactions == 0 {
            return Err(bad("proxy.max_transactions", "must be at least 1"));
        }
        if self.workers.count == 0 {
            return Err(bad("workers.count", "must be at least 1"));
        }
        if self.overload.table_high_water.is_nan() || self.overload.table_high_water <= 0.0 {
            return Err(bad("overload.table_high_water", "must be positive"));
        }
        if self.overload.queue_delay_ramp_ms > self.overload.queue_delay_ms {
            return Err(bad(
                "overload.queue_delay_ramp_ms",
                "must not exceed overload.queue_delay_ms",
            ));
        }
        if self.overload.drop_delay_ms < self.overload.queue_delay_ms {
            return Err(bad(
                "overload.drop_delay_ms",
                "must be at least overload.queue_delay_ms",
            ));
        }
        if self.overload.invite_rcvbuf < 4096 || self.overload.invite_rcvbuf > i32::MAX as usize / 2
        {
            return Err(bad(
                "overload.invite_rcvbuf",
                "must be within 4096..=1073741823",
            ));
        }
        if self.workers.max_message < 1024 || self.workers.max_message > 65_535 {
            return Err(bad("workers.max_message", "must be within 1024..=65535"));
        }
        let ms = 1_000_000u64;
        let t = &self.timers;
        if t.t1_ms == 0 || t.t2_ms < t.t1_ms {
            return Err(bad("timers", "need 0 < t1_ms <= t2_ms"));
        }
        let advertise = p.advertise.clone().unwrap_or_default();
        let mut pc = ProxyConfig::new(
            p.mode,
            Local {
                host: advertise,
                port: 0,
            },
        );
        pc.next_hop = next_hop;
        pc.record_route = p.record_route;
        pc.max_transactions = p.max_transactions;
        pc.shards = p.shards;
        pc.udp_size_limit = p.udp_size_limit;
        pc.order_responses = p.order_responses;
        pc.resolve_names = p.resolve_names;
        pc.timers = Timers {
            t1: t.t1_ms * ms,
            t2: t.t2_ms * ms,
            t4: t.t4_ms * ms,
            c: t.c_s * 1000 * ms,
        };
        pc.shed = ShedPolicy {
            table_high_water: self.overload.table_high_water,
            queue_delay_ns: self.overload.queue_delay_ms * ms,
            queue_delay_ramp_ns: self.overload.queue_delay_ramp_ms * ms,
            drop_delay_ns: self.overload.drop_delay_ms * ms,
            retry_after_s: self.overload.retry_after_s,
        };
        let spec = match base {
            Some(s) => s,
            None => ThreadSpec::from_args(
                "sip",
                self.workers.cpus.as_deref(),
                self.workers.sched.as_deref(),
            )
            .map_err(|e| bad("workers.cpus/sched", e.to_string()))?,
        };
        let mut sc = ServerConfig::new(listen);
        sc.model = self.workers.model;
        sc.wake = self.workers.wake;
        sc.split_invites = self.overload.split_invites;
        sc.invite_rcvbuf = Some(self.overload.invite_rcvbuf);
        sc.workers = self.workers.count;
        sc.rcvbuf = self.workers.rcvbuf;
        sc.batch = self.workers.batch.max(1);
        sc.tcp = self.workers.tcp;
        sc.max_message = self.workers.max_message;
        sc.tcp_limits = self
            .tcp
            .limits(self.workers.max_tcp_connections, self.workers.max_message)?;
        sc.tick = Duration::from_millis(10);
        sc.spec = spec;
        Ok((pc, sc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_file_parses_and_builds() {
        let text = include_str!("../README.md");
        // the README's example block is a complete file
        let start = text.find("```toml\n").unwrap() + 8;
        let end = start + text[start..].find("```").unwrap();
        let c = Config::parse(&text[start..end], "README.md").unwrap();
        let (pc, sc) = c.runtime(None).unwrap();
        assert_eq!(pc.mode, Mode::Stateful);
        assert_eq!(sc.model, WorkerModel::Shared);
        assert!(pc.next_hop.is_some());
        assert!(pc.resolve_names);
        let c = Config::parse("[proxy]\nresolve_names = false\n", "x").unwrap();
        assert!(!c.runtime(None).unwrap().0.resolve_names);
    }

    #[test]
    fn defaults_and_errors() {
        let c = Config::parse("", "x").unwrap();
        let (pc, sc) = c.runtime(Some(ThreadSpec::new("t"))).unwrap();
        assert_eq!(pc.timers.t1, 500_000_000);
        assert_eq!(sc.workers, 2);
        assert!(Config::parse("[proxy]\nmode = \"weird\"\n", "x").is_err());
        assert!(Config::parse("[proxy]\nunknown = 1\n", "x").is_err());
        let c = Config::parse("[workers]\ncount = 0\n", "x").unwrap();
        assert!(matches!(
            c.runtime(None),
            Err(ConfigError::Value {
                key: "workers.count",
                ..
            })
        ));
        assert_eq!(sc.tcp_limits, TcpLimits::default());
        let c = Config::parse(
            "[tcp]\nworkers = 3\nmax_connections = 10\nmax_per_peer = 2\nmessage_deadline_ms = 250\nidle_timeout_s = 7\n",
            "x",
        )
        .unwrap();
        let (_, sc) = c.runtime(Some(ThreadSpec::new("t"))).unwrap();
        let l = sc.tcp_limits;
        assert_eq!((l.workers, l.max_connections, l.max_per_peer), (3, 10, 2));
        assert_eq!(l.message_deadline, Duration::from_millis(250));
        assert_eq!(l.idle_timeout, Duration::from_secs(7));
        for (text, key) in [
            ("[tcp]\nmax_per_peer = 0\n", "tcp.max_per_peer"),
            (
                "[tcp]\nmessage_deadline_ms = 0\n",
                "tcp.message_deadline_ms",
            ),
            ("[tcp]\nmax_send_buffer = 10\n", "tcp.max_send_buffer"),
            (
                "[tcp]\nmax_connections = 5\n[workers]\nmax_tcp_connections = 6\n",
                "tcp.max_connections",
            ),
        ] {
            let e = Config::parse(text, "x").unwrap().runtime(None).unwrap_err();
            assert!(
                matches!(e, ConfigError::Value { key: k, .. } if k == key),
                "{e}"
            );
        }
        let c = Config::parse("[workers]\nmax_tcp_connections = 6\n", "x").unwrap();
        assert_eq!(c.runtime(None).unwrap().1.tcp_limits.max_connections, 6);
        let c = Config::parse("[stats]\nendpoint = \"unix:/tmp/x.sock\"\n", "x").unwrap();
        assert_eq!(
            c.endpoint().unwrap(),
            Some(EndpointAddr::Unix("/tmp/x.sock".into()))
        );
    }
}
