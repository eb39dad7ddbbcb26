//! The report from fixture documents: sections, figures, and the
//! "not measured" sections of a run that lost stages.

mod common;

use takt_report::input::{Outcome, ReportInput, Stage};
use takt_report::render::{render, write};

#[test]
fn every_section_renders_with_its_figures() {
    let html = render(&common::full_input());
    for stage in Stage::ALL {
        assert!(
            html.contains(&format!("<section id=\"{}\">", stage.name())),
            "{stage}"
        );
    }
    // the latency curve, customer_ring, SME speedups, T_sip, and the model's SME and agents charts
    let figures = html.matches("<figure class=\"plot\">").count();
    assert!(figures >= 6, "{figures} figures");
    for fig in html.split("<figure class=\"plot\">").skip(1) {
        let svg = &fig[..fig.find("</figure>").unwrap()];
        assert!(svg.contains("<svg"), "a figure without an SVG");
        assert!(svg.contains("<circle"), "a figure without data points");
    }
    // provenance: the command, and the disturbance flag of the SME fixture,
    // whose machine block records other work beside the run
    assert!(html.contains("<code>takt bench sme --quick --json</code>"));
    assert!(html.contains("Disturbed"));
    // the seed's figures and the model's check
    assert!(html.contains("SObjectizer 4.4"));
    assert!(html.contains("predicted 2"));
    // the capacity section: its table, its plot with the threshold line,
    // the bounds it could only establish
    assert!(html.contains("capacity (cps)"));
    assert!(html.contains("1% threshold"));
    assert!(html.contains("a bound, not a crossing"));
    // remote: paced quantiles and saturation per implementation
    assert!(html.contains("p99.9 (µs)"));
    assert!(html.contains("async-nats (round trips/s)"));
    // the long runs of their own say how to measure them
    assert!(html.contains("<code>takt sip sweep --json</code>"));
    assert!(html.contains("<code>takt sip torture --json</code>"));
    // self-contained: no scripts, no external references
    assert!(!html.contains("<script"));
    assert!(!html.contains("src="));
    assert!(!html.contains("url("));
    assert!(!html.contains("@import"));
    assert!(!html.contains("href=\"http"));
}

