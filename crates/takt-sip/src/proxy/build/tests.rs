//! Tests of the message writers.

use super::*;

/// `write_headers_popping_via` line by line: every header line but
/// the top Via's, that one rewritten without its first via-parm.
fn popped_line_by_line(m: &Message<'_>) -> Vec<u8> {
    let b = m.buf();
    let top = m.top_via();
    let mut o = m.start_line_span().of(b).to_vec();
    for (i, h) in m.headers().iter().enumerate() {
        if i == top.header as usize {
            if let Some(next) = top.next_in_line {
                o.extend_from_slice(h.name_span.of(b));
                o.extend_from_slice(b": ");
                o.extend_from_slice(&b[next as usize..h.value.end()]);
                o.extend_from_slice(b"\r\n");
            }
            continue;
        }
        o.extend_from_slice(h.line.of(b));
    }
    o.extend_from_slice(b"\r\n");
    o.extend_from_slice(m.body());
    o
}

#[test]
fn forwarded_response_is_the_input_without_the_top_via_parm() {
    let texts: [&str; 6] = [
        // the common shape: our Via line, then the caller's
        "SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP p:5060;branch=z9hG4bK1\r\n\
         Via: SIP/2.0/UDP c:5061;branch=z9hG4bK2\r\nFrom: <sip:a@x>;tag=1\r\n\
         To: <sip:b@y>;tag=2\r\nCall-ID: c1\r\nCSeq: 1 INVITE\r\n\
         Content-Length: 4\r\n\r\nbody",
        // both via-parms in one line; trailing bytes past Content-Length
        "SIP/2.0 180 Ringing\r\nVia: SIP/2.0/UDP p;branch=z9hG4bK1, SIP/2.0/TCP c;branch=z9hG4bK2\r\n\
         From: <sip:a@x>;tag=1\r\nTo: <sip:b@y>\r\nCall-ID: c2\r\n\
         CSeq: 7 BYE\r\nContent-Length: 2\r\n\r\nokEXTRA",
        // Via not first, compact names, folded lines (the top Via's too)
        "SIP/2.0 486 Busy Here\r\nf: <sip:a@x>;tag=1\r\nv: SIP/2.0/UDP p\r\n ;branch=z9hG4bK1\r\n\
         Subject: one\r\n two\r\nv: SIP/2.0/UDP c;branch=z9hG4bK2\r\nt: <sip:b@y>\r\n\
         i: c3\r\nCSeq: 2 INVITE\r\n\r\n",
        // leading empty lines (ignored, RFC 3261 §7.5), no Content-Length
        "\r\n\r\nSIP/2.0 100 Trying\r\nVia: SIP/2.0/UDP p;branch=z9hG4bK1\r\n\
         Via: SIP/2.0/UDP c;branch=z9hG4bK2\r\nFrom: <sip:a@x>;tag=1\r\n\
         To: <sip:b@y>\r\nCall-ID: c4\r\nCSeq: 1 INVITE\r\n\r\n",
        // the top Via line holds three via-parms; it is the last header
        "SIP/2.0 603 Decline\r\nFrom: <sip:a@x>;tag=1\r\nTo: <sip:b@y>\r\n\
         Call-ID: c5\r\nCSeq: 1 INVITE\r\n\
         Via: SIP/2.0/UDP p;branch=z9hG4bK1,SIP/2.0/UDP q;branch=z9hG4bK3 , SIP/2.0/UDP c\r\n\r\n",
        // a body that is a whole message's worth of CRLFs
        "SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP p;branch=z9hG4bK1\r\nVia: SIP/2.0/UDP c\r\n\
         From: <sip:a@x>;tag=1\r\nTo: <sip:b@y>\r\nCall-ID: c6\r\nCSeq: 1 INVITE\r\n\
         Content-Length: 6\r\n\r\n\r\n\r\n\r\n",
    ];
    for text in texts {
        for m in [
            Message::parse(text.as_bytes()).unwrap(),
            Message::parse_proxy(text.as_bytes()).unwrap(),
        ] {
            let mut out = b"kept".to_vec();
            assert!(forward_response(&mut out, &m), "{text:?}");
            let mut want = b"kept".to_vec();
            want.extend_from_slice(&popped_line_by_line(&m));
            assert_eq!(
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&want),
                "{text:?}"
            );
        }
    }
}

