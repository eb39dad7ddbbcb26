//! A fleet agent: `takt sip gen --role agent --fleet nats://HOST:4222`.
//!
//! The agent joins the fleet as a takt-remote [`Node`] (so presence,
//! credentials and TLS are takt-remote's) and exports four queries under
//! [`AGENT_EXPORT`], nothing else: [`Hello`] (its description), [`Ping`]
//! (its clock), [`Stop`] (end a trial's part now) and [`TrialOrder`] (run
//! one side of one trial). It runs only trials: there is no query that
//! names a program, a file or a command, and a message of any other type
//! is refused by takt-remote's type check.
//!
//! A trial order runs one side — the UAC at its share of the rate, or
//! the UAS for every agent's calls — as one run of the local generator
//! ([`crate::gen`]) on its own thread, so a host that plays both sides
//! runs the same two threads as the local generator. The UAS keeps its
//! port for the agent's life ([`AgentInfo::uas_port`]), because the
//! server under test forwards to one address.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};

use takt_agents::{pending, Answer, Pending, Requester};
use takt_remote::Node;
use takt_sched::ThreadSpec;
use takt_sip::proxy::Transport;

use super::merge::{decode_histogram, encode_histogram};
use super::protocol::{
    AgentInfo, AgentResult, Hello, Kinds, Outage, Ping, Pong, RunKinds, Stop, Stopped, TrialOrder,
    AGENT_EXPORT,
};
use super::{split, unix_ns};
use crate::error::{Error, Result};
use crate::gen::{self, ByKind, Cancel, GenConfig, Role};

/// How an agent runs.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// takt-remote's configuration: the NATS URL (`--fleet`), node name,
    /// credentials, TLS.
    pub remote: takt_remote::Config,
    /// It places calls.
    pub uac: bool,
    /// It answers calls.
    pub uas: bool,
    /// The address its sockets bind (default: the one it reaches the NATS
    /// server from).
    pub address: Option<IpAddr>,
    /// The generator threads' placement and policy.
    pub spec: ThreadSpec,
}

/// The host and port of a NATS URL (`nats://h:p`, `tls://h:p`, `h:p`,
/// the default port 4222).
pub fn url_addr(url: &str) -> Option<SocketAddr> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    // credentials in the URL (user:pass@host) are not part of the address
    let rest = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let rest = rest.trim_end_matches('/');
    let with_port = if rest
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        rest.to_string()
    } else {
        format!("{rest}:4222")
    };
    with_port.to_socket_addrs().ok()?.next()
}

/// The side running now: its trial and its cancellation.
type Slot = Option<(u32, Cancel)>;

/// What the agent's queries share.
#[derive(Debug)]
struct Shared {
    addr: IpAddr,
    uas_port: u16,
    spec: ThreadSpec,
    /// The running UAC and UAS parts.
    slots: Mutex<[Slot; 2]>,
}

/// Answers trial orders: each on a thread of its own, one per side at a
/// time.
#[derive(Debug, Clone)]
struct Runner(Arc<Shared>);

impl Answer<TrialOrder, AgentResult> for Runner {
    fn answer(&self, q: TrialOrder, _timeout: Option<Duration>) -> Pending<AgentResult> {
        let (promise, p) = pending();
        let side = usize::from(q.uas);
        let cancel = Cancel::default();
        {
            let mut slots = self.0.slots.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((t, _)) = &slots[side] {
                promise.fulfil(failed(&q, format!("busy with trial {t}")));
                return p;
            }
            slots[side] = Some((q.trial, cancel.clone()));
        }
        let shared = Arc::clone(&self.0);
        let spawned = std::thread::Builder::new()
            .name("fleet-trial".into())
            .spawn(move || {
                let r = run_order(&shared, &q, &cancel);
                shared.slots.lock().unwrap_or_else(|e| e.into_inner())[side] = None;
                promise.fulfil(r.unwrap_or_else(|e| failed(&q, e.to_string())));
            });
        if spawned.is_err() {
            self.0.slots.lock().unwrap_or_else(|e| e.into_inner())[side] = None;
        }
        p
    }
}

