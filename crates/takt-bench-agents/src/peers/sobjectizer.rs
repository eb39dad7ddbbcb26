//! SObjectizer 5.8, the seed's own framework, as a peer: takt's benchmark
//! driver for it (`cpp/sobjectizer/`, compiled by `scripts/peers.sh`
//! against the SObjectizer 5.8.4 static library into
//! `<peers>/bin/takt-so5-bench`), run as a child process.
//!
//! The driver is a separate executable so that a crash or a hang is the
//! child's: [`Driver::run`] starts it in a process group of its own, reads
//! its lines, and kills the group when the run takes three times its
//! estimate ([`So5Bench::estimate`]), when the run is cancelled, or when
//! the [`Driver::run`] call unwinds for any other reason. Nothing it
//! started outlives the call.
//!
//! ## Protocol (version 1)
//!
//! `takt-so5-bench --protocol` prints `takt-so5 v1`. A run
//! (`takt-so5-bench BENCH --dispatcher D … --warmup W --runs R`) prints, for
//! each timed repetition K = 1..R, one line
//!
//! ```text
//! takt-so5 v1 rep=K bench=B dispatcher=D <sizes> <measured> cpu_ns=C
//! ```
//!
//! and then `takt-so5 v1 end runs=R`, and exits 0. `<sizes>` echo the
//! parameters asked for, in a fixed order ([`So5Bench::echo`]);
//! `<measured>` are whole nanoseconds, keyed per benchmark
//! ([`So5Bench::fields`]); `cpu_ns` is the repetition's CPU time over all
//! its threads. [`parse`] accepts exactly that: any other line, a missing
//! or extra field, a number that is not one, repetitions out of order, a
//! missing end line — each is a [`So5Error::Malformed`] that quotes the
//! line. A run that exits non-zero is a [`So5Error::Failed`] quoting what
//! it printed on stderr.
//!
//! ## What each benchmark times
//!
//! `ping_pong`, `customer_ring` and `skynet` are takt's definitions (see
//! [`crate::runs`]): the clock runs from the driver's first send to the
//! last delivery, registration from creating the cooperation to every
//! agent's `so_evt_start`. The seed's six time what the 2006 document
//! timed: the sends (`send_msg`, `send_agents_msg_self`), the sends and
//! then the processing (`send_and_process_msg`, `process_state_changes`:
//! one message type with a handler in each of ten states), and the sends
//! each handled inside its send (`insend_and_process_msg`: SObjectizer 5
//! has no insend events, so the receiver is bound to an event queue that
//! runs each demand inside the push, on the sender's thread). Agents
//! address each other through their direct (MPSC) mboxes.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use takt_measure::cancel::Cancel;

/// What the driver's `--protocol` prints, and every line's prefix.
pub const PROTOCOL: &str = "takt-so5 v1";

/// The SObjectizer version the driver is built against.
pub const VERSION: &str = "5.8.4";

/// How often a running child is polled for its exit, the deadline and
/// cancellation.
const POLL: Duration = Duration::from_millis(10);

/// How much of the child's stdout and stderr is kept (the rest is read
/// and dropped, so the child never blocks on a full pipe).
const KEEP_BYTES: usize = 1 << 20;

/// How many of the child's last stderr lines an error quotes.
const QUOTED_LINES: usize = 12;

/// A kill after this many times the run's estimate.
const KILL_FACTOR: u32 = 3;

/// Where SObjectizer's agents run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum So5Dispatcher {
    /// `so_5::disp::one_thread`: every agent on one thread.
    OneThread,
    /// `so_5::disp::active_obj`: a thread per agent.
    ActiveObj,
    /// `so_5::disp::active_group`: agent i in group `i % groups`, a thread
    /// per group.
    ActiveGroup {
        /// Groups (threads).
        groups: usize,
    },
    /// `so_5::disp::thread_pool` with two threads, each agent's demands
    /// queued apart (`fifo_t::individual`), so the pool places the agents.
    ThreadPool,
}

