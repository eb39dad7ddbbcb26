//! [`Node`]: one process's membership in a cluster, and its bridge thread.
//!
//! ## Threads and queues
//! A node owns one bridge thread (made from [`Config::thread`] by
//! takt-sched) that runs the engine's client on a current-thread tokio
//! runtime. Agents and other threads never wait for it: a send encodes the
//! message on the caller's thread (into a per-thread arena), checks it
//! against the server's `max_payload`, and appends it to the bounded
//! [`Outbox`]; a full queue is an error ([`RemoteError::QueueFull`]) and,
//! for a [`Recipient`] made with [`RemoteAgent::recipient_with`], the
//! configured [`Overflow`] reaction. Incoming messages are decoded on the
//! bridge thread and handed to local [`Recipient`]s, whose own
//! [`Limits`](takt_agents::Limits) apply when the agent cannot keep up.
//!
//! ## The fast path of a remote ask
//! 1. The asking thread encodes the query, records its completion under a
//!    token (with its deadline) and appends it to the outbox; it wakes the
//!    bridge only if the bridge waits (see [`Outbox`]).
//! 2. The bridge takes the whole outbox per turn and publishes every item
//!    on the engine's connection; deadlines go to one heap, swept by one
//!    timer armed at the earliest of them (no timer per query).
//! 3. The answering node's bridge decodes the query and asks the local
//!    agent. The agent's thread, completing the reply, runs the
//!    [`Answering`] waker: it encodes the answer and appends it to that
//!    node's outbox itself (no task, no timer, no extra hop).
//! 4. The reply arrives on the asking node's inbox subscription, which
//!    completes the token: the asking thread is woken only if it sleeps
//!    in `Pending::wait`.
//!
//! ## Subjects
//! `<cluster>.agent.<node>.<name>` for an exported agent,
//! `<cluster>.mbox.<name>` for an exported mailbox, `<cluster>.presence`
//! for announcements, `<cluster>.inbox.<node>.<incarnation>.<token>` for
//! replies.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use takt_agents::{
    pending, Accept, Answer, AskError, Mbox, Overflow, Pending, Recipient, Requester,
};
use takt_sched::TaktThread;
use tokio::sync::Notify;

use crate::codec::{decode, encode, in_arena, Remote};
use crate::config::{check_name, Config};
use crate::envelope::{open, Failure, Head};
use crate::nats::Nats;
use crate::outbox::{Outbox, PushError};
use crate::presence::{Directory, NodeEvent, Peer, Presence};
use crate::stats::{bump, Counters, RemoteStats};
use crate::transport::{Inbound, Transport};
use crate::RemoteError;

/// The presence announcement's wire name and version.
const PRESENCE_TYPE: &str = "takt.Presence";
const PRESENCE_VERSION: u32 = 1;

/// Presence checks per heartbeat interval.
const CHECKS_PER_HEARTBEAT: u32 = 10;
/// How long a closing node waits for its leaving announcement to go out.
const LEAVE_FLUSH: Duration = Duration::from_secs(1);

/// What the bridge does with one incoming message (on the bridge thread).
type Handler = Arc<dyn Fn(&Arc<Inner>, Inbound) + Send + Sync>;
/// Completes one query's `Pending` from its reply (or its failure).
type Completion = Box<dyn FnOnce(&Inner, Result<Inbound, AskError>) + Send>;
/// An exported name's handlers, by message type name (looked up per
/// message received).
type Table = Mutex<HashMap<&'static str, Handler, Fast>>;

/// Queries waiting for replies, by token.
type Replies = HashMap<u64, Completion, Fast>;

type Fast = std::hash::BuildHasherDefault<FastHasher>;

/// A cheap hash for keys this node makes itself — query tokens, its own
/// message types' names — looked up once or twice per message. Not
/// flood-resistant, and need not be: a received name only looks up, it
/// never inserts. Tokens are consecutive numbers: a multiplicative hash
/// spreads them; names go through FNV-1a.
#[derive(Default)]
struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        // Fibonacci hashing: the high bits, which hashbrown uses, mix well.
        self.0 = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

enum Command {
    Publish {
        subject: Bytes,
        reply: Option<Bytes>,
        /// Envelope and payload.
        payload: Bytes,
        /// A reply token to fail with `Timeout` at the instant.
        expire: Option<(u64, Instant)>,
    },
    Subscribe {
        subject: String,
        handler: Handler,
        /// An agent name to announce once subscribed.
        announce: Option<String>,
        done: std::sync::mpsc::Sender<Result<(), RemoteError>>,
    },
}

