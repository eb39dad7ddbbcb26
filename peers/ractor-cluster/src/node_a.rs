//! Node A: the asking node, in the process the bench starts (`node-a`).

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};
use ractor::concurrency::JoinHandle;
use ractor::rpc::CallResult;
use ractor::{Actor, ActorRef};
use ractor_cluster::{NodeServer, NodeServerMessage};

use crate::child::NodeB;
use crate::echo::EchoMsg;
use crate::error::{io, RactorPeerError};
use crate::node_b::COOKIE;

/// How long node B's echo actor may take to appear on node A.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long one call may take before the run fails.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long node A's server may take to stop.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// How often node A looks for the echo actor while connecting.
const POLL: Duration = Duration::from_millis(5);

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// Distinguishes the groups of the instances one process starts one after
/// the other (so that no stale member of an earlier one is found).
static INSTANCE: AtomicU64 = AtomicU64::new(0);

/// Whether an instance lives in this process. ractor_cluster expects one
/// node server per process: each server numbers its peers from 0, and
/// remote actors are known process-wide by (peer number, actor number), so
/// the actors of two live instances' peers would be confused.
static LIVE: AtomicBool = AtomicBool::new(false);

/// Holds [`LIVE`] while an instance lives.
#[derive(Debug)]
struct Live;

impl Live {
    fn claim() -> Result<Live, RactorPeerError> {
        // Acquire/Release: an instance's teardown happens before the next
        // instance's start in the same process.
        LIVE.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .map(|_| Live)
            .map_err(|_| RactorPeerError::Busy)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        LIVE.store(false, Ordering::Release);
    }
}

/// Node A connected to node B's echo actor, node B in a child process.
/// One at a time per process ([`RactorPeerError::Busy`] otherwise).
///
/// Dropped in order: node A's actors stop, its runtime ends, then node B's
/// process is killed.
#[derive(Debug)]
pub struct RactorEcho {
    echo: ActorRef<EchoMsg>,
    server: ActorRef<NodeServerMessage>,
    server_task: Option<JoinHandle<()>>,
    rt: tokio::runtime::Runtime,
    node_b: NodeB,
    _live: Live,
}

impl RactorEcho {
    /// Starts node B as `program args… GROUP` (a program that calls
    /// [`serve_until_stdin_closes`](crate::serve_until_stdin_closes) with
    /// its last argument), then node A, connects them and waits until node
    /// B's echo actor is reachable and has answered once.
    pub fn start(
        program: &std::path::Path,
        args: &[String],
    ) -> Result<RactorEcho, RactorPeerError> {
        let live = Live::claim()?;
        let group = format!(
            "takt-echo-{}-{}",
            std::process::id(),
            INSTANCE.fetch_add(1, Ordering::Relaxed)
        );
        let node_b = NodeB::spawn(program, args, &group)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ractor-a")
            .enable_all()
            .build()
            .map_err(io("node A's runtime"))?;
        let addr = format!("127.0.0.1:{}", node_b.port());
        let connect = async {
            let server = NodeServer::new(
                0,
                COOKIE.to_string(),
                format!("takt-ractor-a-{}", std::process::id()),
                LOOPBACK.to_string(),
                None,
                None,
            )
            .with_listen_addr(LOOPBACK);
            let (server, task) =
                Actor::spawn(None, server, ())
                    .await
                    .map_err(|e| RactorPeerError::Spawn {
                        what: "node A's server",
                        reason: e.to_string(),
                    })?;
            let fail = |reason: String| RactorPeerError::Connect {
                addr: addr.clone(),
                reason,
            };
            let found = async {
                ractor_cluster::client_connect(&server, addr.as_str())
                    .await
                    .map_err(|e| fail(e.to_string()))?;
                let t0 = Instant::now();
                loop {
                    let remote = ractor::pg::get_members(&group)
                        .into_iter()
                        .find(|c| !c.get_id().is_local());
                    if let Some(cell) = remote {
                        break Ok(ActorRef::<EchoMsg>::from(cell));
                    }
                    if t0.elapsed() > CONNECT_TIMEOUT {
                        break Err(fail(format!(
                            "its echo actor did not appear in group {group} within {CONNECT_TIMEOUT:?}"
                        )));
                    }
                    tokio::time::sleep(POLL).await;
                }
            }
            .await;
            match found {
                Ok(echo) => Ok((echo, server, task)),
                Err(e) => {
                    server.stop(None);
                    let _ = task.await;
                    Err(e)
                }
            }
        };
        let (echo, server, task) = rt.block_on(connect)?;
        let mut me = RactorEcho {
            echo,
            server,
            server_task: Some(task),
            rt,
            node_b,
            _live: live,
        };
        me.round_trip(&[1])?;
        Ok(me)
    }

