//! Process and thread creation (report §3.5).
//!
//! - `fork_to_child`: fenced TSC read, `fork()`, and the child's first
//!   instruction reads the TSC again and writes it to a pipe; the invariant
//!   TSC is common to all CPUs, so the difference is fork to the child's
//!   first instruction. The parent is pinned (the child inherits the CPU),
//!   so the child runs once the parent blocks on the pipe.
//! - `fork_exit_wait`: `fork()`, the child `_exit(0)`s, the parent `waitpid`s.
//! - `thread_to_first`: `std::thread` spawn to the new thread's first
//!   instruction, and `thread_create_join` spawn + join. The creating
//!   thread is pinned and the new thread inherits its CPU (it runs once
//!   the creator blocks in `join`, or preempts it on wake-up): the cost
//!   does not depend on what the other CPUs are doing. These measure the
//!   operating system's thread creation, so they deliberately use
//!   `std::thread` directly; `thread_create_join` with `impl = takt-spec`
//!   measures [`takt_sched::ThreadSpec::spawn`], which also applies and
//!   reads back the spec with one hand-off.
//!
//! The child of `fork` only calls async-signal-safe functions (rdtsc,
//! write, _exit), as required after forking a multi-threaded process.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::kinds;
use crate::stats::{collect, ticks_ns, Estimate};
use crate::timer::pin_current;
use crate::Ctx;

/// Resident pages of this process (`/proc/self/statm` field 2).
pub(crate) fn resident_pages() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// One fork whose child reports its first TSC reading; ns or `None`.
fn fork_to_child() -> Option<f64> {
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid 2-int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    let t0 = crate::stats::start();
    // SAFETY: the child only calls async-signal-safe functions below.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let t = takt_sched::tsc_end();
        // SAFETY: write of 8 bytes from a local, then _exit: async-signal-safe.
        unsafe {
            libc::write(fds[1], (&t as *const u64).cast(), 8);
            libc::_exit(0);
        }
    }
    let mut t1 = 0u64;
    let ok = pid > 0 && {
        // SAFETY: reading 8 bytes into a local u64.
        let n = unsafe { libc::read(fds[0], (&mut t1 as *mut u64).cast(), 8) };
        n == 8
    };
    // SAFETY: closing our pipe ends; reaping our child.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
        if pid > 0 {
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
    ok.then(|| ticks_ns(t0, t1))
}

fn fork_exit_wait() -> Option<f64> {
    let t0 = crate::stats::start();
    // SAFETY: the child only calls _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: async-signal-safe.
        unsafe { libc::_exit(0) };
    }
    if pid < 0 {
        return None;
    }
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    Some(ticks_ns(t0, takt_sched::tsc_end()))
}

fn us(v: Option<f64>) -> f64 {
    v.map_or(f64::NAN, |ns| ns / 1000.0)
}

