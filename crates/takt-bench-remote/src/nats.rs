//! The engine's floor: bare `async-nats` request/reply, a responder on
//! its own connection and thread, the requester on a current-thread tokio
//! runtime — what takt-remote adds its bridge, codec and agents to.

use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::error::RemoteBenchError;

/// The subject the responder serves.
const SUBJECT: &str = "bench.echo";

/// A bare NATS echo: responder thread plus requester.
#[derive(Debug)]
pub(super) struct BareNats {
    rt: tokio::runtime::Runtime,
    client: async_nats::Client,
    responder: Option<std::thread::JoinHandle<()>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

fn runtime() -> Result<tokio::runtime::Runtime, RemoteBenchError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RemoteBenchError::io("a tokio runtime"))
}

impl BareNats {
    /// Connects a responder and a requester to `url`.
    pub(super) fn start(url: &str) -> Result<BareNats, RemoteBenchError> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let u = url.to_string();
        let responder = std::thread::Builder::new()
            .name("nats-responder".into())
            .spawn(move || {
                let rt = match runtime() {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                rt.block_on(async move {
                    let c = match async_nats::connect(u.as_str()).await {
                        Ok(c) => c,
                        Err(e) => {
                            let _ = ready_tx.send(Err(RemoteBenchError::nats("connect")(e)));
                            return;
                        }
                    };
                    let mut sub = match c.subscribe(SUBJECT).await {
                        Ok(s) => s,
                        Err(e) => {
                            let _ = ready_tx.send(Err(RemoteBenchError::nats("subscribe")(e)));
                            return;
                        }
                    };
                    let _ = c.flush().await;
                    let _ = ready_tx.send(Ok(()));
                    let serve = async {
                        while let Some(m) = sub.next().await {
                            if let Some(r) = m.reply {
                                let _ = c.publish(r, m.payload).await;
                            }
                        }
                    };
                    tokio::select! {
                        () = serve => {}
                        _ = stopped => {}
                    }
                });
            })
            .map_err(RemoteBenchError::io("the bare nats responder thread"))?;
        const READY_WITHIN: Duration = Duration::from_secs(10);
        ready_rx
            .recv_timeout(READY_WITHIN)
            .map_err(|_| RemoteBenchError::NotReady {
                what: "the bare nats responder".into(),
                ready: "start",
                within: READY_WITHIN,
            })??;
        let rt = runtime()?;
        let client = rt
            .block_on(async_nats::connect(url))
            .map_err(RemoteBenchError::nats("connect"))?;
        Ok(BareNats {
            rt,
            client,
            responder: Some(responder),
            stop: Some(stop),
        })
    }

    /// One request/reply of `payload`.
    pub(super) fn round_trip(&mut self, payload: &[u8]) -> Result<Duration, RemoteBenchError> {
        let body = bytes::Bytes::copy_from_slice(payload);
        let t0 = Instant::now();
        self.rt
            .block_on(self.client.request(SUBJECT, body))
            .map_err(RemoteBenchError::nats("request"))?;
        Ok(t0.elapsed())
    }

    /// Requests of `payload` with `in_flight` outstanding, issuing new
    /// ones for `window`, then waits for the last; returns (round trips,
    /// elapsed).
    pub(super) fn saturate(
        &mut self,
        payload: &[u8],
        in_flight: usize,
        window: Duration,
    ) -> Result<(u64, Duration), RemoteBenchError> {
        let body = bytes::Bytes::copy_from_slice(payload);
        let client = self.client.clone();
        let t0 = Instant::now();
        let done = self.rt.block_on(async move {
            let mut pending = FuturesUnordered::new();
            let mut done = 0u64;
            let mut issuing = true;
            loop {
                issuing = issuing && t0.elapsed() < window;
                while issuing && pending.len() < in_flight {
                    let c = client.clone();
                    let b = body.clone();
                    pending.push(async move { c.request(SUBJECT, b).await });
                }
                match pending.next().await {
                    Some(Ok(_)) => done += 1,
                    Some(Err(e)) => return Err(RemoteBenchError::nats("request")(e)),
                    None => return Ok(done),
                }
            }
        })?;
        Ok((done, t0.elapsed()))
    }
}

impl Drop for BareNats {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(r) = self.responder.take() {
            let _ = r.join();
        }
    }
}
