//! The UAC and UAS against each other on virtual time, directly and
//! through the proxy core in both modes, with losses injected.

use std::net::SocketAddr;

use super::synth::proxy_config;
use super::*;
use crate::proxy::{Inbound, Mode, Proxy, Scratch, SendError, Sink, Target, Transport};
use crate::wire::Message;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
/// One-way delay of every hop.
const DELAY: u64 = MS;
/// Period of the proxy's timer tick.
const TICK: u64 = 10 * MS;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// One datagram on the wire.
#[derive(Debug, Clone)]
struct Sent {
    at: u64,
    from: SocketAddr,
    to: SocketAddr,
    kind: Kind,
    bytes: Vec<u8>,
}

/// Decides whether a datagram is lost: `(from, to, kind, how many of this
/// (from, kind) were sent before)`.
type Loss = Box<dyn FnMut(SocketAddr, SocketAddr, Kind, usize) -> bool>;

struct Net {
    now: u64,
    uac: Uac,
    uas: Uas,
    proxy: Option<(Proxy, Scratch)>,
    flight: Vec<(u64, Sent)>,
    log: Vec<Sent>,
    lost: Vec<Sent>,
    loss: Loss,
    next_tick: u64,
}

struct Collect(Vec<(SocketAddr, Vec<u8>)>);

impl Sink for Collect {
    fn send(&mut self, to: &Target, b: &[u8]) -> Result<(), SendError> {
        self.0.push((to.addr, b.to_vec()));
        Ok(())
    }
}

const UAC: &str = "127.0.0.1:5061";
const UAS: &str = "127.0.0.1:5070";
const PROXY: &str = "127.0.0.1:5060";

impl Net {
    fn new(proxy: Option<Mode>, timers: UaTimers, hold_ns: u64, max_dialogs: usize) -> Net {
        Net::over(Transport::Udp, proxy, timers, hold_ns, max_dialogs)
    }

    /// With both UAs on `transport` (a lost message then stands for one
    /// the far end never took off the stream).
    fn over(
        transport: Transport,
        proxy: Option<Mode>,
        timers: UaTimers,
        hold_ns: u64,
        max_dialogs: usize,
    ) -> Net {
        let first_hop = if proxy.is_some() { PROXY } else { UAS };
        let mut uc = UacConfig::new(addr(UAC), addr(first_hop))
            .with_transport(transport)
            .with_uas(addr(UAS));
        uc.timers = timers;
        uc.hold_ns = hold_ns;
        uc.max_calls = 64;
        uc.run_id = 7;
        let mut sc = UasConfig::new(addr(UAS));
        sc.transport = transport;
        sc.timers = timers;
        sc.max_dialogs = max_dialogs;
        Net {
            now: 0,
            uac: Uac::new(uc),
            uas: Uas::new(sc),
            proxy: proxy.map(|m| (Proxy::new(proxy_config(m)), Scratch::new())),
            flight: Vec::new(),
            log: Vec::new(),
            lost: Vec::new(),
            loss: Box::new(|_, _, _, _| false),
            next_tick: TICK,
        }
    }

    /// Through the proxy in `mode`, with the UAS as its fixed next hop or
    /// (`next_hop` false) routing on the Request-URI, and a preloaded
    /// Route naming the proxy if `preload`.
    fn through(mode: Mode, next_hop: bool, preload: bool) -> Net {
        let mut n = Net::new(Some(mode), UaTimers::default(), 0, 16);
        let mut pc = proxy_config(mode);
        if !next_hop {
            pc.next_hop = None;
        }
        n.proxy = Some((Proxy::new(pc), Scratch::new()));
        if preload {
            let uc = n.uac.config().clone().with_route_preload();
            n.uac = Uac::new(uc);
        }
        n
    }

    fn lose(mut self, f: impl FnMut(SocketAddr, SocketAddr, Kind, usize) -> bool + 'static) -> Net {
        self.loss = Box::new(f);
        self
    }

    fn put(&mut self, from: SocketAddr, to: SocketAddr, bytes: Vec<u8>) {
        let kind = Kind::of(&Message::parse(&bytes).expect("UAs and proxy send valid SIP"));
        let before = self
            .log
            .iter()
            .chain(&self.lost)
            .filter(|s| s.from == from && s.kind == kind)
            .count();
        let s = Sent {
            at: self.now,
            from,
            to,
            kind,
            bytes,
        };
        if (self.loss)(from, to, kind, before) {
            self.lost.push(s);
        } else {
            self.log.push(s.clone());
            self.flight.push((self.now + DELAY, s));
        }
    }

