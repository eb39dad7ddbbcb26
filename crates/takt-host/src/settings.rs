//! Machine-wide settings a run changes — sysctls, debugfs scheduler
//! values, the idle-latency hold — recorded for the result document, and
//! put back.
//!
//! Every change is an item of the [cleanup registry](crate::cleanup), so
//! it is undone and repaired as everything else is:
//! 1. Before a file is first written, its original value is read and
//!    registered ([`Item::Write`]), which writes it to this process's
//!    journal; only then is the new value written, and read back.
//! 2. [`SystemSettings::restore`] (and `Drop`, so also an error path or a
//!    signal that cancels the run, which then returns) writes every
//!    original back and ends the idle-latency hold. A second signal, which
//!    ends the process at once ([`takt_measure::cancel`]), undoes them
//!    with everything else registered ([`cleanup::run_all`]).
//! 3. A run killed outright cannot restore anything; the next process
//!    that registers anything repairs it from the journal
//!    ([`cleanup::repair`]). [`SystemSettings::repaired`] reports the files
//!    that repair put back.
//! 4. The idle-latency hold ([`cleanup::hold_idle`]) is an open file: the
//!    kernel drops it when the process ends, however it ends, so it needs
//!    no repair.
//!
//! Every change is kept in [`SystemSettings::changes`] for the result
//! document: the file, its original value, each value written and whether
//! it was restored.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cleanup::{self, Guard, Item};
use crate::error::{io, HostError, Result};

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The file (`/proc/sys/kernel/sched_rr_timeslice_ms`, …).
    pub path: PathBuf,
    /// Its value before the run.
    pub original: String,
    /// Every value written, in order (empty for a change repaired at the
    /// start: the journal keeps only the original).
    pub written: Vec<String>,
    /// The original is back.
    pub restored: bool,
}

/// The machine-wide settings of one run (see the module docs).
#[derive(Debug)]
pub struct SystemSettings {
    changes: Vec<Change>,
    /// The registry item of each change whose file holds another value
    /// than its original (`None` while restored); parallel to `changes`.
    undo: Vec<Option<Guard>>,
    /// The idle-latency hold: its limit and registry item.
    idle: Option<(Duration, Guard)>,
    /// Every idle-latency hold taken, µs (for the record).
    idle_holds: Vec<u64>,
    /// What the start-up repair put back (reported by the first
    /// `SystemSettings` of the process).
    repaired: Vec<Change>,
}

/// The journal directory: the cleanup registry's
/// ([`cleanup::state_dir`]).
pub fn state_dir() -> PathBuf {
    cleanup::state_dir()
}

fn read_value(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(io(format!("reading {}", path.display())))
}

fn write_value(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).map_err(io(format!("writing {value} to {}", path.display())))
}

/// Whether a `SystemSettings` of this process has reported the start-up
/// repair (it is reported once).
static REPAIR_REPORTED: AtomicBool = AtomicBool::new(false);

/// The files the start-up repair put back, the first time it is asked.
fn repaired_files() -> Vec<Change> {
    cleanup::start();
    if REPAIR_REPORTED.swap(true, Ordering::AcqRel) {
        return Vec::new();
    }
    cleanup::repaired()
        .into_iter()
        .filter_map(|item| match item {
            Item::Write { path, original } => Some(Change {
                path,
                original,
                written: Vec::new(),
                restored: true,
            }),
            _ => None,
        })
        .collect()
}

impl SystemSettings {
    /// Starts recording. The first one of a process reports what the
    /// start-up repair of dead runs put back ([`SystemSettings::repaired`]).
    pub fn new() -> Result<SystemSettings> {
        let repaired = repaired_files();
        if let Some(e) = cleanup::repair_failure() {
            return Err(HostError::Config(format!(
                "repairing what earlier runs left: {e}"
            )));
        }
        Ok(SystemSettings {
            changes: Vec::new(),
            undo: Vec::new(),
            idle: None,
            idle_holds: Vec::new(),
            repaired,
        })
    }

    /// What the start-up repair restored (for the first `SystemSettings`
    /// of the process; empty for later ones).
    pub fn repaired(&self) -> &[Change] {
        &self.repaired
    }

    /// Every change made so far.
    pub fn changes(&self) -> &[Change] {
        &self.changes
    }