impl So5Dispatcher {
    /// The name on the driver's command line and in its lines.
    pub fn name(self) -> &'static str {
        match self {
            So5Dispatcher::OneThread => "one_thread",
            So5Dispatcher::ActiveObj => "active_obj",
            So5Dispatcher::ActiveGroup { .. } => "active_group",
            So5Dispatcher::ThreadPool => "thread_pool",
        }
    }
}

/// One benchmark of the driver and its sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum So5Bench {
    /// Two agents exchanging `messages` deliveries (one_thread,
    /// active_obj or thread_pool).
    PingPong {
        /// Deliveries in total.
        messages: u64,
        /// Where the two agents run.
        dispatcher: So5Dispatcher,
    },
    /// `agents` agents in a ring carrying `tokens` tokens once around
    /// (one_thread, active_obj or active_group).
    CustomerRing {
        /// Agents (N).
        agents: u64,
        /// Tokens (M), at most N.
        tokens: u64,
        /// Where the agents run.
        dispatcher: So5Dispatcher,
    },
    /// The skynet tree over `leaves` (a power of ten) on one thread.
    Skynet {
        /// Leaves.
        leaves: u64,
    },
    /// One agent sends `messages` messages nobody handles; the sends timed.
    SendMsg {
        /// Messages.
        messages: u64,
    },
    /// One agent sends itself `messages`, then handles them.
    SendAndProcessMsg {
        /// Messages.
        messages: u64,
    },
    /// `messages` sends, each handled inside its send.
    InsendAndProcessMsg {
        /// Messages.
        messages: u64,
    },
    /// A ten-state agent sends itself `messages` of one type, then handles
    /// them, each handler moving it to the next state.
    ProcessStateChanges {
        /// Messages.
        messages: u64,
    },
    /// `agents` agents registered, `messages` sends to randomly chosen
    /// ones; the sends timed.
    SendAgentsMsgSelf {
        /// Agents registered (N).
        agents: u64,
        /// Messages sent (M).
        messages: u64,
    },
}

