//! SIPp-shaped calls without sockets, for measuring the proxy's message
//! path on a hot core: the INVITE, 100, 180, 200, ACK, BYE and 200 of
//! `sipp -sn uac` → proxy → `sipp -sn uas`, each as the proxy receives
//! it (the responses carry the Via and Record-Route the proxy added).
//!
//! [`sipp_calls`] builds the messages by driving one proxy; [`hot_costs`]
//! then times each message through a fresh proxy, back to back, so caches
//! and predictors stay warm. Set beside a live run's T_sip, the hot cost
//! separates what a cold core adds from how fast the host is running the
//! code at that moment (`takt sip load` reports both).

use std::collections::BTreeMap;

use crate::proxy::build::Local;
use crate::proxy::{
    Inbound, Mode, Proxy, ProxyConfig, Scratch, SendError, Sink, Target, Transport,
};
use crate::wire::{HeaderName, Message};

/// One message of a synthetic call, as the proxy receives it.
#[derive(Debug, Clone)]
pub struct SynthMessage {
    /// `invite`, `100`, `180`, `200`, `ack`, `bye` or `200bye`.
    pub kind: &'static str,
    /// The datagram.
    pub bytes: Vec<u8>,
    /// Who sent it: the UAC (127.0.0.1:5061) or the UAS (127.0.0.1:5070).
    pub from: Target,
}

/// The proxy of the synthetic topology: 127.0.0.1:5060, next hop the UAS.
pub fn proxy_config(mode: Mode) -> ProxyConfig {
    let mut c = ProxyConfig::new(
        mode,
        Local {
            host: "127.0.0.1".into(),
            port: 5060,
        },
    );
    c.next_hop = Some(target(UAS));
    c.max_transactions = 1 << 20;
    c
}

const UAC: &str = "127.0.0.1:5061";
const UAS: &str = "127.0.0.1:5070";
const SDP: &str = "v=0\r\no=user1 53655765 2353687637 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 6000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n";

fn target(a: &str) -> Target {
    Target {
        addr: a.parse().expect("a literal address"),
        transport: Transport::Udp,
        conn: None,
    }
}

/// Keeps what the proxy sends.
struct Keep(Vec<Vec<u8>>);

impl Sink for Keep {
    fn send(&mut self, _: &Target, b: &[u8]) -> Result<(), SendError> {
        self.0.push(b.to_vec());
        Ok(())
    }
}

/// Counts what the proxy sends (the timed pass: no copy).
struct Count(usize);

impl Sink for Count {
    fn send(&mut self, _: &Target, b: &[u8]) -> Result<(), SendError> {
        self.0 += b.len();
        Ok(())
    }
}

fn invite(i: u64) -> Vec<u8> {
    format!(
        "INVITE sip:service@127.0.0.1:5060 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bK-{i}-1-0\r\nFrom: sipp <sip:sipp@127.0.0.1:5061>;tag={i}SIPpTag001\r\nTo: service <sip:service@127.0.0.1:5060>\r\nCall-ID: {i}-1@127.0.0.1\r\nCSeq: 1 INVITE\r\nContact: sip:sipp@127.0.0.1:5061\r\nMax-Forwards: 70\r\nSubject: Performance Test\r\nContent-Type: application/sdp\r\nContent-Length: {}\r\n\r\n{SDP}",
        SDP.len()
    )
    .into_bytes()
}

fn request(method: &str, i: u64, cseq: u32, branch: u32) -> Vec<u8> {
    format!(
        "{method} sip:service@127.0.0.1:5060 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bK-{i}-1-{branch}\r\nFrom: sipp <sip:sipp@127.0.0.1:5061>;tag={i}SIPpTag001\r\nTo: service <sip:service@127.0.0.1:5060>;tag={i}SIPpTag012\r\nCall-ID: {i}-1@127.0.0.1\r\nCSeq: {cseq} {method}\r\nContact: sip:sipp@127.0.0.1:5061\r\nMax-Forwards: 70\r\nSubject: Performance Test\r\nContent-Length: 0\r\n\r\n"
    )
    .into_bytes()
}