    /// Writes `value` to `path` (its original registered first) and checks
    /// that it reads back; `Err` leaves the original in place.
    pub fn set(&mut self, path: &Path, value: &str) -> Result<()> {
        let i = match self.changes.iter().position(|c| c.path == path) {
            Some(i) => i,
            None => {
                let original = read_value(path)?;
                self.changes.push(Change {
                    path: path.to_path_buf(),
                    original,
                    written: Vec::new(),
                    restored: true,
                });
                self.undo.push(None);
                self.changes.len() - 1
            }
        };
        if read_value(path)? == value {
            return Ok(());
        }
        if self.undo[i].is_none() {
            self.undo[i] = Some(cleanup::register(Item::Write {
                path: path.to_path_buf(),
                original: self.changes[i].original.clone(),
            }));
        }
        self.changes[i].restored = false;
        self.changes[i].written.push(value.to_string());
        if let Err(e) = write_value(path, value) {
            self.put_back(i)?;
            return Err(e);
        }
        let now = read_value(path)?;
        if now != value {
            self.put_back(i)?;
            return Err(HostError::Config(format!(
                "{} reads {now} after writing {value}",
                path.display()
            )));
        }
        Ok(())
    }

    /// Writes change `i`'s original back and strikes it from the registry
    /// (an error leaves it registered, to be undone at exit or repaired).
    fn put_back(&mut self, i: usize) -> Result<()> {
        let c = &mut self.changes[i];
        if !c.restored {
            write_value(&c.path, &c.original)?;
            c.restored = true;
        }
        if let Some(g) = self.undo[i].take() {
            g.keep();
        }
        Ok(())
    }

    /// Puts every changed file back to its original (keeps the record).
    pub fn reset_files(&mut self) -> Result<()> {
        let mut first_err = None;
        for i in 0..self.changes.len() {
            if let Err(e) = self.put_back(i) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Holds an idle-latency limit (machine-wide: every idle CPU, the
    /// generator's included), replacing any hold of this run.
    pub fn hold_idle(&mut self, limit: Duration) -> Result<()> {
        if self.idle.as_ref().is_some_and(|(l, _)| *l == limit) {
            return Ok(());
        }
        self.idle = None;
        self.idle = Some((limit, cleanup::hold_idle(limit)?));
        self.idle_holds.push(limit.as_micros() as u64);
        Ok(())
    }

    /// Ends this run's idle-latency hold, if any.
    pub fn release_idle(&mut self) {
        self.idle = None;
    }

    /// Restores everything (the record stays).
    pub fn restore(&mut self) -> Result<()> {
        self.release_idle();
        self.reset_files()
    }

    /// The record for a result document: every change, the idle-latency
    /// holds taken, what was repaired at the start.
    pub fn record(&self) -> serde_json::Value {
        serde_json::json!({
            "changes": self.changes,
            "idle_latency_holds_us": self.idle_holds,
            "repaired_at_start": self.repaired,
        })
    }
}

impl Drop for SystemSettings {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            eprintln!("takt: restoring system settings: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("takt-host-settings-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn journal() -> String {
        let path = state_dir().join(format!("cleanup-{}.json", std::process::id()));
        std::fs::read_to_string(path).unwrap_or_default()
    }

    #[test]
    fn sets_records_and_restores() {
        let d = scratch("restore");
        let knob = d.join("knob");
        std::fs::write(&knob, "100\n").unwrap();
        {
            let mut s = SystemSettings::new().unwrap();
            s.set(&knob, "5").unwrap();
            assert_eq!(read_value(&knob).unwrap(), "5");
            // the journal names the original
            assert!(
                cleanup::pending().contains(&Item::Write {
                    path: knob.clone(),
                    original: "100".into()
                }),
                "{:?}",
                cleanup::pending()
            );
            assert!(journal().contains(&knob.display().to_string()));
            s.set(&knob, "7").unwrap();
            assert_eq!(s.changes()[0].written, ["5", "7"]);
            s.reset_files().unwrap();
            assert_eq!(read_value(&knob).unwrap(), "100");
            assert!(!journal().contains(&knob.display().to_string()));
            s.set(&knob, "9").unwrap();
            // dropped here: restored
        }
        assert_eq!(read_value(&knob).unwrap(), "100");
        assert!(!cleanup::pending()
            .iter()
            .any(|i| matches!(i, Item::Write { path, .. } if *path == knob)));
        // a file that cannot be written is an error and changes nothing
        let mut s = SystemSettings::new().unwrap();
        let e = s.set(&d.join("missing"), "1").unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
        assert!(s.repaired().is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
