//! What the torture scenarios watch while they run: the server's memory
//! (`VmRSS`, `VmHWM` from `/proc/PID/status`, summed over its processes)
//! and its losses (datagrams its sockets dropped, and for takt the
//! messages it shed with a 503, from its statistics endpoint).

use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use crate::target::Target;

/// Resident memory of some processes, bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Memory {
    /// Sum of `VmRSS`.
    pub rss: u64,
    /// Sum of `VmHWM` (each process's peak resident set).
    pub hwm: u64,
}

/// `VmRSS` and `VmHWM` summed over `pids` (processes that are gone count
/// nothing). Kamailio's processes share memory: their sum counts shared
/// pages once per process.
pub fn memory(pids: &[i32]) -> Memory {
    let mut m = Memory::default();
    for pid in pids {
        let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        for line in s.lines() {
            let kb = |l: &str| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
                    * 1024
            };
            if line.starts_with("VmRSS:") {
                m.rss += kb(line);
            } else if line.starts_with("VmHWM:") {
                m.hwm += kb(line);
            }
        }
    }
    m
}

/// The server's losses so far (cumulative counters).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Losses {
    /// Datagrams its UDP sockets dropped (`/proc/net/udp`).
    pub socket_drops: u64,
    /// Of those, as takt counts them, its INVITE socket's (new INVITEs;
    /// the `shared` model's INVITE split).
    pub invite_socket_drops: u64,
    /// Messages it shed with a 503, by kind (takt only).
    pub shed: std::collections::BTreeMap<String, u64>,
    /// Messages that did not parse, by rule (takt only).
    pub parse_errors: std::collections::BTreeMap<String, u64>,
    /// Responses it generated itself, by status (takt only).
    pub replied: std::collections::BTreeMap<String, u64>,
    /// Messages it dropped, as `kind:outcome` (takt only: `dropped_*`
    /// outcomes, e.g. a response for no transaction of its own).
    pub dropped: std::collections::BTreeMap<String, u64>,
}

impl Losses {
    /// Everything lost: socket drops, shed messages and new INVITEs
    /// dropped unanswered for their queue delay (`dropped_late`).
    pub fn total(&self) -> u64 {
        self.socket_drops
            + self.shed.values().sum::<u64>()
            + self
                .dropped
                .iter()
                .filter(|(k, _)| k.ends_with(":dropped_late"))
                .map(|(_, n)| n)
                .sum::<u64>()
    }
}

/// The target's [`Losses`] now. Socket drops need a local target; takt's
/// counters come from its `/counters` (no distributions: the overload
/// scenario samples every 200 ms, and merging histograms would take the
/// server's CPU from the calls being measured).
pub fn losses(t: &Target) -> Losses {
    let mut l = Losses {
        socket_drops: t
            .sample()
            .map(|s| s.sockets.iter().map(|e| e.drops).sum())
            .unwrap_or(0),
        ..Losses::default()
    };
    if let Some(Ok(v)) = t.takt_counters() {
        l.shed = counts(&v, |k| k.pointer("/outcomes/shed"), "kinds");
        l.parse_errors = counts(&v, |x| Some(x), "parse_errors");
        l.replied = counts(&v, |x| Some(x), "replied");
        l.dropped = dropped(&v);
        l.invite_socket_drops = v
            .get("invite_socket_drops")
            .and_then(Value::as_u64)
            .unwrap_or(0);
    }
    l
}

/// `kind:outcome` counts of the `dropped_*` outcomes in takt's `/stats`.
fn dropped(v: &Value) -> std::collections::BTreeMap<String, u64> {
    let mut m = std::collections::BTreeMap::new();
    let Some(kinds) = v.get("kinds").and_then(Value::as_object) else {
        return m;
    };
    for (kind, k) in kinds {
        let Some(o) = k.get("outcomes").and_then(Value::as_object) else {
            continue;
        };
        for (outcome, n) in o {
            if let (true, Some(n)) = (outcome.starts_with("dropped_"), n.as_u64()) {
                if n > 0 {
                    m.insert(format!("{kind}:{outcome}"), n);
                }
            }
        }
    }
    m
}

fn counts(
    v: &Value,
    pick: impl Fn(&Value) -> Option<&Value>,
    field: &str,
) -> std::collections::BTreeMap<String, u64> {
    v.get(field)
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, x)| Some((k.clone(), pick(x)?.as_u64()?)))
                .filter(|(_, n)| *n > 0)
                .collect()
        })
        .unwrap_or_default()
}

/// One observation of a running scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Seconds since the scenario's load started.
    pub t_s: f64,
    /// The server's memory.
    pub memory: Memory,
    /// Its losses so far.
    pub lost: u64,
    /// Calls completed so far (all UACs).
    pub completed: u64,
    /// Calls failed so far (all UACs).
    pub failed: u64,
}

/// Seconds since `t0`.
pub fn since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_of_this_process() {
        let m = memory(&[std::process::id() as i32]);
        assert!(m.rss > 0 && m.hwm >= m.rss, "{m:?}");
        assert_eq!(memory(&[i32::MAX]), Memory::default());
    }

    #[test]
    fn takt_counters_from_stats_json() {
        let v: Value = serde_json::json!({
            "kinds": {"invite": {"outcomes": {"shed": 5, "forwarded": 9}},
                      "ack": {"outcomes": {"forwarded": 3}}},
            "parse_errors": {"no_via": 2, "x": 0},
            "replied": {"503": 5}
        });
        let shed = counts(&v, |k| k.pointer("/outcomes/shed"), "kinds");
        assert_eq!(
            shed.into_iter().collect::<Vec<_>>(),
            vec![("invite".into(), 5)]
        );
        assert_eq!(counts(&v, |x| Some(x), "parse_errors").len(), 1);
    }
}
