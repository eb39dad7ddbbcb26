//! A node's configuration, from code or from a TOML file.
//!
//! ```toml
//! url = "nats://127.0.0.1:4222"   # the default
//! node = "billing-1"              # default: host name and process id
//! cluster = "takt"                # subject prefix; nodes meet within one
//! heartbeat = "1s"                # presence: announce every ...
//! missed_heartbeats = 3           # ... NodeDown after this many missed
//! outbound_queue = 8192           # messages waiting for the bridge
//! connect_timeout = "5s"
//! request_timeout = "5s"          # default timeout of a remote ask
//! subscription_capacity = 65536   # client buffer per subscription (slow consumer past it)
//!
//! [auth]                          # at most one of: token, user+password, nkey_seed
//! user = "svc"
//! password = "secret"
//!
//! [tls]                           # TLS to the server
//! ca = "/etc/takt/ca.pem"         # trust this CA (otherwise the system's roots)
//! cert = "/etc/takt/node.pem"     # client certificate and key (mutual TLS)
//! key = "/etc/takt/node.key"
//!
//! [thread]                        # the bridge thread (a takt-sched ThreadSpec)
//! name = "takt-remote"
//! cpus = "1"
//! sched = "other:nice=-5"
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use takt_sched::{parse_duration, CpuSet, SchedPolicy, ThreadSpec};

use crate::RemoteError;

/// The default server: a local one on NATS's standard port.
pub const DEFAULT_URL: &str = "nats://127.0.0.1:4222";
/// The default heartbeat interval.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(1);
/// The default number of missed heartbeats after which a node is down.
pub const DEFAULT_MISSED_HEARTBEATS: u32 = 3;
/// The default capacity of the outbound queue, in messages.
pub const DEFAULT_OUTBOUND_QUEUE: usize = 8192;

/// The default per-subscription buffer of the client, in messages.
pub const DEFAULT_SUBSCRIPTION_CAPACITY: usize = 65_536;

/// How the node proves who it is to the server.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum Credentials {
    /// None (a server without authorization).
    #[default]
    None,
    /// A token (`authorization { token: ... }` on the server).
    Token(String),
    /// User and password.
    UserPassword {
        /// The user name.
        user: String,
        /// The password.
        password: String,
    },
    /// An NKey seed (`SU...`): the server knows the public key.
    NKey(String),
}

impl std::fmt::Debug for Credentials {
    // Secrets stay out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Credentials::None => "None",
            Credentials::Token(_) => "Token(..)",
            Credentials::UserPassword { .. } => "UserPassword(..)",
            Credentials::NKey(_) => "NKey(..)",
        })
    }
}

/// TLS to the server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tls {
    /// Require TLS even if the URL says `nats://`.
    pub required: bool,
    /// A PEM file of CA certificates to trust (added to the system's roots).
    pub ca: Option<PathBuf>,
    /// A PEM client certificate and its key, for mutual TLS.
    pub client: Option<(PathBuf, PathBuf)>,
}

/// Everything a [`Node`](crate::Node) needs; [`Config::default`] connects
/// to a local server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The server URL (`nats://host:port`, `tls://host:port`).
    pub url: String,
    /// This node's name; unique in the cluster.
    pub node: String,
    /// The subject prefix; only nodes with the same cluster see each other.
    pub cluster: String,
    /// Presence heartbeat interval.
    pub heartbeat: Duration,
    /// A node that missed this many heartbeats is down.
    pub missed_heartbeats: u32,
    /// Capacity of the bridge's outbound queue (messages).
    pub outbound_queue: usize,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// The timeout of a remote ask made without one.
    pub request_timeout: Duration,
    /// Messages the client buffers per subscription before it drops them
    /// and reports a slow consumer (the bridge fell behind).
    pub subscription_capacity: usize,
    /// Credentials.
    pub credentials: Credentials,
    /// TLS, when the server wants it.
    pub tls: Tls,
    /// The bridge thread's name, CPUs and policy.
    pub thread: ThreadSpec,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            url: DEFAULT_URL.to_string(),
            node: default_node_name(),
            cluster: "takt".to_string(),
            heartbeat: DEFAULT_HEARTBEAT,
            missed_heartbeats: DEFAULT_MISSED_HEARTBEATS,
            outbound_queue: DEFAULT_OUTBOUND_QUEUE,
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(5),
            subscription_capacity: DEFAULT_SUBSCRIPTION_CAPACITY,
            credentials: Credentials::None,
            tls: Tls::default(),
            thread: ThreadSpec::new("takt-remote"),
        }
    }
}

