//! Context switches (report §3.6): ping-pong between two processes over
//! pipes, and between two threads over a futex and over a mutex+condvar,
//! with both sides pinned to one CPU (every hand-off is a switch) and to
//! two different CPUs (every hand-off is a cross-CPU wake-up).
//!
//! A sample is a batch of 200 round trips; the row reports µs per switch,
//! half a round trip (lmbench `lat_ctx` reports the same quantity; `perf
//! bench sched pipe` reports whole round trips). Nobody spins: every wait
//! sleeps in the kernel.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use takt_sched::{CpuSet, Futex, ThreadSpec};

use crate::kinds;
use crate::stats::{collect, ticks_ns, Estimate};
use crate::timer::pin_current;
use crate::Ctx;
use takt_host::cleanup::{register, Item};

/// Round trips per sample.
const ROUND_TRIPS: u32 = 200;
/// Futex word value that tells the peer to stop.
const STOP: u32 = u32::MAX;

/// Where the two sides run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    Same,
    Across,
}

impl Placement {
    fn name(self) -> &'static str {
        match self {
            Placement::Same => "same_cpu",
            Placement::Across => "across_cpus",
        }
    }
}

/// The two CPUs to use (first two allowed), or `None` with one CPU.
fn cpus() -> (usize, Option<usize>) {
    let set = takt_sched::get_affinity().unwrap_or_else(|_| CpuSet::single(0));
    let mut it = set.iter();
    (it.next().unwrap_or(0), it.next())
}

/// Forks a child that echoes `len`-byte messages (`len` ≤ 4) from `rx` to
/// `tx` until EOF, pinned to `cpu`. Returns its pid.
fn fork_echo(rx: i32, tx: i32, close_in_child: [i32; 2], cpu: usize, len: usize) -> Option<i32> {
    let len = len.clamp(1, 4);
    // Prepared before fork: the child must not allocate.
    // SAFETY: zeroed cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: cpu < CPU_SETSIZE (it came from the affinity mask).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: the child calls only async-signal-safe syscalls and _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: raw syscalls on valid fds and a local buffer of 4 bytes
        // (len ≤ 4).
        unsafe {
            libc::close(close_in_child[0]);
            libc::close(close_in_child[1]);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            let mut b = [0u8; 4];
            loop {
                if libc::read(rx, b.as_mut_ptr().cast(), len) != len as isize {
                    libc::_exit(0);
                }
                if libc::write(tx, b.as_ptr().cast(), len) != len as isize {
                    libc::_exit(0);
                }
            }
        }
    }
    (pid > 0).then_some(pid)
}