/// The UAS's response `code` to the forwarded request `fwd` of call `i`.
fn response(fwd: &[u8], code: u16, i: u64, sdp: bool) -> Vec<u8> {
    let m = Message::parse(fwd).expect("the proxy forwards parsable requests");
    let b = m.buf();
    let mut o = format!("SIP/2.0 {code} X\r\n").into_bytes();
    for h in m.headers() {
        match h.name {
            HeaderName::Via
            | HeaderName::From
            | HeaderName::CallId
            | HeaderName::CSeq
            | HeaderName::RecordRoute => o.extend_from_slice(h.line.of(b)),
            HeaderName::To => {
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
    if sdp {
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

/// The messages of `calls` calls in arrival order, seven per call.
pub fn sipp_calls(mode: Mode, calls: u64) -> Vec<SynthMessage> {
    sipp_calls_from(mode, 0, calls)
}

/// The messages of calls `first..first + calls` in arrival order, seven
/// per call (calls of different numbers are different transactions and
/// dialogs, so a long run can be built a slice at a time).
pub fn sipp_calls_from(mode: Mode, first: u64, calls: u64) -> Vec<SynthMessage> {
    let p = Proxy::new(proxy_config(mode));
    let (uac, uas) = (target(UAC), target(UAS));
    let mut s = Scratch::new();
    let mut forwarded = |bytes: &[u8], now: u64| -> Vec<u8> {
        let mut k = Keep(Vec::new());
        p.handle(
            &Inbound {
                bytes,
                from: uac,
                now,
                queue_delay_ns: 0,
            },
            &mut s,
            &mut k,
        );
        k.0.pop().expect("the proxy forwards the request")
    };
    let mut out = Vec::with_capacity(calls as usize * 7);
    for i in first..first + calls {
        let now = i * 1_000_000;
        let inv = invite(i);
        let fwd = forwarded(&inv, now);
        let bye = request("BYE", i, 2, 2);
        let fwd_bye = forwarded(&bye, now);
        let m = |kind, bytes, from| SynthMessage { kind, bytes, from };
        out.push(m("invite", inv, uac));
        out.push(m("100", response(&fwd, 100, i, false), uas));
        out.push(m("180", response(&fwd, 180, i, false), uas));
        out.push(m("200", response(&fwd, 200, i, true), uas));
        out.push(m("ack", request("ACK", i, 1, 1), uac));
        out.push(m("bye", bye, uac));
        out.push(m("200bye", response(&fwd_bye, 200, i, false), uas));
    }
    out
}

/// Times every message of `msgs` through a fresh proxy, back to back on
/// the calling thread: ns per message by kind, in message order.
/// `between` runs before each message, outside the timed region (e.g. to
/// evict caches); `handle` is the timed call, normally
/// `|_, p, inb, s, sink| { p.handle(inb, s, sink); }` (a profiler may
/// want one function per kind).
pub fn time_messages(
    mode: Mode,
    msgs: &[SynthMessage],
    mut between: impl FnMut(),
    mut handle: impl FnMut(&'static str, &Proxy, &Inbound<'_>, &mut Scratch, &mut dyn Sink),
) -> BTreeMap<&'static str, Vec<u64>> {
    let p = Proxy::new(proxy_config(mode));
    let mut s = Scratch::new();
    let mut sink = Count(0);
    let clock = takt_sched::clock();
    let mut per: BTreeMap<&'static str, Vec<u64>> = BTreeMap::new();
    for (i, m) in msgs.iter().enumerate() {
        between();
        let inb = Inbound {
            bytes: &m.bytes,
            from: m.from,
            now: (i as u64 / 7) * 1_000_000,
            queue_delay_ns: 0,
        };
        let t0 = clock.now();
        handle(m.kind, &p, &inb, &mut s, &mut sink);
        let dt = clock.ticks_to_ns(clock.now().saturating_sub(t0));
        per.entry(m.kind).or_default().push(dt);
    }
    std::hint::black_box(sink.0);
    per
}

/// Median hot cost per message in ns, by the kinds `takt sip load`
/// reports (`invite`, `ack`, `bye`, `1xx`, `2xx`), over `calls` calls.
pub fn hot_costs(mode: Mode, calls: u64) -> BTreeMap<&'static str, f64> {
    let msgs = sipp_calls(mode, calls);
    let per = time_messages(
        mode,
        &msgs,
        || {},
        |_, p, inb, s, sink| {
            std::hint::black_box(p.handle(inb, s, sink));
        },
    );
    let mut by: BTreeMap<&'static str, Vec<u64>> = BTreeMap::new();
    for (kind, v) in per {
        let k = match kind {
            "100" | "180" => "1xx",
            "200" | "200bye" => "2xx",
            other => other,
        };
        by.entry(k).or_default().extend(v);
    }
    by.into_iter()
        .map(|(k, mut v)| {
            v.sort_unstable();
            (k, v[v.len() / 2] as f64)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_complete_and_every_message_but_the_100_is_forwarded() {
        for mode in [Mode::Stateless, Mode::Stateful] {
            let msgs = sipp_calls(mode, 3);
            let kinds: Vec<&str> = msgs.iter().take(7).map(|m| m.kind).collect();
            assert_eq!(
                kinds,
                ["invite", "100", "180", "200", "ack", "bye", "200bye"]
            );
            assert_eq!(msgs.len(), 21);
            // every message parses, and a fresh proxy forwards each one
            let p = Proxy::new(proxy_config(mode));
            let mut s = Scratch::new();
            for (i, m) in msgs.iter().enumerate() {
                assert!(Message::parse(&m.bytes).is_ok(), "{}", m.kind);
                let mut k = Keep(Vec::new());
                p.handle(
                    &Inbound {
                        bytes: &m.bytes,
                        from: m.from,
                        now: (i as u64 / 7) * 1_000_000,
                        queue_delay_ns: 0,
                    },
                    &mut s,
                    &mut k,
                );
                // a stateful proxy absorbs a 100 (RFC 3261 §16.7 step 5;
                // a stateless one cannot tell); everything else goes on
                assert_eq!(
                    k.0.is_empty(),
                    m.kind == "100" && mode == Mode::Stateful,
                    "{mode:?} {}: sent {}",
                    m.kind,
                    k.0.len()
                );
            }
        }
    }

    #[test]
    fn hot_costs_cover_the_reported_kinds() {
        let c = hot_costs(Mode::Stateful, 20);
        let kinds: Vec<&str> = c.keys().copied().collect();
        assert_eq!(kinds, ["1xx", "2xx", "ack", "bye", "invite"]);
        assert!(c.values().all(|&ns| ns > 0.0 && ns.is_finite()), "{c:?}");
    }
}
