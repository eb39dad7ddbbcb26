//! The cleanup registry: everything a run creates or changes outside its
//! own memory — scratch files, network namespaces and links, values
//! written to `/proc/sys` or `/sys` (sysctls, debugfs knobs, RPS masks),
//! cgroups, idle-latency holds, child processes, commands that undo
//! something — is registered here and undone when its [`Guard`] drops,
//! when the run ends ([`run_all`]), or when the process is interrupted.
//! [`SystemSettings`](crate::settings::SystemSettings) keeps its record
//! for the result document on top of it: each file it changes is an
//! [`Item::Write`] here.
//!
//! # What is guaranteed
//! 1. **Exit and error.** A [`Guard`] undoes its item when it drops, so
//!    an early return or a `?` undoes what was made so far; [`run_all`]
//!    undoes whatever is still registered, newest first.
//! 2. **Signals.** The first SIGINT, SIGTERM or SIGHUP cancels the run
//!    ([`takt_measure::cancel`]); the run returns and its guards drop. A
//!    second signal runs [`run_all`] from the signal watcher thread (an
//!    ordinary thread, never a signal handler, so it may spawn
//!    `ip netns del` and wait for it) before the process ends of that
//!    signal: the registry installs that hook — the only one takt-host
//!    installs — with its first item.
//! 3. **Killed outright.** Every item but a child process and an
//!    idle-latency hold is written to this process's **journal**
//!    (`STATE_DIR/cleanup-PID.json`, written to a temporary name and
//!    renamed, so never half-written) when it is registered — before the
//!    change it undoes is made — and struck from it when undone. The
//!    first registration in a later process calls [`repair`], which undoes
//!    the items of every journal whose process no longer runs, and removes
//!    that journal. It also repairs the settings state files of older
//!    versions (`system-PID.json`, in [`STATE_DIR`] or
//!    [`LEGACY_STATE_DIR`]).
//!
//! Children are not journaled: a dead run's pid may belong to another
//! process by the next start. An idle-latency hold is an open file, which
//! the kernel drops when the process ends, however it ends.
//!
//! Tests and parallel experiments can move the journal directory with the
//! environment variable `TAKT_STATE_DIR`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use std::time::Duration;

use serde::{Deserialize, Serialize};
use takt_sched::IdleLatency;

use crate::error::{io, Result};

/// Where journals live (falls back to the temporary directory when it
/// cannot be created; `TAKT_STATE_DIR` overrides it).
pub const STATE_DIR: &str = "/run/takt";

/// Where older versions kept the SIP laboratory's settings state files
/// (`system-PID.json`); repaired at start-up when it exists.
pub const LEGACY_STATE_DIR: &str = "/run/takt-siplab";

/// The environment variable that moves the journal directory.
pub const STATE_DIR_VAR: &str = "TAKT_STATE_DIR";

/// Something to undo.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Item {
    /// A file: removed.
    File(PathBuf),
    /// A directory: removed with everything in it.
    Dir(PathBuf),
    /// A network namespace made with `ip netns add`: deleted (which
    /// deletes the veth ends inside it, and with them their pairs).
    Netns(String),
    /// A value written to a file (a sysctl, a debugfs knob, an RPS mask):
    /// `original` written back.
    Write {
        /// The file.
        path: PathBuf,
        /// Its value before the change.
        original: String,
    },
    /// A cgroup (v1 or v2 directory): its processes moved to `parent`'s
    /// group, then the directory removed.
    Cgroup {
        /// The group's directory.
        dir: PathBuf,
        /// The group its processes go back to (the hierarchy's root).
        parent: PathBuf,
    },
    /// A child process: SIGKILL, then reaped. Not journaled.
    Child(i32),
    /// An idle-latency hold ([`hold_idle`]): released. Not journaled (the
    /// kernel releases it when the process ends).
    IdleHold {
        /// The limit held, µs (0: idle CPUs poll).
        limit_us: u64,
    },
    /// A command that undoes something (`sudo -n ip netns del NAME`).
    Command(Vec<String>),
}

