//! Scheduler profiles: the settings `takt sip sweep` and `takt sip tune`
//! compare, for Linux 6.x's EEVDF scheduler.
//!
//! EEVDF removed CFS's `sched_latency_ns` and `sched_wakeup_granularity_ns`;
//! `sched_min_granularity_ns` became debugfs `base_slice_ns`, and a thread
//! may ask for its own slice (`sched_setattr`'s `sched_runtime`, clamped
//! to 0.1–100 ms). The paper's settings map onto that as follows.
//!
//! | profile | the server's threads | machine-wide |
//! |---|---|---|
//! | `default` | `SCHED_OTHER`, default slice — what a user gets; Table III's baseline | — |
//! | `server` | `other:slice=100us` (the paper's "server" mode had `sched_min_granularity_ns` = 100 µs) | — |
//! | `enhanced` | `other:slice=S`, S = the workers' mean run time per voluntary switch at the last load that passed under `default` (the paper's rule: slice ≈ the work done before yielding), per m, clamped to 0.1–100 ms | — |
//! | `enhanced*K`, `enhanced/K` | `other:slice=S×K`, `S/K` (K = 2–16; clamped alike): the neighbours `takt sip tune` tries | — |
//! | `batch` | `SCHED_BATCH` (no wake-up preemption: the nearest stand-in for a large wake-up granularity) | — |
//! | `rr:prio=P[,timeslice=T]`, `fifo:prio=P` | real-time, priority P | `sched_rr_timeslice_ms` = T when given |
//! | `poll` | default | idle-latency limit 0: idle CPUs poll instead of halting — **every** CPU, the generator's too |
//! | `base-slice=D` | default | debugfs `base_slice_ns` = D, where debugfs is mounted and writable |
//! | any `--sched` string (`other:slice=300us`, `batch:nice=-5`) | that policy | — |
//!
//! A profile is applied to every thread of the server — takt through its
//! `--sched` flag and to each thread again after start, any other server
//! (the worker processes of Kamailio and OpenSIPS) through
//! [`takt_sched::apply_to_process`] — and read back from the kernel.
//! Machine-wide values go through [`crate::system::SystemSettings`], which
//! records and restores them.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;
use takt_sched::{format_duration, parse_duration, SchedPolicy, SLICE_MAX, SLICE_MIN};

use crate::error::{Error, Result};
use crate::system::SystemSettings;

/// The slice of the `server` profile.
pub const SERVER_SLICE: Duration = Duration::from_micros(100);
/// The real-time priority when `rr`/`fifo` is given without one.
pub const DEFAULT_RT_PRIO: u8 = 10;
/// EEVDF's base slice in debugfs.
pub const BASE_SLICE_FILE: &str = "/sys/kernel/debug/sched/base_slice_ns";
/// The round-robin time slice sysctl.
pub const RR_TIMESLICE_FILE: &str = "/proc/sys/kernel/sched_rr_timeslice_ms";

/// A scheduler profile (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    /// `SCHED_OTHER` with the default slice.
    Default,
    /// A 100 µs slice.
    Server,
    /// The paper's rule; the slice is derived per (target, m).
    Enhanced,
    /// The `enhanced` slice scaled by `num / den` (`enhanced*2`,
    /// `enhanced/2`): the neighbours `takt sip tune` compares it with.
    EnhancedScaled {
        /// Numerator.
        num: u8,
        /// Denominator.
        den: u8,
    },
    /// `SCHED_BATCH`.
    Batch,
    /// `SCHED_RR`, with `sched_rr_timeslice_ms` when given.
    Rr {
        /// Priority 1–99.
        prio: u8,
        /// `sched_rr_timeslice_ms`, when the profile sets it.
        timeslice_ms: Option<u32>,
    },
    /// `SCHED_FIFO`.
    Fifo {
        /// Priority 1–99.
        prio: u8,
    },
    /// Idle CPUs poll (idle-latency limit 0), threads at the default.
    Poll,
    /// debugfs `base_slice_ns`, threads at the default.
    BaseSlice(Duration),
    /// Any policy string.
    Sched(SchedPolicy),
}

impl Profile {
    /// Whether the profile needs the `default` profile's measurements.
    pub fn is_derived(self) -> bool {
        matches!(self, Profile::Enhanced | Profile::EnhancedScaled { .. })
    }

