//! Cost of the proxy's message path without sockets: a SIPp-style call
//! (INVITE, 100, 180, 200, ACK, BYE, 200) through `Proxy::handle` with a
//! sink that only counts bytes. Prints ns per message by kind.
//!
//! `cargo run --release -p takt-sip --example path_cost -- [stateless|stateful] [calls] [cold]`
//!
//! With `cold`, a 16 MiB buffer is written between messages (outside the
//! timed region), evicting the caches the way other processes do between
//! two messages of a live proxy at 1,000 cps: the live T_sip's cache misses,
//! reproducible and without sockets.

use std::time::Instant;

use takt_sip::proxy::build::Local;
use takt_sip::proxy::{
    Inbound, Mode, Proxy, ProxyConfig, Scratch, SendError, Sink, Target, Transport,
};
use takt_sip::wire::Message;

struct Count(usize);
impl Sink for Count {
    fn send(&mut self, _: &Target, b: &[u8]) -> Result<(), SendError> {
        self.0 += b.len();
        Ok(())
    }
}

struct Keep(Vec<Vec<u8>>);
impl Sink for Keep {
    fn send(&mut self, _: &Target, b: &[u8]) -> Result<(), SendError> {
        self.0.push(b.to_vec());
        Ok(())
    }
}

fn t(a: &str) -> Target {
    Target {
        addr: a.parse().unwrap(),
        transport: Transport::Udp,
        conn: None,
    }
}

const SDP: &str = "v=0\r\no=user1 53655765 2353687637 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 6000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n";

fn invite(i: u64) -> Vec<u8> {
    format!("INVITE sip:service@127.0.0.1:5060 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bK-{i}-1-0\r\nFrom: sipp <sip:sipp@127.0.0.1:5061>;tag={i}SIPpTag001\r\nTo: service <sip:service@127.0.0.1:5060>\r\nCall-ID: {i}-1@127.0.0.1\r\nCSeq: 1 INVITE\r\nContact: sip:sipp@127.0.0.1:5061\r\nMax-Forwards: 70\r\nSubject: Performance Test\r\nContent-Type: application/sdp\r\nContent-Length: {}\r\n\r\n{SDP}", SDP.len()).into_bytes()
}

fn req(m: &str, i: u64, cseq: u32, br: u32) -> Vec<u8> {
    format!("{m} sip:service@127.0.0.1:5060 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bK-{i}-1-{br}\r\nFrom: sipp <sip:sipp@127.0.0.1:5061>;tag={i}SIPpTag001\r\nTo: service <sip:service@127.0.0.1:5060>;tag={i}SIPpTag012\r\nCall-ID: {i}-1@127.0.0.1\r\nCSeq: {cseq} {m}\r\nContact: sip:sipp@127.0.0.1:5061\r\nMax-Forwards: 70\r\nSubject: Performance Test\r\nContent-Length: 0\r\n\r\n").into_bytes()
}

fn resp(fwd: &[u8], code: u16, i: u64, body: bool) -> Vec<u8> {
    let m = Message::parse(fwd).unwrap();
    let b = m.buf();
    let mut o = format!("SIP/2.0 {code} X\r\n").into_bytes();
    for h in m.headers() {
        use takt_sip::wire::HeaderName as H;
        match h.name {
            H::Via | H::From | H::CallId | H::CSeq | H::RecordRoute => {
                o.extend_from_slice(h.line.of(b))
            }
            H::To => {
                o.extend_from_slice(b"To: ");
                o.extend_from_slice(h.value.of(b));
                if m.to_tag().is_none() {
                    o.extend_from_slice(format!(";tag={i}SIPpTag012").as_bytes());
                }
                o.extend_from_slice(b"\r\n");
            }
            _ => {}
        }
    }
    o.extend_from_slice(b"Contact: <sip:127.0.0.1:5070;transport=UDP>\r\n");
    if body {
        o.extend_from_slice(
            format!(
                "Content-Type: application/sdp\r\nContent-Length: {}\r\n\r\n{SDP}",
                SDP.len()
            )
            .as_bytes(),
        );
    } else {
        o.extend_from_slice(b"Content-Length: 0\r\n\r\n");
    }
    o
}

