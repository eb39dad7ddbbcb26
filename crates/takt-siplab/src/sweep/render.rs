//! The human output of a sweep: capacity versus m per profile, Tables I
//! and II per profile, Table III, the generator's ceilings, the paper's
//! published tables beside them, and the capacity-versus-m table in
//! markdown ([`capacity_markdown`]) for a README.

use std::fmt::Write;

use takt_measure::table::Table;

use super::{paper, CaseOutcome, SweepOutcome};
use crate::search::{Capacity, Limit};

/// `24100` as `24,100`.
fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if v < 0.0 && digits != "0" {
        out.insert(0, '-');
    }
    out
}

/// A capacity as a markdown cell: `24,100–24,800` (last passing – first
/// failing grid rate), `≥ 30,000 (generator-bound)`, `< 500`.
fn capacity_cell(c: Option<Capacity>) -> String {
    match c {
        None => "unfinished".into(),
        Some(Capacity::Measured {
            cps,
            first_failing_cps,
        }) => format!("{}–{}", thousands(cps), thousands(first_failing_cps)),
        Some(Capacity::AtLeast {
            cps,
            limit: Limit::Generator,
        }) => format!("≥ {} (generator-bound)", thousands(cps)),
        Some(Capacity::AtLeast {
            cps,
            limit: Limit::SearchCeiling,
        }) => format!("≥ {} (search ceiling)", thousands(cps)),
        Some(Capacity::Below { cps, limit }) => format!("< {}{}", thousands(cps), limit.suffix()),
    }
}

/// Capacity versus m per (target, profile) as a markdown table, one
/// column per m, each cell the 1%-drop capacity's interval (see
/// `capacity_cell`), followed by a legend and the generator's ceilings
/// when the sweep measured them. Targets with more than one (mode, model)
/// name them in the first column.
pub fn capacity_markdown(s: &SweepOutcome) -> String {
    let servers: Vec<&CaseOutcome> = s.cases.iter().filter(|c| !c.key.is_ceiling()).collect();
    let mut ms: Vec<usize> = servers.iter().map(|c| c.key.workers).collect();
    ms.sort_unstable();
    ms.dedup();
    let mut rows: Vec<(String, &str, &str, &str, &str)> = Vec::new();
    for c in &servers {
        let k = &c.key;
        let settings = |t: &str| {
            let mut v: Vec<(&str, &str)> = servers
                .iter()
                .filter(|o| o.key.target == t)
                .map(|o| (o.key.mode, o.key.model))
                .collect();
            v.sort_unstable();
            v.dedup();
            v.len()
        };
        let name = if settings(k.target) > 1 {
            format!("{} {} ({})", k.target, k.mode, k.model)
        } else {
            k.target.to_string()
        };
        let row = (name, k.target, k.mode, k.model, k.profile.as_str());
        if !rows.contains(&row) {
            rows.push(row);
        }
    }
    let mut table = Table::new().text("target").text("profile");
    for m in &ms {
        table = table.text(format!("m = {m}"));
    }
    for (name, target, mode, model, profile) in &rows {
        let mut cells = vec![name.clone(), profile.to_string()];
        for m in &ms {
            let cell = servers
                .iter()
                .find(|c| {
                    (c.key.target, c.key.mode, c.key.model, c.key.workers)
                        == (target, mode, model, *m)
                        && c.key.profile == *profile
                })
                .map_or("–".to_string(), |c| capacity_cell(c.result.capacity));
            cells.push(cell);
        }
        table.push(cells);
    }
    let mut o = table.to_markdown();
    o += "\nCalls/s at 1% drop: the last passing – the first failing grid rate (the crossing lies between); \
          ≥ R (generator-bound): the generator could not offer more, the server's capacity is higher.\n";
    let ceilings: Vec<String> = s
        .cases
        .iter()
        .filter(|c| c.key.is_ceiling())
        .map(|c| format!("{} {}", c.key.profile, capacity_cell(c.result.capacity)))
        .collect();
    if !ceilings.is_empty() {
        let _ = writeln!(
            o,
            "The generator's ceiling (the null relay's capacity) per profile: {}.",
            ceilings.join("; ")
        );
    }
    o
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.prec$}"))
}

