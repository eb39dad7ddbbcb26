//! takt's side: two takt-remote nodes (two connections, two bridge
//! threads), an echo agent exported on one for `Vec<u8>` queries, asked
//! from the other.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use takt_agents::{Agent, Config as RtConfig, Ctx, Definer, Runtime};
use takt_remote::{Config, Node, RemoteAgent};
use takt_sched::ThreadSpec;

/// How long one benchmark query may take before the run fails.
const ASK_TIMEOUT: Duration = Duration::from_secs(10);

struct Echo;
impl Agent for Echo {
    fn define(def: &mut Definer<Self>) {
        def.on_ask(|_: &mut Echo, _: &mut Ctx<Echo>, v: Vec<u8>| v);
    }
}

/// Two nodes and the exported echo agent.
#[derive(Debug)]
pub(super) struct TaktEcho {
    echo: RemoteAgent,
    // Dropped in this order: the asking node, the serving node, the agents.
    client: Node,
    _server: Node,
    _rt: Runtime,
}

impl TaktEcho {
    /// Starts both nodes on `url`; bridge threads from `thread`.
    pub(super) fn start(url: &str, thread: &ThreadSpec) -> Result<TaktEcho, String> {
        let rt = Runtime::new(RtConfig::default());
        let disp = rt.one_thread("echo").map_err(|e| e.to_string())?;
        let mut coop = rt.coop("echo");
        let echo = coop.add(Echo, &disp).map_err(|e| e.to_string())?;
        coop.register().map_err(|e| e.to_string())?;
        let cfg = |node: &str| Config {
            url: url.to_string(),
            node: node.to_string(),
            cluster: "bench".to_string(),
            thread: thread.renamed(format!("remote-{node}")),
            ..Config::default()
        };
        let server = Node::start(cfg("server")).map_err(|e| e.to_string())?;
        server
            .export_ask::<Vec<u8>, Vec<u8>>("echo", echo.requester())
            .map_err(|e| e.to_string())?;
        let client = Node::start(cfg("client")).map_err(|e| e.to_string())?;
        let echo = client
            .lookup("echo", ASK_TIMEOUT)
            .map_err(|e| e.to_string())?;
        Ok(TaktEcho {
            echo,
            client,
            _server: server,
            _rt: rt,
        })
    }

    /// One ask of `payload`.
    pub(super) fn round_trip(&mut self, payload: &[u8]) -> Result<Duration, String> {
        let t0 = Instant::now();
        let r = self
            .echo
            .ask::<Vec<u8>, Vec<u8>>(payload.to_vec(), ASK_TIMEOUT)
            .wait()
            .map_err(|e| format!("takt ask: {e}"))?;
        if r.len() != payload.len() {
            return Err("takt echo: wrong reply length".into());
        }
        Ok(t0.elapsed())
    }

    /// `total` asks with `in_flight` outstanding; returns the elapsed time.
    pub(super) fn saturate(
        &mut self,
        payload: &[u8],
        in_flight: usize,
        total: usize,
    ) -> Result<Duration, String> {
        let t0 = Instant::now();
        let mut window = VecDeque::with_capacity(in_flight);
        let mut issued = 0;
        while issued < total || !window.is_empty() {
            while issued < total && window.len() < in_flight {
                window.push_back(
                    self.echo
                        .ask::<Vec<u8>, Vec<u8>>(payload.to_vec(), ASK_TIMEOUT),
                );
                issued += 1;
            }
            if let Some(p) = window.pop_front() {
                p.wait().map_err(|e| format!("takt ask: {e}"))?;
            }
        }
        Ok(t0.elapsed())
    }

    /// The asking node's counters (checked after the run: nothing may be lost).
    pub(super) fn stats(&self) -> takt_remote::RemoteStats {
        self.client.stats()
    }
}
