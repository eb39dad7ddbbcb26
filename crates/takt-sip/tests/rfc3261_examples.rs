//! Messages from RFC 3261 (§24.2 call flow, §7 and §20 examples).

use takt_sip::wire::{HeaderName, Message, Method, Rport};

const F1_INVITE: &[u8] = b"INVITE sip:bob@biloxi.com SIP/2.0\r\n\
Via: SIP/2.0/UDP pc33.atlanta.com;branch=z9hG4bKnashds8\r\n\
Max-Forwards: 70\r\n\
To: Bob <sip:bob@biloxi.com>\r\n\
From: Alice <sip:alice@atlanta.com>;tag=1928301774\r\n\
Call-ID: a84b4c76e66710\r\n\
CSeq: 314159 INVITE\r\n\
Contact: <sip:alice@pc33.atlanta.com>\r\n\
Content-Type: application/sdp\r\n\
Content-Length: 142\r\n\
\r\n\
v=0\r\n\
o=alice 53655765 2353687637 IN IP4 pc33.atlanta.com\r\n\
s=-\r\n\
t=0 0\r\n\
c=IN IP4 pc33.atlanta.com\r\n\
m=audio 3456 RTP/AVP 0 1 3 99\r\n\
a=rtpmap:0 PCMU/8000\r\n";

const F9_200: &[u8] = b"SIP/2.0 200 OK\r\n\
Via: SIP/2.0/UDP server10.biloxi.com;branch=z9hG4bK4b43c2ff8.1\r\n\
\x20;received=192.0.2.3\r\n\
Via: SIP/2.0/UDP bigbox3.site3.atlanta.com;branch=z9hG4bK77ef4c2312983.1\r\n\
\x20;received=192.0.2.2\r\n\
Via: SIP/2.0/UDP pc33.atlanta.com;branch=z9hG4bK776asdhds\r\n\
\x20;received=192.0.2.1\r\n\
To: Bob <sip:bob@biloxi.com>;tag=a6c85cf\r\n\
From: Alice <sip:alice@atlanta.com>;tag=1928301774\r\n\
Call-ID: a84b4c76e66710@pc33.atlanta.com\r\n\
CSeq: 314159 INVITE\r\n\
Contact: <sip:bob@192.0.2.4>\r\n\
Content-Type: application/sdp\r\n\
Content-Length: 0\r\n\
\r\n";

const COMPACT: &[u8] = b"INVITE sip:bob@biloxi.com SIP/2.0\r\n\
v: SIP/2.0/UDP pc33.atlanta.com;branch=z9hG4bKnashds8;rport\r\n\
Max-Forwards: 70\r\n\
t: Bob <sip:bob@biloxi.com>\r\n\
f: Alice <sip:alice@atlanta.com>;tag=1928301774\r\n\
i: a84b4c76e66710\r\n\
CSeq: 314159 INVITE\r\n\
m: <sip:alice@pc33.atlanta.com>\r\n\
Route: <sip:p1.example.com;lr>,<sip:p2.domain.com;lr>\r\n\
Route: <sip:p3.example.com;lr>\r\n\
c: application/sdp\r\n\
l: 0\r\n\
\r\n";

#[test]
fn call_flow_invite() {
    let m = Message::parse(F1_INVITE).unwrap();
    assert_eq!(m.method(), Some(Method::Invite));
    assert_eq!(m.request_uri().unwrap().host.of(F1_INVITE), b"biloxi.com");
    assert_eq!(m.body().len(), 142);
    assert_eq!(m.max_forwards(), Some(70));
    assert_eq!(
        m.header(HeaderName::ContentType),
        Some(&b"application/sdp"[..])
    );
}

#[test]
fn folded_via_params_in_response() {
    let m = Message::parse(F9_200).unwrap();
    assert_eq!(m.status(), Some(200));
    assert_eq!(m.vias().len(), 3);
    assert_eq!(m.vias()[0].received.unwrap().of(F9_200), b"192.0.2.3");
    assert_eq!(m.to_tag(), Some(&b"a6c85cf"[..]));
}

#[test]
fn compact_forms_and_route_lists() {
    let m = Message::parse(COMPACT).unwrap();
    assert_eq!(m.top_via().rport, Rport::Requested);
    assert_eq!(m.routes().len(), 3);
    assert_eq!(m.routes()[1].uri.of(COMPACT), b"sip:p2.domain.com;lr");
    assert_eq!(m.call_id(), b"a84b4c76e66710");
    assert_eq!(m.content_length(), Some(0));
}

#[test]
fn stream_parsing_requires_content_length() {
    let no_cl = b"OPTIONS sip:a@b SIP/2.0\r\nVia: SIP/2.0/TCP h;branch=z9hG4bK1\r\n\
To: <sip:a@b>\r\nFrom: <sip:c@d>;tag=1\r\nCall-ID: x\r\nCSeq: 1 OPTIONS\r\n\r\n";
    assert!(Message::parse(no_cl).is_ok());
    assert_eq!(
        Message::parse_stream(no_cl).unwrap_err(),
        takt_sip::wire::ParseError::Missing(HeaderName::ContentLength)
    );
}

#[test]
fn owned_round_trip() {
    use takt_sip::wire::owned::OwnedMessage;
    let m = Message::parse(F1_INVITE).unwrap();
    let o = OwnedMessage::from_message(&m);
    let bytes = o.validated().unwrap();
    let m2 = Message::parse(&bytes).unwrap();
    assert_eq!(m2.body(), m.body());
    assert_eq!(OwnedMessage::from_message(&m2), o);
}

#[test]
fn garbage_never_panics() {
    // every prefix and a few corruptions of valid messages
    for src in [F1_INVITE, F9_200, COMPACT] {
        for n in 0..src.len() {
            let _ = Message::parse(&src[..n]);
        }
        let mut v = src.to_vec();
        for i in (0..v.len()).step_by(7) {
            v[i] ^= 0x5a;
            let _ = Message::parse(&v);
        }
    }
}