    /// The profile with its machine-wide part and its thread policy, for a
    /// measured `enhanced` slice (required for [`Profile::Enhanced`]).
    pub fn resolve(self, enhanced: Option<EnhancedSlice>) -> Result<Resolved> {
        let mut r = Resolved {
            profile: self,
            policy: SchedPolicy::DEFAULT,
            files: Vec::new(),
            idle_poll: false,
            enhanced: None,
        };
        match self {
            Profile::Default => {}
            Profile::Server => {
                r.policy = SchedPolicy::Other {
                    nice: 0,
                    slice: Some(SERVER_SLICE),
                }
            }
            Profile::Enhanced => {
                let e = enhanced.ok_or_else(|| {
                    Error::Config(
                        "the enhanced profile needs the default profile's run time per switch"
                            .into(),
                    )
                })?;
                r.policy = SchedPolicy::Other {
                    nice: 0,
                    slice: Some(e.slice),
                };
                r.enhanced = Some(e);
            }
            Profile::EnhancedScaled { num, den } => {
                let e = enhanced.ok_or_else(|| {
                    Error::Config(format!(
                        "profile {self} needs the default profile's run time per switch"
                    ))
                })?;
                let scaled = EnhancedSlice::from_run_per_switch(
                    e.slice.as_secs_f64() * 1e6 * f64::from(num) / f64::from(den),
                    e.at_cps,
                )?;
                r.policy = SchedPolicy::Other {
                    nice: 0,
                    slice: Some(scaled.slice),
                };
                r.enhanced = Some(scaled);
            }
            Profile::Batch => r.policy = SchedPolicy::Batch { nice: 0 },
            Profile::Rr { prio, timeslice_ms } => {
                r.policy = SchedPolicy::Rr { prio };
                if let Some(t) = timeslice_ms {
                    r.files.push((RR_TIMESLICE_FILE.into(), t.to_string()));
                }
            }
            Profile::Fifo { prio } => r.policy = SchedPolicy::Fifo { prio },
            Profile::Poll => r.idle_poll = true,
            Profile::BaseSlice(d) => {
                if !Path::new(BASE_SLICE_FILE).exists() {
                    return Err(Error::Config(format!(
                        "profile {self}: {BASE_SLICE_FILE} does not exist (debugfs not mounted?)"
                    )));
                }
                r.files
                    .push((BASE_SLICE_FILE.into(), d.as_nanos().to_string()));
            }
            Profile::Sched(p) => r.policy = p,
        }
        Ok(r)
    }
}

/// Keys that continue the previous profile in a comma-separated list
/// (`rr:prio=10,timeslice=5ms`, `other:nice=-5,slice=200us`).
const PROFILE_KEYS: [&str; 4] = ["nice", "slice", "prio", "timeslice"];

impl Profile {
    /// Profiles from comma-separated lists as the command line writes
    /// them: `default,server` and `rr:prio=10,timeslice=5ms,batch` (a
    /// `key=value` part that names a parameter continues the profile
    /// before it).
    pub fn parse_list(args: &[String]) -> Result<Vec<Profile>> {
        let mut items: Vec<String> = Vec::new();
        for a in args {
            for part in a.split(',') {
                let continues = part
                    .split_once('=')
                    .is_some_and(|(k, _)| PROFILE_KEYS.contains(&k.trim()));
                match items.last_mut() {
                    Some(last) if continues => {
                        last.push(',');
                        last.push_str(part);
                    }
                    _ => items.push(part.to_string()),
                }
            }
        }
        items.iter().map(|s| s.parse()).collect()
    }
}

impl FromStr for Profile {
    type Err = Error;

