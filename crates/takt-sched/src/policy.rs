//! OS scheduling policies, written as on the command line.
//!
//! | string | meaning |
//! |---|---|
//! | `other` | `SCHED_OTHER` (EEVDF on Linux ≥ 6.6), nice 0, default slice |
//! | `other:nice=-5,slice=200us` | `SCHED_OTHER` with nice −5 and a custom EEVDF slice |
//! | `batch`, `batch:nice=5` | `SCHED_BATCH`: never preempts on wake-up |
//! | `idle` | `SCHED_IDLE`: runs only when nothing else wants the CPU |
//! | `fifo:prio=10`, `rr:prio=10` | real-time `SCHED_FIFO` / `SCHED_RR`, priority 1–99 |
//!
//! The custom slice is the EEVDF request size set through `sched_setattr`'s
//! `sched_runtime` field; the kernel clamps it to
//! [`SLICE_MIN`]..=[`SLICE_MAX`].

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::SchedError;

/// The smallest EEVDF custom slice the kernel accepts without clamping.
pub const SLICE_MIN: Duration = Duration::from_micros(100);
/// The largest EEVDF custom slice the kernel accepts without clamping.
pub const SLICE_MAX: Duration = Duration::from_millis(100);
/// Lowest (most favourable) nice value.
pub const NICE_MIN: i8 = -20;
/// Highest (least favourable) nice value.
pub const NICE_MAX: i8 = 19;
/// Real-time priority range of `SCHED_FIFO` and `SCHED_RR`.
pub const RT_PRIO: std::ops::RangeInclusive<u8> = 1..=99;

/// A Linux scheduling policy with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchedPolicy {
    /// `SCHED_OTHER`, the fair class.
    Other {
        /// Nice value, −20..=19.
        nice: i8,
        /// Custom EEVDF slice (`sched_runtime`); `None` keeps the kernel default.
        slice: Option<Duration>,
    },
    /// `SCHED_BATCH`: fair class, treated as CPU-bound (no wake-up preemption).
    Batch {
        /// Nice value, −20..=19.
        nice: i8,
    },
    /// `SCHED_IDLE`: lowest priority of all.
    Idle,
    /// `SCHED_FIFO` real-time policy.
    Fifo {
        /// Priority, 1..=99.
        prio: u8,
    },
    /// `SCHED_RR` real-time policy.
    Rr {
        /// Priority, 1..=99.
        prio: u8,
    },
}

impl SchedPolicy {
    /// `SCHED_OTHER` at nice 0 with the default slice: what a new thread gets.
    pub const DEFAULT: SchedPolicy = SchedPolicy::Other {
        nice: 0,
        slice: None,
    };

    /// The policy's keyword: `other`, `batch`, `idle`, `fifo` or `rr`.
    pub fn keyword(&self) -> &'static str {
        match self {
            SchedPolicy::Other { .. } => "other",
            SchedPolicy::Batch { .. } => "batch",
            SchedPolicy::Idle => "idle",
            SchedPolicy::Fifo { .. } => "fifo",
            SchedPolicy::Rr { .. } => "rr",
        }
    }

    /// Whether this is a real-time policy (needs CAP_SYS_NICE or RLIMIT_RTPRIO).
    pub fn is_realtime(&self) -> bool {
        matches!(self, SchedPolicy::Fifo { .. } | SchedPolicy::Rr { .. })
    }
}

impl Default for SchedPolicy {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Parses `200us`, `1.5ms`, `100000ns`, `0.1s`, `250µs`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().ok()?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    let ns = value * scale;
    if !ns.is_finite() || ns < 0.0 || ns > u64::MAX as f64 {
        return None;
    }
    Some(Duration::from_nanos(ns.round() as u64))
}

/// Writes a duration in the largest unit that keeps it an integer: `3ms`, `200us`, `150ns`.
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns != 0 && ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else if ns != 0 && ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns != 0 && ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

