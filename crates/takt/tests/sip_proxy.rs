//! `takt sip proxy`'s exit summary: one INVITE through a proxy on an
//! ephemeral port, then the table printed at exit (takt-sip hands out the
//! rows as data; the binary lays them out with takt-measure's table model).

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn exit_summary_is_a_table_with_units_in_headers() {
    let uas = UdpSocket::bind("127.0.0.1:0").unwrap();
    uas.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let next = uas.local_addr().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_takt"))
        .args(["sip", "proxy", "--listen", "127.0.0.1:0", "--no-tcp"])
        .args(["--mode", "stateless", "--stats", "off", "--interval", "0"])
        .args(["--duration", "3", "--next-hop", &next.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("takt runs");
    // "takt sip proxy: stateless shared (lifo wake) x2 on 127.0.0.1:PORT (udp), ..."
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    // Keep draining: a closed stderr would fail the proxy's later lines.
    let drain = std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let addr = first
        .split(" on ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no listen address in {first:?}"));
    let uac = UdpSocket::bind("127.0.0.1:0").unwrap();
    let via = uac.local_addr().unwrap();
    let invite = format!(
        "INVITE sip:service@{next} SIP/2.0\r\n\
         Via: SIP/2.0/UDP {via};branch=z9hG4bK-1-1-0\r\n\
         From: sipp <sip:sipp@{via}>;tag=1\r\n\
         To: service <sip:service@{next}>\r\n\
         Call-ID: 1-1@127.0.0.1\r\nCSeq: 1 INVITE\r\n\
         Contact: sip:sipp@{via}\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n"
    );
    uac.send_to(invite.as_bytes(), addr).unwrap();
    let mut buf = [0u8; 2048];
    let (n, _) = uas.recv_from(&mut buf).expect("the INVITE is forwarded");
    assert!(buf[..n].starts_with(b"INVITE "));
    let out = child.wait_with_output().unwrap();
    drain.join().unwrap().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let header = text
        .lines()
        .find(|l| l.starts_with("kind "))
        .unwrap_or_else(|| panic!("no table header in\n{text}"));
    for h in ["count", "forwarded", "T_sip p50 (µs)", "K_snd p99 (µs)"] {
        assert!(header.contains(h), "{h} missing: {header}");
    }
    let invite_row = text
        .lines()
        .find(|l| l.starts_with("invite "))
        .unwrap_or_else(|| panic!("no invite row in\n{text}"));
    let cells: Vec<&str> = invite_row.split_whitespace().collect();
    assert_eq!(&cells[1..3], ["1", "1"], "count, forwarded: {invite_row}");
    assert!(text.contains("per worker: "), "{text}");
    assert!(
        text.lines().all(|l| l == l.trim_end()),
        "trailing spaces:\n{text}"
    );
}
