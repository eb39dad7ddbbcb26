//! `takt sip proxy`'s exit summary: a [`Snapshot`] laid out with the
//! table model of `takt-measure` (the proxy crate hands out plain data,
//! [`Snapshot::kind_rows`], and knows nothing of tables).

use takt_measure::table::Table;
use takt_sip::stats::{Dist, Snapshot};

/// Microseconds with 3–4 significant digits; empty for an empty
/// distribution.
fn us(d: &Dist, ns: u64) -> String {
    if d.count == 0 {
        return String::new();
    }
    let v = ns as f64 / 1000.0;
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The statistics printed when the proxy stops: what ran, one table row
/// per message kind (counts by outcome; K_rcv, T_sip and K_snd medians
/// and 99th percentiles in µs), responses generated, parse errors, drops,
/// receive batches and messages per worker.
pub fn render_exit_summary(snap: &Snapshot) -> String {
    let s = &snap.server;
    let mut o = format!(
        "takt sip proxy: {} mode, {} model{}, {} workers, listen {}, next hop {}, tcp {}\n",
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
    o.push_str(&format!(
        "receive buffer: requested {} B, kernel reports {} B{}; uptime {:.1} s; transactions {} of {}\n\n",
        s.rcvbuf_requested,
        s.rcvbuf_effective,
        if s.invite_split {
            format!(" (INVITE socket {} B)", s.invite_rcvbuf_effective)
        } else {
            String::new()
        },
        snap.uptime_s,
        snap.transactions,
        snap.transaction_capacity
    ));
    let mut t = Table::new()
        .text("kind")
        .number("count")
        .number("forwarded")
        .number("absorbed")
        .number("replied")
        .number("shed")
        .number("dropped")
        .number("K_rcv p50 (µs)")
        .number("K_rcv p99 (µs)")
        .number("T_sip p50 (µs)")
        .number("T_sip p99 (µs)")
        .number("K_snd p50 (µs)")
        .number("K_snd p99 (µs)");
    for k in snap.kind_rows() {
        t.push(vec![
            k.kind,
            k.count.to_string(),
            k.forwarded.to_string(),
            k.absorbed.to_string(),
            k.replied.to_string(),
            k.shed.to_string(),
            k.dropped.to_string(),
            us(&k.k_rcv, k.k_rcv.p50),
            us(&k.k_rcv, k.k_rcv.p99),
            us(&k.t_sip, k.t_sip.p50),
            us(&k.t_sip, k.t_sip.p99),
            us(&k.k_snd, k.k_snd.p50),
            us(&k.k_snd, k.k_snd.p99),
        ]);
    }
    o.push_str(&t.render());
    let counts = |m: &std::collections::BTreeMap<String, u64>| {
        m.iter()
            .map(|(c, n)| format!("{c}:{n}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if !snap.replied.is_empty() {
        o.push_str(&format!("responses generated: {}\n", counts(&snap.replied)));
    }
    if !snap.parse_errors.is_empty() {
        o.push_str(&format!("parse errors: {}\n", counts(&snap.parse_errors)));
    }
    o.push_str(&format!(
        "drops: sockets (SO_RXQ_OVFL) {}{}; host UDP since start: RcvbufErrors {} InErrors {} InDatagrams {} (drop rate {:.4})\n",
        snap.socket_drops,
        if snap.server.invite_split {
            format!(" (INVITE socket {})", snap.invite_socket_drops)
        } else {
            String::new()
        },
        snap.host_udp.rcvbuf_errors,
        snap.host_udp.in_errors,
        snap.host_udp.in_datagrams,
        snap.host_drop_rate
    ));
    if let Some(t) = &snap.tcp {
        o.push_str(&format!(
            "tcp: {} open (peak {}), {} accepted, {} opened, {} closed; evicted at the total limit {}; refused: total limit {}, per-peer limit {}; closed by message deadline {}, idle lifetime {}, unframeable {}; send overflows {}; accept errors {}; late connect failures {}; open-file limit {} (needs {})\n",
            t.open,
            t.peak,
            t.accepted,
            t.connected,
            t.closed,
            t.evicted,
            t.refused_total_limit,
            t.refused_peer_limit,
            t.message_timeouts,
            t.idle_timeouts,
            t.unframeable,
            t.send_overflows,
            t.accept_errors,
            t.connect_failures,
            t.fd_limit,
            t.fd_needed
        ));
    }
    if snap.batches > 0 {
        o.push_str(&format!(
            "receive batches: {} (mean {:.2} messages)\n",
            snap.batches, snap.mean_batch
        ));
    }
    let w: Vec<String> = snap
        .workers
        .iter()
        .map(|w| format!("{}:{}", w.name, w.messages))
        .collect();
    o.push_str(&format!("per worker: {}\n", w.join(" ")));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tcp_counters_have_their_line() {
        let r = takt_sip::stats::Registry::new();
        let text = render_exit_summary(&r.snapshot());
        assert!(!text.contains("\ntcp: "), "{text}");
        r.set_tcp(std::sync::Arc::new(takt_sip::stats::TcpCounters::default()));
        let text = render_exit_summary(&r.snapshot());
        assert!(
            text.contains("\ntcp: 0 open (peak 0)")
                && text.contains("message deadline 0")
                && text.contains("evicted at the total limit 0"),
            "{text}"
        );
    }
}
