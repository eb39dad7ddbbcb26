//! The human output of a sweep: capacity versus m per profile, Tables I
//! and II per profile, Table III, and the paper's published tables beside
//! them.

use std::fmt::Write;

use super::{paper, CaseOutcome, SweepOutcome};

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.prec$}"))
}

/// The sweep as text.
pub fn render(s: &SweepOutcome) -> String {
    let mut o = String::new();
    // group by (target, mode, model)
    let mut groups: Vec<(&str, &str, &str)> = Vec::new();
    for c in &s.cases {
        let g = (c.key.target, c.key.mode, c.key.model);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    for g in &groups {
        let cases: Vec<&CaseOutcome> = s
            .cases
            .iter()
            .filter(|c| (c.key.target, c.key.mode, c.key.model) == *g)
            .collect();
        let mut ms: Vec<usize> = cases.iter().map(|c| c.key.workers).collect();
        ms.sort_unstable();
        ms.dedup();
        let mut profiles: Vec<&str> = Vec::new();
        for c in &cases {
            if !profiles.contains(&c.key.profile.as_str()) {
                profiles.push(&c.key.profile);
            }
        }
        let _ = writeln!(
            o,
            "\n== {} {} ({} model): 1%-drop capacity, calls/s ==",
            g.0, g.1, g.2
        );
        let _ = write!(o, "{:>12}", "profile \\ m");
        for m in &ms {
            let _ = write!(o, " {:>24}", m);
        }
        o.push('\n');
        for p in &profiles {
            let _ = write!(o, "{p:>12}");
            for m in &ms {
                let cell = cases
                    .iter()
                    .find(|c| c.key.workers == *m && c.key.profile == *p)
                    .map_or("-".to_string(), |c| {
                        let cap = c
                            .result
                            .capacity
                            .map_or("unfinished".to_string(), |x| x.to_string());
                        match c.enhanced {
                            Some(e) => format!(
                                "{cap} ({}us{})",
                                e.slice.as_micros(),
                                if e.equals_server { "=server" } else { "" }
                            ),
                            None => cap,
                        }
                    });
                let _ = write!(o, " {cell:>24}");
            }
            o.push('\n');
        }
        for p in &profiles {
            let _ = writeln!(
                o,
                "\n-- Table {} ({} {}, profile {p}): the two loads around the 1% crossing --",
                if *p == "enhanced" { "II" } else { "I" },
                g.0,
                g.1
            );
            let _ = writeln!(
                o,
                "{:>3} {:>7} {:>9} {:>8} {:>10} {:>8} {:>9} {:>8}",
                "m", "cps", "pkts/s", "T_sip", "K_rcv", "RcvErr", "msgs", "drop"
            );
            for c in cases.iter().filter(|c| c.key.profile == *p) {
                for col in [&c.crossing.below, &c.crossing.above].into_iter().flatten() {
                    let t_sip = match col.t_sip_us {
                        Some(t) => format!("{t:.1}"),
                        None => col
                            .cpu_per_msg_us
                            .map_or("-".into(), |t| format!("~{t:.1}")),
                    };
                    let _ = writeln!(
                        o,
                        "{:>3} {:>7.0} {:>9.0} {:>8} {:>10} {:>8.1} {:>9.0} {:>8.4}",
                        c.key.workers,
                        col.rate_cps,
                        col.arrival_pps,
                        t_sip,
                        format!(
                            "{}{}",
                            if col.k_rcv_estimated { "~" } else { "" },
                            opt(col.k_rcv_us, 1)
                        ),
                        col.rcv_errors,
                        col.total_messages,
                        col.drop_rate
                    );
                }
            }
        }
        let cmps: Vec<_> = s
            .comparisons
            .iter()
            .filter(|c| (c.key.target, c.key.mode, c.key.model) == *g)
            .collect();
        if !cmps.is_empty() {
            let _ = writeln!(
                o,
                "\n-- Table III ({} {}): each profile against default at default's first failing rate; % lower [95% interval] --",
                g.0, g.1
            );
            let _ = writeln!(
                o,
                "{:>3} {:>7} {:<28} {:>8} {:>8} {:>24} {:>9} {:>9} {:>24}",
                "m",
                "cps",
                "profile",
                "drop def",
                "drop p",
                "drop % lower",
                "K def",
                "K p",
                "K_rcv % lower"
            );
            for c in cmps {
                let cell = |p: &Option<super::tables::Paired>| -> (String, String, String) {
                    match p {
                        Some(p) => {
                            let pct = p.pct_lower().map_or("-".into(), |(v, ci)| {
                                format!("{v:.1}% [{:.1}, {:.1}]", ci[0], ci[1])
                            });
                            (format!("{:.4}", p.mean_a), format!("{:.4}", p.mean_b), pct)
                        }
                        None => ("-".into(), "-".into(), "-".into()),
                    }
                };
                let d = cell(&c.comparison.drop);
                let k = cell(&c.comparison.k_rcv);
                let est = if c.comparison.k_rcv_estimated {
                    "~"
                } else {
                    ""
                };
                let _ = writeln!(
                    o,
                    "{:>3} {:>7.0} {:<28} {:>8} {:>8} {:>24} {:>9} {:>9} {:>24}",
                    c.key.workers,
                    c.comparison.rate_cps,
                    c.label,
                    d.0,
                    d.1,
                    d.2,
                    format!("{est}{}", k.0.split('.').next().unwrap_or("-")),
                    format!("{est}{}", k.1.split('.').next().unwrap_or("-")),
                    k.2
                );
            }
        }
    }
    o += "\n~ K_rcv: estimated by Little's law from the socket's receive queue; ~ T_sip: server CPU per message (kernel included).\n";
    o += "\n== The paper's published tables (for comparison) ==\n";
    o += &paper::render();
    for n in &s.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_table_beside_the_papers() {
        let drops = [(0.020, 0.010), (0.022, 0.013), (0.019, 0.009)];
        let text = render(&crate::sweep::fixture::outcome(&drops, 2_200.0));
        for want in [
            "== kamailio stateful (processes model): 1%-drop capacity",
            "Table I (kamailio stateful, profile default)",
            "Table II (kamailio stateful, profile enhanced)",
            "Table III (kamailio stateful)",
            "~900.0",
            "~80.0",
            "The paper's published tables",
            "2200",
        ] {
            assert!(text.contains(want), "{want:?} missing in:\n{text}");
        }
        // the enhanced row: drop 0.0203 vs 0.0107, % lower with an interval
        let row = text
            .lines()
            .find(|l| l.contains("2060") && l.contains("enhanced"))
            .unwrap_or_else(|| panic!("no Table III row:\n{text}"));
        assert!(
            row.contains("0.0203") && row.contains("0.0107") && row.contains("% ["),
            "{row}"
        );
    }
}
