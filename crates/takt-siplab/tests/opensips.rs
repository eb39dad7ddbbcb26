//! The `opensips` target against the real server (`scripts/peers.sh`
//! builds it; a missing build fails these tests with the sentence that
//! says how to build it): OpenSIPS accepts the lab's configuration in
//! both modes; started, it relays calls, runs pinned under the lab's
//! policy in every process, reports its shared memory, and leaves nothing
//! behind; a port another process holds is refused; `takt sip capacity
//! --quick` runs end to end in both modes; a sweep at two worker counts
//! applies its profiles to every OpenSIPS process.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use takt_measure::suite::{RunContext, Suite};
use takt_sched::CpuSet;
use takt_sip::proxy::{Mode, Transport};
use takt_sip::transport::WorkerModel;
use takt_siplab::capacity::{CapacityOptions, GenLoad, NetKind};
use takt_siplab::net::VethNet;
use takt_siplab::server_stats::{parse_proc_stat, ServerWindow};
use takt_siplab::sweep::{self, Preset, SweepOptions};
use takt_siplab::target::opensips::{self, Build};
use takt_siplab::target::{Target, TargetKind, TargetSetup, TcpSetup};

/// A UAS on its own thread: answers every request with 200 OK to the
/// request's source address, copying the headers a response carries.
struct Uas {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Uas {
    fn start() -> Uas {
        Uas::start_on("127.0.0.1".parse().unwrap())
    }

    fn start_on(ip: IpAddr) -> Uas {
        let s = UdpSocket::bind(SocketAddr::new(ip, 0)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let addr = s.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while !st.load(Ordering::Acquire) {
                let Ok((n, from)) = s.recv_from(&mut buf) else {
                    continue;
                };
                let req = String::from_utf8_lossy(&buf[..n]).into_owned();
                if req.starts_with("SIP/2.0") || req.starts_with("ACK ") {
                    continue;
                }
                let mut resp = String::from("SIP/2.0 200 OK\r\n");
                for line in req.lines() {
                    let lower = line.to_ascii_lowercase();
                    if ["via:", "record-route:", "from:", "call-id:", "cseq:"]
                        .iter()
                        .any(|h| lower.starts_with(h))
                    {
                        resp += line;
                        resp += "\r\n";
                    } else if lower.starts_with("to:") {
                        resp += line;
                        resp += ";tag=uas1\r\n";
                    }
                }
                resp += &format!("Contact: <sip:uas@{addr}>\r\nContent-Length: 0\r\n\r\n");
                let _ = s.send_to(resp.as_bytes(), from);
            }
        });
        Uas {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Uas {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn request(method: &str, uac: SocketAddr, uas: SocketAddr, n: u32, transport: &str) -> String {
    format!(
        "{method} sip:uas@{uas} SIP/2.0\r\n\
         Via: SIP/2.0/{transport} {uac};branch=z9hG4bK-os-{method}-{n}\r\n\
         Max-Forwards: 70\r\n\
         From: <sip:uac@{uac}>;tag=uac{n}\r\n\
         To: <sip:uas@{uas}>\r\n\
         Call-ID: opensips-test-{method}-{n}@{uac}\r\n\
         CSeq: 1 {method}\r\n\
         Contact: <sip:uac@{uac}>\r\n\
         Content-Length: 0\r\n\r\n"
    )
}

/// Sends `method` through the target and waits for its final response.
fn through(t: &Target, uac: &UdpSocket, uas: SocketAddr, method: &str, n: u32) {
    let me = uac.local_addr().unwrap();
    uac.send_to(request(method, me, uas, n, "UDP").as_bytes(), t.listen())
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 65536];
    loop {
        assert!(Instant::now() < deadline, "no final response to {method}");
        let Ok((len, _)) = uac.recv_from(&mut buf) else {
            continue;
        };
        let r = String::from_utf8_lossy(&buf[..len]);
        if r.starts_with("SIP/2.0 1") {
            continue;
        }
        assert!(r.starts_with("SIP/2.0 200"), "{r}");
        assert!(r.contains(&format!("opensips-test-{method}-{n}")), "{r}");
        // the proxy's own Via is gone: ours is the top one
        let top_via = r
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("via:"))
            .unwrap();
        assert!(top_via.contains(&me.to_string()), "{r}");
        return;
    }
}

fn server_cpu() -> CpuSet {
    CpuSet::single(CpuSet::online().iter().last().unwrap())
}

fn gone(pids: &[i32]) -> bool {
    pids.iter().all(|p| {
        std::fs::read_to_string(format!("/proc/{p}/stat"))
            .ok()
            .and_then(|s| parse_proc_stat(&s))
            .is_none_or(|s| s.state == 'Z')
    })
}

/// Held by every test that starts OpenSIPS: the capacity run and the
/// sweep would measure each other on a small machine, and the checks
/// that nothing was left behind (and the sweep's read-back) look at every
/// OpenSIPS this test process started.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Checks the build (or the test fails with the sentence that says how to
/// make it) and takes [`ONE_AT_A_TIME`].
fn build() -> std::sync::MutexGuard<'static, ()> {
    Build::locate().unwrap_or_else(|e| panic!("{e}"));
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// (policy, slice ns) of a thread, from `/proc/PID/task/TID/sched`.
fn sched_of(pid: i32, tid: i32) -> Option<(u32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/sched")).ok()?;
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().parse::<u64>().ok())?
        })
    };
    Some((u32::try_from(field("policy")?).ok()?, field("se.slice")?))
}

