//! Memory latency curve (report §4.1): random-permutation pointer chasing
//! over working sets from 1 KiB to 512 MiB, with and without transparent
//! huge pages; cache levels and their latencies detected from the curve
//! and checked against the sizes sysfs reports.
//!
//! ## Method
//! One anonymous mapping of the largest size, aligned to 2 MiB, advised
//! `MADV_HUGEPAGE` or `MADV_NOHUGEPAGE`, pre-touched once (the host backs
//! guest memory lazily: the first touch is not what we measure). For each
//! working-set size the first `size / line` cache lines are linked into one
//! random cycle (Sattolo's algorithm, fixed-seed xorshift64*), so every
//! load depends on the previous one and no prefetcher can guess the next
//! line; a stride chase would be hidden by the prefetcher (~1.3 ns flat on
//! these machines). A warm-up pass is discarded; each sample is the mean
//! load-to-load time over a chase of ~1 ms (short samples, many of them: a
//! time slice lost to another process spoils one sample, not the point). Whether huge pages were
//! really used is read back from `/proc/self/smaps` (`AnonHugePages`).
//!
//! ## Level detection
//! [`detect_levels`] (in [`levels`](crate::levels)) finds plateaus and the
//! memory cliff on the smoothed curve by a stated rule and checks each
//! level against sysfs.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::describe::Description;
use crate::kinds;
use crate::levels::human;
pub use crate::levels::{
    detect_levels, memory_cliff, missing_levels, CacheLevel, DRIFT, MEM_STEP, RISE,
};
use crate::stats::{collect, ticks_ns, Estimate};
use crate::timer::pin_current;
use crate::{Ctx, Series};

/// Smallest working set.
const MIN_BYTES: u64 = 1 << 10;
/// Largest working set (the report went to 256 MiB; DRAM and TLB reach show by 512 MiB).
const MAX_BYTES: u64 = 512 << 20;
/// Huge page size the mapping is aligned to.
const HUGE: usize = 2 << 20;

/// One point of the latency curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Working-set size in bytes.
    pub bytes: u64,
    /// Median ns per dependent load.
    pub ns: f64,
    /// Whether the buffer was advised to use huge pages.
    pub thp: bool,
}

/// Working-set sizes: powers of two (quick) or `per_octave` steps per
/// octave, rounded to whole cache lines.
pub fn sizes(per_octave: u32, line: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut e = 0u32;
    loop {
        let v = MIN_BYTES as f64 * 2f64.powf(e as f64 / per_octave as f64);
        let b = ((v / line as f64).round() as u64).max(1) * line;
        if b > MAX_BYTES {
            break;
        }
        if out.last() != Some(&b) {
            out.push(b);
        }
        e += 1;
    }
    out
}

/// xorshift64* (Vigna): a fixed-seed generator for the permutations.
#[derive(Debug)]
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }
}

/// A random cyclic permutation of `0..n` (Sattolo): one cycle through all.
pub fn sattolo(n: usize, seed: u64) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n as u32).collect();
    let mut rng = XorShift(seed | 1);
    for i in (1..n).rev() {
        let j = rng.below(i);
        v.swap(i, j);
    }
    v
}

/// An anonymous mapping aligned to 2 MiB; unmapped on drop.
#[derive(Debug)]
pub(crate) struct Region {
    base: *mut u8,
    map_len: usize,
    ptr: *mut u8,
    len: usize,
}

impl Region {
    /// Maps `len` bytes; `thp` advises huge pages on or off.
    pub(crate) fn new(len: usize, thp: bool) -> Option<Region> {
        let map_len = len + HUGE;
        // SAFETY: anonymous private mapping, no fd; checked for MAP_FAILED.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let base = base.cast::<u8>();
        let off = (HUGE - (base as usize % HUGE)) % HUGE;
        // SAFETY: off < HUGE, so ptr..ptr+len lies inside the mapping.
        let ptr = unsafe { base.add(off) };
        let advice = if thp {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        // SAFETY: advising a range of our own mapping.
        unsafe { libc::madvise(ptr.cast(), len, advice) };
        Some(Region {
            base,
            map_len,
            ptr,
            len,
        })
    }

    /// Writes every byte once (first touch happens here, not in a sample).
    pub(crate) fn pretouch(&mut self) {
        // SAFETY: ptr..ptr+len is our writable mapping.
        unsafe { std::ptr::write_bytes(self.ptr, 0, self.len) };
    }

    /// The usable start.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// `AnonHugePages` of this mapping from `/proc/self/smaps`, bytes.
    pub(crate) fn huge_bytes(&self) -> u64 {
        let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
            return 0;
        };
        let mut inside = false;
        let mut total = 0;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some((a, b)) = first.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    let base = self.base as usize;
                    inside = a < base + self.map_len && b > base;
                    continue;
                }
            }
            if inside && line.starts_with("AnonHugePages:") {
                total += line
                    .split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
                    * 1024;
            }
        }
        total
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `new`.
        unsafe { libc::munmap(self.base.cast(), self.map_len) };
    }
}