impl So5Bench {
    /// The benchmark's name, as in takt's rows and on the driver's
    /// command line.
    pub fn name(&self) -> &'static str {
        match self {
            So5Bench::PingPong { .. } => "ping_pong",
            So5Bench::CustomerRing { .. } => "customer_ring",
            So5Bench::Skynet { .. } => "skynet",
            So5Bench::SendMsg { .. } => "send_msg",
            So5Bench::SendAndProcessMsg { .. } => "send_and_process_msg",
            So5Bench::InsendAndProcessMsg { .. } => "insend_and_process_msg",
            So5Bench::ProcessStateChanges { .. } => "process_state_changes",
            So5Bench::SendAgentsMsgSelf { .. } => "send_agents_msg_self",
        }
    }

    /// The dispatcher the run asks for.
    pub fn dispatcher(&self) -> So5Dispatcher {
        match *self {
            So5Bench::PingPong { dispatcher, .. } | So5Bench::CustomerRing { dispatcher, .. } => {
                dispatcher
            }
            _ => So5Dispatcher::OneThread,
        }
    }

    /// The sizes, in the order the driver's lines echo them.
    fn sizes(&self) -> Vec<(&'static str, u64)> {
        match *self {
            So5Bench::PingPong { messages, .. }
            | So5Bench::SendMsg { messages }
            | So5Bench::SendAndProcessMsg { messages }
            | So5Bench::InsendAndProcessMsg { messages } => vec![("messages", messages)],
            So5Bench::CustomerRing {
                agents,
                tokens,
                dispatcher,
            } => {
                let mut v = vec![("agents", agents), ("tokens", tokens)];
                if let So5Dispatcher::ActiveGroup { groups } = dispatcher {
                    v.push(("groups", groups as u64));
                }
                v
            }
            So5Bench::Skynet { leaves } => vec![("leaves", leaves)],
            So5Bench::ProcessStateChanges { messages } => {
                vec![("messages", messages), ("states", 10)]
            }
            So5Bench::SendAgentsMsgSelf { agents, messages } => {
                vec![("agents", agents), ("messages", messages)]
            }
        }
    }

    /// `dispatcher=D <sizes>`: what every line of this run echoes after
    /// `bench=B`.
    pub fn echo(&self) -> String {
        let mut s = format!("dispatcher={}", self.dispatcher().name());
        for (k, v) in self.sizes() {
            s.push_str(&format!(" {k}={v}"));
        }
        s
    }

    /// The measured fields of each line, in order (`cpu_ns` follows them).
    pub fn fields(&self) -> &'static [&'static str] {
        match self {
            So5Bench::PingPong { .. } | So5Bench::InsendAndProcessMsg { .. } => &["ns"],
            So5Bench::CustomerRing { .. } => &["reg_ns", "ns"],
            So5Bench::Skynet { .. } => &["ns", "sum"],
            So5Bench::SendMsg { .. } | So5Bench::SendAgentsMsgSelf { .. } => &["send_ns"],
            So5Bench::SendAndProcessMsg { .. } | So5Bench::ProcessStateChanges { .. } => {
                &["send_ns", "process_ns"]
            }
        }
    }

    /// The driver's arguments for `warmup` + `runs` repetitions.
    pub fn args(&self, warmup: u32, runs: u32) -> Vec<String> {
        let mut a = vec![
            self.name().to_string(),
            "--dispatcher".into(),
            self.dispatcher().name().into(),
        ];
        for (k, v) in self.sizes() {
            if k != "states" {
                a.push(format!("--{k}"));
                a.push(v.to_string());
            }
        }
        a.extend([
            "--warmup".into(),
            warmup.to_string(),
            "--runs".into(),
            runs.to_string(),
        ]);
        a
    }

    /// A generous estimate of one repetition on a loaded 2-core machine,
    /// environment start and stop included; the run is killed after
    /// three times the estimate of all its repetitions.
    pub fn estimate(&self) -> Duration {
        // Per message: one thread, and a hand-off between threads.
        const LOCAL: f64 = 1e-6;
        const CROSS: f64 = 40e-6;
        // Per agent registered (and started).
        const AGENT: f64 = 50e-6;
        let per_msg = |d: So5Dispatcher| match d {
            So5Dispatcher::OneThread => LOCAL,
            _ => CROSS,
        };
        let s = match *self {
            So5Bench::PingPong {
                messages,
                dispatcher,
            } => messages as f64 * per_msg(dispatcher),
            So5Bench::CustomerRing {
                agents,
                tokens,
                dispatcher,
            } => {
                let threads = match dispatcher {
                    So5Dispatcher::ActiveObj => agents,
                    So5Dispatcher::ActiveGroup { groups } => groups as u64,
                    _ => 0,
                };
                (agents * tokens) as f64 * per_msg(dispatcher)
                    + agents as f64 * AGENT
                    + threads as f64 * 1e-3
            }
            So5Bench::Skynet { leaves } => leaves as f64 * 1.2 * 4.0 * AGENT,
            So5Bench::SendMsg { messages }
            | So5Bench::SendAndProcessMsg { messages }
            | So5Bench::InsendAndProcessMsg { messages }
            | So5Bench::ProcessStateChanges { messages } => messages as f64 * 2.0 * LOCAL,
            So5Bench::SendAgentsMsgSelf { agents, messages } => {
                agents as f64 * AGENT + messages as f64 * 2.0 * LOCAL
            }
        };
        Duration::from_secs_f64(0.5 + s)
    }
}