impl Item {
    /// Undoes the item, best effort; only a value that cannot be written
    /// back to a file that exists is reported (the journal keeps it).
    fn undo(&self) -> std::io::Result<()> {
        match self {
            Item::File(p) => {
                let _ = std::fs::remove_file(p);
            }
            Item::Dir(p) => {
                let _ = std::fs::remove_dir_all(p);
            }
            Item::Netns(name) => {
                let _ = Command::new("ip")
                    .args(["netns", "del", name])
                    .stdin(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
            Item::Write { path, original } => match std::fs::write(path, original) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            },
            Item::Cgroup { dir, parent } => remove_cgroup(dir, parent),
            Item::Command(argv) => {
                if let Some((prog, args)) = argv.split_first() {
                    let _ = Command::new(prog)
                        .args(args)
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status();
                }
            }
            Item::Child(pid) => {
                // SAFETY: kill and waitpid on a pid we created; a pid already
                // reaped makes both fail harmlessly with ESRCH/ECHILD.
                unsafe {
                    libc::kill(*pid, libc::SIGKILL);
                    libc::waitpid(*pid, std::ptr::null_mut(), 0);
                }
            }
            // released by dropping its handle (see `undo_entry`); in a
            // journal (never written so) there is nothing left to do
            Item::IdleHold { .. } => {}
        }
        Ok(())
    }

    /// Whether the item goes into the journal.
    fn journaled(&self) -> bool {
        !matches!(self, Item::Child(_) | Item::IdleHold { .. })
    }
}

/// Undoes registry entry `id`, `item`: an idle-latency hold by dropping
/// its handle, anything else by [`Item::undo`] (a failure is reported on
/// stderr: the process is ending or moving on).
fn undo_entry(id: u64, item: &Item) {
    if let Item::IdleHold { .. } = item {
        let hold = {
            let mut holds = lock(&HOLDS);
            holds
                .iter()
                .position(|(i, _)| *i == id)
                .map(|p| holds.remove(p).1)
        };
        drop(hold);
    } else if let Err(e) = item.undo() {
        eprintln!("takt: undoing {item:?}: {e}");
    }
}

/// Tries to empty and remove a cgroup before giving up.
const CGROUP_TRIES: usize = 50;
/// Pause between the tries (a process may be moving or exiting).
const CGROUP_PAUSE: std::time::Duration = std::time::Duration::from_millis(10);

/// Moves every process of the group `dir` to `parent` and removes `dir` (a
/// group can only be removed once empty; a process that exits meanwhile is
/// fine).
fn remove_cgroup(dir: &Path, parent: &Path) {
    for _ in 0..CGROUP_TRIES {
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.split_whitespace() {
            let _ = std::fs::write(parent.join("cgroup.procs"), pid);
        }
        match std::fs::remove_dir(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(CGROUP_PAUSE),
        }
    }
}

/// The registry: items by id, in registration order.
static REGISTRY: Mutex<Vec<(u64, Item)>> = Mutex::new(Vec::new());
/// The handles of the registered idle-latency holds, by registry id.
static HOLDS: Mutex<Vec<(u64, IdleLatency)>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Held while items are being undone, by [`run_all`] and by a dropping
/// [`Guard`]: whoever ends the process after a cleanup has first waited
/// for every undo in flight on another thread to finish.
static UNDOING: Mutex<()> = Mutex::new(());
/// The first registration's start-up work: the forced-exit hook, the
/// repair of dead runs' journals.
static STARTED: OnceLock<Started> = OnceLock::new();

/// What the repair at the first registration did.
#[derive(Debug)]
struct Started {
    /// The items it undid.
    repaired: Vec<Item>,
    /// Why it stopped early, if it did (reported once on stderr).
    failed: Option<crate::HostError>,
}

fn lock<T>(m: &'static Mutex<T>) -> std::sync::MutexGuard<'static, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The journal directory: `$TAKT_STATE_DIR` if set, else [`STATE_DIR`] if
/// it can be created, else one in the temporary directory.
pub fn state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(STATE_DIR_VAR).filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        let _ = std::fs::create_dir_all(&dir);
        return dir;
    }
    let run = PathBuf::from(STATE_DIR);
    if std::fs::create_dir_all(&run).is_ok() {
        run
    } else {
        let tmp = std::env::temp_dir().join("takt-state");
        let _ = std::fs::create_dir_all(&tmp);
        tmp
    }
}

fn journal_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("cleanup-{pid}.json"))
}

/// Rewrites this process's journal from the registry (removes it when
/// nothing journaled is left). Best effort: a journal that cannot be
/// written loses only the repair after a kill.
fn save_journal(registry: &[(u64, Item)]) {
    let dir = state_dir();
    let path = journal_path(&dir, std::process::id());
    let items: Vec<&Item> = registry
        .iter()
        .map(|(_, i)| i)
        .filter(|i| i.journaled())
        .collect();
    if items.is_empty() {
        let _ = std::fs::remove_file(&path);
        return;
    }
    let tmp = path.with_extension("tmp");
    let text = serde_json::to_string_pretty(&items).expect("plain data serializes");
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, &path);
    }
}