fn failed(q: &TrialOrder, why: String) -> AgentResult {
    AgentResult {
        trial: q.trial,
        index: q.index,
        error: Some(why),
        ..AgentResult::default()
    }
}

fn kinds(k: &ByKind) -> Kinds {
    k.iter().map(|(k, &n)| (k.to_string(), n)).collect()
}

/// Runs one side of one trial with the local generator: a UAC (its
/// second stream beside it, and its completions counted per interval,
/// when the order asks), or a UAS (with its outage, when the order plans
/// one).
fn run_order(sh: &Shared, q: &TrialOrder, cancel: &Cancel) -> Result<AgentResult> {
    if q.uac == q.uas {
        return Err(Error::Fleet("an order runs exactly one side".into()));
    }
    let cfg = order_config(sh, q);
    if q.uas {
        return match q.uas_outage {
            Some(o) => run_uas_outage(q, cfg, o, cancel),
            None => Ok(result(q, &gen::Generator::bind(&cfg)?.run(cancel)?)),
        };
    }
    // the UAC's streams: the order's, and its second if it has one
    let mut gens = vec![gen::Generator::bind(&cfg)?];
    if let Some(st) = q.second.filter(|st| st.cps > 0.0 && st.window_ms > 0) {
        let mut c = cfg.clone();
        c.cps = st.cps;
        c.seed = q.seed.wrapping_add(1);
        c.run_id = Some(split::stream_run_id(q.run_id));
        c.duration = Some(Duration::from_millis(st.window_ms));
        c.drain = Duration::from_millis(st.drain_ms);
        c.start_at =
            Some(UNIX_EPOCH + Duration::from_nanos(q.start_unix_ns + st.offset_ms * 1_000_000));
        gens.push(gen::Generator::bind(&c)?);
    }
    let every = (q.series_ms > 0).then(|| Duration::from_millis(q.series_ms));
    let (reps, series) = run_streams(gens, q.start_unix_ns, every, cancel)?;
    let mut r = result(q, &reps[0]);
    for rep in &reps[1..] {
        absorb(&mut r, result(q, rep));
    }
    if let Some((completed, failed)) = series {
        r.completed_series = completed;
        r.failed_series = failed;
    }
    Ok(r)
}

/// Adds a second stream's account `o` to `r` (counts summed, histograms
/// merged, generator-bound if either was).
fn absorb(r: &mut AgentResult, o: AgentResult) {
    r.attempted += o.attempted;
    r.completed += o.completed;
    r.failed += o.failed;
    r.unfinished += o.unfinished;
    for (to, from) in [
        (&mut r.failures, o.failures),
        (&mut r.uac_sent, o.uac_sent),
        (&mut r.uac_received, o.uac_received),
    ] {
        for (k, n) in from {
            *to.entry(k).or_default() += n;
        }
    }
    for (to, from) in [
        (&mut r.send_lag_hist, &o.send_lag_hist),
        (&mut r.invite_to_200_hist, &o.invite_to_200_hist),
    ] {
        if let (Some(mut a), Some(b)) = (decode_histogram(to), decode_histogram(from)) {
            if a.add(&b).is_ok() {
                *to = encode_histogram(&a);
            }
        }
    }
    r.rang_first += o.rang_first;
    r.answered += o.answered;
    r.achieved_cps += o.achieved_cps;
    r.generator_bound |= o.generator_bound;
    r.bound_reasons.extend(o.bound_reasons);
    r.cpu_s += o.cpu_s;
    r.wall_s = r.wall_s.max(o.wall_s);
}

/// Calls completed and failed per interval.
type Series = (Vec<u64>, Vec<u64>);

