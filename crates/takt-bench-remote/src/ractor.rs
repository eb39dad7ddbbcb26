//! The `ractor-cluster` peer: ractor's own remoting (ractor_cluster,
//! direct TCP between the nodes, no broker), reported beside the others
//! with no ratio target.
//!
//! Both of its nodes run in the `takt-peer-ractor` executable, built from
//! the repository's `peers/ractor-cluster`, a cargo workspace of its own
//! (ractor_cluster needs ractor's `cluster` feature, which Cargo would
//! unify into the ractor that `takt bench agents --peers` measures). The
//! run starts it as `takt-peer-ractor node-a`; node A starts node B and
//! answers one line per command on its stdin/stdout:
//!
//! - first `ready NODE_B_PID` (or `err MESSAGE`, then it exits);
//! - `rtt BYTES` → `ok NANOS`, one call timed in node A;
//! - `saturate BYTES IN_FLIGHT WINDOW_NANOS` → `ok ROUND_TRIPS NANOS`;
//! - a failure → `err MESSAGE`;
//! - stdin closed → node A stops, kills and reaps node B, exits.
//!
//! It is found next to the running `takt` (or at `--ractor-peer PATH`);
//! when it is absent, the run leaves its rows out and says so in a note.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::error::RemoteBenchError;

/// Why the ractor_cluster peer failed (shown after `ractor-cluster: `).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RactorError {
    /// Node A could not be started, or its output read.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Node A went away: what was being done when it did, and its exit
    /// status if it had one by then.
    #[error("node A: {what}{}", .status.map_or(String::new(), |s| format!(" (it exited: {s})")))]
    Ended {
        /// What was being done.
        what: String,
        /// Node A's exit status.
        status: Option<std::process::ExitStatus>,
    },
    /// Node A answered a command with an `err` line.
    #[error("{0}")]
    Refused(String),
    /// Node A's first line was not `ready NODE_B_PID`.
    #[error("node A's first line is {0:?}, not `ready NODE_B_PID`")]
    NotReady(String),
    /// Node A answered a command with something else than `ok …`.
    #[error("{command:?} answered {answer:?}")]
    Unexpected {
        /// The command.
        command: String,
        /// The answer.
        answer: String,
    },
    /// An `ok` answer lacks a number.
    #[error("answer {answer:?} has no number {}", .index + 1)]
    NoNumber {
        /// The answer's words.
        answer: String,
        /// The missing number's index.
        index: usize,
    },
    /// Node A did not answer in time.
    #[error("node A did not answer within {0:?}")]
    Silent(Duration),
    /// A row asked for the peer, which is not running.
    #[error("not running")]
    NotRunning,
}

/// The peer's executable name.
pub(super) const PEER_BIN: &str = "takt-peer-ractor";

/// How to build the peer, from the repository root.
pub(super) const BUILD_HINT: &str = "cargo build --release --locked --manifest-path peers/ractor-cluster/Cargo.toml --target-dir target";

/// How long node A may take to start node B and connect.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a command may take beyond its own window (node A gives up a
/// call after 10 s and answers `err`).
const ANSWER_SLACK: Duration = Duration::from_secs(30);
/// How long node A may take to end once its stdin closes.
const EXIT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the peer's executable is, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Located {
    /// The executable.
    At(PathBuf),
    /// Not built: the note the run carries instead of the rows.
    Missing(String),
}

/// Finds the peer: `explicit` (which must exist: asked for, its absence is
/// an error), else `takt-peer-ractor` in `beside`'s directory (the running
/// `takt`'s).
pub(super) fn locate(explicit: Option<&Path>, beside: &Path) -> Result<Located, RemoteBenchError> {
    if let Some(p) = explicit {
        return if p.is_file() {
            Ok(Located::At(p.to_path_buf()))
        } else {
            Err(RemoteBenchError::NoRactorPeer(p.to_path_buf()))
        };
    }
    let at = beside
        .parent()
        .map(|d| d.join(PEER_BIN))
        .unwrap_or_else(|| PathBuf::from(PEER_BIN));
    Ok(if at.is_file() {
        Located::At(at)
    } else {
        Located::Missing(format!(
            "ractor-cluster: not measured, {PEER_BIN} is not built (no {}); build it from the repository root with `{BUILD_HINT}`, or give --ractor-peer PATH",
            at.display()
        ))
    })
}