    fn from_str(s: &str) -> Result<Profile> {
        let bad = |why: String| Error::Config(format!("profile {s:?}: {why}"));
        let t = s.trim();
        Ok(match t {
            "default" => Profile::Default,
            "server" => Profile::Server,
            "enhanced" => Profile::Enhanced,
            "batch" => Profile::Batch,
            "poll" => Profile::Poll,
            "rr" => Profile::Rr {
                prio: DEFAULT_RT_PRIO,
                timeslice_ms: None,
            },
            "fifo" => Profile::Fifo {
                prio: DEFAULT_RT_PRIO,
            },
            _ => {
                for (sep, is_mul) in [('*', true), ('/', false)] {
                    if let Some(k) = t.strip_prefix("enhanced").and_then(|r| r.strip_prefix(sep)) {
                        let k: u8 = k
                            .parse()
                            .ok()
                            .filter(|&k| (2..=16).contains(&k))
                            .ok_or_else(|| bad(format!("the factor {k:?} is not 2..=16")))?;
                        return Ok(if is_mul {
                            Profile::EnhancedScaled { num: k, den: 1 }
                        } else {
                            Profile::EnhancedScaled { num: 1, den: k }
                        });
                    }
                }
                if let Some(d) = t.strip_prefix("base-slice=") {
                    let d = parse_duration(d)
                        .ok_or_else(|| bad(format!("{d:?} is not a duration (e.g. 3ms)")))?;
                    if d.is_zero() {
                        return Err(bad("the base slice must be positive".into()));
                    }
                    return Ok(Profile::BaseSlice(d));
                }
                if let Some(rest) = t.strip_prefix("rr:") {
                    // the profile's own key, the rest is the policy's
                    let mut timeslice_ms = None;
                    let mut keep = Vec::new();
                    for kv in rest.split(',') {
                        match kv.split_once('=') {
                            Some(("timeslice", v)) => {
                                let d = parse_duration(v).ok_or_else(|| {
                                    bad(format!("timeslice {v:?} is not a duration"))
                                })?;
                                let ms = d.as_millis();
                                if ms == 0 || d.as_nanos() % 1_000_000 != 0 || ms > 10_000 {
                                    return Err(bad(
                                        "timeslice must be whole milliseconds, 1ms..=10s".into(),
                                    ));
                                }
                                timeslice_ms = Some(ms as u32);
                            }
                            _ => keep.push(kv),
                        }
                    }
                    let policy: SchedPolicy = format!("rr:{}", keep.join(","))
                        .parse()
                        .map_err(|e: takt_sched::SchedError| bad(e.to_string()))?;
                    let SchedPolicy::Rr { prio } = policy else {
                        unreachable!("parsed an rr policy");
                    };
                    return Ok(Profile::Rr { prio, timeslice_ms });
                }
                let policy: SchedPolicy = t.parse().map_err(|e: takt_sched::SchedError| {
                    bad(format!(
                        "not a profile (default, server, enhanced, batch, rr, fifo, poll, base-slice=D) nor a policy: {e}"
                    ))
                })?;
                match policy {
                    SchedPolicy::Fifo { prio } => Profile::Fifo { prio },
                    SchedPolicy::Rr { prio } => Profile::Rr {
                        prio,
                        timeslice_ms: None,
                    },
                    p => Profile::Sched(p),
                }
            }
        })
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Profile::Default => f.write_str("default"),
            Profile::Server => f.write_str("server"),
            Profile::Enhanced => f.write_str("enhanced"),
            Profile::EnhancedScaled { num, den: 1 } => write!(f, "enhanced*{num}"),
            Profile::EnhancedScaled { num: 1, den } => write!(f, "enhanced/{den}"),
            Profile::EnhancedScaled { num, den } => write!(f, "enhanced*{num}/{den}"),
            Profile::Batch => f.write_str("batch"),
            Profile::Poll => f.write_str("poll"),
            Profile::Rr { prio, timeslice_ms } => {
                write!(f, "rr:prio={prio}")?;
                if let Some(t) = timeslice_ms {
                    write!(f, ",timeslice={t}ms")?;
                }
                Ok(())
            }
            Profile::Fifo { prio } => write!(f, "fifo:prio={prio}"),
            Profile::BaseSlice(d) => write!(f, "base-slice={}", format_duration(d)),
            Profile::Sched(p) => write!(f, "{p}"),
        }
    }
}

/// The `enhanced` slice of one (target, m), and how it was derived.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EnhancedSlice {
    /// The slice applied (clamped to the kernel's range, rounded to µs).
    pub slice: Duration,
    /// The measured mean run time per voluntary switch of the workers, µs.
    pub measured_us: f64,
    /// The rate it was measured at (the last passing grid rate of `default`).
    pub at_cps: f64,
    /// The clamp made it equal to the `server` profile's slice.
    pub equals_server: bool,
    /// The clamp changed it.
    pub clamped: bool,
}

