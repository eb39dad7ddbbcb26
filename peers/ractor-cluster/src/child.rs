//! Node B's process, seen from node A: started, waited for until it
//! serves, killed and reaped on drop.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use crate::error::RactorPeerError;
use crate::node_b::READY;

/// How long node B may take to serve.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Node B's process; killed and reaped on drop. Its stdin stays open while
/// this handle lives (node B ends when it closes, so it never outlives
/// node A).
#[derive(Debug)]
pub(crate) struct NodeB {
    child: Child,
    stdin: Option<ChildStdin>,
    port: u16,
}

impl NodeB {
    /// Runs `program args… group` and waits until it serves.
    pub(crate) fn spawn(
        program: &std::path::Path,
        args: &[String],
        group: &str,
    ) -> Result<NodeB, RactorPeerError> {
        let mut child = Command::new(program)
            .args(args)
            .arg(group)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                RactorPeerError::Child(format!("cannot start {}: {e}", program.display()))
            })?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let mut node = NodeB {
            child,
            stdin,
            port: 0,
        };
        let Some(stdout) = stdout else {
            return Err(RactorPeerError::Child("no stdout".into()));
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("ractor-b-out".into())
            .spawn(move || {
                let mut lines = BufReader::new(stdout).lines();
                // The line ends with READY and the port (a test harness
                // may print before it on the same line).
                let port = lines.find_map(|l| {
                    let l = l.ok()?;
                    let (_, rest) = l.split_once(READY)?;
                    rest.trim().parse::<u16>().ok()
                });
                let _ = tx.send(port);
                // Keep reading so that the child never blocks on a full pipe.
                for _ in lines {}
            })
            .map_err(|e| RactorPeerError::Child(format!("stdout reader: {e}")))?;
        match rx.recv_timeout(START_TIMEOUT) {
            Ok(Some(port)) => {
                node.port = port;
                Ok(node)
            }
            Ok(None) => {
                // Its output ended without the line: it exited (or closed
                // stdout, then it is killed); its status says which.
                node.stdin = None;
                let _ = node.child.kill();
                let status = node.child.wait();
                Err(RactorPeerError::Child(match status {
                    Ok(s) => format!("exited before serving ({s})"),
                    Err(e) => format!("exited before serving (no status: {e})"),
                }))
            }
            Err(_) => {
                node.kill();
                Err(RactorPeerError::Child(format!(
                    "did not serve within {START_TIMEOUT:?}"
                )))
            }
        }
    }

    /// The loopback port node B accepts on.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    fn kill(&mut self) {
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for NodeB {
    fn drop(&mut self) {
        self.kill();
    }
}