pub(crate) struct Inner {
    cfg: Config,
    origin: String,
    incarnation: u64,
    outbox: Outbox<Command>,
    shutdown: Notify,
    /// One envelope head per message type, shared by every send of it.
    heads: Mutex<HashMap<(&'static str, u32), Arc<Head>, Fast>>,
    /// The failure replies (envelopes without payload), by failure code.
    failures: [Bytes; Failure::ALL.len()],
    presence_head: Head,
    presence_subject: Bytes,
    /// `<cluster>.inbox.<node>.<incarnation>`: replies come to it plus
    /// `.<token>`.
    inbox_prefix: String,
    counters: Arc<Counters>,
    max_payload: AtomicUsize,
    dir: Directory,
    /// Exported agent names → handlers by message type name.
    exports: Mutex<HashMap<String, Arc<Table>>>,
    /// Exported names whose subscription the server confirmed.
    announced: Mutex<Vec<String>>,
    exported_mboxes: Mutex<Vec<String>>,
    replies: Mutex<Replies>,
    next_token: AtomicU64,
}

impl Inner {
    /// `M`'s envelope head, made once per type.
    fn head<M: Remote>(&self) -> Result<Arc<Head>, RemoteError> {
        let mut heads = self.heads.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = heads.get(&(M::NAME, M::VERSION)) {
            return Ok(h.clone());
        }
        let h = Arc::new(Head::message(M::NAME, M::VERSION, &self.origin)?);
        heads.insert((M::NAME, M::VERSION), h.clone());
        Ok(h)
    }

    /// `m` in its envelope, encoded.
    fn encode<M: Remote>(&self, m: &M) -> Result<Bytes, RemoteError> {
        encode(&*self.head::<M>()?, m)
    }

    /// The reply that carries `f` instead of an answer.
    fn failure(&self, f: Failure) -> Bytes {
        self.failures[f as usize - 1].clone()
    }

    fn agent_subject(&self, node: &str, name: &str) -> String {
        format!("{}.agent.{node}.{name}", self.cfg.cluster)
    }

    fn mbox_subject(&self, name: &str) -> String {
        format!("{}.mbox.{name}", self.cfg.cluster)
    }

    /// The reply subject of query `token`, made in the calling thread's
    /// encoding arena (no allocation per query).
    fn reply_subject(&self, token: u64) -> Result<Bytes, RemoteError> {
        in_arena(|b| {
            b.extend_from_slice(self.inbox_prefix.as_bytes());
            b.extend_from_slice(b".");
            let mut digits = [0u8; 20];
            let mut i = digits.len();
            let mut n = token;
            loop {
                i -= 1;
                digits[i] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            b.extend_from_slice(&digits[i..]);
            Ok(())
        })
    }

    fn presence(&self, leaving: bool) -> Presence {
        Presence {
            node: self.cfg.node.clone(),
            incarnation: self.incarnation,
            heartbeat_us: self.cfg.heartbeat.as_micros() as u64,
            missed: self.cfg.missed_heartbeats,
            exports: self
                .announced
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            leaving,
        }
    }

    /// Puts one message (envelope and payload) on the outbound queue
    /// (never blocks).
    fn enqueue(
        &self,
        subject: Bytes,
        reply: Option<Bytes>,
        payload: Bytes,
        expire: Option<(u64, Instant)>,
    ) -> Result<(), RemoteError> {
        let size = payload.len();
        let max = self.max_payload.load(Ordering::Relaxed);
        if size > max {
            bump(&self.counters.too_large);
            return Err(RemoteError::TooLarge { size, max });
        }
        let cmd = Command::Publish {
            subject,
            reply,
            payload,
            expire,
        };
        match self.outbox.push(cmd) {
            Ok(()) => {
                bump(&self.counters.sent);
                Ok(())
            }
            Err(PushError::Full(_)) => {
                bump(&self.counters.queue_full);
                Err(RemoteError::QueueFull {
                    capacity: self.cfg.outbound_queue,
                })
            }
            Err(PushError::Closed(_)) => Err(RemoteError::Closed),
        }
    }

    /// Queues the answer to a query (past the queue's bound: the query was
    /// accepted, so its answer goes out; a reply too large to send becomes
    /// an error reply).
    fn send_reply(&self, reply: Bytes, payload: Bytes) {
        let max = self.max_payload.load(Ordering::Relaxed);
        let payload = if payload.len() > max {
            bump(&self.counters.too_large);
            self.failure(Failure::Other)
        } else {
            payload
        };
        let cmd = Command::Publish {
            subject: reply,
            reply: None,
            payload,
            expire: None,
        };
        if self.outbox.push_unbounded(cmd).is_ok() {
            bump(&self.counters.sent);
        }
    }

    /// Asks a remote `subject`; the reply completes the returned `Pending`.
    fn ask<Q: Remote, R: Remote>(
        &self,
        peer: &Peer,
        subject: Bytes,
        q: &Q,
        timeout: Duration,
    ) -> Pending<R> {
        let (promise, p) = pending::<R>();
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        if !peer.is_up() {
            bump(&self.counters.undeliverable);
            promise.fail(AskError::Unreachable);
            return p;
        }
        let (payload, reply) = match (self.encode(q), self.reply_subject(token)) {
            (Ok(b), Ok(r)) => (b, r),
            _ => {
                promise.fail(AskError::Rejected);
                return p;
            }
        };
        let deadline = Instant::now() + timeout;
        let done: Completion = Box::new(move |inner: &Inner, r| match r {
            Err(e) => promise.fail(e),
            Ok(m) => match open(&m.payload) {
                None => {
                    bump(&inner.counters.decode_errors);
                    promise.fail(AskError::Rejected)
                }
                Some(env) => match env.failure {
                    Some(Failure::NoReply) => promise.fail(AskError::NoReply),
                    Some(Failure::Timeout) => promise.fail(AskError::Timeout),
                    Some(_) => promise.fail(AskError::Rejected),
                    None => match decode::<R>(&env) {
                        Ok(r) => {
                            bump(&inner.counters.delivered);
                            promise.fulfil(r)
                        }
                        Err(e) => {
                            inner.count_decode_error(&e);
                            promise.fail(AskError::Rejected)
                        }
                    },
                },
            },
        });
        self.replies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token, done);
        if self
            .enqueue(subject, Some(reply), payload, Some((token, deadline)))
            .is_err()
        {
            self.complete(token, Err(AskError::Rejected));
        }
        p
    }

