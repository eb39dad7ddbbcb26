//! Running the plan of `takt report`: each stage as a child process of
//! the same `takt` binary.
//!
//! Child processes, for three reasons: the report's "reproduce" line is
//! exactly the command that made the document; each suite starts in a
//! fresh address space, as a user's run would, none inheriting the
//! previous one's heap, threads or page-cache state; and a Ctrl-C reaches
//! the running suite (same process group), which cleans up after itself
//! (network namespaces, scratch files, SIPp) and exits, while the finished
//! stages' documents are already held here.
//!
//! Protocol of one stage:
//! 1. the stage is skipped (not measured, with the reason) when the plan
//!    does not include it, a tool it needs is missing, or an interrupt
//!    came before it started;
//! 2. the child runs with stdout captured (one JSON document) and stderr
//!    read line by line into the stage's progress bar;
//! 3. an interrupt while it runs is forwarded as SIGINT (for a SIGTERM
//!    sent to `takt report` alone), then SIGKILL after [`KILL_AFTER`];
//! 4. the stage is measured when the child exits 0 with a JSON document on
//!    stdout; otherwise it is not measured, with the exit status and the
//!    child's last stderr line as the reason.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use takt_measure::cancel::Cancel;
use takt_measure::progress::Stage as ProgressStage;
use takt_report::input::{Outcome, ReportInput, RunMeta, Stage};

use super::plan::{plan, Options, StagePlan};
use crate::orchestration_error::OrchestrationError;

/// How long an interrupted stage gets to clean up before it is killed.
pub const KILL_AFTER: Duration = Duration::from_secs(15);

/// How the reason of a stage that an interrupt cut short (or kept from
/// starting) begins: the report's run was interrupted when a stage's
/// reason does.
pub const INTERRUPTED: &str = "interrupted";

/// A child's stderr line as a step of its stage: without the child's own
/// `[  12.3s] ` time stamp (the stage's line has one) and without its
/// stage's name (`agents: `) when the child starts with it, as the
/// stage's line does too.
fn step_of<'a>(line: &'a str, stage: &str) -> &'a str {
    let line = match line.strip_prefix('[').and_then(|r| r.split_once("s] ")) {
        Some((t, rest)) if t.trim().parse::<f64>().is_ok() => rest,
        _ => line,
    };
    line.strip_prefix(stage).unwrap_or(line)
}

/// The result of one child run.
enum ChildEnd {
    Document(serde_json::Value),
    Failed(String),
    Interrupted,
}

