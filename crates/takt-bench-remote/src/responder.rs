//! The answering node of `takt bench remote`, and the child process that
//! runs it.
//!
//! [`serve`] is the node: an echo agent exported for `Vec<u8>` queries and
//! a counting sink exported for one-way `Vec<u8>` messages, on a takt-agents
//! runtime of its own. [`Responder`] runs it in a child process (`takt
//! bench remote --responder`, or any program that calls [`serve`]): the
//! child prints [`READY`] on stdout once its exports are confirmed, and
//! ends when its stdin closes — when the bench drops the handle, and also
//! when the bench process dies in any way, so no child outlives it. The
//! handle kills and reaps the child on drop.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use takt_agents::{
    pending, Agent, Answer, Config as RtConfig, Ctx, Definer, Pending, Requester, Runtime,
};
use takt_remote::{Config, Node, Postcard, Remote};
use takt_sched::{SpinBudget, ThreadSpec};

use crate::error::RemoteBenchError;

/// The line the child prints once it serves.
pub const READY: &str = "takt-remote responder ready";
/// The cluster (subject prefix) the bench's nodes share.
pub const CLUSTER: &str = "bench";
/// The answering node's exports.
pub const ECHO: &str = "echo";
/// The same echo answered on the answering node's bridge thread
/// (`Node::export_ask_inline`), without an agent.
pub const ECHO_INLINE: &str = "echo-inline";
/// The one-way sink's export.
pub const SINK: &str = "sink";
/// The answering node's bridge thread (a name within Linux's 15
/// characters, so per-thread statistics tell the bridges apart).
pub const ANSWER_BRIDGE: &str = "answer-bridge";
/// How long the child may take to serve.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A query to the sink: how much it received, and the node's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkCount {
    /// One-way messages delivered to the sink agent.
    pub received: u64,
    /// Slow-consumer events the answering node's engine reported.
    pub slow_consumer: u64,
    /// Messages that reached the node but not the agent (type or decode
    /// errors).
    pub rejected: u64,
}

impl Remote for SinkCount {
    const NAME: &'static str = "bench.SinkCount";
    const VERSION: u32 = 1;
    type Codec = Postcard;
}

/// The query for a [`SinkCount`].
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Count;

impl Remote for Count {
    const NAME: &'static str = "bench.Count";
    const VERSION: u32 = 1;
    type Codec = Postcard;
}

struct Echo;
impl Agent for Echo {
    fn define(def: &mut Definer<Self>) {
        def.on_ask(|_: &mut Echo, _: &mut Ctx<Echo>, v: Bytes| v);
    }
}

/// Counts one-way messages; answers [`Count`] with what it has seen (the
/// node's counters are filled in by the caller of the agent).
struct Sink {
    received: Arc<AtomicU64>,
}
impl Agent for Sink {
    fn define(def: &mut Definer<Self>) {
        def.on(|me: &mut Sink, _: &mut Ctx<Sink>, _: Bytes| {
            // Relaxed: a count read by the node's `Count` answer only.
            me.received.fetch_add(1, Ordering::Relaxed);
        });
    }
}

/// The answering node with its agents; dropped in field order.
#[derive(Debug)]
pub struct Served {
    node: Arc<Node>,
    _rt: Runtime,
}

impl Served {
    /// The node's counters.
    pub fn stats(&self) -> takt_remote::RemoteStats {
        self.node.stats()
    }
}

/// Answers [`Count`] from the sink's counter and the node's counters.
struct Counter {
    received: Arc<AtomicU64>,
    node: OnceLock<Weak<Node>>,
}

impl Answer<Count, SinkCount> for Counter {
    fn answer(&self, _: Count, _: Option<Duration>) -> Pending<SinkCount> {
        let (promise, p) = pending();
        let stats = self
            .node
            .get()
            .and_then(Weak::upgrade)
            .map(|n| n.stats())
            .unwrap_or_default();
        promise.fulfil(SinkCount {
            received: self.received.load(Ordering::Relaxed),
            slow_consumer: stats.slow_consumer,
            rejected: stats.type_mismatch + stats.decode_errors,
        });
        p
    }
}