/// Every thread of every process of `pids`: (pid, tid).
fn threads_of(pids: &[i32]) -> Vec<(i32, i32)> {
    let mut v = Vec::new();
    for &pid in pids {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        v.extend(
            dir.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .map(|tid| (pid, tid)),
        );
    }
    v
}

#[test]
fn opensips_accepts_the_configuration_in_both_modes() {
    let _alone = build();
    let mut s = TargetSetup::new("127.0.0.1:5070".parse().unwrap());
    s.workers = 3;
    let listen: SocketAddr = "127.0.0.1:5060".parse().unwrap();
    for mode in [Mode::Stateless, Mode::Stateful] {
        s.mode = mode;
        s.tcp = None;
        s.rcvbuf = None;
        opensips::check_config(&s, listen).unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        s.tcp = Some(TcpSetup::for_connections(10_000, 1_000));
        s.rcvbuf = Some(1 << 20);
        opensips::check_config(&s, listen).unwrap_or_else(|e| panic!("{mode:?} TCP: {e}"));
    }
}

/// Starts OpenSIPS in `mode` (in `net`'s namespace when given), relays
/// OPTIONS and INVITEs, checks every process's CPUs and policy, its
/// counters and shared memory, and stops.
fn exercise(mode: Mode, net: Option<&VethNet>) {
    let ip: IpAddr = net.map_or("127.0.0.1".parse().unwrap(), |n| n.root_ip);
    let uas = Uas::start_on(ip);
    let uac = UdpSocket::bind(SocketAddr::new(ip, 0)).unwrap();
    uac.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut setup = TargetSetup::new(uas.addr);
    setup.mode = mode;
    setup.workers = 2;
    setup.cpus = Some(server_cpu());
    setup.sched = Some("batch".parse().unwrap());
    if let Some(n) = net {
        setup.listen_ip = n.server_ip;
        setup.netns = Some(n.namespace().to_string());
    }
    let mut t = TargetKind::OpenSips
        .start(&setup)
        .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
    assert_eq!(t.name(), "opensips");
    if let Some(n) = net {
        assert_eq!(t.listen().ip(), n.server_ip);
    }
    let pids = t.pids();
    // OpenSIPS's own list of its processes is the lab's process group:
    // the attendant, 2 UDP receivers, timers, the MI process
    let listed = t.opensips_processes().unwrap().unwrap();
    let mut listed_pids: Vec<i32> = listed.iter().map(|(p, _)| *p).collect();
    listed_pids.sort_unstable();
    assert_eq!(listed_pids, pids, "{listed:?}");
    let receivers = listed
        .iter()
        .filter(|(_, k)| k.starts_with("SIP receiver udp:"))
        .count();
    assert_eq!(receivers, 2, "{listed:?}");
    // every thread of every process on the server's CPU, under its policy
    for (pid, tid) in t.threads() {
        let status = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).unwrap();
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim();
        assert_eq!(cpus, server_cpu().to_string(), "thread {tid}");
        let (policy, _) = sched_of(pid, tid).unwrap();
        assert_eq!(policy, libc::SCHED_BATCH as u32, "thread {tid}");
    }
    let before = t.sample().unwrap();
    assert_eq!(before.sockets.len(), 1, "{:?}", before.sockets);
    for n in 0..3 {
        through(&t, &uac, uas.addr, "OPTIONS", n);
        through(&t, &uac, uas.addr, "INVITE", n);
    }
    t.check_alive().unwrap();
    let w = ServerWindow::between(&before, &t.sample().unwrap());
    assert_eq!(w.socket_drops, 0);
    assert!(!w.threads.is_empty());
    let shm = t
        .shm()
        .expect("OpenSIPS reports its shared memory")
        .unwrap();
    assert_eq!(shm.total, u64::from(opensips::SHM_MB) << 20);
    assert!(
        shm.max_used > 0 && shm.peak_fraction() > 0.0 && shm.peak_fraction() < 1.0,
        "{shm:?}"
    );
    t.stop().unwrap_or_else(|e| panic!("{mode:?}: {e}"));
    assert!(gone(&pids), "left {pids:?}");
}

