//! The published tables of Krishnamurthy & Rouskas, "On the Impact of
//! Scheduler Settings on the Performance of Multi-Threaded SIP Servers"
//! (OpenSIPS on Linux 2.6.32, CFS, one core, 30 repetitions per column),
//! printed beside a sweep's own.

use takt_measure::table::Table;

/// One published column: threads, cps, arrival rate (packets/s), T_sip
/// (µs), K_rcv (µs), RCV errors, total messages, drop rate.
pub type Column = (usize, f64, f64, f64, f64, f64, f64, f64);

/// Table I: baseline "server" mode.
pub const TABLE_I: [Column; 10] = [
    (2, 2200.0, 13200.0, 76.9, 1309.16, 3926.0, 633487.0, 0.0062),
    (2, 2400.0, 14400.0, 79.58, 1752.26, 7993.0, 598877.0, 0.0133),
    (
        4, 2000.0, 12000.0, 130.81, 1473.32, 4103.0, 494568.0, 0.0083,
    ),
    (
        4, 2200.0, 13200.0, 146.25, 2184.27, 8061.0, 513137.0, 0.0157,
    ),
    (
        6, 1800.0, 10800.0, 167.97, 1042.66, 3163.0, 441154.0, 0.0072,
    ),
    (6, 2000.0, 12000.0, 203.9, 1981.73, 7830.0, 490867.0, 0.0159),
    (8, 1600.0, 9600.0, 213.47, 893.26, 2166.0, 417454.0, 0.0052),
    (8, 1800.0, 10800.0, 279.36, 1974.84, 8100.0, 447876.0, 0.018),
    (16, 1200.0, 7200.0, 303.00, 809.76, 2613.0, 354911.0, 0.0074),
    (
        16, 1400.0, 8400.0, 429.83, 1394.47, 5114.0, 372133.0, 0.0137,
    ),
];

/// Table II: enhanced "server" mode.
pub const TABLE_II: [Column; 10] = [
    (2, 2400.0, 14400.0, 77.21, 1624.2, 6283.0, 636057.0, 0.0098),
    (
        2, 2600.0, 15600.0, 85.11, 2322.44, 10908.0, 642238.0, 0.0169,
    ),
    (
        4, 2000.0, 12000.0, 129.28, 1363.77, 4559.0, 504670.0, 0.0090,
    ),
    (
        4, 2200.0, 13200.0, 138.76, 1805.35, 6028.0, 525251.0, 0.0115,
    ),
    (
        6, 1800.0, 10800.0, 178.11, 1116.93, 3312.0, 445583.0, 0.0074,
    ),
    (
        6, 2000.0, 12000.0, 186.85, 1418.35, 5103.0, 461109.0, 0.0110,
    ),
    (8, 1600.0, 9600.0, 189.37, 594.44, 1698.0, 433703.0, 0.0039),
    (
        8, 1800.0, 10800.0, 242.29, 1321.15, 4996.0, 440549.0, 0.0113,
    ),
    (16, 1400.0, 8400.0, 392.25, 918.58, 2987.0, 367064.0, 0.0081),
    (
        16, 1600.0, 9600.0, 540.13, 1864.63, 8470.0, 363775.0, 0.0233,
    ),
];

/// Table III: threads, cps, drop rate % lower, K_rcv % lower (enhanced
/// against baseline).
pub const TABLE_III: [(usize, f64, f64, f64); 5] = [
    (2, 2400.0, 26.31, 7.3),
    (4, 2200.0, 26.4, 17.3),
    (6, 2000.0, 30.8, 28.4),
    (8, 1800.0, 37.22, 33.08),
    (16, 1400.0, 40.87, 34.1),
];

/// The paper's enhanced-mode `sched_min_granularity_ns` per thread count, µs.
pub const ENHANCED_GRANULARITY_US: [(usize, u64); 5] =
    [(2, 100), (4, 150), (6, 200), (8, 250), (16, 400)];

/// The paper's 1%-drop capacity per thread count (baseline, enhanced):
/// the last rate below 1% in Tables I and II.
pub fn capacity(m: usize) -> Option<(f64, f64)> {
    let last = |t: &[Column]| t.iter().filter(|c| c.0 == m).map(|c| c.1).next();
    Some((last(&TABLE_I)?, last(&TABLE_II)?))
}

/// Table III's published "% lower" for `m` threads: (drop, K_rcv).
pub fn table_iii(m: usize) -> Option<(f64, f64)> {
    TABLE_III.iter().find(|r| r.0 == m).map(|r| (r.2, r.3))
}

/// The published tables as text, for the human output.
pub fn render() -> String {
    let mut s = String::new();
    let columns = || {
        Table::new()
            .number("m")
            .number("cps")
            .number("pkts/s")
            .number("T_sip")
            .number("K_rcv")
            .number("RcvErr")
            .number("msgs")
            .number("drop")
    };
    for (title, t) in [
        (
            "Table I (paper: OpenSIPS, CFS baseline \"server\" mode, 1 core)",
            &TABLE_I,
        ),
        ("Table II (paper: enhanced \"server\" mode)", &TABLE_II),
    ] {
        let mut table = columns();
        for c in t.iter() {
            table.push(vec![
                c.0.to_string(),
                format!("{:.0}", c.1),
                format!("{:.0}", c.2),
                format!("{:.2}", c.3),
                format!("{:.2}", c.4),
                format!("{:.0}", c.5),
                format!("{:.0}", c.6),
                format!("{:.4}", c.7),
            ]);
        }
        s += &format!("{title}\n");
        s += &table.render();
    }
    let mut table = Table::new()
        .number("m")
        .number("cps")
        .number("drop")
        .number("K_rcv");
    for r in TABLE_III {
        table.push(vec![
            r.0.to_string(),
            format!("{:.0}", r.1),
            format!("{:.1}%", r.2),
            format!("{:.1}%", r.3),
        ]);
    }
    s += "Table III (paper: enhanced vs baseline, % lower)\n";
    s += &table.render();
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_numbers_are_consistent() {
        // six messages per call at the server
        for c in TABLE_I.iter().chain(&TABLE_II) {
            assert_eq!(c.2, c.1 * 6.0);
        }
        assert_eq!(capacity(2), Some((2200.0, 2400.0)));
        assert_eq!(capacity(16), Some((1200.0, 1400.0)));
        assert_eq!(capacity(3), None);
        assert_eq!(table_iii(8), Some((37.22, 33.08)));
        assert!(render().contains("Table III"));
    }
}
