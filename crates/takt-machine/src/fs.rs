//! File system (report §6): file cache size, reads that bypass the cache,
//! contention between readers, and (with `--nfs PATH`) remote reads.
//!
//! - **File cache size**: one scratch file grows by doubling from 64 MiB to
//!   `--max-file` (quick 256 MiB, default 1 GiB, full the memory size plus
//!   1 GiB, never more than half the free space). At each size the file is
//!   read sequentially once to load it, then read again and timed, in ns per
//!   4 KiB block: while the file fits in the page cache this is a memory
//!   copy; past it, disk reads. The cache size is where the time jumps by
//!   more than [`CACHE_JUMP`]; when no jump is seen the size is reported as
//!   a lower bound (the sweep stops before filling the disk).
//! - **O_DIRECT reads**: the alignment the file system demands for direct
//!   I/O comes from `statx(STATX_DIOALIGN)` (falling back to the logical
//!   block size); sequential 4 KiB reads (the report's block), sequential
//!   1 MiB reads (throughput, as `fio` measures it) and random 4 KiB reads
//!   at aligned offsets (uniform with replacement, like `fio
//!   --norandommap`). A 4 KiB read takes tens of microseconds, so each
//!   4 KiB sample is one `pread` (the fenced TSC pair costs ~20 ns): the
//!   median is the median read, the statistic `fio` reports as its `clat`
//!   50th percentile. With `--compare` the file is kept for `fio`, which
//!   then reads the very same file (same layout, same host cache state).
//! - **Contention**: 1…10 threads, each reading its own file sequentially
//!   with O_DIRECT 4 KiB reads for the same window; µs per block, averaged
//!   over all readers.
//!
//! `--max-file` bounds every file this family writes: the sweep's largest
//! file, the O_DIRECT file, and a tenth of it for each contention file
//! (at least 4 MiB).
//!
//! With `--nfs PATH` the O_DIRECT reads run on that file too (`location =
//! nfs`). The CI machines cannot mount NFS (their kernel has neither the
//! client nor the server and loads no modules), so the tests run this code
//! path on a local file; only a real mount measures the network penalty.

use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use takt_sched::ThreadSpec;

use crate::kinds;
use crate::stats::{collect, ticks_ns, Estimate};
use crate::{Ctx, Mode, Series};
use takt_host::cleanup::{register, scratch_dir, Guard, Item};

/// A read-time rise by this factor between sweep sizes marks the cache size.
pub const CACHE_JUMP: f64 = 4.0;
/// The report's block size.
const BLOCK: usize = 4096;

/// Direct-I/O alignment of a file: (memory, offset) in bytes.
pub fn dio_alignment(path: &Path) -> (usize, usize) {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return (BLOCK, BLOCK);
    };
    // SAFETY: zeroed statx is a valid out-buffer; c is NUL-terminated.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let r = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c.as_ptr(),
            0,
            libc::STATX_DIOALIGN | libc::STATX_BASIC_STATS,
            &mut st,
        )
    };
    if r == 0 && st.stx_mask & libc::STATX_DIOALIGN != 0 && st.stx_dio_offset_align > 0 {
        (
            st.stx_dio_mem_align.max(1) as usize,
            st.stx_dio_offset_align as usize,
        )
    } else {
        (BLOCK, BLOCK)
    }
}

/// How a direct-read buffer is backed, which decides how many physical
/// segments one read scatters into.
///
/// On this machine (a Firecracker guest) the host serves each segment of a
/// virtio-blk request separately, at ~2 µs per 4 KiB segment: a 1 MiB read
/// into 4 KiB pages costs ~1 ms (0.8–1.3 GB/s), into one huge page ~0.45 ms
/// (1.9–2.5 GB/s), measured back to back on the same file. How many of a
/// 4 KiB-page buffer's 256 pages happen to be physically adjacent (the
/// block layer merges those into one segment) is drawn anew by every
/// allocation; past 254 segments the request is also split in two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BufKind {
    /// Fresh anonymous memory in 4 KiB pages, left untouched so the first
    /// read faults it in, as fio's malloc'd buffer is.
    Pages,
    /// One 2 MiB-aligned transparent huge page (`MADV_HUGEPAGE`): one
    /// physical segment for reads up to 2 MiB.
    HugePage,
}