impl EnhancedSlice {
    /// The paper's rule from a measured run time per voluntary switch:
    /// clamped to 0.1–100 ms (the kernel's range) and rounded to whole µs.
    pub fn from_run_per_switch(measured_us: f64, at_cps: f64) -> Result<EnhancedSlice> {
        if !(measured_us.is_finite() && measured_us > 0.0) {
            return Err(Error::Config(format!(
                "enhanced profile: run time per voluntary switch {measured_us} µs is not a positive time"
            )));
        }
        let want = Duration::from_micros(measured_us.round().max(1.0) as u64);
        let slice = want.clamp(SLICE_MIN, SLICE_MAX);
        Ok(EnhancedSlice {
            slice,
            measured_us,
            at_cps,
            equals_server: slice == SERVER_SLICE,
            clamped: slice != want,
        })
    }
}

/// A profile made concrete.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The profile.
    pub profile: Profile,
    /// The policy of every server thread.
    pub policy: SchedPolicy,
    /// Machine-wide files and the values they take during its trials.
    pub files: Vec<(std::path::PathBuf, String)>,
    /// Idle CPUs poll during its trials.
    pub idle_poll: bool,
    /// For `enhanced`: the derived slice.
    pub enhanced: Option<EnhancedSlice>,
}

impl Resolved {
    /// Sets the machine-wide part (recorded in `sys`) and undoes what a
    /// previous profile set that this one does not.
    pub fn enter(&self, sys: &mut SystemSettings) -> Result<()> {
        sys.reset_files()?;
        for (path, value) in &self.files {
            sys.set(path, value)?;
        }
        if self.idle_poll {
            sys.hold_idle(Duration::ZERO)?;
        } else {
            sys.release_idle();
        }
        Ok(())
    }

    /// Whether it sets anything machine-wide (a file or the idle poll),
    /// which then acts on every thread or CPU, the generator's included.
    pub fn is_machine_wide(&self) -> bool {
        self.idle_poll || !self.files.is_empty()
    }

    /// How a table names it: `enhanced (slice 250us)`,
    /// `enhanced (= server, clamped)`.
    pub fn label(&self) -> String {
        match self.enhanced {
            Some(e) if e.equals_server => {
                format!(
                    "{} (slice {} = server, clamped)",
                    self.profile,
                    format_duration(e.slice)
                )
            }
            Some(e) => format!("{} (slice {})", self.profile, format_duration(e.slice)),
            None => self.profile.to_string(),
        }
    }
}

/// What the kernel reports for a server's threads after a profile was
/// applied: each distinct (policy, slice) with its number of threads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReadBack {
    /// The policy applied.
    pub applied: String,
    /// Processes visited.
    pub processes: usize,
    /// Threads set and read back.
    pub threads: usize,
    /// Threads that exited meanwhile.
    pub vanished: usize,
    /// Distinct settings read back: `(policy, slice µs, threads)`.
    pub seen: Vec<(String, Option<u64>, usize)>,
    /// Every thread reports the policy (a clamped slice does not).
    pub all_match: bool,
}

