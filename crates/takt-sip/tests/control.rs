//! Control characters in the header section (RFC 3261 §25.1): only HTAB
//! may appear, and CR LF only as a line end or fold; elsewhere a control
//! byte is allowed only as the second byte of a quoted-pair inside a
//! quoted string or comment. Checked in any header, parsed or not; a
//! request carrying one is answered 400 with the rule in the reason
//! phrase, a response or an ACK is dropped, and the rule is counted.

use takt_sip::proxy::build::Local;
use takt_sip::proxy::{
    Disposition, Inbound, Mode, Proxy, ProxyConfig, Scratch, SendError, Sink, Target, Transport,
};
use takt_sip::wire::{Message, ParseError};

fn request(extra: &str) -> Vec<u8> {
    format!(
        "INVITE sip:bob@10.0.0.9 SIP/2.0\r\n\
Via: SIP/2.0/UDP 10.0.0.1:5061;branch=z9hG4bK-ctl;rport\r\n\
From: <sip:alice@10.0.0.1>;tag=1\r\n\
To: <sip:bob@10.0.0.9>\r\n\
Call-ID: ctl@10.0.0.1\r\n\
CSeq: 1 INVITE\r\n\
Max-Forwards: 70\r\n\
{extra}\
Content-Length: 0\r\n\r\n"
    )
    .into_bytes()
}

/// The header line the extra header lands on.
const EXTRA_LINE: u16 = 8;

#[test]
fn every_forbidden_control_byte_is_refused_in_any_header() {
    for byte in (0u8..0x20).chain([0x7f]) {
        if matches!(byte, b'\t' | b'\r' | b'\n') {
            continue;
        }
        for header in ["X-Unknown", "Subject", "User-Agent", "Contact", "From"] {
            let mut extra = format!("{header}: a").into_bytes();
            extra.push(byte);
            extra.extend_from_slice(b"b\r\n");
            let b = request(std::str::from_utf8(&extra).unwrap());
            // (a second From: the control byte is found before the duplicate)
            let want = ParseError::Control {
                line: EXTRA_LINE,
                byte,
            };
            assert_eq!(Message::parse(&b).unwrap_err(), want, "{header} {byte:#x}");
            assert_eq!(
                Message::parse_proxy(&b).unwrap_err(),
                want,
                "{header} {byte:#x}"
            );
            assert_eq!(want.name(), "control_character");
        }
    }
}

#[test]
fn control_bytes_at_every_offset_of_a_long_value_are_found() {
    // the scan reads 16 bytes at a time: every lane and the scalar tail
    for at in 0..40 {
        for byte in [0u8, 0x1b, 0x7f] {
            let mut v = vec![b'x'; 40];
            v[at] = byte;
            let extra = format!("X-Pad: {}\r\n", String::from_utf8(v).unwrap());
            let b = request(&extra);
            assert_eq!(
                Message::parse_proxy(&b).unwrap_err(),
                ParseError::Control {
                    line: EXTRA_LINE,
                    byte
                },
                "at {at}"
            );
        }
    }
}

#[test]
fn lone_cr_and_lf_are_line_break_errors() {
    for bad in ["X-A: a\rb\r\n", "X-A: a\nb\r\n", "X-A: a\r\r\n"] {
        let b = request(bad);
        assert_eq!(
            Message::parse_proxy(&b).unwrap_err(),
            ParseError::LineBreak { line: EXTRA_LINE },
            "{bad:?}"
        );
    }
}

#[test]
fn htab_folding_and_utf8_stay_valid() {
    let b = request("Subject: a\tb\r\n  folded\r\n\tagain\r\nX-Utf8: caf\u{e9} \u{2603}\r\n");
    let m = Message::parse_proxy(&b).unwrap();
    assert_eq!(
        m.header(takt_sip::wire::HeaderName::Subject)
            .map(<[u8]>::len),
        Some(21)
    );
}

#[test]
fn quoted_pairs_may_carry_control_bytes_only_inside_quotes_or_comments() {
    // RFC 4475 intmeth: "BEL:\<BEL> NUL:\<NUL> DEL:\<DEL>" in a display name
    let ok = request("X-Q: \"a\\\u{0}b\\\u{7f}\" <sip:x@y>\r\nUser-Agent: t (c \\\u{1b} d)\r\n");
    Message::parse_proxy(&ok).unwrap();
    // a quoted-pair cannot hold CR or LF
    let cr = request("X-Q: \"a\\\rb\"\r\n");
    assert_eq!(
        Message::parse_proxy(&cr).unwrap_err(),
        ParseError::LineBreak { line: EXTRA_LINE }
    );
    // outside quotes a backslash does not escape
    let bare = request("X-Q: a\\\u{0}b\r\n");
    assert_eq!(
        Message::parse_proxy(&bare).unwrap_err(),
        ParseError::Control {
            line: EXTRA_LINE,
            byte: 0
        }
    );
    // after the closing quote the pair is over, an escaped quote does not close
    let after = request("X-Q: \"a\\\"\" \u{0}\r\n");
    assert_eq!(
        Message::parse_proxy(&after).unwrap_err(),
        ParseError::Control {
            line: EXTRA_LINE,
            byte: 0
        }
    );
    // a quoted string may span a fold
    let folded = request("X-Q: \"a\r\n b\\\u{7}c\"\r\n");
    Message::parse_proxy(&folded).unwrap();
}