/// Starts the answering node `name` on `url` (bridge thread from `thread`;
/// the agents' dispatcher threads spin `spin` before they sleep) and
/// exports [`ECHO`] (`Bytes` queries), [`ECHO_INLINE`] (the same, answered
/// on the bridge thread) and [`SINK`] (`Bytes` messages).
pub fn serve(
    url: &str,
    name: &str,
    thread: &ThreadSpec,
    spin: SpinBudget,
) -> Result<Served, RemoteBenchError> {
    let rt = Runtime::new(RtConfig {
        spin,
        ..RtConfig::default()
    });
    let disp = rt.one_thread("echo")?;
    let sink_disp = rt.one_thread("sink")?;
    let received = Arc::new(AtomicU64::new(0));
    let mut coop = rt.coop("responder");
    let echo = coop.add(Echo, &disp)?;
    let sink = coop.add(
        Sink {
            received: received.clone(),
        },
        &sink_disp,
    )?;
    coop.register()?;
    let node = Arc::new(
        Node::start(Config {
            url: url.to_string(),
            node: name.to_string(),
            cluster: CLUSTER.to_string(),
            thread: thread.renamed(ANSWER_BRIDGE),
            ..Config::default()
        })
        .map_err(RemoteBenchError::remote("the answering node"))?,
    );
    let export = RemoteBenchError::remote;
    node.export_ask::<Bytes, Bytes>(ECHO, echo.requester())
        .map_err(export("exporting the echo"))?;
    node.export_ask_inline::<Bytes, Bytes, _>(ECHO_INLINE, |v: Bytes| v)
        .map_err(export("exporting the inline echo"))?;
    node.export::<Bytes>(SINK, sink.recipient())
        .map_err(export("exporting the sink"))?;
    let counter = Counter {
        received,
        node: OnceLock::new(),
    };
    let _ = counter.node.set(Arc::downgrade(&node));
    node.export_ask::<Count, SinkCount>(SINK, Requester::new(counter))
        .map_err(export("exporting the sink's count"))?;
    Ok(Served { node, _rt: rt })
}

/// The child's main: serves, prints [`READY`], and returns once stdin
/// closes (the bench ended or died).
pub fn serve_until_stdin_closes(
    url: &str,
    name: &str,
    thread: &ThreadSpec,
    spin: SpinBudget,
) -> Result<(), RemoteBenchError> {
    let served = serve(url, name, thread, spin)?;
    takt_measure::output::print(&format!("{READY}\n"))
        .map_err(RemoteBenchError::io("the responder's ready line"))?;
    let mut sink = [0u8; 64];
    let mut stdin = std::io::stdin().lock();
    while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
    drop(served);
    Ok(())
}

/// The answering node in a child process; killed and reaped on drop.
#[derive(Debug)]
pub struct Responder {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The child's node name.
    pub name: String,
}

impl Responder {
    /// Runs `program args…` (which must call [`serve_until_stdin_closes`]
    /// with node `name`) and waits until it serves.
    pub fn spawn(
        program: &std::path::Path,
        args: &[String],
        name: &str,
    ) -> Result<Responder, RemoteBenchError> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(RemoteBenchError::io(format!(
                "cannot start the responder {}",
                program.display()
            )))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let mut r = Responder {
            child,
            stdin,
            name: name.to_string(),
        };
        let Some(stdout) = stdout else {
            return Err(RemoteBenchError::Io {
                what: "the responder".into(),
                source: std::io::Error::other("no stdout"),
            });
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            // The line ends with it (a test harness may print before it).
            let ready = lines.any(|l| l.is_ok_and(|l| l.trim_end().ends_with(READY)));
            let _ = tx.send(ready);
            // Keep reading so that the child never blocks on a full pipe.
            for _ in lines {}
        });
        match rx.recv_timeout(START_TIMEOUT) {
            Ok(true) => Ok(r),
            _ => {
                let status = r.child.try_wait().ok().flatten();
                r.kill();
                Err(match status {
                    Some(s) => RemoteBenchError::ResponderExited(s),
                    None => RemoteBenchError::NotReady {
                        what: "the responder".into(),
                        ready: "serve",
                        within: START_TIMEOUT,
                    },
                })
            }
        }
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes the child's stdin, as the death of the bench would; the
    /// child then ends by itself. Returns whether it did within `wait`.
    pub fn close_stdin_and_wait(&mut self, wait: Duration) -> bool {
        self.stdin = None;
        let t0 = std::time::Instant::now();
        while t0.elapsed() < wait {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    fn kill(&mut self) {
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.kill();
    }
}
