//! Human-readable renderings of a [`Snapshot`]: the one-line periodic
//! summary and the full table printed at exit.

use std::fmt::Write as _;

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

fn pair(d: &Dist) -> String {
    if d.count == 0 {
        "-".into()
    } else {
        format!("{}/{}", us(d.p50), us(d.p99))
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
        )
    }

    /// The full statistics table.
    pub fn table(&self) -> String {
        let mut o = String::new();
        let s = &self.server;
        let _ = writeln!(
            o,
            "takt sip proxy: {} mode, {} model{}, {} workers, listen {}, next hop {}, tcp {}",
            s.mode,
            s.model,
            s.wake
                .as_ref()
                .map(|w| format!(" ({w} wake)"))
                .unwrap_or_default(),
            s.workers,
            s.listen,
            s.next_hop,
            s.tcp
        );
        let _ = writeln!(
            o,
            "receive buffer: requested {} B, kernel reports {} B; uptime {:.1} s; transactions {} of {}",
            s.rcvbuf_requested, s.rcvbuf_effective, self.uptime_s, self.transactions, self.transaction_capacity
        );
        let _ = writeln!(
            o,
            "{:<14} {:>9} {:>9} {:>8} {:>8} {:>6} {:>8} {:>15} {:>15} {:>15}",
            "kind",
            "count",
            "forwarded",
            "absorbed",
            "replied",
            "shed",
            "dropped",
            "K_rcv p50/p99",
            "T_sip p50/p99",
            "K_snd p50/p99"
        );
        for (name, k) in &self.kinds {
            let g = |d: &str| k.outcomes.get(d).copied().unwrap_or(0);
            let dropped: u64 = k
                .outcomes
                .iter()
                .filter(|(d, _)| d.starts_with("dropped") || d.as_str() == "send_failed")
                .map(|(_, n)| n)
                .sum();
            let _ = writeln!(
                o,
                "{:<14} {:>9} {:>9} {:>8} {:>8} {:>6} {:>8} {:>15} {:>15} {:>15}",
                name,
                k.count,
                g("forwarded"),
                g("absorbed"),
                g("replied"),
                g("shed"),
                dropped,
                pair(&k.k_rcv),
                pair(&k.t_sip),
                pair(&k.k_snd)
            );
        }
        let _ = writeln!(o, "(times in microseconds)");
        if !self.replied.is_empty() {
            let r: Vec<String> = self
                .replied
                .iter()
                .map(|(c, n)| format!("{c}:{n}"))
                .collect();
            let _ = writeln!(o, "responses generated: {}", r.join(" "));
        }
        if !self.parse_errors.is_empty() {
            let r: Vec<String> = self
                .parse_errors
                .iter()
                .map(|(c, n)| format!("{c}:{n}"))
                .collect();
            let _ = writeln!(o, "parse errors: {}", r.join(" "));
        }
        let _ = writeln!(
            o,
            "drops: sockets (SO_RXQ_OVFL) {}; host UDP since start: RcvbufErrors {} InErrors {} InDatagrams {} (drop rate {:.4})",
            self.socket_drops, self.host_udp.rcvbuf_errors, self.host_udp.in_errors, self.host_udp.in_datagrams, self.host_drop_rate
        );
        if self.batches > 0 {
            let _ = writeln!(
                o,
                "receive batches: {} (mean {:.2} messages)",
                self.batches, self.mean_batch
            );
        }
        let w: Vec<String> = self
            .workers
            .iter()
            .map(|w| format!("{}:{}", w.name, w.messages))
            .collect();
        let _ = writeln!(o, "per worker: {}", w.join(" "));
        o
    }
}
