//! Proxy behaviour on a virtual clock with a recording sink.

use super::build::Local;
use super::*;
use crate::wire::Message;

const MS: u64 = 1_000_000;

#[derive(Default)]
struct Rec {
    sent: Vec<(Target, Vec<u8>)>,
}

impl Sink for Rec {
    fn send(&mut self, to: &Target, bytes: &[u8]) -> Result<(), SendError> {
        Message::parse(bytes).unwrap_or_else(|e| {
            panic!(
                "proxy sent unparsable {e}: {}",
                String::from_utf8_lossy(bytes)
            )
        });
        self.sent.push((*to, bytes.to_vec()));
        Ok(())
    }
}

impl Rec {
    fn take(&mut self) -> Vec<(Target, Vec<u8>)> {
        std::mem::take(&mut self.sent)
    }
}

fn udp(a: &str) -> Target {
    Target {
        addr: a.parse().unwrap(),
        transport: Transport::Udp,
        conn: None,
    }
}

const UAC: &str = "10.0.0.1:5061";
const UAS: &str = "10.0.0.2:5062";

fn proxy(mode: Mode) -> Proxy {
    let mut c = ProxyConfig::new(
        mode,
        Local {
            host: "10.0.0.9".into(),
            port: 5060,
        },
    );
    c.next_hop = Some(udp(UAS));
    c.shards = 4;
    Proxy::new(c)
}

fn req(method: &str, branch: &str, cseq: u32, to_tag: Option<&str>, extra: &str) -> Vec<u8> {
    let tt = to_tag.map(|t| format!(";tag={t}")).unwrap_or_default();
    format!(
        "{method} sip:service@10.0.0.9:5060 SIP/2.0\r\n\
Via: SIP/2.0/UDP 10.0.0.1:5061;branch={branch};rport\r\n\
From: sipp <sip:sipp@10.0.0.1:5061>;tag=from1\r\n\
To: <sip:service@10.0.0.9:5060>{tt}\r\n\
Call-ID: call-1@10.0.0.1\r\n\
CSeq: {cseq} {method}\r\n\
Contact: <sip:sipp@10.0.0.1:5061>\r\n\
{extra}Content-Length: 0\r\n\r\n"
    )
    .into_bytes()
}

/// The response a UAS sends to forwarded request `fwd`.
fn resp(fwd: &[u8], code: u16, to_tag: &str) -> Vec<u8> {
    let m = Message::parse(fwd).unwrap();
    let b = m.buf();
    let mut out = format!("SIP/2.0 {code} Whatever\r\n").into_bytes();
    for h in m.headers() {
        match h.name {
            HeaderName::Via | HeaderName::From | HeaderName::CallId | HeaderName::CSeq => {
                out.extend_from_slice(h.line.of(b))
            }
            HeaderName::To => {
                out.extend_from_slice(b"To: ");
                out.extend_from_slice(h.value.of(b));
                if m.to_tag().is_none() && code > 100 {
                    out.extend_from_slice(format!(";tag={to_tag}").as_bytes());
                }
                out.extend_from_slice(b"\r\n");
            }
            _ => {}
        }
    }
    out.extend_from_slice(b"Content-Length: 0\r\n\r\n");
    out
}

fn feed(p: &Proxy, bytes: &[u8], from: &str, now: u64, sink: &mut Rec) -> Outcome {
    feed_delay(p, bytes, from, now, 0, sink)
}

fn feed_delay(
    p: &Proxy,
    bytes: &[u8],
    from: &str,
    now: u64,
    delay: u64,
    sink: &mut Rec,
) -> Outcome {
    let mut s = Scratch::new();
    p.handle(
        &Inbound {
            bytes,
            from: udp(from),
            now,
            queue_delay_ns: delay,
        },
        &mut s,
        sink,
    )
}

fn status(b: &[u8]) -> Option<u16> {
    Message::parse(b).unwrap().status()
}