    fn complete(&self, token: u64, r: Result<Inbound, AskError>) {
        let done = self
            .replies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&token);
        if let Some(done) = done {
            done(self, r);
        }
    }

    fn count_decode_error(&self, e: &RemoteError) {
        match e {
            RemoteError::TypeMismatch { .. } => bump(&self.counters.type_mismatch),
            _ => bump(&self.counters.decode_errors),
        }
    }

    /// The query `Q` in `m`, counted as delivered; `None` when `m` holds
    /// no `Q` (counted, and answered with `Failure::Mismatch` if it is a
    /// query).
    fn query<Q: Remote>(&self, m: &Inbound) -> Option<Q> {
        let Some(env) = open(&m.payload) else {
            bump(&self.counters.decode_errors);
            return None;
        };
        match decode::<Q>(&env) {
            Ok(q) => {
                bump(&self.counters.delivered);
                Some(q)
            }
            Err(e) => {
                self.count_decode_error(&e);
                if let Some(reply) = &m.reply {
                    self.send_reply(reply.clone(), self.failure(Failure::Mismatch));
                }
                None
            }
        }
    }

    fn node_event(&self, ev: NodeEvent) {
        if matches!(ev, NodeEvent::Down { .. }) {
            bump(&self.counters.nodes_down);
        }
        self.dir.notify(ev);
    }

    /// Registers a subscription with the bridge and waits for the server's
    /// confirmation (setup-time calls only: this blocks the caller).
    fn subscribe(
        &self,
        subject: String,
        handler: Handler,
        announce: Option<String>,
    ) -> Result<(), RemoteError> {
        let (done, wait) = std::sync::mpsc::channel();
        let cmd = Command::Subscribe {
            subject,
            handler,
            announce,
            done,
        };
        self.outbox.push(cmd).map_err(|e| match e {
            PushError::Full(_) => RemoteError::QueueFull {
                capacity: self.cfg.outbound_queue,
            },
            PushError::Closed(_) => RemoteError::Closed,
        })?;
        wait.recv_timeout(self.cfg.connect_timeout + self.cfg.request_timeout)
            .map_err(|_| RemoteError::Closed)?
    }
}

/// A process's membership in a takt cluster over NATS; see the crate docs.
pub struct Node {
    inner: Arc<Inner>,
    thread: Option<TaktThread<()>>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("node", &self.inner.cfg.node)
            .field("url", &self.inner.cfg.url)
            .finish_non_exhaustive()
    }
}

impl Node {
    /// Connects to the server, starts the bridge thread and announces the
    /// node. Fails if the server cannot be reached within
    /// [`Config::connect_timeout`], refuses the credentials, or the TLS
    /// handshake fails.
    pub fn start(cfg: Config) -> Result<Node, RemoteError> {
        cfg.validate()?;
        let incarnation = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
            ^ u64::from(std::process::id());
        let origin = format!("{}/{incarnation}", cfg.node);
        let mut failures: [Bytes; Failure::ALL.len()] = Default::default();
        for (slot, f) in failures.iter_mut().zip(Failure::ALL) {
            *slot = Head::failure(f, &origin)?.to_bytes();
        }
        let presence_head = Head::message(PRESENCE_TYPE, PRESENCE_VERSION, &origin)?;
        let inner = Arc::new(Inner {
            presence_subject: Bytes::from(format!("{}.presence", cfg.cluster)),
            inbox_prefix: format!("{}.inbox.{}.{incarnation}", cfg.cluster, cfg.node),
            origin,
            incarnation,
            outbox: Outbox::new(cfg.outbound_queue),
            heads: Mutex::new(HashMap::default()),
            failures,
            presence_head,
            shutdown: Notify::new(),
            counters: Arc::new(Counters::default()),
            max_payload: AtomicUsize::new(usize::MAX),
            dir: Directory::default(),
            exports: Mutex::new(HashMap::new()),
            announced: Mutex::new(Vec::new()),
            exported_mboxes: Mutex::new(Vec::new()),
            replies: Mutex::new(Replies::default()),
            next_token: AtomicU64::new(1),
            cfg,
        });
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let bridge = inner.clone();
        let thread = inner
            .cfg
            .thread
            .spawn(move || bridge_main(bridge, ready_tx))
            .map_err(|e| RemoteError::Thread(e.to_string()))?;
        let wait = inner.cfg.connect_timeout + Duration::from_secs(5);
        let started = ready_rx
            .recv_timeout(wait)
            .unwrap_or_else(|_| Err(RemoteError::Thread("the bridge did not start".into())));
        match started {
            Ok(()) => Ok(Node {
                inner,
                thread: Some(thread),
            }),
            Err(e) => {
                inner.shutdown.notify_one();
                let _ = thread.join();
                Err(e)
            }
        }
    }