/// Node A's process (and through it node B's), asked over its stdio.
/// Dropping it closes node A's stdin, waits for it to end (it reaps node
/// B), and kills it if it does not.
#[derive(Debug)]
pub(super) struct RactorPeer {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Node A's stdout, line by line, from a reader thread (so that a
    /// stuck node A is a timeout, not a hang).
    lines: Receiver<std::io::Result<String>>,
    node_b: u32,
}

impl RactorPeer {
    /// Starts `program node-a` and waits until node B has answered once.
    pub(super) fn start(program: &Path) -> Result<RactorPeer, RactorError> {
        let mut child = Command::new(program)
            .arg("node-a")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|source| RactorError::Io {
                what: format!("cannot start {}", program.display()),
                source,
            })?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (tx, lines) = mpsc::channel();
        let mut peer = RactorPeer {
            child,
            stdin,
            lines,
            node_b: 0,
        };
        let Some(stdout) = stdout else {
            return Err(RactorError::Io {
                what: "node A".into(),
                source: std::io::Error::other("no stdout"),
            });
        };
        std::thread::Builder::new()
            .name("ractor-peer-out".into())
            .spawn(move || {
                for l in BufReader::new(stdout).lines() {
                    let end = l.is_err();
                    if tx.send(l).is_err() || end {
                        return;
                    }
                }
            })
            .map_err(|source| RactorError::Io {
                what: "node A's stdout reader".into(),
                source,
            })?;
        let ready = peer.answer(START_TIMEOUT)?;
        match ready
            .strip_prefix("ready ")
            .map(|p| p.trim().parse::<u32>())
        {
            Some(Ok(pid)) if pid > 0 => {
                peer.node_b = pid;
                Ok(peer)
            }
            _ => Err(RactorError::NotReady(ready)),
        }
    }

    /// Node A's process id.
    pub(super) fn node_a_pid(&self) -> u32 {
        self.child.id()
    }

    /// Node B's process id.
    pub(super) fn node_b_pid(&self) -> u32 {
        self.node_b
    }

    /// One call of `payload.len()` bytes, timed in node A.
    pub(super) fn round_trip(&mut self, payload: &[u8]) -> Result<Duration, RactorError> {
        let a = self.ask(&format!("rtt {}", payload.len()), ANSWER_SLACK)?;
        let ns = one_number(&a, 0)?;
        Ok(Duration::from_nanos(ns))
    }

    /// Calls kept `in_flight` outstanding for `window`, then the last
    /// awaited: (round trips, elapsed), timed in node A.
    pub(super) fn saturate(
        &mut self,
        payload: &[u8],
        in_flight: usize,
        window: Duration,
    ) -> Result<(u64, Duration), RactorError> {
        let a = self.ask(
            &format!(
                "saturate {} {in_flight} {}",
                payload.len(),
                window.as_nanos()
            ),
            window + ANSWER_SLACK,
        )?;
        Ok((one_number(&a, 0)?, Duration::from_nanos(one_number(&a, 1)?)))
    }

    /// Sends `command` and returns the words after `ok`.
    fn ask(&mut self, command: &str, timeout: Duration) -> Result<String, RactorError> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(RactorError::Io {
                what: "node A".into(),
                source: std::io::Error::other("its stdin is closed"),
            });
        };
        if let Err(e) = writeln!(stdin, "{command}").and_then(|()| stdin.flush()) {
            return Err(self.ended(&format!("sending {command:?}: {e}")));
        }
        let a = self.answer(timeout)?;
        match a.split_once(' ') {
            Some(("ok", rest)) => Ok(rest.to_string()),
            _ => Err(RactorError::Unexpected {
                command: command.to_string(),
                answer: a,
            }),
        }
    }

    /// Node A's next line, which must come within `timeout`; an `err`
    /// line is an error.
    fn answer(&mut self, timeout: Duration) -> Result<String, RactorError> {
        match self.lines.recv_timeout(timeout) {
            Ok(Ok(l)) => match l.strip_prefix("err ") {
                Some(why) => Err(RactorError::Refused(why.to_string())),
                None => Ok(l),
            },
            Ok(Err(e)) => Err(self.ended(&format!("reading its stdout: {e}"))),
            Err(RecvTimeoutError::Disconnected) => Err(self.ended("its stdout closed")),
            Err(RecvTimeoutError::Timeout) => Err(RactorError::Silent(timeout)),
        }
    }

    /// An error for a node A that went away, with its exit status if it
    /// has one by now.
    fn ended(&mut self, what: &str) -> RactorError {
        let t0 = Instant::now();
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if t0.elapsed() < Duration::from_millis(500) => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => break None,
            }
        };
        RactorError::Ended {
            what: what.to_string(),
            status,
        }
    }
}