const HUGE: usize = 2 << 20;

/// An anonymous mapping for direct reads, page-aligned (or 2 MiB-aligned
/// for [`BufKind::HugePage`]).
#[derive(Debug)]
pub(crate) struct AlignedBuf {
    map: *mut u8,
    map_len: usize,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is plain owned memory, used by one thread at a time.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// A buffer of `len` bytes aligned to `align` (at least a page).
    /// `HugePage` returns `None` when the kernel did not back it with a
    /// huge page (THP disabled, or no free 2 MiB block).
    pub(crate) fn new(len: usize, align: usize, kind: BufKind) -> Option<Self> {
        let page = 4096;
        let align = align.max(page);
        if len == 0 || !align.is_power_of_two() || align > HUGE {
            return None;
        }
        let (map_len, align) = match kind {
            BufKind::Pages => (len.next_multiple_of(page) + align, align),
            BufKind::HugePage => (len.next_multiple_of(HUGE) + HUGE, HUGE),
        };
        // SAFETY: a fresh private anonymous mapping; checked below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return None;
        }
        let map = map.cast::<u8>();
        let ptr = map.wrapping_add((map as usize).next_multiple_of(align) - map as usize);
        let buf = AlignedBuf {
            map,
            map_len,
            ptr,
            len,
        };
        if kind == BufKind::HugePage {
            let span = len.next_multiple_of(HUGE);
            // SAFETY: [ptr, ptr + span) lies inside the mapping (map_len
            // leaves HUGE bytes for the alignment).
            let r = unsafe { libc::madvise(ptr.cast(), span, libc::MADV_HUGEPAGE) };
            // SAFETY: as above; touching faults the range in as huge pages.
            unsafe { std::ptr::write_bytes(ptr, 0, span) };
            if r != 0 || anon_huge_kib(ptr as usize) < (span >> 10) as u64 {
                return None;
            }
        }
        Some(buf)
    }

    fn read_at(&mut self, fd: i32, len: usize, off: u64) -> isize {
        debug_assert!(len <= self.len);
        // SAFETY: ptr is valid for self.len >= len bytes.
        unsafe { libc::pread(fd, self.ptr.cast(), len, off as libc::off_t) }
    }

    /// Physically contiguous runs the buffer's resident pages form (what
    /// the block layer turns into segments), from `/proc/self/pagemap`;
    /// `None` when frame numbers are hidden (they need CAP_SYS_ADMIN).
    pub(crate) fn phys_segments(&self) -> Option<usize> {
        use std::io::{Read, Seek, SeekFrom};
        let page = 4096usize;
        let pages = self.len.div_ceil(page);
        let mut f = File::open("/proc/self/pagemap").ok()?;
        f.seek(SeekFrom::Start((self.ptr as usize / page * 8) as u64))
            .ok()?;
        let mut raw = vec![0u8; pages * 8];
        f.read_exact(&mut raw).ok()?;
        let pfns: Vec<u64> = raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .map(|e| if e >> 63 == 1 { e & ((1 << 55) - 1) } else { 0 })
            .collect();
        if pfns.contains(&0) {
            return None;
        }
        Some(1 + pfns.windows(2).filter(|w| w[1] != w[0] + 1).count())
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with this length.
        unsafe { libc::munmap(self.map.cast(), self.map_len) };
    }
}

/// `AnonHugePages` in kB of the mapping that contains `addr`
/// (`/proc/self/smaps`); 0 when not found.
fn anon_huge_kib(addr: usize) -> u64 {
    let Ok(text) = std::fs::read_to_string("/proc/self/smaps") else {
        return 0;
    };
    let mut inside = false;
    for line in text.lines() {
        let head = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = head.split_once('-') {
            if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                inside = (a..b).contains(&addr);
                continue;
            }
        }
        if inside {
            if let Some(v) = line.strip_prefix("AnonHugePages:") {
                return v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
            }
        }
    }
    0
}

