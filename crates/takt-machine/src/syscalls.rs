//! System calls (report §3.4): `getpid` through the raw `syscall`
//! instruction (glibc no longer caches it, but the raw instruction leaves no
//! doubt), `getcwd` through libc, and lmbench's null-I/O set: read one byte
//! of `/dev/zero`, write one byte to `/dev/null`, `stat("/")`, and
//! `open`+`close` of `/dev/null`.
//!
//! Each sample is the mean over a batch of calls between one pair of fenced
//! TSC reads, on a pinned thread.

use std::ffi::CString;
use std::time::Duration;

use crate::kinds;
use crate::stats::{collect_turns, ticks_ns, Estimate, Sampled, Turn};
use crate::timer::pin_current;
use crate::Ctx;

/// Calls per sample.
const BATCH: u64 = 200;

/// `getpid` via the `syscall` instruction.
#[inline(always)]
fn raw_getpid() -> i64 {
    raw_syscall0(libc::SYS_getpid)
}

/// A system call without arguments via the `syscall` instruction.
#[inline(always)]
fn raw_syscall0(nr: i64) -> i64 {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let ret: i64;
        // SAFETY: callers pass argument-less calls without memory effects
        // (getpid, getppid); the kernel clobbers rcx and r11.
        unsafe {
            core::arch::asm!(
                "syscall",
                inlateout("rax") nr => ret,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack, preserves_flags),
            );
        }
        ret
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        // SAFETY: argument-less system call numbers only (see above).
        unsafe { libc::syscall(nr) as i64 }
    }
}

fn batch(f: &mut dyn FnMut()) -> f64 {
    let t0 = crate::stats::start();
    for _ in 0..BATCH {
        f();
    }
    let t1 = takt_sched::tsc_end();
    ticks_ns(t0, t1) / BATCH as f64
}

/// `perf bench syscall basic`'s quantity measured its way, for
/// `--compare`: `loops` calls of glibc's `getppid()` (perf 6.x calls the
/// wrapper, a plain `syscall` instruction) in one TSC bracket on the
/// calling thread (pinned by the caller); ns per call, a mean with every
/// interruption included, as perf's `gettimeofday` pair gives.
pub(crate) fn perf_getppid_loop_ns(loops: u32) -> f64 {
    let t0 = crate::stats::start();
    for _ in 0..loops {
        // SAFETY: getppid has no preconditions.
        std::hint::black_box(unsafe { libc::getppid() });
    }
    ticks_ns(t0, takt_sched::tsc_end()) / f64::from(loops.max(1))
}

