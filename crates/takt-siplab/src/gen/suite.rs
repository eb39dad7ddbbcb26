//! `takt sip gen` as a [`Suite`]: a [`GenSuite`] binds the generator,
//! shows a status line per second, runs until its calls are placed, its
//! duration is over or the run is cancelled, and returns a [`GenOutput`]
//! (the summary as text, the `sip_gen` document as JSON).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use takt_measure::result::Document;
use takt_measure::suite::{RunContext, Suite, SuiteOutput};

use super::{GenConfig, GenPolicy, GenReport, Generator, Role};
use crate::error::{io, Error, Result};

/// How often the status thread looks at the clock.
const STATUS_POLL: Duration = Duration::from_millis(100);

/// One `takt sip gen` run: a validated configuration and the policy its
/// threads got.
#[derive(Debug, Clone)]
pub struct GenSuite {
    /// The run's settings ([`GenConfig::validate`]d by [`GenSuite::new`]).
    pub cfg: GenConfig,
    /// The generator's policy and what the document must say about it.
    pub policy: GenPolicy,
}

impl GenSuite {
    /// A run of `cfg` under `policy`; an invalid configuration is an error.
    pub fn new(cfg: GenConfig, policy: GenPolicy) -> Result<GenSuite> {
        cfg.validate()?;
        Ok(GenSuite { cfg, policy })
    }
}

/// A finished `takt sip gen` run.
#[derive(Debug, Clone)]
pub struct GenOutput {
    /// What the generator saw.
    pub report: GenReport,
    /// The `sip_gen` document, the policy stamped.
    pub doc: Document,
}

impl Serialize for GenOutput {
    /// The result document.
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.doc.serialize(s)
    }
}

impl SuiteOutput for GenOutput {
    fn document(&self) -> &Document {
        &self.doc
    }
    fn render(&self) -> String {
        self.report.summary()
    }
}

impl Suite for GenSuite {
    type Output = GenOutput;
    type Error = Error;

    fn name(&self) -> &str {
        "sip gen"
    }

    /// The duration, or the calls at the rate, plus the drain (nothing
    /// for a UAS that answers until stopped).
    fn estimate(&self) -> Duration {
        let placing = match (self.cfg.duration, self.cfg.calls) {
            (Some(d), _) => d,
            (None, Some(n)) if self.cfg.role.has_uac() => {
                Duration::from_secs_f64(n as f64 / self.cfg.cps)
            }
            _ => return Duration::ZERO,
        };
        placing + self.cfg.drain
    }

    fn describe(&self) -> String {
        match self.cfg.role {
            Role::Uas => format!("uas on {}", self.cfg.uas_listen),
            role => format!(
                "{} at {} cps to {}",
                role.name(),
                self.cfg.cps,
                self.cfg.proxy
            ),
        }
    }

    /// Binds, runs with a status line per second, and stops early when
    /// `ctx` is cancelled (the report covers what ran).
    fn run(&self, ctx: &RunContext) -> Result<GenOutput> {
        let shown = ctx.progress();
        for n in self.policy.notes() {
            shown.println(&n);
        }
        let cfg = &self.cfg;
        if cfg.role == Role::Uas && cfg.duration.is_none() {
            shown.println(&format!(
                "takt sip gen: answering on {} until Ctrl-C",
                cfg.uas_listen
            ));
        }
        let g = Generator::bind(cfg)?;
        if let Some(u) = g.uas_addr() {
            if cfg.role == Role::Both {
                shown.println(&format!(
                    "takt sip gen: UAS on {u}: the proxy at {} must forward to it",
                    cfg.proxy
                ));
            }
        }
        let live = g.live();
        let done = Arc::new(AtomicBool::new(false));
        let status = {
            let (done, shown) = (Arc::clone(&done), shown.clone());
            std::thread::Builder::new()
                .name("gen-status".into())
                .spawn(move || {
                    let start = Instant::now();
                    let mut last = 0u64;
                    // Acquire pairs with the Release store after the run.
                    while !done.load(Ordering::Acquire) {
                        std::thread::sleep(STATUS_POLL);
                        let secs = start.elapsed().as_secs();
                        if secs <= last {
                            continue;
                        }
                        last = secs;
                        // Relaxed: counters for display, read independently.
                        let l = |v: &AtomicU64| v.load(Ordering::Relaxed);
                        shown.println(&format!(
                            "{secs:>4}s  placed {:>9}  completed {:>9}  failed {:>7}  retrans {:>7}  max lag {:>7} µs  answered {:>9}",
                            l(&live.attempted),
                            l(&live.completed),
                            l(&live.failed),
                            l(&live.retransmitted),
                            l(&live.max_lag_us),
                            l(&live.answered)
                        ));
                    }
                })
                .map_err(io("starting the status thread"))?
        };
        let report = g.run(ctx.cancel());
        // Release pairs with the status thread's Acquire load.
        done.store(true, Ordering::Release);
        let _ = status.join();
        let report = report?;
        let mut doc = report.to_document();
        self.policy.stamp(&mut doc);
        Ok(GenOutput { report, doc })
    }
}