    /// This node's name.
    pub fn name(&self) -> &str {
        &self.inner.cfg.node
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &Config {
        &self.inner.cfg
    }

    /// The counters.
    pub fn stats(&self) -> RemoteStats {
        self.inner.counters.snapshot()
    }

    /// The server's `max_payload` (envelope plus payload), in bytes.
    pub fn max_payload(&self) -> usize {
        self.inner.max_payload.load(Ordering::Relaxed)
    }

    /// Exports `to` under `name`: other nodes find it with
    /// [`lookup`](Self::lookup) and send it `M`. One name may accept
    /// several message types (one `export` each) and queries
    /// ([`export_ask`](Self::export_ask)). Blocks until the server has the
    /// subscription.
    pub fn export<M: Remote>(&self, name: &str, to: Recipient<M>) -> Result<(), RemoteError> {
        let h: Handler = Arc::new(move |inner: &Arc<Inner>, m: Inbound| {
            let Some(env) = open(&m.payload) else {
                bump(&inner.counters.decode_errors);
                return;
            };
            match decode::<M>(&env) {
                Ok(msg) => {
                    bump(&inner.counters.delivered);
                    to.send(msg)
                }
                Err(e) => inner.count_decode_error(&e),
            }
        });
        self.add_export(name, M::NAME, h)
    }

    /// Exports `to` under `name` for queries `Q` answered with `R`. The
    /// asker's timeout bounds the wait; a query the agent drops unanswered
    /// (no handler in its state, agent finished, over a limit) is answered
    /// at once with `AskError::NoReply`.
    pub fn export_ask<Q: Remote, R: Remote>(
        &self,
        name: &str,
        to: Requester<Q, R>,
    ) -> Result<(), RemoteError> {
        let h: Handler = Arc::new(move |inner: &Arc<Inner>, m: Inbound| {
            let Some(q) = inner.query::<Q>(&m) else {
                return;
            };
            let p = to.ask(q);
            if let Some(reply) = m.reply {
                Answering::start(inner, p, reply);
            }
        });
        self.add_export(name, Q::NAME, h)
    }

    /// Exports `f` under `name` for queries `Q` answered with `R`,
    /// answered **on the bridge thread itself**: no hand-off to an agent's
    /// thread and back, so a round trip costs two thread hand-offs fewer
    /// on this node (the crate README's "Numbers").
    ///
    /// The contract: `f` is cheap (microseconds) and never blocks — no
    /// I/O, no waiting on a lock another thread holds for long, no
    /// [`Pending::wait`]. It runs between the node's network reads and
    /// writes, so while it runs nothing else of this node moves: replies,
    /// heartbeats (a handler that takes seconds gets the node declared
    /// down by its peers). Anything else belongs in an agent
    /// ([`export_ask`](Self::export_ask)). A panic in `f` is caught: the
    /// asker gets `AskError::Rejected` and
    /// [`RemoteStats::handler_panics`] counts it.
    pub fn export_ask_inline<Q, R, F>(&self, name: &str, f: F) -> Result<(), RemoteError>
    where
        Q: Remote,
        R: Remote,
        F: Fn(Q) -> R + Send + Sync + 'static,
    {
        let h: Handler = Arc::new(move |inner: &Arc<Inner>, m: Inbound| {
            let Some(q) = inner.query::<Q>(&m) else {
                return;
            };
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(q)));
            let Some(reply) = m.reply else {
                return; // a query sent as a message: nobody waits
            };
            let payload = match r.map(|r| inner.encode(&r)) {
                Ok(Ok(b)) => b,
                Ok(Err(_)) => inner.failure(Failure::Other),
                Err(_) => {
                    bump(&inner.counters.handler_panics);
                    inner.failure(Failure::Other)
                }
            };
            inner.send_reply(reply, payload);
        });
        self.add_export(name, Q::NAME, h)
    }

    fn add_export(
        &self,
        name: &str,
        type_name: &'static str,
        h: Handler,
    ) -> Result<(), RemoteError> {
        check_name(name)?;
        let inner = &self.inner;
        let (table, fresh) = {
            let mut ex = inner.exports.lock().unwrap_or_else(|e| e.into_inner());
            match ex.get(name) {
                Some(t) => (t.clone(), false),
                None => {
                    let t: Arc<Table> = Arc::default();
                    ex.insert(name.to_string(), t.clone());
                    (t, true)
                }
            }
        };
        {
            let mut t = table.lock().unwrap_or_else(|e| e.into_inner());
            if t.contains_key(type_name) {
                return Err(RemoteError::AlreadyExported(name.to_string()));
            }
            t.insert(type_name, h);
        }
        if !fresh {
            return Ok(());
        }
        let dispatch: Handler = Arc::new(move |inner: &Arc<Inner>, m: Inbound| {
            let env = open(&m.payload);
            let handler = env
                .and_then(|e| std::str::from_utf8(e.name).ok())
                .and_then(|name| {
                    table
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get(name)
                        .cloned()
                });
            match handler {
                Some(h) => h(inner, m),
                None => {
                    if env.is_some() {
                        bump(&inner.counters.type_mismatch);
                    } else {
                        bump(&inner.counters.decode_errors);
                    }
                    if let Some(reply) = m.reply {
                        inner.send_reply(reply, inner.failure(Failure::Mismatch));
                    }
                }
            }
        });
        let subject = inner.agent_subject(&inner.cfg.node, name);
        inner.subscribe(subject, dispatch, Some(name.to_string()))
    }

    /// Exports the named mailbox `mbox` to the cluster: what any node
    /// publishes through its [`RemoteMbox`] of the same name reaches the
    /// subscribers of every node's mailbox, each once. Plain
    /// [`Mbox::publish`] stays local.
    pub fn export_mbox<M: Remote + Clone>(
        &self,
        mbox: &Mbox<M>,
    ) -> Result<RemoteMbox<M>, RemoteError> {
        check_name(mbox.name())?;
        let inner = &self.inner;
        {
            let mut m = inner
                .exported_mboxes
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if m.iter().any(|n| n == mbox.name()) {
                return Err(RemoteError::AlreadyExported(mbox.name().to_string()));
            }
            m.push(mbox.name().to_string());
        }
        let local = mbox.clone();
        let h: Handler = Arc::new(move |inner: &Arc<Inner>, m: Inbound| {
            let Some(env) = open(&m.payload) else {
                bump(&inner.counters.decode_errors);
                return;
            };
            if env.origin == inner.origin.as_bytes() {
                return; // our own publish: local subscribers had it
            }
            match decode::<M>(&env) {
                Ok(msg) => {
                    bump(&inner.counters.delivered);
                    local.publish(msg);
                }
                Err(e) => inner.count_decode_error(&e),
            }
        });
        let subject = inner.mbox_subject(mbox.name());
        inner.subscribe(subject.clone(), h, None)?;
        Ok(RemoteMbox {
            mbox: mbox.clone(),
            inner: self.inner.clone(),
            subject: Bytes::from(subject),
        })
    }

    /// Finds the agent exported as `name` on some node that is up, waiting
    /// up to `timeout` for an announcement that names it.
    pub fn lookup(&self, name: &str, timeout: Duration) -> Result<RemoteAgent, RemoteError> {
        check_name(name)?;
        let peer = self
            .inner
            .dir
            .find(name, Instant::now() + timeout)
            .ok_or_else(|| RemoteError::NotFound(name.to_string()))?;
        Ok(RemoteAgent {
            subject: Bytes::from(self.inner.agent_subject(&peer.name, name)),
            inner: self.inner.clone(),
            peer,
        })
    }

    /// The agent exported as `name` on node `node`, without waiting for it
    /// (sends fail with [`RemoteError::NodeDown`] until the node is up).
    pub fn remote(&self, node: &str, name: &str) -> Result<RemoteAgent, RemoteError> {
        check_name(node)?;
        check_name(name)?;
        Ok(RemoteAgent {
            subject: Bytes::from(self.inner.agent_subject(node, name)),
            peer: self.inner.dir.peer(node),
            inner: self.inner.clone(),
        })
    }

    /// Sends every [`NodeEvent`] (up, down) to `to` from now on.
    pub fn watch(&self, to: Recipient<NodeEvent>) {
        self.inner.dir.watch(to)
    }

    /// The nodes up now (this one included, once it heard itself).
    pub fn nodes_up(&self) -> Vec<String> {
        self.inner.dir.up()
    }

    /// Waits up to `timeout` for `node` to be up; returns whether it is.
    pub fn wait_for_node(&self, node: &str, timeout: Duration) -> bool {
        self.inner.dir.wait_up(node, Instant::now() + timeout)
    }

    /// Announces that this node leaves, flushes, and stops the bridge
    /// (also done on drop).
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.inner.shutdown.notify_one();
            let _ = t.join();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An agent exported by some node, as seen from this one: send it any