fn run_child(
    takt: &Path,
    p: &StagePlan,
    bar: &Arc<ProgressStage>,
    cancel: &Cancel,
) -> Result<ChildEnd, OrchestrationError> {
    let mut child = Command::new(takt)
        .args(&p.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| OrchestrationError::Spawn {
            command: p.command(),
            source,
        })?;
    let last_line = Arc::new(Mutex::new(String::new()));
    let stderr = child.stderr.take().map(|err| {
        let bar = Arc::clone(bar);
        let prefix = format!("{}: ", p.stage.name());
        let last = Arc::clone(&last_line);
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let line = line.trim().to_string();
                if line.is_empty() {
                    continue;
                }
                bar.step(
                    &step_of(&line, &prefix)
                        .chars()
                        .take(100)
                        .collect::<String>(),
                );
                if let Ok(mut l) = last.lock() {
                    *l = line;
                }
            }
        })
    });
    let stdout = child.stdout.take().map(|mut out| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            out.read_to_end(&mut buf).map(|_| buf)
        })
    });
    let mut signalled: Option<Instant> = None;
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|source| OrchestrationError::Wait {
                command: p.command(),
                source,
            })?
        {
            break status;
        }
        if cancel.is_cancelled() {
            match signalled {
                None => {
                    // The terminal's SIGINT reached the child already if it
                    // came from a Ctrl-C; a SIGTERM to us alone did not.
                    // SAFETY: kill(2) with a pid we spawned and have not
                    // reaped yet (try_wait returned None), so it names our
                    // child; no memory is involved.
                    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
                    signalled = Some(Instant::now());
                }
                Some(t) if t.elapsed() > KILL_AFTER => {
                    let _ = child.kill();
                }
                Some(_) => {}
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if let Some(h) = stderr {
        let _ = h.join();
    }
    let out = stdout
        .and_then(|h| h.join().ok())
        .and_then(Result::ok)
        .unwrap_or_default();
    if cancel.is_cancelled() {
        return Ok(ChildEnd::Interrupted);
    }
    let last = last_line.lock().map(|l| l.clone()).unwrap_or_default();
    if !status.success() {
        return Ok(ChildEnd::Failed(format!(
            "`{}` failed ({status}){}",
            p.command(),
            if last.is_empty() {
                String::new()
            } else {
                format!(": {last}")
            }
        )));
    }
    match serde_json::from_slice(&out) {
        Ok(doc) => Ok(ChildEnd::Document(doc)),
        Err(e) => Ok(ChildEnd::Failed(format!(
            "`{}` printed no JSON document ({e})",
            p.command()
        ))),
    }
}

/// Runs the plan; `cancel` (raised by the caller's Ctrl-C handler) stops
/// it after the running stage, whose document is then missing. Returns the
/// report input of whatever finished.
pub fn run(opts: &Options, cancel: &Cancel) -> Result<ReportInput, OrchestrationError> {
    let started = takt_measure::env::utc_now_rfc3339();
    let t0 = Instant::now();
    let (plans, reductions) = plan(opts);
    let total: Duration = plans
        .iter()
        .filter(|p| p.unavailable.is_none())
        .map(|p| p.estimate)
        .sum();
    let say = |line: String| opts.progress.println(&line);
    say(format!(
        "takt report{}: {} stage(s), expected about {}",
        if opts.quick { " --quick" } else { "" },
        plans.len(),
        takt_measure::progress::fmt_secs(total.as_secs_f64())
    ));
    let mut stages: Vec<(Stage, Outcome)> = Vec::new();
    for stage in Stage::ALL {
        let Some(p) = plans.iter().find(|p| p.stage == stage) else {
            stages.push((
                stage,
                Outcome::NotMeasured {
                    reason: "not in --only".into(),
                    command: None,
                },
            ));
            continue;
        };
        if let Some(why) = &p.unavailable {
            say(format!("{stage}: not measured: {why}"));
            stages.push((
                stage,
                Outcome::NotMeasured {
                    reason: why.clone(),
                    command: Some(p.command()),
                },
            ));
            continue;
        }
        if cancel.is_cancelled() {
            stages.push((
                stage,
                Outcome::NotMeasured {
                    reason: format!("{INTERRUPTED} (Ctrl-C) before it started"),
                    command: Some(p.command()),
                },
            ));
            continue;
        }
        say(format!("{stage}: {}", p.command()));
        let bar = Arc::new(opts.progress.stage(stage.name(), p.estimate));
        let s0 = Instant::now();
        let end = run_child(&opts.takt, p, &bar, cancel)?;
        let wall_s = s0.elapsed().as_secs_f64();
        let verdict = match &end {
            ChildEnd::Document(_) => "measured",
            ChildEnd::Failed(_) => "not measured",
            ChildEnd::Interrupted => "interrupted",
        };
        // The stderr reader holding the other reference has been joined.
        if let Ok(bar) = Arc::try_unwrap(bar) {
            bar.finish_with(verdict);
        }
        let outcome = match end {
            ChildEnd::Document(document) => Outcome::Measured {
                command: p.command(),
                wall_s,
                document,
            },
            ChildEnd::Failed(why) => {
                say(format!("{stage}: not measured: {why}"));
                Outcome::NotMeasured {
                    reason: why,
                    command: Some(p.command()),
                }
            }
            ChildEnd::Interrupted => Outcome::NotMeasured {
                reason: format!("{INTERRUPTED} (Ctrl-C) after {wall_s:.0} s"),
                command: Some(p.command()),
            },
        };
        stages.push((stage, outcome));
    }
    Ok(ReportInput {
        meta: RunMeta {
            command: opts.command.clone(),
            started,
            wall_s: t0.elapsed().as_secs_f64(),
            quick: opts.quick,
            reductions,
            run_id: None,
        },
        stages,
        changes: None,
    })
}

/// Whether a stage of `input` was cut short or kept from starting by an
/// interrupt.
pub fn was_interrupted(input: &ReportInput) -> bool {
    input.stages.iter().any(|(_, o)| {
        matches!(o, Outcome::NotMeasured { reason, .. } if reason.starts_with(INTERRUPTED))
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use takt_measure::progress::Progress;

    use super::*;

    fn opts(only: &str) -> Options {
        Options {
            quick: true,
            only: only.parse::<super::super::plan::Only>().unwrap().0,
            takt: PathBuf::from("/nonexistent/takt"),
            peers: true,
            out: PathBuf::from("takt-report"),
            command: "takt report".into(),
            progress: Progress::hidden(),
        }
    }

    #[test]
    fn a_child_line_loses_its_time_stamp() {
        assert_eq!(
            step_of("[  63.4s] agents: ping_pong", "sme: "),
            "agents: ping_pong"
        );
        assert_eq!(step_of("[x] not a stamp", "sme: "), "[x] not a stamp");
        assert_eq!(
            step_of("[12/129] takt 500 cps", "sme: "),
            "[12/129] takt 500 cps"
        );
        // the stage's name once, not twice
        assert_eq!(
            step_of(
                "[  99.4s] agents: kameo ping_pong messages=2000000",
                "agents: "
            ),
            "kameo ping_pong messages=2000000"
        );
    }

    #[test]
    fn a_stage_that_cannot_start_is_an_error_and_others_are_not_in_only() {
        let cancel = Cancel::new();
        let err = run(&opts("sme"), &cancel).unwrap_err();
        assert!(matches!(err, OrchestrationError::Spawn { .. }), "{err}");
        // An interrupt before the first stage: nothing runs, nothing fails.
        cancel.cancel();
        let input = run(&opts("sme,sweep,robustness"), &cancel).unwrap();
        assert!(matches!(
            input.outcome(Stage::Sme),
            Some(Outcome::NotMeasured { reason, .. }) if reason.contains("interrupted")
        ));
        // the scheduler study and robustness are the plan's own stages,
        // with their commands (robustness is unavailable without root)
        for stage in [Stage::Sweep, Stage::Robustness] {
            assert!(
                matches!(
                    input.outcome(stage),
                    Some(Outcome::NotMeasured { reason, command: Some(c) })
                        if (reason.contains("interrupted") || reason.contains("root"))
                            && c.starts_with("takt sip ")
                ),
                "{stage}: {:?}",
                input.outcome(stage)
            );
        }
        assert!(matches!(
            input.outcome(Stage::Machine),
            Some(Outcome::NotMeasured { reason, .. }) if reason == "not in --only"
        ));
        assert!(was_interrupted(&input));
    }
}