/// Two pipes and an echo child pinned to `cpu`: the parent's write end
/// and read end, the child's pid and its cleanup guard. `None` when a pipe
/// or the fork fails.
fn echo_pair(cpu: usize, len: usize) -> Option<(i32, i32, i32, takt_host::cleanup::Guard)> {
    let mut a = [0i32; 2];
    let mut b = [0i32; 2];
    // SAFETY: valid 2-int arrays.
    if unsafe { libc::pipe2(a.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    // SAFETY: valid 2-int array.
    if unsafe { libc::pipe2(b.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        // SAFETY: closing the fds just made.
        unsafe {
            libc::close(a[0]);
            libc::close(a[1]);
        }
        return None;
    }
    let pid = fork_echo(a[0], b[1], [a[1], b[0]], cpu, len);
    // SAFETY: closing the child's ends in the parent (and, when the fork
    // failed, ours too).
    unsafe {
        libc::close(a[0]);
        libc::close(b[1]);
        if pid.is_none() {
            libc::close(a[1]);
            libc::close(b[0]);
        }
    }
    let pid = pid?;
    Some((a[1], b[0], pid, register(Item::Child(pid))))
}

/// Closes the parent's ends (the child reads EOF and exits) and reaps it.
fn end_echo(tx: i32, rx: i32, pid: i32, guard: takt_host::cleanup::Guard) {
    // SAFETY: our own fds; the pid is our child.
    unsafe {
        libc::close(tx);
        libc::close(rx);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    guard.keep();
}

/// `perf bench sched pipe`'s quantity measured its way, for `--compare`:
/// the calling thread (pinned to `cpu` by the caller) and a forked child
/// pinned to the same CPU pass a 4-byte integer back and forth `loops`
/// times through two pipes; the whole loop is timed once and the result
/// is µs per round trip, a mean with every interruption included. Unlike
/// perf, the fork and the child's exit stay outside the bracket (perf's
/// `gettimeofday` pair encloses them: ~0.2 ms over the run, ~0.2% of a
/// 20,000-loop run here).
pub(crate) fn perf_pipe_round_trip_us(cpu: usize, loops: u32) -> Option<f64> {
    let (tx, rx, pid, guard) = echo_pair(cpu, 4)?;
    let mut m = 0u32;
    let mut ok = true;
    let t0 = crate::stats::start();
    for _ in 0..loops {
        // SAFETY: valid fds and a 4-byte local integer.
        let (w, r) = unsafe {
            (
                libc::write(tx, (&m as *const u32).cast(), 4),
                libc::read(rx, (&mut m as *mut u32).cast(), 4),
            )
        };
        ok &= w == 4 && r == 4;
    }
    let t1 = takt_sched::tsc_end();
    end_echo(tx, rx, pid, guard);
    ok.then(|| ticks_ns(t0, t1) / 1000.0 / f64::from(loops.max(1)))
}

fn pipe_switch(ctx: &mut Ctx, place: Placement, cpu0: usize, cpu1: usize, budget: Duration) {
    let child_cpu = if place == Placement::Same { cpu0 } else { cpu1 };
    let Some((tx, rx, pid, guard)) = echo_pair(child_cpu, 1) else {
        ctx.skip("ctxsw_process", "pipe2 or fork failed");
        return;
    };
    let mut ok = true;
    let (s, cpu) = collect(2, 20, 2000, budget, || {
        let mut byte = 1u8;
        let t0 = crate::stats::start();
        for _ in 0..ROUND_TRIPS {
            // SAFETY: valid fds and a 1-byte local buffer.
            let (w, r) = unsafe {
                (
                    libc::write(tx, (&byte as *const u8).cast(), 1),
                    libc::read(rx, (&mut byte as *mut u8).cast(), 1),
                )
            };
            ok &= w == 1 && r == 1;
        }
        ticks_ns(t0, takt_sched::tsc_end()) / 1000.0 / (2 * ROUND_TRIPS) as f64
    });
    end_echo(tx, rx, pid, guard);
    if !ok {
        ctx.skip("ctxsw_process", "the echo child stopped answering");
        return;
    }
    let (est, model) = switch_estimate(ctx, place, 0.6);
    ctx.push(
        kinds::CTXSW_PROCESS.sampled("two processes ping-pong one byte over two pipes, 200 round trips per sample; half a round trip",
        )
        .param("placement", place.name())
        .estimate(Estimate::new(est, model))
        .published(28.317)
        .with_samples(s, cpu),
    );
}

/// Estimate per switch: the syscalls around it (`syscall_us`), the
/// wake-up, and on one CPU the scheduler's switch; across CPUs an IPI to
/// wake an idle CPU (a VM exit pair under a hypervisor) instead.
fn switch_estimate(ctx: &Ctx, place: Placement, syscall_us: f64) -> (f64, String) {
    let vm = ctx.desc.hypervisor.is_some();
    match place {
        Placement::Same => (
            syscall_us + 1.0 + 1.2,
            format!(
                "{syscall_us} us of syscalls (write+read) + try_to_wake_up 1.0 us + schedule()/switch_mm 1.2 us"
            ),
        ),
        Placement::Across => {
            let ipi = if vm { 4.0 } else { 1.5 };
            (
                syscall_us + 1.0 + ipi,
                format!(
                    "{syscall_us} us of syscalls + wake-up 1.0 us + IPI to an idle CPU {ipi} us{}",
                    if vm { " (VM exit + HLT wake-up)" } else { "" }
                ),
            )
        }
    }
}

fn futex_switch(ctx: &mut Ctx, place: Placement, cpu0: usize, cpu1: usize, budget: Duration) {
    let word = Arc::new(Futex::new(0));
    let peer_word = Arc::clone(&word);
    let peer_cpu = if place == Placement::Same { cpu0 } else { cpu1 };
    let peer = ThreadSpec::new("machine-futex")
        .with_cpus(CpuSet::single(peer_cpu))
        .spawn(move || {
            // Odd values are pings for the peer, even values pongs for us.
            let mut expect = 1u32;
            loop {
                // Acquire pairs with the Release store of the ping.
                let v = peer_word.load(Ordering::Acquire);
                if v == STOP {
                    return;
                }
                if v != expect {
                    peer_word.wait(v, None);
                    continue;
                }
                // Release pairs with the main thread's Acquire load.
                peer_word.word().store(expect + 1, Ordering::Release);
                peer_word.wake_one();
                expect = expect.wrapping_add(2);
                if expect == STOP {
                    expect = 1;
                }
            }
        });
    let Ok(peer) = peer else {
        ctx.skip("ctxsw_thread_futex", "cannot pin a thread");
        return;
    };
    let mut next = 1u32;
    let (s, cpu) = collect(2, 20, 2000, budget, || {
        let t0 = crate::stats::start();
        for _ in 0..ROUND_TRIPS {
            // Release pairs with the peer's Acquire load.
            word.word().store(next, Ordering::Release);
            word.wake_one();
            loop {
                // Acquire pairs with the peer's Release store.
                let v = word.load(Ordering::Acquire);
                if v == next + 1 {
                    break;
                }
                word.wait(v, None);
            }
            next = next.wrapping_add(2);
            if next == STOP {
                next = 1;
            }
        }
        ticks_ns(t0, takt_sched::tsc_end()) / 1000.0 / (2 * ROUND_TRIPS) as f64
    });
    word.word().store(STOP, Ordering::Release);
    word.wake_one();
    let _ = peer.join();
    let (est, model) = switch_estimate(ctx, place, 0.3);
    ctx.push(
        kinds::CTXSW_THREAD_FUTEX.sampled("two threads ping-pong through a futex word (FUTEX_WAIT/WAKE, no spinning), 200 round trips per sample",
        )
        .param("placement", place.name())
        .estimate(Estimate::new(est, model))
        .published(0.917)
        .with_samples(s, cpu),
    );
}

fn condvar_switch(ctx: &mut Ctx, place: Placement, cpu0: usize, cpu1: usize, budget: Duration) {
    let pair = Arc::new((Mutex::new(0u64), Condvar::new()));
    let p2 = Arc::clone(&pair);
    let peer_cpu = if place == Placement::Same { cpu0 } else { cpu1 };
    let peer = ThreadSpec::new("machine-condvar")
        .with_cpus(CpuSet::single(peer_cpu))
        .spawn(move || {
            let (m, cv) = &*p2;
            let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if *g == u64::MAX {
                    return;
                }
                if *g % 2 == 1 {
                    *g += 1;
                    cv.notify_one();
                }
                g = cv.wait(g).unwrap_or_else(|p| p.into_inner());
            }
        });
    let Ok(peer) = peer else {
        ctx.skip("ctxsw_thread_condvar", "cannot pin a thread");
        return;
    };
    let (s, cpu) = collect(2, 20, 2000, budget, || {
        let (m, cv) = &*pair;
        let t0 = crate::stats::start();
        let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
        for _ in 0..ROUND_TRIPS {
            *g += 1;
            let want = *g + 1;
            cv.notify_one();
            while *g != want {
                g = cv.wait(g).unwrap_or_else(|p| p.into_inner());
            }
        }
        drop(g);
        ticks_ns(t0, takt_sched::tsc_end()) / 1000.0 / (2 * ROUND_TRIPS) as f64
    });
    {
        let (m, cv) = &*pair;
        *m.lock().unwrap_or_else(|p| p.into_inner()) = u64::MAX;
        cv.notify_all();
    }
    let _ = peer.join();
    let (est, model) = switch_estimate(ctx, place, 0.5);
    ctx.push(
        kinds::CTXSW_THREAD_CONDVAR.sampled("two threads ping-pong through std Mutex + Condvar (the report's pthread_cond method), 200 round trips per sample",
        )
        .param("placement", place.name())
        .estimate(Estimate::new(est, model))
        .published(0.917)
        .with_samples(s, cpu),
    );
}

pub(crate) fn run(ctx: &mut Ctx) {
    let (cpu0, cpu1) = cpus();
    let budget = ctx.budget(Duration::from_millis(1500));
    let places: Vec<Placement> = match cpu1 {
        Some(_) => vec![Placement::Same, Placement::Across],
        None => {
            ctx.skip("ctxsw across_cpus", "only one CPU is allowed");
            vec![Placement::Same]
        }
    };
    let cpu1 = cpu1.unwrap_or(cpu0);
    for place in places {
        let pin = pin_current(cpu0);
        pipe_switch(ctx, place, cpu0, cpu1, budget);
        futex_switch(ctx, place, cpu0, cpu1, budget);
        condvar_switch(ctx, place, cpu0, cpu1, budget);
        drop(pin);
    }
}