/// [`Remote`] message type it was exported for, or ask it.
#[derive(Clone)]
pub struct RemoteAgent {
    inner: Arc<Inner>,
    peer: Arc<Peer>,
    /// The agent's subject (UTF-8), shared by every send.
    subject: Bytes,
}

impl std::fmt::Debug for RemoteAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteAgent")
            .field("subject", &String::from_utf8_lossy(&self.subject))
            .field("up", &self.peer.is_up())
            .finish()
    }
}

impl RemoteAgent {
    /// The node it lives on.
    pub fn node(&self) -> &str {
        &self.peer.name
    }

    /// Whether its node is up (a hint).
    pub fn is_up(&self) -> bool {
        self.peer.is_up()
    }

    /// Sends `msg`; never blocks. Errors: the node is down (counted
    /// undeliverable), the message is over `max_payload`, the outbound
    /// queue is full, the codec failed.
    pub fn send<M: Remote>(&self, msg: M) -> Result<(), RemoteError> {
        self.try_send(msg).map_err(|(e, _)| e)
    }

    fn try_send<M: Remote>(&self, msg: M) -> Result<(), (RemoteError, M)> {
        if !self.peer.is_up() {
            bump(&self.inner.counters.undeliverable);
            return Err((RemoteError::NodeDown(self.peer.name.clone()), msg));
        }
        let payload = match self.inner.encode(&msg) {
            Ok(p) => p,
            Err(e) => return Err((e, msg)),
        };
        self.inner
            .enqueue(self.subject.clone(), None, payload, None)
            .map_err(|e| (e, msg))
    }