fn method(b: &[u8]) -> Option<Method> {
    Message::parse(b).unwrap().method()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn stateless_forwards_and_routes_responses_back() {
    let p = proxy(Mode::Stateless);
    let mut r = Rec::default();
    let inv = req("INVITE", "z9hG4bK-a1", 1, None, "Max-Forwards: 70\r\n");
    let o = feed(&p, &inv, UAC, 0, &mut r);
    assert_eq!(o.disposition, Disposition::Forwarded);
    let sent = r.take();
    assert_eq!(sent.len(), 1, "no 100 Trying in stateless mode");
    let (to, fwd) = &sent[0];
    assert_eq!(to.addr, UAS.parse().unwrap());
    let m = Message::parse(fwd).unwrap();
    assert_eq!(m.vias().len(), 2);
    let br = m.top_via().branch.unwrap().of(fwd);
    assert!(br.starts_with(b"z9hG4bKtk"));
    assert_eq!(m.max_forwards(), Some(69));
    let t = text(fwd);
    assert!(t.contains("Record-Route: <sip:10.0.0.9:5060;lr>"), "{t}");
    assert!(t.contains("branch=z9hG4bK-a1;rport=5061"), "{t}");
    // a retransmission and the CANCEL get the same branch
    feed(&p, &inv, UAC, 0, &mut r);
    let cancel = req("CANCEL", "z9hG4bK-a1", 1, None, "");
    feed(&p, &cancel, UAC, 0, &mut r);
    let again = r.take();
    for (_, b) in &again {
        let m2 = Message::parse(b).unwrap();
        assert_eq!(m2.top_via().branch.unwrap().of(b), br);
    }
    // responses: our Via popped, sent to the source port (rport)
    let ringing = resp(fwd, 180, "uas1");
    assert_eq!(
        feed(&p, &ringing, UAS, 0, &mut r).disposition,
        Disposition::Forwarded
    );
    let (to, up) = &r.take()[0];
    assert_eq!(to.addr, UAC.parse().unwrap());
    let m = Message::parse(up).unwrap();
    assert_eq!(m.vias().len(), 1);
    assert_eq!(m.status(), Some(180));
    // a response whose top Via is not ours is dropped
    assert_eq!(
        feed(&p, up, UAS, 0, &mut r).disposition,
        Disposition::DroppedNotOurs
    );
}

#[test]
fn stateless_never_sends_a_provisional_after_a_later_final() {
    // two workers of the shared model: the 200 (arrived at 1.0 ms) is
    // handled before the 180 (arrived at 0.9 ms, handled at 1.2 ms)
    for gate in [true, false] {
        let mut c = proxy(Mode::Stateless).config().clone();
        c.order_responses = gate;
        let p = Proxy::new(c);
        let mut r = Rec::default();
        let inv = req("INVITE", "z9hG4bK-o1", 1, None, "");
        feed(&p, &inv, UAC, 0, &mut r);
        let fwd = r.take().remove(0).1;
        let ok = resp(&fwd, 200, "uas1");
        let ringing = resp(&fwd, 180, "uas1");
        let o = feed_delay(&p, &ok, UAS, 1_100_000, 100_000, &mut r);
        assert_eq!(o.disposition, Disposition::Forwarded);
        let o = feed_delay(&p, &ringing, UAS, 1_200_000, 300_000, &mut r);
        let sent: Vec<u16> = r.take().iter().map(|(_, b)| status(b).unwrap()).collect();
        if gate {
            assert_eq!(o.disposition, Disposition::DroppedReordered);
            assert_eq!(sent, vec![200]);
        } else {
            assert_eq!(o.disposition, Disposition::Forwarded);
            assert_eq!(sent, vec![200, 180]);
        }
        // in order (180 arrived and handled first) both always go
        let inv = req("INVITE", "z9hG4bK-o2", 1, None, "");
        feed(&p, &inv, UAC, 0, &mut r);
        let fwd = r.take().remove(0).1;
        feed_delay(&p, &resp(&fwd, 180, "u"), UAS, 2_000_000, 10, &mut r);
        feed_delay(&p, &resp(&fwd, 200, "u"), UAS, 2_100_000, 10, &mut r);
        // and a 2xx retransmission goes too
        feed_delay(&p, &resp(&fwd, 200, "u"), UAS, 2_600_000, 10, &mut r);
        let sent: Vec<u16> = r.take().iter().map(|(_, b)| status(b).unwrap()).collect();
        assert_eq!(sent, vec![180, 200, 200]);
    }
}

#[test]
fn max_forwards_and_loops() {
    let p = proxy(Mode::Stateless);
    let mut r = Rec::default();
    let inv = req("OPTIONS", "z9hG4bK-o1", 1, None, "");
    feed(&p, &inv, UAC, 0, &mut r);
    let fwd = r.take().remove(0).1;
    assert!(text(&fwd).contains("Max-Forwards: 70\r\n"));
    let zero = req("OPTIONS", "z9hG4bK-o2", 1, None, "Max-Forwards: 0\r\n");
    assert_eq!(
        feed(&p, &zero, UAC, 0, &mut r).disposition,
        Disposition::Replied(483)
    );
    assert_eq!(status(&r.take()[0].1), Some(483));
    // our forwarded request coming back unchanged is a loop
    assert_eq!(
        feed(&p, &fwd, UAS, 0, &mut r).disposition,
        Disposition::Replied(482)
    );
    let back = r.take();
    assert_eq!(status(&back[0].1), Some(482));
}

#[test]
fn proxy_require_and_unknown_scheme() {
    let mut c = ProxyConfig::new(
        Mode::Stateless,
        Local {
            host: "10.0.0.9".into(),
            port: 5060,
        },
    );
    c.next_hop = None;
    let p = Proxy::new(c);
    let mut r = Rec::default();
    let b = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/rfc4475/bext01.dat"
    ))
    .unwrap();
    assert_eq!(
        feed(&p, &b, UAC, 0, &mut r).disposition,
        Disposition::Replied(420)
    );
    assert!(text(&r.take()[0].1).contains("Unsupported: noProxiesSupportThis"));
    let b = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/rfc4475/unkscm.dat"
    ))
    .unwrap();
    assert_eq!(
        feed(&p, &b, UAC, 0, &mut r).disposition,
        Disposition::Replied(416)
    );
    let b = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/rfc4475/zeromf.dat"
    ))
    .unwrap();
    assert_eq!(
        feed(&p, &b, UAC, 0, &mut r).disposition,
        Disposition::Replied(483)
    );
    // the Request-URI names this proxy and there is nowhere else to go
    let own = req("OPTIONS", "z9hG4bK-x", 1, None, "");
    assert_eq!(
        feed(&p, &own, UAC, 0, &mut r).disposition,
        Disposition::Replied(404)
    );
}

#[test]
fn names_off_answers_a_named_destination_404_and_routes_ip_literals() {
    let mut c = ProxyConfig::new(
        Mode::Stateless,
        Local {
            host: "10.0.0.9".into(),
            port: 5060,
        },
    );
    c.resolve_names = false;
    let p = Proxy::new(c);
    let mut r = Rec::default();
    let to = |uri: &str| {
        String::from_utf8(req("OPTIONS", "z9hG4bK-n", 1, None, ""))
            .unwrap()
            .replacen("sip:service@10.0.0.9:5060", uri, 1)
            .into_bytes()
    };
    assert_eq!(
        feed(&p, &to("sip:bob@example.com"), UAC, 0, &mut r).disposition,
        Disposition::Replied(404)
    );
    assert_eq!(
        feed(&p, &to("sip:bob@10.0.0.2:5062"), UAC, 0, &mut r).disposition,
        Disposition::Forwarded
    );
}

#[test]
fn loose_and_strict_routing() {
    let mut c = ProxyConfig::new(
        Mode::Stateless,
        Local {
            host: "10.0.0.9".into(),
            port: 5060,
        },
    );
    c.next_hop = None;
    let p = Proxy::new(c);
    let mut r = Rec::default();
    let m = req(
        "BYE",
        "z9hG4bK-r1",
        2,
        Some("t1"),
        "Route: <sip:10.0.0.9:5060;lr>, <sip:10.0.0.7:5070;lr>\r\n",
    );
    assert_eq!(
        feed(&p, &m, UAC, 0, &mut r).disposition,
        Disposition::Forwarded
    );
    let (to, fwd) = r.take().remove(0);
    assert_eq!(to.addr, "10.0.0.7:5070".parse().unwrap());
    let f = Message::parse(&fwd).unwrap();
    assert_eq!(f.routes().len(), 1);
    assert_eq!(f.routes()[0].uri.of(&fwd), b"sip:10.0.0.7:5070;lr");
    // strict next hop: it becomes the Request-URI, the old one is appended
    let m = req(
        "BYE",
        "z9hG4bK-r2",
        3,
        Some("t1"),
        "Route: <sip:10.0.0.7:5070>\r\n",
    );
    feed(&p, &m, UAC, 0, &mut r);
    let (to, fwd) = r.take().remove(0);
    assert_eq!(to.addr, "10.0.0.7:5070".parse().unwrap());
    let t = text(&fwd);
    assert!(t.starts_with("BYE sip:10.0.0.7:5070 SIP/2.0"), "{t}");
    assert!(t.contains("Route: <sip:service@10.0.0.9:5060>"), "{t}");
    // a strict next hop's URI headers stay out of the Request-URI, where
    // they are not allowed (§19.1.1): the forwarded request parses
    let m = req(
        "BYE",
        "z9hG4bK-r3",
        4,
        Some("t1"),
        "Route: <sip:10.0.0.7:5070?Subject=hi>\r\n",
    );
    feed(&p, &m, UAC, 0, &mut r);
    let (to, fwd) = r.take().remove(0);
    assert_eq!(to.addr, "10.0.0.7:5070".parse().unwrap());
    let t = text(&fwd);
    assert!(t.starts_with("BYE sip:10.0.0.7:5070 SIP/2.0"), "{t}");
    Message::parse(&fwd).expect("the forwarded request parses");
    // a `?` in the user part is part of the user (user-unreserved), not the
    // start of the header component (found by the proxy fuzz target)
    for (n, route) in [
        (5, "<sip:a?b@10.0.0.7:5070>"),
        (6, "<sip:a?b@10.0.0.7:5070?Subject=hi>"),
    ] {
        let m = req(
            "BYE",
            &format!("z9hG4bK-r{n}"),
            n,
            Some("t1"),
            &format!("Route: {route}\r\n"),
        );
        feed(&p, &m, UAC, 0, &mut r);
        let (to, fwd) = r.take().remove(0);
        assert_eq!(to.addr, "10.0.0.7:5070".parse().unwrap());
        let t = text(&fwd);
        assert!(t.starts_with("BYE sip:a?b@10.0.0.7:5070 SIP/2.0"), "{t}");
        Message::parse(&fwd).expect("the forwarded request parses");
    }
}