/// The directories repaired at start-up: the journal directory, and the
/// folders where older versions kept settings state files.
fn repaired_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![state_dir()];
    if std::env::var_os(STATE_DIR_VAR).is_none() {
        dirs.push(PathBuf::from(LEGACY_STATE_DIR));
        dirs.push(std::env::temp_dir().join("takt-siplab-state"));
    }
    dirs
}

/// This process's start-up work, once: installs the second-signal hook
/// ([`run_all`]) and repairs what dead runs left ([`repair`] of the
/// journal directory and the older versions' state folders). The first
/// [`register`] calls it; callers that report the repair
/// ([`repaired`]) call it first.
pub fn start() {
    STARTED.get_or_init(|| {
        takt_measure::cancel::at_forced_exit(run_all);
        let mut repaired = Vec::new();
        let mut failed = None;
        for dir in repaired_dirs() {
            match repair(&dir) {
                Ok(items) => repaired.extend(items),
                Err(e) => {
                    eprintln!("takt: repairing what earlier runs left: {e}");
                    failed.get_or_insert(e);
                }
            }
        }
        Started { repaired, failed }
    });
}

/// What the repair at this process's first registration undid (empty
/// before it, or when it failed).
pub fn repaired() -> Vec<Item> {
    STARTED
        .get()
        .map(|s| s.repaired.clone())
        .unwrap_or_default()
}

/// Why the repair at this process's first registration failed, if it did.
pub fn repair_failure() -> Option<&'static crate::HostError> {
    STARTED.get().and_then(|s| s.failed.as_ref())
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// A settings state file of an older version (`system-PID.json`): the
/// files its run changed.
#[derive(Deserialize)]
struct LegacyState {
    pid: u32,
    changes: Vec<LegacyChange>,
}

#[derive(Deserialize)]
struct LegacyChange {
    path: PathBuf,
    original: String,
    restored: bool,
}

/// What a file in the journal directory is: a journal or an older
/// version's state file, with the process that wrote it.
enum Journal {
    Items(u32),
    Legacy(u32),
}

fn journal_kind(path: &Path) -> Option<Journal> {
    let name = path.file_name()?.to_str()?.strip_suffix(".json")?;
    if let Some(pid) = name.strip_prefix("cleanup-") {
        return pid.parse().ok().map(Journal::Items);
    }
    name.strip_prefix("system-")?
        .parse()
        .ok()
        .map(Journal::Legacy)
}

/// The items a dead run's journal (or older state file) names, oldest
/// first; `None` when its process still runs.
fn dead_items(path: &Path, kind: Journal) -> Result<Option<Vec<Item>>> {
    let pid = match kind {
        Journal::Items(pid) | Journal::Legacy(pid) => pid,
    };
    if pid == std::process::id() || alive(pid) {
        return Ok(None);
    }
    let text =
        std::fs::read_to_string(path).map_err(io(format!("reading journal {}", path.display())))?;
    let not_ours = |e: serde_json::Error| {
        crate::HostError::Config(format!(
            "journal {} is not a takt journal ({e}); remove it after checking what it names",
            path.display()
        ))
    };
    match kind {
        Journal::Items(_) => serde_json::from_str(&text).map(Some).map_err(not_ours),
        Journal::Legacy(_) => {
            let state: LegacyState = serde_json::from_str(&text).map_err(not_ours)?;
            if state.pid == std::process::id() || alive(state.pid) {
                return Ok(None);
            }
            Ok(Some(
                state
                    .changes
                    .into_iter()
                    .filter(|c| !c.restored)
                    .map(|c| Item::Write {
                        path: c.path,
                        original: c.original,
                    })
                    .collect(),
            ))
        }
    }
}

/// Undoes the items of every journal in `dir` whose process no longer
/// runs, newest first, and removes those journals; returns what it undid.
/// Older versions' settings state files (`system-PID.json`) count as
/// journals of their changes. A journal that cannot be read, or a value
/// that cannot be written back, is an error: the journal stays (with what
/// is left to undo) for a person to check or the next start to retry.
pub fn repair(dir: &Path) -> Result<Vec<Item>> {
    let mut undone = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(undone);
    };
    for e in entries.flatten() {
        let path = e.path();
        let Some(kind) = journal_kind(&path) else {
            continue;
        };
        let Some(items) = dead_items(&path, kind)? else {
            continue;
        };
        let mut left = Vec::new();
        let mut first_err = None;
        for item in items.into_iter().rev() {
            match item.undo() {
                Ok(()) => undone.push(item),
                Err(e) => {
                    first_err.get_or_insert_with(|| format!("{item:?}: {e}"));
                    left.push(item);
                }
            }
        }
        if let Some(err) = first_err {
            left.reverse();
            let text = serde_json::to_string_pretty(&left).expect("plain data serializes");
            let _ = std::fs::remove_file(&path);
            std::fs::write(journal_path(dir, left_pid(&path)), text)
                .map_err(io(format!("rewriting journal {}", path.display())))?;
            return Err(crate::HostError::Config(format!(
                "repairing {}: could not undo {err}; it stays in the journal",
                path.display()
            )));
        }
        std::fs::remove_file(&path).map_err(io(format!("removing journal {}", path.display())))?;
    }
    Ok(undone)
}