#[test]
fn opensips_relays_in_both_modes_pinned_and_under_the_policy() {
    let _alone = build();
    exercise(Mode::Stateless, None);
    exercise(Mode::Stateful, None);
}

#[test]
fn opensips_behind_a_veth_pair() {
    let _alone = build();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        let e = VethNet::create(&server_cpu()).unwrap_err().to_string();
        assert!(e.contains("needs root"), "{e}");
        return;
    }
    let net = VethNet::create(&server_cpu()).unwrap();
    exercise(Mode::Stateful, Some(&net));
}

#[test]
fn a_dropped_opensips_leaves_nothing_behind() {
    let _alone = build();
    let uas = Uas::start();
    let t = TargetKind::OpenSips
        .start(&TargetSetup::new(uas.addr))
        .unwrap();
    let pids = t.pids();
    // the attendant, 4 UDP receivers, the timers and the MI process
    assert!(pids.len() >= 4 + 3, "{pids:?}");
    drop(t);
    assert!(gone(&pids), "left {pids:?}");
}

#[test]
fn opensips_over_tcp() {
    use std::io::{Read, Write};
    let _alone = build();
    let uas = Uas::start();
    let mut setup = TargetSetup::new(uas.addr);
    setup.mode = Mode::Stateful;
    setup.workers = 2;
    setup.tcp = Some(TcpSetup::for_connections(100, 10));
    let t = TargetKind::OpenSips.start(&setup).unwrap();
    let mut c = std::net::TcpStream::connect(t.listen()).expect("a TCP listener");
    let me = c.local_addr().unwrap();
    c.write_all(request("OPTIONS", me, uas.addr, 7, "TCP").as_bytes())
        .unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = String::new();
    let mut buf = [0u8; 4096];
    while !got.contains("SIP/2.0 200") || !got.ends_with("\r\n\r\n") {
        let n = c
            .read(&mut buf)
            .unwrap_or_else(|e| panic!("no answer over TCP: {e} ({got})"));
        assert!(n > 0, "closed ({got})");
        got += &String::from_utf8_lossy(&buf[..n]);
    }
    assert!(got.contains("opensips-test-OPTIONS-7"), "{got}");
    let pids = t.pids();
    t.stop().unwrap();
    assert!(gone(&pids), "left {pids:?}");
}

#[test]
fn a_port_another_process_holds_is_refused_and_nothing_is_left() {
    let _alone = build();
    let uas = Uas::start();
    let setup = TargetSetup::new(uas.addr);
    // another socket on the port, bound with SO_REUSEPORT as a second
    // OpenSIPS would: the lab must not start one beside it
    let other = socket2::Socket::new(
        socket2::Domain::IPV4,
        socket2::Type::DGRAM,
        Some(socket2::Protocol::UDP),
    )
    .unwrap();
    other.set_reuse_port(true).unwrap();
    other
        .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    let port = other.local_addr().unwrap().as_socket().unwrap().port();
    let e = opensips::start_on(&setup, port).unwrap_err().to_string();
    assert!(e.contains("opensips did not start"), "{e}");
    assert!(e.contains(&format!("UDP port {port} is in use")), "{e}");
    assert!(e.contains("SO_REUSEPORT"), "{e}");
    // a running OpenSIPS's port: the same
    let first = TargetKind::OpenSips.start(&setup).unwrap();
    let e = opensips::start_on(&setup, first.listen().port())
        .unwrap_err()
        .to_string();
    assert!(e.contains("is in use"), "{e}");
    // a TCP listener on a port free for UDP, when TCP is asked for
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let mut with_tcp = setup.clone();
    with_tcp.tcp = Some(TcpSetup::for_connections(10, 10));
    let e = opensips::start_on(&with_tcp, port).unwrap_err().to_string();
    assert!(e.contains(&format!("TCP port {port} is in use")), "{e}");
    let pids = first.pids();
    first.stop().unwrap();
    assert!(gone(&pids), "left {pids:?}");
}

