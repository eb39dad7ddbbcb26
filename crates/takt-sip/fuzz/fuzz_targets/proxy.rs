//! The proxy's message path (both modes) never panics, and every message it
//! sends in answer to or forwarding of a message that parsed, parses; what
//! its timers send parses as a proxy parses (a forwarded request keeps the
//! passive headers it came with, RFC 3261 §16.3).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use takt_sip::proxy::build::Local;
use takt_sip::proxy::{
    Inbound, Mode, Proxy, ProxyConfig, Scratch, SendError, Sink, Target, Transport,
};
use takt_sip::wire::Message;

struct Check {
    strict: bool,
    proxy: bool,
}

impl Sink for Check {
    fn send(&mut self, _: &Target, b: &[u8]) -> Result<(), SendError> {
        if self.strict {
            Message::parse(b).expect("the proxy sends parsable messages");
        }
        if self.proxy {
            Message::parse_proxy(b).expect("the proxy's timers send parsable messages");
        }
        Ok(())
    }
}

fn proxies() -> &'static [Proxy; 2] {
    static P: OnceLock<[Proxy; 2]> = OnceLock::new();
    P.get_or_init(|| {
        let mk = |mode| {
            let mut c = ProxyConfig::new(
                mode,
                Local {
                    host: "127.0.0.1".into(),
                    port: 5060,
                },
            );
            c.next_hop = Some(Target {
                addr: "127.0.0.1:5070".parse().unwrap(),
                transport: Transport::Udp,
                conn: None,
            });
            c.max_transactions = 4096;
            Proxy::new(c)
        };
        [mk(Mode::Stateless), mk(Mode::Stateful)]
    })
}

fuzz_target!(|data: &[u8]| {
    // first byte: source port and clock step; the rest: the message
    let Some((&ctl, msg)) = data.split_first() else {
        return;
    };
    let strict = Message::parse(msg).is_ok();
    let from = Target {
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], 5061 + u16::from(ctl & 7))),
        transport: if ctl & 8 == 0 {
            Transport::Udp
        } else {
            Transport::Tcp
        },
        conn: None,
    };
    let now = u64::from(ctl) * 100_000_000;
    let mut s = Scratch::new();
    for p in proxies() {
        let mut sink = Check {
            strict,
            proxy: false,
        };
        p.handle(
            &Inbound {
                bytes: msg,
                from,
                now,
                queue_delay_ns: u64::from(ctl >> 4) * 100_000_000,
            },
            &mut s,
            &mut sink,
        );
        p.tick(
            now,
            &mut Check {
                strict: false,
                proxy: true,
            },
        );
        // the same bytes as an ICMP error's quote of a datagram sent to the
        // next hop: matched to a branch or ignored, never a panic
        p.bounced(
            msg,
            "127.0.0.1:5070".parse().unwrap(),
            SendError::Refused,
            now,
            &mut Check {
                strict: false,
                proxy: true,
            },
        );
    }
});