#[test]
fn edited_headers_match_the_line_by_line_copy() {
    let texts: [&str; 5] = [
        // the common shape: Max-Forwards after the Via, a body
        "INVITE sip:b@y SIP/2.0\r\nVia: SIP/2.0/UDP c:5061;branch=z9hG4bK1\r\n\
         From: <sip:a@x>;tag=1\r\nTo: <sip:b@y>\r\nCall-ID: c1\r\nCSeq: 1 INVITE\r\n\
         Max-Forwards: 70\r\nContent-Length: 4\r\n\r\nbody",
        // Max-Forwards first; rport asked for; Route lines kept
        "BYE sip:b@y SIP/2.0\r\nMax-Forwards: 1\r\nRoute: <sip:n1;lr>\r\n\
         Via: SIP/2.0/UDP c;rport;branch=z9hG4bK2\r\nRoute: <sip:n2;lr>, <sip:n3;lr>\r\n\
         From: <sip:a@x>;tag=1\r\nTo: <sip:b@y>;tag=2\r\nCall-ID: c2\r\nCSeq: 2 BYE\r\n\r\n",
        // neither Max-Forwards nor Content-Length
        "OPTIONS sip:b@y SIP/2.0\r\nVia: SIP/2.0/TCP c;branch=z9hG4bK3\r\nFrom: <sip:a@x>;tag=1\r\n\
         To: <sip:b@y>\r\nCall-ID: c3\r\nCSeq: 3 OPTIONS\r\n\r\n",
        // compact names, folded lines, two via-parms in the top line
        "INVITE sip:b@y SIP/2.0\r\nf: <sip:a@x>;tag=1\r\nv: SIP/2.0/UDP c;rport\r\n ;branch=z9hG4bK4, \
         SIP/2.0/UDP d;branch=z9hG4bK5\r\nSubject: one\r\n two\r\nt: <sip:b@y>\r\ni: c4\r\n\
         CSeq: 4 INVITE\r\nl: 0\r\nMax-Forwards: 9\r\n\r\n",
        // Max-Forwards 0 (forwarded as 0 when asked to), last header
        "MESSAGE sip:b@y SIP/2.0\r\nVia: SIP/2.0/UDP c;branch=z9hG4bK6\r\nFrom: <sip:a@x>;tag=1\r\n\
         To: <sip:b@y>\r\nCall-ID: c5\r\nCSeq: 5 MESSAGE\r\nContent-Length: 2\r\n\
         Max-Forwards: 0\r\n\r\nhiEXTRA",
    ];
    let ip: IpAddr = "192.0.2.7".parse().unwrap();
    let stamps = [
        Stamp::default(),
        Stamp {
            received: Some(ip),
            rport: None,
        },
        Stamp {
            received: None,
            rport: Some(5062),
        },
        Stamp {
            received: Some(ip),
            rport: Some(5062),
        },
    ];
    let local = Prebuilt::new(&Local {
        host: "p".into(),
        port: 5060,
    });
    for text in texts {
        let m = Message::parse_proxy(text.as_bytes()).unwrap();
        for stamp in stamps {
            let f = Forward {
                transport: Transport::Udp,
                key: 1,
                loop_hash: 2,
                local: &local,
                new_ruri: None,
                drop_routes: &[],
                append_route: None,
                stamp,
                record_route: false,
            };
            let mut fast = b"kept".to_vec();
            write_headers_edited(&mut fast, &m, stamp);
            let mut lines = b"kept".to_vec();
            write_headers_dropping_routes(&mut lines, &m, &f);
            assert_eq!(
                String::from_utf8_lossy(&fast),
                String::from_utf8_lossy(&lines),
                "{text:?} {stamp:?}"
            );
        }
    }
}