/// Names of this test process's OpenSIPS servers' directories.
fn own_dirs() -> String {
    format!("takt-siplab-opensips-{}-", std::process::id())
}

/// OpenSIPS processes started by this test process, by process group:
/// (pgid, pids).
fn own_groups() -> Vec<(i32, Vec<i32>)> {
    let mark = own_dirs();
    let mut groups: Vec<(i32, Vec<i32>)> = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmd).contains(&mark) {
            continue;
        }
        let Some(st) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| parse_proc_stat(&s))
        else {
            continue;
        };
        if st.state == 'Z' {
            continue;
        }
        match groups.iter_mut().find(|(g, _)| *g == st.pgrp) {
            Some((_, v)) => v.push(pid),
            None => groups.push((st.pgrp, vec![pid])),
        }
    }
    groups
}

/// `takt sip capacity --quick --target opensips` in both modes, on the
/// existing tests' reduced scale: searched, measured at a fixed rate,
/// its shared memory read at every point and below its limit.
#[test]
fn a_quick_capacity_run_of_opensips_in_both_modes() {
    let _alone = build();
    let opts = CapacityOptions {
        targets: vec!["opensips".into()],
        modes: vec![Mode::Stateless, Mode::Stateful],
        model: WorkerModel::Shared,
        workers: 4,
        cpus: None,
        sched: None,
        gen_cpus: None,
        gen_sched: None,
        threshold: 0.01,
        step: takt_siplab::search::Step::Fraction(0.03),
        reps: Some(1),
        start_cps: 1_000.0,
        max_cps: 8_000.0,
        window: Some(0.3),
        net: NetKind::Loopback,
        ports: 16,
        transport: Transport::Udp,
        connections: 4,
        at: vec!["2000".into()],
        at_workers: 1,
        no_search: false,
        plot: None,
        quick: true,
        uas: None,
        route_preload: false,
        cpu_limit: None,
        fleet: None,
        listen: None,
    };
    let doc = opts
        .resolve()
        .unwrap()
        .run(&RunContext::quiet())
        .unwrap_or_else(|e| panic!("{e}"));
    let doc = serde_json::to_value(&doc).unwrap();
    assert_eq!(doc["suite"], "sip_capacity");
    let rows = doc["results"].as_array().unwrap();
    for mode in ["stateless", "stateful"] {
        let cap = rows
            .iter()
            .find(|r| {
                r["name"] == "capacity" && r["impl"] == "opensips" && r["params"]["mode"] == mode
            })
            .unwrap_or_else(|| panic!("no {mode} capacity row: {doc}"));
        assert_eq!(cap["params"]["model"], "processes", "{cap}");
        // a measured capacity, or a bound the search hit
        assert!(
            cap["median"].as_f64().is_some_and(|m| m > 0.0) || cap["bound"].is_object(),
            "{cap}"
        );
        let shm = cap["detail"]["shm_peak_fraction"]
            .as_f64()
            .unwrap_or_else(|| panic!("shared memory not read: {cap}"));
        assert!(shm > 0.0 && shm < 1.0, "{cap}");
        assert_eq!(cap["detail"]["shm_limit_reached"], false, "{cap}");
        let cpu = rows
            .iter()
            .find(|r| {
                r["name"] == "cpu_per_call"
                    && r["impl"] == "opensips"
                    && r["params"]["mode"] == mode
                    && r["params"]["rate_cps"] == 2000.0
            })
            .unwrap_or_else(|| panic!("no {mode} fixed-rate row: {doc}"));
        assert!(cpu["median"].as_f64().unwrap() > 0.0, "{cpu}");
    }
    assert!(own_groups().is_empty(), "left {:?}", own_groups());
}