fn default_node_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    let host: String = host
        .chars()
        .map(|c| if valid_char(c) { c } else { '_' })
        .collect();
    let host = if host.is_empty() { "node".into() } else { host };
    format!("{host}-{}", std::process::id())
}

fn valid_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// Checks that `name` can be one NATS subject token.
pub(crate) fn check_name(name: &str) -> Result<(), RemoteError> {
    if name.is_empty() || !name.chars().all(valid_char) {
        return Err(RemoteError::InvalidName(name.to_string()));
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    url: Option<String>,
    node: Option<String>,
    cluster: Option<String>,
    heartbeat: Option<String>,
    missed_heartbeats: Option<u32>,
    outbound_queue: Option<usize>,
    subscription_capacity: Option<usize>,
    connect_timeout: Option<String>,
    request_timeout: Option<String>,
    auth: Option<FileAuth>,
    tls: Option<FileTls>,
    thread: Option<FileThread>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAuth {
    token: Option<String>,
    user: Option<String>,
    password: Option<String>,
    nkey_seed: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTls {
    required: Option<bool>,
    ca: Option<PathBuf>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileThread {
    name: Option<String>,
    cpus: Option<String>,
    sched: Option<String>,
}

fn duration(field: &str, v: Option<String>, default: Duration) -> Result<Duration, RemoteError> {
    match v {
        None => Ok(default),
        Some(s) => parse_duration(&s).filter(|d| !d.is_zero()).ok_or_else(|| {
            RemoteError::Config(format!("{field}: '{s}' is not a duration like 500ms or 2s"))
        }),
    }
}

impl Config {
    /// Parses a TOML document (the module docs show every key); missing
    /// keys take the defaults, unknown keys are errors.
    pub fn from_toml(text: &str) -> Result<Config, RemoteError> {
        let f: FileConfig = toml::from_str(text).map_err(|e| RemoteError::Config(e.to_string()))?;
        let d = Config::default();
        let credentials = match f.auth {
            None => Credentials::None,
            Some(a) => match (a.token, a.user, a.password, a.nkey_seed) {
                (None, None, None, None) => Credentials::None,
                (Some(t), None, None, None) => Credentials::Token(t),
                (None, Some(user), Some(password), None) => {
                    Credentials::UserPassword { user, password }
                }
                (None, None, None, Some(s)) => Credentials::NKey(s),
                _ => {
                    return Err(RemoteError::Config(
                        "auth: give exactly one of token, user and password, nkey_seed".into(),
                    ))
                }
            },
        };
        let tls = match f.tls {
            None => Tls::default(),
            Some(t) => Tls {
                required: t.required.unwrap_or(false),
                ca: t.ca,
                client: match (t.cert, t.key) {
                    (None, None) => None,
                    (Some(c), Some(k)) => Some((c, k)),
                    _ => return Err(RemoteError::Config("tls: cert and key go together".into())),
                },
            },
        };
        let mut thread = d.thread.clone();
        if let Some(t) = f.thread {
            if let Some(n) = t.name {
                thread = thread.renamed(n);
            }
            if let Some(c) = t.cpus {
                let cpus: CpuSet = c
                    .parse()
                    .map_err(|e| RemoteError::Config(format!("thread.cpus: {e}")))?;
                thread = thread.with_cpus(cpus);
            }
            if let Some(s) = t.sched {
                let p: SchedPolicy = s
                    .parse()
                    .map_err(|e| RemoteError::Config(format!("thread.sched: {e}")))?;
                thread = thread.with_policy(p);
            }
        }
        let c = Config {
            url: f.url.unwrap_or(d.url),
            node: f.node.unwrap_or(d.node),
            cluster: f.cluster.unwrap_or(d.cluster),
            heartbeat: duration("heartbeat", f.heartbeat, d.heartbeat)?,
            missed_heartbeats: f.missed_heartbeats.unwrap_or(d.missed_heartbeats),
            outbound_queue: f.outbound_queue.unwrap_or(d.outbound_queue),
            connect_timeout: duration("connect_timeout", f.connect_timeout, d.connect_timeout)?,
            request_timeout: duration("request_timeout", f.request_timeout, d.request_timeout)?,
            subscription_capacity: f.subscription_capacity.unwrap_or(d.subscription_capacity),
            credentials,
            tls,
            thread,
        };
        c.validate()?;
        Ok(c)
    }

    /// Reads and parses a TOML file.
    pub fn from_file(path: &Path) -> Result<Config, RemoteError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| RemoteError::Config(format!("{}: {e}", path.display())))?;
        Config::from_toml(&text)
            .map_err(|e| RemoteError::Config(format!("{}: {e}", path.display())))
    }

    /// Checks the values a file or code may get wrong.
    pub fn validate(&self) -> Result<(), RemoteError> {
        check_name(&self.node)?;
        check_name(&self.cluster)?;
        if self.missed_heartbeats == 0 {
            return Err(RemoteError::Config(
                "missed_heartbeats must be at least 1".into(),
            ));
        }
        if self.subscription_capacity == 0 {
            return Err(RemoteError::Config(
                "subscription_capacity must be at least 1".into(),
            ));
        }
        if self.outbound_queue == 0 {
            return Err(RemoteError::Config(
                "outbound_queue must be at least 1".into(),
            ));
        }
        if self.heartbeat.is_zero() {
            return Err(RemoteError::Config("heartbeat must be positive".into()));
        }
        Ok(())
    }

    /// How long after a node's last heartbeat it counts as down.
    pub fn down_after(&self) -> Duration {
        self.heartbeat * self.missed_heartbeats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_a_full_file() {
        let d = Config::from_toml("").unwrap();
        assert_eq!(d.url, DEFAULT_URL);
        assert_eq!(d.heartbeat, DEFAULT_HEARTBEAT);
        let c = Config::from_toml(
            r#"
            url = "tls://10.0.0.1:4443"
            node = "n1"
            cluster = "c"
            heartbeat = "250ms"
            missed_heartbeats = 4
            outbound_queue = 16
            [auth]
            user = "u"
            password = "secret-pw"
            [tls]
            ca = "/ca.pem"
            cert = "/c.pem"
            key = "/c.key"
            [thread]
            name = "bridge"
            cpus = "0"
            sched = "other:nice=0"
            "#,
        )
        .unwrap();
        assert_eq!(c.node, "n1");
        assert_eq!(c.heartbeat, Duration::from_millis(250));
        assert_eq!(c.down_after(), Duration::from_secs(1));
        assert_eq!(
            c.credentials,
            Credentials::UserPassword {
                user: "u".into(),
                password: "secret-pw".into()
            }
        );
        assert_eq!(c.tls.ca.as_deref(), Some(Path::new("/ca.pem")));
        assert_eq!(c.thread.name(), "bridge");
        assert!(c.thread.cpus().is_some());
        assert!(!format!("{c:?}").contains("secret-pw"));
    }

    #[test]
    fn bad_files_are_clear_errors() {
        for (text, needle) in [
            ("heartbeat = \"soon\"", "heartbeat"),
            ("node = \"a.b\"", "invalid name"),
            ("bogus = 1", "unknown field"),
            ("[auth]\ntoken = \"t\"\nuser = \"u\"", "exactly one"),
            ("[tls]\ncert = \"c\"", "together"),
            ("missed_heartbeats = 0", "at least 1"),
            ("[thread]\nsched = \"fast\"", "thread.sched"),
        ] {
            let e = Config::from_toml(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
