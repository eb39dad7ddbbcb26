//! Memory bandwidth (report §4.2): read, write and copy over a buffer far
//! larger than the last-level cache, with one thread and with one thread
//! per allowed CPU.
//!
//! Every thread owns a buffer (huge pages where THP allows, pre-touched)
//! and is pinned to its CPU. The three kernels take turns of two cycles
//! through the buffer each, the first cycle of a turn discarded (see
//! `measure`), so their samples spread over the same window. A sample is one 16 MiB chunk by every thread,
//! started together at a barrier: total bytes over the time from the first
//! start to the last end. The chunks cycle through the buffer (several
//! times the last-level cache), so each comes from memory; short samples
//! keep a time slice lost to another process from spoiling many. `read` sums the buffer as `u64`s with four independent
//! accumulators (vectorized loads), `write` stores a value to every word
//! (the compiler emits wide stores; the cache line is read for ownership
//! first unless the CPU elides it), `copy` copies one half of the buffer
//! onto the other and counts the bytes copied once (STREAM would count
//! them twice: read and write).

use std::sync::{Arc, Barrier};
use std::time::Duration;

use takt_sched::{CpuSet, ThreadSpec};

use crate::kinds;
use crate::stats::{ticks_ns, Estimate};
use crate::Ctx;

/// The three kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    Read,
    Write,
    Copy,
}

impl Kernel {
    fn name(self) -> &'static str {
        match self {
            Kernel::Read => "read",
            Kernel::Write => "write",
            Kernel::Copy => "copy",
        }
    }
}

/// Sums the words with four accumulators.
#[inline(never)]
fn read_pass(buf: &[u64]) -> u64 {
    let mut acc = [0u64; 4];
    let chunks = buf.chunks_exact(4);
    for c in chunks {
        acc[0] = acc[0].wrapping_add(c[0]);
        acc[1] = acc[1].wrapping_add(c[1]);
        acc[2] = acc[2].wrapping_add(c[2]);
        acc[3] = acc[3].wrapping_add(c[3]);
    }
    acc.iter().fold(0, |a, &b| a.wrapping_add(b))
}

#[inline(never)]
fn write_pass(buf: &mut [u64], v: u64) {
    for w in buf.iter_mut() {
        *w = v;
    }
}

/// `sysbench memory --memory-access-mode=seq`'s quantity measured its way,
/// for `--compare`: on the calling thread (pinned by the caller), a
/// `bytes` buffer of 4 KiB pages (sysbench allocates with the C
/// allocator; THP `madvise` gives it no huge pages) is touched once, then
/// `blocks` passes over the whole buffer each load (`op` = `"read"`) or
/// store (`"write"`) one 8-byte word at a time through a volatile access
/// (sysbench's `ck_pr_load_64`/`ck_pr_store_64`: the compiler may neither
/// merge nor vectorize them), and the result is all bytes over the total
/// time in GB/s (sysbench's MiB/sec over its run). Such a loop issues one
/// access per iteration: one core walking memory word by word (on the
/// development VMs that still reaches what memory delivers, within 7% of
/// the vectorized `mem_bandwidth` row).
///
/// With `vectorized`, the same passes run the row's own kernels
/// (`read_pass`/`write_pass`, which the compiler vectorizes) instead, so
/// `--compare` can measure the two loops on the same buffer moments apart.
pub(crate) fn sysbench_like_gbs(
    op: &str,
    bytes: usize,
    blocks: u32,
    vectorized: bool,
) -> Option<f64> {
    let mut region = crate::latency::Region::new(bytes, false)?;
    region.pretouch();
    let words = bytes / 8;
    let base = region.ptr().cast::<u64>();
    let write = op == "write";
    if vectorized {
        // SAFETY: the region is `bytes` long, 8-byte aligned and owned here.
        let buf = unsafe { std::slice::from_raw_parts_mut(base, words) };
        let t0 = crate::stats::start();
        for b in 0..blocks {
            if write {
                write_pass(buf, u64::from(b));
            } else {
                std::hint::black_box(read_pass(buf));
            }
        }
        let t1 = takt_sched::tsc_end();
        return Some(bytes as f64 * f64::from(blocks) / ticks_ns(t0, t1));
    }
    let t0 = crate::stats::start();
    for _ in 0..blocks {
        for i in 0..words {
            // SAFETY: i < words, and the region is `bytes` long, 2 MiB
            // aligned and owned here.
            unsafe {
                let p = base.add(i);
                if write {
                    std::ptr::write_volatile(p, (words - i) as u64);
                } else {
                    // A volatile load is kept though its value is unused
                    // (black_box would add a store per word).
                    let _ = std::ptr::read_volatile(p);
                }
            }
        }
    }
    let t1 = takt_sched::tsc_end();
    Some(bytes as f64 * f64::from(blocks) / ticks_ns(t0, t1))
}

