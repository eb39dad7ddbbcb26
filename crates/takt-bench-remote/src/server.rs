//! A nats-server for one benchmark run: on a free loopback port, stopped
//! by its PID when dropped.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::RemoteBenchError;

/// How long the server may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A running `nats-server`.
#[derive(Debug)]
pub(super) struct NatsServer {
    child: Child,
    port: u16,
}

impl NatsServer {
    /// Starts `nats-server` on a free loopback port.
    pub(super) fn start() -> Result<NatsServer, RemoteBenchError> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(RemoteBenchError::io("no free loopback port"))?;
        let mut child = Command::new("nats-server")
            .args(["-a", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(RemoteBenchError::NoNatsServer)?;
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if t0.elapsed() > START_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RemoteBenchError::NotReady {
                    what: format!("nats-server on port {port}"),
                    ready: "listen",
                    within: START_TIMEOUT,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(NatsServer { child, port })
    }

    /// Its URL.
    pub(super) fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
