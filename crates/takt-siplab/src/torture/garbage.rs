//! The garbage scenario: live calls (UAC and UAS in this process, or a
//! fleet's: [`super::calls`]) at a
//! light rate, and a third of the way in, bursts of bad datagrams, one
//! class at a time, each class from its own socket so that every answer
//! is attributed to its class.
//!
//! | class | what | RFC 3261's answer |
//! |---|---|---|
//! | `random` | 200 random bytes | none: dropped, counted |
//! | `truncated` | an INVITE cut inside its headers | none (no complete message) |
//! | `no_via` | an INVITE without Via | none: nowhere to answer |
//! | `bad_cseq` | `CSeq: x INVITE` | 400 |
//! | `ctl_char` | a NUL byte in a header value | 400 |
//! | `bad_length` | Content-Length beyond the datagram | 400 (§18.3) or dropped |
//! | `bad_version` | `SIP/7.0` | 505 or 400 |
//! | `max_forwards_0` | a valid INVITE with Max-Forwards 0 | 483 (§16.3) |
//! | `stray_response` | a 200 for a transaction nobody has | none: dropped, counted |
//!
//! Measured per class: datagrams sent, responses received by status, and
//! for takt what its counters took in (parse errors by rule, responses it
//! made by status) while that class was being sent. For the live calls:
//! failed or unfinished calls (target: none).

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use serde_json::{json, Map};
use takt_measure::result::{Better, ResultRow};

use super::calls::{Calls, LiveCalls};
use super::{fault_rate, row, watch, Progress, Server, TorturePlan};
use crate::error::{io, Error, Result};
use crate::gen::{GenReport, Role};

/// The classes of bad input.
pub const CLASSES: [&str; 9] = [
    "random",
    "truncated",
    "no_via",
    "bad_cseq",
    "ctl_char",
    "bad_length",
    "bad_version",
    "max_forwards_0",
    "stray_response",
];

/// The `i`th datagram of `class`, from `src` to `dst`.
pub fn datagram(class: &str, i: u64, src: SocketAddr, dst: SocketAddr) -> Vec<u8> {
    let invite = |version: &str, via: bool, cseq: &str, mf: u32, extra: &str, clen: usize| {
        let via = if via {
            format!("Via: SIP/2.0/UDP {src};branch=z9hG4bK-g{class}-{i}\r\n")
        } else {
            String::new()
        };
        format!(
            "INVITE sip:service@{dst} {version}\r\n{via}From: <sip:g@{src}>;tag=g{i}\r\nTo: <sip:service@{dst}>\r\nCall-ID: g-{class}-{i}@torture\r\nCSeq: {cseq}\r\nContact: <sip:g@{src}>\r\nMax-Forwards: {mf}\r\n{extra}Content-Length: {clen}\r\n\r\n"
        )
        .into_bytes()
    };
    match class {
        "random" => {
            let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            (0..200)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect()
        }
        "truncated" => {
            let mut m = invite("SIP/2.0", true, "1 INVITE", 70, "", 0);
            m.truncate(m.len() / 2 + (i as usize % 40));
            m
        }
        "no_via" => invite("SIP/2.0", false, "1 INVITE", 70, "", 0),
        "bad_cseq" => invite("SIP/2.0", true, "x INVITE", 70, "", 0),
        "ctl_char" => invite("SIP/2.0", true, "1 INVITE", 70, "Subject: a\0b\r\n", 0),
        "bad_length" => invite("SIP/2.0", true, "1 INVITE", 70, "", 5_000),
        "bad_version" => invite("SIP/7.0", true, "1 INVITE", 70, "", 0),
        "max_forwards_0" => invite("SIP/2.0", true, "1 INVITE", 0, "", 0),
        _ => format!(
            "SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK-nobody-{i}\r\nFrom: <sip:a@192.0.2.1>;tag=a\r\nTo: <sip:b@192.0.2.2>;tag=b\r\nCall-ID: stray-{i}@torture\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"
        )
        .into_bytes(),
    }
}