#[test]
fn control_bytes_in_the_start_line_are_refused() {
    let mut b = request("");
    b[10] = 0x1b;
    assert_eq!(
        Message::parse(&b).unwrap_err(),
        ParseError::Control {
            line: 1,
            byte: 0x1b
        }
    );
}

#[derive(Default)]
struct Rec(Vec<Vec<u8>>);

impl Sink for Rec {
    fn send(&mut self, _: &Target, bytes: &[u8]) -> Result<(), SendError> {
        self.0.push(bytes.to_vec());
        Ok(())
    }
}

fn proxy(mode: Mode) -> Proxy {
    let mut c = ProxyConfig::new(
        mode,
        Local {
            host: "10.0.0.9".into(),
            port: 5060,
        },
    );
    c.next_hop = Some(Target {
        addr: "10.0.0.2:5062".parse().unwrap(),
        transport: Transport::Udp,
        conn: None,
    });
    Proxy::new(c)
}

fn feed(p: &Proxy, b: &[u8], sink: &mut Rec) -> takt_sip::proxy::Outcome {
    p.handle(
        &Inbound {
            bytes: b,
            from: Target {
                addr: "10.0.0.1:5061".parse().unwrap(),
                transport: Transport::Udp,
                conn: None,
            },
            now: 0,
            queue_delay_ns: 0,
        },
        &mut Scratch::new(),
        sink,
    )
}

#[test]
fn the_proxy_answers_400_and_forwards_nothing() {
    for mode in [Mode::Stateless, Mode::Stateful] {
        let p = proxy(mode);
        let mut r = Rec::default();
        let o = feed(&p, &request("X-Unparsed: nul\u{0}here\r\n"), &mut r);
        assert_eq!(o.disposition, Disposition::Replied(400), "{mode:?}");
        assert_eq!(o.error.map(|e| e.name()), Some("control_character"));
        assert_eq!(r.0.len(), 1, "only the 400, nothing forwarded: {mode:?}");
        let answer = Message::parse(&r.0[0]).unwrap();
        assert_eq!(answer.status(), Some(400));
        let status_line =
            String::from_utf8_lossy(answer.start_line_span().of(&r.0[0])).into_owned();
        assert!(
            status_line.contains("line 8: control character 0x00"),
            "{status_line}"
        );
    }
}

#[test]
fn the_answer_never_carries_the_control_byte_back() {
    // the byte is in the Call-ID, a line the 400 would copy: dropped
    let b = String::from_utf8(request(""))
        .unwrap()
        .replace("Call-ID: ctl@", "Call-ID: c\u{1}tl@");
    let p = proxy(Mode::Stateful);
    let mut r = Rec::default();
    let o = feed(&p, b.as_bytes(), &mut r);
    assert_eq!(o.disposition, Disposition::DroppedMalformed);
    assert_eq!(o.error.map(|e| e.name()), Some("control_character"));
    assert!(r.0.is_empty());
}

#[test]
fn responses_and_acks_with_control_bytes_are_dropped_and_counted() {
    let ack = String::from_utf8(request("X-A: \u{7f}\r\n"))
        .unwrap()
        .replace("INVITE", "ACK");
    let resp = "SIP/2.0 200 OK\r\n\
Via: SIP/2.0/UDP 10.0.0.9:5060;branch=z9hG4bK-x\r\n\
Via: SIP/2.0/UDP 10.0.0.1:5061;branch=z9hG4bK-ctl\r\n\
From: <sip:alice@10.0.0.1>;tag=1\r\nTo: <sip:bob@10.0.0.9>;tag=2\r\n\
Call-ID: ctl@10.0.0.1\r\nCSeq: 1 INVITE\r\nX-B: a\u{0}\r\nContent-Length: 0\r\n\r\n";
    for mode in [Mode::Stateless, Mode::Stateful] {
        let p = proxy(mode);
        for b in [ack.as_bytes(), resp.as_bytes()] {
            let mut r = Rec::default();
            let o = feed(&p, b, &mut r);
            assert_eq!(o.disposition, Disposition::DroppedMalformed, "{mode:?}");
            assert_eq!(o.error.map(|e| e.name()), Some("control_character"));
            assert!(r.0.is_empty());
        }
    }
}
