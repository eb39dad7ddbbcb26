//! RFC 4475 torture messages (tests/fixtures/rfc4475): every valid message
//! parses; every message the RFC calls invalid is rejected with the
//! precise reason.

use takt_sip::wire::{
    HeaderName as H, LineError, Message, Method, ParseError as E, Rport, UriError, ValueError as V,
};

fn fixture(name: &str) -> Vec<u8> {
    let p = format!(
        "{}/tests/fixtures/rfc4475/{name}.dat",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Messages that must parse: §3.1.1 (valid), §3.2 (transaction-layer
/// semantics) and the §3.3 messages that are syntactically valid and
/// are handled above the parser (by the proxy or the endpoint).
const VALID: &[&str] = &[
    "wsinv",
    "intmeth",
    "esc01",
    "escnull",
    "esc02",
    "lwsdisp",
    "longreq",
    "dblreq",
    "semiuri",
    "transports",
    "unreason",
    "noreason",
    "badbranch",
    "unkscm",
    "novelsc",
    "unksm2",
    "bext01",
    "invut",
    "regaut01",
    "bcast",
    "zeromf",
    "cparam01",
    "cparam02",
    "regescrt",
    "sdp01",
    "inv2543",
    "mpart01",
];

fn value(header: H, line: u16, error: V) -> E {
    E::Value {
        header,
        line,
        error,
    }
}

#[test]
fn valid_messages_parse() {
    for name in VALID {
        let b = fixture(name);
        if let Err(e) = Message::parse(&b) {
            panic!("{name}: {e:?}");
        }
        let m = Message::parse_proxy(&b).unwrap_or_else(|e| panic!("{name} (proxy): {e:?}"));
        assert_eq!(m.check_deferred(), Ok(()), "{name}");
        assert_eq!(
            m.headers().len(),
            Message::parse(&b).unwrap().headers().len()
        );
    }
}

#[test]
fn invalid_messages_are_rejected_precisely() {
    let cases: &[(&str, E)] = &[
        ("badinv01", value(H::Via, 7, V::Param)),
        (
            "clerr",
            E::BodyTruncated {
                declared: 9999,
                available: 154,
            },
        ),
        ("ncl", value(H::ContentLength, 10, V::Negative)),
        ("scalar02", value(H::CSeq, 5, V::Overflow)),
        ("scalarlg", value(H::CSeq, 5, V::Overflow)),
        ("quotbal", value(H::To, 2, V::Quote)),
        ("ltgtruri", E::RequestLine(LineError::Bracketed)),
        ("lwsruri", E::RequestUri(UriError::Whitespace)),
        ("lwsstart", E::RequestLine(LineError::ExtraSpace)),
        ("trws", E::RequestLine(LineError::TrailingSpace)),
        ("escruri", E::RequestUri(UriError::Headers)),
        ("baddate", value(H::Date, 8, V::Date)),
        ("regbadct", value(H::Contact, 8, V::NameAddr)),
        ("badaspec", value(H::To, 5, V::NameAddr)),
        ("baddn", value(H::From, 4, V::NameAddr)),
        ("badvers", E::Version),
        ("mismatch01", E::CSeqMismatch),
        ("mismatch02", E::CSeqMismatch),
        ("bigcode", E::StatusCode),
        // §3.3: semantically invalid in ways the parser owns
        ("insuf", E::Missing(H::To)),
        ("multi01", E::Duplicate(H::CSeq)),
        ("mcl01", E::Duplicate(H::ContentLength)),
    ];
    for (name, want) in cases {
        let b = fixture(name);
        match Message::parse(&b) {
            Ok(_) => panic!("{name}: parsed, expected {want:?}"),
            Err(e) => assert_eq!(&e, want, "{name}: {e}"),
        }
        // the proxy's parse: the same rejection, unless the only defect is
        // in a value a proxy passes on unchanged (RFC 3261 §16.3 step 1),
        // which `check_deferred` then finds with the same precision
        let passive = matches!(
            want,
            E::Value {
                header: H::Contact | H::RecordRoute | H::Date | H::Expires | H::RetryAfter,
                ..
            }
        );
        match Message::parse_proxy(&b) {
            Ok(m) => {
                assert!(
                    passive,
                    "{name}: the proxy parse accepted it, expected {want:?}"
                );
                assert_eq!(m.check_deferred().as_ref(), Err(want), "{name}");
            }
            Err(e) => {
                assert!(!passive, "{name}: the proxy parse rejected {e:?}");
                assert_eq!(&e, want, "{name}: {e}");
            }
        }
    }
    // the answers a server gives
    assert_eq!(E::Version.status(), 505);
    assert_eq!(E::CSeqMismatch.status(), 400);
}

#[test]
fn every_fixture_is_classified() {
    let dir = format!("{}/tests/fixtures/rfc4475", env!("CARGO_MANIFEST_DIR"));
    let n = std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "dat")
        })
        .count();
    assert_eq!(n, VALID.len() + 22);
}