pub(crate) fn run(ctx: &mut Ctx) {
    let _pin = pin_current(0);
    let ghz = ctx.core_ghz();
    let budget = ctx.budget(Duration::from_millis(1500));
    let mitig = ctx.desc.entry_mitigations();
    // Hardware: SYSCALL + SYSRET ~70 cycles together; kernel entry/exit
    // code (register save, pt_regs, return checks) ~100 cycles; each
    // active entry mitigation (PTI CR3 switch, IBRS/IBPB, SRSO safe-ret,
    // buffer clearing) ~150 cycles more.
    let base_cycles = 170.0 + 150.0 * mitig.len() as f64;
    let mitig_txt = if mitig.is_empty() {
        "no entry mitigations".to_string()
    } else {
        format!("entry mitigations: {}", mitig.join(", "))
    };
    let est = |extra: f64, what: &str| {
        Estimate::new(
            (base_cycles + extra) / ghz,
            format!(
                "SYSCALL+SYSRET 70 + entry/exit 100 + 150 per entry mitigation ({mitig_txt}) + {what} {extra} cycles, at {ghz:.2} GHz"
            ),
        )
    };

    let zero = CString::new("/dev/zero").expect("no NUL");
    let null = CString::new("/dev/null").expect("no NUL");
    let root = CString::new("/").expect("no NUL");
    // SAFETY: valid NUL-terminated paths; the fds are closed below.
    let (zfd, nfd) = unsafe {
        (
            libc::open(zero.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC),
            libc::open(null.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC),
        )
    };
    let io = zfd >= 0 && nfd >= 0;
    if !io {
        ctx.skip("syscall_read", "cannot open /dev/zero or /dev/null");
    }
    let mut cwd = vec![0u8; 4096];
    let mut rbyte = [0u8; 1];
    let wbyte = [0u8; 1];

    // Every row with its sampler; the samplers take turns over the
    // family's budget (`collect_turns`), so a slow spell of the host
    // falls on all of them a little rather than on one entirely.
    let mut rows: Vec<(Sampled, Turn<'_>)> = vec![
        (
            kinds::SYSCALL_GETPID.sampled("getpid through the raw `syscall` instruction, 200 per fenced-TSC sample",
            )
            .estimate(est(10.0, "getpid body"))
            .published(54.7408),
            Turn::new(5, 30, 3000, || {
                batch(&mut || {
                    std::hint::black_box(raw_getpid());
                })
            }),
        ),
        (
            kinds::SYSCALL_GETPPID.sampled("getppid through the raw `syscall` instruction, 200 per fenced-TSC sample (what `perf bench syscall basic` calls)",
            )
            .estimate(est(40.0, "getppid body (RCU read of the parent, pid-namespace lookup)")),
            Turn::new(5, 30, 3000, || {
                batch(&mut || {
                    std::hint::black_box(raw_syscall0(libc::SYS_getppid));
                })
            }),
        ),
        (
            kinds::SYSCALL_GETCWD.sampled("getcwd through libc, 200 per fenced-TSC sample",
            )
            .estimate(est(150.0, "d_path walk and copy-out"))
            .published(180.0702),
            Turn::new(5, 30, 3000, || {
                batch(&mut || {
                    // SAFETY: cwd is a valid writable buffer of cwd.len() bytes.
                    std::hint::black_box(unsafe {
                        libc::getcwd(cwd.as_mut_ptr().cast(), cwd.len())
                    });
                })
            }),
        ),
    ];
    if io {
        rows.push((
            kinds::SYSCALL_READ
                .sampled("read 1 byte from /dev/zero (lmbench `lat_syscall read`), 200 per sample")
                .estimate(est(120.0, "fdget + VFS read + 1-byte copy")),
            Turn::new(5, 30, 3000, || {
                batch(&mut || {
                    // SAFETY: zfd is open; rbyte is a valid 1-byte buffer.
                    std::hint::black_box(unsafe { libc::read(zfd, rbyte.as_mut_ptr().cast(), 1) });
                })
            }),
        ));
        rows.push((
            kinds::SYSCALL_WRITE
                .sampled("write 1 byte to /dev/null (lmbench `lat_syscall write`), 200 per sample")
                .estimate(est(80.0, "fdget + VFS write")),
            Turn::new(5, 30, 3000, || {
                batch(&mut || {
                    // SAFETY: nfd is open; wbyte is a valid 1-byte buffer.
                    std::hint::black_box(unsafe { libc::write(nfd, wbyte.as_ptr().cast(), 1) });
                })
            }),
        ));
    }
    rows.push((
        kinds::SYSCALL_STAT
            .sampled("stat(\"/\") (lmbench `lat_syscall stat` on a cached path), 200 per sample")
            .estimate(est(
                350.0,
                "path lookup of one component + copy of struct stat",
            )),
        Turn::new(5, 30, 3000, || {
            batch(&mut || {
                // SAFETY: zeroed stat is a valid out-buffer; root is NUL-terminated.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                // SAFETY: as above.
                std::hint::black_box(unsafe { libc::stat(root.as_ptr(), &mut st) });
            })
        }),
    ));
    rows.push((
        kinds::SYSCALL_OPEN_CLOSE.sampled("open(\"/dev/null\") + close (lmbench `lat_syscall open`), 200 pairs per sample",
        )
        .estimate(Estimate::new(
            (2.0 * base_cycles + 1200.0) / ghz,
            format!(
                "two syscalls ({base_cycles} cycles each incl. {mitig_txt}) + path walk, struct file allocation and release ~1200 cycles, at {ghz:.2} GHz"
            ),
        )),
        Turn::new(5, 30, 3000, || {
            batch(&mut || {
                // SAFETY: null is NUL-terminated; the fd is closed right away.
                unsafe {
                    let fd = libc::open(null.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
                    if fd >= 0 {
                        libc::close(fd);
                    }
                }
            })
        }),
    ));
    let n = rows.len() as u32;
    let (rows, turns): (Vec<Sampled>, Vec<Turn<'_>>) = rows.into_iter().unzip();
    let sets = collect_turns(budget * n, turns);
    for (row, (s, cpu)) in rows.into_iter().zip(sets) {
        ctx.push(row.with_samples(s, cpu));
    }
    for fd in [zfd, nfd] {
        if fd >= 0 {
            // SAFETY: fd was opened above and is closed once, after every
            // sampler that used it is gone.
            unsafe { libc::close(fd) };
        }
    }
}
