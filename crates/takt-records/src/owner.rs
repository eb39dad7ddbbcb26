//! The process that writes a run, identified so that a later reader can
//! tell a run still being written from one whose process died.
//!
//! A process is (machine, boot, pid, start time): the machine's identity
//! and host name (`takt_measure::env`), the kernel's boot ID from
//! `/proc/sys/kernel/random/boot_id`, and the process's start time in
//! clock ticks since boot (`/proc/PID/stat`, field 22). A pid reused after
//! the writer died has another start time; a reboot changes the boot ID.
//! A process of another machine cannot be looked at from here: a store
//! shared between machines (PostgreSQL) answers for it instead, by the
//! writer's session lock.

use std::fs;

/// Identity of a process on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) boot: String,
    pub(crate) pid: i64,
    pub(crate) start: i64,
    /// Host name of the writer's machine (empty in runs written before
    /// schema version 3).
    pub(crate) host: String,
    /// `takt_measure::env::machine_id_hash` of the writer's machine
    /// (empty where unknown).
    pub(crate) machine: String,
}

/// What can be said about a run's writer from this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Liveness {
    /// It is running.
    Alive,
    /// It is gone.
    Gone,
    /// It runs on another machine, which this one cannot look at.
    Elsewhere,
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
            host: takt_measure::env::host_name(),
            machine: takt_measure::env::machine_id_hash(),
        }
    }

    /// Whether this process is on `me`'s machine and still running.
    pub(crate) fn liveness(&self, me: &Owner) -> Liveness {
        if !self.machine.is_empty() && self.machine != me.machine {
            return Liveness::Elsewhere;
        }
        if self.is_alive() {
            Liveness::Alive
        } else {
            Liveness::Gone
        }
    }

    /// Whether this process (of this machine) is still running.
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
            ..me.clone()
        };
        assert!(!other_boot.is_alive());
        assert_eq!(me.liveness(&me), Liveness::Alive);
        assert_eq!(other_boot.liveness(&me), Liveness::Gone);
        let other_machine = Owner {
            machine: "0123456789abcdef".into(),
            ..other_boot
        };
        assert_eq!(other_machine.liveness(&me), Liveness::Elsewhere);
    }
}
