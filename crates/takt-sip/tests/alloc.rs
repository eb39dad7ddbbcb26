//! The stateless message path allocates nothing once its per-worker
//! scratch buffer has grown: parse views, spans, inline small vectors and
//! one output buffer reused for every message.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use takt_sip::proxy::build::Local;
use takt_sip::proxy::{
    Disposition, Inbound, Mode, Proxy, ProxyConfig, Scratch, SendError, Sink, Target, Transport,
};

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // Relaxed: a counter read after the measured loop on the same thread.
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        // Relaxed: see alloc.
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

struct Null;
impl Sink for Null {
    fn send(&mut self, _: &Target, _: &[u8]) -> Result<(), SendError> {
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

const INVITE: &[u8] = b"INVITE sip:service@127.0.0.1:5060 SIP/2.0\r\n\
Via: SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bK-1-1-0\r\n\
From: sipp <sip:sipp@127.0.0.1:5061>;tag=1SIPpTag001\r\n\
To: service <sip:service@127.0.0.1:5060>\r\n\
Call-ID: 1-1@127.0.0.1\r\nCSeq: 1 INVITE\r\n\
Contact: sip:sipp@127.0.0.1:5061\r\nMax-Forwards: 70\r\n\
Content-Type: application/sdp\r\nContent-Length: 4\r\n\r\nv=0\n";

const RINGING: &[u8] = b"SIP/2.0 180 Ringing\r\n\
Via: SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bKtk0123456789abcdef.01234567\r\n\
Via: SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bK-1-1-0\r\n\
From: sipp <sip:sipp@127.0.0.1:5061>;tag=1SIPpTag001\r\n\
To: service <sip:service@127.0.0.1:5060>;tag=x\r\n\
Call-ID: 1-1@127.0.0.1\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n";

#[test]
fn stateless_path_does_not_allocate() {
    let mut c = ProxyConfig::new(
        Mode::Stateless,
        Local {
            host: "127.0.0.1".into(),
            port: 5060,
        },
    );
    c.next_hop = Some(t("127.0.0.1:5070"));
    let p = Proxy::new(c);
    let mut s = Scratch::new();
    let uac = t("127.0.0.1:5061");
    let uas = t("127.0.0.1:5070");
    let run = |s: &mut Scratch| {
        for _ in 0..100 {
            let o = p.handle(
                &Inbound {
                    bytes: INVITE,
                    from: uac,
                    now: 0,
                    queue_delay_ns: 0,
                },
                s,
                &mut Null,
            );
            assert_eq!(o.disposition, Disposition::Forwarded);
            let o = p.handle(
                &Inbound {
                    bytes: RINGING,
                    from: uas,
                    now: 0,
                    queue_delay_ns: 0,
                },
                s,
                &mut Null,
            );
            assert_eq!(o.disposition, Disposition::Forwarded);
        }
    };
    run(&mut s); // warm-up: the scratch buffer reaches its size
                 // Relaxed: same thread.
    let before = ALLOCS.load(Ordering::Relaxed);
    run(&mut s);
    let after = ALLOCS.load(Ordering::Relaxed);
    assert_eq!(
        after - before,
        0,
        "allocations on the stateless message path"
    );
}
