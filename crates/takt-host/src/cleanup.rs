//! The cleanup registry: everything a run creates or changes outside its
//! own memory — scratch files, network namespaces and links, values
//! written to `/proc/sys` or `/sys`, cgroups, child processes, commands
//! that undo something — is registered here and undone when its [`Guard`] drops,
//! when the run ends ([`run_all`]), or when the process is interrupted.
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
//!    signal: the registry installs that hook with its first item.
//! 3. **Killed outright.** Every item but a child process is also written
//!    to this process's **journal** (`STATE_DIR/cleanup-PID.json`, written
//!    to a temporary name and renamed, so never half-written) when it is
//!    registered, and struck from it when undone. The first registration
//!    in a later process calls [`repair`], which undoes the items of every
//!    journal whose process no longer runs, and removes that journal.
//!
//! Children are not journaled: a dead run's pid may belong to another
//! process by the next start.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::error::{io, Result};

/// Where journals live (falls back to the temporary directory when it
/// cannot be created).
pub const STATE_DIR: &str = "/run/takt";

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
    /// A command that undoes something (`sudo -n ip netns del NAME`).
    Command(Vec<String>),
}

impl Item {
    fn undo(&self) {
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
            Item::Write { path, original } => {
                let _ = std::fs::write(path, original);
            }
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
        }
    }

    /// Whether the item goes into the journal.
    fn journaled(&self) -> bool {
        !matches!(self, Item::Child(_))
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

/// The journal directory: [`STATE_DIR`] if it can be created, else one in
/// the temporary directory.
pub fn state_dir() -> PathBuf {
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

fn start() {
    STARTED.get_or_init(|| {
        takt_measure::cancel::at_forced_exit(run_all);
        match repair(&state_dir()) {
            Ok(repaired) => Started {
                repaired,
                failed: None,
            },
            Err(e) => {
                eprintln!("takt: repairing what earlier runs left: {e}");
                Started {
                    repaired: Vec::new(),
                    failed: Some(e),
                }
            }
        }
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

/// Undoes the items of every journal in `dir` whose process no longer
/// runs, newest first, and removes those journals; returns what it undid.
/// A journal that cannot be read is an error, left for a person to check.
pub fn repair(dir: &Path) -> Result<Vec<Item>> {
    let mut undone = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(undone);
    };
    for e in entries.flatten() {
        let path = e.path();
        let Some(pid) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("cleanup-")?.strip_suffix(".json"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || alive(pid) {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(io(format!("reading journal {}", path.display())))?;
        let items: Vec<Item> = serde_json::from_str(&text).map_err(|e| {
            crate::HostError::Config(format!(
                "journal {} is not a takt journal ({e}); remove it after checking what it names",
                path.display()
            ))
        })?;
        for item in items.into_iter().rev() {
            item.undo();
            undone.push(item);
        }
        std::fs::remove_file(&path).map_err(io(format!("removing journal {}", path.display())))?;
    }
    Ok(undone)
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
            item.undo();
        }
    }
}

/// Undoes everything still registered, newest first (children before the
/// namespace they run in, files before their directory).
pub fn run_all() {
    let _undoing = lock(&UNDOING);
    let items: Vec<Item> = {
        let mut r = lock(&REGISTRY);
        let items = r.drain(..).rev().map(|(_, i)| i).collect();
        save_journal(&r);
        items
    };
    for i in items {
        i.undo();
    }
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
}
