//! The `shared` model's INVITE split over real sockets: the kernel sorts
//! new INVITEs onto their own socket, so an overflow drops only them, and
//! the workers read the dialog socket first.

use std::net::UdpSocket;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use takt_sched::ThreadSpec;
use takt_sip::proxy::{Disposition, Inbound, MsgKind, Outcome, Scratch, Sink};
use takt_sip::transport::{Handler, Server, ServerConfig, WakeOrder, WorkerModel};

/// A handler whose first message blocks it until [`Gate::open`]; it
/// records, in order, whether each message was an INVITE.
#[derive(Debug, Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
    seen: Mutex<Vec<bool>>,
}

impl Gate {
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }

    fn seen(&self) -> Vec<bool> {
        self.seen.lock().unwrap().clone()
    }
}

impl Handler for Gate {
    fn handle(&self, inb: &Inbound<'_>, _: &mut Scratch, _: &mut dyn Sink) -> Outcome {
        let first = {
            let mut s = self.seen.lock().unwrap();
            s.push(inb.bytes.starts_with(b"INVITE"));
            s.len() == 1
        };
        if first {
            let mut o = self.open.lock().unwrap();
            while !*o {
                o = self.opened.wait(o).unwrap();
            }
        }
        Outcome {
            kind: MsgKind::Options,
            disposition: Disposition::Absorbed,
            error: None,
            lock_contended: false,
        }
    }

    fn tick(&self, _: u64, _: &mut dyn Sink) {}

    fn wants_ticks(&self) -> bool {
        false
    }
}

