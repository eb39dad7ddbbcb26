//! `takt sip tune`: the best scheduler setting for one server and worker
//! count within a time budget (takt-siplab's `tune`: a sweep over the
//! candidates, then an interleaved A/B against the default).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clap::Args;
use takt_measure::progress::Progress;
use takt_measure::result::{Better, ResultRow};
use takt_sched::CpuSet;
use takt_sip::proxy::Mode;
use takt_sip::transport::WorkerModel;
use takt_siplab::capacity::GenLoad;
use takt_siplab::search::SearchConfig;
use takt_siplab::sweep::{self, CompareWhich, SweepPlan};
use takt_siplab::target::{TaktOptions, TargetKind, TargetSetup};
use takt_siplab::tune;

use crate::cmd_sip_capacity::{parse_mode, parse_target};
use crate::cmd_sip_sweep::{
    estimate, gen_config, record, start_rates, stop_on_ctrl_c, write_plots, SweepBars,
};

/// Fewest calls in a trial.
const MIN_CALLS: u64 = 100;

/// `takt sip tune` flags.
#[derive(Args, Debug)]
pub struct TuneArgs {
    /// The server: takt, kamailio, or the address of a running proxy.
    #[arg(long, value_name = "TARGET")]
    target: String,
    /// Worker threads (takt) or children (Kamailio).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    workers: u32,
    /// Proxy mode.
    #[arg(long, value_name = "stateless|stateful", default_value = "stateful", value_parser = parse_mode)]
    mode: Mode,
    /// takt's worker model.
    #[arg(
        long,
        value_name = "shared|reuseport|batched",
        default_value = "shared"
    )]
    model: WorkerModel,
    /// Time budget in minutes: the run stops when it is spent (its
    /// verdict is then "inconclusive").
    #[arg(long, value_name = "MINUTES", default_value_t = 20.0)]
    budget: f64,
    /// Repetitions per grid point.
    #[arg(long, value_name = "N", default_value_t = 3)]
    reps: usize,
    /// A/B pairs (at least 5).
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u64).range(tune::MIN_PAIRS as u64..))]
    pairs: u64,
    /// Seconds of calls per trial.
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    window: f64,
    /// First rate of the ramp (default: 8,000 for takt, 2,000 for Kamailio).
    #[arg(long, value_name = "CPS")]
    start_cps: Option<f64>,
    /// Highest rate tried, calls/s.
    #[arg(long, value_name = "CPS", default_value_t = 200_000.0)]
    max_cps: f64,
    /// The server's CPUs (default: the last CPU).
    #[arg(long, value_name = "LIST", value_parser = crate::args::parse_cpus)]
    cpus: Option<CpuSet>,
    /// The generator's CPUs (default: the others).
    #[arg(long, value_name = "LIST", value_parser = crate::args::parse_cpus)]
    gen_cpus: Option<CpuSet>,
    /// The generator's scheduling policy (default: `fifo:prio=10` where
    /// permitted — root or CAP_SYS_NICE; else the system's, and the output
    /// says so).
    #[arg(long, value_name = "POLICY", value_parser = crate::cmd_sip_sweep::parse_policy)]
    gen_sched: Option<takt_sched::SchedPolicy>,
    /// UAC source ports.
    #[arg(long, value_name = "N", default_value_t = 16)]
    ports: usize,
    /// Print exactly one JSON document on stdout.
    #[arg(long)]
    json: bool,
    /// Directory for the JSON document and the plots.
    #[arg(long, value_name = "DIR", default_value = "takt-tune")]
    out: PathBuf,
    /// The run records (SQLite).
    #[arg(long, value_name = "PATH", default_value = takt_records::DEFAULT_PATH)]
    db: PathBuf,
}

