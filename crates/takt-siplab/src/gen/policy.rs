//! The generator threads' scheduling policy: [`REALTIME`] by default
//! where the process may use it, else the default policy, said once.
//!
//! # Why real-time by default
//! Under `SCHED_OTHER` the generator keeps its 1 ms send-lag bound only
//! while nothing else wants its CPU. Measured on the 2-vCPU laboratory
//! machine at 4,000 cps: send-lag p99 62 µs alone, 1.9 ms with a
//! `cat /proc/net/udp` every 5 ms on the generator's CPU — the UAC spins
//! towards each planned send with `sched_yield`, and a yield hands the CPU
//! to any runnable task for a whole slice. The laboratory's own samplers
//! (`/proc/net/udp` every 5 ms for Kamailio's Little's-law K_rcv,
//! `kamcmd`, stats reads) are such tasks, so Kamailio points were flagged
//! generator-bound at 4–5k cps. At `fifo:prio=10` every point was valid:
//! the null relay's ceiling ≥ 65,000 cps on loopback, ≥ 32,500 on veth.
//!
//! # What it costs, and why it is safe
//! - A real-time thread preempts every `SCHED_OTHER` thread on its CPU.
//!   The generator's CPUs are kept off the server's
//!   ([`crate::target::placement`]: the server gets the last CPU, the
//!   generator the others), so it preempts only the laboratory's own
//!   samplers, whose readings are not time-critical. When they overlap
//!   (`--cpus 0-1`, or a `--gen-cpus` that includes a server CPU) the
//!   generator runs ahead of the server on the shared CPU whenever it has
//!   work: its cost comes off the server's capacity either way, but the
//!   offered load stays the planned one — the commands say that CPUs are
//!   shared.
//! - It never monopolizes a CPU: under a real-time policy the UAC does not
//!   spin but sleeps in `ppoll` to each planned send (no timer slack for
//!   real-time threads), and both threads block whenever they have
//!   nothing to do, so real-time throttling (`sched_rt_runtime_us`) never
//!   stops them.
//! - The threads are set with `SCHED_FLAG_RESET_ON_FORK`: nothing they
//!   create (threads, processes — a server under test included) inherits
//!   the real-time policy.
//!
//! # Who may
//! Real-time policies need `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` at least
//! the priority; even then a cgroup without real-time runtime refuses
//! them. [`GenPolicy::choose`] checks both and then applies the policy to
//! a probe thread and reads it back: only the kernel's answer counts.

use serde::Serialize;
use takt_measure::result::Document;
use takt_sched::{CpuSet, SchedPolicy, ThreadSpec};

use crate::Error;

/// The generator's default policy where permitted.
pub const REALTIME: SchedPolicy = SchedPolicy::Fifo { prio: 10 };

/// What the commands say, once, when the generator cannot run real-time.
pub const OTHER_NOTE: &str = "generator at SCHED_OTHER: its points may be flagged generator-bound on a busy machine; run as root or with CAP_SYS_NICE";

/// `CAP_SYS_NICE`'s bit in the capability sets.
const CAP_SYS_NICE: u32 = 23;

/// Where the generator's policy came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicySource {
    /// `--gen-sched` (or `--sched` of `takt sip gen`).
    Given,
    /// [`REALTIME`], permitted.
    Realtime,
    /// The default policy: a real-time one was not permitted.
    Fallback,
}

/// The generator threads' policy for a run, as the kernel applied it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenPolicy {
    /// The policy the generator's threads are given (`None`: inherited
    /// from the spawning thread).
    pub policy: Option<SchedPolicy>,
    /// What the kernel reported for a thread given it (read back).
    pub applied: SchedPolicy,
    /// Where it came from.
    pub source: PolicySource,
    /// Why the default was not real-time ([`PolicySource::Fallback`]).
    pub reason: Option<String>,
    /// The CPUs the generator shares with the server ([`GenPolicy::placed`]).
    pub shared: Option<CpuSet>,
}

/// Why this process may not ask for a real-time priority `prio`, by its
/// capabilities and limits (`None`: it may).
pub fn realtime_refused(prio: u8) -> Option<String> {
    let cap = cap_sys_nice();
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into `rl`, which lives for the call.
    let limit = if unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut rl) } == 0 {
        rl.rlim_cur
    } else {
        0
    };
    match cap {
        Some(true) => None,
        _ if limit >= u64::from(prio) => None,
        Some(false) => Some(format!(
            "no CAP_SYS_NICE, and RLIMIT_RTPRIO {limit} < {prio}"
        )),
        None => Some(format!(
            "CAP_SYS_NICE unknown (/proc/self/status unreadable), and RLIMIT_RTPRIO {limit} < {prio}"
        )),
    }
}

