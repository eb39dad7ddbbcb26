//! Two and three processes exchanging direct, published and asked
//! messages through a nats-server started here; a node killed; the server
//! restarted; mismatches, oversized messages, credentials and TLS.
//!
//! The other nodes are this test binary run again with `TAKT_REMOTE_CHILD`
//! set, which makes `child_entry` run a peer node instead of returning.

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use takt_agents::{Agent, AskError, Config as RtConfig, Ctx, Definer, Recipient, Runtime};
use takt_remote::{Credentials, Node, NodeEvent, RemoteError};

/// The peer node a child process runs: exports `peer-<node>` (Seq, Stop,
/// PublishReq, and u64 → u64 queries), subscribes to the cluster's `news`
/// mailbox, and reports everything it receives to the `sink` it looks up.
struct Peer {
    me: String,
    sink: Recipient<Ack>,
    news: takt_remote::RemoteMbox<News>,
    done: std::sync::mpsc::Sender<()>,
}

impl Agent for Peer {
    fn define(def: &mut Definer<Self>) {
        def.on(|p: &mut Peer, _: &mut Ctx<Peer>, s: Seq| {
            p.sink.send(Ack {
                node: p.me.clone(),
                kind: 0,
                n: s.n,
            })
        })
        .on(|p: &mut Peer, _: &mut Ctx<Peer>, News(n): News| {
            p.sink.send(Ack {
                node: p.me.clone(),
                kind: 1,
                n,
            })
        })
        .on(
            |p: &mut Peer, _: &mut Ctx<Peer>, PublishReq(n): PublishReq| {
                p.news.publish(News(n)).unwrap();
            },
        )
        .on(|p: &mut Peer, _: &mut Ctx<Peer>, _: Stop| {
            let _ = p.done.send(());
        })
        .on_ask(|_: &mut Peer, _: &mut Ctx<Peer>, x: u64| x * 2);
    }
}

#[test]
fn child_entry() {
    let (Ok(url), Ok(node), Ok(cluster)) = (
        std::env::var("TAKT_REMOTE_CHILD"),
        std::env::var("TAKT_REMOTE_NODE"),
        std::env::var("TAKT_REMOTE_CLUSTER"),
    ) else {
        return; // run as a plain test: nothing to do
    };
    let net = Node::start(config(&url, &node, &cluster)).unwrap();
    let rt = Runtime::new(RtConfig::default());
    let disp = rt.one_thread("peer").unwrap();
    let sink = net.lookup("sink", LONG).unwrap().recipient::<Ack>();
    let mbox = rt.mbox::<News>("news").unwrap();
    let news = net.export_mbox(&mbox).unwrap();
    let (done, stopped) = std::sync::mpsc::channel();
    let mut coop = rt.coop("peer");
    let me = coop
        .add(
            Peer {
                me: node.clone(),
                sink,
                news,
                done,
            },
            &disp,
        )
        .unwrap();
    coop.register().unwrap();
    mbox.subscribe(&me);
    let name = format!("peer-{node}");
    net.export::<Seq>(&name, me.recipient()).unwrap();
    net.export::<Stop>(&name, me.recipient()).unwrap();
    net.export::<PublishReq>(&name, me.recipient()).unwrap();
    net.export_ask::<u64, u64>(&name, me.requester()).unwrap();
    // Leave when told, or when the parent is long gone.
    let _ = stopped.recv_timeout(Duration::from_secs(120));
    net.shutdown();
    rt.shutdown();
}