/// Copies chunk `j` (of `chunk_words / 2` words) of the first half of
/// `buf` onto the same chunk of the second half.
#[inline(never)]
fn copy_pass(buf: &mut [u64], chunk_words: usize, j: usize) {
    let half = buf.len() / 2;
    let hc = chunk_words / 2;
    let (a, b) = buf.split_at_mut(half);
    b[j * hc..(j + 1) * hc].copy_from_slice(&a[j * hc..(j + 1) * hc]);
}

/// Bytes one sample of `kernel` moves (as reported) over a chunk of `chunk` bytes.
fn pass_bytes(kernel: Kernel, chunk: usize) -> f64 {
    match kernel {
        Kernel::Copy => (chunk / 2) as f64,
        _ => chunk as f64,
    }
}

/// Bytes per sample: short samples (~1 ms), many of them, so that a time
/// slice lost to another process spoils few samples; the chunks cycle
/// through a buffer several times the last-level cache, so every chunk
/// comes from memory.
const CHUNK: usize = 16 << 20;

/// Samples per kernel at least (after the discarded first round).
const MIN_SAMPLES: usize = 30;

/// Runs `kernels` round-robin on each of `cpus` for `budget` in total
/// and returns GB/s per pass, one list per kernel (in `kernels`' order).
///
/// A round gives each kernel a turn of two cycles through the buffer (one
/// pass per 16 MiB chunk, chunk 0 first); the first cycle of every turn is
/// discarded, so a sample never sees what the previous kernel left behind
/// (a read right after the write kernel pays for evicting its dirty lines;
/// a write right after a read evicts clean lines for free: measured here,
/// a write turn's first chunks ran 15% faster than its steady state), and
/// the buffer's first touch is discarded with it. The turns spread every
/// kernel's samples over the whole budget, so a change in the host's memory
/// traffic, which moves over hundreds of milliseconds, reaches all kernels
/// alike instead of whichever ran at that moment.
fn measure(
    kernels: &[Kernel],
    cpus: &[usize],
    bytes: usize,
    huge: bool,
    budget: Duration,
) -> Option<Vec<Vec<f64>>> {
    let n = cpus.len();
    let k = kernels.len().max(1);
    let barrier = Arc::new(Barrier::new(n));
    let deadline_ns = budget.as_nanos() as u64;
    let nchunks = (bytes / CHUNK).max(1);
    // Every thread runs the same passes: thread 0 decides when to stop (by
    // time, on a round boundary) and tells the others through this flag at
    // the barrier. Relaxed suffices: the barrier orders it.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut handles = Vec::new();
    for (idx, &cpu) in cpus.iter().enumerate() {
        let barrier = Arc::clone(&barrier);
        let stop = Arc::clone(&stop);
        let kernels = kernels.to_vec();
        let h = ThreadSpec::new(format!("machine-bw-{idx}"))
            .with_cpus(CpuSet::single(cpu))
            .spawn(move || {
                // Huge pages where THP allows: fewer TLB misses, steadier passes.
                let Some(mut region) = crate::latency::Region::new(bytes, huge) else {
                    return Vec::new();
                };
                region.pretouch(); // first touch, outside any sample
                                   // SAFETY: the region is bytes long, 2 MiB aligned, zeroed,
                                   // and owned by this thread until it returns.
                let buf: &mut [u64] = unsafe {
                    std::slice::from_raw_parts_mut(region.ptr().cast::<u64>(), bytes / 8)
                };
                let mut times = Vec::new();
                let words = bytes / 8;
                let cw = CHUNK / 8;
                let nchunks = (words / cw).max(1);
                let c = takt_sched::clock();
                let t_begin = c.now();
                let turn = 2 * nchunks as u64;
                let round = turn * k as u64;
                let mut pass = 0u64;
                loop {
                    barrier.wait();
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let chunk = pass as usize % nchunks;
                    let kernel = kernels[(pass / turn) as usize % k];
                    let t0 = crate::stats::start();
                    match kernel {
                        Kernel::Read => {
                            let part = &buf[chunk * cw..(chunk + 1) * cw];
                            std::hint::black_box(read_pass(std::hint::black_box(part)));
                        }
                        Kernel::Write => write_pass(&mut buf[chunk * cw..(chunk + 1) * cw], pass),
                        Kernel::Copy => copy_pass(buf, cw, chunk),
                    }
                    std::hint::black_box(&*buf);
                    let t1 = takt_sched::tsc_end();
                    times.push((t0, t1));
                    pass += 1;
                    barrier.wait();
                    let samples = pass / round * nchunks as u64;
                    if idx == 0
                        && pass.is_multiple_of(round)
                        && samples >= MIN_SAMPLES as u64
                        && (c.ticks_to_ns(c.now() - t_begin) > deadline_ns
                            || pass >= 5000 * k as u64)
                    {
                        stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                times
            });
        match h {
            Ok(h) => handles.push(h),
            Err(_) => return None,
        }
    }
    let per_thread: Vec<Vec<(u64, u64)>> =
        handles.into_iter().filter_map(|h| h.join().ok()).collect();
    if per_thread.len() != n || per_thread.iter().any(Vec::is_empty) {
        return None;
    }
    let passes = per_thread.iter().map(Vec::len).min().unwrap_or(0);
    let mut out = vec![Vec::new(); k];
    // The second cycle of every turn.
    for p in (0..passes).filter(|p| (p / nchunks) % 2 == 1) {
        let which = (p / (2 * nchunks)) % k;
        let t0 = per_thread.iter().map(|t| t[p].0).min().unwrap_or(0);
        let t1 = per_thread.iter().map(|t| t[p].1).max().unwrap_or(0);
        out[which].push(pass_bytes(kernels[which], CHUNK) * n as f64 / ticks_ns(t0, t1));
    }
    Some(out)
}

pub(crate) fn run(ctx: &mut Ctx) {
    let bytes: usize = match ctx.cfg.mode {
        crate::Mode::Quick => 128 << 20,
        _ => 256 << 20,
    };
    let allowed: Vec<usize> = takt_sched::get_affinity()
        .map(|s| s.iter().collect())
        .unwrap_or_else(|_| vec![0]);
    let llc = ctx
        .desc
        .caches
        .iter()
        .map(|c| c.size_bytes)
        .max()
        .unwrap_or(0);
    let lat = ctx
        .measured("mem_latency", Some(("level", "memory")))
        .unwrap_or(100.0);
    let lat_src = if ctx
        .measured("mem_latency", Some(("level", "memory")))
        .is_some()
    {
        "measured"
    } else {
        "assumed"
    };
    // Little's law: ~24 L1 miss buffers plus L2 prefetches keep ~48 lines
    // in flight per core; bandwidth = lines x 64 B / memory latency.
    let in_flight = 48.0;
    let line = ctx.desc.line_size() as f64;
    let one_read = in_flight * line / lat;
    let budget = ctx.budget(Duration::from_secs(2));
    // One thread with huge pages and with 4 KiB pages (what malloc'd
    // benchmarks such as sysbench see: in a VM every TLB miss is a
    // two-dimensional page walk), and all threads with huge pages.
    let mut configs = vec![
        (1usize, vec![allowed[0]], true),
        (1, vec![allowed[0]], false),
    ];
    if allowed.len() > 1 {
        configs.push((allowed.len(), allowed.clone(), true));
    }
    let kernels = [Kernel::Read, Kernel::Write, Kernel::Copy];
    for (threads, cpus, huge) in configs {
        let label = format!(
            "x{threads} {}",
            if huge { "huge pages" } else { "4 KiB pages" }
        );
        ctx.progress(&format!("bandwidth read/write/copy {label}"));
        let cpu0 = takt_sched::process_cpu_time();
        let Some(all) = measure(&kernels, &cpus, bytes, huge, budget * kernels.len() as u32) else {
            ctx.skip(
                &format!("mem_bandwidth {label}"),
                "could not start pinned threads",
            );
            continue;
        };
        let cpu_s = takt_sched::process_cpu_time()
            .saturating_sub(cpu0)
            .as_secs_f64()
            / all.iter().map(Vec::len).sum::<usize>().max(1) as f64;
        for (kernel, samples) in kernels.into_iter().zip(all) {
            let factor = match kernel {
                Kernel::Read => 1.0,
                Kernel::Write => 2.0 / 3.0,
                Kernel::Copy => 0.5,
            };
            let est = one_read * factor * threads as f64;
            let published = match kernel {
                Kernel::Read => Some(7.131),
                Kernel::Write => Some(6.709),
                Kernel::Copy => None,
            };
            let mut s = kinds::MEM_BANDWIDTH.sampled(format!(
                    "{} of 16 MiB chunks cycling through a {} MiB buffer per thread ({}x the {} MiB LLC, {}), threads pinned; read, write and copy take turns of two buffer cycles over the whole budget, the first cycle of each turn discarded",
                    kernel.name(),
                    bytes >> 20,
                    (bytes as u64).checked_div(llc).unwrap_or(0),
                    llc >> 20,
                    if huge { "MADV_HUGEPAGE" } else { "MADV_NOHUGEPAGE" }
                ),
            )
            .param("op", kernel.name())
            .param("threads", threads)
            .param("huge_pages", huge)
            .param("bytes", bytes)
            .estimate(Estimate::new(
                est,
                format!(
                    "Little's law: {in_flight} lines of {line} B in flight per core / {lat:.0} ns {lat_src} memory latency = {one_read:.1} GB/s read; write x2/3 (RFO + write-back), copy x1/2; x{threads} threads"
                ),
            ))
            .with_samples(samples, cpu_s);
            if let Some(p) = published {
                if threads == 1 && !huge {
                    s = s.published(p);
                }
            }
            ctx.push(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_do_their_work() {
        let mut b = vec![0u64; 64];
        write_pass(&mut b, 3);
        assert_eq!(read_pass(&b), 3 * 64);
        b[..32]
            .iter_mut()
            .enumerate()
            .for_each(|(i, w)| *w = i as u64);
        for j in 0..4 {
            copy_pass(&mut b, 16, j);
        }
        assert_eq!(&b[..32], &b[32..]);
        assert_eq!(pass_bytes(Kernel::Copy, 64), 32.0);
    }

    #[test]
    fn small_measurement_runs() {
        let kernels = [Kernel::Read, Kernel::Write, Kernel::Copy];
        let all = measure(&kernels, &[0], 2 * CHUNK, false, Duration::ZERO).unwrap();
        assert_eq!(all.len(), 3);
        for s in all {
            assert!(
                s.len() >= MIN_SAMPLES && s.iter().all(|v| *v > 0.0),
                "{s:?}"
            );
        }
    }
}
