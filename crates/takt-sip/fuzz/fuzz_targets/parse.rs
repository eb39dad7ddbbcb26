//! The parser never panics; what parses re-parses after `emit` to the same
//! structure; the stream framer never panics and agrees with the parser.
#![no_main]

use libfuzzer_sys::fuzz_target;
use takt_sip::wire::stream::{Frame, Framer};
use takt_sip::wire::Message;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Message::parse(data) {
        let mut out = Vec::new();
        m.emit(&mut out);
        let m2 = Message::parse(&out).expect("emitted message re-parses");
        assert_eq!(m.headers().len(), m2.headers().len());
        assert_eq!(m.vias().len(), m2.vias().len());
        assert_eq!(m.body(), m2.body());
        assert_eq!(m.call_id(), m2.call_id());
        assert_eq!(m.cseq_num(), m2.cseq_num());
    }
    let f = Framer::new(65_535);
    if let Ok(Frame::Message { skip, len }) = f.frame(data) {
        assert!(skip + len <= data.len());
        let _ = Message::parse_stream(&data[skip..skip + len]);
    }
});
