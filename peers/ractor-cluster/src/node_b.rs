//! Node B: the answering node, in its own process.
//!
//! 1. A current-thread tokio runtime on the calling thread hosts
//!    everything: the node server, the echo actor, the sessions.
//! 2. The echo actor joins the process group node A named; a node that
//!    connects learns the group's members during the session's set-up.
//! 3. Node B accepts on a loopback port the kernel picks (so no other
//!    process can take it between a choice and a bind) and hands each
//!    accepted stream to the node server, as ractor_cluster's own
//!    listener would; the node server's own listener, also on loopback,
//!    goes unused.
//! 4. It prints [`READY`] and the port, then serves until its stdin
//!    closes, and stops its actors.

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr};

use ractor::Actor;
use ractor_cluster::{NetworkStream, NodeServer, NodeServerMessage};

use crate::echo::Echo;
use crate::error::{io, RactorPeerError};

/// The line node B prints, followed by a space and its port, once it
/// serves.
pub const READY: &str = "takt-peer-ractor ready";
/// The magic cookie the bench's nodes authenticate each other with.
pub const COOKIE: &str = "takt-bench-remote";

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// Serves node B (see the module docs) with its echo actor in process
/// group `group`; returns once stdin closes.
pub fn serve_until_stdin_closes(group: &str) -> Result<(), RactorPeerError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io("node B's runtime"))?;
    let served = rt.block_on(serve(group));
    // Without waiting for the stdin reader, which may still block if the
    // node ended for another reason.
    rt.shutdown_background();
    served
}

async fn serve(group: &str) -> Result<(), RactorPeerError> {
    let listener = tokio::net::TcpListener::bind((LOOPBACK, 0))
        .await
        .map_err(io("node B's listener"))?;
    let port = listener.local_addr().map_err(io("node B's port"))?.port();
    let server = NodeServer::new(
        0,
        COOKIE.to_string(),
        format!("takt-ractor-b-{}", std::process::id()),
        LOOPBACK.to_string(),
        None,
        None,
    )
    .with_listen_addr(LOOPBACK);
    let (server, server_task) =
        Actor::spawn(None, server, ())
            .await
            .map_err(|e| RactorPeerError::Spawn {
                what: "node B's server",
                reason: e.to_string(),
            })?;
    let (echo, echo_task) =
        Actor::spawn(None, Echo, ())
            .await
            .map_err(|e| RactorPeerError::Spawn {
                what: "the echo actor",
                reason: e.to_string(),
            })?;
    ractor::pg::join(group.to_string(), vec![echo.get_cell()]);
    let accept_server = server.clone();
    let accepting = tokio::spawn(async move {
        loop {
            let (stream, peer_addr) = listener.accept().await?;
            stream.set_nodelay(true)?;
            let local_addr = stream.local_addr()?;
            let opened = NodeServerMessage::ConnectionOpened {
                stream: Box::new(NetworkStream::Raw {
                    peer_addr,
                    local_addr,
                    stream,
                }),
                is_server: true,
            };
            if accept_server.cast(opened).is_err() {
                return Ok::<(), std::io::Error>(());
            }
        }
    });
    println!("{READY} {port}");
    // A blocking read on the runtime's blocking pool: the runtime's one
    // thread keeps serving meanwhile.
    let stdin_closed = tokio::task::spawn_blocking(|| {
        let mut sink = [0u8; 64];
        let mut stdin = std::io::stdin().lock();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
    });
    let ended = tokio::select! {
        r = stdin_closed => r.map_err(|e| RactorPeerError::Child(format!("stdin watcher: {e}"))),
        r = accepting => match r {
            Ok(Ok(())) => Err(RactorPeerError::Child("the node server stopped".into())),
            Ok(Err(e)) => Err(RactorPeerError::Io { what: "accepting", source: e }),
            Err(e) => Err(RactorPeerError::Child(format!("accept task: {e}"))),
        },
    };
    echo.stop(None);
    server.stop(None);
    let _ = echo_task.await;
    let _ = server_task.await;
    ended
}