/// One timed repetition as the driver reported it: the measured fields in
/// [`So5Bench::fields`] order, and its CPU time.
#[derive(Clone, Debug, PartialEq)]
pub struct So5Rep {
    /// The measured fields, named.
    pub fields: Vec<(&'static str, u64)>,
    /// CPU time of the repetition, all threads, in ns.
    pub cpu_ns: u64,
}

impl So5Rep {
    /// The field `key` (one of [`So5Bench::fields`]).
    pub fn get(&self, key: &str) -> u64 {
        self.fields
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(0, |(_, v)| *v)
    }
}

/// Why a SObjectizer run gave no numbers. Every message names the peer;
/// those about the child quote what it printed.
#[derive(Debug)]
pub enum So5Error {
    /// The driver is not built here: the sentence says which command
    /// builds it.
    NotBuilt(String),
    /// The driver could not be started.
    Spawn {
        /// The driver's path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The driver printed something protocol v1 does not allow.
    Malformed {
        /// The offending line (or what was missing).
        line: String,
        /// What was expected instead.
        why: String,
    },
    /// The driver exited with a failure status.
    Failed {
        /// Its exit status.
        status: ExitStatus,
        /// The last lines it printed on stderr.
        stderr: String,
    },
    /// The driver ran longer than three times its estimate and was killed.
    Timeout {
        /// How long it ran.
        after: Duration,
        /// The last lines it printed (stdout, then stderr).
        printed: String,
    },
    /// A repetition reported a wrong result.
    Check {
        /// What was wrong.
        what: String,
    },
    /// The run was cancelled; the driver was killed.
    Interrupted,
}

impl fmt::Display for So5Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            So5Error::NotBuilt(s) => f.write_str(s),
            So5Error::Spawn { path, source } => write!(
                f,
                "sobjectizer: cannot start the driver {}: {source}",
                path.display()
            ),
            So5Error::Malformed { line, why } => write!(
                f,
                "sobjectizer: the driver printed an unexpected line ({why}): `{line}`"
            ),
            So5Error::Failed { status, stderr } => write!(
                f,
                "sobjectizer: the driver failed ({status}); it printed: {}",
                quoted(stderr)
            ),
            So5Error::Timeout { after, printed } => write!(
                f,
                "sobjectizer: the driver did not finish within {:.1} s (three times its estimate) and was killed; it printed: {}",
                after.as_secs_f64(),
                quoted(printed)
            ),
            So5Error::Check { what } => write!(f, "sobjectizer: wrong result: {what}"),
            So5Error::Interrupted => f.write_str("sobjectizer: interrupted (the driver was killed)"),
        }
    }
}