/// Adds the status codes of the responses waiting on `sock` to `by`.
fn responses(sock: &UdpSocket, by: &mut BTreeMap<String, u64>) {
    let mut buf = vec![0u8; 65_536];
    while let Ok(n) = sock.recv(&mut buf) {
        let code = buf[..n]
            .strip_prefix(b"SIP/2.0 ")
            .and_then(|r| r.get(..3))
            .map_or_else(
                || "other".to_string(),
                |c| String::from_utf8_lossy(c).into_owned(),
            );
        *by.entry(code).or_insert(0) += 1;
    }
}

fn delta(
    a: &BTreeMap<String, u64>,
    b: &BTreeMap<String, u64>,
) -> serde_json::Map<String, serde_json::Value> {
    b.iter()
        .filter_map(|(k, n)| {
            let d = n.saturating_sub(a.get(k).copied().unwrap_or(0));
            (d > 0).then(|| (k.clone(), json!(d)))
        })
        .collect()
}

/// One class's burst: what the server counted before and after it, how
/// long it took, the responses by status.
#[derive(Debug)]
struct Burst {
    class: &'static str,
    before: watch::Losses,
    after: watch::Losses,
    burst_s: f64,
    answered: BTreeMap<String, u64>,
}

/// The scenario's rows: `garbage_answered` for each class's burst of
/// `per_class` datagrams, and `live_calls_failed` for the live `calls`
/// (at `rate`).
fn rows(
    plan: &TorturePlan,
    per_class: u64,
    bursts: &[Burst],
    calls: &Calls,
    rate: f64,
) -> Vec<ResultRow> {
    let mut out = Vec::new();
    for b in bursts {
        let mut p = plan.params(super::Scenario::Garbage);
        p.insert("class".into(), json!(b.class));
        let n: u64 = b.answered.values().sum();
        let mut det = Map::new();
        det.insert("sent".into(), json!(per_class));
        det.insert("burst_s".into(), json!(b.burst_s));
        det.insert("responses".into(), json!(b.answered));
        det.insert(
            "server_parse_errors".into(),
            json!(delta(&b.before.parse_errors, &b.after.parse_errors)),
        );
        det.insert(
            "server_replied".into(),
            json!(delta(&b.before.replied, &b.after.replied)),
        );
        det.insert(
            "server_dropped".into(),
            json!(delta(&b.before.dropped, &b.after.dropped)),
        );
        det.insert(
            "server_socket_drops".into(),
            json!(b.after.socket_drops.saturating_sub(b.before.socket_drops)),
        );
        out.push(row(
            plan,
            "garbage_answered",
            &p,
            "ratio",
            Better::Higher,
            n as f64 / per_class as f64,
            det,
        ));
    }
    let p = plan.params(super::Scenario::Garbage);
    let mut det = calls.detail();
    det.insert("rate_cps".into(), json!(rate));
    out.push(row(
        plan,
        "live_calls_failed",
        &p,
        "calls",
        Better::Lower,
        calls.lost() as f64,
        det,
    ));
    out
}

/// The rows of every class's burst and of the live calls, built by
/// [`rows`] from synthetic counters and a synthetic generator report:
/// part of the document-shape snapshot test's input.
pub(super) fn synthetic_rows(plan: &TorturePlan) -> Vec<ResultRow> {
    let after = watch::Losses {
        socket_drops: 1,
        parse_errors: [("no_via".to_string(), 10)].into(),
        replied: [("400".to_string(), 10)].into(),
        ..watch::Losses::default()
    };
    let bursts: Vec<Burst> = CLASSES
        .iter()
        .map(|&class| Burst {
            class,
            before: watch::Losses::default(),
            after: after.clone(),
            burst_s: 0.1,
            answered: [("400".to_string(), 10)].into(),
        })
        .collect();
    let calls = Calls::of_report(&GenReport::synthetic(Role::Both, "udp"))
        .expect("the synthetic report has a UAC");
    rows(plan, 10, &bursts, &calls, 500.0)
}