/// Runs UAC generators side by side (each on a thread of its own) while,
/// with `every`, a thread counts their calls completed and failed per
/// interval from the planned start `start_unix_ns` (this host's clock);
/// the last interval takes the reports' final counts, so the series add
/// up to them.
fn run_streams(
    gens: Vec<gen::Generator>,
    start_unix_ns: u64,
    every: Option<Duration>,
    cancel: &Cancel,
) -> Result<(Vec<gen::GenReport>, Option<Series>)> {
    let lives: Vec<_> = gens.iter().map(|g| g.live()).collect();
    let done = AtomicBool::new(false);
    let (reps, cum) = std::thread::scope(|s| {
        let sampler = every.map(|every| {
            let (lives, done) = (&lives, &done);
            s.spawn(move || {
                // the planned start on this host's monotonic clock
                let t0 =
                    Instant::now() + Duration::from_nanos(start_unix_ns.saturating_sub(unix_ns()));
                let mut cum = vec![(0u64, 0u64)];
                for k in 1u32.. {
                    if let Some(w) = (t0 + every * k).checked_duration_since(Instant::now()) {
                        std::thread::sleep(w);
                    }
                    // Acquire pairs with the Release store after the
                    // runs: the sample taken once it is seen is the last
                    let last = done.load(Ordering::Acquire);
                    cum.push(lives.iter().fold((0, 0), |(c, f), l| {
                        (
                            c + l.completed.load(Ordering::Relaxed),
                            f + l.failed.load(Ordering::Relaxed),
                        )
                    }));
                    if last {
                        break;
                    }
                }
                cum
            })
        });
        let runs: Vec<_> = gens
            .into_iter()
            .map(|g| s.spawn(move || g.run(cancel)))
            .collect();
        let reps: Vec<_> = runs.into_iter().map(|h| h.join()).collect();
        done.store(true, Ordering::Release);
        (reps, sampler.map(|h| h.join()))
    });
    let reps = reps
        .into_iter()
        .map(|r| r.map_err(|_| Error::Thread("a generator's thread panicked".into()))?)
        .collect::<Result<Vec<_>>>()?;
    let Some(cum) = cum else {
        return Ok((reps, None));
    };
    let mut cum = cum.map_err(|_| Error::Thread("the series' thread panicked".into()))?;
    if let Some(last) = cum.last_mut() {
        *last = reps
            .iter()
            .filter_map(|r| r.uac.as_ref())
            .fold((0, 0), |(c, f), u| (c + u.completed, f + u.failed));
    }
    let diff = |f: fn(&(u64, u64)) -> u64| -> Vec<u64> {
        cum.windows(2)
            .map(|w| f(&w[1]).saturating_sub(f(&w[0])))
            .collect()
    };
    let series = (diff(|c| c.0), diff(|c| c.1));
    Ok((reps, Some(series)))
}

/// The local generator's settings for one side of `q`.
fn order_config(sh: &Shared, q: &TrialOrder) -> GenConfig {
    let mut cfg = GenConfig::new(q.proxy, if q.uac { q.cps } else { 1.0 });
    cfg.role = if q.uac { Role::Uac } else { Role::Uas };
    cfg.uas_listen = if q.uas {
        SocketAddr::new(sh.addr, sh.uas_port)
    } else {
        q.uas_addr
    };
    cfg.seed = q.seed;
    cfg.run_id = Some(q.run_id);
    cfg.calls = None;
    cfg.duration = Some(Duration::from_millis(if q.uac {
        q.window_ms
    } else {
        q.max_ms
    }));
    cfg.transport = if q.tcp {
        Transport::Tcp
    } else {
        Transport::Udp
    };
    cfg.ports = q.ports as usize;
    cfg.connections = q.ports as usize;
    cfg.timers.retransmit = q.retransmit;
    cfg.drain = Duration::from_millis(q.drain_ms);
    // the quiet end of a drain needs every message sent once
    cfg.drain_quiet =
        (q.drain_quiet_ms > 0 && !q.retransmit).then(|| Duration::from_millis(q.drain_quiet_ms));
    cfg.route_preload = q.route_preload;
    cfg.lag_bound = Duration::from_micros(q.lag_bound_us);
    cfg.late_after = Duration::from_micros(q.late_after_us);
    cfg.spec = sh.spec.clone();
    cfg.start_at = Some(UNIX_EPOCH + Duration::from_nanos(q.start_unix_ns));
    cfg.count_by_run = q.uas;
    cfg
}