/// The pid in a journal's or state file's name.
fn left_pid(path: &Path) -> u32 {
    match journal_kind(path) {
        Some(Journal::Items(pid) | Journal::Legacy(pid)) => pid,
        None => 0,
    }
}

/// Undoes the item when dropped (unless [`Guard::keep`] is called).
#[derive(Debug)]
#[must_use = "the item is undone when the guard drops"]
pub struct Guard {
    id: u64,
}

/// Registers `item` (journaling it) to be undone; the returned guard
/// undoes it on drop. The first registration in a process repairs what
/// dead runs left (see the module docs).
pub fn register(item: Item) -> Guard {
    start();
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let mut r = lock(&REGISTRY);
    let journaled = item.journaled();
    r.push((id, item));
    if journaled {
        save_journal(&r);
    }
    Guard { id }
}

/// Takes item `id` out of the registry (and the journal).
fn take(id: u64) -> Option<Item> {
    let mut r = lock(&REGISTRY);
    let pos = r.iter().position(|(i, _)| *i == id)?;
    let item = r.remove(pos).1;
    if item.journaled() {
        save_journal(&r);
    }
    Some(item)
}

impl Guard {
    /// Forgets the item: it was already undone (a reaped child) or is to
    /// stay.
    pub fn keep(self) {
        take(self.id);
        std::mem::forget(self);
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _undoing = lock(&UNDOING);
        if let Some(item) = take(self.id) {
            undo_entry(self.id, &item);
        }
    }
}

/// Undoes everything still registered, newest first (children before the
/// namespace they run in, files before their directory).
pub fn run_all() {
    let _undoing = lock(&UNDOING);
    let items: Vec<(u64, Item)> = {
        let mut r = lock(&REGISTRY);
        let items = r.drain(..).rev().collect();
        save_journal(&r);
        items
    };
    for (id, item) in items {
        undo_entry(id, &item);
    }
}

/// Holds an idle-latency limit ([`IdleLatency`]: machine-wide, every idle
/// CPU) as a registry item; released when the guard drops.
pub fn hold_idle(limit: Duration) -> Result<Guard> {
    let hold = IdleLatency::hold(limit)?;
    let guard = register(Item::IdleHold {
        limit_us: limit.as_micros() as u64,
    });
    lock(&HOLDS).push((guard.id, hold));
    Ok(guard)
}

/// Items currently registered (for tests and diagnostics).
pub fn pending() -> Vec<Item> {
    lock(&REGISTRY).iter().map(|(_, i)| i.clone()).collect()
}

