//! takt's side: the asking node in this process, the answering node
//! ([`responder`](super::responder)) in a child process — or, for the
//! labelled in-process variant, in this process on its own connection and
//! bridge thread.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;
use takt_agents::AskError;
use takt_remote::{Config, Node, RemoteAgent, RemoteError};
use takt_sched::{SpinBudget, ThreadSpec};

use crate::error::RemoteBenchError;
use crate::responder::{self, Count, Responder, Served, SinkCount};

/// How long one benchmark query may take before the run fails.
const ASK_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one try of the sink's count waits (the query may be lost in
/// a flood).
const COUNT_TRY: Duration = Duration::from_secs(1);

/// Where the answering node runs.
#[derive(Debug)]
pub(super) enum Placement {
    /// A child process running `program args…`.
    Child {
        program: std::path::PathBuf,
        args: Vec<String>,
    },
    /// This process.
    InProcess,
}

/// The answering node, held for its drop (which ends it).
#[derive(Debug)]
#[expect(dead_code, reason = "held only to be dropped with the bench")]
enum Answerer {
    Child(Responder),
    InProcess(Served),
}

/// The asking node and the answering node's exports.
#[derive(Debug)]
pub(super) struct TaktEcho {
    echo: RemoteAgent,
    echo_inline: RemoteAgent,
    sink: RemoteAgent,
    // Dropped in this order: the asking node, then the answering one.
    client: Node,
    _answerer: Answerer,
}