/// Links the first `size` bytes of `r` into one random cycle of lines;
/// returns the start node.
fn link(r: &mut Region, size: u64, line: u64, seed: u64) -> *const usize {
    let n = (size / line) as usize;
    let perm = sattolo(n, seed);
    let base = r.ptr();
    for i in 0..n {
        let from = perm[i] as usize;
        let to = perm[(i + 1) % n] as usize;
        // SAFETY: from, to < n and n * line <= r.len(); lines are 8-aligned.
        unsafe {
            let p = base.add(from * line as usize).cast::<usize>();
            p.write(base.add(to * line as usize) as usize);
        }
    }
    base.cast::<usize>()
}

/// Follows `steps` links from `p` (8 per loop iteration).
///
/// # Safety
/// `p` must start a cycle of valid pointers made by [`link`].
#[inline(never)]
unsafe fn chase(mut p: *const usize, steps: u64) -> *const usize {
    for _ in 0..steps / 8 {
        // SAFETY: every node holds the address of another node (caller).
        unsafe {
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
        }
    }
    p
}

/// A measured point with its samples.
#[derive(Debug)]
struct Measured {
    point: CurvePoint,
    samples: Vec<f64>,
    cpu_s: f64,
}

fn curve(ctx: &Ctx, thp: bool, sizes: &[u64], line: u64) -> (Vec<Measured>, u64) {
    let max = *sizes.last().unwrap_or(&MAX_BYTES);
    let Some(mut region) = Region::new(max as usize, thp) else {
        return (Vec::new(), 0);
    };
    region.pretouch();
    let huge = region.huge_bytes();
    let per_point = ctx.budget(Duration::from_millis(300));
    // Short samples, many of them: a time slice lost to another process
    // spoils one sample, which the outlier rule and the median discard.
    let sample_ns: f64 = 1e6;
    let mut out = Vec::new();
    for (i, &size) in sizes.iter().enumerate() {
        if crate::interrupted().is_some() {
            break;
        }
        let start = link(&mut region, size, line, 0x9E37_79B9_7F4A_7C15 ^ size);
        // Warm-up pass (discarded) and calibration of the chase length.
        let warm = (size / line).clamp(1 << 12, 1 << 18);
        let t0 = crate::stats::start();
        // SAFETY: start heads a cycle made by link.
        std::hint::black_box(unsafe { chase(start, warm) });
        let per = ticks_ns(t0, takt_sched::tsc_end()) / warm as f64;
        let steps = ((sample_ns / per.max(0.1)) as u64).clamp(1 << 12, 1 << 26);
        let mut p = start;
        let (samples, cpu_s) = collect(0, 15, 2000, per_point, || {
            let t0 = crate::stats::start();
            // SAFETY: p stays on the cycle made by link.
            p = unsafe { chase(p, steps) };
            std::hint::black_box(p);
            ticks_ns(t0, takt_sched::tsc_end()) / (steps / 8 * 8) as f64
        });
        let cleaned = crate::stats::tukey_far_out(&samples);
        let ns = takt_measure::stats::median(&cleaned.kept);
        if i % 4 == 0 || size == max {
            ctx.progress(&format!(
                "latency thp={} {}: {ns:.2} ns",
                if thp { "on" } else { "off" },
                human(size)
            ));
        }
        out.push(Measured {
            point: CurvePoint {
                bytes: size,
                ns,
                thp,
            },
            samples,
            cpu_s,
        });
    }
    (out, huge)
}

/// Estimate of a level's latency from documented load-to-use latencies.
fn level_estimate(desc: &Description, name: &str, ghz: f64, thp: bool) -> Estimate {
    let intel = desc.cpu.vendor == "GenuineIntel";
    let vm = desc.hypervisor.is_some();
    match name {
        "L1" => {
            let c = if intel { 5.0 } else { 4.0 };
            Estimate::new(
                c / ghz,
                format!("documented L1 load-to-use {c} cycles at {ghz:.2} GHz"),
            )
        }
        "L2" => Estimate::new(
            14.0 / ghz,
            format!("documented L2 latency 14 cycles at {ghz:.2} GHz"),
        ),
        "L3" => {
            let c = if intel { 60.0 } else { 46.0 };
            Estimate::new(
                c / ghz,
                format!("documented L3 latency ~{c} cycles at {ghz:.2} GHz (plus TLB misses beyond the TLB reach)"),
            )
        }
        n if n.starts_with("plateau") => Estimate::new(
            f64::NAN,
            "no model: a plateau no sysfs cache explains (TLB reach of 4 KiB pages, or an effective cache size)",
        ),
        _ => {
            let walk = match (vm, thp) {
                (true, false) => 35.0,
                (true, true) => 10.0,
                (false, false) => 15.0,
                (false, true) => 5.0,
            };
            Estimate::new(
                85.0 + walk,
                format!(
                    "DRAM row miss ~85 ns + page walk {walk} ns ({} pages{})",
                    if thp { "2 MiB" } else { "4 KiB" },
                    if vm {
                        ", two-dimensional walk under a hypervisor"
                    } else {
                        ""
                    }
                ),
            )
        }
    }
}