#[test]
fn stateful_invite_call_flow() {
    let p = proxy(Mode::Stateful);
    let mut r = Rec::default();
    let inv = req("INVITE", "z9hG4bK-c1", 1, None, "");
    assert_eq!(
        feed(&p, &inv, UAC, 0, &mut r).disposition,
        Disposition::Forwarded
    );
    let sent = r.take();
    assert_eq!(sent.len(), 2);
    assert_eq!(status(&sent[0].1), Some(100));
    assert_eq!(sent[0].0.addr, UAC.parse().unwrap());
    let fwd = sent[1].1.clone();
    assert_eq!(p.transactions(), 1);
    // a retransmitted INVITE is absorbed and answered with the 100 again
    assert_eq!(
        feed(&p, &inv, UAC, 10 * MS, &mut r).disposition,
        Disposition::Absorbed
    );
    let sent = r.take();
    assert_eq!(sent.len(), 1);
    assert_eq!(status(&sent[0].1), Some(100));
    // 100 from downstream is not forwarded, 180 and 200 are
    assert_eq!(
        feed(&p, &resp(&fwd, 100, ""), UAS, 20 * MS, &mut r).disposition,
        Disposition::Absorbed
    );
    assert_eq!(
        feed(&p, &resp(&fwd, 180, "u1"), UAS, 30 * MS, &mut r).disposition,
        Disposition::Forwarded
    );
    let ok = resp(&fwd, 200, "u1");
    assert_eq!(
        feed(&p, &ok, UAS, 40 * MS, &mut r).disposition,
        Disposition::Forwarded
    );
    let sent = r.take();
    assert_eq!(
        sent.iter().map(|s| status(&s.1)).collect::<Vec<_>>(),
        [Some(180), Some(200)]
    );
    // a 200 retransmission is forwarded too (RFC 6026 Accepted)
    assert_eq!(
        feed(&p, &ok, UAS, 50 * MS, &mut r).disposition,
        Disposition::Forwarded
    );
    r.take();
    // the ACK for the 2xx is its own transaction: forwarded statelessly
    let ack = req("ACK", "z9hG4bK-c2", 1, Some("u1"), "");
    assert_eq!(
        feed(&p, &ack, UAC, 60 * MS, &mut r).disposition,
        Disposition::Forwarded
    );
    assert_eq!(method(&r.take()[0].1), Some(Method::Ack));
    // BYE and its 200; the retransmitted 200 is absorbed
    let bye = req("BYE", "z9hG4bK-c3", 2, Some("u1"), "");
    feed(&p, &bye, UAC, 70 * MS, &mut r);
    let fwd_bye = r.take().remove(0).1;
    let ok_bye = resp(&fwd_bye, 200, "u1");
    assert_eq!(
        feed(&p, &ok_bye, UAS, 80 * MS, &mut r).disposition,
        Disposition::Forwarded
    );
    assert_eq!(
        feed(&p, &ok_bye, UAS, 90 * MS, &mut r).disposition,
        Disposition::Absorbed
    );
    // retransmitted BYE answered from the transaction
    assert_eq!(
        feed(&p, &bye, UAC, 95 * MS, &mut r).disposition,
        Disposition::Absorbed
    );
    let sent = r.take();
    assert_eq!(status(&sent.last().unwrap().1), Some(200));
    // everything ends: K (5 s), J and L (32 s)
    p.tick(40_000 * MS, &mut r);
    assert_eq!(p.transactions(), 0);
}

#[test]
fn timer_a_doubles_and_b_answers_408() {
    let p = proxy(Mode::Stateful);
    let mut r = Rec::default();
    let inv = req("INVITE", "z9hG4bK-t1", 1, None, "");
    feed(&p, &inv, UAC, 0, &mut r);
    r.take();
    let mut retx = Vec::new();
    let mut now = 0;
    while now <= 32_000 * MS {
        now += 50 * MS;
        p.tick(now, &mut r);
        for (to, b) in r.take() {
            if method(&b) == Some(Method::Invite) {
                assert_eq!(to.addr, UAS.parse().unwrap());
                retx.push(now / MS);
            } else {
                assert_eq!(status(&b), Some(408));
                assert_eq!(to.addr, UAC.parse().unwrap());
                assert_eq!(now, 32_000 * MS);
            }
        }
    }
    // A: 0.5, 1.5, 3.5, 7.5, 15.5, 31.5 s
    assert_eq!(retx, [500, 1500, 3500, 7500, 15500, 31500]);
    // G retransmits the 408 until the ACK; the ACK is absorbed
    now += 600 * MS;
    p.tick(now, &mut r);
    let g = r.take();
    assert_eq!(g.len(), 1);
    assert_eq!(status(&g[0].1), Some(408));
    let to_tag = Message::parse(&g[0].1).unwrap().to_tag().unwrap().to_vec();
    let ack = req(
        "ACK",
        "z9hG4bK-t1",
        1,
        Some(std::str::from_utf8(&to_tag).unwrap()),
        "",
    );
    assert_eq!(
        feed(&p, &ack, UAC, now, &mut r).disposition,
        Disposition::Absorbed
    );
    assert!(r.take().is_empty());
    p.tick(now + 10_000 * MS, &mut r);
    assert!(r.take().is_empty());
    assert_eq!(p.transactions(), 0);
}

#[test]
fn timer_e_caps_at_t2_and_f_times_out() {
    let p = proxy(Mode::Stateful);
    let mut r = Rec::default();
    feed(
        &p,
        &req("OPTIONS", "z9hG4bK-e1", 1, None, ""),
        UAC,
        0,
        &mut r,
    );
    r.take();
    let mut retx = Vec::new();
    let mut got408 = false;
    let mut now = 0;
    while now < 33_000 * MS {
        now += 50 * MS;
        p.tick(now, &mut r);
        for (_, b) in r.take() {
            match status(&b) {
                Some(408) => got408 = true,
                _ => retx.push(now / MS),
            }
        }
    }
    assert_eq!(&retx[..5], [500, 1500, 3500, 7500, 11500]);
    assert!(got408);
    p.tick(now + 40_000 * MS, &mut r);
    assert_eq!(p.transactions(), 0);
}

