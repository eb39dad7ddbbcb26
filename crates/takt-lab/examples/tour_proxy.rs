//! The README's tour: takt-sip's proxy in a program. A stateless proxy
//! with two worker threads forwards an OPTIONS request from a client
//! socket to a next hop (a plain UDP socket standing in for the UAS),
//! adding its Via; stopping the server returns its statistics.
//!
//! `cargo run --release -p takt-lab --example tour_proxy`

use std::net::UdpSocket;
use std::time::Duration;

use takt_sched::ThreadSpec;
use takt_sip::proxy::build::Local;
use takt_sip::proxy::{Mode, ProxyConfig, Target, Transport};
use takt_sip::transport::{Server, ServerConfig, WorkerModel};

fn main() -> std::io::Result<()> {
    let uas = UdpSocket::bind("127.0.0.1:0")?;
    uas.set_read_timeout(Some(Duration::from_secs(5)))?;

    // The proxy: where it forwards, and how its threads are made.
    let local = Local {
        host: String::new(), // filled in from the bound address
        port: 0,
    };
    let mut proxy = ProxyConfig::new(Mode::Stateless, local);
    proxy.next_hop = Some(Target {
        addr: uas.local_addr()?,
        transport: Transport::Udp,
        conn: None,
    });
    let mut server = ServerConfig::new("127.0.0.1:0".parse().expect("an address"));
    server.model = WorkerModel::Shared;
    server.workers = 2;
    server.spec = ThreadSpec::new("proxy"); // --cpus / --sched apply here
    let server = Server::start(proxy, server)?;
    println!("proxy listening on {}", server.local_addr());

    // A client sends a request through it.
    let client = UdpSocket::bind("127.0.0.1:0")?;
    let port = client.local_addr()?.port();
    let request = format!(
        "OPTIONS sip:bob@example.com SIP/2.0\r\n\
         Via: SIP/2.0/UDP 127.0.0.1:{port};branch=z9hG4bK-tour;rport\r\n\
         From: <sip:alice@example.com>;tag=a1\r\nTo: <sip:bob@example.com>\r\n\
         Call-ID: tour@example.com\r\nCSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\n\
         Content-Length: 0\r\n\r\n"
    );
    client.send_to(request.as_bytes(), server.local_addr())?;

    // The next hop receives it with the proxy's Via on top.
    let mut buf = [0u8; 2048];
    let (n, from) = uas.recv_from(&mut buf)?;
    let forwarded = String::from_utf8_lossy(&buf[..n]);
    let top_via = forwarded
        .lines()
        .find(|l| l.starts_with("Via:"))
        .unwrap_or_default();
    println!("the next hop got {n} bytes from {from}; top {top_via}");
    assert_ne!(
        top_via,
        format!("Via: SIP/2.0/UDP 127.0.0.1:{port};branch=z9hG4bK-tour;rport")
    );

    let stats = server.stop();
    println!("{} message(s) handled", stats.messages);
    Ok(())
}