    /// Asks `q`; the reply completes the `Pending` (a blocking wait or a
    /// future). It fails at once with [`AskError::Unreachable`] when the
    /// node is down or nobody listens (NATS "no responders"), with
    /// [`AskError::Timeout`] after `timeout`, with [`AskError::Rejected`]
    /// when the query cannot be sent or the reply cannot be read.
    pub fn ask<Q: Remote, R: Remote>(&self, q: Q, timeout: Duration) -> Pending<R> {
        self.inner
            .ask(&self.peer, self.subject.clone(), &q, timeout)
    }

    /// A [`Recipient<M>`] for this agent: failed sends are counted and
    /// dropped (a full queue too).
    pub fn recipient<M: Remote>(&self) -> Recipient<M> {
        self.recipient_with(Overflow::Drop)
    }

    /// A [`Recipient<M>`] whose sends that meet a full outbound queue get
    /// `overflow` (drop, abort, redirect or transform).
    pub fn recipient_with<M: Remote>(&self, overflow: Overflow<M>) -> Recipient<M> {
        Recipient::new(RemoteRecipient {
            agent: self.clone(),
            overflow,
        })
    }

    /// A [`Requester<Q, R>`] for this agent; `ask` without a timeout uses
    /// [`Config::request_timeout`].
    pub fn requester<Q: Remote, R: Remote>(&self) -> Requester<Q, R> {
        Requester::new(self.clone())
    }
}

struct RemoteRecipient<M: Remote> {
    agent: RemoteAgent,
    overflow: Overflow<M>,
}

impl<M: Remote> Accept<M> for RemoteRecipient<M> {
    fn accept(&self, msg: M) {
        if let Err((RemoteError::QueueFull { capacity }, msg)) = self.agent.try_send(msg) {
            match &self.overflow {
                Overflow::Drop => {}
                Overflow::Abort => {
                    eprintln!(
                        "takt-remote: outbound queue full ({capacity}) sending {} to {}: aborting",
                        M::NAME,
                        String::from_utf8_lossy(&self.agent.subject)
                    );
                    std::process::abort();
                }
                Overflow::Redirect(f) | Overflow::Transform(f) => f(msg),
            }
        }
    }

    fn is_open(&self) -> bool {
        self.agent.is_up()
    }
}

impl<Q: Remote, R: Remote> Answer<Q, R> for RemoteAgent {
    fn answer(&self, q: Q, timeout: Option<Duration>) -> Pending<R> {
        self.ask(q, timeout.unwrap_or(self.inner.cfg.request_timeout))
    }
}

/// A named mailbox exported to the cluster ([`Node::export_mbox`]).
pub struct RemoteMbox<M: Remote + Clone> {
    mbox: Mbox<M>,
    inner: Arc<Inner>,
    subject: Bytes,
}

impl<M: Remote + Clone> Clone for RemoteMbox<M> {
    fn clone(&self) -> Self {
        RemoteMbox {
            mbox: self.mbox.clone(),
            inner: self.inner.clone(),
            subject: self.subject.clone(),
        }
    }
}

impl<M: Remote + Clone> std::fmt::Debug for RemoteMbox<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteMbox")
            .field("subject", &String::from_utf8_lossy(&self.subject))
            .finish()
    }
}

impl<M: Remote + Clone> RemoteMbox<M> {
    /// The local mailbox.
    pub fn local(&self) -> &Mbox<M> {
        &self.mbox
    }

    /// Publishes `msg` to the local subscribers (returns how many) and to
    /// every other node's mailbox of this name. The local delivery happens
    /// also when the remote copy fails (the error says why: too large,
    /// queue full).
    pub fn publish(&self, msg: M) -> Result<usize, RemoteError> {
        let remote = self.inner.encode(&msg).and_then(|payload| {
            self.inner
                .enqueue(self.subject.clone(), None, payload, None)
        });
        let n = self.mbox.publish(msg);
        remote.map(|()| n)
    }

    /// This mailbox as a [`Recipient<M>`] (failed remote copies counted).
    pub fn recipient(&self) -> Recipient<M> {
        Recipient::new(self.clone())
    }
}

impl<M: Remote + Clone> Accept<M> for RemoteMbox<M> {
    fn accept(&self, msg: M) {
        let _ = self.publish(msg);
    }
}