    /// Node B's process id.
    pub fn node_b_pid(&self) -> u32 {
        self.node_b.pid()
    }

    /// One call of `payload` to the echo actor; the time from the send to
    /// the reply.
    pub fn round_trip(&mut self, payload: &[u8]) -> Result<Duration, RactorPeerError> {
        let v = payload.to_vec();
        let t0 = Instant::now();
        let got = self.rt.block_on(call(&self.echo, v))?;
        let elapsed = t0.elapsed();
        check(payload.len(), got.len())?;
        Ok(elapsed)
    }

    /// Calls of `payload` with `in_flight` outstanding, issuing new ones
    /// for `window`, then waiting for the last; returns (round trips,
    /// elapsed).
    pub fn saturate(
        &mut self,
        payload: &[u8],
        in_flight: usize,
        window: Duration,
    ) -> Result<(u64, Duration), RactorPeerError> {
        let sent = payload.len();
        let echo = &self.echo;
        let t0 = Instant::now();
        let done = self.rt.block_on(async {
            let mut pending = FuturesUnordered::new();
            let mut done = 0u64;
            let mut issuing = true;
            loop {
                issuing = issuing && t0.elapsed() < window;
                while issuing && pending.len() < in_flight.max(1) {
                    pending.push(call(echo, payload.to_vec()));
                }
                match pending.next().await {
                    Some(Ok(v)) => {
                        check(sent, v.len())?;
                        done += 1;
                    }
                    Some(Err(e)) => return Err(e),
                    None => return Ok(done),
                }
            }
        })?;
        Ok((done, t0.elapsed()))
    }
}

/// One call to the echo actor, with [`CALL_TIMEOUT`].
async fn call(echo: &ActorRef<EchoMsg>, v: Vec<u8>) -> Result<Vec<u8>, RactorPeerError> {
    match echo
        .call(|reply| EchoMsg::Echo(v, reply), Some(CALL_TIMEOUT))
        .await
    {
        Ok(CallResult::Success(v)) => Ok(v),
        Ok(CallResult::Timeout) => Err(RactorPeerError::Call(format!(
            "no answer within {CALL_TIMEOUT:?}"
        ))),
        Ok(CallResult::SenderError) => Err(RactorPeerError::Call(
            "the echo actor dropped the reply".into(),
        )),
        Err(e) => Err(RactorPeerError::Call(e.to_string())),
    }
}

fn check(sent: usize, got: usize) -> Result<(), RactorPeerError> {
    if sent == got {
        Ok(())
    } else {
        Err(RactorPeerError::WrongReply { sent, got })
    }
}

impl Drop for RactorEcho {
    fn drop(&mut self) {
        self.server.stop(None);
        if let Some(task) = self.server_task.take() {
            let _ = self
                .rt
                .block_on(async { tokio::time::timeout(STOP_TIMEOUT, task).await });
        }
        // Then the fields drop in order: the runtime ends (cancelling what
        // is left of node A), node B's process is killed and reaped.
    }
}