#[test]
fn an_interrupted_run_says_what_is_missing() {
    let mut input = common::full_input();
    input
        .stages
        .retain(|(s, _)| *s == Stage::Machine || *s == Stage::Agents);
    input.stages[1].1 = Outcome::NotMeasured {
        reason: "interrupted (Ctrl-C) after 12 s".into(),
        command: Some("takt bench agents --quick --json --peers".into()),
    };
    let dir = common::temp_dir("interrupted");
    let index = write(&dir, &input).unwrap();
    let html = std::fs::read_to_string(&index).unwrap();
    let section = |id: &str| {
        let start = html.find(&format!("<section id=\"{id}\">")).unwrap();
        let end = start + html[start..].find("</section>").unwrap();
        html[start..end].to_string()
    };
    assert!(section("agents").contains("Not measured:</strong> interrupted (Ctrl-C) after 12 s"));
    assert!(section("agents").contains("<code>takt bench agents --quick --json --peers</code>"));
    for id in ["sme", "sip", "capacity", "remote"] {
        assert!(
            section(id).contains("Not measured:</strong> not in --only"),
            "{id}"
        );
    }
    assert!(section("machine").contains("<svg"));
    assert!(section("beyond").contains("Not modelled"));
    // the directory holds what the report was made from, and reloads
    assert!(dir.join("machine.json").is_file());
    assert!(!dir.join("agents.json").exists());
    assert_eq!(ReportInput::load_dir(&dir).unwrap(), input);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_document_of_the_wrong_shape_is_reported_not_panicked_on() {
    let mut input = common::full_input();
    input.stages[2].1 = Outcome::Measured {
        command: "takt bench sme --quick --json".into(),
        wall_s: 1.0,
        document: serde_json::json!({"suite": "sme", "results": "nope"}),
    };
    let html = render(&input);
    assert!(html.contains("Not readable:</strong>"), "sme section");
}

#[test]
fn sweep_and_robustness_documents_render_when_given() {
    use serde_json::json;
    let mut input = common::full_input();
    let mut rows = Vec::new();
    for (profile, base) in [("default", 10_000.0), ("enhanced", 12_000.0)] {
        for m in [2, 16] {
            let cap = base / if m == 16 { 1.5 } else { 1.0 };
            let p = json!({"mode": "stateful", "workers": m, "profile": profile});
            rows.push(common::row("capacity", "takt", p.clone(), "cps", cap));
            rows.push(common::row("k_rcv", "takt", p, "us", 40.0));
        }
    }
    let sweep = common::document("sip_sweep", rows);
    assert_eq!(input.attach(sweep, None), Some(Stage::Sweep));
    let mut rows = Vec::new();
    for (target, at15, at2, recovery) in [("takt", 0.97, 0.91, 2.0), ("kamailio", 0.7, 0.4, 9.0)] {
        for (name, offered, unit, value) in [
            ("goodput", 1.5, "ratio", at15),
            ("goodput", 2.0, "ratio", at2),
            ("recovery_s", 2.0, "s", recovery),
        ] {
            let p = json!({ "offered": offered });
            rows.push(common::row(name, target, p, unit, value));
        }
    }
    let torture = common::document("sip_torture", rows);
    assert_eq!(
        input.attach(torture, Some("takt sip torture --json".into())),
        Some(Stage::Robustness)
    );
    let html = render(&input);
    let section = |id: &str| {
        let start = html.find(&format!("<section id=\"{id}\">")).unwrap();
        let end = start + html[start..].find("</section>").unwrap();
        html[start..end].to_string()
    };
    let sweep = section("sweep");
    assert!(sweep.contains("enhanced vs default"), "{sweep}");
    assert!(sweep.contains("+20%"), "{sweep}");
    assert!(sweep.contains("<circle"), "a capacity-versus-m plot");
    assert!(sweep.contains("Tables I–II"), "the other rows side by side");
    let robust = section("robustness");
    assert!(
        robust.contains("<th>takt</th><th>kamailio</th>"),
        "{robust}"
    );
    assert!(robust.contains("<circle"), "the goodput plot");
    assert!(
        robust.contains("Recovery slower than 5 s: kamailio"),
        "{robust}"
    );
    assert!(!robust.contains("Not measured"));
}

/// Capacity bounds as documents now write them (null statistics and a
/// `bound`): the table shows the bound with its limit, never a bare
/// number, and the CPU-per-call comparison rows get their table.
#[test]
fn a_capacity_bound_renders_as_a_bound() {
    use serde_json::json;
    let mut input = common::full_input();
    let stage = input
        .stages
        .iter_mut()
        .find(|s| s.0 == Stage::Capacity)
        .unwrap();
    let Outcome::Measured { document, .. } = &mut stage.1 else {
        panic!("the capacity fixture is measured")
    };
    let results = document["results"].as_array_mut().unwrap();
    for r in results.iter_mut().filter(|r| r["name"] == "capacity") {
        let text = r["detail"]["capacity"].as_str().unwrap().to_string();
        let kind = if text.starts_with('≥') {
            "lower"
        } else {
            "upper"
        };
        r["bound"] = json!({"kind": kind, "value": r["median"], "limit": "generator"});
        for k in ["median", "min", "max", "mean", "stddev", "ci95"] {
            r[k] = json!(null);
        }
        r["runs"] = json!(0);
        r["samples"] = json!([]);
    }
    results.push(json!({
        "name": "cpu_per_call_ratio", "impl": "takt",
        "params": {"mode": "stateful", "model": "shared", "vs": "best_peer"},
        "unit": "ratio", "better": "lower",
        "median": 0.27, "min": 0.27, "max": 0.27, "mean": 0.27, "stddev": 0.0,
        "ci95": [0.27, 0.27], "runs": 1, "cpu_s": 0.0, "samples": [0.27],
        "detail": {"peer": "opensips", "takt_us": 36.0, "peer_us": 134.0}
    }));
    let html = render(&input);
    assert!(html.contains("≥ 1,750 (generator)"), "the lower bound");
    assert!(html.contains("&lt; 50 (generator)") || html.contains("< 50 (generator)"));
    assert!(html.contains("a bound, not a crossing"));
    assert!(html.contains("better peer server (opensips)"));
    assert!(html.contains("0.27"));
}

#[test]
fn the_machine_section_shows_the_cse_221_figures() {
    let html = render(&common::full_input());
    assert!(html.contains("CSE 221 (published)"));
    assert!(html.contains("measured / published"));
    // loop_overhead's published 6.3 ns
    assert!(html.contains(">6.30<"), "the published figure in its cell");
}

/// The section with id `id` of `html`.
fn section(html: &str, id: &str) -> String {
    let start = html
        .find(&format!("<section id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no section {id}"));
    let end = start + html[start..].find("</section>").unwrap();
    html[start..end].to_string()
}

/// `v` as the answer writes calls/s: `4,923`.
fn grouped(v: f64) -> String {
    let d = format!("{v:.0}");
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The capacity row of `target` at `m` under `profile` in `doc`.
fn capacity_row<'a>(doc: &'a Value, target: &str, m: u64, profile: &str) -> &'a Value {
    doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["name"] == "capacity"
                && r["impl"] == target
                && r["params"]["workers"] == m
                && r["params"]["profile"] == profile
        })
        .unwrap_or_else(|| panic!("{target} m={m} {profile}"))
}