/// A query handed to a local agent, waiting for the answer. It is the
/// waker of the agent's [`Pending`]: the thread that completes the reply
/// (the agent's) runs [`Answering::poll_once`], which encodes the answer
/// and queues it for the bridge, so the answer takes no task and no timer
/// of the bridge's and no extra hop.
///
/// Until the reply completes, the `Pending` holds this waker and this
/// holds the `Pending`; completion takes both out (a query is always
/// completed: answered, or dropped unanswered as `NoReply`).
struct Answering<R: Remote> {
    /// The reply to come and where to send it; `None` once sent.
    state: Mutex<Option<(Pending<R>, Bytes)>>,
    inner: Weak<Inner>,
}

impl<R: Remote> Answering<R> {
    fn start(inner: &Arc<Inner>, p: Pending<R>, reply: Bytes) {
        Arc::new(Answering {
            state: Mutex::new(Some((p, reply))),
            inner: Arc::downgrade(inner),
        })
        .poll_once();
    }

    fn poll_once(self: &Arc<Self>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let Some((p, _)) = state.as_mut() else { return };
        let waker = Waker::from(self.clone());
        let r = match Pin::new(p).poll(&mut Context::from_waker(&waker)) {
            Poll::Pending => return,
            Poll::Ready(r) => r,
        };
        let Some((_, reply)) = state.take() else {
            return;
        };
        drop(state);
        let Some(inner) = self.inner.upgrade() else {
            return; // the node is gone
        };
        let payload = match r.map(|r| inner.encode(&r)) {
            Ok(Ok(b)) => b,
            Ok(Err(_)) => inner.failure(Failure::Other),
            Err(AskError::Timeout) => inner.failure(Failure::Timeout),
            Err(AskError::NoReply) => inner.failure(Failure::NoReply),
            Err(_) => inner.failure(Failure::Other),
        };
        inner.send_reply(reply, payload);
    }
}

impl<R: Remote> Wake for Answering<R> {
    fn wake(self: Arc<Self>) {
        self.poll_once()
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.poll_once()
    }
}

/// The bridge thread: a current-thread runtime around [`run`].
fn bridge_main(inner: Arc<Inner>, ready: std::sync::mpsc::Sender<Result<(), RemoteError>>) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(RemoteError::Thread(e.to_string())));
            return;
        }
    };
    rt.block_on(async move {
        let connect = tokio::time::timeout(
            inner.cfg.connect_timeout,
            Nats::connect(&inner.cfg, inner.counters.clone()),
        );
        let t = match connect.await {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                let _ = ready.send(Err(e));
                return;
            }
            Err(_) => {
                let _ = ready.send(Err(RemoteError::Connect {
                    url: inner.cfg.url.clone(),
                    reason: format!(
                        "no connection within {:?} (server down, credentials refused or TLS failed)",
                        inner.cfg.connect_timeout
                    ),
                }));
                return;
            }
        };
        run(t, inner, ready).await
    });
}

/// The queries' deadlines, earliest first: one timer for all of them.
///
/// An answered query's entry stays until its deadline passes or the heap
/// is compacted (when it holds more than twice the queries still waiting,
/// plus [`COMPACT_SLACK`]), so its size stays proportional to the queries
/// in flight.
#[derive(Default)]
struct Deadlines {
    heap: BinaryHeap<Reverse<(Instant, u64)>>,
}

/// Entries a deadline heap may hold beyond twice the waiting queries.
const COMPACT_SLACK: usize = 1024;

impl Deadlines {
    fn push(&mut self, inner: &Inner, at: Instant, token: u64) {
        self.heap.push(Reverse((at, token)));
        if self.heap.len() > 2 * COMPACT_SLACK {
            let waiting = inner.replies.lock().unwrap_or_else(|e| e.into_inner());
            if self.heap.len() > 2 * waiting.len() + COMPACT_SLACK {
                self.heap.retain(|Reverse((_, t))| waiting.contains_key(t));
            }
        }
    }

    fn earliest(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((at, _))| *at)
    }

    /// Fails every query whose deadline is not after `now`.
    fn expire(&mut self, inner: &Inner, now: Instant) {
        while let Some(&Reverse((at, token))) = self.heap.peek() {
            if at > now {
                break;
            }
            self.heap.pop();
            inner.complete(token, Err(AskError::Timeout));
        }
    }
}

/// How long the deadline timer sleeps when no query waits.
const IDLE_SWEEP: Duration = Duration::from_secs(3600);