pub fn run(a: TuneArgs) -> Result<(), String> {
    if !(a.budget > 0.0 && a.budget.is_finite()) {
        return Err(format!(
            "--budget {} is not a positive number of minutes",
            a.budget
        ));
    }
    let kind = match parse_target(&a.target, a.model)? {
        TargetKind::NullRelay => {
            return Err("the null relay has no scheduler setting to tune".into())
        }
        TargetKind::Takt(_) => TargetKind::Takt(TaktOptions {
            model: a.model,
            extra_args: Vec::new(),
        }),
        k => k,
    };
    let (server_cpus, gen_cpus) =
        takt_siplab::target::placement(a.cpus.as_ref(), a.gen_cpus.as_ref());
    let mut base = TargetSetup::new("127.0.0.1:9".parse().expect("literal"));
    base.cpus = Some(server_cpus.clone());
    let search = SearchConfig {
        reps: a.reps,
        grid_below: 1,
        grid_above: 1,
        start_cps: a.start_cps.unwrap_or(1_000.0).min(a.max_cps),
        min_cps: SearchConfig::default().min_cps.min(a.max_cps),
        max_cps: a.max_cps,
        ..SearchConfig::default()
    };
    let (stop, cancel) = stop_on_ctrl_c()?;
    let profiles = tune::candidates();
    let plan = SweepPlan {
        targets: vec![kind],
        modes: vec![a.mode],
        workers: vec![a.workers as usize],
        profiles: profiles.clone(),
        base,
        search,
        start_cps: match a.start_cps {
            Some(_) => Vec::new(),
            None => start_rates(),
        },
        pairs: a.pairs as usize,
        compare: CompareWhich::BestCapacity,
        sampler_cpus: Some(gen_cpus.clone()),
        stop: stop.clone(),
    };
    let drain = Duration::from_millis(500);
    let gen_policy = crate::cmd_sip::gen_policy(a.gen_sched, &server_cpus, &gen_cpus)?;
    let gcfg = gen_config(&gen_cpus, &gen_policy, a.ports, drain);
    let window = Duration::from_secs_f64(a.window);
    let trial_s = a.window + drain.as_secs_f64() + 0.7;
    let secs = estimate(profiles.len(), 1, 2, a.reps, a.pairs as usize, trial_s);
    eprintln!(
        "takt sip tune: {} {} m={}: {} settings by capacity, then the best against default in {} interleaved pairs; about {:.0} minutes on a quiet machine, budget {} minutes",
        a.target,
        match a.mode {
            Mode::Stateless => "stateless",
            Mode::Stateful => "stateful",
        },
        a.workers,
        profiles.len(),
        a.pairs,
        (secs / 60.0).ceil(),
        a.budget
    );
    let shown = Progress::auto();
    // the budget: stop the run (after the current trial) when it is spent
    {
        let (stop, cancel, shown) = (stop.clone(), cancel.clone(), shown.clone());
        let budget = Duration::from_secs_f64(a.budget * 60.0);
        std::thread::Builder::new()
            .name("tune-budget".into())
            .spawn(move || {
                std::thread::sleep(budget);
                shown.println("takt sip tune: the budget is spent; stopping after this trial");
                // Release pairs with the Acquire load before each trial.
                stop.store(true, Ordering::Release);
                cancel.cancel();
            })
            .map_err(|e| format!("starting the budget timer: {e}"))?;
    }
    let mut bars = SweepBars::new(shown, trial_s);
    let outcome = sweep::run(
        &plan,
        |ip| GenLoad::new(gcfg.clone(), ip, window, MIN_CALLS, cancel.clone()),
        |p| bars.on(p),
    );
    bars.finish(plan.stop.load(Ordering::Acquire));
    let mut outcome = outcome.map_err(|e| e.to_string())?;
    outcome.notes.extend(gen_policy.notes());
    let recs = tune::recommend(&outcome);
    let mut doc = outcome.document(&plan);
    gen_policy.stamp(&mut doc);
    doc.suite = "sip_tune".into();
    for r in &recs {
        match gain_row(r) {
            Some(row) => doc.results.push(row),
            None => doc.notes.push(format!("tune: {}", serde_json::json!(r))),
        }
    }
    let value = serde_json::to_value(&doc).map_err(|e| format!("encoding the document: {e}"))?;
    std::fs::create_dir_all(&a.out).map_err(|e| format!("creating {}: {e}", a.out.display()))?;
    let json_path = a.out.join("tune.json");
    std::fs::write(&json_path, format!("{value:#}\n"))
        .map_err(|e| format!("writing {}: {e}", json_path.display()))?;
    let plots = write_plots(&outcome, &a.out)?;
    let id = record(&value, &a.db)?;
    eprintln!(
        "wrote {} and {plots} plot(s); recorded as run {id} in {}",
        json_path.display(),
        a.db.display()
    );
    if a.json {
        takt_measure::output::emit(&doc, true).map_err(|e| format!("writing the results: {e}"))
    } else {
        let mut text: String = outcome
            .generator_bound_warnings()
            .into_iter()
            .map(|w| w + "\n")
            .collect();
        text.extend(recs.iter().map(tune::render));
        takt_measure::output::print(&text).map_err(|e| format!("writing the results: {e}"))
    }
}