#[test]
fn non_2xx_gets_hop_by_hop_ack_and_503_becomes_500() {
    let p = proxy(Mode::Stateful);
    let mut r = Rec::default();
    let inv = req("INVITE", "z9hG4bK-n1", 1, None, "");
    feed(&p, &inv, UAC, 0, &mut r);
    let fwd = r.take().remove(1).1;
    let busy = resp(&fwd, 503, "u9");
    assert_eq!(
        feed(&p, &busy, UAS, MS, &mut r).disposition,
        Disposition::Forwarded
    );
    let sent = r.take();
    let ack = sent
        .iter()
        .find(|s| method(&s.1) == Some(Method::Ack))
        .expect("ACK downstream");
    assert_eq!(ack.0.addr, UAS.parse().unwrap());
    let am = Message::parse(&ack.1).unwrap();
    let fm = Message::parse(&fwd).unwrap();
    assert_eq!(
        am.top_via().branch.unwrap().of(&ack.1),
        fm.top_via().branch.unwrap().of(&fwd)
    );
    assert_eq!(am.to_tag(), Some(&b"u9"[..]));
    let up = sent.iter().find(|s| s.1.starts_with(b"SIP/2.0")).unwrap();
    assert_eq!(status(&up.1), Some(500));
    // the retransmitted 503 is absorbed, the ACK resent
    assert_eq!(
        feed(&p, &busy, UAS, 2 * MS, &mut r).disposition,
        Disposition::Absorbed
    );
    let sent = r.take();
    assert_eq!(sent.len(), 1);
    assert_eq!(method(&sent[0].1), Some(Method::Ack));
    // upstream ACK (same branch as the INVITE) ends the server side
    let ack_up = req("ACK", "z9hG4bK-n1", 1, Some("u9"), "");
    assert_eq!(
        feed(&p, &ack_up, UAC, 3 * MS, &mut r).disposition,
        Disposition::Absorbed
    );
    assert!(r.take().is_empty());
}

#[test]
fn cancel_before_and_after_provisional() {
    let p = proxy(Mode::Stateful);
    let mut r = Rec::default();
    // after a provisional: CANCEL goes downstream at once
    let inv = req("INVITE", "z9hG4bK-k1", 1, None, "");
    feed(&p, &inv, UAC, 0, &mut r);
    let fwd = r.take().remove(1).1;
    feed(&p, &resp(&fwd, 180, "u1"), UAS, MS, &mut r);
    r.take();
    let cancel = req("CANCEL", "z9hG4bK-k1", 1, None, "");
    assert_eq!(
        feed(&p, &cancel, UAC, 2 * MS, &mut r).disposition,
        Disposition::Replied(200)
    );
    let sent = r.take();
    assert_eq!(status(&sent[0].1), Some(200));
    assert_eq!(method(&sent[1].1), Some(Method::Cancel));
    let fwd_cancel = sent[1].1.clone();
    let fb = Message::parse(&fwd).unwrap();
    let cb = Message::parse(&fwd_cancel).unwrap();
    assert_eq!(
        cb.top_via().branch.unwrap().of(&fwd_cancel),
        fb.top_via().branch.unwrap().of(&fwd)
    );
    assert_eq!(
        feed(&p, &resp(&fwd_cancel, 200, "u1"), UAS, 3 * MS, &mut r).disposition,
        Disposition::Absorbed
    );
    let terminated = resp(&fwd, 487, "u1");
    assert_eq!(
        feed(&p, &terminated, UAS, 4 * MS, &mut r).disposition,
        Disposition::Forwarded
    );
    let sent = r.take();
    assert!(sent.iter().any(|s| status_or_none(&s.1) == Some(487)));
    assert!(sent.iter().any(|s| method(&s.1) == Some(Method::Ack)));

    // before any provisional: held until the first one
    let inv = req("INVITE", "z9hG4bK-k2", 1, None, "");
    feed(&p, &inv, UAC, 0, &mut r);
    let fwd = r.take().remove(1).1;
    feed(
        &p,
        &req("CANCEL", "z9hG4bK-k2", 1, None, ""),
        UAC,
        MS,
        &mut r,
    );
    let sent = r.take();
    assert_eq!(sent.len(), 1, "only the 200 to the CANCEL");
    feed(&p, &resp(&fwd, 180, "u2"), UAS, 2 * MS, &mut r);
    let sent = r.take();
    assert!(sent
        .iter()
        .any(|s| method_or_none(&s.1) == Some(Method::Cancel)));
}

fn status_or_none(b: &[u8]) -> Option<u16> {
    Message::parse(b).ok().and_then(|m| m.status())
}

fn method_or_none(b: &[u8]) -> Option<Method> {
    Message::parse(b).ok().and_then(|m| m.method())
}

#[test]
fn timer_c_cancels_a_ringing_branch() {
    let p = proxy(Mode::Stateful);
    let mut r = Rec::default();
    feed(
        &p,
        &req("INVITE", "z9hG4bK-cc", 1, None, ""),
        UAC,
        0,
        &mut r,
    );
    let fwd = r.take().remove(1).1;
    feed(&p, &resp(&fwd, 180, "u1"), UAS, MS, &mut r);
    r.take();
    p.tick(100_000 * MS, &mut r);
    assert!(r.take().is_empty());
    p.tick(182_000 * MS, &mut r);
    let sent = r.take();
    assert_eq!(sent.len(), 1);
    assert_eq!(method(&sent[0].1), Some(Method::Cancel));
}

#[test]
fn overload_sheds_new_invites_only() {
    let p = proxy(Mode::Stateful);
    let mut r = Rec::default();
    let inv = req("INVITE", "z9hG4bK-s1", 1, None, "");
    let o = feed_delay(&p, &inv, UAC, 0, 300 * MS, &mut r);
    assert_eq!(o.disposition, Disposition::Shed);
    let sent = r.take();
    assert_eq!(sent.len(), 1);
    assert_eq!(status(&sent[0].1), Some(503));
    assert!(text(&sent[0].1).contains("Retry-After: 5\r\n"));
    // no record was made: a retransmission is shed again
    assert_eq!(p.transactions(), 0);
    // the ACK to the 503 ends here, recognised by its tag
    let tag = Message::parse(&sent[0].1)
        .unwrap()
        .to_tag()
        .unwrap()
        .to_vec();
    assert!(tag.starts_with(b"taks"), "{tag:?}");
    let ack = req(
        "ACK",
        "z9hG4bK-s1",
        1,
        Some(std::str::from_utf8(&tag).unwrap()),
        "",
    );
    assert_eq!(
        feed(&p, &ack, UAC, 0, &mut r).disposition,
        Disposition::AbsorbedShed
    );
    assert!(r.take().is_empty());
    // an ACK with a shed-like tag that is not ours goes on
    let forged = req("ACK", "z9hG4bK-s1", 1, Some("taks0000000000000000"), "");
    assert_eq!(
        feed(&p, &forged, UAC, 0, &mut r).disposition,
        Disposition::Forwarded
    );
    r.take();
    // an in-dialog request at the same delay goes through
    let bye = req("BYE", "z9hG4bK-s2", 2, Some("u1"), "");
    assert_eq!(
        feed_delay(&p, &bye, UAC, 0, 500 * MS, &mut r).disposition,
        Disposition::Forwarded
    );
}

