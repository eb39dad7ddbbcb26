//! Machine-wide settings a run changes — sysctls, debugfs scheduler
//! values, the idle-latency hold — recorded, and put back.
//!
//! # What is guaranteed
//! 1. Before a file is first written, its original value is read and
//!    saved in a **state file** (`STATE_DIR/system-PID.json`, written to a
//!    temporary name and renamed, so it is never half-written); only then
//!    is the new value written, and read back.
//! 2. [`SystemSettings::restore`] (and `Drop`, so also an error path or a
//!    signal that cancels the run, which then returns) writes every
//!    original back, ends the idle-latency hold and removes the state
//!    file. A second signal, which ends the process at once
//!    ([`takt_measure::cancel`]), first writes back the originals of every
//!    live state file of this process.
//! 3. A run killed outright cannot restore anything; the next
//!    [`SystemSettings::new`] calls [`repair`], which restores the values
//!    of every state file whose process no longer runs, and removes it.
//! 4. The idle-latency hold ([`takt_sched::IdleLatency`]) is an open file:
//!    the kernel drops it when the process ends, however it ends, so it
//!    needs no repair.
//!
//! Every change is kept in [`SystemSettings::changes`] for the result
//! document: the file, its original value, each value written and whether
//! it was restored.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use takt_sched::IdleLatency;

use crate::error::{io, HostError, Result};

/// State files of this process's live [`SystemSettings`], for the
/// forced-exit hook.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes back the originals named by this process's live state files
/// (run when a second signal ends the process).
fn restore_live() {
    for file in live().iter() {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let Ok(state) = serde_json::from_str::<State>(&text) else {
            continue;
        };
        for c in state.changes.iter().filter(|c| !c.restored) {
            let _ = write_value(&c.path, &c.original);
        }
        let _ = std::fs::remove_file(file);
    }
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The file (`/proc/sys/kernel/sched_rr_timeslice_ms`, …).
    pub path: PathBuf,
    /// Its value before the run.
    pub original: String,
    /// Every value written, in order.
    pub written: Vec<String>,
    /// The original is back.
    pub restored: bool,
}

/// The state file's contents.
#[derive(Debug, Serialize, Deserialize)]
struct State {
    pid: u32,
    changes: Vec<Change>,
}

/// The machine-wide settings of one run (see the module docs).
#[derive(Debug)]
pub struct SystemSettings {
    state_file: PathBuf,
    changes: Vec<Change>,
    idle: Option<IdleLatency>,
    /// Every idle-latency hold taken, µs (for the record).
    idle_holds: Vec<u64>,
    /// What [`repair`] put back at the start.
    repaired: Vec<Change>,
}

/// The state directory: the cleanup registry's
/// ([`crate::cleanup::state_dir`]).
pub fn state_dir() -> PathBuf {
    crate::cleanup::state_dir()
}

fn read_value(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(io(format!("reading {}", path.display())))
}

fn write_value(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).map_err(io(format!("writing {value} to {}", path.display())))
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Restores the settings left by runs that died without restoring them
/// (state files in `dir` whose process is gone) and removes their state
/// files; returns what was put back. A value that cannot be written back
/// is an error, and its state file stays for the next attempt.
pub fn repair(dir: &Path) -> Result<Vec<Change>> {
    let mut back = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(back);
    };
    for e in entries.flatten() {
        let path = e.path();
        let is_state = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("system-") && n.ends_with(".json"));
        if !is_state {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(io(format!("reading state file {}", path.display())))?;
        let state: State = serde_json::from_str(&text).map_err(|e| {
            HostError::Config(format!(
                "state file {} is not a takt settings state ({e}); remove it after checking the settings it names",
                path.display()
            ))
        })?;
        if state.pid == std::process::id() || alive(state.pid) {
            continue;
        }
        for mut c in state.changes {
            if !c.restored {
                write_value(&c.path, &c.original)?;
                c.restored = true;
                back.push(c);
            }
        }
        std::fs::remove_file(&path)
            .map_err(io(format!("removing state file {}", path.display())))?;
    }
    Ok(back)
}

impl SystemSettings {
    /// Repairs what dead runs left (see [`repair`]) and starts recording,
    /// with its state file in [`state_dir`].
    pub fn new() -> Result<SystemSettings> {
        SystemSettings::in_dir(&state_dir())
    }

    /// Like [`SystemSettings::new`] with the state file in `dir`.
    pub fn in_dir(dir: &Path) -> Result<SystemSettings> {
        std::fs::create_dir_all(dir)
            .map_err(io(format!("creating state directory {}", dir.display())))?;
        let repaired = repair(dir)?;
        takt_measure::cancel::at_forced_exit(restore_live);
        Ok(SystemSettings {
            state_file: dir.join(format!("system-{}.json", std::process::id())),
            changes: Vec::new(),
            idle: None,
            idle_holds: Vec::new(),
            repaired,
        })
    }