/// The sweep as text.
pub fn render(s: &SweepOutcome) -> String {
    let mut o = String::new();
    // the instrument's failures first: the tables below do not mean
    // what they say for these cases
    for w in s.generator_bound_warnings() {
        let _ = writeln!(o, "{w}\n");
    }
    // group by (target, mode, model)
    let mut groups: Vec<(&str, &str, &str)> = Vec::new();
    for c in s.cases.iter().filter(|c| !c.key.is_ceiling()) {
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
        let mut caps = Table::new().text("profile \\ m");
        for m in &ms {
            caps = caps.number(m.to_string());
        }
        for p in &profiles {
            let mut cells = vec![p.to_string()];
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
                cells.push(cell);
            }
            caps.push(cells);
        }
        o += &caps.render();
        for p in &profiles {
            let _ = writeln!(
                o,
                "\n-- Table {} ({} {}, profile {p}): the two loads around the 1% crossing --",
                if *p == "enhanced" { "II" } else { "I" },
                g.0,
                g.1
            );
            let mut crossing = Table::new()
                .number("m")
                .number("cps")
                .number("pkts/s")
                .number("T_sip")
                .number("K_rcv")
                .number("RcvErr")
                .number("msgs")
                .number("drop");
            for c in cases.iter().filter(|c| c.key.profile == *p) {
                for col in [&c.crossing.below, &c.crossing.above].into_iter().flatten() {
                    let t_sip = match col.t_sip_us {
                        Some(t) => format!("{t:.1}"),
                        None => col
                            .cpu_per_msg_us
                            .map_or("-".into(), |t| format!("~{t:.1}")),
                    };
                    crossing.push(vec![
                        c.key.workers.to_string(),
                        format!("{:.0}", col.rate_cps),
                        format!("{:.0}", col.arrival_pps),
                        t_sip,
                        format!(
                            "{}{}",
                            if col.k_rcv_estimated { "~" } else { "" },
                            opt(col.k_rcv_us, 1)
                        ),
                        format!("{:.1}", col.rcv_errors),
                        format!("{:.0}", col.total_messages),
                        format!("{:.4}", col.drop_rate),
                    ]);
                }
            }
            o += &crossing.render();
        }
        let group: Vec<_> = s
            .comparisons
            .iter()
            .filter(|c| (c.key.target, c.key.mode, c.key.model) == *g)
            .collect();
        // One table per baseline: `server` (the paper's) first, then
        // `default`, in the order the comparisons come.
        let mut baselines: Vec<&str> = Vec::new();
        for c in &group {
            if !baselines.contains(&c.baseline.as_str()) {
                baselines.push(&c.baseline);
            }
        }
        for base in baselines {
            let cmps: Vec<_> = group.iter().filter(|c| c.baseline == base).collect();
            let _ = writeln!(
                o,
                "\n-- Table III ({} {}) against {base}: each profile at {base}'s first failing rate; % lower [95% interval] --",
                g.0, g.1
            );
            let mut table = Table::new()
                .number("m")
                .number("cps")
                .text("profile")
                .number("drop base")
                .number("drop p")
                .number("drop % lower")
                .number("K base")
                .number("K p")
                .number("K_rcv % lower");
            for c in cmps {
                let cell = |p: &Option<super::paper_tables::Paired>| -> (String, String, String) {
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
                table.push(vec![
                    c.key.workers.to_string(),
                    format!("{:.0}", c.comparison.rate_cps),
                    c.label.clone(),
                    d.0,
                    d.1,
                    d.2,
                    format!("{est}{}", k.0.split('.').next().unwrap_or("-")),
                    format!("{est}{}", k.1.split('.').next().unwrap_or("-")),
                    k.2,
                ]);
            }
            o += &table.render();
        }
    }
    if let Some(n) = s.ceiling_note() {
        let _ = writeln!(o, "\n== The generator's ceiling ==\n{n}");
    }
    o += "\n~ K_rcv: estimated by Little's law from the socket's receive queue; ~ T_sip: server CPU per message (kernel included).\n";
    o += "\n== The paper's published tables (for comparison) ==\n";
    o += &paper::render();
    for n in &s.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o += "\n== Capacity versus m (markdown, also written as capacity_vs_m.md) ==\n";
    o += &capacity_markdown(s);
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

    #[test]
    fn a_case_measured_only_by_a_failing_generator_is_warned_about_first() {
        use crate::search::{Phase, TrialOutcome, TrialRecord};
        let drops = [(0.020, 0.010), (0.022, 0.013), (0.019, 0.009)];
        let mut s = crate::sweep::fixture::outcome(&drops, 2_200.0);
        let trial = |rate_cps, generator_bound| TrialRecord {
            phase: Phase::Ramp,
            rate_cps,
            outcome: TrialOutcome {
                offered_cps: rate_cps,
                achieved_cps: rate_cps,
                sent: 1_000,
                lost: 0,
                failed_calls: 0,
                generator_bound,
                generator_causes: crate::gen::SaturationCauses::NONE,
            },
            rerun: false,
        };
        s.cases[2].result.trials = vec![trial(2_000.0, true), trial(2_000.0, true)];
        // one passing trial among them: not the whole case
        s.cases[1].result.trials = vec![trial(1_000.0, false), trial(2_000.0, true)];
        let w = s.generator_bound_warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("warning: kamailio stateful m=8 batch: every one of its 2 trials"),
            "{}",
            w[0]
        );
        assert!(render(&s).starts_with(&w[0]));
    }

    #[test]
    fn capacity_markdown_per_target_profile_and_m() {
        use crate::search::{Capacity, Limit};
        use crate::sweep::fixture::case;
        let with = |target: &'static str, model: &'static str, m: usize, profile: &str, cap| {
            let mut c = case(profile, "other", 1.0);
            c.key.target = target;
            c.key.model = model;
            c.key.workers = m;
            c.result.capacity = cap;
            c
        };
        let measured = |cps: f64, ff: f64| {
            Some(Capacity::Measured {
                cps,
                first_failing_cps: ff,
            })
        };
        let gen = |cps: f64| {
            Some(Capacity::AtLeast {
                cps,
                limit: Limit::Generator,
            })
        };
        let mut s = crate::sweep::fixture::outcome(&[(0.02, 0.01), (0.02, 0.01)], 2_000.0);
        s.cases = vec![
            with("takt", "shared", 2, "default", gen(24_100.0)),
            with(
                "takt",
                "shared",
                16,
                "default",
                measured(18_000.0, 18_540.0),
            ),
            with(
                "takt",
                "shared",
                2,
                "enhanced",
                measured(20_000.0, 20_600.0),
            ),
            with(
                "kamailio",
                "processes",
                2,
                "default",
                measured(2_400.0, 2_472.0),
            ),
            with("kamailio", "processes", 16, "default", None),
            with("null-relay", "relay", 1, "default", gen(30_000.0)),
            with(
                "null-relay",
                "relay",
                1,
                "poll",
                measured(35_000.0, 36_050.0),
            ),
        ];
        let md = capacity_markdown(&s);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines[0], "| target | profile | m = 2 | m = 16 |", "{md}");
        assert_eq!(lines[1], "| --- | --- | --- | --- |");
        assert_eq!(
            lines[2],
            "| takt | default | ≥ 24,100 (generator-bound) | 18,000–18,540 |"
        );
        // a missing case is a dash, an unfinished one says so
        assert_eq!(lines[3], "| takt | enhanced | 20,000–20,600 | – |");
        assert_eq!(
            lines[4],
            "| kamailio | default | 2,400–2,472 | unfinished |"
        );
        assert_eq!(lines[5], "");
        assert!(!md.contains("| null-relay"), "ceilings are no rows: {md}");
        assert!(
            md.contains("per profile: default ≥ 30,000 (generator-bound); poll 35,000–36,050."),
            "{md}"
        );
        // a second worker model names its setting
        s.cases.push(with(
            "takt",
            "reuseport",
            2,
            "default",
            measured(30_000.0, 30_900.0),
        ));
        let md = capacity_markdown(&s);
        assert!(md.contains("| takt stateful (shared) | default |"), "{md}");
        assert!(
            md.contains("| takt stateful (reuseport) | default | 30,000–30,900 | – |"),
            "{md}"
        );
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(1_234_567.0), "1,234,567");
    }
}