/// Past the drop delay (T1 by default) a new INVITE is dropped without an
/// answer; a retransmission of an INVITE the proxy holds is still
/// absorbed, and in-dialog requests still go through.
#[test]
fn overload_drops_new_invites_that_waited_past_t1() {
    let p = proxy(Mode::Stateful);
    let mut r = Rec::default();
    assert_eq!(ShedPolicy::default().drop_delay_ns, 500 * MS);
    let inv = req("INVITE", "z9hG4bK-d1", 1, None, "");
    let o = feed_delay(&p, &inv, UAC, 0, 501 * MS, &mut r);
    assert_eq!(o.disposition, Disposition::DroppedLate);
    assert!(r.take().is_empty());
    assert_eq!(p.transactions(), 0);
    // held: a late retransmission is absorbed (its 100 Trying again)
    let held = req("INVITE", "z9hG4bK-d2", 1, None, "");
    assert_eq!(
        feed(&p, &held, UAC, 0, &mut r).disposition,
        Disposition::Forwarded
    );
    r.take();
    let o = feed_delay(&p, &held, UAC, MS, 900 * MS, &mut r);
    assert_eq!(o.disposition, Disposition::Absorbed);
    assert_eq!(status(&r.take()[0].1), Some(100));
    let bye = req("BYE", "z9hG4bK-d3", 2, Some("u1"), "");
    assert_eq!(
        feed_delay(&p, &bye, UAC, 0, 900 * MS, &mut r).disposition,
        Disposition::Forwarded
    );
}

/// Between the ramp's start and the full-shed delay the share of new
/// INVITEs shed rises linearly; each transaction's decision is the same
/// every time (its retransmissions are treated alike); in-dialog requests
/// are never shed.
#[test]
fn shedding_ramps_up_with_the_queue_delay() {
    let pol = ShedPolicy::default();
    assert_eq!(pol.queue_delay_ramp_ns, 100 * MS);
    assert_eq!(pol.queue_delay_ns, 300 * MS);
    assert_eq!(pol.shed_share(100 * MS), 0.0);
    assert_eq!(pol.shed_share(300 * MS), 1.0);
    assert!((pol.shed_share(200 * MS) - 0.5).abs() < 1e-9);
    let keys = |n: u64| (0..n).map(|i| branch::Fnv::default().num(i).finish());
    for (delay, share) in [
        (50 * MS, 0.0),
        (150 * MS, 0.25),
        (250 * MS, 0.75),
        (400 * MS, 1.0),
    ] {
        let shed = keys(20_000).filter(|&k| pol.sheds(delay, k)).count() as f64 / 20_000.0;
        assert!((shed - share).abs() < 0.02, "{delay}: {shed} vs {share}");
    }
    for k in keys(1_000) {
        assert_eq!(pol.sheds(180 * MS, k), pol.sheds(180 * MS, k));
        // a higher delay never un-sheds a transaction
        assert!(!pol.sheds(180 * MS, k) || pol.sheds(220 * MS, k));
    }

    // through the proxy: at half-way about half of the new INVITEs get a 503,
    // an INVITE's retransmission gets what its first copy got
    let p = proxy(Mode::Stateful);
    let mut r = Rec::default();
    let mut shed = 0;
    for i in 0..400 {
        let inv = req("INVITE", &format!("z9hG4bK-r{i}"), 1, None, "");
        let o = feed_delay(&p, &inv, UAC, 0, 200 * MS, &mut r);
        let again = feed_delay(&p, &inv, UAC, MS, 200 * MS, &mut r);
        if o.disposition == Disposition::Shed {
            shed += 1;
            assert_eq!(again.disposition, Disposition::Shed, "{i}");
        } else {
            assert_ne!(again.disposition, Disposition::Shed, "{i}");
        }
        r.take();
    }
    assert!((150..250).contains(&shed), "{shed} of 400 shed at half-way");
    let bye = req("BYE", "z9hG4bK-rb", 2, Some("u1"), "");
    assert_eq!(
        feed_delay(&p, &bye, UAC, 0, 280 * MS, &mut r).disposition,
        Disposition::Forwarded
    );
}

/// The configuration of a stateful proxy whose table is one shard of
/// `max_transactions` records.
fn one_shard_of(max_transactions: usize) -> ProxyConfig {
    let mut c = ProxyConfig::new(
        Mode::Stateful,
        Local {
            host: "10.0.0.9".into(),
            port: 5060,
        },
    );
    c.next_hop = Some(udp(UAS));
    c.shards = 1;
    c.max_transactions = max_transactions;
    c
}

#[test]
fn full_table_sheds_invites_and_passes_others() {
    let mut c = one_shard_of(1);
    c.shed.table_high_water = 10.0; // only the hard bound
    let p = Proxy::new(c);
    let mut r = Rec::default();
    assert_eq!(
        feed(
            &p,
            &req("INVITE", "z9hG4bK-f1", 1, None, ""),
            UAC,
            0,
            &mut r
        )
        .disposition,
        Disposition::Forwarded
    );
    r.take();
    assert_eq!(
        feed(
            &p,
            &req("INVITE", "z9hG4bK-f2", 1, None, ""),
            UAC,
            0,
            &mut r
        )
        .disposition,
        Disposition::Shed
    );
    assert_eq!(status(&r.take()[0].1), Some(503));
    assert_eq!(
        feed(
            &p,
            &req("BYE", "z9hG4bK-f3", 2, Some("x"), ""),
            UAC,
            0,
            &mut r
        )
        .disposition,
        Disposition::Forwarded
    );
    assert_eq!(p.transactions(), 1);
}

/// One whole call (INVITE, 200, ACK, BYE, 200) through `p` at `now`; its
/// INVITE's disposition.
fn whole_call(p: &Proxy, n: u32, now: u64, r: &mut Rec) -> Disposition {
    let inv = req("INVITE", &format!("z9hG4bK-w{n}i"), 1, None, "");
    let d = feed(p, &inv, UAC, now, r).disposition;
    if d != Disposition::Forwarded {
        r.take();
        return d;
    }
    let fwd = r.take().pop().expect("forwarded").1;
    feed(p, &resp(&fwd, 200, "u1"), UAS, now, r);
    feed(
        p,
        &req("ACK", &format!("z9hG4bK-w{n}a"), 1, Some("u1"), ""),
        UAC,
        now,
        r,
    );
    r.take();
    let bye = req("BYE", &format!("z9hG4bK-w{n}b"), 2, Some("u1"), "");
    feed(p, &bye, UAC, now, r);
    let fwd_bye = r.take().pop().expect("forwarded").1;
    feed(p, &resp(&fwd_bye, 200, "u1"), UAS, now, r);
    r.take();
    d
}

