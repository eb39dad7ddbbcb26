//! The test fixture: a nats-server on a free loopback port, stopped by PID;
//! message types and a collecting agent shared by the tests.
#![allow(dead_code)]

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use takt_agents::{Agent, Ctx, Definer};
use takt_remote::{Config, Postcard, Remote};

/// Generous: the tests run on a loaded 2-core machine.
pub const LONG: Duration = Duration::from_secs(30);
/// The tests' heartbeat: NodeDown after 3 × this.
pub const HEARTBEAT: Duration = Duration::from_millis(200);

/// A nats-server process with its own config file and directory.
pub struct Server {
    child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    conf: PathBuf,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl Server {
    /// Starts `nats-server` on a free port with `extra` appended to its
    /// config (authorization, tls, max_payload).
    pub fn start(extra: &str) -> Server {
        Server::start_with(|_| extra.to_string())
    }

    /// Like [`start`](Self::start), with config text made from the
    /// server's directory (for files created there first).
    pub fn start_with(extra: impl FnOnce(&Path) -> String) -> Server {
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("takt-remote-test-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let extra = extra(&dir);
        let conf = dir.join("nats.conf");
        let mut f = std::fs::File::create(&conf).unwrap();
        writeln!(f, "listen: 127.0.0.1:{port}\n{extra}").unwrap();
        let mut s = Server {
            child: None,
            port,
            dir,
            conf,
        };
        s.spawn();
        s
    }

    fn spawn(&mut self) {
        let child = Command::new("nats-server")
            .arg("-c")
            .arg(&self.conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server is required: run scripts/setup.sh");
        self.child = Some(child);
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                t0.elapsed() < LONG,
                "nats-server did not listen on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Kills the server (by its PID) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops and starts it again on the same port.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A node configuration for the tests.
pub fn config(url: &str, node: &str, cluster: &str) -> Config {
    Config {
        url: url.to_string(),
        node: node.to_string(),
        cluster: cluster.to_string(),
        heartbeat: HEARTBEAT,
        connect_timeout: Duration::from_secs(5),
        ..Config::default()
    }
}

/// A direct message with a per-sender sequence number.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seq {
    pub from: String,
    pub n: u64,
}
impl Remote for Seq {
    const NAME: &'static str = "test.Seq";
    const VERSION: u32 = 1;
    type Codec = Postcard;
}

/// The same name as [`Seq`] in a newer schema: must be refused by a v1 receiver.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SeqV2 {
    pub n: u64,
    pub from: String,
    pub extra: u32,
}
impl Remote for SeqV2 {
    const NAME: &'static str = "test.Seq";
    const VERSION: u32 = 2;
    type Codec = Postcard;
}

/// A published message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct News(pub u64);
impl Remote for News {
    const NAME: &'static str = "test.News";
    const VERSION: u32 = 1;
    type Codec = Postcard;
}

/// Asks a child to publish `News(n)` itself.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PublishReq(pub u64);
impl Remote for PublishReq {
    const NAME: &'static str = "test.PublishReq";
    const VERSION: u32 = 1;
    type Codec = Postcard;
}

/// Tells a child to leave.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Stop;
impl Remote for Stop {
    const NAME: &'static str = "test.Stop";
    const VERSION: u32 = 1;
    type Codec = Postcard;
}

/// What a child reports back: `kind` 0 = a `Seq` came, 1 = a `News` came.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ack {
    pub node: String,
    pub kind: u8,
    pub n: u64,
}
impl Remote for Ack {
    const NAME: &'static str = "test.Ack";
    const VERSION: u32 = 1;
    type Codec = Postcard;
}

/// Records what it receives.
pub struct Collector {
    pub me: String,
    pub got: Arc<Mutex<Vec<Ack>>>,
}

impl Agent for Collector {
    fn define(def: &mut Definer<Self>) {
        def.on(|c: &mut Collector, _: &mut Ctx<Collector>, a: Ack| c.got.lock().unwrap().push(a))
            .on(|c: &mut Collector, _: &mut Ctx<Collector>, News(n): News| {
                c.got.lock().unwrap().push(Ack {
                    node: c.me.clone(),
                    kind: 1,
                    n,
                })
            })
            .on(|c: &mut Collector, _: &mut Ctx<Collector>, s: Seq| {
                c.got.lock().unwrap().push(Ack {
                    node: s.from,
                    kind: 0,
                    n: s.n,
                })
            })
            .on(|c: &mut Collector, _: &mut Ctx<Collector>, v: Vec<u8>| {
                c.got.lock().unwrap().push(Ack {
                    node: c.me.clone(),
                    kind: 2,
                    n: v.len() as u64,
                })
            })
            .on_ask(|_: &mut Collector, _: &mut Ctx<Collector>, x: u64| x * 2);
    }
}

/// Polls `f` until it holds or `LONG` passes.
pub fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < LONG {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    f()
}

/// Makes a CA and a server certificate for 127.0.0.1 with the openssl CLI.
pub fn make_certs(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl is required: run scripts/setup.sh");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=takt-test-ca",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ]);
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        "ext.cnf",
        "-out",
        "server.pem",
    ]);
    (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    )
}