/// Appends `bytes` of data to `f` in 1 MiB writes.
fn append(f: &mut File, bytes: u64) -> std::io::Result<()> {
    let chunk = vec![0xa5u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    Ok(())
}

/// Creates `path` with `bytes` of data, fsynced and dropped from the page
/// cache, registered for removal.
pub(crate) fn create(path: &Path, bytes: u64) -> std::io::Result<(File, Guard)> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)?;
    let g = register(Item::File(path.to_path_buf()));
    append(&mut f, bytes)?;
    f.sync_all()?;
    // SAFETY: fd is open; drop the written pages so O_DIRECT tests start cold.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok((f, g))
}

fn open_direct(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
}

/// Reads the whole file through the page cache in 1 MiB reads; ns per 4 KiB.
fn cached_read(f: &File, bytes: u64, buf: &mut [u8]) -> f64 {
    let t0 = crate::stats::start();
    let mut off = 0u64;
    while off < bytes {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe {
            libc::pread(
                f.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                off as libc::off_t,
            )
        };
        if n <= 0 {
            break;
        }
        off += n as u64;
    }
    ticks_ns(t0, takt_sched::tsc_end()) / (bytes as f64 / BLOCK as f64)
}

/// Free bytes in the file system holding `dir`.
fn free_bytes(dir: &Path) -> u64 {
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return 0;
    };
    // SAFETY: zeroed statvfs is a valid out-buffer; c is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    st.f_bavail * st.f_frsize
}

/// The sweep sizes: doubling from 64 MiB up to `max` (inclusive if a power).
pub fn sweep_sizes(max: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut s = 64u64 << 20;
    while s <= max {
        v.push(s);
        s *= 2;
    }
    if v.last() != Some(&max) && max > 64 << 20 {
        v.push(max);
    }
    v
}

/// The first size whose time rose by more than [`CACHE_JUMP`] over the
/// smallest size's; `None` when no jump was seen.
pub fn cache_edge(points: &[(u64, f64)]) -> Option<(u64, u64)> {
    let base = points.first()?.1;
    points
        .windows(2)
        .find(|w| w[1].1 > CACHE_JUMP * base)
        .map(|w| (w[0].0, w[1].0))
}

