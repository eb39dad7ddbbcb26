//! Page faults (report §4.3): the cost of one fault, for
//! - `minor_anon`: first touch of fresh anonymous memory (allocate and zero
//!   a page),
//! - `minor_file`: first touch of a mapped file whose pages are in the page
//!   cache (map existing pages; the kernel's fault-around maps up to 16
//!   cached pages per fault),
//! - `major_file`: first touch of a mapped file whose pages were dropped
//!   from the page cache with `posix_fadvise(POSIX_FADV_DONTNEED)` after
//!   `fsync` (unprivileged; `drop_caches` would need root and drop every
//!   file's pages), touched in random order with `MADV_RANDOM` so there is
//!   no readahead: every fault reads from the device.
//!
//! Faults are counted, not assumed: each sample divides its time by the
//! thread's `ru_minflt`/`ru_majflt` increase (`getrusage(RUSAGE_THREAD)`),
//! so fault-around and multi-size THP change the pages per fault (reported
//! as `pages_per_fault`), not the cost per fault. Fresh memory is first
//! touched once and discarded (the host backs guest memory lazily).

use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use crate::kinds;
use crate::stats::{collect, ticks_ns, Estimate};
use crate::timer::pin_current;
use crate::Ctx;
use takt_host::cleanup::{register, scratch_dir, Item};

/// `statfs` magic of tmpfs: files there never leave memory.
const TMPFS_MAGIC: i64 = 0x0102_1994;

fn faults() -> (i64, i64) {
    // SAFETY: zeroed rusage is a valid out-buffer.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    (ru.ru_minflt, ru.ru_majflt)
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize
}

/// Maps `len` bytes of `fd` (or anonymous memory when `fd < 0`).
fn map(len: usize, fd: i32, write: bool) -> Option<*mut u8> {
    let prot = if write {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_READ
    };
    let flags = if fd < 0 {
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS
    } else {
        libc::MAP_SHARED
    };
    // SAFETY: a fresh mapping; checked for MAP_FAILED.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd, 0) };
    (p != libc::MAP_FAILED).then_some(p.cast())
}

fn unmap(p: *mut u8, len: usize) {
    // SAFETY: p/len come from `map`.
    unsafe { libc::munmap(p.cast(), len) };
}

/// One sample: fault `pages` pages in `order` of the mapping; ns per fault
/// and pages per fault, or `None` if no fault happened.
fn touch(p: *mut u8, order: &[usize], write: bool, major: bool) -> Option<(f64, f64)> {
    let ps = page_size();
    let (min0, maj0) = faults();
    let t0 = crate::stats::start();
    let mut sum = 0u8;
    for &i in order {
        // SAFETY: i < pages of the mapping `p` (callers build `order` so).
        unsafe {
            let a = p.add(i * ps);
            if write {
                a.write_volatile(1);
            } else {
                sum = sum.wrapping_add(a.read_volatile());
            }
        }
    }
    let t1 = takt_sched::tsc_end();
    std::hint::black_box(sum);
    let (min1, maj1) = faults();
    let n = if major { maj1 - maj0 } else { min1 - min0 };
    (n > 0).then(|| (ticks_ns(t0, t1) / n as f64, order.len() as f64 / n as f64))
}

fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let perm = crate::latency::sattolo(n, seed);
    perm.into_iter().map(|v| v as usize).collect()
}

fn write_file(path: &Path, bytes: usize) -> std::io::Result<File> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)?;
    let chunk = vec![0x5au8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len());
        f.write_all(&chunk[..n])?;
        left -= n;
    }
    f.sync_all()?;
    Ok(f)
}

fn drop_pages(f: &File) -> bool {
    // SAFETY: fd is open; offset 0 length 0 means the whole file.
    unsafe {
        libc::fsync(f.as_raw_fd());
        libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) == 0
    }
}

fn is_tmpfs(dir: &Path) -> bool {
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: zeroed statfs is a valid out-buffer; c is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type as i64 == TMPFS_MAGIC }
}