fn spawn_child(url: &str, node: &str, cluster: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env("TAKT_REMOTE_CHILD", url)
        .env("TAKT_REMOTE_NODE", node)
        .env("TAKT_REMOTE_CLUSTER", cluster)
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// Records node events.
struct Watcher(Arc<Mutex<Vec<(Instant, NodeEvent)>>>);
impl Agent for Watcher {
    fn define(def: &mut Definer<Self>) {
        def.on(|w: &mut Watcher, _: &mut Ctx<Watcher>, e: NodeEvent| {
            w.0.lock().unwrap().push((Instant::now(), e))
        });
    }
}

fn acks(got: &Mutex<Vec<Ack>>, node: &str, kind: u8) -> Vec<u64> {
    got.lock()
        .unwrap()
        .iter()
        .filter(|a| a.node == node && a.kind == kind)
        .map(|a| a.n)
        .collect()
}

#[test]
fn three_processes_direct_published_asked_and_a_node_killed() {
    let server = Server::start("");
    let url = server.url();
    let cluster = "three";
    let net = Node::start(config(&url, "parent", cluster)).unwrap();
    let rt = Runtime::new(RtConfig::default());
    let disp = rt.one_thread("parent").unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let events = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("parent");
    let sink = coop
        .add(
            Collector {
                me: "parent".into(),
                got: got.clone(),
            },
            &disp,
        )
        .unwrap();
    let watcher = coop.add(Watcher(events.clone()), &disp).unwrap();
    let _coop = coop.register().unwrap();
    net.watch(watcher.recipient());
    net.export::<Ack>("sink", sink.recipient()).unwrap();
    let mbox = rt.mbox::<News>("news").unwrap();
    mbox.subscribe(&sink);
    let news = net.export_mbox(&mbox).unwrap();

    let mut c1 = spawn_child(&url, "c1", cluster);
    let mut c2 = spawn_child(&url, "c2", cluster);
    let p1 = net.lookup("peer-c1", LONG).unwrap();
    let p2 = net.lookup("peer-c2", LONG).unwrap();
    assert_eq!(p1.node(), "c1");
    // A child exports its mailbox subscription before its agent; give both
    // a moment to be fully subscribed by asking each once.
    assert_eq!(p1.ask::<u64, u64>(21, LONG).wait(), Ok(42));
    assert_eq!(p2.ask::<u64, u64>(4, LONG).wait(), Ok(8));

    // Direct messages, FIFO per pair.
    const N: u64 = 2000;
    for n in 0..N {
        p1.send(Seq {
            from: "parent".into(),
            n,
        })
        .unwrap();
        p2.send(Seq {
            from: "parent".into(),
            n,
        })
        .unwrap();
    }
    assert!(eventually(
        || acks(&got, "c1", 0).len() == N as usize && acks(&got, "c2", 0).len() == N as usize
    ));
    let want: Vec<u64> = (0..N).collect();
    assert_eq!(acks(&got, "c1", 0), want, "FIFO parent -> c1 -> parent");
    assert_eq!(acks(&got, "c2", 0), want, "FIFO parent -> c2 -> parent");

    // Published on this node: each subscriber on every node once.
    for n in 1..=10 {
        assert_eq!(news.publish(News(n)).unwrap(), 1);
    }
    // Published on c1: reaches c1's own subscriber once, c2 and here.
    p1.send(PublishReq(500)).unwrap();
    let want: Vec<u64> = (1..=10).collect();
    let with_500: Vec<u64> = (1..=10).chain([500]).collect();
    assert!(eventually(|| acks(&got, "c1", 1) == with_500
        && acks(&got, "c2", 1) == with_500
        && acks(&got, "parent", 1) == with_500));
    std::thread::sleep(Duration::from_millis(300)); // no late duplicates
    assert_eq!(acks(&got, "c1", 1), with_500);
    assert_eq!(acks(&got, "c2", 1), with_500);
    assert_eq!(acks(&got, "parent", 1), with_500);
    assert!(want.iter().all(|n| with_500.contains(n)));

    // A query nobody can answer fails at once, not after the timeout.
    let ghost = net.remote("c1", "nobody").unwrap();
    let t0 = Instant::now();
    assert_eq!(
        ghost.ask::<u64, u64>(1, LONG).wait(),
        Err(AskError::Unreachable)
    );
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert!(net.stats().no_responders >= 1);

    // c2 killed: NodeDown within three missed heartbeats, then sends to it
    // are counted undeliverable.
    c2.kill().unwrap();
    let killed = Instant::now();
    c2.wait().unwrap();
    let c2_down = NodeEvent::Down {
        node: "c2".into(),
        left: false,
    };
    assert!(eventually(|| events
        .lock()
        .unwrap()
        .iter()
        .any(|(_, e)| *e == c2_down)));
    assert!(!p2.is_up());
    let down_at = events
        .lock()
        .unwrap()
        .iter()
        .find(|(_, e)| {
            *e == NodeEvent::Down {
                node: "c2".into(),
                left: false,
            }
        })
        .map(|(t, _)| *t);
    let down_after = down_at.expect("NodeDown for c2").duration_since(killed);
    // Three heartbeats, plus the check's granularity and a loaded machine.
    assert!(
        down_after <= 3 * HEARTBEAT + HEARTBEAT,
        "NodeDown {down_after:?} after the kill"
    );
    let before = net.stats().undeliverable;
    assert_eq!(
        p2.send(Seq {
            from: "parent".into(),
            n: 0
        }),
        Err(RemoteError::NodeDown("c2".into()))
    );
    assert_eq!(
        p2.ask::<u64, u64>(1, LONG).wait(),
        Err(AskError::Unreachable)
    );
    assert_eq!(net.stats().undeliverable, before + 2);

    // c1 told to stop: it leaves, and says so.
    p1.send(Stop).unwrap();
    assert!(c1.wait().unwrap().success());
    assert!(eventually(|| events.lock().unwrap().iter().any(
        |(_, e)| *e
            == NodeEvent::Down {
                node: "c1".into(),
                left: true
            }
    )));
    assert_eq!(net.stats().type_mismatch, 0);
    net.shutdown();
    rt.shutdown();
}

/// Two nodes in this process (independent connections, as two processes).
fn pair(url: &str, cluster: &str) -> (Node, Node) {
    let a = Node::start(config(url, "a", cluster)).unwrap();
    let b = Node::start(config(url, "b", cluster)).unwrap();
    assert!(a.wait_for_node("b", LONG) && b.wait_for_node("a", LONG));
    (a, b)
}

#[test]
fn server_restart_reconnects_and_loses_only_what_was_in_flight() {
    let mut server = Server::start("");
    let (a, b) = pair(&server.url(), "restart");
    let rt = Runtime::new(RtConfig::default());
    let disp = rt.one_thread("r").unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("r");
    let sink = coop
        .add(
            Collector {
                me: "a".into(),
                got: got.clone(),
            },
            &disp,
        )
        .unwrap();
    let _coop = coop.register().unwrap();
    a.export::<Seq>("sink", sink.recipient()).unwrap();
    let to = b.lookup("sink", LONG).unwrap();
    let mut n = 0u64;
    let send_for = |d: Duration, n: &mut u64| {
        let t0 = Instant::now();
        while t0.elapsed() < d {
            // The node may count as down while the server is away.
            let _ = to.send(Seq {
                from: "b".into(),
                n: *n,
            });
            *n += 1;
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    send_for(Duration::from_millis(300), &mut n);
    server.restart();
    send_for(Duration::from_millis(300), &mut n);
    assert!(eventually(
        || b.stats().reconnects >= 1 && a.stats().reconnects >= 1
    ));
    assert!(a.wait_for_node("b", LONG) && b.wait_for_node("a", LONG));
    let before_tail = n;
    send_for(Duration::from_millis(300), &mut n);
    // After the reconnect, delivery resumes: the tail arrives whole.
    assert!(eventually(|| acks(&got, "b", 0).last() == Some(&(n - 1))));
    let seen = acks(&got, "b", 0);
    // At most once, in order: strictly increasing, nothing twice.
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "reordered or duplicated"
    );
    assert!((before_tail..n).all(|x| seen.contains(&x)), "tail lost");
    let lost = n - seen.len() as u64;
    eprintln!("restart: sent {n}, received {}, lost {lost}", seen.len());
    assert!(a.stats().disconnects >= 1);
}

#[test]
fn type_and_version_mismatches_are_rejected_and_counted() {
    let server = Server::start("");
    let (a, b) = pair(&server.url(), "mismatch");
    let rt = Runtime::new(RtConfig::default());
    let disp = rt.one_thread("m").unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("m");
    let sink = coop
        .add(
            Collector {
                me: "a".into(),
                got: got.clone(),
            },
            &disp,
        )
        .unwrap();
    let _coop = coop.register().unwrap();
    a.export::<Seq>("sink", sink.recipient()).unwrap();
    assert_eq!(
        a.export::<Seq>("sink", sink.recipient()),
        Err(RemoteError::AlreadyExported("sink".into()))
    );
    let to = b.lookup("sink", LONG).unwrap();
    // Same name, newer schema: refused by the v1 receiver.
    to.send(SeqV2 {
        n: 1,
        from: "b".into(),
        extra: 7,
    })
    .unwrap();
    // A type the name does not accept.
    to.send(News(3)).unwrap();
    // A query it does not answer: refused at once.
    assert_eq!(to.ask::<u64, u64>(1, LONG).wait(), Err(AskError::Rejected));
    to.send(Seq {
        from: "b".into(),
        n: 2,
    })
    .unwrap();
    assert!(eventually(|| acks(&got, "b", 0) == vec![2]));
    assert_eq!(a.stats().type_mismatch, 3);
    assert_eq!(got.lock().unwrap().len(), 1);
}

#[test]
fn an_oversized_message_is_an_error_at_the_sender() {
    let server = Server::start("max_payload: 65536");
    let (a, b) = pair(&server.url(), "big");
    assert_eq!(a.max_payload(), 65536);
    let rt = Runtime::new(RtConfig::default());
    let disp = rt.one_thread("big").unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("big");
    let sink = coop
        .add(
            Collector {
                me: "a".into(),
                got: got.clone(),
            },
            &disp,
        )
        .unwrap();
    let _coop = coop.register().unwrap();
    a.export::<Vec<u8>>("sink", sink.recipient()).unwrap();
    let to = b.lookup("sink", LONG).unwrap();
    match to.send(vec![0u8; 100_000]) {
        Err(RemoteError::TooLarge { size, max }) => {
            assert!(size > 100_000);
            assert_eq!(max, 65536);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(b.stats().too_large, 1);
    to.send(vec![0u8; 60_000]).unwrap();
    assert!(eventually(|| got.lock().unwrap().len() == 1));
}

#[test]
fn credentials_are_checked_and_wrong_ones_refused() {
    let server = Server::start("authorization { users = [ { user: svc, password: s3cret } ] }");
    let mut cfg = config(&server.url(), "creds", "creds");
    cfg.credentials = Credentials::UserPassword {
        user: "svc".into(),
        password: "s3cret".into(),
    };
    Node::start(cfg.clone()).unwrap().shutdown();
    cfg.credentials = Credentials::UserPassword {
        user: "svc".into(),
        password: "wrong".into(),
    };
    let e = Node::start(cfg.clone()).unwrap_err();
    assert!(matches!(e, RemoteError::Connect { .. }), "{e}");
    cfg.credentials = Credentials::None;
    assert!(Node::start(cfg).is_err());

    let server = Server::start("authorization { token: tok-123 }");
    let mut cfg = config(&server.url(), "token", "creds");
    cfg.credentials = Credentials::Token("tok-123".into());
    Node::start(cfg.clone()).unwrap().shutdown();
    cfg.credentials = Credentials::Token("tok-999".into());
    assert!(Node::start(cfg).is_err());
}

#[test]
fn an_nkey_user_is_admitted_and_a_wrong_seed_refused() {
    let user = nkeys::KeyPair::new_user();
    let stranger = nkeys::KeyPair::new_user();
    let server = Server::start(&format!(
        "authorization {{ users = [ {{ nkey: {} }} ] }}",
        user.public_key()
    ));
    let mut cfg = config(&server.url(), "nkey", "nkey");
    cfg.credentials = Credentials::NKey(user.seed().unwrap());
    let node = Node::start(cfg.clone()).unwrap();
    assert!(node.wait_for_node("nkey", LONG));
    node.shutdown();
    // A valid seed of another key: the server's challenge is signed by a
    // key it does not know.
    cfg.credentials = Credentials::NKey(stranger.seed().unwrap());
    let e = Node::start(cfg.clone()).unwrap_err();
    assert!(matches!(e, RemoteError::Connect { .. }), "{e}");
    // Not a seed at all.
    cfg.credentials = Credentials::NKey("SUNOTASEED".into());
    assert!(Node::start(cfg.clone()).is_err());
    // No credentials.
    cfg.credentials = Credentials::None;
    assert!(Node::start(cfg).is_err());
}

#[test]
fn tls_with_a_certificate_made_here() {
    let server = Server::start_with(|dir| {
        let (_, cert, key) = make_certs(dir);
        format!(
            "tls {{ cert_file: \"{}\", key_file: \"{}\" }}",
            cert.display(),
            key.display()
        )
    });
    let mut cfg = config(&format!("tls://127.0.0.1:{}", server.port), "tls", "tls");
    cfg.tls.required = true;
    // Without the test CA the server's certificate is not trusted.
    assert!(Node::start(cfg.clone()).is_err());
    cfg.tls.ca = Some(server.path("ca.pem"));
    let node = Node::start(cfg).unwrap();
    assert!(node.wait_for_node("tls", LONG));
    node.shutdown();
}

/// Forwards to `to`, after holding the calling (bridge) thread once: a
/// stand-in for a bridge that falls behind.
struct Stall {
    first: std::sync::atomic::AtomicBool,
    hold: Duration,
    to: Recipient<Seq>,
}

impl takt_agents::Accept<Seq> for Stall {
    fn accept(&self, m: Seq) {
        if self.first.swap(false, std::sync::atomic::Ordering::Relaxed) {
            std::thread::sleep(self.hold);
        }
        self.to.send(m)
    }
}

fn collector(rt: &Runtime, me: &str) -> (takt_agents::Addr<Collector>, Arc<Mutex<Vec<Ack>>>) {
    let disp = rt.one_thread(me).unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop(me);
    let c = coop
        .add(
            Collector {
                me: me.into(),
                got: got.clone(),
            },
            &disp,
        )
        .unwrap();
    coop.register().unwrap();
    (c, got)
}

#[test]
fn a_full_outbound_queue_gets_the_overflow_reaction_and_never_blocks() {
    let server = Server::start("");
    let mut cfg = config(&server.url(), "q", "queue");
    cfg.outbound_queue = 4;
    let node = Node::start(cfg).unwrap();
    let rt = Runtime::new(RtConfig::default());
    let (sink, got) = collector(&rt, "sink");
    let (spill, spilled) = collector(&rt, "spill");
    let stall = Recipient::new(Stall {
        first: true.into(),
        hold: Duration::from_millis(500),
        to: sink.recipient(),
    });
    node.export::<Seq>("sink", stall).unwrap();
    let to = node.lookup("sink", LONG).unwrap();
    let r = to.recipient_with(takt_agents::Overflow::redirect(spill.clone()));
    r.send(Seq {
        from: "q".into(),
        n: 0,
    });
    // The bridge is held by the first delivery: the queue fills, and the
    // sends around it return at once.
    assert!(eventually(|| got.lock().unwrap().is_empty()));
    std::thread::sleep(Duration::from_millis(50));
    let t0 = Instant::now();
    for n in 1..=20 {
        r.send(Seq {
            from: "q".into(),
            n,
        });
    }
    assert!(
        t0.elapsed() < Duration::from_millis(100),
        "{:?}",
        t0.elapsed()
    );
    let full = node.stats().queue_full;
    assert!(full >= 16, "queue_full {full}");
    assert!(eventually(|| spilled.lock().unwrap().len() as u64 == full));
    assert!(eventually(|| got.lock().unwrap().len() as u64 + full == 21));
    // Drained: sending works again.
    to.send(Seq {
        from: "q".into(),
        n: 99,
    })
    .unwrap();
}

#[test]
fn a_bridge_that_falls_behind_counts_slow_consumer_events() {
    let server = Server::start("");
    let mut cfg = config(&server.url(), "slow", "slow");
    cfg.subscription_capacity = 8;
    let a = Node::start(cfg).unwrap();
    let b = Node::start(config(&server.url(), "fast", "slow")).unwrap();
    let rt = Runtime::new(RtConfig::default());
    let (sink, got) = collector(&rt, "sink");
    let stall = Recipient::new(Stall {
        first: true.into(),
        hold: Duration::from_millis(500),
        to: sink.recipient(),
    });
    a.export::<Seq>("slow", stall).unwrap();
    let to = b.lookup("slow", LONG).unwrap();
    for n in 0..500 {
        to.send(Seq {
            from: "fast".into(),
            n,
        })
        .unwrap();
    }
    assert!(eventually(|| a.stats().slow_consumer >= 1));
    // What got through is in order; the rest was dropped by the client.
    std::thread::sleep(Duration::from_millis(200));
    let seen = acks(&got, "fast", 0);
    assert!(seen.len() < 500, "nothing dropped");
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
}

/// A query handler answered on the bridge thread (`export_ask_inline`)
/// answers across nodes like an agent; a panic in it is caught, answered
/// with `Rejected` and counted, and the node goes on answering.
#[test]
fn inline_query_handlers_answer_and_their_panics_are_contained() {
    let server = Server::start("");
    let (a, b) = pair(&server.url(), "inline");
    a.export_ask_inline::<u64, u64, _>("double", |x: u64| {
        assert!(x != 13, "unlucky");
        x * 2
    })
    .unwrap();
    assert_eq!(
        a.export_ask_inline::<u64, u64, _>("double", |x: u64| x),
        Err(RemoteError::AlreadyExported("double".into()))
    );
    let to = b.lookup("double", LONG).unwrap();
    assert_eq!(to.ask::<u64, u64>(21, LONG).wait(), Ok(42));
    assert_eq!(to.ask::<u64, u64>(13, LONG).wait(), Err(AskError::Rejected));
    assert_eq!(a.stats().handler_panics, 1);
    // In order, many at once, after the panic.
    let asks: Vec<_> = (100..300u64).map(|i| to.ask::<u64, u64>(i, LONG)).collect();
    for (i, p) in asks.into_iter().enumerate() {
        assert_eq!(p.wait(), Ok(2 * (100 + i as u64)));
    }
    // A query of the wrong type: refused at once, counted.
    assert_eq!(
        to.ask::<Seq, u64>(
            Seq {
                from: "b".into(),
                n: 1
            },
            LONG
        )
        .wait(),
        Err(AskError::Rejected)
    );
    assert_eq!(a.stats().type_mismatch, 1);
}

/// A message from a plain NATS client, without takt's envelope, is never
/// delivered: it is counted as undecodable, and a query gets an immediate
/// `Mismatch` failure reply (an envelope, kind 3) instead of silence.
#[test]
fn messages_without_an_envelope_are_counted_and_refused() {
    let server = Server::start("");
    let a = Node::start(config(&server.url(), "a", "foreign")).unwrap();
    let rt = Runtime::new(RtConfig::default());
    let disp = rt.one_thread("f").unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("f");
    let sink = coop
        .add(
            Collector {
                me: "a".into(),
                got: got.clone(),
            },
            &disp,
        )
        .unwrap();
    let _coop = coop.register().unwrap();
    a.export::<Seq>("sink", sink.recipient()).unwrap();
    a.export_ask_inline::<u64, u64, _>("double", |x: u64| x * 2)
        .unwrap();
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let reply = tokio.block_on(async {
        let c = async_nats::connect(server.url()).await.unwrap();
        c.publish("foreign.agent.a.sink", "{\"n\":1}".into())
            .await
            .unwrap();
        c.request("foreign.agent.a.double", "21".into())
            .await
            .unwrap()
    });
    assert_eq!(reply.payload.get(..2), Some(&[0xA7, 3][..]), "{reply:?}");
    assert!(eventually(|| a.stats().decode_errors == 2));
    assert!(got.lock().unwrap().is_empty());
    assert_eq!(a.stats().type_mismatch, 0);
    // The node goes on serving takt peers.
    let b = Node::start(config(&server.url(), "b", "foreign")).unwrap();
    let to = b.lookup("double", LONG).unwrap();
    assert_eq!(to.ask::<u64, u64>(21, LONG).wait(), Ok(42));
}