fn file_cache(ctx: &mut Ctx, dir: &Path) {
    let mem = ctx.desc.mem_total;
    let default_max = match ctx.cfg.mode {
        Mode::Quick => 256 << 20,
        Mode::Default => 1 << 30,
        Mode::Full => mem + (1 << 30),
    };
    let free = free_bytes(dir);
    let max = ctx.cfg.max_file.unwrap_or(default_max).min(free / 2);
    if max < 64 << 20 {
        ctx.skip(
            "file_cache",
            format!("only {} MiB free in {}", free >> 20, dir.display()),
        );
        return;
    }
    let path = dir.join("filecache.dat");
    let (mut f, _g) = match create(&path, 0) {
        Ok(x) => x,
        Err(e) => {
            ctx.skip(
                "file_cache",
                format!("cannot create {}: {e}", path.display()),
            );
            return;
        }
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut have = 0u64;
    let mut points = Vec::new();
    let avail = ctx.desc.mem_available;
    for size in sweep_sizes(max) {
        if crate::interrupted().is_some() {
            return;
        }
        if append(&mut f, size - have)
            .and_then(|_| f.sync_all())
            .is_err()
        {
            ctx.skip(
                "file_cache",
                format!("cannot grow {} to {} MiB", path.display(), size >> 20),
            );
            break;
        }
        have = size;
        cached_read(&f, size, &mut buf); // load into the cache, discarded
        let (s, cpu) = collect(0, 5, 20, ctx.budget(Duration::from_millis(1500)), || {
            cached_read(&f, size, &mut buf)
        });
        let med = takt_measure::stats::median(&s);
        ctx.progress(&format!("file cache {} MiB: {med:.0} ns/block", size >> 20));
        points.push((size, med));
        ctx.push(
            kinds::FILE_CACHE_READ
                .sampled("sequential 1 MiB reads of a file read once before, ns per 4 KiB block")
                .param("file_mib", size >> 20)
                .estimate(if size < avail {
                    Estimate::new(
                        BLOCK as f64 / 8.0,
                        format!(
                        "fits in the {} MiB available for the page cache: a 4 KiB copy at ~8 GB/s",
                        avail >> 20
                    ),
                    )
                } else {
                    Estimate::new(
                        BLOCK as f64 / 1.0,
                        "exceeds the page cache: read from the device at ~1 GB/s",
                    )
                })
                .with_samples(s, cpu),
        );
    }
    ctx.filecache_series.push(Series {
        label: "sequential read, ns per 4 KiB block".into(),
        points: points
            .iter()
            .map(|&(b, ns)| ((b >> 20) as f64, ns))
            .collect(),
    });
    let (value, note) = match cache_edge(&points) {
        Some((lo, hi)) => (
            ((lo as f64 * hi as f64).sqrt() / (1u64 << 20) as f64),
            format!("read time jumps between {} and {} MiB", lo >> 20, hi >> 20),
        ),
        None => (
            (max >> 20) as f64,
            format!(
                "lower bound: no jump up to {} MiB (--max-file); the cache holds at least this much",
                max >> 20
            ),
        ),
    };
    ctx.push(
        kinds::FILE_CACHE_SIZE.sampled(format!("the file size where sequential read time jumps by more than {CACHE_JUMP}x ({note})"),
        )
        .estimate(Estimate::new(
            (avail >> 20) as f64,
            "MemAvailable at the start: the kernel gives the page cache all memory that is not in use",
        ))
        .published(7296.0)
        .extra("lower_bound", cache_edge(&points).is_none())
        .with_samples(vec![value], 0.0),
    );
}

/// What [`direct_reads`] measured.
#[derive(Debug)]
pub(crate) struct DirectReads {
    /// µs per read, one value per sample.
    pub(crate) us: Vec<f64>,
    /// CPU seconds per sample.
    pub(crate) cpu: f64,
    /// Physical segments of the buffer once resident (see
    /// [`AlignedBuf::phys_segments`]).
    pub(crate) segments: Option<usize>,
}

/// Sequential or random O_DIRECT reads of `len` bytes into a fresh buffer
/// of `kind`, `per_sample` reads per sample; `None` when the buffer or a
/// read failed.
pub(crate) fn direct_reads(
    path: &Path,
    file_bytes: u64,
    len: usize,
    random: bool,
    budget: Duration,
    per_sample: usize,
    kind: BufKind,
) -> Option<DirectReads> {
    let (mem_align, off_align) = dio_alignment(path);
    let f = open_direct(path).ok()?;
    let mut buf = AlignedBuf::new(len, mem_align.max(off_align), kind)?;
    let blocks = file_bytes / len as u64;
    let mut next = 0u64;
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut ok = true;
    let mut segments = None;
    let mut first = true;
    let (us, cpu) = collect(1, 10, 5000, budget, || {
        let t0 = crate::stats::start();
        for _ in 0..per_sample {
            let block = if random {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng % blocks
            } else {
                let b = next;
                next = (next + 1) % blocks;
                b
            };
            let off = block * len as u64 / off_align as u64 * off_align as u64;
            ok &= buf.read_at(f.as_raw_fd(), len, off) == len as isize;
        }
        let ns = ticks_ns(t0, takt_sched::tsc_end());
        if std::mem::take(&mut first) {
            // The warm-up read faulted the buffer in: its layout is final.
            segments = buf.phys_segments();
        }
        ns / 1000.0 / per_sample as f64
    });
    ok.then_some(DirectReads { us, cpu, segments })
}

fn direct(ctx: &mut Ctx, dir: &Path, location: &str, path: &Path, file_bytes: u64) {
    let budget = ctx.budget(Duration::from_secs(3));
    let (mem_align, off_align) = dio_alignment(path);
    let nfs = location == "nfs";
    let net_rtt = ctx
        .measured("tcp_rtt", Some(("peer", "netns")))
        .unwrap_or(0.0);
    for (name, len, random, per, kind) in [
        ("sequential", BLOCK, false, 1usize, BufKind::Pages),
        ("random", BLOCK, true, 1, BufKind::Pages),
        ("sequential_1m", 1 << 20, false, 4, BufKind::Pages),
        (
            "sequential_1m huge_page",
            1 << 20,
            false,
            4,
            BufKind::HugePage,
        ),
    ] {
        ctx.progress(&format!("O_DIRECT {name} {location}"));
        let Some(DirectReads {
            us: s,
            cpu,
            segments,
        }) = direct_reads(path, file_bytes, len, random, budget, per, kind)
        else {
            let why = if kind == BufKind::HugePage {
                "no transparent huge page for the buffer (THP disabled, or no free 2 MiB block)"
                    .to_string()
            } else {
                format!(
                    "O_DIRECT reads of {} failed (not supported by this file system?)",
                    path.display()
                )
            };
            ctx.skip(&format!("disk_read {name} {location}"), why);
            continue;
        };
        let (row_kind, samples, est) = if len == BLOCK {
            let est = if random { 80.0 } else { 20.0 };
            (
                &kinds::DISK_READ_BLOCK,
                s,
                Estimate::new(
                    est + if nfs { net_rtt } else { 0.0 },
                    if random {
                        "virtio-blk 4 KiB read: host device ~20 us + guest/host exits and queueing ~60 us"
                    } else {
                        "sequential 4 KiB at the host's ~200 MB/s for small direct requests"
                    },
                ),
            )
        } else {
            (
                &kinds::DISK_READ_MIB,
                s.iter().map(|us| len as f64 / us).collect(),
                if kind == BufKind::HugePage {
                    Estimate::new(
                        2200.0,
                        "one segment per request: ~0.45 ms per 1 MiB read (the development VMs' ~1000 MB/s cap is the 4 KiB-page buffer's)",
                    )
                } else {
                    Estimate::new(
                        1000.0,
                        "the host serves each 4 KiB segment separately (~2 us each): ~1000 MB/s on the development VMs",
                    )
                },
            )
        };
        let pattern = if random { "random" } else { "sequential" };
        let buffer = match kind {
            BufKind::Pages => "pages",
            BufKind::HugePage => "huge_page",
        };
        let mut row = row_kind.sampled(format!(
                "O_DIRECT pread of {} at {pattern} offsets aligned to {off_align} B (statx DIOALIGN), buffer aligned to {} in {}, {}",
                if len == BLOCK { "4 KiB" } else { "1 MiB" },
                if kind == BufKind::HugePage { "2 MiB".to_string() } else { format!("{} B", mem_align.max(4096)) },
                if kind == BufKind::HugePage { "one transparent huge page" } else { "fresh 4 KiB pages faulted in by the first read" },
                if len == BLOCK { "one read per sample" } else { "4 reads per sample" }
            ),
        )
        .param("pattern", pattern)
        .param("block", len)
        .param("location", location)
        .estimate(est)
        .extra("phys_segments", segments);
        if len != BLOCK {
            row = row.param("buffer", buffer);
        }
        let mut row = row.with_samples(samples, cpu);
        if len == BLOCK {
            row = row.published(match (random, nfs) {
                (false, false) => 188.0,
                (true, false) => 4000.0,
                (false, true) => 865.0,
                (true, true) => 5800.0,
            });
        }
        ctx.push(row);
    }
    let _ = dir;
}

fn contention(ctx: &mut Ctx, dir: &Path) {
    let (file_bytes, window) = match ctx.cfg.mode {
        Mode::Quick => (16u64 << 20, Duration::from_millis(250)),
        Mode::Default => (64 << 20, Duration::from_millis(1000)),
        Mode::Full => (256 << 20, Duration::from_millis(3000)),
    };
    // --max-file bounds every file: ten readers share it.
    let file_bytes = ctx.cfg.max_file.map_or(file_bytes, |m| {
        file_bytes.min((m / 10).max(4 << 20) >> 20 << 20)
    });
    let mut files: Vec<(PathBuf, Guard)> = Vec::new();
    for i in 0..10 {
        let p = dir.join(format!("contention-{i}.dat"));
        match create(&p, file_bytes) {
            Ok((_, g)) => files.push((p, g)),
            Err(e) => {
                ctx.skip(
                    "fs_contention",
                    format!("cannot write {}: {e}", p.display()),
                );
                return;
            }
        }
    }
    let mut series = Vec::new();
    let mut t1 = None;
    for readers in 1..=10usize {
        ctx.progress(&format!("contention {readers} readers"));
        let cpu0 = takt_sched::process_cpu_time();
        let mut handles = Vec::new();
        let start = Instant::now() + Duration::from_millis(20);
        for (i, (path, _)) in files.iter().take(readers).enumerate() {
            let path = path.clone();
            let h = ThreadSpec::new(format!("machine-reader-{i}")).spawn(move || {
                let (mem_align, off_align) = dio_alignment(&path);
                let f = open_direct(&path).ok()?;
                let mut buf = AlignedBuf::new(BLOCK, mem_align.max(off_align), BufKind::Pages)?;
                let blocks = file_bytes / BLOCK as u64;
                while Instant::now() < start {
                    std::hint::spin_loop();
                }
                let end = start + window;
                let mut out = Vec::new();
                let mut b = 0u64;
                while Instant::now() < end {
                    let t0 = crate::stats::start();
                    for _ in 0..16 {
                        if buf.read_at(f.as_raw_fd(), BLOCK, b * BLOCK as u64) != BLOCK as isize {
                            return None;
                        }
                        b = (b + 1) % blocks;
                    }
                    out.push(ticks_ns(t0, takt_sched::tsc_end()) / 1000.0 / 16.0);
                }
                Some(out)
            });
            if let Ok(h) = h {
                handles.push(h);
            }
        }
        let mut samples = Vec::new();
        let mut failed = handles.len() != readers;
        for h in handles {
            match h.join() {
                Ok(Some(v)) => samples.extend(v),
                _ => failed = true,
            }
        }
        if failed || samples.is_empty() {
            ctx.skip("fs_contention", "O_DIRECT reads failed in a reader thread");
            return;
        }
        let cpu = takt_sched::process_cpu_time()
            .saturating_sub(cpu0)
            .as_secs_f64()
            / samples.len() as f64;
        let med = takt_measure::stats::median(&samples);
        let base = *t1.get_or_insert(med);
        series.push((readers as f64, med));
        let published = match readers {
            2 => Some(388.0),
            4 => Some(910.0),
            8 => Some(1899.0),
            _ => None,
        };
        let mut row = kinds::FS_CONTENTION.sampled(format!(
                    "N threads each read their own {} MiB file sequentially with O_DIRECT 4 KiB reads for {} ms; per block, all readers",
                    file_bytes >> 20,
                    window.as_millis()
                ),
            )
            .param("readers", readers)
            .estimate(Estimate::new(
                base * readers as f64,
                format!("the device serves one request at a time: {readers} x the one-reader time {base:.1} us"),
            ))
            .with_samples(samples, cpu);
        if let Some(p) = published {
            row = row.published(p);
        }
        ctx.push(row);
    }
    ctx.contention_series.push(Series {
        label: "O_DIRECT 4 KiB sequential, us per block".into(),
        points: series,
    });
}

pub(crate) fn run(ctx: &mut Ctx) {
    let (dir, dir_guard) = match scratch_dir(&ctx.cfg.scratch_dir, crate::SCRATCH_PREFIX) {
        Ok(d) => d,
        Err(e) => {
            ctx.skip(
                "fs",
                format!(
                    "cannot create a scratch directory in {}: {e}",
                    ctx.cfg.scratch_dir.display()
                ),
            );
            return;
        }
    };
    file_cache(ctx, &dir);
    let direct_bytes: u64 = match ctx.cfg.mode {
        Mode::Quick => 128 << 20,
        _ => 512 << 20,
    };
    // --max-file bounds every file the family writes.
    let direct_bytes = ctx.cfg.max_file.map_or(direct_bytes, |m| {
        direct_bytes.min(m.max(1 << 20) >> 20 << 20)
    });
    let path = dir.join("direct.dat");
    match create(&path, direct_bytes) {
        Ok((_f, g)) => {
            direct(ctx, &dir, "local", &path, direct_bytes);
            if ctx.cfg.compare {
                // fio reads this same file later; the guard still removes
                // it at the end of the run or on a signal.
                ctx.direct_file = Some((path.clone(), direct_bytes, vec![g]));
            }
        }
        Err(e) => ctx.skip("disk_read", format!("cannot write {}: {e}", path.display())),
    }
    contention(ctx, &dir);
    if let Some(nfs) = ctx.cfg.nfs.clone() {
        match std::fs::metadata(&nfs) {
            Ok(m) if m.is_file() && m.len() >= 1 << 20 => {
                let len = m.len();
                direct(ctx, &dir, "nfs", &nfs, len)
            }
            Ok(_) => ctx.skip(
                "nfs_read",
                format!(
                    "--nfs {} must be a regular file of at least 1 MiB",
                    nfs.display()
                ),
            ),
            Err(e) => ctx.skip("nfs_read", format!("--nfs {}: {e}", nfs.display())),
        }
    }
    match &mut ctx.direct_file {
        // The directory goes after the file (guards drop in order).
        Some((_, _, guards)) => guards.push(dir_guard),
        None => drop(dir_guard),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_sizes_double_and_end_at_max() {
        assert_eq!(sweep_sizes(256 << 20), vec![64 << 20, 128 << 20, 256 << 20]);
        assert_eq!(sweep_sizes(300 << 20).last(), Some(&(300 << 20)));
        assert!(sweep_sizes(10 << 20).is_empty());
    }

    #[test]
    fn cache_edge_finds_the_jump() {
        let pts = [(64, 100.0), (128, 110.0), (256, 105.0), (512, 9000.0)];
        assert_eq!(cache_edge(&pts), Some((256, 512)));
        assert_eq!(cache_edge(&pts[..3]), None);
    }

    #[test]
    fn buffers_are_aligned_and_huge_pages_are_one_segment() {
        let b = AlignedBuf::new(1 << 20, 512, BufKind::Pages).unwrap();
        assert_eq!(b.ptr as usize % 4096, 0);
        // Untouched: no frame numbers yet, so no segment count.
        assert_eq!(b.phys_segments(), None);
        assert!(AlignedBuf::new(0, 4096, BufKind::Pages).is_none());
        assert!(AlignedBuf::new(4096, 8 << 20, BufKind::Pages).is_none());
        // A huge page is granted only when THP allows it; when granted it
        // is 2 MiB-aligned and, where frame numbers are visible, one run.
        if let Some(h) = AlignedBuf::new(1 << 20, 4096, BufKind::HugePage) {
            assert_eq!(h.ptr as usize % HUGE, 0);
            assert!(matches!(h.phys_segments(), None | Some(1)));
        }
    }

    #[test]
    fn alignment_has_a_fallback() {
        let (m, o) = dio_alignment(Path::new("/nonexistent/file"));
        assert_eq!((m, o), (BLOCK, BLOCK));
        let (m, o) = dio_alignment(&std::env::temp_dir());
        assert!(m.is_power_of_two() && o.is_power_of_two());
    }
}
