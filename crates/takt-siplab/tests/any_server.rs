//! The capacity search against SIP servers the laboratory did not start,
//! reached only by an address: takt's own proxy, running in this test
//! process, in the two ways a proxy decides where a request goes.
//! - Without a next hop it routes on the Request-URI (RFC 3261 §16.5):
//!   the generator's calls name its UAS (`sip:service@UAS`) and reach it,
//!   with or without a preloaded Route naming the proxy.
//! - With a fixed next hop it forwards there: the generator's UAS must
//!   listen at that address (`--uas`).
//! - A proxy that forwards nowhere the UAS listens ends the run with the
//!   diagnosis, never a capacity.
//!
//! Each search is the smallest the capacity tests use (100 to 200
//! calls/s, 0.3 s trials, 2 repetitions): seconds each.

use std::net::{SocketAddr, UdpSocket};

use takt_measure::suite::{RunContext, Suite};
use takt_sched::ThreadSpec;
use takt_sip::proxy::build::Local;
use takt_sip::proxy::{Mode, ProxyConfig, Target, Transport};
use takt_sip::transport::{Server, ServerConfig};
use takt_siplab::capacity::{self, CapacityOptions, GenLoad, NetKind, MIN_CALLS};
use takt_siplab::search::Step;
use takt_siplab::Error;

/// takt's proxy in `mode` on a free loopback port, with `next_hop` as its
/// fixed next hop or (`None`) routing on the Request-URI.
fn proxy(mode: Mode, next_hop: Option<SocketAddr>) -> Server {
    let mut pc = ProxyConfig::new(
        mode,
        Local {
            host: String::new(),
            port: 0,
        },
    );
    pc.next_hop = next_hop.map(|addr| Target {
        addr,
        transport: Transport::Udp,
        conn: None,
    });
    let mut sc = ServerConfig::new("127.0.0.1:0".parse().unwrap());
    sc.workers = 1;
    sc.spec = ThreadSpec::new("any-server-proxy");
    Server::start(pc, sc).expect("the proxy starts")
}