/// The bridge's loop over one transport.
async fn run<T: Transport>(
    t: T,
    inner: Arc<Inner>,
    ready: std::sync::mpsc::Sender<Result<(), RemoteError>>,
) {
    inner.max_payload.store(t.max_payload(), Ordering::Relaxed);
    let presence: Handler = Arc::new(|inner: &Arc<Inner>, m: Inbound| {
        let Some(env) = open(&m.payload) else {
            bump(&inner.counters.decode_errors);
            return;
        };
        if !env.is(PRESENCE_TYPE, PRESENCE_VERSION) {
            bump(&inner.counters.type_mismatch);
            return;
        }
        match postcard::from_bytes::<Presence>(env.body) {
            Ok(p) => {
                if let Some(ev) = inner.dir.heard(p, Instant::now()) {
                    inner.node_event(ev);
                }
            }
            Err(_) => bump(&inner.counters.decode_errors),
        }
    });
    let inbox: Handler = Arc::new(|inner: &Arc<Inner>, m: Inbound| {
        let token = m
            .subject
            .rsplit(|&b| b == b'.')
            .next()
            .and_then(|s| std::str::from_utf8(s).ok())
            .and_then(|s| s.parse().ok());
        if let Some(token) = token {
            if m.no_responders {
                bump(&inner.counters.no_responders);
                inner.complete(token, Err(AskError::Unreachable));
            } else {
                inner.complete(token, Ok(m));
            }
        }
    });
    for (subject, h) in [
        (format!("{}.presence", inner.cfg.cluster), presence),
        (format!("{}.*", inner.inbox_prefix), inbox),
    ] {
        if let Err(e) = start_subscription(&t, &inner, subject, h).await {
            let _ = ready.send(Err(e));
            return;
        }
    }
    announce(&t, &inner, false).await;
    let _ = t.flush().await;
    let _ = ready.send(Ok(()));

    let mut heartbeat = tokio::time::interval(inner.cfg.heartbeat);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut check = tokio::time::interval(inner.cfg.heartbeat / CHECKS_PER_HEARTBEAT);
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut deadlines = Deadlines::default();
    let sweep = tokio::time::sleep(IDLE_SWEEP);
    tokio::pin!(sweep);
    let mut batch = VecDeque::new();
    loop {
        // Everything queued since the last turn, in one batch; when there
        // is nothing, the next push wakes `outbox.wake()` below.
        let busy = inner.outbox.take(&mut batch);
        if busy {
            for cmd in batch.drain(..) {
                handle(&t, &inner, cmd, &mut deadlines).await;
            }
            if let Some(at) = deadlines.earliest() {
                let at = tokio::time::Instant::from_std(at);
                if at < sweep.deadline() {
                    sweep.as_mut().reset(at);
                }
            }
        }
        tokio::select! {
            biased;
            () = inner.shutdown.notified() => break,
            () = &mut sweep => {
                deadlines.expire(&inner, Instant::now());
                let next = deadlines
                    .earliest()
                    .map(tokio::time::Instant::from_std)
                    .unwrap_or_else(|| tokio::time::Instant::now() + IDLE_SWEEP);
                sweep.as_mut().reset(next);
            }
            _ = check.tick() => {
                for ev in inner.dir.expire(Instant::now()) {
                    inner.node_event(ev);
                }
            }
            _ = heartbeat.tick() => {
                inner.max_payload.store(t.max_payload(), Ordering::Relaxed);
                announce(&t, &inner, false).await;
            }
            () = inner.outbox.wake(), if !busy => {}
            // After a batch: let the connection write it and the
            // subscriptions run, then look again.
            () = tokio::task::yield_now(), if busy => {}
        }
    }
    // Whatever is still queued goes out before the leaving announcement.
    for cmd in inner.outbox.close() {
        handle(&t, &inner, cmd, &mut deadlines).await;
    }
    announce(&t, &inner, true).await;
    let _ = tokio::time::timeout(LEAVE_FLUSH, t.flush()).await;
}

async fn announce<T: Transport>(t: &T, inner: &Inner, leaving: bool) {
    let head = inner.presence_head.as_bytes().to_vec();
    let Ok(payload) = postcard::to_extend(&inner.presence(leaving), head) else {
        return;
    };
    if t.publish(inner.presence_subject.clone(), None, Bytes::from(payload))
        .await
        .is_err()
    {
        bump(&inner.counters.engine_errors);
    }
}

async fn handle<T: Transport>(t: &T, inner: &Arc<Inner>, cmd: Command, deadlines: &mut Deadlines) {
    match cmd {
        Command::Publish {
            subject,
            reply,
            payload,
            expire,
        } => {
            if t.publish(subject, reply, payload).await.is_err() {
                bump(&inner.counters.engine_errors);
            }
            if let Some((token, at)) = expire {
                deadlines.push(inner, at, token);
            }
        }
        Command::Subscribe {
            subject,
            handler,
            announce: name,
            done,
        } => {
            let r = start_subscription(t, inner, subject, handler).await;
            let r = match r {
                Ok(()) => t.flush().await,
                Err(e) => Err(e),
            };
            if r.is_ok() {
                if let Some(name) = name {
                    inner
                        .announced
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(name);
                    announce(t, inner, false).await;
                }
            }
            let _ = done.send(r);
        }
    }
}

/// Subscribes and spawns the task that hands its messages, in order, to
/// `h`.
async fn start_subscription<T: Transport>(
    t: &T,
    inner: &Arc<Inner>,
    subject: String,
    h: Handler,
) -> Result<(), RemoteError> {
    let mut sub = t.subscribe(subject).await?;
    let inner = inner.clone();
    tokio::spawn(async move {
        while let Some(m) = sub.next().await {
            h(&inner, m);
        }
    });
    Ok(())
}