#[test]
fn lingering_transactions_give_way_to_new_calls_live_ones_never() {
    let p = Proxy::new(one_shard_of(4));
    let mut r = Rec::default();
    // 20 calls within a second: each leaves its INVITE (Accepted, Timer L)
    // and its BYE (Completed, Timer J) lingering for 32 s, 40 records for
    // a table of 4: every call is still served
    for n in 0..20 {
        assert_eq!(
            whole_call(&p, n, u64::from(n) * MS, &mut r),
            Disposition::Forwarded,
            "call {n}"
        );
    }
    assert_eq!(p.transactions(), 4);
    assert_eq!(p.transactions_reclaimed_hint(), 36);
    // a BYE retransmitted after its record was reclaimed goes on as new
    let bye = req("BYE", "z9hG4bK-w0b", 2, Some("u1"), "");
    assert_eq!(
        feed(&p, &bye, UAC, 30 * MS, &mut r).disposition,
        Disposition::Forwarded
    );
    assert_eq!(method(&r.take().pop().unwrap().1), Some(Method::Bye));
    // with that BYE in progress, three calls in progress fill the table
    // (four live records): the next INVITE is shed
    for n in 0..3 {
        let inv = req("INVITE", &format!("z9hG4bK-live{n}"), 1, None, "");
        assert_eq!(
            feed(&p, &inv, UAC, 40 * MS, &mut r).disposition,
            Disposition::Forwarded,
            "live call {n}"
        );
    }
    r.take();
    let inv = req("INVITE", "z9hG4bK-live3", 1, None, "");
    assert_eq!(
        feed(&p, &inv, UAC, 50 * MS, &mut r).disposition,
        Disposition::Shed
    );
    assert_eq!(status(&r.take()[0].1), Some(503));
}

#[test]
fn a_final_response_that_cannot_be_forwarded_is_answered_by_the_proxy() {
    let p = proxy(Mode::Stateful);
    let mut r = Rec::default();
    let inv = req("INVITE", "z9hG4bK-u1", 1, None, "");
    feed(&p, &inv, UAC, 0, &mut r);
    let fwd = r.take().pop().unwrap().1;
    // the next hop's 486 lost the caller's Via: only ours is left, so
    // there is nowhere upstream to pass it (RFC 3261 §16.7 step 3)
    let full = text(&resp(&fwd, 486, "u1"));
    let busy: String = full
        .split_inclusive("\r\n")
        .filter(|l| !l.contains("z9hG4bK-u1"))
        .collect();
    assert_eq!(busy.matches("Via:").count(), 1, "{busy}");
    feed(&p, busy.as_bytes(), UAS, 10 * MS, &mut r);
    let sent = r.take();
    // the hop-by-hop ACK downstream, and the proxy's own 500 upstream
    let up: Vec<_> = sent
        .iter()
        .filter(|(to, _)| to.addr == UAC.parse().unwrap())
        .collect();
    assert_eq!(up.len(), 1, "{sent:?}");
    assert_eq!(status(&up[0].1), Some(500));
    // Timer G retransmits that response, never an empty one
    p.tick(10 * MS + 500 * MS, &mut r);
    let again = r.take();
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].1, up[0].1);
}

#[test]
fn large_requests_switch_to_tcp_or_get_513() {
    let big = "X-Pad: ".to_string() + &"a".repeat(1400) + "\r\n";
    let p = proxy(Mode::Stateless);
    let mut r = Rec::default();
    feed(
        &p,
        &req("MESSAGE", "z9hG4bK-b1", 1, None, &big),
        UAC,
        0,
        &mut r,
    );
    let (to, fwd) = r.take().remove(0);
    assert_eq!(to.transport, Transport::Tcp);
    assert!(text(&fwd).contains("Via: SIP/2.0/TCP 10.0.0.9:5060"));
    let mut c = ProxyConfig::new(
        Mode::Stateless,
        Local {
            host: "10.0.0.9".into(),
            port: 5060,
        },
    );
    c.next_hop = Some(udp(UAS));
    c.tcp = false;
    let p = Proxy::new(c);
    assert_eq!(
        feed(
            &p,
            &req("MESSAGE", "z9hG4bK-b2", 1, None, &big),
            UAC,
            0,
            &mut r
        )
        .disposition,
        Disposition::Replied(513)
    );
}

#[test]
fn malformed_requests_get_400_or_are_dropped() {
    let p = proxy(Mode::Stateless);
    let mut r = Rec::default();
    let mut bad = req("INVITE", "z9hG4bK-m1", 1, None, "Max-Forwards: 300\r\n");
    let o = feed(&p, &bad, UAC, 0, &mut r);
    assert_eq!(o.disposition, Disposition::Replied(400));
    assert!(o.error.is_some());
    let sent = r.take();
    assert_eq!(status(&sent[0].1), Some(400));
    bad.truncate(20);
    assert_eq!(
        feed(&p, &bad, UAC, 0, &mut r).disposition,
        Disposition::DroppedMalformed
    );
    assert_eq!(
        feed(&p, b"\x00\x01garbage", UAC, 0, &mut r).disposition,
        Disposition::DroppedMalformed
    );
    let b = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/rfc4475/badvers.dat"
    ))
    .unwrap();
    assert_eq!(
        feed(&p, &b, UAC, 0, &mut r).disposition,
        Disposition::Replied(505)
    );
}

#[test]
fn defects_in_passed_on_headers_are_forwarded_unchanged() {
    // RFC 3261 §16.3 step 1: a proxy ignores components it does not use
    // and forwards them unchanged (RFC 4475 regbadct: a Contact with
    // parameters but no angle brackets; baddate: a non-GMT Date)
    for name in ["regbadct", "baddate"] {
        let b = std::fs::read(format!(
            "{}/tests/fixtures/rfc4475/{name}.dat",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        assert!(Message::parse(&b).is_err(), "{name}");
        for mode in [Mode::Stateless, Mode::Stateful] {
            let p = proxy(mode);
            let mut s = Scratch::new();
            let mut r = Vec::new();
            let o = p.handle(
                &Inbound {
                    bytes: &b,
                    from: udp(UAC),
                    now: 0,
                    queue_delay_ns: 0,
                },
                &mut s,
                &mut Raw(&mut r),
            );
            assert_eq!(o.disposition, Disposition::Forwarded, "{name} {mode:?}");
            let fwd = r.last().unwrap();
            let m = Message::parse_proxy(fwd).unwrap();
            let orig = Message::parse_proxy(&b).unwrap();
            // the defective value goes on byte for byte
            let bad = orig.check_deferred().unwrap_err();
            let crate::wire::ParseError::Value { header, .. } = bad else {
                panic!("{bad:?}")
            };
            assert_eq!(m.header(header), orig.header(header), "{name}");
            assert_eq!(
                m.check_deferred().map_err(|e| match e {
                    crate::wire::ParseError::Value { header, error, .. } => (header, error),
                    e => panic!("{e:?}"),
                }),
                Err(match bad {
                    crate::wire::ParseError::Value { header, error, .. } => (header, error),
                    _ => unreachable!(),
                })
            );
        }
    }
}

struct Raw<'a>(&'a mut Vec<Vec<u8>>);

impl Sink for Raw<'_> {
    fn send(&mut self, _: &Target, b: &[u8]) -> Result<(), SendError> {
        self.0.push(b.to_vec());
        Ok(())
    }
}

