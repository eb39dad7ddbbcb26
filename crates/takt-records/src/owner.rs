//! The process that writes a run, identified so that a later reader can
//! tell a run still being written from one whose process died.
//!
//! A process is (boot, pid, start time): the kernel's boot ID from
//! `/proc/sys/kernel/random/boot_id`, and the process's start time in
//! clock ticks since boot (`/proc/PID/stat`, field 22). A pid reused after
//! the writer died has another start time; a reboot changes the boot ID.

use std::fs;

/// Identity of a process on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) boot: String,
    pub(crate) pid: i64,
    pub(crate) start: i64,
}

impl Owner {
    /// The calling process. Fields `/proc` cannot give are empty or -1,
    /// which never match a live process, so such a run reads as
    /// abandoned once it is not finished.
    pub(crate) fn current() -> Owner {
        let pid = i64::from(std::process::id());
        Owner {
            boot: boot_id(),
            pid,
            start: start_ticks(pid).unwrap_or(-1),
        }
    }

    /// Whether this process is still running.
    pub(crate) fn is_alive(&self) -> bool {
        !self.boot.is_empty()
            && self.boot == boot_id()
            && start_ticks(self.pid).is_some_and(|t| t == self.start)
    }
}

fn boot_id() -> String {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Field 22 (`starttime`) of `/proc/PID/stat`. The second field (the
/// command name) may hold spaces and parentheses, so fields are counted
/// from the last `)`.
fn start_ticks(pid: i64) -> Option<i64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    // After ")": field 3 (state) is the first token, so field 22 is the 20th.
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_changed_identity_is_not() {
        let me = Owner::current();
        assert!(me.start > 0, "{me:?}");
        assert!(me.is_alive());
        let reused_pid = Owner {
            start: me.start + 1,
            ..me.clone()
        };
        assert!(!reused_pid.is_alive());
        let other_boot = Owner {
            boot: "00000000-0000-0000-0000-000000000000".into(),
            ..me
        };
        assert!(!other_boot.is_alive());
    }
}