    /// What [`repair`] restored when this run started.
    pub fn repaired(&self) -> &[Change] {
        &self.repaired
    }

    /// Every change made so far.
    pub fn changes(&self) -> &[Change] {
        &self.changes
    }

    fn save(&self) -> Result<()> {
        {
            let mut l = live();
            if !l.contains(&self.state_file) {
                l.push(self.state_file.clone());
            }
        }
        let state = State {
            pid: std::process::id(),
            changes: self.changes.clone(),
        };
        let tmp = self.state_file.with_extension("tmp");
        let text = serde_json::to_string_pretty(&state).expect("plain data serializes");
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &self.state_file))
            .map_err(io(format!(
                "writing state file {}",
                self.state_file.display()
            )))
    }

    /// Writes `value` to `path` (its original saved first) and checks that
    /// it reads back; `Err` leaves the original in place.
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
                self.changes.len() - 1
            }
        };
        if read_value(path)? == value {
            return Ok(());
        }
        self.changes[i].restored = false;
        self.changes[i].written.push(value.to_string());
        self.save()?;
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

    fn put_back(&mut self, i: usize) -> Result<()> {
        let c = &mut self.changes[i];
        if !c.restored {
            write_value(&c.path, &c.original)?;
            c.restored = true;
        }
        self.save()
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
        if self.idle.as_ref().is_some_and(|h| h.limit() == limit) {
            return Ok(());
        }
        self.idle = None;
        self.idle = Some(IdleLatency::hold(limit)?);
        self.idle_holds.push(limit.as_micros() as u64);
        Ok(())
    }

    /// Ends this run's idle-latency hold, if any.
    pub fn release_idle(&mut self) {
        self.idle = None;
    }

    /// Restores everything and removes the state file.
    pub fn restore(&mut self) -> Result<()> {
        self.release_idle();
        self.reset_files()?;
        live().retain(|f| *f != self.state_file);
        match std::fs::remove_file(&self.state_file) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io(format!(
                "removing state file {}",
                self.state_file.display()
            ))(e)),
        }
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

    #[test]
    fn sets_records_and_restores() {
        let d = scratch("restore");
        let knob = d.join("knob");
        std::fs::write(&knob, "100\n").unwrap();
        let state = d.join("state");
        {
            let mut s = SystemSettings::in_dir(&state).unwrap();
            s.set(&knob, "5").unwrap();
            assert_eq!(read_value(&knob).unwrap(), "5");
            // the state file names the original before anything else
            let saved =
                std::fs::read_to_string(state.join(format!("system-{}.json", std::process::id())))
                    .unwrap();
            assert!(saved.contains("\"original\": \"100\""), "{saved}");
            s.set(&knob, "7").unwrap();
            assert_eq!(s.changes()[0].written, ["5", "7"]);
            s.reset_files().unwrap();
            assert_eq!(read_value(&knob).unwrap(), "100");
            s.set(&knob, "9").unwrap();
            // dropped here: restored
        }
        assert_eq!(read_value(&knob).unwrap(), "100");
        assert_eq!(std::fs::read_dir(&state).unwrap().count(), 0);
        // a file that cannot be written is an error and changes nothing
        let mut s = SystemSettings::in_dir(&state).unwrap();
        let e = s.set(&d.join("missing"), "1").unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_dead_runs_leftovers_are_repaired() {
        let d = scratch("repair");
        let knob = d.join("knob");
        std::fs::write(&knob, "100").unwrap();
        let state = d.join("state");
        let mut s = SystemSettings::in_dir(&state).unwrap();
        s.set(&knob, "3").unwrap();
        // the run "dies": nothing restored, and its state file names a
        // process that has exited
        let own = s.state_file.clone();
        std::mem::forget(s);
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = dead.id();
        dead.wait().unwrap();
        let text = std::fs::read_to_string(&own).unwrap().replace(
            &format!("\"pid\": {}", std::process::id()),
            &format!("\"pid\": {dead_pid}"),
        );
        std::fs::remove_file(&own).unwrap();
        std::fs::write(state.join(format!("system-{dead_pid}.json")), text).unwrap();
        assert_eq!(read_value(&knob).unwrap(), "3");
        let s = SystemSettings::in_dir(&state).unwrap();
        assert_eq!(read_value(&knob).unwrap(), "100");
        assert_eq!(s.repaired().len(), 1);
        assert_eq!(s.repaired()[0].path, knob);
        drop(s);
        assert_eq!(std::fs::read_dir(&state).unwrap().count(), 0);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
