//! Where a saturated run's time goes: per-thread CPU time and context
//! switches of this process and of the answering child, from
//! `/proc/<pid>/task/<tid>/{schedstat,status,comm}`, per round trip.
//!
//! A thread hand-off costs a wake-up (a futex or eventfd write, and for a
//! sleeping thread a context switch, on an idle vCPU an interrupt through
//! the hypervisor); voluntary switches per round trip count the sleeps
//! that each took one.

use std::collections::BTreeMap;
use std::time::Duration;

use takt_sched::ThreadSchedStats;

/// One process's threads at a moment, by thread id.
#[derive(Clone, Debug, Default)]
pub(super) struct Snapshot {
    threads: BTreeMap<u32, (String, ThreadSchedStats)>,
}

impl Snapshot {
    /// The threads of process `pid` now (threads that vanish while read
    /// are left out).
    pub(super) fn of(pid: u32) -> Snapshot {
        let mut threads = BTreeMap::new();
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return Snapshot { threads };
        };
        for e in dir.flatten() {
            let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let p = e.path();
            let read = |f: &str| std::fs::read_to_string(p.join(f)).ok();
            if let (Some(ss), Some(st), Some(comm)) =
                (read("schedstat"), read("status"), read("comm"))
            {
                if let Some(s) = ThreadSchedStats::parse(&ss, &st) {
                    threads.insert(tid, (comm.trim_end().to_string(), s));
                }
            }
        }
        Snapshot { threads }
    }

    /// The CPU time its threads have run, in all.
    pub(super) fn cpu(&self) -> Duration {
        self.threads.values().map(|(_, s)| s.run).sum()
    }

    /// What each thread alive in both snapshots did in between, per one of
    /// `per` operations: `name µs-cpu/vol/invol` for the threads that ran,
    /// busiest first, at most `top` of them.
    pub(super) fn per_op(&self, earlier: &Snapshot, per: u64, top: usize) -> String {
        let per = per.max(1) as f64;
        let mut rows: Vec<(String, ThreadSchedStats)> = self
            .threads
            .iter()
            .filter_map(|(tid, (name, now))| {
                let (_, then) = earlier.threads.get(tid)?;
                Some((name.clone(), *now - *then))
            })
            .filter(|(_, d)| !d.run.is_zero())
            .collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.1.run));
        // A fold from +0.0: an empty `sum` of f64 is -0.0.
        let total = rows.iter().fold(0.0, |a, (_, d)| a + d.run.as_secs_f64());
        let mut out = format!("{:.2} µs CPU", total * 1e6 / per);
        for (name, d) in rows.iter().take(top) {
            out.push_str(&format!(
                "; {name} {:.2} µs {:.2}/{:.2}",
                d.run.as_secs_f64() * 1e6 / per,
                d.voluntary_switches as f64 / per,
                d.involuntary_switches as f64 / per
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A thread that burns 20 ms of CPU between two snapshots is listed
    /// first, with that time per operation; threads absent from either
    /// snapshot are left out.
    #[test]
    fn a_busy_thread_shows_up_per_operation() {
        let pid = std::process::id();
        let (go_tx, go) = mpsc::channel::<()>();
        let (done, done_rx) = mpsc::channel::<()>();
        let t = std::thread::Builder::new()
            .name("busy-probe".into())
            .spawn(move || {
                go.recv().unwrap();
                let c0 = takt_sched::thread_cpu_time();
                while takt_sched::thread_cpu_time() - c0 < Duration::from_millis(20) {
                    std::hint::black_box(0);
                }
                done.send(()).unwrap();
                // Stay alive for the second snapshot.
                let _ = go.recv();
            })
            .unwrap();
        let a = Snapshot::of(pid);
        go_tx.send(()).unwrap();
        done_rx.recv().unwrap();
        let b = Snapshot::of(pid);
        drop(go_tx);
        t.join().unwrap();
        let s = b.per_op(&a, 2, 1);
        let (total, first) = s.split_once("; ").expect(&s);
        let us = |x: &str| x.split(' ').next().unwrap().parse::<f64>().unwrap();
        assert!(us(total) >= 9_000.0, "{s}");
        let first = first.strip_prefix("busy-probe ").expect(&s);
        assert!(us(first) >= 9_000.0, "{s}");
        assert_eq!(b.per_op(&Snapshot::default(), 1, 8), "0.00 µs CPU");
        assert!(Snapshot::of(u32::MAX).threads.is_empty());
    }
}