/// The `tune_gain` row of a recommendation with a gain (`None` without
/// one: the recommendation goes into the document's notes).
fn gain_row(r: &tune::Recommendation) -> Option<ResultRow> {
    let g = r.gain_pct?;
    let mut params = serde_json::Map::new();
    params.insert("mode".into(), r.mode.into());
    params.insert("workers".into(), r.workers.into());
    params.insert("test".into(), "paired t, two-sided".into());
    params.insert("alpha".into(), tune::ALPHA.into());
    let mut d = serde_json::Map::new();
    d.insert("recommendation".into(), serde_json::json!(r));
    d.insert("command".into(), serde_json::json!(r.command()));
    Some(
        ResultRow::new(
            "tune_gain",
            r.target,
            params,
            "%",
            Better::Higher,
            vec![g],
            0.0,
        )
        .with_detail(d),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `tune_gain` rows are built here, in the binary: their shapes
    /// are this test's section of the document-shape snapshot
    /// (`tests/document_shapes.snapshot`; `sip_tune` lines named
    /// `tune_gain`, which `tests/document_shapes.rs` leaves to this test).
    /// `TAKT_UPDATE_SNAPSHOT=1` rewrites the section.
    #[test]
    fn tune_gain_rows_match_the_document_shape_snapshot() {
        let rec = |target, gain_pct| tune::Recommendation {
            target,
            mode: "stateful",
            workers: 8,
            capacities: Vec::new(),
            best: None,
            gain_pct,
            ab: None,
            ab_rate_cps: None,
            verdict: tune::Verdict::KeepDefault,
        };
        assert!(gain_row(&rec("takt", None)).is_none());
        let mut ours: Vec<String> = ["takt", "kamailio"]
            .into_iter()
            .filter_map(|t| gain_row(&rec(t, Some(5.0))))
            .map(|row| {
                let mut keys: Vec<&str> = row.params.keys().map(String::as_str).collect();
                keys.sort_unstable();
                // the command stamps the generator's policy on every row
                keys.push("gen_sched");
                keys.sort_unstable();
                format!(
                    "sip_tune\t{}\t{}\t{}\t{}",
                    row.name,
                    row.implementation,
                    keys.join(","),
                    row.unit
                )
            })
            .collect();
        ours.sort();
        ours.dedup();
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/document_shapes.snapshot");
        let text = std::fs::read_to_string(&path).expect("the snapshot");
        let section = |l: &&str| l.starts_with("sip_tune\ttune_gain\t");
        let committed: Vec<&str> = text.lines().filter(section).collect();
        if std::env::var_os("TAKT_UPDATE_SNAPSHOT").is_some_and(|v| v == "1") {
            let mut lines: Vec<String> = text
                .lines()
                .filter(|l| !section(l))
                .map(str::to_string)
                .collect();
            let header = lines.iter().take_while(|l| l.starts_with('#')).count();
            let mut body = lines.split_off(header);
            body.extend(ours);
            body.sort();
            lines.extend(body);
            std::fs::write(&path, lines.join("\n") + "\n").expect("write the snapshot");
            return;
        }
        assert_eq!(
            committed,
            ours,
            "tune_gain shapes differ from {} (a deliberate change: rerun with TAKT_UPDATE_SNAPSHOT=1 and commit the file)",
            path.display()
        );
    }
}
