//! Everything the suite creates outside its own memory — scratch files,
//! network namespaces, child processes — is registered here and removed
//! when its [`Guard`] drops, when the run ends ([`run_all`]), or when the
//! process is interrupted.
//!
//! Signals are [`takt_measure::cancel`]'s: [`install_interrupt_handler`]
//! installs its handlers. The first SIGINT, SIGTERM or SIGHUP is seen by
//! the measurement loops ([`interrupted`]); the run stops, removes what it
//! registered ([`run_all`]) and returns the interruption, which the binary
//! turns into the exit status `128 + signal`. A second signal runs
//! [`run_all`] from the signal watcher thread (never inside a signal
//! handler, so it may spawn `ip netns del` and wait for it) and ends the
//! process of that signal.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Something to remove.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// A file.
    File(PathBuf),
    /// A directory and everything in it.
    Dir(PathBuf),
    /// A network namespace made with `ip netns add` (deleting it deletes
    /// the veth end inside it, and with it the pair).
    Netns(String),
    /// A child process: SIGKILL, then reaped.
    Child(i32),
    /// A command that undoes something (e.g. `sudo -n ip netns del NAME`).
    Command(Vec<String>),
}

impl Item {
    fn remove(&self) {
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
                    .stderr(std::process::Stdio::null())
                    .status();
            }
            Item::Command(argv) => {
                if let Some((prog, args)) = argv.split_first() {
                    let _ = Command::new(prog)
                        .args(args)
                        .stdin(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
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
}

static REGISTRY: Mutex<Vec<(u64, Item)>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Held while items are being removed, by [`run_all`] and by a dropping
/// [`Guard`]: whoever exits the process after a cleanup (the watcher, or
/// the main thread returning the interruption) has first waited for every
/// removal in flight on another thread to finish.
static REMOVING: Mutex<()> = Mutex::new(());

fn removing() -> std::sync::MutexGuard<'static, ()> {
    REMOVING.lock().unwrap_or_else(|p| p.into_inner())
}

fn registry() -> std::sync::MutexGuard<'static, Vec<(u64, Item)>> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// Removes the item when dropped (unless [`Guard::keep`] is called).
#[derive(Debug)]
#[must_use = "the item is removed when the guard drops"]
pub struct Guard {
    id: u64,
}

/// Registers `item` for removal; the returned guard removes it on drop.
pub fn register(item: Item) -> Guard {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    registry().push((id, item));
    Guard { id }
}

impl Guard {
    /// Forgets the item: it was already removed (e.g. a reaped child).
    pub fn keep(self) {
        registry().retain(|(i, _)| *i != self.id);
        std::mem::forget(self);
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _removing = removing();
        let item = {
            let mut r = registry();
            let pos = r.iter().position(|(i, _)| *i == self.id);
            pos.map(|p| r.remove(p).1)
        };
        if let Some(item) = item {
            item.remove();
        }
    }
}

/// Removes everything still registered, newest first (children before the
/// namespace they run in, files before their directory).
pub fn run_all() {
    let _removing = removing();
    let items: Vec<Item> = {
        let mut r = registry();
        r.drain(..).rev().map(|(_, i)| i).collect()
    };
    for i in items {
        i.remove();
    }
}

/// Items currently registered (for tests and diagnostics).
pub fn pending() -> Vec<Item> {
    registry().iter().map(|(_, i)| i.clone()).collect()
}

/// The signal that interrupted the run, if one did.
pub fn interrupted() -> Option<i32> {
    takt_measure::cancel::received().map(takt_measure::cancel::Signal::number)
}

/// Installs the process's signal handling ([`takt_measure::cancel`]) with
/// [`run_all`] as a hook of a second signal.
pub fn install_interrupt_handler() {
    // Without handlers a signal ends the process at once, as it would
    // anyway; the cleanup then is the registered guards' drop.
    let _ = takt_measure::cancel::install();
    takt_measure::cancel::at_forced_exit(run_all);
}

/// A fresh scratch directory `takt-machine-<pid>-<n>` under `parent`,
/// registered for removal.
pub fn scratch_dir(parent: &std::path::Path) -> std::io::Result<(PathBuf, Guard)> {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = parent.join(format!(
        "takt-machine-{}-{}",
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
        let (dir, g) = scratch_dir(&std::env::temp_dir()).unwrap();
        let f = dir.join("x");
        std::fs::write(&f, b"1").unwrap();
        let fg = register(Item::File(f.clone()));
        drop(fg);
        assert!(!f.exists());
        drop(g);
        assert!(!dir.exists());
        let (dir2, g2) = scratch_dir(&std::env::temp_dir()).unwrap();
        g2.keep();
        assert!(dir2.exists());
        assert!(!pending().contains(&Item::Dir(dir2.clone())));
        std::fs::remove_dir_all(dir2).unwrap();
    }
}
