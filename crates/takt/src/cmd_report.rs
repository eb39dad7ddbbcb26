//! `takt report`: the main job — run the laboratory plan and write the
//! HTML report (see `takt_report`).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Args;
use takt_report::input::{Outcome, ReportInput, Stage};

/// `takt report` flags.
#[derive(Args, Debug)]
pub struct ReportCmd {
    /// The reduced plan: under 5 minutes on a 2-core machine.
    #[arg(long)]
    quick: bool,
    /// Only these stages: machine, agents, sme, sip, remote (comma-separated).
    #[arg(long, value_name = "STAGE,...", value_parser = parse_only)]
    only: Option<StageList>,
    /// The report directory: index.html and the JSON documents beside it.
    #[arg(long, value_name = "DIR", default_value = "takt-report")]
    out: PathBuf,
    /// Render the report of an earlier run from its directory (its
    /// run.json and documents) again, without measuring.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["quick", "only"])]
    from: Option<PathBuf>,
}

/// A parsed `--only` list (a newtype so clap takes it as one value).
#[derive(Clone, Debug)]
struct StageList(Vec<Stage>);

fn parse_only(s: &str) -> Result<StageList, String> {
    Stage::parse_list(s)
        .map(StageList)
        .map_err(|e| e.to_string())
}

pub fn run(cmd: ReportCmd) -> Result<(), String> {
    let input = match &cmd.from {
        Some(dir) => ReportInput::load_dir(dir).map_err(|e| format!("--from: {e}"))?,
        None => measure(&cmd)?,
    };
    let index = takt_report::render::write(&cmd.out, &input).map_err(|e| e.to_string())?;
    let missing: Vec<String> = input
        .stages
        .iter()
        .filter_map(|(s, o)| match o {
            Outcome::NotMeasured { reason, .. } => Some(format!("{s} ({reason})")),
            Outcome::Measured { .. } => None,
        })
        .collect();
    eprintln!("takt report: wrote {}", index.display());
    if !missing.is_empty() {
        eprintln!("takt report: not measured: {}", missing.join("; "));
    }
    println!("{}", index.display());
    // Only a run this invocation measured was cut short (a re-rendered one
    // was complete as far as this command goes).
    let interrupted = cmd.from.is_none()
        && input.stages.iter().any(|(_, o)| {
        matches!(o, Outcome::NotMeasured { reason, .. } if reason.starts_with("interrupted"))
    });
    if interrupted {
        // The report is written; the status still says the run was cut short.
        std::process::exit(130);
    }
    Ok(())
}

fn measure(cmd: &ReportCmd) -> Result<ReportInput, String> {
    let interrupt = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&interrupt);
    // Release pairs with the Acquire loads of the plan runner.
    ctrlc::set_handler(move || flag.store(true, Ordering::Release))
        .map_err(|e| format!("installing the Ctrl-C handler: {e}"))?;
    let opts = takt_report::plan::Options {
        quick: cmd.quick,
        only: cmd
            .only
            .as_ref()
            .map_or_else(|| Stage::ALL.to_vec(), |l| l.0.clone()),
        takt: std::env::current_exe().map_err(|e| format!("cannot find the takt binary: {e}"))?,
        peers: cfg!(feature = "peers"),
        out: cmd.out.clone(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        bars: std::io::stderr().is_terminal(),
    };
    takt_report::plan::run(&opts, &interrupt).map_err(|e| e.to_string())
}
