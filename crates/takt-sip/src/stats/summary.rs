//! The human side of a [`Snapshot`]: the one-line periodic summary, and
//! the per-kind rows of the exit summary as plain data ([`KindRow`]; the
//! `takt` binary lays them out with the laboratory's table model).

use super::{Dist, Snapshot};

fn us(ns: u64) -> String {
    let v = ns as f64 / 1000.0;
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

impl Snapshot {
    /// One line: rate since `prev`, medians of the main components, drops.
    pub fn summary_line(&self, prev: Option<&Snapshot>) -> String {
        let dt = prev
            .map_or(self.uptime_s, |p| self.uptime_s - p.uptime_s)
            .max(1e-9);
        let dm = self.messages - prev.map_or(0, |p| p.messages);
        let invites = self.kinds.get("invite").map_or(0, |k| k.count)
            - prev
                .and_then(|p| p.kinds.get("invite"))
                .map_or(0, |k| k.count);
        let (mut tsip, mut krcv) = (0u64, 0u64);
        let (mut n1, mut n2) = (0u64, 0u64);
        for k in self.kinds.values() {
            tsip = tsip.max(k.t_sip.p50);
            n1 += k.t_sip.count;
            if k.k_rcv.count > 0 {
                krcv = krcv.max(k.k_rcv.p50);
                n2 += k.k_rcv.count;
            }
        }
        let _ = (n1, n2);
        format!(
            "t={:.0}s msgs={} ({:.0}/s, {:.0} cps) T_sip p50max={}us K_rcv p50max={}us txns={} drops sock={} host={} shed={} bad={}",
            self.uptime_s,
            self.messages,
            dm as f64 / dt,
            invites as f64 / dt,
            us(tsip),
            us(krcv),
            self.transactions,
            self.socket_drops,
            self.host_udp.rcvbuf_errors,
            self.kinds.values().map(|k| k.outcomes.get("shed").copied().unwrap_or(0)).sum::<u64>(),
            self.parse_errors.values().sum::<u64>(),
        ) + &self
            .tcp
            .map(|t| format!(" tcp={} (peak {})", t.open, t.peak))
            .unwrap_or_default()
    }

    /// One row per message kind, in name order: the exit summary's table
    /// as plain data (the `takt` binary renders it).
    pub fn kind_rows(&self) -> Vec<KindRow> {
        self.kinds
            .iter()
            .map(|(name, k)| {
                let g = |d: &str| k.outcomes.get(d).copied().unwrap_or(0);
                KindRow {
                    kind: name.clone(),
                    count: k.count,
                    forwarded: g("forwarded"),
                    absorbed: g("absorbed"),
                    replied: g("replied"),
                    shed: g("shed"),
                    dropped: k
                        .outcomes
                        .iter()
                        .filter(|(d, _)| d.starts_with("dropped") || d.as_str() == "send_failed")
                        .map(|(_, n)| n)
                        .sum(),
                    k_rcv: k.k_rcv,
                    t_sip: k.t_sip,
                    k_snd: k.k_snd,
                }
            })
            .collect()
    }
}

/// One message kind's line of the exit summary.
#[derive(Clone, Debug, PartialEq)]
pub struct KindRow {
    /// Message kind (`invite`, `bye`, `resp_2xx`, ...).
    pub kind: String,
    /// Messages of this kind.
    pub count: u64,
    /// Forwarded to the next hop.
    pub forwarded: u64,
    /// Absorbed (retransmissions, ACKs of non-2xx).
    pub absorbed: u64,
    /// Answered by the proxy itself.
    pub replied: u64,
    /// Shed under overload.
    pub shed: u64,
    /// Dropped (every `dropped_*` outcome and `send_failed`).
    pub dropped: u64,
    /// Kernel receive time (ns).
    pub k_rcv: Dist,
    /// Time in the proxy (ns).
    pub t_sip: Dist,
    /// Kernel send time (ns).
    pub k_snd: Dist,
}