/// Whether `CAP_SYS_NICE` is in the effective set (`None`: unreadable).
fn cap_sys_nice() -> Option<bool> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    let eff = u64::from_str_radix(hex.trim(), 16).ok()?;
    Some(eff & (1 << CAP_SYS_NICE) != 0)
}

/// Applies `spec` to a short-lived thread and returns what the kernel
/// reported for it.
fn probe(spec: ThreadSpec) -> Result<SchedPolicy, takt_sched::SchedError> {
    let t = spec.spawn(takt_sched::current_policy)?;
    t.join().map_err(|_| takt_sched::SchedError::Spawn {
        name: "gen-probe".into(),
        source: std::io::Error::other("the probe thread panicked"),
    })?
}

impl GenPolicy {
    /// The generator's policy: `given` if set (an error if the kernel
    /// refuses it), else [`REALTIME`] when permitted (see the module
    /// docs), else the calling thread's, with the reason.
    pub fn choose(given: Option<SchedPolicy>) -> Result<GenPolicy, Error> {
        if let Some(p) = given {
            let applied = probe(Self::spec_for(ThreadSpec::new("gen-probe"), Some(p)))
                .map_err(|e| Error::Config(format!("the generator's policy: {e}")))?;
            return Ok(GenPolicy {
                policy: Some(p),
                applied,
                source: PolicySource::Given,
                reason: None,
                shared: None,
            });
        }
        let refused = match realtime_refused(rt_prio(REALTIME)) {
            Some(why) => why,
            None => match probe(Self::spec_for(ThreadSpec::new("gen-probe"), Some(REALTIME))) {
                Ok(applied) => {
                    return Ok(GenPolicy {
                        policy: Some(REALTIME),
                        applied,
                        source: PolicySource::Realtime,
                        reason: None,
                        shared: None,
                    })
                }
                Err(e) => format!("the kernel refused it: {e}"),
            },
        };
        let applied = takt_sched::current_policy()
            .map_err(|e| Error::Config(format!("reading this thread's policy: {e}")))?;
        Ok(GenPolicy {
            policy: None,
            applied,
            source: PolicySource::Fallback,
            reason: Some(format!("{REALTIME} not permitted: {refused}")),
            shared: None,
        })
    }

    /// `spec` under `policy`, a real-time one with reset-on-fork.
    fn spec_for(spec: ThreadSpec, policy: Option<SchedPolicy>) -> ThreadSpec {
        match policy {
            Some(p) if p.is_realtime() => spec.with_policy(p).with_reset_on_fork(),
            Some(p) => spec.with_policy(p),
            None => spec,
        }
    }

    /// The generator's thread spec: `spec`'s placement under this policy.
    pub fn apply(&self, spec: ThreadSpec) -> ThreadSpec {
        Self::spec_for(spec, self.policy)
    }

    /// Whether the generator runs under a real-time policy.
    pub fn is_realtime(&self) -> bool {
        self.applied.is_realtime()
    }

    /// Records where the generator runs against the server's CPUs: a
    /// real-time generator sharing one with the server gets a note.
    pub fn placed(mut self, server: &CpuSet, generator: &CpuSet) -> GenPolicy {
        let mut shared = CpuSet::empty();
        for c in generator.iter().filter(|&c| server.contains(c)) {
            shared.insert(c);
        }
        self.shared = (!shared.is_empty()).then_some(shared);
        self
    }

    /// The warning to show when the generator runs at `SCHED_OTHER` for
    /// want of permission: [`OTHER_NOTE`] and the reason.
    pub fn warning(&self) -> Option<String> {
        let reason = self.reason.as_ref()?;
        // a process started at another policy (`chrt -i 0 takt …`) hands
        // it to the generator: say which
        let inherited = if self.applied == SchedPolicy::DEFAULT {
            String::new()
        } else {
            format!("; it inherits this process's {}", self.applied)
        };
        (!self.is_realtime()).then(|| format!("{OTHER_NOTE} ({reason}{inherited})"))
    }

    /// What a result must say about the generator's policy: the
    /// [`warning`](Self::warning), and for a real-time generator on a
    /// server's CPU that it runs ahead of the server there.
    pub fn notes(&self) -> Vec<String> {
        let mut out: Vec<String> = self.warning().into_iter().collect();
        if let (Some(s), true) = (&self.shared, self.is_realtime()) {
            out.push(format!(
                "the generator ({}) shares CPU {s} with the server: being real-time it runs first there whenever it has work — its cost comes off the server's capacity, and the offered load stays as planned",
                self.applied
            ));
        }
        out
    }

