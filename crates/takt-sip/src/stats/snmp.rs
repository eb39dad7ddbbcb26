//! Host-wide UDP counters from `/proc/net/snmp` and `/proc/net/snmp6`
//! (what `netstat -su` shows; the paper's drop rate is RcvbufErrors over
//! the messages received).

use serde::Serialize;

/// UDP counters of the host (IPv4 and IPv6 summed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct UdpCounters {
    /// Datagrams delivered to sockets.
    pub in_datagrams: u64,
    /// Datagrams not delivered for reasons other than no port (includes RcvbufErrors).
    pub in_errors: u64,
    /// Datagrams dropped because a socket's receive buffer was full.
    pub rcvbuf_errors: u64,
    /// Datagrams sent.
    pub out_datagrams: u64,
}

impl UdpCounters {
    /// Reads the counters; zeros where the files are missing.
    pub fn read() -> UdpCounters {
        let mut c = UdpCounters::default();
        if let Ok(s) = std::fs::read_to_string("/proc/net/snmp") {
            c.add(&parse_snmp(&s));
        }
        if let Ok(s) = std::fs::read_to_string("/proc/net/snmp6") {
            c.add(&parse_snmp6(&s));
        }
        c
    }

    fn add(&mut self, o: &UdpCounters) {
        self.in_datagrams += o.in_datagrams;
        self.in_errors += o.in_errors;
        self.rcvbuf_errors += o.rcvbuf_errors;
        self.out_datagrams += o.out_datagrams;
    }

    /// Counter increase since `earlier` (saturating).
    pub fn since(&self, earlier: &UdpCounters) -> UdpCounters {
        UdpCounters {
            in_datagrams: self.in_datagrams.saturating_sub(earlier.in_datagrams),
            in_errors: self.in_errors.saturating_sub(earlier.in_errors),
            rcvbuf_errors: self.rcvbuf_errors.saturating_sub(earlier.rcvbuf_errors),
            out_datagrams: self.out_datagrams.saturating_sub(earlier.out_datagrams),
        }
    }
}

/// Parses the two `Udp:` lines (names, then values) of `/proc/net/snmp`.
pub fn parse_snmp(s: &str) -> UdpCounters {
    let mut lines = s.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(names), Some(values)) = (lines.next(), lines.next()) else {
        return UdpCounters::default();
    };
    let mut c = UdpCounters::default();
    for (n, v) in names
        .split_whitespace()
        .zip(values.split_whitespace())
        .skip(1)
    {
        let v: u64 = v.parse().unwrap_or(0);
        match n {
            "InDatagrams" => c.in_datagrams = v,
            "InErrors" => c.in_errors = v,
            "RcvbufErrors" => c.rcvbuf_errors = v,
            "OutDatagrams" => c.out_datagrams = v,
            _ => {}
        }
    }
    c
}

/// Parses `Udp6*` lines of `/proc/net/snmp6`.
pub fn parse_snmp6(s: &str) -> UdpCounters {
    let mut c = UdpCounters::default();
    for l in s.lines() {
        let mut it = l.split_whitespace();
        let (Some(n), Some(v)) = (it.next(), it.next()) else {
            continue;
        };
        let v: u64 = v.parse().unwrap_or(0);
        match n {
            "Udp6InDatagrams" => c.in_datagrams = v,
            "Udp6InErrors" => c.in_errors = v,
            "Udp6RcvbufErrors" => c.rcvbuf_errors = v,
            "Udp6OutDatagrams" => c.out_datagrams = v,
            _ => {}
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_formats() {
        let s = "Ip: Forwarding\nIp: 1\nUdp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\nUdp: 100 2 7 90 5 0\nUdpLite: InDatagrams\nUdpLite: 0\n";
        let c = parse_snmp(s);
        assert_eq!(
            (
                c.in_datagrams,
                c.in_errors,
                c.rcvbuf_errors,
                c.out_datagrams
            ),
            (100, 7, 5, 90)
        );
        let c6 = parse_snmp6("Udp6InDatagrams 4\nUdp6InErrors 1\nUdp6RcvbufErrors 1\n");
        assert_eq!(c6.rcvbuf_errors, 1);
        let _ = UdpCounters::read();
    }
}