    /// Sends what the UAs queued.
    fn flush(&mut self) {
        let mut buf = Vec::new();
        while let Some(t) = self.uac.poll_transmit(&mut buf) {
            assert_eq!(t.len, buf.len());
            self.put(addr(UAC), t.dst, std::mem::take(&mut buf));
        }
        while let Some(t) = self.uas.poll_transmit(&mut buf) {
            assert_eq!(t.len, buf.len());
            self.put(addr(UAS), t.dst, std::mem::take(&mut buf));
        }
    }

    fn deliver(&mut self, s: Sent) {
        let now = self.now;
        if s.to == addr(UAC) {
            let _ = self.uac.handle(now, &s.bytes);
        } else if s.to == addr(UAS) {
            let _ = self.uas.handle(now, 0, s.from, &s.bytes);
        } else if s.to == addr(PROXY) {
            let (p, scratch) = self.proxy.as_mut().expect("a proxy in this topology");
            let mut c = Collect(Vec::new());
            p.handle(
                &Inbound {
                    bytes: &s.bytes,
                    from: Target {
                        addr: s.from,
                        transport: Transport::Udp,
                        conn: None,
                    },
                    now,
                    queue_delay_ns: 0,
                },
                scratch,
                &mut c,
            );
            for (to, b) in c.0 {
                self.put(addr(PROXY), to, b);
            }
        } else {
            panic!("datagram to nowhere: {}", s.to);
        }
    }