impl TaktEcho {
    /// Starts the answering node `name` as `placement` says and the asking
    /// node `client_name` on `url`; bridge threads from `thread`.
    pub(super) fn start(
        url: &str,
        thread: &ThreadSpec,
        spin: SpinBudget,
        name: &str,
        placement: Placement,
    ) -> Result<TaktEcho, RemoteBenchError> {
        // Bridge names within Linux's 15 characters, distinct per process.
        let ask_bridge = match placement {
            Placement::Child { .. } => "ask-bridge",
            Placement::InProcess => "ask-bridge-ip",
        };
        let answerer = match placement {
            Placement::Child { program, args } => {
                Answerer::Child(Responder::spawn(&program, &args, name)?)
            }
            Placement::InProcess => Answerer::InProcess(responder::serve(url, name, thread, spin)?),
        };
        let client_name = format!("{name}-asker");
        let client = Node::start(Config {
            url: url.to_string(),
            node: client_name.clone(),
            cluster: responder::CLUSTER.to_string(),
            thread: thread.renamed(ask_bridge),
            ..Config::default()
        })
        .map_err(RemoteBenchError::remote("the asking node"))?;
        let wait = Duration::from_secs(20);
        if !client.wait_for_node(name, wait) {
            return Err(RemoteBenchError::NotReady {
                what: format!("the answering node {name}"),
                ready: "appear",
                within: wait,
            });
        }
        let find = RemoteBenchError::remote;
        let echo = client
            .remote(name, responder::ECHO)
            .map_err(find("the answering node's echo"))?;
        let echo_inline = client
            .remote(name, responder::ECHO_INLINE)
            .map_err(find("the answering node's inline echo"))?;
        let sink = client
            .remote(name, responder::SINK)
            .map_err(find("the answering node's sink"))?;
        // The exports are confirmed before the node announces them; one
        // answered ask shows the path works end to end.
        let t0 = Instant::now();
        loop {
            match echo
                .ask::<Bytes, Bytes>(Bytes::from_static(&[1]), ASK_TIMEOUT)
                .wait()
            {
                Ok(_) => break,
                Err(e) if t0.elapsed() > wait => return Err(RemoteBenchError::ask("takt ask")(e)),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
        Ok(TaktEcho {
            echo,
            echo_inline,
            sink,
            client,
            _answerer: answerer,
        })
    }

    /// One ask of `payload`.
    pub(super) fn round_trip(&mut self, payload: &[u8]) -> Result<Duration, RemoteBenchError> {
        Self::ask_once(&self.echo, payload)
    }

    /// One ask of `payload` to the echo answered on the bridge thread.
    pub(super) fn round_trip_inline(
        &mut self,
        payload: &[u8],
    ) -> Result<Duration, RemoteBenchError> {
        Self::ask_once(&self.echo_inline, payload)
    }

    fn ask_once(echo: &RemoteAgent, payload: &[u8]) -> Result<Duration, RemoteBenchError> {
        let body = Bytes::copy_from_slice(payload);
        let t0 = Instant::now();
        let r = echo
            .ask::<Bytes, Bytes>(body, ASK_TIMEOUT)
            .wait()
            .map_err(RemoteBenchError::ask("takt ask"))?;
        if r.len() != payload.len() {
            return Err(RemoteBenchError::WrongReply("takt echo"));
        }
        Ok(t0.elapsed())
    }

    /// Asks with `in_flight` outstanding, issuing new ones for `window`,
    /// then waits for the last; returns (round trips, elapsed). `inline`:
    /// asks the echo answered on the answering node's bridge thread.
    pub(super) fn saturate(
        &mut self,
        payload: &[u8],
        in_flight: usize,
        window: Duration,
        inline: bool,
    ) -> Result<(u64, Duration), RemoteBenchError> {
        let echo = if inline {
            &self.echo_inline
        } else {
            &self.echo
        };
        let body = Bytes::copy_from_slice(payload);
        let t0 = Instant::now();
        let mut pending = VecDeque::with_capacity(in_flight);
        let mut done = 0u64;
        let mut issuing = true;
        while issuing || !pending.is_empty() {
            // The clock is read once per answered ask, not per ask issued.
            issuing = issuing && t0.elapsed() < window;
            while issuing && pending.len() < in_flight {
                pending.push_back(echo.ask::<Bytes, Bytes>(body.clone(), ASK_TIMEOUT));
            }
            if let Some(p) = pending.pop_front() {
                p.wait().map_err(RemoteBenchError::ask("takt ask"))?;
                done += 1;
            }
        }
        Ok((done, t0.elapsed()))
    }

    /// The answering child's process id (`None` in this process).
    pub(super) fn answerer_pid(&self) -> Option<u32> {
        match &self._answerer {
            Answerer::Child(r) => Some(r.pid()),
            Answerer::InProcess(_) => None,
        }
    }

    /// Sends one-way messages of `payload` at `rate` per second (0: as
    /// fast as the caller can) for `window`; a send that meets a full
    /// outbound queue is dropped (the bridge's overload reaction) and
    /// counted. Returns (sent, dropped at the sender, elapsed).
    pub(super) fn one_way(
        &mut self,
        payload: &[u8],
        rate: u64,
        window: Duration,
    ) -> Result<(u64, u64, Duration), RemoteBenchError> {
        let body = Bytes::copy_from_slice(payload);
        let (mut sent, mut full) = (0u64, 0u64);
        let t0 = Instant::now();
        let send = |sent: &mut u64, full: &mut u64| -> Result<(), RemoteBenchError> {
            match self.sink.send(body.clone()) {
                Ok(()) => *sent += 1,
                Err(RemoteError::QueueFull { .. }) => *full += 1,
                Err(e) => return Err(RemoteBenchError::remote("takt send")(e)),
            }
            Ok(())
        };
        if rate == 0 {
            while t0.elapsed() < window {
                for _ in 0..64 {
                    send(&mut sent, &mut full)?;
                }
            }
        } else {
            // Bursts every millisecond, each bringing the count up to plan.
            loop {
                let now = t0.elapsed();
                if now >= window {
                    break;
                }
                let due = (now.as_secs_f64() * rate as f64) as u64;
                while sent + full < due {
                    send(&mut sent, &mut full)?;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok((sent, full, t0.elapsed()))
    }

    /// The sink's count and the answering node's counters. Right after a
    /// flood the outbound queue may still be full, which refuses the query
    /// (`Rejected`), and an answering node that fell behind drops it with
    /// the flood (slow consumer: `Timeout`): it is asked again, each try
    /// waiting [`COUNT_TRY`], for up to [`ASK_TIMEOUT`] in all.
    pub(super) fn sink_count(&self) -> Result<SinkCount, RemoteBenchError> {
        let t0 = Instant::now();
        loop {
            match self.sink.ask::<Count, SinkCount>(Count, COUNT_TRY).wait() {
                Err(AskError::Rejected | AskError::Timeout) if t0.elapsed() < ASK_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                r => return r.map_err(RemoteBenchError::ask("takt sink count")),
            }
        }
    }

    /// The asking node's counters.
    pub(super) fn stats(&self) -> takt_remote::RemoteStats {
        self.client.stats()
    }
}
