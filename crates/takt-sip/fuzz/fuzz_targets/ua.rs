//! The load generator's user agents (`takt_sip::ua`) take whatever a
//! proxy under test, or anyone who can reach their sockets, sends them:
//! neither the UAC nor the UAS panics on any datagram or sequence of
//! datagrams, on any timing, and what they send parses.
//!
//! Input: records (see `records.rs`) of 1 control byte and a payload.
//! Control bits 0–1 choose the action: 0 the payload is a datagram to the
//! UAC, 1 a datagram to the UAS (from a peer at 127.0.0.1:5060), 2 the
//! UAC's next queued datagram is relayed to the UAS, 3 the UAS's next
//! one to the UAC — relayed datagrams first get the payload written over
//! them at the offset its first two bytes give (an empty payload relays
//! them intact), so that the real call flow is reached and then bent.
//! Bit 2 places a new call first; bits 3–7 move the clock (×128 ms, so
//! retransmissions and Timers B, F and the ACK wait fire).
#![no_main]

mod records;

use std::collections::VecDeque;
use std::net::SocketAddr;

use libfuzzer_sys::fuzz_target;
use takt_sip::ua::{Uac, UacConfig, Uas, UasConfig};
use takt_sip::wire::Message;

const PROXY: ([u8; 4], u16) = ([127, 0, 0, 1], 5060);

/// Polls every queued datagram of a side, checks it parses, keeps it.
fn drain(
    poll: &mut dyn FnMut(&mut Vec<u8>) -> Option<takt_sip::ua::Transmit>,
    q: &mut VecDeque<Vec<u8>>,
) {
    let mut buf = Vec::new();
    while let Some(t) = poll(&mut buf) {
        let b = buf[buf.len() - t.len..].to_vec();
        if let Err(e) = Message::parse_proxy(&b) {
            panic!(
                "a user agent sent an unparsable message ({e}): {:?}",
                String::from_utf8_lossy(&b)
            );
        }
        // a bounded backlog: the oldest are dropped, as a full socket would
        if q.len() == 64 {
            q.pop_front();
        }
        q.push_back(b);
        buf.clear();
    }
}

/// Writes `patch[2..]` over `msg` at the offset `patch[..2]` names.
fn bend(mut msg: Vec<u8>, patch: &[u8]) -> Vec<u8> {
    if patch.len() > 2 && !msg.is_empty() {
        let at = usize::from(u16::from_le_bytes([patch[0], patch[1]])) % msg.len();
        for (i, &b) in patch[2..].iter().enumerate() {
            match msg.get_mut(at + i) {
                Some(x) => *x = b,
                None => msg.push(b),
            }
        }
    }
    msg
}

fuzz_target!(|data: &[u8]| {
    let proxy = SocketAddr::from(PROXY);
    let mut ucfg = UacConfig::new(SocketAddr::from(([127, 0, 0, 1], 5061)), proxy);
    ucfg.max_calls = 8;
    ucfg.hold_ns = 200_000_000;
    let mut uac = Uac::new(ucfg);
    let mut scfg = UasConfig::new(SocketAddr::from(([127, 0, 0, 1], 5070)));
    scfg.max_dialogs = 8;
    let mut uas = Uas::new(scfg);
    let (mut to_uas, mut to_uac) = (VecDeque::new(), VecDeque::new());
    let mut now = 1_000_000_000u64;
    let _ = uac.start_call(now);
    drain(&mut |b| uac.poll_transmit(b), &mut to_uas);
    for ([ctl], payload) in records::records::<1>(data) {
        now += u64::from(ctl >> 3) * 128_000_000;
        uac.handle_timeout(now);
        uas.handle_timeout(now);
        if ctl & 4 != 0 {
            let _ = uac.start_call(now);
        }
        match ctl & 3 {
            0 => {
                let _ = uac.handle(now, payload);
            }
            1 => {
                let _ = uas.handle(now, 0, proxy, payload);
            }
            2 => {
                if let Some(m) = to_uas.pop_front() {
                    let _ = uas.handle(now, 0, proxy, &bend(m, payload));
                }
            }
            _ => {
                if let Some(m) = to_uac.pop_front() {
                    let _ = uac.handle(now, &bend(m, payload));
                }
            }
        }
        drain(&mut |b| uac.poll_transmit(b), &mut to_uas);
        drain(&mut |b| uas.poll_transmit(b), &mut to_uac);
    }
});