impl std::error::Error for So5Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            So5Error::Spawn { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn quoted(s: &str) -> String {
    let s = s.trim();
    if s.is_empty() {
        "nothing".into()
    } else {
        format!("`{}`", s.replace('\n', " | "))
    }
}

/// The last `n` lines of `s`.
fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Parses a run's whole stdout: exactly `runs` repetition lines for
/// `bench`, numbered 1..=runs, then the end line, then nothing.
pub fn parse(bench: &So5Bench, runs: u32, stdout: &str) -> Result<Vec<So5Rep>, So5Error> {
    let mut reps = Vec::with_capacity(runs as usize);
    let mut lines = stdout.lines();
    let end = format!("{PROTOCOL} end runs={runs}");
    for k in 1..=runs {
        let Some(line) = lines.next() else {
            return Err(So5Error::Malformed {
                line: stdout.lines().last().unwrap_or("").to_string(),
                why: format!("output ends after {} of {runs} repetitions", k - 1),
            });
        };
        reps.push(parse_line(bench, k, line)?);
    }
    match lines.next() {
        Some(l) if l == end => {}
        Some(l) => {
            return Err(So5Error::Malformed {
                line: l.to_string(),
                why: format!("expected `{end}`"),
            })
        }
        None => {
            return Err(So5Error::Malformed {
                line: String::new(),
                why: format!("output ends without `{end}`"),
            })
        }
    }
    if let Some(l) = lines.next() {
        return Err(So5Error::Malformed {
            line: l.to_string(),
            why: "nothing may follow the end line".into(),
        });
    }
    Ok(reps)
}

/// Parses repetition `k`'s line.
pub fn parse_line(bench: &So5Bench, k: u32, line: &str) -> Result<So5Rep, So5Error> {
    let malformed = |why: String| So5Error::Malformed {
        line: line.to_string(),
        why,
    };
    let head = format!(
        "{PROTOCOL} rep={k} bench={} {} ",
        bench.name(),
        bench.echo()
    );
    let Some(rest) = line.strip_prefix(&head) else {
        return Err(malformed(format!(
            "expected it to begin `{}`",
            head.trim_end()
        )));
    };
    let mut words = rest.split(' ');
    let mut fields = Vec::with_capacity(bench.fields().len());
    for &key in bench.fields().iter().chain(&["cpu_ns"]) {
        let Some(w) = words.next() else {
            return Err(malformed(format!("missing `{key}=`")));
        };
        let value = w
            .strip_prefix(key)
            .and_then(|v| v.strip_prefix('='))
            .ok_or_else(|| malformed(format!("expected `{key}=` where `{w}` is")))?;
        let n = parse_u64(value)
            .ok_or_else(|| malformed(format!("`{key}` is not a whole number: `{value}`")))?;
        fields.push((key, n));
    }
    if let Some(w) = words.next() {
        return Err(malformed(format!("unexpected `{w}` after `cpu_ns`")));
    }
    let cpu_ns = fields.pop().map_or(0, |(_, v)| v);
    Ok(So5Rep { fields, cpu_ns })
}

/// A decimal u64: digits only, no sign, no spaces.
fn parse_u64(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The driver: its path, and how to run it.
#[derive(Clone, Debug)]
pub struct Driver {
    path: PathBuf,
}

impl Driver {
    /// The driver `scripts/peers.sh` built ([`takt_host::peers`]), or why
    /// it is not there: [`So5Error::NotBuilt`] holding "not measured: …"
    /// and the command that builds it.
    pub fn locate() -> Result<Driver, So5Error> {
        Driver::locate_in(&takt_host::peers::cache_dir())
    }

    /// [`Driver::locate`] in a given cache directory.
    pub fn locate_in(cache: &Path) -> Result<Driver, So5Error> {
        takt_host::peers::locate_in(cache, takt_host::peers::Peer::So5Driver)
            .map(|path| Driver { path })
            .map_err(|e| So5Error::NotBuilt(format!("not measured: {e}")))
    }

    /// A driver at `path` (tests use stubs).
    pub fn at(path: impl Into<PathBuf>) -> Driver {
        Driver { path: path.into() }
    }

    /// The driver's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks that the driver speaks protocol v1 (`--protocol`).
    pub fn check_protocol(&self, cancel: &Cancel) -> Result<(), So5Error> {
        let out =
            self.spawn_and_wait(&["--protocol".to_string()], Duration::from_secs(30), cancel)?;
        let line = out.trim_end_matches('\n');
        if line == PROTOCOL {
            Ok(())
        } else {
            Err(So5Error::Malformed {
                line: line.to_string(),
                why: format!("`--protocol` must print `{PROTOCOL}`"),
            })
        }
    }

    /// Runs `warmup` + `runs` repetitions of `bench` in one child and
    /// returns the `runs` timed ones. The child is killed after three
    /// times the estimate, on cancellation, and if this call unwinds.
    pub fn run(
        &self,
        bench: &So5Bench,
        warmup: u32,
        runs: u32,
        cancel: &Cancel,
    ) -> Result<Vec<So5Rep>, So5Error> {
        let limit = bench.estimate() * (warmup + runs) * KILL_FACTOR + Duration::from_secs(2);
        let out = self.spawn_and_wait(&bench.args(warmup, runs), limit, cancel)?;
        let reps = parse(bench, runs, &out)?;
        if let So5Bench::Skynet { leaves } = *bench {
            let expected = leaves * leaves.saturating_sub(1) / 2;
            if let Some(r) = reps.iter().find(|r| r.get("sum") != expected) {
                return Err(So5Error::Check {
                    what: format!(
                        "skynet over {leaves} leaves summed {}, expected {expected}",
                        r.get("sum")
                    ),
                });
            }
        }
        Ok(reps)
    }

    /// Starts the driver with `args`, waits for it (at most `limit`),
    /// and returns its stdout if it exited 0.
    fn spawn_and_wait(
        &self,
        args: &[String],
        limit: Duration,
        cancel: &Cancel,
    ) -> Result<String, So5Error> {
        use std::os::unix::process::CommandExt;
        let child = Command::new(&self.path)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A group of its own: a kill reaches whatever it started.
            .process_group(0)
            .spawn()
            .map_err(|source| So5Error::Spawn {
                path: self.path.clone(),
                source,
            })?;
        let mut kid = Kid::new(child);
        let t0 = Instant::now();
        let status = loop {
            if cancel.is_cancelled() {
                kid.kill();
                return Err(So5Error::Interrupted);
            }
            match kid.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) => {}
                Err(source) => {
                    return Err(So5Error::Spawn {
                        path: self.path.clone(),
                        source,
                    })
                }
            }
            if t0.elapsed() > limit {
                kid.kill();
                let (out, err) = kid.output();
                return Err(So5Error::Timeout {
                    after: t0.elapsed(),
                    printed: tail(&format!("{out}\n{err}"), QUOTED_LINES),
                });
            }
            std::thread::sleep(POLL);
        };
        // Whatever it left behind in its group goes too.
        kid.kill();
        let (out, err) = kid.output();
        if !status.success() {
            return Err(So5Error::Failed {
                status,
                stderr: tail(
                    if err.trim().is_empty() { &out } else { &err },
                    QUOTED_LINES,
                ),
            });
        }
        Ok(out)
    }
}