pub(crate) fn run(ctx: &mut Ctx) {
    let _pin = pin_current(0);
    let ps = page_size();
    let budget = ctx.budget(Duration::from_secs(2));
    let batch_pages = 4096usize; // 16 MiB of 4 KiB pages per sample
    let write_gbs = ctx
        .measured("mem_bandwidth", Some(("op", "write")))
        .unwrap_or(10.0);
    let zero_us = ps as f64 / write_gbs / 1000.0;

    // Minor, anonymous.
    let len = batch_pages * ps;
    if let Some(p) = map(len, -1, true) {
        // First touch of fresh guest memory, discarded.
        let order: Vec<usize> = (0..batch_pages).collect();
        let _ = touch(p, &order, true, false);
        unmap(p, len);
    }
    let mut ppf = Vec::new();
    let (s, cpu) = collect(1, 10, 500, budget, || {
        let Some(p) = map(len, -1, true) else {
            return f64::NAN;
        };
        // SAFETY: advising our own fresh mapping.
        unsafe { libc::madvise(p.cast(), len, libc::MADV_NOHUGEPAGE) };
        let order: Vec<usize> = (0..batch_pages).collect();
        let r = touch(p, &order, true, false);
        unmap(p, len);
        r.map_or(f64::NAN, |(ns, pp)| {
            ppf.push(pp);
            ns / 1000.0
        })
    });
    ctx.push(
        kinds::PAGE_FAULT.sampled("write one byte per page of a fresh 16 MiB anonymous mapping (MADV_NOHUGEPAGE); time / ru_minflt",
        )
        .param("kind", "minor_anon")
        .estimate(Estimate::new(
            0.35 + 0.2 + zero_us + 0.1,
            format!(
                "exception entry/exit 0.35 us + page allocation 0.2 us + zeroing {ps} B at {write_gbs:.1} GB/s ({zero_us:.2} us) + PTE and memcg 0.1 us"
            ),
        ))
        .extra("pages_per_fault", takt_measure::stats::median(&ppf))
        .with_samples(s.into_iter().filter(|v| v.is_finite()).collect(), cpu),
    );

    // File-backed.
    let (dir, _dir_guard) = match scratch_dir(&ctx.cfg.scratch_dir, crate::SCRATCH_PREFIX) {
        Ok(d) => d,
        Err(e) => {
            ctx.skip(
                "page_fault file",
                format!(
                    "cannot create a scratch directory in {}: {e}",
                    ctx.cfg.scratch_dir.display()
                ),
            );
            return;
        }
    };
    let file_bytes: usize = match ctx.cfg.mode {
        crate::Mode::Quick => 64 << 20,
        _ => 256 << 20,
    };
    let path = dir.join("pagefault.dat");
    let _file_guard = register(Item::File(path.clone()));
    let f = match write_file(&path, file_bytes) {
        Ok(f) => f,
        Err(e) => {
            ctx.skip(
                "page_fault file",
                format!("cannot write {}: {e}", path.display()),
            );
            return;
        }
    };
    let pages = file_bytes / ps;
    // Bring every page into the page cache.
    if let Some(p) = map(file_bytes, f.as_raw_fd(), false) {
        let order: Vec<usize> = (0..pages).collect();
        let _ = touch(p, &order, false, false);
        unmap(p, file_bytes);
    }
    let mut ppf = Vec::new();
    let (s, cpu) = collect(1, 10, 500, budget, || {
        let Some(p) = map(file_bytes, f.as_raw_fd(), false) else {
            return f64::NAN;
        };
        let order: Vec<usize> = (0..pages).collect();
        let r = touch(p, &order, false, false);
        unmap(p, file_bytes);
        r.map_or(f64::NAN, |(ns, pp)| {
            ppf.push(pp);
            ns / 1000.0
        })
    });
    let pp = takt_measure::stats::median(&ppf);
    ctx.push(
        kinds::PAGE_FAULT.sampled("read one byte per page of a mapped file that is in the page cache; time / ru_minflt",
        )
        .param("kind", "minor_file")
        .estimate(Estimate::new(
            0.35 + 16.0 * 0.05,
            "exception entry/exit 0.35 us + fault-around maps up to 16 cached pages at ~0.05 us each",
        ))
        .extra("pages_per_fault", pp)
        .extra(
            "note",
            "large folios in the page cache let one fault map a whole folio, so pages_per_fault can exceed fault-around's 16",
        )
        .with_samples(s.into_iter().filter(|v| v.is_finite()).collect(), cpu),
    );

    // Major.
    if is_tmpfs(&dir) {
        ctx.skip(
            "page_fault major_file",
            format!(
                "{} is on tmpfs, whose pages never leave memory (the report's /tmp mistake); pass --scratch DIR on a disk",
                dir.display()
            ),
        );
        return;
    }
    let per_sample = 128usize.min(pages);
    let mut seed = 1u64;
    let (s, cpu) = collect(1, 8, 200, budget, || {
        if !drop_pages(&f) {
            return f64::NAN;
        }
        let Some(p) = map(file_bytes, f.as_raw_fd(), false) else {
            return f64::NAN;
        };
        // SAFETY: advising our own mapping.
        unsafe { libc::madvise(p.cast(), file_bytes, libc::MADV_RANDOM) };
        seed += 1;
        let mut order = shuffled(pages, seed);
        order.truncate(per_sample);
        let r = touch(p, &order, false, true);
        unmap(p, file_bytes);
        r.map_or(f64::NAN, |(ns, _)| ns / 1000.0)
    });
    let s: Vec<f64> = s.into_iter().filter(|v| v.is_finite()).collect();
    if s.is_empty() {
        ctx.skip(
            "page_fault major_file",
            "no major fault happened after posix_fadvise(DONTNEED): the file's pages stayed cached",
        );
        return;
    }
    let dev_us = ctx
        .measured("disk_read", Some(("pattern", "random")))
        .unwrap_or(80.0);
    ctx.push(
        kinds::PAGE_FAULT.sampled("fsync + posix_fadvise(DONTNEED), map with MADV_RANDOM, read 128 random pages; time / ru_majflt",
        )
        .param("kind", "major_file")
        .estimate(Estimate::new(
            dev_us + 2.0,
            format!(
                "one 4 KiB device read (~{dev_us:.0} us: virtio-blk round trip to the host) + fault, page-cache insert and wake-up ~2 us"
            ),
        ))
        .published(8120.0)
        .with_samples(s, cpu),
    );
}