fn msg(method: &str, i: usize) -> Vec<u8> {
    format!(
        "{method} sip:b@x SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:9;branch=z9hG4bK-{i}\r\n\
Call-ID: {i}@t\r\nCSeq: 1 {method}\r\nContent-Length: 0\r\n\r\n"
    )
    .into_bytes()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// One worker, blocked in its first message while 300 INVITEs and 20
/// ACKs arrive: the INVITE socket (a tiny buffer) overflows, the dialog
/// socket keeps every ACK, and once released the worker reads all the
/// ACKs before the INVITEs that were queued.
#[test]
fn an_overflow_drops_only_invites_and_dialog_messages_are_read_first() {
    let mut sc = ServerConfig::new("127.0.0.1:0".parse().unwrap());
    sc.model = WorkerModel::Shared;
    sc.wake = WakeOrder::Lifo;
    sc.workers = 1;
    sc.tcp = false;
    sc.invite_rcvbuf = Some(4096);
    sc.spec = ThreadSpec::new("split-test");
    let srv = Server::start_with(sc, |_, _, _| Ok(Gate::default())).unwrap();
    let to = srv.local_addr();
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    // the message that blocks the worker
    c.send_to(&msg("OPTIONS", 0), to).unwrap();
    wait_for("the worker takes the first message", || {
        srv.handler().seen().len() == 1
    });
    for i in 0..300 {
        c.send_to(&msg("INVITE", i), to).unwrap();
        if i % 15 == 0 {
            c.send_to(&msg("ACK", i), to).unwrap();
        }
    }
    srv.handler().open();
    wait_for("the ACKs and some INVITEs are read", || {
        let s = srv.handler().seen();
        s.iter().filter(|&&i| !i).count() == 21 && s.iter().any(|&i| i)
    });
    // nothing more is coming: let the worker drain (until nothing new has
    // been read for a while: valgrind is ~50x slower), then send one more
    // INVITE, which carries its socket's drop count (SO_RXQ_OVFL stamps
    // a datagram with the count when it is queued)
    let quiet = if std::env::var_os("TAKT_UNDER_VALGRIND").is_some() {
        Duration::from_secs(2)
    } else {
        Duration::from_millis(100)
    };
    let mut before = srv.handler().seen().len();
    loop {
        std::thread::sleep(quiet);
        let now = srv.handler().seen().len();
        if now == before {
            break;
        }
        before = now;
    }
    c.send_to(&msg("INVITE", 300), to).unwrap();
    wait_for("the last INVITE is read", || {
        srv.handler().seen().len() == before + 1
    });
    let seen = srv.handler().seen();
    let snap = srv.stop();
    assert!(snap.server.invite_split);
    assert!(snap.server.invite_rcvbuf_effective >= 4096);
    let invites = seen.iter().filter(|&&i| i).count() as u64;
    assert!(invites < 301, "the INVITE socket overflowed");
    // every INVITE is either read or counted as dropped by its socket
    assert_eq!(invites + snap.invite_socket_drops, 301, "{snap:?}");
    // and nothing else was dropped
    assert_eq!(snap.socket_drops, snap.invite_socket_drops);
    // after the blocking message: the 20 ACKs, then the INVITEs
    assert!(seen[1..21].iter().all(|&i| !i), "{seen:?}");
    assert!(seen[21..].iter().all(|&i| i), "{seen:?}");
}

/// Only the `shared` model with `lifo` wake splits; the others say so.
#[test]
fn only_the_shared_lifo_model_splits() {
    for (model, wake, split) in [
        (WorkerModel::Shared, WakeOrder::Lifo, true),
        (WorkerModel::Shared, WakeOrder::Fifo, false),
        (WorkerModel::Reuseport, WakeOrder::Lifo, false),
        (WorkerModel::Batched, WakeOrder::Lifo, false),
    ] {
        let mut sc = ServerConfig::new("127.0.0.1:0".parse().unwrap());
        sc.model = model;
        sc.wake = wake;
        sc.tcp = false;
        assert_eq!(sc.splits(), split);
        let srv = Server::start_with(sc, |_, _, _| Ok(Gate::default())).unwrap();
        srv.handler().open();
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.send_to(&msg("INVITE", 1), srv.local_addr()).unwrap();
        c.send_to(&msg("ACK", 1), srv.local_addr()).unwrap();
        wait_for("both messages are handled", || {
            srv.handler().seen().len() == 2
        });
        let snap = srv.stop();
        assert_eq!(snap.server.invite_split, split, "{model:?} {wake:?}");
        assert_eq!(snap.server.invite_rcvbuf_effective > 0, split);
    }
}

/// A handler that counts messages and holds each for a few microseconds,
/// so that arrivals meet busy workers.
#[derive(Debug, Default)]
struct Count(std::sync::atomic::AtomicUsize);

impl Handler for Count {
    fn handle(&self, _: &Inbound<'_>, _: &mut Scratch, _: &mut dyn Sink) -> Outcome {
        let t = Instant::now();
        while t.elapsed() < Duration::from_micros(5) {
            std::hint::spin_loop();
        }
        // Relaxed: a count read after the fact; nothing is published by it.
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Outcome {
            kind: MsgKind::Options,
            disposition: Disposition::Absorbed,
            error: None,
            lock_contended: false,
        }
    }

    fn tick(&self, _: u64, _: &mut dyn Sink) {}

    fn wants_ticks(&self) -> bool {
        false
    }
}

/// Stress for the workers' drain protocol (a worker reads the socket it
/// was not woken for only when it owes it; see `DrainOrder`): bursts of
/// INVITEs and dialog messages from three senders at once, round after
/// round, into four workers; every round's datagrams are all handled
/// (none is left queued on a socket no worker owes and whose event was
/// taken).
#[test]
fn bursts_on_both_sockets_are_never_stranded() {
    let mut sc = ServerConfig::new("127.0.0.1:0".parse().unwrap());
    sc.model = WorkerModel::Shared;
    sc.wake = WakeOrder::Lifo;
    sc.workers = 4;
    sc.tcp = false;
    sc.spec = ThreadSpec::new("split-stress");
    let srv = Server::start_with(sc, |_, _, _| Ok(Count::default())).unwrap();
    let to = srv.local_addr();
    let senders: Vec<UdpSocket> = (0..3)
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    let mut sent = 0;
    for round in 0..300usize {
        std::thread::scope(|s| {
            for (k, c) in senders.iter().enumerate() {
                s.spawn(move || {
                    // a round's shape varies: INVITEs only, dialog only, mixed
                    for i in 0..(round + k) % 7 {
                        let m = if (round + i + k) % 3 == 0 {
                            "INVITE"
                        } else {
                            "ACK"
                        };
                        c.send_to(&msg(m, i), to).unwrap();
                    }
                });
            }
        });
        sent += (0..3).map(|k| (round + k) % 7).sum::<usize>();
        wait_for("every datagram of the round is handled", || {
            srv.handler().0.load(std::sync::atomic::Ordering::Relaxed) == sent
        });
    }
    let snap = srv.stop();
    assert!(snap.server.invite_split);
    assert_eq!(snap.socket_drops, 0);
}