pub(crate) fn run(ctx: &mut Ctx) {
    let _pin = pin_current(0);
    let line = ctx.desc.line_size() as u64;
    let per_octave = match ctx.cfg.mode {
        crate::Mode::Quick => 3,
        crate::Mode::Default => 4,
        crate::Mode::Full => 6,
    };
    let sizes = sizes(per_octave, line);
    let sysfs: Vec<u64> = (1..=4)
        .filter_map(|l| ctx.desc.data_cache(l).map(|c| c.size_bytes))
        .collect();
    let ghz = ctx.core_ghz();
    let thp_mode = ctx.desc.thp.clone();
    let mut all_levels: Vec<(bool, Vec<CacheLevel>)> = Vec::new();
    let mut huge_used = false;
    for thp in [false, true] {
        let (measured, huge) = curve(ctx, thp, &sizes, line);
        if measured.is_empty() {
            ctx.skip("mem_latency", format!("cannot map {} MiB", MAX_BYTES >> 20));
            return;
        }
        huge_used |= thp && huge > 0;
        if thp && huge == 0 {
            ctx.doc.note(format!(
                "latency with THP: no huge pages were used (THP mode {thp_mode}); the THP curve is a 4 KiB-page curve"
            ));
        }
        let points: Vec<CurvePoint> = measured.iter().map(|m| m.point.clone()).collect();
        let levels = detect_levels(&points, &sysfs);
        ctx.latency_series.push(Series {
            label: format!(
                "{} ({} MiB in huge pages)",
                if thp {
                    "MADV_HUGEPAGE"
                } else {
                    "MADV_NOHUGEPAGE"
                },
                huge >> 20
            ),
            points: points.iter().map(|p| (p.bytes as f64, p.ns)).collect(),
        });
        ctx.latency_curve.extend(points.iter().cloned());
        let published = |name: &str| match name {
            "L1" => Some(3.22),
            "L2" => Some(7.17),
            "L3" => Some(25.06),
            "memory" => Some(68.02),
            _ => None,
        };
        for level in &levels {
            // The representative point: the plateau's geometric middle.
            let mid = ((level.first_bytes as f64) * (level.last_bytes as f64)).sqrt();
            let Some(m) = measured
                .iter()
                .filter(|m| m.point.bytes >= level.first_bytes && m.point.bytes <= level.last_bytes)
                .min_by(|a, b| {
                    ((a.point.bytes as f64).ln() - mid.ln())
                        .abs()
                        .total_cmp(&((b.point.bytes as f64).ln() - mid.ln()).abs())
                })
            else {
                continue;
            };
            let mut s = kinds::MEM_LATENCY.sampled("random-permutation pointer chase (one dependent load per cache line), pinned, pre-touched, warm-up discarded",
            )
            .param("level", level.name.as_str())
            .param("thp", thp)
            .estimate(level_estimate(&ctx.desc, &level.name, ghz, thp))
            .extra("working_set_bytes", m.point.bytes)
            .extra("huge_page_bytes", huge)
            .extra("level", json!(level))
            .with_samples(m.samples.clone(), m.cpu_s);
            if let Some(p) = published(&level.name) {
                s = s.published(p);
            }
            ctx.push(s);
        }
        all_levels.push((thp, levels));
    }
    // Report the huge-page levels when huge pages were used (fewer TLB
    // effects blur the transitions), else the 4 KiB ones.
    let pick_thp = huge_used;
    ctx.levels = all_levels
        .into_iter()
        .find(|(thp, _)| *thp == pick_thp)
        .map(|(_, l)| l)
        .unwrap_or_default();
    if let Some(note) = missing_levels(&ctx.levels, &sysfs) {
        ctx.doc.note(note);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sattolo_is_one_cycle() {
        let n = 1000;
        let p = sattolo(n, 42);
        let mut seen = vec![false; n];
        let mut i = 0usize;
        for _ in 0..n {
            assert!(!seen[i]);
            seen[i] = true;
            i = p[(p.iter().position(|&x| x as usize == i).unwrap() + 1) % n] as usize;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn sizes_cover_the_range() {
        let s = sizes(1, 64);
        assert_eq!(s.first(), Some(&1024));
        assert_eq!(s.last(), Some(&(512 << 20)));
        assert_eq!(s.len(), 20);
        let s2 = sizes(2, 64);
        assert_eq!(s2.len(), 39);
        assert!(s2.iter().all(|b| b % 64 == 0));
    }

    #[test]
    fn chase_follows_a_small_cycle() {
        let mut r = Region::new(64 * 1024, false).unwrap();
        r.pretouch();
        let start = link(&mut r, 4096, 64, 7);
        // 64 nodes in one cycle: 64 steps come back to the start.
        // SAFETY: start heads a cycle made by link.
        let end = unsafe { chase(start, 64) };
        assert_eq!(end, start);
        // SAFETY: as above.
        let mid = unsafe { chase(start, 8) };
        assert_ne!(mid, start);
    }
}