#[test]
fn every_fixture_is_handled_without_panic() {
    for mode in [Mode::Stateless, Mode::Stateful] {
        let p = proxy(mode);
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/rfc4475");
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "dat") {
                let b = std::fs::read(&path).unwrap();
                // answers to invalid messages copy their (invalid) headers,
                // so this sink does not insist on parsing what it gets
                let mut s = Scratch::new();
                p.handle(
                    &Inbound {
                        bytes: &b,
                        from: udp(UAC),
                        now: 0,
                        queue_delay_ns: 0,
                    },
                    &mut s,
                    &mut Discard,
                );
            }
        }
        p.tick(u64::MAX / 2, &mut Discard);
    }
}

struct Discard;

impl Sink for Discard {
    fn send(&mut self, _: &Target, _: &[u8]) -> Result<(), SendError> {
        Ok(())
    }
}

#[test]
fn auto_shard_count_is_two_per_worker() {
    assert_eq!(ProxyConfig::auto_shards(0), 2);
    assert_eq!(ProxyConfig::auto_shards(1), 2);
    assert_eq!(ProxyConfig::auto_shards(2), 4);
    assert_eq!(ProxyConfig::auto_shards(3), 8);
    assert_eq!(ProxyConfig::auto_shards(1000), 64);
    // a proxy made directly with the default (0) works with its own count
    let mut c = proxy(Mode::Stateful).config().clone();
    c.shards = 0;
    let p = Proxy::new(c);
    let mut r = Rec::default();
    let o = feed(
        &p,
        &req("INVITE", "z9hG4bK-s1", 1, None, ""),
        UAC,
        0,
        &mut r,
    );
    assert_eq!(o.disposition, Disposition::Forwarded);
    assert_eq!(p.transactions(), 1);
}

#[test]
fn an_unstamped_top_via_is_forwarded_as_it_came() {
    // sent-by is the source address and no rport: nothing to add (§18.2.1),
    // so the line goes out byte for byte, compact name and spacing included
    let inv = b"INVITE sip:service@10.0.0.9:5060 SIP/2.0\r\n\
v:  SIP/2.0/UDP 10.0.0.1:5061;branch=z9hG4bK-v1\r\n\
From: <sip:a@10.0.0.1>;tag=f\r\n\
To: <sip:service@10.0.0.9:5060>\r\n\
Call-ID: c-verbatim\r\n\
CSeq: 1 INVITE\r\n\
Content-Length: 0\r\n\r\n";
    for mode in [Mode::Stateless, Mode::Stateful] {
        let p = proxy(mode);
        let mut r = Rec::default();
        feed(&p, inv, UAC, 0, &mut r);
        let sent = r.take();
        let (_, fwd) = sent.last().expect("forwarded");
        let t = text(fwd);
        assert!(
            t.contains("\r\nv:  SIP/2.0/UDP 10.0.0.1:5061;branch=z9hG4bK-v1\r\n"),
            "{t}"
        );
        // from another address the same Via gets received=
        let p = proxy(mode);
        feed(&p, inv, "10.0.0.7:5061", 0, &mut r);
        let sent = r.take();
        let t = text(&sent.last().expect("forwarded").1);
        assert!(
            t.contains("SIP/2.0/UDP 10.0.0.1:5061;branch=z9hG4bK-v1;received=10.0.0.7\r\n"),
            "{t}"
        );
    }
}

/// Notes the ranges it is given instead of sending (as the batched
/// transport does).
#[derive(Default)]
struct Ranges(Vec<(Target, std::ops::Range<usize>)>);

impl Sink for Ranges {
    fn send(&mut self, _: &Target, _: &[u8]) -> Result<(), SendError> {
        panic!("a deferring sink gets ranges");
    }
    fn send_range(
        &mut self,
        to: &Target,
        _: &[u8],
        range: std::ops::Range<usize>,
    ) -> Result<(), SendError> {
        self.0.push((*to, range));
        Ok(())
    }
}

#[test]
fn held_output_survives_the_next_message_and_its_refusal() {
    let p = proxy(Mode::Stateless);
    let mut s = Scratch::new();
    let mut sink = Ranges::default();
    let inb = |bytes| Inbound {
        bytes,
        from: udp(UAC),
        now: 0,
        queue_delay_ns: 0,
    };
    let inv = req("INVITE", "z9hG4bK-h1", 1, None, "");
    p.handle(&inb(&inv), &mut s, &mut sink);
    s.hold();
    // a request refused halfway (483: its output is discarded and redone)
    let dead = req("OPTIONS", "z9hG4bK-h2", 1, None, "Max-Forwards: 0\r\n");
    p.handle(&inb(&dead), &mut s, &mut sink);
    s.hold();
    // and a malformed one, answered 400
    let bad = req("INVITE", "z9hG4bK-h3", 1, None, "Max-Forwards: 300\r\n");
    p.handle(&inb(&bad), &mut s, &mut sink);
    let got: Vec<_> = sink
        .0
        .iter()
        .map(|(_, r)| Message::parse(&s.output()[r.clone()]).expect("intact"))
        .map(|m| (m.method(), m.status()))
        .collect();
    assert_eq!(
        got,
        [
            (Some(Method::Invite), None),
            (None, Some(483)),
            (None, Some(400))
        ]
    );
    s.release();
    assert!(s.output().is_empty());
}

/// A sink whose transports fail on demand: TCP refuses, UDP may refuse
/// datagrams over a size; everything that goes is recorded.
struct Failing {
    rec: Rec,
    tcp: Option<SendError>,
    udp_max: usize,
}

impl Failing {
    fn new(tcp: Option<SendError>) -> Failing {
        Failing {
            rec: Rec::default(),
            tcp,
            udp_max: usize::MAX,
        }
    }
}

impl Sink for Failing {
    fn send(&mut self, to: &Target, bytes: &[u8]) -> Result<(), SendError> {
        match to.transport {
            Transport::Tcp => {
                if let Some(e) = self.tcp {
                    return Err(e);
                }
            }
            Transport::Udp if bytes.len() > self.udp_max => return Err(SendError::TooLarge),
            Transport::Udp => {}
        }
        self.rec.send(to, bytes)
    }
}

fn stateful_to(next: Target) -> Proxy {
    let mut c = ProxyConfig::new(
        Mode::Stateful,
        Local {
            host: "10.0.0.9".into(),
            port: 5060,
        },
    );
    c.next_hop = Some(next);
    c.shards = 4;
    Proxy::new(c)
}

fn tcp(a: &str) -> Target {
    Target {
        transport: Transport::Tcp,
        ..udp(a)
    }
}

fn feed_to(p: &Proxy, bytes: &[u8], now: u64, sink: &mut dyn Sink) -> Outcome {
    p.handle(
        &Inbound {
            bytes,
            from: udp(UAC),
            now,
            queue_delay_ns: 0,
        },
        &mut Scratch::new(),
        sink,
    )
}