#[test]
fn trying_is_the_local_100() {
    let texts = [
        "INVITE sip:b@y SIP/2.0\r\nVia: SIP/2.0/UDP c:5061;rport;branch=z9hG4bK1\r\n\
         v: SIP/2.0/UDP d;branch=z9hG4bK0\r\nf: <sip:a@x>;tag=1\r\nTo: <sip:b@y>\r\n\
         i: c1\r\nCSeq: 1 INVITE\r\nMax-Forwards: 70\r\nContent-Length: 4\r\n\r\nbody",
        "INVITE sip:b@y SIP/2.0\r\nt: <sip:b@y>;tag=9\r\nv: SIP/2.0/TCP c\r\n ;branch=z9hG4bK2\r\n\
         From: <sip:a@x>;tag=1\r\nCall-ID: c2\r\nCSeq: 2 INVITE\r\n\r\n",
    ];
    let stamps = [
        Stamp::default(),
        Stamp {
            received: Some("192.0.2.7".parse().unwrap()),
            rport: Some(5062),
        },
    ];
    for text in texts {
        let m = Message::parse_proxy(text.as_bytes()).unwrap();
        for stamp in stamps {
            let mut got = b"kept".to_vec();
            trying(&mut got, &m, stamp);
            let mut want = b"kept".to_vec();
            let o = LocalOpts {
                stamp,
                ..LocalOpts::default()
            };
            local_response(&mut want, &m, 100, "Trying", o);
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want),
                "{text:?} {stamp:?}"
            );
        }
    }
}

#[test]
fn decimal_and_ip_writers_match_fmt() {
    for v in [
        0u64,
        1,
        9,
        10,
        99,
        100,
        5060,
        65535,
        u64::from(u32::MAX),
        u64::MAX,
    ] {
        let mut o = Vec::new();
        push_dec(&mut o, v);
        assert_eq!(o, v.to_string().into_bytes());
    }
    for ip in ["0.0.0.0", "127.0.0.1", "192.168.100.255", "10.20.3.4"] {
        let mut o = Vec::new();
        push_ip(&mut o, ip.parse().unwrap());
        assert_eq!(o, ip.as_bytes());
    }
    let mut o = Vec::new();
    push_ip(&mut o, "2001:db8::1".parse().unwrap());
    assert_eq!(o, b"[2001:db8::1]");
}

#[test]
fn same_ip_agrees_with_parsing() {
    let ips: [IpAddr; 4] = [
        "127.0.0.1".parse().unwrap(),
        "10.200.3.45".parse().unwrap(),
        "0.0.0.0".parse().unwrap(),
        "2001:db8::1".parse().unwrap(),
    ];
    let hosts = [
        "127.0.0.1",
        "127.0.0.01",
        "10.200.3.45",
        "10.200.3.4",
        "0.0.0.0",
        "localhost",
        "2001:db8::1",
        "2001:DB8:0::1",
        "",
        "127.0.0.1.",
        ".127.0.0.1",
        "127..0.1",
        "127.0.0",
        "1270.0.0.1",
        "127.0.0.1 ",
        "1.2.3.4.5",
        "00.0.0.0",
        "0.0.0.00",
        "127.000.0.1",
        "255.255.255.255",
        "256.0.0.1",
        "10.200.3.045",
    ];
    for ip in ips {
        for h in hosts {
            let parsed = h.parse::<IpAddr>().ok() == Some(ip);
            assert_eq!(same_ip(h.as_bytes(), ip), parsed, "{h} vs {ip}");
        }
    }
    // every one-byte edit of the texts of a few addresses
    for ip in ["1.2.3.4", "10.0.20.255", "192.168.100.7", "0.0.0.0"] {
        let addr: IpAddr = ip.parse().unwrap();
        for v in crate::test_util::one_edit_away(&[ip.as_bytes()], b"0123456789.a ") {
            let text = String::from_utf8(v.clone()).unwrap();
            let parsed = text.parse::<IpAddr>().ok() == Some(addr);
            assert_eq!(same_ip(&v, addr), parsed, "{text:?} vs {ip}");
        }
    }
}