/// A running driver: its process group is killed and the child reaped on
/// drop; its output is read on two threads so it never blocks on a pipe.
struct Kid {
    child: Child,
    pgid: libc::pid_t,
    readers: Option<(JoinHandle<String>, JoinHandle<String>)>,
}

impl Kid {
    fn new(mut child: Child) -> Kid {
        let pgid = child.id() as libc::pid_t;
        let out = child.stdout.take();
        let err = child.stderr.take();
        let read = |r: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut kept = Vec::new();
                if let Some(mut r) = r {
                    let mut buf = [0u8; 8192];
                    while let Ok(n) = r.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let room = KEEP_BYTES.saturating_sub(kept.len());
                        kept.extend_from_slice(&buf[..n.min(room)]);
                    }
                }
                String::from_utf8_lossy(&kept).into_owned()
            })
        };
        let readers = (
            read(out.map(|o| Box::new(o) as Box<dyn Read + Send>)),
            read(err.map(|e| Box::new(e) as Box<dyn Read + Send>)),
        );
        Kid {
            child,
            pgid,
            readers: Some(readers),
        }
    }

    /// SIGKILL to the whole group, then reap the child.
    fn kill(&mut self) {
        // SAFETY: kill(2) with a negative pid signals the process group
        // the child leads (made by `process_group(0)`); it touches no
        // memory of ours. ESRCH (the group is gone) is fine.
        unsafe {
            libc::kill(-self.pgid, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }

    /// Everything the child printed (stdout, stderr), once its group is
    /// gone and the pipes are closed.
    fn output(&mut self) -> (String, String) {
        match self.readers.take() {
            Some((o, e)) => (o.join().unwrap_or_default(), e.join().unwrap_or_default()),
            None => (String::new(), String::new()),
        }
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        self.kill();
        let _ = self.output();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> So5Bench {
        So5Bench::CustomerRing {
            agents: 1000,
            tokens: 100,
            dispatcher: So5Dispatcher::ActiveGroup { groups: 100 },
        }
    }

    const RING_LINE: &str = "takt-so5 v1 rep=1 bench=customer_ring dispatcher=active_group agents=1000 tokens=100 groups=100 reg_ns=12337781 ns=140378808 cpu_ns=99";

    #[test]
    fn good_lines_parse_into_their_fields() {
        let r = parse_line(&ring(), 1, RING_LINE).unwrap();
        assert_eq!(r.fields, vec![("reg_ns", 12337781), ("ns", 140378808)]);
        assert_eq!(r.cpu_ns, 99);
        let b = So5Bench::ProcessStateChanges { messages: 100 };
        let r = parse_line(
            &b,
            3,
            "takt-so5 v1 rep=3 bench=process_state_changes dispatcher=one_thread messages=100 states=10 send_ns=5 process_ns=7 cpu_ns=0",
        )
        .unwrap();
        assert_eq!(r.get("send_ns"), 5);
        assert_eq!(r.get("process_ns"), 7);
        let whole = format!(
            "{RING_LINE}\n{}\n{PROTOCOL} end runs=2\n",
            RING_LINE.replace("rep=1", "rep=2")
        );
        assert_eq!(parse(&ring(), 2, &whole).unwrap().len(), 2);
    }

    /// Each kind of malformed output is refused with the line quoted.
    #[test]
    fn malformed_lines_are_refused_and_quoted() {
        let bad = [
            // another protocol version
            RING_LINE.replace("v1", "v2"),
            // the wrong repetition number
            RING_LINE.replace("rep=1", "rep=2"),
            // another benchmark, dispatcher or size than asked
            RING_LINE.replace("bench=customer_ring", "bench=ping_pong"),
            RING_LINE.replace("active_group", "one_thread"),
            RING_LINE.replace("agents=1000", "agents=1001"),
            // a field missing, renamed, out of order, extra
            RING_LINE.replace(" cpu_ns=99", ""),
            RING_LINE.replace("reg_ns=", "registration_ns="),
            RING_LINE.replace(
                "reg_ns=12337781 ns=140378808",
                "ns=140378808 reg_ns=12337781",
            ),
            format!("{RING_LINE} extra=1"),
            // not a whole number
            RING_LINE.replace("ns=140378808", "ns=1.4e8"),
            RING_LINE.replace("ns=140378808", "ns=-5"),
            RING_LINE.replace("ns=140378808", "ns="),
            RING_LINE.replace("ns=140378808", "ns=99999999999999999999999"),
            // spacing
            RING_LINE.replace(" ns=", "  ns="),
            format!("{RING_LINE} "),
            "Segmentation fault".to_string(),
        ];
        for line in bad {
            let e = parse_line(&ring(), 1, &line).unwrap_err();
            assert!(matches!(e, So5Error::Malformed { .. }), "{line}: {e}");
            let msg = e.to_string();
            assert!(msg.starts_with("sobjectizer: "), "{msg}");
            assert!(msg.contains(&format!("`{line}`")), "{msg}");
        }
    }

    #[test]
    fn a_run_needs_every_repetition_and_the_end_line_only() {
        let two = format!("{RING_LINE}\n{}\n", RING_LINE.replace("rep=1", "rep=2"));
        let cases = [
            // too few repetitions
            format!("{RING_LINE}\n{PROTOCOL} end runs=2\n"),
            // no end line
            two.clone(),
            // a wrong end line
            format!("{two}{PROTOCOL} end runs=3\n"),
            // something after it
            format!("{two}{PROTOCOL} end runs=2\nhello\n"),
            // nothing at all
            String::new(),
        ];
        for out in cases {
            let e = parse(&ring(), 2, &out).unwrap_err();
            assert!(matches!(e, So5Error::Malformed { .. }), "{out:?}: {e}");
        }
    }

    /// No build: the "not measured" sentence, with the command that
    /// builds it.
    #[test]
    fn a_missing_build_says_not_measured_and_how_to_build_it() {
        let empty = std::env::temp_dir().join(format!("takt-so5-none-{}", std::process::id()));
        let e = Driver::locate_in(&empty).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, So5Error::NotBuilt(_)), "{msg}");
        assert!(
            msg.starts_with(
                "not measured: takt's SObjectizer 5.8.4 benchmark driver is not built here"
            ),
            "{msg}"
        );
        assert!(
            msg.ends_with("run `bash scripts/peers.sh sobjectizer so5-driver`"),
            "{msg}"
        );
    }

    #[test]
    fn args_and_echo_agree_with_the_driver() {
        assert_eq!(
            ring().args(1, 5).join(" "),
            "customer_ring --dispatcher active_group --agents 1000 --tokens 100 --groups 100 --warmup 1 --runs 5"
        );
        assert_eq!(
            So5Bench::ProcessStateChanges { messages: 7 }.echo(),
            "dispatcher=one_thread messages=7 states=10"
        );
        assert!(!So5Bench::ProcessStateChanges { messages: 7 }
            .args(0, 1)
            .contains(&"--states".to_string()));
    }
}
