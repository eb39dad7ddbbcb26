//! Cost of the proxy's message path for the native generator's calls
//! (`takt sip gen`, `takt sip capacity`): this crate's UAC and UAS run
//! against the proxy core in-process on a virtual clock, one call after
//! another, every datagram delivered at once, no sockets. Every message
//! the proxy handles goes through the non-inlined [`through_proxy`], so
//! under callgrind its inclusive cost divided by its calls is the
//! proxy's instructions per message for the generator's message shapes
//! (a quoted display name in From, Route headers in the dialog's ACK and
//! BYE), which `path_cost`'s SIPp-shaped calls do not have:
//!
//! ```sh
//! cargo build --release -p takt-sip --example gen_cost
//! valgrind --tool=callgrind --callgrind-out-file=cg.out \
//!     target/release/examples/gen_cost stateless 2000
//! callgrind_annotate --inclusive=yes cg.out | grep through_proxy
//! ```
//!
//! `cargo run --release -p takt-sip --example gen_cost -- [stateless|stateful] [calls]`
//! prints the messages handled by kind and the calls completed.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;

use takt_sip::proxy::{Inbound, Mode, Proxy, Scratch, SendError, Sink, Target, Transport};
use takt_sip::ua::synth::proxy_config;
use takt_sip::ua::{Uac, UacConfig, Uas, UasConfig};

/// Keeps what the proxy sends.
struct Collect(Vec<(SocketAddr, Vec<u8>)>);

impl Sink for Collect {
    fn send(&mut self, to: &Target, b: &[u8]) -> Result<(), SendError> {
        self.0.push((to.addr, b.to_vec()));
        Ok(())
    }
}

/// One message through the proxy (the function callgrind's figure is read from).
#[inline(never)]
fn through_proxy(p: &Proxy, inb: &Inbound<'_>, s: &mut Scratch, sink: &mut Collect) {
    std::hint::black_box(p.handle(inb, s, sink));
}

/// The first word of a start line, or the status code of a response.
fn kind(b: &[u8]) -> String {
    let line = b.split(|&c| c == b' ').take(2).collect::<Vec<_>>();
    let w = if line[0] == b"SIP/2.0" {
        line[1]
    } else {
        line[0]
    };
    String::from_utf8_lossy(w).into_owned()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = match args.next().as_deref() {
        Some("stateless") => Mode::Stateless,
        _ => Mode::Stateful,
    };
    let calls: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(2_000);
    let (uac_a, uas_a, px): (SocketAddr, SocketAddr, SocketAddr) = (
        "127.0.0.1:5061".parse().expect("literal"),
        "127.0.0.1:5070".parse().expect("literal"),
        "127.0.0.1:5060".parse().expect("literal"),
    );
    let mut uac = Uac::new(UacConfig::new(uac_a, px));
    let mut uas = Uas::new(UasConfig::new(uas_a));
    let proxy = Proxy::new(proxy_config(mode));
    let mut scratch = Scratch::new();
    let mut flight: VecDeque<(SocketAddr, SocketAddr, Vec<u8>)> = VecDeque::new();
    let mut handled: BTreeMap<String, u64> = BTreeMap::new();
    let mut now = 0;
    let mut buf = Vec::new();
    for _ in 0..calls {
        now += 1_000_000;
        uac.start_call(now).expect("room for one call at a time");
        loop {
            uac.handle_timeout(now);
            uas.handle_timeout(now);
            while let Some(t) = uac.poll_transmit(&mut buf) {
                flight.push_back((uac_a, t.dst, std::mem::take(&mut buf)));
            }
            while let Some(t) = uas.poll_transmit(&mut buf) {
                flight.push_back((uas_a, t.dst, std::mem::take(&mut buf)));
            }
            let Some((from, to, bytes)) = flight.pop_front() else {
                break;
            };
            now += 1_000;
            if to == px {
                *handled.entry(kind(&bytes)).or_insert(0) += 1;
                let mut sink = Collect(Vec::new());
                let inb = Inbound {
                    bytes: &bytes,
                    from: Target {
                        addr: from,
                        transport: Transport::Udp,
                        conn: None,
                    },
                    now,
                    queue_delay_ns: 0,
                };
                through_proxy(&proxy, &inb, &mut scratch, &mut sink);
                flight.extend(sink.0.into_iter().map(|(to, b)| (px, to, b)));
            } else if to == uac_a {
                let _ = uac.handle(now, &bytes);
            } else if to == uas_a {
                let _ = uas.handle(now, 0, from, &bytes);
            }
        }
    }
    let s = uac.stats();
    println!(
        "{mode:?}: {} calls attempted, {} failed; through the proxy: {handled:?}",
        s.attempted,
        s.outcomes.failed()
    );
}