#[test]
fn wsinv_details() {
    let b = fixture("wsinv");
    let m = Message::parse(&b).unwrap();
    assert_eq!(m.method(), Some(Method::Invite));
    assert_eq!(m.max_forwards(), Some(68));
    assert_eq!(m.cseq_num(), 9);
    assert_eq!(m.cseq_method(), Method::Invite);
    assert_eq!(m.vias().len(), 3);
    assert_eq!(m.vias()[0].branch.unwrap().of(&b), b"390skdjuw");
    assert_eq!(m.vias()[1].host.of(&b), b"spindle.example.com");
    assert_eq!(m.vias()[1].transport.of(&b), b"TCP");
    assert_eq!(m.vias()[2].branch.unwrap().of(&b), b"z9hG4bK30239");
    assert_eq!(m.to_tag(), Some(&b"1918181833n"[..]));
    assert_eq!(m.from_tag(), Some(&b"98asjd8"[..]));
    assert_eq!(m.call_id(), b"wsinv.ndaksdj@192.0.2.1");
    assert_eq!(m.routes().len(), 1);
    assert!(m.routes()[0].lr);
    assert_eq!(m.body().len(), 150);
    assert_eq!(m.header(H::Subject), Some(&b""[..]));
    let nf = m
        .headers()
        .iter()
        .find(|h| h.name_span.of(&b) == b"NewFangledHeader")
        .unwrap();
    assert_eq!(
        nf.value.of(&b),
        b"newfangled value\r\n continued newfangled value"
    );
}

#[test]
fn intmeth_unusual_characters() {
    let b = fixture("intmeth");
    let m = Message::parse(&b).unwrap();
    assert_eq!(m.method(), Some(Method::Other));
    assert_eq!(m.max_forwards(), Some(255));
    assert_eq!(m.cseq_num(), 139122385);
    assert!(m.call_id().starts_with(b"intmeth.word%ZK"));
    assert_eq!(m.from_tag(), Some(&b"_token~1'+`*%!-."[..]));
}

#[test]
fn dblreq_ignores_trailing_octets() {
    let b = fixture("dblreq");
    let m = Message::parse(&b).unwrap();
    assert_eq!(m.method(), Some(Method::Register));
    assert!(m.body().is_empty());
    assert!(m.len() < b.len());
}

#[test]
fn longreq_has_34_vias_and_long_values() {
    let b = fixture("longreq");
    let m = Message::parse(&b).unwrap();
    assert_eq!(m.vias().len(), 34);
    assert_eq!(m.top_via().host.of(&b), b"sip33.example.com");
    assert_eq!(m.vias()[33].received.unwrap().of(&b), b"192.0.2.5");
}