    /// Puts `gen_sched` (the policy read back) into every row's params of
    /// `doc`, and the [`notes`](Self::notes) into its notes (once).
    pub fn stamp(&self, doc: &mut Document) {
        let v = serde_json::Value::from(self.applied.to_string());
        for r in &mut doc.results {
            r.params.insert("gen_sched".into(), v.clone());
        }
        for n in self.notes() {
            if !doc.notes.contains(&n) {
                doc.notes.push(n);
            }
        }
    }
}

/// The priority of a real-time policy (0 for others).
fn rt_prio(p: SchedPolicy) -> u8 {
    match p {
        SchedPolicy::Fifo { prio } | SchedPolicy::Rr { prio } => prio,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_realtime_exactly_when_the_kernel_allows_it() {
        let g = GenPolicy::choose(None).unwrap();
        // ask the kernel directly: the probe's answer must agree
        let direct = ThreadSpec::new("direct")
            .with_policy(REALTIME)
            .spawn(|| ())
            .map(|t| t.join().is_ok());
        match direct {
            Ok(true) => {
                assert_eq!(g.source, PolicySource::Realtime);
                assert_eq!(g.applied, REALTIME);
                assert!(g.warning().is_none());
                assert!(g.apply(ThreadSpec::new("gen")).resets_on_fork());
            }
            _ => {
                assert_eq!(g.source, PolicySource::Fallback);
                assert!(!g.is_realtime());
                assert!(g.warning().unwrap().starts_with(OTHER_NOTE));
            }
        }
        if realtime_refused(10).is_some() {
            assert_eq!(g.source, PolicySource::Fallback);
        }
    }

    #[test]
    fn nothing_the_generator_creates_inherits_its_realtime_policy() {
        let g = GenPolicy::choose(None).unwrap();
        if !g.is_realtime() {
            return; // nothing real-time to inherit (the fallback is tested above)
        }
        let t = g
            .apply(ThreadSpec::new("gen-uac"))
            .spawn(|| {
                let own = takt_sched::current_policy().unwrap();
                // a thread made by takt-sched without a policy of its own
                let thread = ThreadSpec::new("child")
                    .spawn(|| takt_sched::current_policy().unwrap())
                    .unwrap()
                    .join()
                    .unwrap();
                // a process, as a server under test would be started
                let mut child = std::process::Command::new("sleep")
                    .arg("5")
                    .spawn()
                    .unwrap();
                let server = takt_sched::read_process(child.id() as i32);
                let _ = child.kill();
                let _ = child.wait();
                (own, thread, server.unwrap())
            })
            .unwrap();
        let (own, thread, server) = t.join().unwrap();
        assert_eq!(own, REALTIME);
        assert_eq!(thread, SchedPolicy::DEFAULT);
        assert!(server.all_match(SchedPolicy::DEFAULT), "{server:?}");
    }

    #[test]
    fn a_given_policy_is_applied_and_stamped() {
        let other: SchedPolicy = "other:nice=3".parse().unwrap();
        let g = GenPolicy::choose(Some(other)).unwrap();
        assert_eq!((g.source, g.applied), (PolicySource::Given, other));
        assert!(!g.apply(ThreadSpec::new("gen")).resets_on_fork());
        let mut doc = takt_measure::result::DocumentBuilder::start("t");
        doc.push(takt_measure::result::ResultRow::new(
            "x",
            "takt",
            serde_json::Map::new(),
            "us",
            takt_measure::result::Better::Lower,
            vec![1.0],
            0.0,
        ));
        let mut doc = doc.finish();
        g.stamp(&mut doc);
        assert_eq!(doc.results[0].params["gen_sched"], "other:nice=3");
        assert!(doc.notes.is_empty());
        // a fallback says so, once
        let f = GenPolicy {
            policy: None,
            applied: SchedPolicy::DEFAULT,
            source: PolicySource::Fallback,
            reason: Some("no CAP_SYS_NICE, and RLIMIT_RTPRIO 0 < 10".into()),
            shared: None,
        };
        f.stamp(&mut doc);
        f.stamp(&mut doc);
        assert_eq!(doc.notes.len(), 1);
        assert!(doc.notes[0].contains("run as root or with CAP_SYS_NICE"));
        assert_eq!(doc.results[0].params["gen_sched"], "other");
    }

    #[test]
    fn a_realtime_generator_on_a_server_cpu_is_noted() {
        let rt = GenPolicy {
            policy: Some(REALTIME),
            applied: REALTIME,
            source: PolicySource::Realtime,
            reason: None,
            shared: None,
        };
        let one = |c| CpuSet::single(c);
        assert!(rt.clone().placed(&one(1), &one(0)).notes().is_empty());
        let both: CpuSet = "0-1".parse().unwrap();
        let n = rt.placed(&both, &both).notes();
        assert_eq!(n.len(), 1);
        assert!(n[0].contains("shares CPU 0-1"), "{}", n[0]);
    }
}