/// A UAS with an outage: it answers from the planned start, closes its
/// socket `after_ms` later (its generator's run ends, and with it the
/// socket), binds the same address again once `for_ms` have passed, and
/// answers until stopped. What it received and sent is the two runs'
/// sum; the instants it closed and bound again are on this host's clock.
fn run_uas_outage(
    q: &TrialOrder,
    mut cfg: GenConfig,
    o: Outage,
    cancel: &Cancel,
) -> Result<AgentResult> {
    cfg.duration = Some(Duration::from_millis(o.after_ms.max(1)));
    let first = gen::Generator::bind(&cfg)?.run(cancel)?;
    let mut r = result(q, &first);
    r.uas_closed_unix_ns = Some(unix_ns());
    let back = q.start_unix_ns + (o.after_ms + o.for_ms) * 1_000_000;
    while !cancel.is_cancelled() && unix_ns() < back {
        std::thread::sleep(Duration::from_nanos(
            (back.saturating_sub(unix_ns())).min(20_000_000),
        ));
    }
    if cancel.is_cancelled() {
        return Ok(r);
    }
    cfg.start_at = None;
    cfg.duration = Some(Duration::from_millis(
        q.max_ms.saturating_sub(o.after_ms + o.for_ms).max(1),
    ));
    let g = gen::Generator::bind(&cfg)?;
    r.uas_rebound_unix_ns = Some(unix_ns());
    let second = g.run(cancel)?;
    let more = result(q, &second);
    for (run, k) in more.uas_by_run {
        let mine = r.uas_by_run.entry(run).or_default();
        for (to, from) in [(&mut mine.received, k.received), (&mut mine.sent, k.sent)] {
            for (kind, n) in from {
                *to.entry(kind).or_default() += n;
            }
        }
    }
    r.uas_ack_timeouts += more.uas_ack_timeouts;
    r.generator_bound |= more.generator_bound;
    r.bound_reasons.extend(more.bound_reasons);
    r.cpu_s += more.cpu_s;
    r.wall_s = (unix_ns().saturating_sub(q.start_unix_ns)) as f64 / 1e9;
    Ok(r)
}

/// The agent's account of one generator run of `q`.
fn result(q: &TrialOrder, rep: &gen::GenReport) -> AgentResult {
    // the run's time 0 came when the sleep to the planned instant ended
    let start_late_us =
        0.0f64.max((unix_ns() as f64 - rep.wall_s * 1e9 - q.start_unix_ns as f64) / 1e3);
    let mut r = AgentResult {
        trial: q.trial,
        index: q.index,
        start_late_us,
        achieved_cps: rep.achieved_cps,
        window_s: rep.window_s,
        generator_bound: rep.saturation.generator_bound,
        bound_reasons: rep.saturation.reasons.clone(),
        cpu_s: rep.uac.iter().map(|u| u.thread.cpu_s).sum::<f64>()
            + rep.uas.iter().map(|u| u.thread.cpu_s).sum::<f64>(),
        wall_s: rep.wall_s,
        ..AgentResult::default()
    };
    if let Some(u) = &rep.uac {
        r.attempted = u.attempted;
        r.completed = u.completed;
        r.failed = u.failed;
        r.unfinished = u.unfinished;
        r.failures = u
            .failures
            .iter()
            .map(|(k, &n)| (k.to_string(), n))
            .collect();
        r.uac_sent = kinds(&u.sent);
        r.uac_received = kinds(&u.received);
        r.send_lag_hist = encode_histogram(&u.histograms.send_lag_ns);
        r.invite_to_200_hist = encode_histogram(&u.histograms.invite_to_200_ns);
        r.rang_first = u.invite_to_180_ms.count;
        r.answered = u.invite_to_200_ms.count;
    }
    if let Some(u) = &rep.uas {
        r.uas_ack_timeouts = u.ack_timeouts;
        r.uas_by_run = u
            .by_run
            .iter()
            .map(|(&run, c)| {
                (
                    run,
                    RunKinds {
                        received: kinds(&c.received),
                        sent: kinds(&c.sent),
                    },
                )
            })
            .collect();
    }
    r
}

/// A running agent; it leaves the fleet when dropped.
#[derive(Debug)]
pub struct Agent {
    node: Node,
    info: AgentInfo,
}