#[test]
fn responses_and_rport() {
    let b = fixture("noreason");
    let m = Message::parse(&b).unwrap();
    assert_eq!(m.status(), Some(100));
    let b = fixture("unreason");
    assert_eq!(Message::parse(&b).unwrap().status(), Some(200));
    let b = fixture("bcast");
    let m = Message::parse(&b).unwrap();
    assert_eq!(m.vias()[1].host.of(&b), b"255.255.255.255");
    assert_eq!(m.top_via().rport, Rport::Absent);
}

#[test]
fn esc02_method_is_unknown_and_contacts_counted() {
    let b = fixture("esc02");
    let m = Message::parse(&b).unwrap();
    assert_eq!(m.method(), Some(Method::Other));
    let contacts = m.headers().iter().filter(|h| h.name == H::Contact).count();
    assert_eq!(contacts, 2);
}

#[test]
fn mpart01_binary_multipart_body_is_framed_by_content_length() {
    // §3.1.1.11: a multipart body whose second part is binary S/MIME
    // (NUL bytes, bare LFs, bytes ≥ 0x80). The parser treats the body as
    // opaque octets framed by Content-Length; nothing inside it may end
    // the message or be read as a header.
    let b = fixture("mpart01");
    let m = Message::parse(&b).unwrap();
    assert_eq!(m.method(), Some(Method::Message));
    assert_eq!(m.body().len(), 553);
    assert_eq!(m.len(), b.len());
    assert!(m.body().starts_with(b"--7a9cbec02ceef655\r\n"));
    assert!(m.body().ends_with(b"\r\n--7a9cbec02ceef655--\r\n"));
    assert!(m.body().contains(&0u8));
    let ct = m
        .headers()
        .iter()
        .find(|h| h.name == H::ContentType)
        .expect("Content-Type");
    assert_eq!(
        ct.value.of(&b),
        b"multipart/mixed;boundary=7a9cbec02ceef655"
    );
    // One byte short is an incomplete message, not a shorter body.
    assert!(Message::parse(&b[..b.len() - 1]).is_err());
}

#[test]
fn round_trip_every_valid_fixture() {
    for name in VALID {
        let b = fixture(name);
        let m = Message::parse(&b).unwrap();
        let mut out = Vec::new();
        m.emit(&mut out);
        let m2 = Message::parse(&out).unwrap_or_else(|e| panic!("{name}: re-parse: {e}"));
        assert_eq!(
            m.start_line(),
            m2.start_line().clone_shifted(&m2, &m),
            "{name}"
        );
        assert_eq!(m.headers().len(), m2.headers().len(), "{name}");
        for (h1, h2) in m.headers().iter().zip(m2.headers()) {
            assert_eq!(h1.name, h2.name, "{name}");
            assert_eq!(h1.value.of(&b), h2.value.of(&out), "{name}");
        }
        assert_eq!(m.body(), m2.body(), "{name}");
        assert_eq!(m.vias().len(), m2.vias().len());
        assert_eq!(m.call_id(), m2.call_id());
        // emitting twice gives identical bytes
        let mut out2 = Vec::new();
        m2.emit(&mut out2);
        assert_eq!(out, out2, "{name}");
    }
}

trait Shift {
    fn clone_shifted(&self, from: &Message<'_>, to: &Message<'_>) -> Self;
}

impl Shift for takt_sip::wire::StartLine {
    /// The start line comes first in both buffers, so spans are equal once
    /// leading CRLFs (skipped by the parser) are accounted for.
    fn clone_shifted(&self, from: &Message<'_>, to: &Message<'_>) -> Self {
        let d = to.start_line_span().start() as isize - from.start_line_span().start() as isize;
        use takt_sip::wire::{Span, StartLine};
        let sh = |s: Span| {
            Span::new(
                (s.start() as isize + d) as usize,
                (s.end() as isize + d) as usize,
            )
        };
        match *self {
            StartLine::Request {
                method,
                method_span,
                uri,
            } => StartLine::Request {
                method,
                method_span: sh(method_span),
                uri: sh(uri),
            },
            StartLine::Response { code, reason } => StartLine::Response {
                code,
                reason: sh(reason),
            },
        }
    }
}