impl FromStr for SchedPolicy {
    type Err = SchedError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let err = |reason: String| SchedError::Parse {
            input: input.to_string(),
            reason,
        };
        let (kw, params) = match input.trim().split_once(':') {
            Some((k, p)) => (k, Some(p)),
            None => (input.trim(), None),
        };
        let mut nice: Option<i8> = None;
        let mut slice: Option<Duration> = None;
        let mut prio: Option<u8> = None;
        for kv in params.into_iter().flat_map(|p| p.split(',')) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| err(format!("{kv:?} is not key=value")))?;
            match k.trim() {
                "nice" => {
                    let n: i8 = v
                        .trim()
                        .parse()
                        .map_err(|_| err(format!("nice {v:?} is not an integer")))?;
                    if !(NICE_MIN..=NICE_MAX).contains(&n) {
                        return Err(err(format!("nice {n} is outside {NICE_MIN}..={NICE_MAX}")));
                    }
                    nice = Some(n);
                }
                "slice" => {
                    let d = parse_duration(v).ok_or_else(|| {
                        err(format!(
                            "slice {v:?} is not a duration (use e.g. 200us, 3ms)"
                        ))
                    })?;
                    if d.is_zero() {
                        return Err(err("slice must be positive".into()));
                    }
                    slice = Some(d);
                }
                "prio" => {
                    let p: u8 = v
                        .trim()
                        .parse()
                        .map_err(|_| err(format!("prio {v:?} is not an integer")))?;
                    if !RT_PRIO.contains(&p) {
                        return Err(err(format!("prio {p} is outside 1..=99")));
                    }
                    prio = Some(p);
                }
                other => return Err(err(format!("unknown parameter {other:?}"))),
            }
        }
        let only = |allowed: &[&str]| -> Result<(), SchedError> {
            let given = [
                ("nice", nice.is_some()),
                ("slice", slice.is_some()),
                ("prio", prio.is_some()),
            ];
            for (name, present) in given {
                if present && !allowed.contains(&name) {
                    return Err(err(format!("policy {kw} takes no {name}")));
                }
            }
            Ok(())
        };
        match kw {
            "other" | "normal" => {
                only(&["nice", "slice"])?;
                Ok(SchedPolicy::Other {
                    nice: nice.unwrap_or(0),
                    slice,
                })
            }
            "batch" => {
                only(&["nice"])?;
                Ok(SchedPolicy::Batch {
                    nice: nice.unwrap_or(0),
                })
            }
            "idle" => {
                only(&[])?;
                Ok(SchedPolicy::Idle)
            }
            "fifo" | "rr" => {
                only(&["prio"])?;
                let prio = prio.ok_or_else(|| err(format!("policy {kw} needs prio=1..99")))?;
                Ok(if kw == "fifo" {
                    SchedPolicy::Fifo { prio }
                } else {
                    SchedPolicy::Rr { prio }
                })
            }
            other => Err(err(format!(
                "unknown policy {other:?} (expected other, batch, idle, fifo or rr)"
            ))),
        }
    }
}

impl fmt::Display for SchedPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())?;
        match *self {
            SchedPolicy::Other { nice, slice } => {
                let mut sep = ':';
                if nice != 0 {
                    write!(f, "{sep}nice={nice}")?;
                    sep = ',';
                }
                if let Some(s) = slice {
                    write!(f, "{sep}slice={}", format_duration(s))?;
                }
                Ok(())
            }
            SchedPolicy::Batch { nice } if nice != 0 => write!(f, ":nice={nice}"),
            SchedPolicy::Fifo { prio } | SchedPolicy::Rr { prio } => write!(f, ":prio={prio}"),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_the_conventions_strings() {
        for s in [
            "other",
            "other:nice=-5",
            "other:nice=-5,slice=200us",
            "other:slice=3ms",
            "batch",
            "batch:nice=5",
            "idle",
            "fifo:prio=10",
            "rr:prio=10",
        ] {
            let p: SchedPolicy = s.parse().unwrap();
            assert_eq!(p.to_string(), s);
        }
    }

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("1.5ms"), Some(Duration::from_micros(1500)));
        assert_eq!(parse_duration("250µs"), Some(Duration::from_micros(250)));
        assert_eq!(parse_duration("7ns"), Some(Duration::from_nanos(7)));
        assert_eq!(parse_duration("2"), None);
        assert_eq!(parse_duration("ms"), None);
        assert_eq!(format_duration(Duration::from_micros(1500)), "1500us");
    }

    #[test]
    fn rejects_bad_settings_precisely() {
        let cases = [
            ("deadline", "unknown policy"),
            ("rr", "needs prio"),
            ("rr:prio=0", "outside 1..=99"),
            ("fifo:nice=1,prio=3", "takes no nice"),
            ("other:nice=-21", "outside -20..=19"),
            ("other:slice=abc", "not a duration"),
            ("other:slice=0us", "must be positive"),
            ("idle:nice=1", "takes no nice"),
            ("batch:slice=1ms", "takes no slice"),
            ("other:bogus=1", "unknown parameter"),
            ("other:nice", "not key=value"),
        ];
        for (input, want) in cases {
            let e = input.parse::<SchedPolicy>().unwrap_err().to_string();
            assert!(e.contains(want), "{input}: {e}");
            assert!(e.contains(input), "{input}: {e}");
        }
    }
}