/// A fresh scratch directory `PREFIX-<pid>-<n>` under `parent`,
/// registered for removal.
pub fn scratch_dir(parent: &Path, prefix: &str) -> std::io::Result<(PathBuf, Guard)> {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = parent.join(format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir)?;
    let g = register(Item::Dir(dir.clone()));
    Ok((dir, g))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_removes_and_keep_forgets() {
        let (dir, g) = scratch_dir(&std::env::temp_dir(), "takt-host-test").unwrap();
        let f = dir.join("x");
        std::fs::write(&f, b"1").unwrap();
        let fg = register(Item::File(f.clone()));
        drop(fg);
        assert!(!f.exists());
        drop(g);
        assert!(!dir.exists());
        let (dir2, g2) = scratch_dir(&std::env::temp_dir(), "takt-host-test").unwrap();
        g2.keep();
        assert!(dir2.exists());
        assert!(!pending().contains(&Item::Dir(dir2.clone())));
        std::fs::remove_dir_all(dir2).unwrap();
    }

    #[test]
    fn a_cgroup_is_emptied_and_removed() {
        // a real cgroup hierarchy: v2 at the mount point, or v1's cpu
        let Some(root) = ["/sys/fs/cgroup", "/sys/fs/cgroup/cpu"]
            .into_iter()
            .map(Path::new)
            .find(|r| r.join("cgroup.procs").is_file())
        else {
            return eprintln!("skipped: no cgroup hierarchy");
        };
        let dir = root.join(format!("takt-host-test-{}", std::process::id()));
        if std::fs::create_dir(&dir).is_err() || !dir.join("cgroup.procs").is_file() {
            let _ = std::fs::remove_dir(&dir);
            return eprintln!("skipped: cannot create a cgroup under {}", root.display());
        }
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let moved = std::fs::write(dir.join("cgroup.procs"), child.id().to_string()).is_ok();
        drop(register(Item::Cgroup {
            dir: dir.clone(),
            parent: root.to_path_buf(),
        }));
        assert!(
            !dir.exists(),
            "the group was not removed (child moved: {moved})"
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn writes_are_journaled_and_a_dead_runs_journal_is_repaired() {
        let d = std::env::temp_dir().join(format!("takt-host-journal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let knob = d.join("knob");
        std::fs::write(&knob, "5").unwrap();
        // the journal this process writes names the original
        let g = register(Item::Write {
            path: knob.clone(),
            original: "100".into(),
        });
        let own = std::fs::read_to_string(journal_path(&state_dir(), std::process::id())).unwrap();
        assert!(own.contains("\"original\": \"100\""), "{own}");
        drop(g);
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "100");
        // a journal left by a process that has exited is undone, newest
        // first, and removed; one of a live process is left alone
        std::fs::write(&knob, "3").unwrap();
        let mut dead = Command::new("true").spawn().unwrap();
        let dead_pid = dead.id();
        dead.wait().unwrap();
        let scratch = d.join("scratch");
        std::fs::create_dir_all(&scratch).unwrap();
        let items = vec![
            Item::Write {
                path: knob.clone(),
                original: "100".into(),
            },
            Item::Dir(scratch.clone()),
        ];
        let text = serde_json::to_string(&items).unwrap();
        std::fs::write(journal_path(&d, dead_pid), &text).unwrap();
        std::fs::write(journal_path(&d, std::process::id()), &text).unwrap();
        let undone = repair(&d).unwrap();
        assert_eq!(undone, items.into_iter().rev().collect::<Vec<_>>());
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "100");
        assert!(!scratch.exists());
        assert!(!journal_path(&d, dead_pid).exists());
        assert!(journal_path(&d, std::process::id()).exists());
        // a journal that is not one is an error that names it
        std::fs::write(journal_path(&d, dead_pid), "not json").unwrap();
        let e = repair(&d).unwrap_err().to_string();
        assert!(e.contains(&format!("cleanup-{dead_pid}.json")), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn older_versions_state_files_are_repaired() {
        let d = std::env::temp_dir().join(format!("takt-host-legacy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let (a, b) = (d.join("a"), d.join("b"));
        std::fs::write(&a, "3").unwrap();
        std::fs::write(&b, "4").unwrap();
        let mut dead = Command::new("true").spawn().unwrap();
        let dead_pid = dead.id();
        dead.wait().unwrap();
        // the SIP laboratory's `system-PID.json` of older versions
        let state = serde_json::json!({
            "pid": dead_pid,
            "changes": [
                {"path": a, "original": "100", "written": ["3"], "restored": false},
                {"path": b, "original": "200", "written": ["4"], "restored": true},
            ],
        });
        let file = d.join(format!("system-{dead_pid}.json"));
        std::fs::write(&file, state.to_string()).unwrap();
        let undone = repair(&d).unwrap();
        assert_eq!(
            undone,
            [Item::Write {
                path: a.clone(),
                original: "100".into()
            }]
        );
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "100");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "4");
        assert!(!file.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_value_that_cannot_be_written_back_stays_in_the_journal() {
        let d = std::env::temp_dir().join(format!("takt-host-stays-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let mut dead = Command::new("true").spawn().unwrap();
        let dead_pid = dead.id();
        dead.wait().unwrap();
        // a directory where a value should go: writing fails (not NotFound)
        let stuck = d.join("stuck");
        std::fs::create_dir(&stuck).unwrap();
        let gone = d.join("gone");
        let items = vec![
            Item::Write {
                path: stuck.clone(),
                original: "1".into(),
            },
            Item::Write {
                path: gone.join("knob"),
                original: "2".into(),
            },
        ];
        let journal = journal_path(&d, dead_pid);
        std::fs::write(&journal, serde_json::to_string(&items).unwrap()).unwrap();
        let e = repair(&d).unwrap_err().to_string();
        assert!(e.contains("stuck"), "{e}");
        // a file that no longer exists counts as undone; the other stays
        let left: Vec<Item> =
            serde_json::from_str(&std::fs::read_to_string(&journal).unwrap()).unwrap();
        assert_eq!(left, items[..1]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