/// One non-inlined entry per message kind, so that a profiler's inclusive
/// cost of `handle_<kind>` divided by the number of calls is the cost of
/// one message of that kind:
/// `valgrind --tool=callgrind --dump-instr=no target/release/examples/path_cost stateful 2000`
/// then `callgrind_annotate --inclusive=yes callgrind.out.* | grep handle_`.
macro_rules! kinds {
    ($($name:literal => $f:ident),* $(,)?) => {
        $(
            #[inline(never)]
            fn $f(p: &Proxy, inb: &Inbound<'_>, s: &mut Scratch, sink: &mut Count) {
                // distinct bodies: identical functions would be folded into one
                std::hint::black_box($name);
                std::hint::black_box(p.handle(inb, s, sink));
            }
        )*
        fn by_kind(k: &str, p: &Proxy, inb: &Inbound<'_>, s: &mut Scratch, sink: &mut Count) {
            match k {
                $($name => $f(p, inb, s, sink),)*
                _ => unreachable!("unknown kind {k}"),
            }
        }
    };
}

kinds! {
    "invite" => handle_invite,
    "100" => handle_100,
    "180" => handle_180,
    "200" => handle_200,
    "ack" => handle_ack,
    "bye" => handle_bye,
    "200bye" => handle_200bye,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = match args.next().as_deref() {
        Some("stateless") => Mode::Stateless,
        _ => Mode::Stateful,
    };
    let calls: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let cold = args.next().as_deref() == Some("cold");
    let mut evict = if cold {
        vec![0u64; 2 << 20]
    } else {
        Vec::new()
    };
    let mut c = ProxyConfig::new(
        mode,
        Local {
            host: "127.0.0.1".into(),
            port: 5060,
        },
    );
    c.next_hop = Some(t("127.0.0.1:5070"));
    c.max_transactions = 1 << 20;
    let p = Proxy::new(c);
    let uac = t("127.0.0.1:5061");
    let uas = t("127.0.0.1:5070");
    // pre-build every message (the forwarded forms come from the proxy itself)
    let mut msgs: Vec<(&'static str, Vec<u8>, Target)> = Vec::new();
    let mut s = Scratch::new();
    let mut now = 0u64;
    for i in 0..calls {
        let inv = invite(i);
        let mut k = Keep(Vec::new());
        p.handle(
            &Inbound {
                bytes: &inv,
                from: uac,
                now,
                queue_delay_ns: 0,
            },
            &mut s,
            &mut k,
        );
        let fwd = k.0.last().unwrap().clone();
        let bye = req("BYE", i, 2, 2);
        let mut k2 = Keep(Vec::new());
        p.handle(
            &Inbound {
                bytes: &bye,
                from: uac,
                now,
                queue_delay_ns: 0,
            },
            &mut s,
            &mut k2,
        );
        let fwd_bye = k2.0.last().unwrap().clone();
        msgs.push(("invite", inv, uac));
        msgs.push(("100", resp(&fwd, 100, i, false), uas));
        msgs.push(("180", resp(&fwd, 180, i, false), uas));
        msgs.push(("200", resp(&fwd, 200, i, true), uas));
        msgs.push(("ack", req("ACK", i, 1, 1), uac));
        msgs.push(("bye", bye, uac));
        msgs.push(("200bye", resp(&fwd_bye, 200, i, false), uas));
        now += 1_000_000;
    }
    // a fresh proxy for the measured pass
    let mut c = ProxyConfig::new(
        mode,
        Local {
            host: "127.0.0.1".into(),
            port: 5060,
        },
    );
    c.next_hop = Some(t("127.0.0.1:5070"));
    c.max_transactions = 1 << 20;
    let p = Proxy::new(c);
    let mut sink = Count(0);
    let mut per: std::collections::BTreeMap<&str, Vec<u64>> = Default::default();
    let clock = takt_sched::clock();
    for (i, (k, b, from)) in msgs.iter().enumerate() {
        for (j, w) in evict.iter_mut().enumerate().step_by(8) {
            *w = w.wrapping_add(j as u64);
        }
        std::hint::black_box(&evict);
        let inb = Inbound {
            bytes: b,
            from: *from,
            now: (i as u64 / 7) * 1_000_000,
            queue_delay_ns: 0,
        };
        let t0 = clock.now();
        by_kind(k, &p, &inb, &mut s, &mut sink);
        let dt = clock.ticks_to_ns(clock.now() - t0);
        per.entry(k).or_default().push(dt);
    }
    let start = Instant::now();
    for (k, mut v) in per {
        v.sort_unstable();
        println!(
            "{mode:?} {k:>7}: p50 {:>6} ns  p90 {:>6} ns  p99 {:>6} ns",
            v[v.len() / 2],
            v[v.len() * 9 / 10],
            v[v.len() * 99 / 100]
        );
    }
    let _ = (start, sink.0);
}