/// Runs the scenario; returns its rows.
pub fn run(
    plan: &TorturePlan,
    capacity: Option<f64>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<ResultRow>> {
    let d = plan.durations;
    let per_class: u64 = if d.fault_run >= Duration::from_secs(15) {
        2_000
    } else {
        300
    };
    let rate = fault_rate(capacity);
    // the live calls: the local generator's, or one fleet trial over the
    // whole run (a void one fails the scenario: the bursts cannot wait)
    let mut calls = LiveCalls::new(plan, "garbage", rate, d.fault_run, 1)?;
    let server = Server::start(plan, calls.uas()?, progress)?;
    let dst = server.target.listen();
    calls.set_target(&server.target)?;
    // a fleet's calls start at its planned instant, its lead ahead
    let lead = if calls.on_fleet() {
        crate::fleet::coordinator::LEAD
    } else {
        Duration::ZERO
    };
    let socks = CLASSES
        .iter()
        .map(|_| {
            let s = UdpSocket::bind(SocketAddr::new(plan.setup.listen_ip, 0))?;
            s.set_nonblocking(true)?;
            Ok(s)
        })
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(io("binding the garbage sockets"))?;
    let measured = std::thread::scope(|s| -> Result<_> {
        let h = s.spawn(|| calls.run(plan));
        std::thread::sleep(lead + d.fault_run / 3);
        progress(Progress::Step("garbage bursts"));
        let mut bursts = Vec::new();
        for (class, sock) in CLASSES.iter().zip(&socks) {
            if plan.stopped() {
                break;
            }
            let src = sock
                .local_addr()
                .map_err(io("a garbage socket's address"))?;
            let before = watch::losses(&server.target);
            let start = Instant::now();
            let mut answered = BTreeMap::new();
            for i in 0..per_class {
                let _ = sock.send_to(&datagram(class, i, src, dst), dst);
                // about 20,000 datagrams/s: a burst, not a flood of the
                // socket; the answers are read as they come
                if i % 20 == 19 {
                    std::thread::sleep(Duration::from_millis(1));
                    responses(sock, &mut answered);
                }
            }
            let burst_s = start.elapsed().as_secs_f64();
            std::thread::sleep(Duration::from_millis(300));
            responses(sock, &mut answered);
            let after = watch::losses(&server.target);
            bursts.push(Burst {
                class,
                before,
                after,
                burst_s,
                answered,
            });
        }
        let calls = h
            .join()
            .map_err(|_| Error::Thread("the calls' thread panicked".into()))??;
        Ok((calls, bursts))
    });
    let stopped = server.stop();
    let (calls, bursts) = measured?;
    if plan.stopped() {
        return Err(Error::Interrupted);
    }
    let unclean = super::stop_verdict(stopped)?;
    let out = rows(plan, per_class, &bursts, &calls, rate);
    Ok(super::stop_noted(out, unclean))
}

#[cfg(test)]
mod tests {
    use super::*;
    use takt_sip::wire::Message;

    #[test]
    fn classes_are_what_they_say() {
        let (s, d) = (
            "127.0.0.1:4000".parse().unwrap(),
            "127.0.0.1:5060".parse().unwrap(),
        );
        for c in ["max_forwards_0", "stray_response"] {
            assert!(Message::parse(&datagram(c, 1, s, d)).is_ok(), "{c}");
        }
        for c in [
            "random",
            "truncated",
            "no_via",
            "bad_cseq",
            "ctl_char",
            "bad_version",
        ] {
            assert!(Message::parse(&datagram(c, 1, s, d)).is_err(), "{c}");
        }
        assert_ne!(datagram("random", 1, s, d), datagram("random", 2, s, d));
    }
}