/// Applies `policy` to every thread of every process in `pids` (a
/// server's process group) and reads them back.
pub fn apply_to_server(pids: &[i32], policy: SchedPolicy) -> Result<ReadBack> {
    let mut rb = ReadBack {
        applied: policy.to_string(),
        processes: 0,
        threads: 0,
        vanished: 0,
        seen: Vec::new(),
        all_match: true,
    };
    for &pid in pids {
        let got = match takt_sched::apply_to_process(pid, policy) {
            Ok(g) => g,
            // a process of the group that exited meanwhile (ESRCH)
            Err(takt_sched::SchedError::Refused { errno, .. }) if errno.0 == libc::ESRCH => {
                rb.vanished += 1;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        rb.processes += 1;
        rb.threads += got.threads.len();
        rb.vanished += got.vanished;
        rb.all_match &= got.all_match(policy);
        for t in &got.threads {
            let key = (
                t.after.policy.to_string(),
                t.after.slice.map(|d| d.as_micros() as u64),
            );
            match rb
                .seen
                .iter_mut()
                .find(|(p, s, _)| (p, s) == (&key.0, &key.1))
            {
                Some(e) => e.2 += 1,
                None => rb.seen.push((key.0, key.1, 1)),
            }
        }
    }
    if rb.processes == 0 {
        return Err(Error::Config(format!(
            "applying {policy}: none of the server's processes {pids:?} is running"
        )));
    }
    Ok(rb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_lists_keep_their_parameters() {
        let p = Profile::parse_list(&[
            "default,rr:prio=10,timeslice=5ms,other:nice=-5,slice=200us".into(),
            "base-slice=3ms".into(),
        ])
        .unwrap();
        let s: Vec<String> = p.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            s,
            [
                "default",
                "rr:prio=10,timeslice=5ms",
                "other:nice=-5,slice=200us",
                "base-slice=3ms"
            ]
        );
        let e = Profile::parse_list(&["default,fast".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("fast"), "{e}");
    }

    #[test]
    fn parses_and_prints_profiles() {
        for s in [
            "default",
            "server",
            "enhanced",
            "enhanced*2",
            "enhanced/2",
            "batch",
            "poll",
            "rr:prio=10",
            "rr:prio=20,timeslice=5ms",
            "fifo:prio=3",
            "base-slice=3ms",
            "other:slice=300us",
            "batch:nice=-5",
        ] {
            let p: Profile = s.parse().unwrap();
            assert_eq!(p.to_string(), s);
        }
        assert_eq!("rr".parse::<Profile>().unwrap().to_string(), "rr:prio=10");
        for (s, want) in [
            ("fast", "not a profile"),
            ("rr:prio=10,timeslice=1500us", "whole milliseconds"),
            ("rr:prio=0", "outside 1..=99"),
            ("base-slice=x", "not a duration"),
            ("base-slice=0ms", "positive"),
            ("enhanced*1", "not 2..=16"),
            ("enhanced/x", "not 2..=16"),
        ] {
            let e = s.parse::<Profile>().unwrap_err().to_string();
            assert!(e.contains(want), "{s}: {e}");
        }
    }

    #[test]
    fn resolves_policies_and_machine_wide_parts() {
        let r = Profile::Server.resolve(None).unwrap();
        assert_eq!(r.policy.to_string(), "other:slice=100us");
        let r = Profile::Rr {
            prio: 5,
            timeslice_ms: Some(4),
        }
        .resolve(None)
        .unwrap();
        assert_eq!(r.policy, SchedPolicy::Rr { prio: 5 });
        assert_eq!(r.files, [(RR_TIMESLICE_FILE.into(), "4".to_string())]);
        assert!(Profile::Poll.resolve(None).unwrap().idle_poll);
        assert!(Profile::Poll.resolve(None).unwrap().is_machine_wide());
        assert!(!Profile::Batch.resolve(None).unwrap().is_machine_wide());
        assert!(Profile::Enhanced.resolve(None).is_err());
    }

    #[test]
    fn enhanced_follows_the_papers_rule_with_the_clamp() {
        let e = EnhancedSlice::from_run_per_switch(412.4, 3_000.0).unwrap();
        assert_eq!(e.slice, Duration::from_micros(412));
        assert!(!e.clamped && !e.equals_server);
        let e = EnhancedSlice::from_run_per_switch(23.0, 3_000.0).unwrap();
        assert_eq!(e.slice, SERVER_SLICE);
        assert!(e.clamped && e.equals_server);
        let r = Profile::Enhanced.resolve(Some(e)).unwrap();
        assert!(r.label().contains("= server"), "{}", r.label());
        let e4 = EnhancedSlice::from_run_per_switch(400.0, 1.0).unwrap();
        let half = Profile::EnhancedScaled { num: 1, den: 2 }
            .resolve(Some(e4))
            .unwrap();
        assert_eq!(half.policy.to_string(), "other:slice=200us");
        let e = EnhancedSlice::from_run_per_switch(5e6, 1.0).unwrap();
        assert_eq!(e.slice, SLICE_MAX);
        assert!(EnhancedSlice::from_run_per_switch(f64::NAN, 1.0).is_err());
        assert!(EnhancedSlice::from_run_per_switch(0.0, 1.0).is_err());
    }
}