    /// Runs until `until`, starting a call at each time of `starts`.
    fn run(&mut self, starts: &[u64], until: u64) {
        let mut starts = starts.iter().copied().peekable();
        loop {
            let mut next = [
                self.flight.iter().map(|f| f.0).min(),
                self.uac.poll_timeout(),
                self.uas.poll_timeout(),
                starts.peek().copied(),
                self.proxy.as_ref().map(|_| self.next_tick),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(u64::MAX);
            next = next.max(self.now);
            if next > until {
                self.now = until;
                return;
            }
            self.now = next;
            while starts.peek() == Some(&next) {
                starts.next();
                let _ = self.uac.start_call(next);
            }
            let (due, rest): (Vec<_>, Vec<_>) = self.flight.drain(..).partition(|f| f.0 <= next);
            self.flight = rest;
            for (_, s) in due {
                self.deliver(s);
            }
            self.uac.handle_timeout(next);
            self.uas.handle_timeout(next);
            if self.next_tick <= next {
                self.next_tick = next + TICK;
                if let Some((p, _)) = &self.proxy {
                    let mut c = Collect(Vec::new());
                    p.tick(next, &mut c);
                    for (to, b) in c.0 {
                        self.put(addr(PROXY), to, b);
                    }
                }
            }
            self.flush();
        }
    }

    /// Send times of `kind` by `from`.
    fn times(&self, from: &str, kind: Kind) -> Vec<u64> {
        self.log
            .iter()
            .chain(&self.lost)
            .filter(|s| s.from == addr(from) && s.kind == kind)
            .map(|s| s.at)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    }
}

fn outcomes(u: &Uac) -> Vec<(&'static str, u64)> {
    Outcome::ALL
        .into_iter()
        .map(|o| (o.name(), u.stats().outcomes.get(o)))
        .filter(|&(_, n)| n > 0)
        .collect()
}

/// End to end, what one side sent of each kind the other received.
fn assert_end_to_end(n: &Net) {
    let (c, s) = (n.uac.stats(), n.uas.stats());
    for k in [Kind::Invite, Kind::Ack, Kind::Bye] {
        assert_eq!(c.sent.get(k), s.received.get(k), "{}", k.name());
    }
    for k in [Kind::Ringing, Kind::OkInvite, Kind::OkBye] {
        assert_eq!(s.sent.get(k), c.received.get(k), "{}", k.name());
    }
}

#[test]
fn calls_complete_directly_with_nothing_retransmitted() {
    let mut n = Net::new(None, UaTimers::default(), 0, 16);
    n.run(&[0, MS, 2 * MS], 10 * S);
    assert_eq!(outcomes(&n.uac), [("completed", 3)]);
    assert_eq!(n.uac.active(), 0);
    assert_eq!(n.uas.pending(), 0);
    assert_end_to_end(&n);
    let c = n.uac.stats();
    assert_eq!(c.sent.get(Kind::Invite), 3);
    assert_eq!(c.sent.get(Kind::Ack), 3);
    assert_eq!(c.sent.get(Kind::Bye), 3);
    assert_eq!(c.retransmitted.total(), 0);
    assert_eq!(n.uas.stats().retransmitted.total(), 0);
    assert_eq!(n.uas.stats().answered, 3);
    // one round trip: 2 ms to the 180 and to the 200
    assert_eq!(c.invite_to_180.len(), 3);
    assert!(c.invite_to_180.equivalent(c.invite_to_180.min(), 2 * MS));
    assert!(c.invite_to_180.equivalent(c.invite_to_180.max(), 2 * MS));
    assert!(c.invite_to_200.equivalent(c.invite_to_200.max(), 2 * MS));
}

#[test]
fn bye_follows_the_ack_after_the_hold_time() {
    let mut n = Net::new(None, UaTimers::default(), 3 * S, 16);
    n.run(&[0], 10 * S);
    assert_eq!(outcomes(&n.uac), [("completed", 1)]);
    let ack = n.times(UAC, Kind::Ack);
    let bye = n.times(UAC, Kind::Bye);
    assert_eq!(ack, [2 * MS]);
    assert_eq!(bye, [2 * MS + 3 * S]);
}

#[test]
fn invite_is_retransmitted_at_t1_doubling_until_a_response() {
    let mut n = Net::new(None, UaTimers::default(), 0, 16)
        .lose(|_, _, k, nth| k == Kind::Invite && nth < 2);
    n.run(&[0], 40 * S);
    assert_eq!(outcomes(&n.uac), [("completed", 1)]);
    assert_eq!(n.times(UAC, Kind::Invite), [0, 500 * MS, 1500 * MS]);
    assert_eq!(n.uac.stats().retransmitted.get(Kind::Invite), 2);
    assert_eq!(n.uas.stats().received.get(Kind::Invite), 1);
    // timed from the first transmission
    let h = &n.uac.stats().invite_to_200;
    assert!(h.equivalent(h.max(), 1502 * MS));
}

#[test]
fn unanswered_invite_times_out_at_timer_b() {
    let mut n = Net::new(None, UaTimers::default(), 0, 16).lose(|_, _, k, _| k == Kind::Invite);
    n.run(&[0], 60 * S);
    assert_eq!(outcomes(&n.uac), [("timeout", 1)]);
    let t: Vec<u64> = n.times(UAC, Kind::Invite);
    let expect: Vec<u64> = [0, 500, 1500, 3500, 7500, 15500, 31500]
        .iter()
        .map(|ms| ms * MS)
        .collect();
    assert_eq!(t, expect);
    assert_eq!(n.uac.stats().retransmitted.get(Kind::Invite), 6);
    assert_eq!(n.uac.active(), 0);
}

#[test]
fn with_retransmissions_off_a_lost_invite_times_out_alone() {
    let timers = UaTimers {
        retransmit: false,
        ..UaTimers::default()
    };
    let mut n = Net::new(None, timers, 0, 16).lose(|_, _, k, nth| k == Kind::Invite && nth == 0);
    n.run(&[0, S], 60 * S);
    assert_eq!(outcomes(&n.uac), [("completed", 1), ("timeout", 1)]);
    assert_eq!(n.times(UAC, Kind::Invite), [0, S]);
    assert_eq!(n.uac.stats().retransmitted.total(), 0);
}

#[test]
fn lost_200_is_resent_by_the_uas_and_lost_ack_is_repeated_by_the_uac() {
    let mut n = Net::new(None, UaTimers::default(), 0, 16)
        .lose(|_, _, k, nth| k == Kind::OkInvite && nth == 0);
    n.run(&[0], 10 * S);
    assert_eq!(outcomes(&n.uac), [("completed", 1)]);
    assert_eq!(n.times(UAS, Kind::OkInvite), [MS, MS + 500 * MS]);
    assert_eq!(n.uas.stats().retransmitted.get(Kind::OkInvite), 1);

    // the ACK lost during a hold: the 200 comes again and is ACKed again
    let mut n = Net::new(None, UaTimers::default(), 5 * S, 16)
        .lose(|_, _, k, nth| k == Kind::Ack && nth == 0);
    n.run(&[0], 10 * S);
    assert_eq!(outcomes(&n.uac), [("completed", 1)]);
    assert_eq!(n.uac.stats().retransmitted.get(Kind::Ack), 1);
    assert_eq!(n.times(UAS, Kind::OkInvite), [MS, MS + 500 * MS]);
    assert_eq!(n.uas.stats().received.get(Kind::Ack), 1);
    assert_eq!(n.uas.pending(), 0);
}

#[test]
fn bye_is_retransmitted_capped_at_t2_and_fails_at_timer_f() {
    let mut n = Net::new(None, UaTimers::default(), 0, 16).lose(|_, _, k, _| k == Kind::Bye);
    n.run(&[0], 60 * S);
    assert_eq!(outcomes(&n.uac), [("bye_failed", 1)]);
    let t0 = 2 * MS;
    let expect: Vec<u64> = [
        0, 500, 1500, 3500, 7500, 11500, 15500, 19500, 23500, 27500, 31500,
    ]
    .iter()
    .map(|ms| t0 + ms * MS)
    .collect();
    assert_eq!(n.times(UAC, Kind::Bye), expect);
    assert_eq!(n.uac.stats().retransmitted.get(Kind::Bye), 10);
}

#[test]
fn a_full_uas_refuses_with_503_which_the_uac_acks() {
    // one dialog slot; the second INVITE arrives before the first ACK
    let mut n = Net::new(None, UaTimers::default(), 0, 1);
    n.run(&[0, 0], 10 * S);
    assert_eq!(outcomes(&n.uac), [("completed", 1), ("503", 1)]);
    assert_eq!(n.uas.stats().full, 1);
    assert_eq!(n.uac.stats().sent.get(Kind::Ack), 2);
    assert_eq!(n.uac.stats().received.get(Kind::Failure), 1);
    assert_eq!(n.uac.active(), 0);
}

#[test]
fn a_full_call_table_counts_the_call_as_not_placed() {
    let mut n = Net::new(None, UaTimers::default(), 0, 128);
    let starts = vec![0; 65];
    n.run(&starts, 10 * S);
    assert_eq!(outcomes(&n.uac), [("completed", 64), ("no_slot", 1)]);
    assert_eq!(n.uac.stats().attempted, 65);
}

#[test]
fn garbage_and_strays_are_counted_not_fatal() {
    let mut n = Net::new(None, UaTimers::default(), 0, 16);
    assert_eq!(n.uac.handle(0, b"\x00\x01garbage"), Err(UaError::Malformed));
    assert_eq!(
        n.uas.handle(0, 0, addr(UAC), b"SIP/2.0 200 OK\r\n\r\n"),
        Err(UaError::Malformed)
    );
    n.run(&[0], 5 * S);
    // a late duplicate of the finished call's 200 to the BYE
    let late = n
        .log
        .iter()
        .find(|s| s.kind == Kind::OkBye)
        .unwrap()
        .bytes
        .clone();
    assert_eq!(n.uac.handle(n.now, &late), Err(UaError::Stray));
    let s = n.uac.stats();
    assert_eq!((s.malformed, s.stray), (1, 1));
    assert_eq!(n.uas.stats().malformed, 1);
}

#[test]
fn calls_complete_through_the_proxy_in_both_modes() {
    for mode in [Mode::Stateless, Mode::Stateful] {
        let mut n = Net::new(Some(mode), UaTimers::default(), 0, 16);
        n.run(&[0, 3 * MS, 7 * MS], 10 * S);
        assert_eq!(outcomes(&n.uac), [("completed", 3)], "{mode:?}");
        assert_end_to_end(&n);
        let trying = n.uac.stats().received.get(Kind::Trying);
        assert_eq!(
            trying,
            if mode == Mode::Stateful { 3 } else { 0 },
            "{mode:?}"
        );
        // record-routed: the ACK and BYE carry the proxy's route
        let bye = n
            .log
            .iter()
            .find(|s| s.from == addr(UAC) && s.kind == Kind::Bye)
            .unwrap();
        let m = Message::parse(&bye.bytes).unwrap();
        assert!(
            m.routes().len() == 1,
            "{mode:?}: {}",
            String::from_utf8_lossy(&bye.bytes)
        );
        assert_eq!(n.uac.stats().retransmitted.total(), 0);
    }
}

#[test]
fn the_request_uri_names_the_uas_and_the_requests_go_to_the_proxy() {
    // a proxy that routes on the Request-URI (no next hop) and one with a
    // fixed next hop, with and without a preloaded Route: every call
    // completes, and the proxy consumes its own Route entry
    for mode in [Mode::Stateless, Mode::Stateful] {
        for (next_hop, preload) in [(false, false), (true, false), (false, true), (true, true)] {
            let what = format!("{mode:?} next hop {next_hop} preload {preload}");
            let mut n = Net::through(mode, next_hop, preload);
            n.run(&[0, 3 * MS], 10 * S);
            assert_eq!(outcomes(&n.uac), [("completed", 2)], "{what}");
            assert_end_to_end(&n);
            let from_uac = n.log.iter().filter(|s| s.from == addr(UAC));
            assert!(from_uac.clone().all(|s| s.to == addr(PROXY)), "{what}");
            let invite = from_uac.clone().find(|s| s.kind == Kind::Invite).unwrap();
            let text = String::from_utf8_lossy(&invite.bytes);
            assert!(
                text.starts_with("INVITE sip:service@127.0.0.1:5070 SIP/2.0\r\n"),
                "{what}: {text}"
            );
            assert_eq!(
                text.contains("\r\nRoute: <sip:127.0.0.1:5060;lr>\r\n"),
                preload,
                "{what}: {text}"
            );
            let at_uas = n
                .log
                .iter()
                .find(|s| s.to == addr(UAS) && s.kind == Kind::Invite)
                .unwrap();
            let m = Message::parse(&at_uas.bytes).unwrap();
            assert!(m.routes().is_empty(), "{what}: the proxy removed its Route");
        }
    }
}

#[test]
fn a_failure_ack_carries_the_preloaded_route() {
    let uc = UacConfig::new(addr(UAC), addr(PROXY))
        .with_uas(addr(UAS))
        .with_route_preload();
    let mut uac = Uac::new(uc);
    uac.start_call(0).unwrap();
    let mut out = Vec::new();
    uac.poll_transmit(&mut out).unwrap();
    let invite = String::from_utf8(out.clone()).unwrap();
    let call_id = invite
        .lines()
        .find_map(|l| l.strip_prefix("Call-ID: "))
        .unwrap();
    let branch = invite
        .lines()
        .find_map(|l| l.strip_prefix("Via: "))
        .unwrap();
    let from = invite
        .lines()
        .find_map(|l| l.strip_prefix("From: "))
        .unwrap();
    let busy = format!(
        "SIP/2.0 486 Busy Here\r\nVia: {branch}\r\nFrom: {from}\r\nTo: <sip:service@127.0.0.1:5070>;tag=x\r\nCall-ID: {call_id}\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"
    );
    uac.handle(MS, busy.as_bytes()).unwrap();
    let mut out = Vec::new();
    let t = uac.poll_transmit(&mut out).expect("the ACK");
    assert_eq!(t.dst, addr(PROXY));
    let ack = String::from_utf8(out).unwrap();
    assert!(
        ack.starts_with("ACK sip:service@127.0.0.1:5070 SIP/2.0\r\n")
            && ack.contains("\r\nRoute: <sip:127.0.0.1:5060;lr>\r\n"),
        "{ack}"
    );
    Message::parse(ack.as_bytes()).expect("the ACK parses");
}

#[test]
fn over_tcp_the_request_uri_and_the_route_say_tcp() {
    for (a, b) in [(true, false), (false, true)] {
        // whichever order the builder is called in
        let mut uc = UacConfig::new(addr(UAC), addr(PROXY));
        if a {
            uc = uc.with_transport(Transport::Tcp);
        }
        uc = uc.with_uas(addr(UAS)).with_route_preload();
        if b {
            uc = uc.with_transport(Transport::Tcp);
        }
        assert_eq!(uc.request_uri, "sip:service@127.0.0.1:5070;transport=tcp");
        assert_eq!(
            uc.route.as_deref(),
            Some("<sip:127.0.0.1:5060;transport=tcp;lr>")
        );
    }
}

#[test]
fn through_a_stateful_proxy_the_100_stops_invite_retransmission() {
    // the proxy's INVITE to the UAS is lost once: the proxy resends it
    // (its own Timer A) and the UAC, having its 100, does not
    let mut n = Net::new(Some(Mode::Stateful), UaTimers::default(), 0, 16)
        .lose(|from, _, k, nth| from == addr(PROXY) && k == Kind::Invite && nth == 0);
    n.run(&[0], 10 * S);
    assert_eq!(outcomes(&n.uac), [("completed", 1)]);
    assert_eq!(n.uac.stats().retransmitted.get(Kind::Invite), 0);
    assert_eq!(n.times(PROXY, Kind::Invite).len(), 2);
    let h = &n.uac.stats().invite_to_200;
    assert!(h.max() > 500 * MS, "{}", h.max());

    // stateless: the UAC's own retransmission recovers the call
    let mut n = Net::new(Some(Mode::Stateless), UaTimers::default(), 0, 16)
        .lose(|from, _, k, nth| from == addr(PROXY) && k == Kind::Invite && nth == 0);
    n.run(&[0], 10 * S);
    assert_eq!(outcomes(&n.uac), [("completed", 1)]);
    assert_eq!(n.uac.stats().retransmitted.get(Kind::Invite), 1);
}

#[test]
fn a_bye_that_overtakes_a_lost_ack_ends_the_dialog_at_the_uas() {
    // no hold: the BYE follows the (lost) ACK at once
    let mut n =
        Net::new(None, UaTimers::default(), 0, 16).lose(|_, _, k, nth| k == Kind::Ack && nth == 0);
    n.run(&[0], 10 * S);
    assert_eq!(outcomes(&n.uac), [("completed", 1)]);
    let s = n.uas.stats();
    assert_eq!(s.bye_before_ack, 1);
    assert_eq!(s.retransmitted.total(), 0, "no 200 resent after the BYE");
    assert_eq!(n.uas.pending(), 0);
}

#[test]
fn a_repeated_invite_gets_the_same_200_again() {
    // the 180 and 200 of the first INVITE are lost; the UAC's second
    // INVITE finds the dialog and gets the 200 again, not a new call
    let mut n = Net::new(None, UaTimers::default(), 0, 16).lose(|from, _, k, nth| {
        from == addr(UAS) && matches!(k, Kind::Ringing | Kind::OkInvite) && nth == 0
    });
    n.run(&[0], 10 * S);
    assert_eq!(outcomes(&n.uac), [("completed", 1)]);
    let s = n.uas.stats();
    assert_eq!(s.answered, 1);
    assert_eq!(s.received.get(Kind::Invite), 2);
    assert!(s.retransmitted.get(Kind::OkInvite) >= 1);
}

/// Found by the `ua` fuzz target: a 2xx whose Contact URI holds a folded
/// line (or has a scheme that is not one) went verbatim into the ACK's
/// request line (a malformed request, and a header injected into it). The URI is refused and counted; the ACK goes
/// to the initial Request-URI and parses.
#[test]
fn a_contact_that_cannot_be_a_request_uri_is_refused() {
    let proxy = addr("127.0.0.1:5060");
    let mut uac = Uac::new(UacConfig::new(addr(UAC), proxy).with_uas(addr(UAS)));
    let mut uas = Uas::new(UasConfig::new(addr(UAS)));
    for (i, contact) in [
        "Contact: <sip:127: sip:j.example.net;tag=1\r\n\tX-Injected: 0>\r\n",
        "Contact: <>\r\n",
        "Contact: <sip:a b@example.net>\r\n",
        // found by the fuzz target too: a scheme must start with a letter
        "Contact: <+ip:127.0.0.1:5070>\r\n",
    ]
    .into_iter()
    .enumerate()
    {
        let now = i as u64 * S;
        uac.start_call(now).unwrap();
        let mut buf = Vec::new();
        let t = uac.poll_transmit(&mut buf).unwrap();
        uas.handle(now + MS, 0, proxy, &buf[buf.len() - t.len..])
            .unwrap();
        let mut ok = None;
        let mut out = Vec::new();
        while let Some(t) = uas.poll_transmit(&mut out) {
            let b = out[out.len() - t.len..].to_vec();
            if b.starts_with(b"SIP/2.0 200") {
                ok = Some(b);
            }
        }
        let ok = String::from_utf8(ok.expect("the UAS answers 200")).unwrap();
        let start = ok.find("Contact: ").unwrap_or_else(|| panic!("{ok}"));
        let end = start + ok[start..].find("\r\n").unwrap() + 2;
        let bad = format!("{}{contact}{}", &ok[..start], &ok[end..]);
        uac.handle(now + 2 * MS, bad.as_bytes()).unwrap();
        let mut out = Vec::new();
        let t = uac.poll_transmit(&mut out).expect("the ACK");
        let b = &out[out.len() - t.len..];
        Message::parse(b).expect("the ACK parses");
        assert!(
            b.starts_with(b"ACK sip:service@127.0.0.1:5070 SIP/2.0\r\n"),
            "{}",
            String::from_utf8_lossy(b)
        );
        assert!(!String::from_utf8_lossy(b).contains("X-Injected"));
        // the BYE (no hold time) goes the same way
        let t = uac.poll_transmit(&mut out).expect("the BYE");
        let b = &out[out.len() - t.len..];
        Message::parse(b).expect("the BYE parses");
        assert!(b.starts_with(b"BYE sip:service@127.0.0.1:5070 SIP/2.0\r\n"));
        assert!(uac.poll_transmit(&mut out).is_none());
        assert_eq!(uac.stats().bad_contact, i as u64 + 1, "{contact:?}");
    }
}

#[test]
fn over_tcp_the_uac_never_retransmits_but_timers_b_and_f_and_the_uas_2xx_still_run() {
    // the INVITE never reaches the UAS: no Timer A, the call ends at Timer B
    let mut n = Net::over(Transport::Tcp, None, UaTimers::default(), 0, 16)
        .lose(|_, _, k, _| k == Kind::Invite);
    n.run(&[0], 60 * S);
    assert_eq!(outcomes(&n.uac), [("timeout", 1)]);
    assert_eq!(n.times(UAC, Kind::Invite), [0]);
    assert_eq!(n.uac.stats().retransmitted.total(), 0);
    assert_eq!(n.uac.active(), 0);

    // the BYE lost: no Timer E, the BYE fails at Timer F
    let mut n = Net::over(Transport::Tcp, None, UaTimers::default(), 0, 16)
        .lose(|_, _, k, _| k == Kind::Bye);
    n.run(&[0], 60 * S);
    assert_eq!(outcomes(&n.uac), [("bye_failed", 1)]);
    assert_eq!(n.times(UAC, Kind::Bye), [2 * MS]);

    // the UAS's 200 is retransmitted until the ACK whatever the transport
    let mut n = Net::over(Transport::Tcp, None, UaTimers::default(), 0, 16)
        .lose(|_, _, k, nth| k == Kind::OkInvite && nth == 0);
    n.run(&[0], 10 * S);
    assert_eq!(outcomes(&n.uac), [("completed", 1)]);
    assert_eq!(n.times(UAS, Kind::OkInvite), [MS, MS + 500 * MS]);
    assert_eq!(n.uac.stats().retransmitted.total(), 0);

    // the messages say TCP: Via, and Contact for requests routed by it
    let invite = n.log.iter().find(|s| s.kind == Kind::Invite).unwrap();
    let text = String::from_utf8_lossy(&invite.bytes);
    assert!(text.contains("Via: SIP/2.0/TCP 127.0.0.1:5061;"), "{text}");
    assert!(
        text.contains("Contact: <sip:takt@127.0.0.1:5061;transport=tcp>"),
        "{text}"
    );
    assert!(
        text.starts_with("INVITE sip:service@127.0.0.1:5070;transport=tcp SIP/2.0"),
        "{text}"
    );
    let ok = n.log.iter().find(|s| s.kind == Kind::OkInvite).unwrap();
    let text = String::from_utf8_lossy(&ok.bytes);
    assert!(
        text.contains("Contact: <sip:127.0.0.1:5070;transport=tcp>"),
        "{text}"
    );
    let bye = n.log.iter().find(|s| s.kind == Kind::Bye).unwrap();
    let text = String::from_utf8_lossy(&bye.bytes);
    assert!(
        text.starts_with("BYE sip:127.0.0.1:5070;transport=tcp SIP/2.0"),
        "{text}"
    );
}