#[test]
fn a_refused_connection_is_a_503_from_the_branch_at_once() {
    // §16.9: the branch's 503 is the best response; §16.7 step 6 sends 500
    for method in ["INVITE", "OPTIONS"] {
        let p = stateful_to(tcp(UAS));
        let mut k = Failing::new(Some(SendError::Refused));
        let o = feed_to(&p, &req(method, "z9hG4bK-r1", 1, None, ""), 0, &mut k);
        assert_eq!(o.disposition, Disposition::SendFailed, "{method}");
        let sent = k.rec.take();
        let codes: Vec<_> = sent.iter().map(|(_, b)| status(b)).collect();
        let want: &[Option<u16>] = if method == "INVITE" {
            &[Some(100), Some(500)]
        } else {
            &[Some(500)]
        };
        assert_eq!(codes, want, "{method}");
        let last = text(&sent.last().unwrap().1);
        assert!(
            last.starts_with("SIP/2.0 500 Server Internal Error (next hop unreachable)\r\n"),
            "{last}"
        );
        assert!(sent.iter().all(|(to, _)| to.addr == udp(UAC).addr));
        // nothing more on the branch: no retransmission, no 408 at Timer B
        for now in (1..=70).map(|s| s * 500 * MS) {
            p.tick(now, &mut k);
        }
        assert!(
            k.rec
                .take()
                .iter()
                .all(|(to, b)| to.addr == udp(UAC).addr && status(b) == Some(500)),
            "only the 500's own retransmissions (Timer G) upstream: {method}"
        );
    }
}

#[test]
fn a_request_over_tcp_for_its_size_is_retried_over_udp_when_refused() {
    // §18.1.1
    let big = "X-Pad: ".to_string() + &"a".repeat(1400) + "\r\n";
    let p = stateful_to(udp(UAS));
    let mut k = Failing::new(Some(SendError::Refused));
    let o = feed_to(&p, &req("INVITE", "z9hG4bK-u1", 1, None, &big), 0, &mut k);
    assert_eq!(o.disposition, Disposition::Forwarded);
    let sent = k.rec.take();
    assert_eq!(status(&sent[0].1), Some(100));
    let (to, fwd) = &sent[1];
    assert_eq!(*to, udp(UAS));
    assert!(text(fwd).contains("Via: SIP/2.0/UDP 10.0.0.9:5060;branch="));
    // the record now retransmits over UDP (Timer A), the UDP rendering
    p.tick(500 * MS, &mut k);
    let retx = k.rec.take();
    assert_eq!(retx.len(), 1);
    assert_eq!(retx[0], (udp(UAS), fwd.clone()));
    // stateless: the same retry, nothing remembered
    let p = proxy(Mode::Stateless);
    let o = feed_to(&p, &req("MESSAGE", "z9hG4bK-u2", 1, None, &big), 0, &mut k);
    assert_eq!(o.disposition, Disposition::Forwarded);
    let sent = k.rec.take();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0, udp(UAS));
    // a connection that fails otherwise (a timeout) is not retried
    let p = stateful_to(udp(UAS));
    let mut k = Failing::new(Some(SendError::Unreachable));
    feed_to(&p, &req("INVITE", "z9hG4bK-u3", 1, None, &big), 0, &mut k);
    let codes: Vec<_> = k.rec.take().iter().map(|(_, b)| status(b)).collect();
    assert_eq!(codes, [Some(100), Some(500)]);
}

#[test]
fn no_transport_for_the_message_is_a_513() {
    let big = "X-Pad: ".to_string() + &"a".repeat(1400) + "\r\n";
    let p = stateful_to(udp(UAS));
    let mut k = Failing::new(Some(SendError::Refused));
    k.udp_max = 1300;
    feed_to(&p, &req("INVITE", "z9hG4bK-t1", 1, None, &big), 0, &mut k);
    let sent = k.rec.take();
    let codes: Vec<_> = sent.iter().map(|(_, b)| status(b)).collect();
    assert_eq!(codes, [Some(100), Some(513)]);
    assert!(text(&sent[1].1).starts_with("SIP/2.0 513 Message Too Large\r\n"));
}

#[test]
fn an_icmp_error_matched_to_its_branch_answers_at_once() {
    let p = stateful_to(udp(UAS));
    let mut r = Rec::default();
    feed(
        &p,
        &req("INVITE", "z9hG4bK-i1", 1, None, ""),
        UAC,
        0,
        &mut r,
    );
    let fwd = r.take().pop().unwrap().1;
    // an ICMP error quotes the start of the datagram only
    let quoted = &fwd[..fwd.len().min(300)];
    let uas = udp(UAS).addr;
    let elsewhere: SocketAddr = "10.0.0.3:5062".parse().unwrap();
    assert_eq!(
        p.bounced(quoted, elsewhere, SendError::Refused, MS, &mut r),
        None,
        "another destination"
    );
    // too short to hold the whole branch: not matched
    let t = text(&fwd);
    let via_start = t.find("\r\nVia: ").unwrap() + 2;
    let via_end = via_start + t[via_start..].find("\r\n").unwrap();
    assert_eq!(
        p.bounced(&fwd[..via_end - 3], uas, SendError::Refused, MS, &mut r),
        None
    );
    // a CANCEL or ACK on the branch does not fail it
    let cancel = String::from_utf8_lossy(quoted).replacen("INVITE", "CANCEL", 1);
    assert_eq!(
        p.bounced(cancel.as_bytes(), uas, SendError::Refused, MS, &mut r),
        None
    );
    assert!(r.take().is_empty());
    assert_eq!(
        p.bounced(quoted, uas, SendError::Refused, MS, &mut r),
        Some(500)
    );
    let sent = r.take();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0.addr, udp(UAC).addr);
    // once: a second error for the same branch finds it finished
    assert_eq!(
        p.bounced(quoted, uas, SendError::Refused, 2 * MS, &mut r),
        None
    );
    // stateless: nothing to match
    let s = proxy(Mode::Stateless);
    assert_eq!(s.bounced(quoted, uas, SendError::Refused, MS, &mut r), None);
}

/// More due timers than one batch: every one fires in the same tick
/// (the timer thread lets the shard's lock go between batches, and the
/// outcome is the same as one long hold).
#[test]
fn a_tick_runs_every_due_timer_in_batches() {
    let p = proxy(Mode::Stateful);
    let mut r = Rec::default();
    let n = 3 * super::stateful::TICK_BATCH + 7;
    for i in 0..n {
        let branch = format!("z9hG4bK-batch{i}");
        feed(&p, &req("OPTIONS", &branch, 1, None, ""), UAC, 0, &mut r);
    }
    r.take();
    assert_eq!(p.transactions(), n);
    // Timer E's first retransmission of each, all due at once
    assert_eq!(p.tick(600 * MS, &mut r), n);
    let retx = r.take();
    assert_eq!(retx.len(), n);
    assert!(retx.iter().all(|(to, _)| to.addr == UAS.parse().unwrap()));
    // Timer F: a 408 to each client, then J (32 s) ends them all
    p.tick(33_000 * MS, &mut r);
    let timeouts = r
        .take()
        .iter()
        .filter(|(_, b)| status(b) == Some(408))
        .count();
    assert_eq!(timeouts, n);
    p.tick(70_000 * MS, &mut r);
    assert_eq!(p.transactions(), 0);
}