/// "4,923–5,075": a measured capacity's last passing – first failing rate.
fn bracket(r: &Value) -> String {
    format!(
        "{}–{}",
        grouped(r["median"].as_f64().unwrap()),
        grouped(r["max"].as_f64().unwrap())
    )
}

use serde_json::Value;

/// The answer from a real quick sweep (takt, Kamailio and OpenSIPS,
/// release build, quiet machine): it comes first, its numbers are the
/// document's, an upper bound stays a bound, and Table III's verdicts
/// read as the paired test has them.
#[test]
fn the_answer_comes_first_and_reads_from_a_real_sweep() {
    let mut input = common::full_input();
    let sweep = common::fixture("sweep");
    let command = "takt sip sweep --quick --target takt --target kamailio --target opensips --json";
    input.attach(sweep.clone(), Some(command.into()));
    let html = render(&input);
    // first after the summary: before every stage's section, after the nav
    let answer_at = html.find("<section id=\"answer\">").unwrap();
    assert!(answer_at > html.find("</header>").unwrap());
    assert!(answer_at < html.find("<section id=\"changes\">").unwrap());
    for stage in Stage::ALL {
        assert!(
            answer_at
                < html
                    .find(&format!("<section id=\"{}\">", stage.name()))
                    .unwrap()
        );
    }
    assert!(html.contains("<a href=\"#answer\">"));
    let answer = section(&html, "answer");

    // OpenSIPS under default: from m = 2 to 16, with the brackets
    let (a, b) = (
        capacity_row(&sweep, "opensips", 2, "default"),
        capacity_row(&sweep, "opensips", 16, "default"),
    );
    let point = (b["median"].as_f64().unwrap() / a["median"].as_f64().unwrap() - 1.0) * 100.0;
    let lo = (b["median"].as_f64().unwrap() / a["max"].as_f64().unwrap() - 1.0) * 100.0;
    let hi = (b["max"].as_f64().unwrap() / a["median"].as_f64().unwrap() - 1.0) * 100.0;
    assert!(hi < 0.0, "the fixture's OpenSIPS lost capacity");
    let expected = format!(
        "<strong>opensips stateful</strong>: under <code>default</code>, capacity fell from m = 2 to m = 16: {} → {} calls/s, −{:.0}% (−{:.0}% to −{:.0}%).",
        bracket(a),
        bracket(b),
        -point,
        -lo,
        -hi
    );
    assert!(answer.contains(&expected), "{expected}\n{answer}");
    // the same, in short, first
    let short = &answer[..answer.find("Per server").unwrap()];
    assert!(
        short.contains(&format!(
            "<b>In short:</b> capacity from the smallest to the largest m under <code>default</code>: kamailio stateful not resolved (a bound on one side); opensips stateful −{:.0}% (−{:.0}% to −{:.0}%);",
            -point, -lo, -hi
        )),
        "{short}"
    );
    assert!(short.contains("No profile beat <code>default</code> significantly by Table III's paired t-test at 5% (4 comparisons)."), "{short}");
    assert!(
        short.contains("<code>enhanced</code> lowered capacity for takt stateful at m = 16"),
        "{short}"
    );
    assert!(
        short.contains("The paper's OpenSIPS lost 45% (baseline) and 42% (enhanced)"),
        "{short}"
    );
    // takt at m = 2 under default: the lowest rate already failed — a bound,
    // never a bare number
    let t2 = capacity_row(&sweep, "takt", 2, "default");
    assert_eq!(t2["bound"]["kind"], "upper");
    let bound = format!(
        "&lt; {} (rate floor)",
        grouped(t2["bound"]["value"].as_f64().unwrap())
    );
    assert!(
        answer.contains(&format!(
            "{bound} → {} calls/s",
            bracket(capacity_row(&sweep, "takt", 16, "default"))
        )),
        "{answer}"
    );
    // enhanced against default per m, where the brackets do not overlap
    let (e2, d2) = (
        capacity_row(&sweep, "opensips", 2, "enhanced"),
        capacity_row(&sweep, "opensips", 2, "default"),
    );
    assert!(e2["median"].as_f64() > d2["max"].as_f64());
    assert!(
        answer.contains(&format!(
            "<code>enhanced</code> against <code>default</code> raised capacity (m = 2: {} against {}",
            bracket(e2),
            bracket(d2)
        )),
        "{answer}"
    );
    // Table III: no profile beat default in this sweep; OpenSIPS's two
    // comparisons, with their p-values
    let ps: Vec<f64> = sweep["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["name"] == "drop_rate_lower" && r["impl"] == "opensips")
        .map(|r| r["detail"]["paired"]["p"].as_f64().unwrap())
        .collect();
    assert_eq!(ps.len(), 2);
    assert!(ps.iter().all(|p| *p >= 0.05));
    assert!(
        answer.contains(&format!(
            "against <code>default</code> (2 comparisons): no profile beat <code>default</code> significantly (p from {:.2} to {:.2}).",
            ps.iter().copied().fold(f64::INFINITY, f64::min),
            ps.iter().copied().fold(0.0, f64::max)
        )),
        "{answer}"
    );
    assert!(!answer.contains("Significantly worse"), "{answer}");
    // the sweep ran without the paper's baseline, and says so
    assert!(answer.contains("<code>server</code>, was not in this sweep"));
    // the paper's figures, as the paper's
    assert!(answer.contains("(−45%)") && answer.contains("(−42%: the paper's 42% loss)"));
    assert!(
        answer.contains("OpenSIPS (the paper&#39;s, Linux 2.6.32, one core)"),
        "{answer}"
    );
    // the compact table, and where the figures come from
    assert!(answer.contains("capacity at smallest m (calls/s)"));
    assert!(answer.contains(&format!("<code>{command}</code>")));
    assert!(answer.contains("href=\"#sweep\""));
}

/// A sweep on a machine too loaded for its generator: every capacity is
/// a lower bound and reads "≥", and no change is taken from bounds.
#[test]
fn generator_bound_capacities_read_as_at_least() {
    let mut input = common::full_input();
    let sweep = common::fixture("sweep_generator_bound");
    input.attach(sweep.clone(), None);
    let answer = section(&render(&input), "answer");
    let at = |m, p| {
        let r = capacity_row(&sweep, "kamailio", m, p);
        assert_eq!(r["bound"]["kind"], "lower");
        format!(
            "≥ {} (generator)",
            grouped(r["bound"]["value"].as_f64().unwrap())
        )
    };
    assert!(
        answer.contains(&format!(
            "capacity from m = 2 to m = 16: {} → {} calls/s; the change is not resolved (a bound on one side).",
            at(2, "default"),
            at(16, "default")
        )),
        "{answer}"
    );
    assert!(
        answer.contains(&format!("<td class=\"n\">{}</td>", at(2, "enhanced"))),
        "{answer}"
    );
    assert!(answer.contains("No Table III comparison"), "{answer}");
}

/// Synthetic sweeps (takt-measure's DocumentBuilder): Table III's paired
/// test read right — significant better, significant worse, not
/// significant — and a profile that lowered capacity said plainly.
#[test]
fn table_iii_verdicts_and_a_lowered_capacity_read_plainly() {
    use takt_measure::result::{Better, Bound, BoundKind, DocumentBuilder, ResultRow};
    let params = |m: u64, profile: &str| {
        takt_measure::params![
            ("mode", "stateful"),
            ("model", "processes"),
            ("workers", m),
            ("profile", profile)
        ]
    };
    let capacity = |m, profile, last: f64, first_failing: f64| {
        let mut r = ResultRow::new(
            "capacity",
            "kamailio",
            params(m, profile),
            "cps",
            Better::Higher,
            vec![last],
            1.0,
        );
        r.summary.as_mut().unwrap().max = first_failing;
        r
    };
    // a paired comparison: the baseline's mean drop rate `a`, the
    // profile's `b`, the difference's interval and p
    let paired = |m, profile, against, a: f64, b: f64, ci: [f64; 2], p: f64| {
        let lower: Vec<f64> = [0.9, 1.0, 1.1]
            .iter()
            .map(|f| f * 100.0 * (a - b) / a)
            .collect();
        let mut pp = params(m, profile);
        pp.insert("against".into(), serde_json::json!(against));
        let mut d = serde_json::Map::new();
        d.insert(
            "paired".into(),
            serde_json::json!({"n": 3, "mean_a": a, "mean_b": b, "diff": a - b, "diff_ci95": ci, "p": p}),
        );
        ResultRow::new(
            "drop_rate_lower",
            "kamailio",
            pp,
            "%",
            Better::Higher,
            lower,
            0.0,
        )
        .with_detail(d)
    };
    let mut b = DocumentBuilder::start("sip_sweep");
    for r in [
        capacity(2, "default", 5_335.0, 5_500.0),
        capacity(16, "default", 3_791.0, 3_900.0),
        capacity(2, "enhanced", 3_791.0, 3_900.0),
        capacity(16, "enhanced", 3_800.0, 3_950.0),
        capacity(2, "server", 5_400.0, 5_560.0),
        ResultRow::bounded(
            "capacity",
            "kamailio",
            params(16, "server"),
            "cps",
            Better::Higher,
            Bound::new(BoundKind::Lower, 4_000.0, "generator"),
            1.0,
        ),
        // enhanced beat default at m = 16: 0.02 -> 0.013, 35% lower
        paired(
            16,
            "enhanced",
            "default",
            0.02,
            0.013,
            [0.0024, 0.0116],
            0.01,
        ),
        // server was worse than default at m = 2: 0.02 -> 0.028
        paired(2, "server", "default", 0.02, 0.028, [-0.012, -0.004], 0.02),
        // enhanced against server at m = 2: no significant difference
        paired(2, "enhanced", "server", 0.02, 0.018, [-0.01, 0.014], 0.31),
    ] {
        b.push(r);
    }
    let doc = serde_json::to_value(b.finish()).unwrap();
    let mut input = common::full_input();
    input.attach(doc, Some("takt sip sweep --target kamailio --json".into()));
    let answer = section(&render(&input), "answer");
    // capacity from m = 2 to 16 under default, with the change's interval
    assert!(
        answer.contains("capacity fell from m = 2 to m = 16: 5,335–5,500 → 3,791–3,900 calls/s, −29% (−31% to −27%)."),
        "{answer}"
    );
    // enhanced lowered capacity at m = 2, plainly, with both brackets
    assert!(
        answer.contains("<code>enhanced</code> against <code>default</code> lowered capacity (m = 2: 3,791–3,900 against 5,335–5,500, −29%); was within the searches' resolution of it at m = 16."),
        "{answer}"
    );
    // a lower bound against a measured capacity: raised, as a bound
    assert!(
        answer.contains("raised capacity (m = 16: ≥ 4,000 (generator) against 3,791–3,900)"),
        "{answer}"
    );
    // against server first (the paper's baseline), then default
    let server = answer
        .find("against <code>server</code> (1 comparison)")
        .unwrap();
    let default = answer
        .find("against <code>default</code> (2 comparisons)")
        .unwrap();
    assert!(server < default, "{answer}");
    assert!(
        answer.contains("no profile beat <code>server</code> significantly (p = 0.31)."),
        "{answer}"
    );
    assert!(
        answer.contains("better: <code>enhanced</code> at m = 16 (drop rate 35% lower [12, 58], p = 0.010, 3 pairs)."),
        "{answer}"
    );
    assert!(
        answer.contains("Significantly worse: <code>server</code> at m = 2 (drop rate 40% higher [−60, −20], p = 0.020, 3 pairs)."),
        "{answer}"
    );
    // in short: the verdicts over all comparisons, and the lowered capacity
    let short = &answer[..answer.find("Per server").unwrap()];
    assert!(short.contains("Significantly better by Table III's paired t-test at 5% (3 comparisons): <code>enhanced</code> against <code>default</code> for kamailio stateful at m = 16 (35% lower drop rate)."), "{short}");
    assert!(short.contains("Significantly worse: <code>server</code> against <code>default</code> for kamailio stateful at m = 2 (40% higher drop rate)."), "{short}");
    assert!(
        short.contains(
            "<code>enhanced</code> lowered capacity for kamailio stateful at m = 2 (−29%)"
        ),
        "{short}"
    );
    // the table: a row per profile with its Table III cells
    assert!(
        answer.contains("m = 16: 35% [12, 58] p = 0.01 (better)"),
        "{answer}"
    );
    assert!(
        answer.contains("m = 2: −40% [−60, −20] p = 0.02 (worse)"),
        "{answer}"
    );
    assert!(
        !answer.contains("was not in this sweep"),
        "server was swept"
    );
}

/// Without a sweep the answer says what would answer the question, and
/// what the capacity stage can say instead.
#[test]
fn without_a_sweep_the_answer_says_how_to_get_one() {
    let html = render(&common::full_input());
    let answer = section(&html, "answer");
    assert!(answer.contains("Not answered by this run:</strong> it has no scheduler study (takt report does not run it)"), "{answer}");
    assert!(
        answer.contains("<code>takt sip sweep --json</code>"),
        "{answer}"
    );
    // the capacity fixture: one thread count per server, its bounds as bounds
    assert!(answer.contains("href=\"#capacity\""), "{answer}");
    assert!(
        answer.contains("kamailio stateless ≥ 1750 (generator-bound) calls/s at m = 4"),
        "{answer}"
    );
    assert!(answer.contains("One thread count per server"), "{answer}");
    assert!(!answer.contains("null-relay"), "{answer}");
    assert!(answer.contains("The paper</b>"), "{answer}");
}

mod changes {
    use super::*;
    use takt_report::input::{ChangeCounts, ChangeSide, ChangedRow, Changes, Comparison, RunRef};

    fn run(id: i64) -> RunRef {
        RunRef {
            id,
            started: format!("2026-11-2{id}T12:00:00Z"),
            commit: format!("c{id}"),
            command: "takt report --quick".into(),
        }
    }

    fn comparison(changed: Vec<ChangedRow>, counts: ChangeCounts) -> Changes {
        Changes::Compared(Box::new(Comparison {
            machine: "vm (machine 0035969ec53f6e7f)".into(),
            earlier: run(3),
            current: run(7),
            command: "takt runs diff --db takt-results.db 3 7".into(),
            method: "flagged when the two ci95 intervals of the mean are disjoint".into(),
            min_change_pct: 5.0,
            cautions: vec![
                "run B (#7) saw load 2.5 on 2 CPUs: other work competed for them".into(),
            ],
            counts,
            changed,
        }))
    }

    fn row(name: &str, a: f64, b: f64, improved: bool) -> ChangedRow {
        let side = |m: f64| ChangeSide {
            median: Some(m),
            ci95: Some([m - 0.5, m + 0.5]),
            bound: None,
        };
        ChangedRow {
            suite: "agents".into(),
            name: name.into(),
            implementation: "takt".into(),
            params: "dispatcher=one_thread messages=2000000".into(),
            unit: "ns/msg".into(),
            earlier: side(a),
            current: side(b),
            change_pct: Some((b - a) / a * 100.0),
            p_value: Some(0.008),
            improved,
        }
    }

    #[test]
    fn the_verdicts_since_the_last_run_here_come_counted_then_in_full() {
        let mut input = common::full_input();
        input.changes = Some(comparison(
            vec![
                row("ping_pong", 12.0, 9.0, true),
                row("customer_ring", 8.0, 10.0, false),
            ],
            ChangeCounts {
                improved: 1,
                regressed: 1,
                small: 3,
                within_noise: 120,
                unjudged: 2,
                only_earlier: 0,
                only_current: 4,
            },
        ));
        let dir = common::temp_dir("changes");
        write(&dir, &input).unwrap();
        // takt report --from DIR renders it again
        let again = ReportInput::load_dir(&dir).unwrap();
        assert_eq!(again.changes, input.changes);
        let html = render(&again);
        let c = section(&html, "changes");
        let summary = c.find("<strong>1 row improved, 1 regressed</strong>, 123 the same: 120 within noise, 3 beyond it but under 5%; 2 not judged").unwrap();
        assert!(c.contains("4 only in this run"), "{c}");
        assert!(c.contains("against run 3 of 2026-11-23T12:00:00Z"), "{c}");
        assert!(c.contains("vm (machine 0035969ec53f6e7f)"), "{c}");
        // only the changed rows, in full, after the counts
        let table = c.find("<table").unwrap();
        assert!(summary < table);
        assert!(c.contains("agents · ping_pong"), "{c}");
        assert!(c.contains("12.0 ± 0.500"), "{c}");
        assert!(c.contains("−25.0%"), "{c}");
        assert!(c.contains("+25.0%"), "{c}");
        assert!(
            c.contains("<td>improved</td>") && c.contains("<td>regressed</td>"),
            "{c}"
        );
        assert!(c.contains("Caution:</span> run B (#7) saw load 2.5"), "{c}");
        assert!(
            c.contains("<code>takt runs diff --db takt-results.db 3 7</code>"),
            "{c}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn nothing_changed_says_so() {
        let mut input = common::full_input();
        input.changes = Some(comparison(
            Vec::new(),
            ChangeCounts {
                within_noise: 40,
                small: 2,
                ..ChangeCounts::default()
            },
        ));
        let c = section(&render(&input), "changes");
        assert!(c.contains("<strong>nothing changed beyond the runs' noise</strong> (42 rows the same: 40 within noise, 2 beyond it but under 5%)."), "{c}");
        assert!(!c.contains("<table"), "{c}");
    }

    #[test]
    fn no_earlier_run_here_and_not_compared_say_so() {
        let mut input = common::full_input();
        input.changes = Some(Changes::NoEarlierRun {
            machine: "vm (machine 0035969ec53f6e7f)".into(),
            other_machines: 2,
        });
        let c = section(&render(&input), "changes");
        assert!(c.contains("No earlier report run from this machine (vm (machine 0035969ec53f6e7f)) is in the records"), "{c}");
        assert!(
            c.contains("2 report runs from other machines are not compared"),
            "{c}"
        );
        input.changes = Some(Changes::NotCompared {
            reason: "this run could not be stored in the records (disk full)".into(),
        });
        let c = section(&render(&input), "changes");
        assert!(
            c.contains(
                "Not compared:</strong> this run could not be stored in the records (disk full)."
            ),
            "{c}"
        );
        input.changes = None;
        let c = section(&render(&input), "changes");
        assert!(
            c.contains("Not compared:</strong> this report was not made by a measuring"),
            "{c}"
        );
    }
}
