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
    // provenance: the command, and the disturbance flag of the loaded host the fixtures ran on
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