/// A sweep of OpenSIPS at m = 2 and 3 under `default` and `server`: after
/// every trial every thread of every OpenSIPS process (its UDP receivers,
/// timers, attendant and MI process) is read back from the kernel — the
/// `server` cases' at a 100 µs slice, the `default` cases' at the default
/// slice — and the sweep's own read-back agrees.
#[test]
fn a_sweep_applies_its_profiles_to_every_opensips_process() {
    let _alone = build();
    let default_slice = sched_of(std::process::id() as i32, std::process::id() as i32)
        .unwrap()
        .1;
    let opts = SweepOptions {
        targets: vec!["opensips".into()],
        modes: vec![Mode::Stateful],
        workers: vec![2, 3],
        profiles: vec!["default,server".into()],
        threshold: 0.01,
        step: takt_siplab::search::Step::Fraction(0.03),
        reps: Some(1),
        rebrackets: Some(0),
        pairs: Some(1),
        window: Some(0.3),
        start_cps: Some(200.0),
        max_cps: 400.0,
        ports: 8,
        preset: Preset::Quick,
        ..SweepOptions::default()
    };
    let suite = opts.resolve().unwrap();
    // (m, slice in ns of every thread) per process group seen
    let seen: Mutex<Vec<(usize, Vec<u64>, usize)>> = Mutex::new(Vec::new());
    let cancel = takt_siplab::gen::Cancel::default();
    let outcome = sweep::run(
        &suite.plan,
        |ip| {
            GenLoad::new(
                suite.gen.clone(),
                ip,
                suite.window,
                suite.min_calls,
                cancel.clone(),
            )
        },
        |_| {
            for (_, pids) in own_groups() {
                // m from the configuration the group runs
                let cmd = std::fs::read(format!("/proc/{}/cmdline", pids[0])).unwrap();
                let args: Vec<String> = cmd
                    .split(|&b| b == 0)
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                let cfg = &args[args.iter().position(|a| a == "-f").unwrap() + 1];
                let text = std::fs::read_to_string(cfg).unwrap();
                let m: usize = text
                    .lines()
                    .find_map(|l| l.strip_prefix("udp_workers="))
                    .unwrap()
                    .parse()
                    .unwrap();
                let mut slices = Vec::new();
                for (pid, tid) in threads_of(&pids) {
                    if let Some((policy, slice)) = sched_of(pid, tid) {
                        assert_eq!(policy, libc::SCHED_OTHER as u32, "{pid}/{tid}");
                        slices.push(slice);
                    }
                }
                slices.sort_unstable();
                slices.dedup();
                seen.lock().unwrap().push((m, slices, pids.len()));
            }
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let seen = seen.into_inner().unwrap();
    for m in [2, 3] {
        // one uniform slice per group: 100 µs (server) or the default
        let groups: Vec<_> = seen.iter().filter(|(w, _, _)| *w == m).collect();
        assert!(!groups.is_empty(), "m={m}: no OpenSIPS seen");
        for (_, slices, procs) in &groups {
            assert_eq!(slices.len(), 1, "m={m}: mixed slices {slices:?}");
            assert!(
                slices[0] == 100_000 || slices[0] == default_slice,
                "m={m}: {slices:?}"
            );
            // the attendant, m receivers, the timers and the MI process
            assert!(*procs >= m + 3, "m={m}: {procs} processes");
        }
        assert!(groups.iter().any(|(_, s, _)| s[0] == 100_000), "m={m}");
        assert!(
            groups.iter().any(|(_, s, _)| s[0] == default_slice),
            "m={m}"
        );
    }
    // the sweep's own read-back: every thread of every process matched
    let cases: Vec<_> = outcome
        .cases
        .iter()
        .filter(|c| c.key.target == "opensips")
        .collect();
    assert_eq!(cases.len(), 4);
    for c in cases {
        assert!(c.readback.all_match, "{:?}", c.readback);
        assert!(
            c.readback.processes >= c.key.workers + 3,
            "{:?}",
            c.readback
        );
    }
    assert!(own_groups().is_empty(), "left {:?}", own_groups());
}

#[test]
fn a_worker_killed_mid_run_is_an_error_naming_opensips() {
    let _alone = build();
    let uas = Uas::start();
    let mut setup = TargetSetup::new(uas.addr);
    setup.workers = 2;
    let mut t = TargetKind::OpenSips.start(&setup).unwrap();
    let pids = t.pids();
    let (worker, _) = t
        .opensips_processes()
        .unwrap()
        .unwrap()
        .into_iter()
        .find(|(_, k)| k.starts_with("SIP receiver udp:"))
        .unwrap();
    // SAFETY: kill has no memory-safety preconditions; `worker` is a
    // process of the server this test started and still holds.
    unsafe { libc::kill(worker, libc::SIGKILL) };
    // OpenSIPS's attendant shuts the rest down on a child's death
    let deadline = Instant::now() + Duration::from_secs(10);
    let e = loop {
        match t.check_alive() {
            Err(e) => break e.to_string(),
            Ok(()) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(()) => panic!("OpenSIPS still running after its worker was killed"),
        }
    };
    assert!(
        e.starts_with("opensips exited unexpectedly: exit status"),
        "{e}"
    );
    assert!(e.contains("stderr:"), "{e}");
    let e = t.stop().unwrap_err().to_string();
    assert!(e.contains("opensips exited unexpectedly"), "{e}");
    assert!(gone(&pids), "left {pids:?}");
}

/// A transaction-stateful OpenSIPS with 8 UDP workers, far below its
/// capacity (500 calls/s for 1 s, three trials): the capacity search's
/// load counts no message lost. Its workers take the UAS's 180 and 200
/// (sent back to back) in parallel, so the 200 often reaches tm first;
/// tm then discards the 180, as RFC 3261 §16.7 step 5 requires of a
/// stateful proxy once its final response is sent, and counts it in
/// `drop_replies`. The lab counted those 180s lost (measured here: 30 to
/// 130 of 3,000 messages a trial), so the search read "< 50".
#[test]
fn stateful_opensips_with_eight_workers_loses_nothing_at_a_low_rate() {
    use takt_siplab::capacity::Load;
    use takt_siplab::gen::{self, Cancel, GenConfig};
    let _alone = build();
    let ip: IpAddr = "127.0.0.1".parse().unwrap();
    let mut base = GenConfig::new(SocketAddr::new(ip, 9), 500.0);
    base.avoid_cpus(&server_cpu()).unwrap();
    let mut load = GenLoad::new(
        base.clone(),
        ip,
        Duration::from_secs(1),
        500,
        Cancel::default(),
    )
    .unwrap();
    let mut setup = TargetSetup::new(load.uas());
    setup.mode = Mode::Stateful;
    setup.workers = 8;
    setup.cpus = Some(server_cpu());
    let t = TargetKind::OpenSips.start(&setup).unwrap();
    // the generator's own account of one trial, per kind, beside
    // OpenSIPS's count of the replies it discarded
    let mut cfg = base;
    cfg.proxy = t.listen();
    cfg.uas_listen = load.uas();
    cfg.calls = Some(500);
    cfg.timers.retransmit = false;
    cfg.drain_quiet = Some(Duration::from_millis(100));
    let stats = |t: &Target| {
        let mut m = t.opensips_statistics("core:").unwrap().unwrap();
        for (k, v) in t.opensips_statistics("tm:").unwrap().unwrap() {
            m.insert(format!("tm:{k}"), v);
        }
        m
    };
    let before = stats(&t);
    let r = gen::run(&cfg, &Cancel::default()).unwrap();
    let after = stats(&t);
    let delta = |k: &str| after[k] - before[k];
    let (uac, uas) = (r.uac.as_ref().unwrap(), r.uas.as_ref().unwrap());
    eprintln!(
        "uac sent {:?} received {:?} 180-first {} answered {}; \
         uas sent {:?} received {:?} bye-before-ack {}; \
         opensips rcv_replies {} tm received_replies {} relayed_replies {}",
        uac.sent,
        uac.received,
        uac.invite_to_180_ms.count,
        uac.invite_to_200_ms.count,
        uas.sent,
        uas.received,
        uas.bye_before_ack,
        delta("rcv_replies"),
        delta("tm:received_replies"),
        delta("tm:relayed_replies"),
    );
    let account = gen::Account::of(&gen::Counts::of(&r).unwrap(), true);
    assert_eq!(account.lost, 0, "{account:?}");
    // every 180 the UAC missed reached OpenSIPS, which did not relay it
    let missing_180 = uas.sent["180"] - uac.received.get("180").copied().unwrap_or(0);
    assert_eq!(account.absorbed, missing_180, "{account:?}");
    let replies: u64 = uas.sent.values().sum();
    assert_eq!(delta("rcv_replies"), replies);
    assert_eq!(delta("tm:received_replies"), replies);
    assert_eq!(delta("tm:relayed_replies"), replies - missing_180);
    // counted as a stateless proxy's, the same trial loses them all
    assert_eq!(
        gen::Account::of(&gen::Counts::of(&r).unwrap(), false).lost,
        missing_180
    );
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        let o = load.run(&t, 500.0).unwrap();
        outcomes.push((o.lost, o.sent_to_server, o.completed_calls));
    }
    t.stop().unwrap();
    eprintln!("(lost, sent, completed) per trial: {outcomes:?}");
    for &(lost, sent, completed) in &outcomes {
        assert_eq!(completed, 500, "{outcomes:?}");
        assert!(sent >= 6 * 500, "{outcomes:?}");
        assert_eq!(lost, 0, "{outcomes:?}");
    }
}
