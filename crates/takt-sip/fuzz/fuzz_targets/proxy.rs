//! The proxy's message path (both modes) never panics; every message the
//! stateless proxy sends in answer to or forwarding of a message that
//! parsed, parses; what the stateful proxy sends, and what the timers
//! send, parses as a proxy parses (a forwarded message keeps the passive
//! headers it came with, RFC 3261 §16.3, and a stateful proxy replays the
//! responses it kept).
//!
//! Input: records (see `records.rs`) of 2 control bytes and one message,
//! fed in order to a fresh stateless and a fresh stateful proxy (so a
//! crash reproduces from its input alone, and a transaction can be driven
//! through its states). Control byte 0: bits 0–2 the source (0 the UAC at
//! 127.0.0.1:5061, 1 the next hop at 127.0.0.1:5070, 2–7 other UDP or TCP
//! peers), bit 3 TCP, bits 4–7 how far the clock moves before the message
//! (×250 ms, so Timer B/F fire within a few records). Control byte 1: the
//! message's queue delay (K_rcv, ×4 ms: the shedding thresholds). After
//! each message the timers run; the bytes are also offered as an ICMP
//! error's quote of a datagram sent to the next hop.
#![no_main]

mod records;

use libfuzzer_sys::fuzz_target;
use takt_sip::proxy::{Inbound, Mode, Proxy, Scratch, SendError, Sink, Target, Transport};
use takt_sip::ua::synth;
use takt_sip::wire::Message;

struct Check {
    strict: bool,
    proxy: bool,
}

impl Sink for Check {
    fn send(&mut self, _: &Target, b: &[u8]) -> Result<(), SendError> {
        let show = |e| format!("({e}): {:?}", String::from_utf8_lossy(b));
        if self.strict {
            if let Err(e) = Message::parse(b) {
                panic!("the proxy sent an unparsable message {}", show(e));
            }
        }
        if self.proxy {
            if let Err(e) = Message::parse_proxy(b) {
                panic!("the proxy's timers sent an unparsable message {}", show(e));
            }
        }
        Ok(())
    }
}

/// The synthetic topology's proxy (127.0.0.1:5060, next hop 5070) with a
/// transaction table of 16 in 2 shards: cheap to make for every input, and
/// full (high-water shedding, 503) within a few records. Names in Route
/// and Request-URIs are not looked up (404, as the `resolve_names` switch
/// makes them): a lookup per input would measure the host's DNS server,
/// make most inputs slow, and make a run depend on the network.
fn proxy(mode: Mode) -> Proxy {
    let mut c = synth::proxy_config(mode);
    c.max_transactions = 16;
    c.shards = 2;
    c.resolve_names = false;
    Proxy::new(c)
}

const NEXT_HOP: u16 = 5070;

fn source(ctl: u8) -> Target {
    let port = match ctl & 7 {
        0 => 5061,
        1 => NEXT_HOP,
        n => 5060 + 10 * u16::from(n),
    };
    Target {
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        transport: if ctl & 8 == 0 {
            Transport::Udp
        } else {
            Transport::Tcp
        },
        conn: None,
    }
}

fuzz_target!(|data: &[u8]| {
    let proxies = [proxy(Mode::Stateless), proxy(Mode::Stateful)];
    let mut s = Scratch::new();
    let mut now = 1_000_000_000u64;
    for ([ctl, qd], msg) in records::records::<2>(data) {
        now += u64::from(ctl >> 4) * 250_000_000;
        let strict = Message::parse(msg).is_ok();
        let lenient = strict || Message::parse_proxy(msg).is_ok();
        let inb = Inbound {
            bytes: msg,
            from: source(ctl),
            now,
            queue_delay_ns: u64::from(qd) * 4_000_000,
        };
        for (i, p) in proxies.iter().enumerate() {
            // The stateful proxy answers a retransmitted request with the
            // last response it kept, which may have come in parsing only
            // as a proxy parses (its passive headers are not checked,
            // RFC 3261 §16.3): its sends are checked that way, when what
            // it answers parses that way (a 400 to a malformed request
            // echoes its Via lines as they came).
            let stateful = i == 1;
            p.handle(
                &inb,
                &mut s,
                &mut Check {
                    strict: strict && !stateful,
                    proxy: stateful && lenient,
                },
            );
            p.tick(
                now,
                &mut Check {
                    strict: false,
                    proxy: true,
                },
            );
            // the same bytes as an ICMP error's quote of a datagram sent
            // to the next hop: matched to a branch or ignored
            p.bounced(
                msg,
                std::net::SocketAddr::from(([127, 0, 0, 1], NEXT_HOP)),
                SendError::Refused,
                now,
                &mut Check {
                    strict: false,
                    proxy: true,
                },
            );
        }
    }
});