pub(crate) fn run(ctx: &mut Ctx) {
    let pin = pin_current(0);
    let budget = ctx.budget(Duration::from_secs(3));
    let pages = resident_pages();
    // fork: task and mm duplication ~25 us, plus copying the parent's page
    // tables and taking a reference on each resident page ~25 ns/page.
    let fork_us = 25.0 + pages as f64 * 0.025;
    let model = format!(
        "task + mm duplication 25 us + {pages} resident pages x 25 ns (page-table copy and page refcounts)"
    );
    let (s, cpu) = collect(3, 20, 2000, budget, || us(fork_to_child()));
    ctx.push(
        kinds::FORK_TO_CHILD.sampled("fenced TSC, fork(), the child's first instruction reads the TSC and pipes it back; parent pinned",
        )
        .extra("rss_pages", pages)
        .estimate(Estimate::new(fork_us, model.clone()))
        .published(48.154)
        .with_samples(s.into_iter().filter(|v| v.is_finite()).collect(), cpu),
    );
    let (s, cpu) = collect(3, 20, 2000, budget, || us(fork_exit_wait()));
    ctx.push(
        kinds::FORK_EXIT_WAIT
            .sampled("fork(); the child _exit(0)s; the parent waitpid()s; parent pinned")
            .extra("rss_pages", pages)
            .estimate(Estimate::new(
                2.0 * fork_us + 10.0,
                format!(
                    "fork ({model}) + exit tearing the same page tables down + a wake-up ~10 us"
                ),
            ))
            .with_samples(s.into_iter().filter(|v| v.is_finite()).collect(), cpu),
    );

    // Threads: created by the pinned thread, so the new thread inherits its
    // CPU. Unpinned, a new thread went to the other vCPU when it was idle
    // (a cross-CPU wake-up, a hypervisor exit here) or queued behind
    // whatever ran there: three runs on a busy machine gave medians of 27,
    // 260 and 684 us for the same spawn + join.
    let thread_model =
        "8 MiB stack mmap + guard page ~3 us, clone ~4 us, first run on the same CPU (the creator blocks, a switch) ~3 us";
    let (s, cpu) = collect(3, 20, 5000, budget, || {
        let first = Arc::new(AtomicU64::new(0));
        let f2 = Arc::clone(&first);
        let t0 = crate::stats::start();
        let h = std::thread::Builder::new()
            .name("machine-new".into())
            .spawn(move || {
                // Release pairs with the Acquire load after join.
                f2.store(takt_sched::tsc_end(), Ordering::Release);
            });
        match h {
            Ok(h) => {
                let _ = h.join();
                ticks_ns(t0, first.load(Ordering::Acquire)) / 1000.0
            }
            Err(_) => f64::NAN,
        }
    });
    ctx.push(
        kinds::THREAD_TO_FIRST.sampled("fenced TSC, std::thread spawn, the new thread's first instruction reads the TSC; creator pinned, the thread inherits its CPU",
        )
        .estimate(Estimate::new(10.0, thread_model))
        .published(7.387)
        .with_samples(s.into_iter().filter(|v| v.is_finite()).collect(), cpu),
    );
    let (s, cpu) = collect(3, 20, 5000, budget, || {
        let t0 = crate::stats::start();
        let ok = std::thread::Builder::new()
            .name("machine-new".into())
            .spawn(|| {})
            .map(|h| h.join().is_ok())
            .unwrap_or(false);
        if ok {
            ticks_ns(t0, takt_sched::tsc_end()) / 1000.0
        } else {
            f64::NAN
        }
    });
    ctx.push(
        kinds::THREAD_CREATE_JOIN.sampled("std::thread spawn of an empty closure + join; creator pinned, the thread inherits its CPU",
        )
        .estimate(Estimate::new(
            10.0 + 5.0,
            format!("{thread_model}; exit + join wake-up ~5 us"),
        ))
        .with_samples(s.into_iter().filter(|v| v.is_finite()).collect(), cpu),
    );
    let (s, cpu) = collect(3, 20, 5000, budget, || {
        let t0 = crate::stats::start();
        match takt_sched::ThreadSpec::new("machine-new").spawn(|| {}) {
            Ok(t) => {
                let _ = t.join();
                ticks_ns(t0, takt_sched::tsc_end()) / 1000.0
            }
            Err(_) => f64::NAN,
        }
    });
    let row = kinds::THREAD_CREATE_JOIN_SPEC.sampled("takt_sched::ThreadSpec::spawn of an empty closure + join (adds the spec hand-off); creator pinned, the thread inherits its CPU",
    )
    .estimate(Estimate::new(
        10.0 + 5.0 + 3.0,
        format!("{thread_model}; exit + join ~5 us; the spec hand-off is one more switch on the same CPU ~3 us"),
    ))
    .with_samples(s.into_iter().filter(|v| v.is_finite()).collect(), cpu);
    ctx.push(row);
    drop(pin);
}