impl Agent {
    /// Joins the fleet: connects (credentials and TLS as configured; a
    /// refusal is an error), picks the UAS's port, and exports the
    /// agent's queries.
    pub fn start(opts: AgentOptions) -> Result<Agent> {
        if !opts.uac && !opts.uas {
            return Err(Error::Config("an agent plays UAC, UAS or both".into()));
        }
        let addr = match opts.address {
            Some(a) => a,
            None => {
                let nats = url_addr(&opts.remote.url).ok_or_else(|| {
                    Error::Config(format!(
                        "--fleet {}: no host:port to reach",
                        opts.remote.url
                    ))
                })?;
                gen::local_ip_towards(nats).map_err(|source| Error::Io {
                    what: format!("finding the address that reaches {nats}"),
                    source,
                })?
            }
        };
        let uas_port = if opts.uas {
            crate::capacity::uas_addr(addr, Transport::Udp)
                .map_err(|source| Error::Io {
                    what: format!("picking the UAS's port on {addr}"),
                    source,
                })?
                .port()
        } else {
            0
        };
        let node = Node::start(opts.remote.clone())?;
        let info = AgentInfo {
            name: node.name().to_string(),
            host: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default(),
            addr,
            cpus: takt_sched::CpuSet::online().len(),
            uac: opts.uac,
            uas: opts.uas,
            uas_port,
        };
        let shared = Arc::new(Shared {
            addr,
            uas_port,
            spec: opts.spec,
            slots: Mutex::new([None, None]),
        });
        let i = info.clone();
        node.export_ask_inline::<Hello, AgentInfo, _>(AGENT_EXPORT, move |_| i.clone())?;
        node.export_ask_inline::<Ping, Pong, _>(AGENT_EXPORT, |_| Pong { unix_ns: unix_ns() })?;
        let sh = Arc::clone(&shared);
        node.export_ask_inline::<Stop, Stopped, _>(AGENT_EXPORT, move |s| {
            let slots = sh.slots.lock().unwrap_or_else(|e| e.into_inner());
            let mut was_running = false;
            for (t, c) in slots.iter().flatten() {
                if *t == s.trial {
                    c.cancel();
                    was_running = true;
                }
            }
            Stopped { was_running }
        })?;
        node.export_ask::<TrialOrder, AgentResult>(AGENT_EXPORT, Requester::new(Runner(shared)))?;
        Ok(Agent { node, info })
    }

    /// What it announces.
    pub fn info(&self) -> &AgentInfo {
        &self.info
    }

    /// Serves until `cancel` is set, then leaves the fleet.
    pub fn serve(self, cancel: &Cancel) {
        while !cancel.is_cancelled() {
            std::thread::sleep(Duration::from_millis(100));
        }
        self.node.shutdown();
    }
}

/// takt-remote's configuration for a fleet member: the file's (node
/// name, credentials, TLS, the bridge thread), or the defaults, with the
/// server at `url`.
pub fn remote_config(url: &str, file: Option<&std::path::Path>) -> Result<takt_remote::Config> {
    let mut c = match file {
        Some(p) => takt_remote::Config::from_file(p)?,
        None => takt_remote::Config::default(),
    };
    c.url = url.to_string();
    c.cluster = "takt-fleet".into();
    Ok(c)
}

/// `takt sip gen --role agent`: joins the fleet, says so on stderr, and
/// serves until SIGINT, SIGTERM or SIGHUP.
pub fn run_agent(opts: AgentOptions) -> Result<()> {
    let url = opts.remote.url.clone();
    let agent = Agent::start(opts)?;
    let i = agent.info();
    eprintln!(
        "agent {} joined the fleet at {url}: addr={} cpus={} uac={} uas={} uas_port={}",
        i.name, i.addr, i.cpus, i.uac, i.uas, i.uas_port
    );
    let cancel = Cancel::default();
    cancel.on_signals()?;
    agent.serve(&cancel);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nats_urls_name_an_address() {
        assert_eq!(
            url_addr("nats://127.0.0.1:4333"),
            Some("127.0.0.1:4333".parse().unwrap())
        );
        assert_eq!(
            url_addr("tls://u:p@127.0.0.1"),
            Some("127.0.0.1:4222".parse().unwrap())
        );
        assert_eq!(url_addr("10.0.0.1:5"), Some("10.0.0.1:5".parse().unwrap()));
        assert_eq!(url_addr("nats://"), None);
    }
}