/// A loopback address no socket holds now.
fn free_addr() -> SocketAddr {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// `takt sip capacity --target ADDR --mode MODE` on the smallest plan.
fn options(target: SocketAddr, mode: Mode) -> CapacityOptions {
    CapacityOptions {
        targets: vec![target.to_string()],
        modes: vec![mode],
        model: takt_sip::transport::WorkerModel::Shared,
        workers: 1,
        cpus: None,
        sched: None,
        gen_cpus: None,
        gen_sched: None,
        threshold: 0.01,
        step: Step::default(),
        reps: Some(2),
        start_cps: 100.0,
        max_cps: 200.0,
        window: Some(0.3),
        net: NetKind::Loopback,
        ports: 4,
        transport: Transport::Udp,
        connections: 1,
        at: vec!["none".into()],
        at_workers: 1,
        no_search: false,
        plot: None,
        quick: false,
        uas: None,
        route_preload: false,
        cpu_limit: None,
        fleet: None,
        listen: None,
    }
}

/// The capacity row's `detail.capacity` ("≥ 200 (search ceiling)", …).
fn capacity_text(doc: &takt_measure::result::Document) -> String {
    let row = doc
        .results
        .iter()
        .find(|r| r.name == "capacity")
        .unwrap_or_else(|| panic!("no capacity row: {:?}", doc.notes));
    row.detail["capacity"].as_str().unwrap().to_string()
}

#[test]
fn a_proxy_that_routes_on_the_request_uri_is_measured() {
    for (mode, preload) in [(Mode::Stateless, false), (Mode::Stateful, true)] {
        let p = proxy(mode, None);
        let target = p.local_addr();
        let mut o = options(target, mode);
        o.route_preload = preload;
        let suite = o.resolve().unwrap();
        let plan = suite.search.clone().unwrap();
        let mut lines = Vec::new();
        let doc = capacity::run(
            &plan,
            |ip| {
                GenLoad::new(
                    suite.gen.clone(),
                    ip,
                    suite.window,
                    MIN_CALLS,
                    Default::default(),
                )
            },
            |l| lines.push(l.to_string()),
            |_| {},
        )
        .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        let cap = capacity_text(&doc);
        assert!(!cap.starts_with('<'), "{mode:?}: {cap}");
        // where the UAS listened and what the calls named, once
        assert_eq!(lines.len(), 1, "{lines:?}");
        let uas = lines[0]
            .strip_prefix("uas=")
            .and_then(|l| l.split(' ').next())
            .unwrap();
        assert!(
            lines[0].contains(&format!("request_uri=sip:service@{uas} ")),
            "{lines:?}"
        );
        assert!(lines[0].contains(&format!("target={target}")), "{lines:?}");
        assert_eq!(
            lines[0].contains(&format!("route=<sip:{target};lr>")),
            preload,
            "{lines:?}"
        );
        let snap = p.stop();
        assert!(snap.messages > 0, "{mode:?}: the proxy handled the calls");
    }
}

#[test]
fn a_proxy_with_a_fixed_next_hop_is_measured_with_the_uas_there() {
    let uas = free_addr();
    let p = proxy(Mode::Stateful, Some(uas));
    let mut o = options(p.local_addr(), Mode::Stateful);
    o.uas = Some(uas);
    let suite = o.resolve().unwrap();
    let doc = suite.run(&RunContext::quiet()).unwrap();
    let cap = capacity_text(&doc);
    assert!(!cap.starts_with('<'), "{cap}");
    drop(p);
}

#[test]
fn a_proxy_that_forwards_nowhere_ends_the_run_with_the_diagnosis() {
    // its next hop is a closed port, not the generator's UAS
    let p = proxy(Mode::Stateless, Some(free_addr()));
    let suite = options(p.local_addr(), Mode::Stateless).resolve().unwrap();
    let e = suite.run(&RunContext::quiet()).unwrap_err();
    let text = e.to_string();
    let Error::Case { source, .. } = &e else {
        panic!("not a case's error: {e:?}");
    };
    assert!(matches!(**source, Error::NothingReachedUas(_)), "{text}");
    assert!(text.contains("nothing reached the UAS"), "{text}");
    assert!(
        text.contains(&format!("went to {}", p.local_addr())),
        "{text}"
    );
    assert!(
        text.contains("with Request-URI sip:service@127.0.0.1:"),
        "{text}"
    );
    assert!(text.contains("nothing came back to the UAC"), "{text}");
    assert!(!text.contains("capacity"), "never a capacity: {text}");

    // a stateful one answers 100 Trying, and the diagnosis counts it
    let p = proxy(Mode::Stateful, Some(free_addr()));
    let suite = options(p.local_addr(), Mode::Stateful).resolve().unwrap();
    let text = suite.run(&RunContext::quiet()).unwrap_err().to_string();
    assert!(
        text.contains("the UAC got back ") && text.contains(" × 100"),
        "{text}"
    );
}

#[test]
fn a_uas_address_this_host_cannot_listen_on_is_refused_before_any_trial() {
    // TEST-NET-3: no interface of this host has it
    let mut o = options("127.0.0.1:9".parse().unwrap(), Mode::Stateless);
    o.uas = Some("203.0.113.5:5070".parse().unwrap());
    let e = o.resolve().unwrap().run(&RunContext::quiet()).unwrap_err();
    assert!(
        e.to_string()
            .contains("the generator's UAS cannot listen on 203.0.113.5:5070"),
        "{e}"
    );
    // a port another socket holds
    let held = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut o = options("127.0.0.1:9".parse().unwrap(), Mode::Stateless);
    o.uas = Some(held.local_addr().unwrap());
    let e = o.resolve().unwrap().run(&RunContext::quiet()).unwrap_err();
    assert!(e.to_string().contains("Address already in use"), "{e}");
}