/// The `i`-th number of an answer's words.
fn one_number(answer: &str, i: usize) -> Result<u64, RactorError> {
    answer
        .split_ascii_whitespace()
        .nth(i)
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| RactorError::NoNumber {
            answer: answer.to_string(),
            index: i,
        })
}

impl Drop for RactorPeer {
    fn drop(&mut self) {
        // Node A ends when its stdin closes, and reaps node B first.
        self.stdin = None;
        let t0 = Instant::now();
        while t0.elapsed() < EXIT_TIMEOUT {
            if let Ok(Some(_)) | Err(_) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // Node B ends by itself once node A, holding its stdin, is gone.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The peer built as `scripts/test.sh` builds it (or at
    /// `$TAKT_RACTOR_PEER`): its absence fails the test, as any missing
    /// tool does.
    fn built_peer() -> PathBuf {
        let p = std::env::var_os("TAKT_RACTOR_PEER")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/takt-peer-ractor")
            });
        assert!(
            p.is_file(),
            "{} is missing: build it from the repository root with `{BUILD_HINT}` (scripts/test.sh does), or set TAKT_RACTOR_PEER",
            p.display()
        );
        p
    }

    fn gone(pid: u32) -> bool {
        // A zombie is gone too: it answers nothing and holds no socket.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(s) => s
                .rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z')),
        }
    }

    /// Node A and node B, two processes of the built peer, answer back to
    /// back and with calls in flight; dropping the handle ends both.
    #[test]
    fn the_built_peer_answers_across_two_processes_and_ends_with_its_handle() {
        let mut peer = RactorPeer::start(&built_peer()).unwrap();
        let (a, b) = (peer.node_a_pid(), peer.node_b_pid());
        assert!(a != b && !gone(a) && !gone(b), "{a} {b}");
        for size in crate::SIZES {
            let d = peer.round_trip(&vec![7; size]).unwrap();
            assert!(
                d > Duration::ZERO && d < Duration::from_secs(10),
                "{size} B: {d:?}"
            );
        }
        let (n, d) = peer
            .saturate(&[7; 64], 16, Duration::from_millis(50))
            .unwrap();
        assert!(n >= 16, "{n} round trips");
        assert!(d >= Duration::from_millis(50), "{d:?}");
        // A request node A refuses is an error, and node A keeps serving.
        let e = peer
            .saturate(&[7; 64], 0, Duration::ZERO)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least one"), "{e}");
        peer.round_trip(&[1]).unwrap();
        drop(peer);
        assert!(gone(a), "node A {a} outlived its handle");
        assert!(gone(b), "node B {b} outlived node A");
    }

    /// A program that exits, or says something else than `ready`, is a
    /// clear error, not a hang.
    #[test]
    fn a_peer_that_does_not_start_is_a_clear_error() {
        let e = RactorPeer::start(Path::new("/bin/false"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("stdout closed") && e.contains("exited"), "{e}");
        // `echo node-a` prints its argument.
        let e = RactorPeer::start(Path::new("/bin/echo"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"node-a\"") && e.contains("ready NODE_B_PID"),
            "{e}"
        );
        let e = RactorPeer::start(Path::new("/nonexistent/takt-peer-ractor"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot start"), "{e}");
    }

    /// Next to the running `takt` when built there; a missing default is a
    /// note that says how to build it; a missing explicit path an error.
    #[test]
    fn the_peer_is_found_next_to_takt_or_the_run_says_how_to_build_it() {
        let dir = std::env::temp_dir().join(format!("takt-ractor-locate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let takt = dir.join("takt");
        let missing = locate(None, &takt).unwrap();
        let Located::Missing(note) = &missing else {
            panic!("{missing:?}");
        };
        assert!(
            note.contains(BUILD_HINT) && note.contains(&*dir.to_string_lossy()),
            "{note}"
        );
        std::fs::write(dir.join(PEER_BIN), b"").unwrap();
        assert_eq!(
            locate(None, &takt).unwrap(),
            Located::At(dir.join(PEER_BIN))
        );
        let explicit = dir.join("elsewhere");
        let e = locate(Some(&explicit), &takt).unwrap_err().to_string();
        assert!(e.contains("--ractor-peer") && e.contains(BUILD_HINT), "{e}");
        std::fs::write(&explicit, b"").unwrap();
        assert_eq!(
            locate(Some(&explicit), &takt).unwrap(),
            Located::At(explicit)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
