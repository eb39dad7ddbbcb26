//! Cache levels found on the memory latency curve (see [`latency`](crate::latency)).
//!
//! ## The rule ([`detect_levels`])
//! The rule, on the curve of (size, median ns) points:
//! 1. **Smooth** with a median of three neighbours (a single disturbed
//!    point cannot make or break a level; real transitions span two or more
//!    points).
//! 2. **Memory cliff**: the last size from which the latency rises more
//!    than [`MEM_STEP`] times within one octave. Everything above it is
//!    memory: the first plateau there is `memory` (DRAM within the TLB
//!    reach), later ones are `plateauN` (the TLB reach of 4 KiB pages).
//!    Without such a step the last plateau is memory.
//! 3. **Plateaus**: a step to the next size that raises the latency by more
//!    than [`RISE`] starts a new run, and so does a drift of more than
//!    [`DRIFT`] above the run's first point. A run is a level when it spans
//!    at least an octave — or when it is the run the memory cliff starts
//!    from and has at least two points: the last cache before memory (on a
//!    VM, the guest's share of a shared L3) is a level however short it is.
//! 4. **Capacity** of a cache level: where the curve first rises through
//!    [`DRIFT`] times its latency or the geometric mean with the next
//!    level's, whichever is lower (log-interpolated); for the last cache
//!    before memory, through the geometric mean with memory — the size at
//!    which about half the loads miss.
//!
//! Cache levels are named in order after the sysfs levels, skipping a
//! level when the capacity is nearer (in log size) to a later one. The
//! check against sysfs passes when the sysfs size is within a factor of two
//! of the detected capacity. In a VM the L3 is shared with other guests
//! (and the host may partition it), so the capacity this guest can use is
//! far below the sysfs size and moves with the neighbours' load (on the
//! development VMs 1.5–8 MiB from run to run against 32 MiB in sysfs): the
//! check then says DISAGREES and the level's `note` explains it, rather
//! than pretending to agree. The L3 *latency* is still that of the L3.

use serde::{Deserialize, Serialize};

use crate::latency::CurvePoint;

/// A step that raises latency by more than this factor is a transition.
pub const RISE: f64 = 1.25;
/// A plateau ends when it drifts this far above its first point.
pub const DRIFT: f64 = 1.5;
/// A rise by more than this factor within one octave of sizes is the step
/// from the last cache to memory (the last such step on the curve).
pub const MEM_STEP: f64 = 3.0;

/// A cache level found on the curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheLevel {
    /// `L1`, `L2`, ... or `memory`.
    pub name: String,
    /// Median latency over the plateau, ns.
    pub ns: f64,
    /// Smallest size on the plateau.
    pub first_bytes: u64,
    /// Largest size still on the plateau.
    pub last_bytes: u64,
    /// First size past the plateau (`None` for memory).
    pub next_bytes: Option<u64>,
    /// Capacity estimate: where the curve first rises through `DRIFT` x this
    /// level's latency (or the geometric mean with the next level's, if
    /// lower; log-interpolated); `None` for memory.
    pub capacity_bytes: Option<u64>,
    /// The sysfs size of this level (data or unified cache).
    pub sysfs_bytes: Option<u64>,
    /// Whether the sysfs size is within a factor of two of `capacity_bytes`.
    pub consistent: Option<bool>,
    /// Detected on the huge-page curve.
    pub thp: bool,
    /// Why the check disagrees, when it does and the reason is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

pub(crate) fn human(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 {
        format!("{:.3} MiB", bytes as f64 / (1u64 << 20) as f64).replace(".000", "")
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0).replace(".0 ", " ")
    }
}

impl CacheLevel {
    /// One line for the report.
    pub fn describe(&self) -> String {
        let cap = match self.capacity_bytes {
            Some(c) => format!("capacity ~{}", human(c)),
            None => format!("from {}", human(self.first_bytes)),
        };
        let check = match (self.sysfs_bytes, self.consistent) {
            (Some(s), Some(true)) => format!("; sysfs {} agrees", human(s)),
            (Some(s), Some(false)) => format!("; sysfs says {} (DISAGREES)", human(s)),
            _ => String::new(),
        };
        let check = match &self.note {
            Some(n) => format!("{check}: {n}"),
            None => check,
        };
        format!(
            "{:<6} {:>8.2} ns  {cap}{check}{}",
            self.name,
            self.ns,
            if self.thp { " [THP]" } else { " [4K pages]" }
        )
    }
}

/// Finds cache levels on a curve sorted by size (see the module docs);
/// `sysfs` gives the data-cache sizes of L1, L2, ... for naming and the check.
pub fn detect_levels(points: &[CurvePoint], sysfs: &[u64]) -> Vec<CacheLevel> {
    if points.len() < 2 {
        return Vec::new();
    }
    // Median-of-3 smoothing removes single-point glitches (a sample run
    // disturbed by another process) without moving real transitions,
    // which span at least two points.
    let smooth: Vec<CurvePoint> = (0..points.len())
        .map(|i| {
            let mut p = points[i].clone();
            if i > 0 && i + 1 < points.len() {
                let mut w = [points[i - 1].ns, points[i].ns, points[i + 1].ns];
                w.sort_by(f64::total_cmp);
                p.ns = w[1];
            }
            p
        })
        .collect();
    let points = &smooth[..];
    let cliff = memory_cliff(points);
    // Split into plateaus: indices [start, end].
    let mut plateaus: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for i in 1..points.len() {
        let rise = points[i].ns / points[i - 1].ns;
        let drift = points[i].ns / points[start].ns;
        if rise > RISE || drift > DRIFT {
            plateaus.push((start, i - 1));
            start = i;
        }
    }
    plateaus.push((start, points.len() - 1));
    // A level spans at least an octave of sizes; shorter flat runs are
    // steps inside a transition — except the run the memory cliff starts
    // from, the last cache however small its usable share.
    let kept: Vec<(usize, usize)> = plateaus
        .into_iter()
        .filter(|&(a, b)| {
            points[b].bytes >= 2 * points[a].bytes
                || cliff.is_some_and(|c| a < b && (a..=b).contains(&c) && below_cliff(points, b))
        })
        .collect();
    let n = kept.len();
    let medians: Vec<f64> = kept
        .iter()
        .map(|&(a, b)| {
            let ns: Vec<f64> = points[a..=b].iter().map(|p| p.ns).collect();
            takt_measure::stats::median(&ns)
        })
        .collect();
    // Index in `kept` of the memory level: the first plateau above the
    // cliff, or the last plateau when there is no cliff.
    let memory = cliff
        .and_then(|c| kept.iter().position(|&(a, _)| a > c))
        .unwrap_or(n.saturating_sub(1));
    let mut next_level = 0;
    kept.iter()
        .enumerate()
        .map(|(k, &(a, b))| {
            let is_memory = k == memory;
            let cache = k < memory;
            let next = (k + 1 < n)
                .then(|| points.get(b + 1).map(|p| p.bytes))
                .flatten();
            // Where the curve leaves the plateau: the first rise through
            // DRIFT x its latency (or the midpoint to the next level, if
            // that is lower); for the last cache, the midpoint to memory.
            // Local to the plateau's edge, so a next level lost in noise
            // does not move it.
            let capacity_bytes = cache
                .then(|| {
                    let mid = (medians[k] * medians[k + 1]).sqrt();
                    let to = if k + 1 == memory {
                        mid
                    } else {
                        (DRIFT * medians[k]).min(mid)
                    };
                    crossing(&points[a..], to)
                })
                .flatten();
            // Name cache plateaus in order after the sysfs levels, skipping
            // a level when the plateau's capacity is nearer (in log size) to
            // a later one (a plateau the noise flattened away).
            let nearest = capacity_bytes.and_then(|c| {
                sysfs
                    .iter()
                    .enumerate()
                    .skip(next_level)
                    .map(|(i, &s)| (i, s, (s as f64 / c as f64).ln().abs()))
                    .min_by(|x, y| x.2.total_cmp(&y.2))
            });
            if let Some((i, _, _)) = nearest {
                next_level = i + 1;
            }
            let sysfs_bytes = nearest.map(|(_, s, _)| s);
            let consistent = sysfs_bytes.zip(capacity_bytes).map(|(s, c)| {
                let r = s as f64 / c as f64;
                (0.5..=2.0).contains(&r)
            });
            let shared_last = k + 1 == memory && nearest.is_some_and(|(i, _, _)| i >= 2);
            let note = (consistent == Some(false) && shared_last).then(|| {
                format!(
                    "the usable share of a last-level cache shared with other tenants (and possibly partitioned by the host): {} of the {} sysfs reports, measured as where half the loads miss; it moves with the neighbours' load",
                    human(capacity_bytes.unwrap_or_default()),
                    human(sysfs_bytes.unwrap_or_default())
                )
            });
            CacheLevel {
                name: match (is_memory, nearest) {
                    (true, _) => "memory".into(),
                    (false, Some((i, _, _))) if cache => format!("L{}", i + 1),
                    _ => format!("plateau{}", k + 1),
                },
                ns: medians[k],
                first_bytes: points[a].bytes,
                last_bytes: points[b].bytes,
                next_bytes: next,
                capacity_bytes,
                sysfs_bytes,
                consistent,
                thp: points[a].thp,
                note,
            }
        })
        .collect()
}

/// Whether the run ending at `b` lies more than [`MEM_STEP`] below the
/// curve one octave further on: a cache, not a shelf half-way up the cliff
/// (a working set near the cache's usable size, half hits and half misses).
fn below_cliff(points: &[CurvePoint], b: usize) -> bool {
    points[b + 1..]
        .iter()
        .find(|q| q.bytes >= 2 * points[b].bytes)
        .or(points.last())
        .is_some_and(|q| q.ns > MEM_STEP * points[b].ns)
}

/// Index of the memory cliff's foot on a smoothed curve: the last point
/// from which the latency one octave later (the first point at least twice
/// the size) is more than [`MEM_STEP`] times higher.
pub fn memory_cliff(points: &[CurvePoint]) -> Option<usize> {
    (0..points.len()).rev().find(|&i| {
        points[i + 1..]
            .iter()
            .find(|q| q.bytes >= 2 * points[i].bytes)
            .is_some_and(|q| q.ns > MEM_STEP * points[i].ns)
    })
}

/// The size where the curve first rises through `level` ns, interpolated
/// linearly in log(size) between the two points around the crossing.
fn crossing(points: &[CurvePoint], level: f64) -> Option<u64> {
    points.windows(2).find_map(|w| {
        let (p, q) = (&w[0], &w[1]);
        (p.ns < level && q.ns >= level).then(|| {
            let f = (level - p.ns) / (q.ns - p.ns);
            let lp = (p.bytes as f64).ln();
            let lq = (q.bytes as f64).ln();
            (lp + f * (lq - lp)).exp().round() as u64
        })
    })
}

/// A note for sysfs cache levels that no plateau was named after (say the
/// shared L3 of a VM whose share was too small or too contended in this
/// run to form a plateau): what the curve did instead.
pub fn missing_levels(levels: &[CacheLevel], sysfs: &[u64]) -> Option<String> {
    let named: Vec<usize> = levels
        .iter()
        .filter_map(|l| l.name.strip_prefix('L')?.parse().ok())
        .collect();
    let missing: Vec<String> = (1..=sysfs.len())
        .filter(|n| !named.contains(n))
        .map(|n| format!("L{n} ({} in sysfs)", human(sysfs[n - 1])))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let memory = levels.iter().find(|l| l.name == "memory");
    let before = memory.and_then(|m| levels.iter().rev().find(|l| l.first_bytes < m.first_bytes));
    let path = match (before, memory) {
        (Some(b), Some(m)) => format!(
            "the curve rises from the {} plateau ({:.1} ns up to {}) straight to memory ({:.0} ns from {})",
            b.name,
            b.ns,
            human(b.last_bytes),
            m.ns,
            human(m.first_bytes)
        ),
        _ => "the curve shows no plateau for it".to_string(),
    };
    Some(format!(
        "cache levels not seen on the latency curve: {}; {path}. On a VM whose last-level cache is shared with other guests, this guest's share was too small or too contended during the run to form a plateau",
        missing.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::sizes;

    /// A synthetic curve: plateaus at 1.2 / 3.8 / 15 / 110 ns with caches
    /// of 48 KiB, 1 MiB and 32 MiB and one-step smooth transitions.
    fn synthetic(per_octave: u32) -> Vec<CurvePoint> {
        sizes(per_octave, 64)
            .into_iter()
            .map(|b| {
                let lat = |b: u64| -> f64 {
                    if b <= 48 << 10 {
                        1.2
                    } else if b <= 1 << 20 {
                        3.8
                    } else if b <= 32 << 20 {
                        15.0
                    } else {
                        110.0
                    }
                };
                // Past a capacity, part of the set still hits: blend.
                let ns = if b > 48 << 10 && b <= 64 << 10 {
                    2.0
                } else {
                    lat(b)
                };
                CurvePoint {
                    bytes: b,
                    ns,
                    thp: true,
                }
            })
            .collect()
    }

    #[test]
    fn detects_three_caches_and_memory() {
        let sysfs = [48 << 10, 1 << 20, 32 << 20];
        for per_octave in [1, 2, 4] {
            let levels = detect_levels(&synthetic(per_octave), &sysfs);
            let names: Vec<&str> = levels.iter().map(|l| l.name.as_str()).collect();
            assert_eq!(
                names,
                ["L1", "L2", "L3", "memory"],
                "per_octave {per_octave}"
            );
            assert!((levels[0].ns - 1.2).abs() < 1e-9);
            assert!((levels[3].ns - 110.0).abs() < 1e-9);
            for l in &levels[..3] {
                assert_eq!(l.consistent, Some(true), "{l:?}");
            }
            assert_eq!(levels[3].consistent, None);
        }
    }

    #[test]
    fn wrong_sysfs_size_is_flagged() {
        // L2 claimed to be 3 MiB: nearest to the 1 MiB plateau but more
        // than a factor of two away.
        let levels = detect_levels(&synthetic(2), &[48 << 10, 3 << 20, 32 << 20]);
        assert_eq!(levels[1].name, "L2");
        assert_eq!(levels[1].consistent, Some(false));
        assert!(levels[1].describe().contains("DISAGREES"));
    }

    #[test]
    fn a_missing_plateau_does_not_shift_names() {
        // No L2 plateau: 1.2 ns up to 48 KiB, then 15 ns to 32 MiB, memory.
        let pts: Vec<CurvePoint> = sizes(2, 64)
            .into_iter()
            .map(|b| CurvePoint {
                bytes: b,
                ns: if b <= 48 << 10 {
                    1.2
                } else if b <= 32 << 20 {
                    15.0
                } else {
                    110.0
                },
                thp: true,
            })
            .collect();
        let levels = detect_levels(&pts, &[48 << 10, 1 << 20, 32 << 20]);
        let names: Vec<&str> = levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["L1", "L3", "memory"]);
    }

    #[test]
    fn small_effective_l3_and_a_tlb_plateau() {
        // What a VM with a shared L3 and 4 KiB pages shows: L3 effectively
        // ~4 MiB (sysfs: 32 MiB), then a TLB-reach plateau before memory.
        let pts: Vec<CurvePoint> = sizes(4, 64)
            .into_iter()
            .map(|b| CurvePoint {
                bytes: b,
                ns: match b {
                    b if b <= 48 << 10 => 1.05,
                    b if b <= 1 << 20 => 3.7,
                    b if b <= 4 << 20 => 14.5,
                    b if b <= 64 << 20 => 150.0,
                    _ => 250.0,
                },
                thp: false,
            })
            .collect();
        let levels = detect_levels(&pts, &[48 << 10, 1 << 20, 32 << 20]);
        let names: Vec<&str> = levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["L1", "L2", "L3", "memory", "plateau5"]);
        assert_eq!(levels[2].consistent, Some(false));
        assert!(levels[2].note.as_deref().unwrap().contains("shared"));
        assert!((levels[3].ns - 150.0).abs() < 1e-9);
        assert_eq!(levels[4].sysfs_bytes, None);
    }

    #[test]
    fn a_short_shared_l3_before_the_cliff_is_a_level() {
        // Measured on a development VM (4 KiB pages, three sizes per
        // octave): the L3 share is two-thirds of an octave long.
        let ns = [
            (512, 4.2),
            (645, 4.5),
            (813, 5.5),
            (1024, 7.6),
            (1290, 11.2),
            (1626, 13.3),
            (2048, 13.9),
            (2580, 148.3),
            (3251, 143.7),
            (4096, 142.0),
            (5161, 145.1),
            (6502, 147.7),
            (8192, 143.1),
        ];
        let mut pts: Vec<CurvePoint> = sizes(3, 64)
            .into_iter()
            .take_while(|&b| b < 512 << 10)
            .map(|b| CurvePoint {
                bytes: b,
                ns: if b <= 40 << 10 { 1.1 } else { 3.7 },
                thp: false,
            })
            .collect();
        pts.extend(ns.iter().map(|&(kib, ns)| CurvePoint {
            bytes: kib << 10,
            ns,
            thp: false,
        }));
        let levels = detect_levels(&pts, &[48 << 10, 1 << 20, 32 << 20]);
        let names: Vec<&str> = levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["L1", "L2", "L3", "memory"]);
        let l3 = &levels[2];
        assert!((11.0..14.0).contains(&l3.ns), "{l3:?}");
        let cap = l3.capacity_bytes.unwrap();
        assert!((2 << 20..2580 << 10).contains(&cap), "{cap}");
        assert_eq!(l3.consistent, Some(false));
        assert!(l3.describe().contains("DISAGREES"));
    }

    #[test]
    fn a_missing_l3_is_noted() {
        let pts: Vec<CurvePoint> = sizes(2, 64)
            .into_iter()
            .map(|b| CurvePoint {
                bytes: b,
                ns: match b {
                    b if b <= 48 << 10 => 1.1,
                    b if b <= 1 << 20 => 3.8,
                    _ => 150.0,
                },
                thp: true,
            })
            .collect();
        let sysfs = [48 << 10, 1 << 20, 32 << 20];
        let levels = detect_levels(&pts, &sysfs);
        let names: Vec<&str> = levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["L1", "L2", "memory"]);
        let note = missing_levels(&levels, &sysfs).unwrap();
        assert!(note.contains("L3 (32 MiB in sysfs)"), "{note}");
        assert!(note.contains("from the L2 plateau"), "{note}");
        assert_eq!(
            missing_levels(&detect_levels(&synthetic(2), &sysfs), &sysfs),
            None
        );
    }

    #[test]
    fn a_shelf_half_way_up_the_cliff_is_not_a_level() {
        // L3 at 14 ns to 2 MiB, two points at ~75 ns (half the loads miss),
        // memory at 150 ns.
        let mut pts: Vec<CurvePoint> = sizes(3, 64)
            .into_iter()
            .take_while(|&b| b <= 2 << 20)
            .map(|b| CurvePoint {
                bytes: b,
                ns: match b {
                    b if b <= 40 << 10 => 1.1,
                    b if b <= 512 << 10 => 3.7,
                    _ => 14.0,
                },
                thp: true,
            })
            .collect();
        for (kib, ns) in [
            (2580, 72.0),
            (3251, 80.0),
            (4096, 150.0),
            (5161, 151.0),
            (6502, 150.0),
            (8192, 152.0),
            (16384, 150.0),
        ] {
            pts.push(CurvePoint {
                bytes: kib << 10,
                ns,
                thp: true,
            });
        }
        let levels = detect_levels(&pts, &[48 << 10, 1 << 20, 32 << 20]);
        let l3 = levels.iter().find(|l| l.name == "L3").unwrap();
        assert!((l3.ns - 14.0).abs() < 1e-9, "{levels:?}");
        assert!(
            levels.iter().all(|l| !(20.0..140.0).contains(&l.ns)),
            "{levels:?}"
        );
    }

    #[test]
    fn memory_cliff_is_the_last_big_step() {
        let pts: Vec<CurvePoint> = [1.0, 1.0, 4.0, 4.0, 15.0, 15.0, 150.0, 160.0, 250.0]
            .iter()
            .enumerate()
            .map(|(i, &ns)| CurvePoint {
                bytes: 1024 << i,
                ns,
                thp: false,
            })
            .collect();
        assert_eq!(memory_cliff(&pts), Some(5));
        assert_eq!(memory_cliff(&pts[..4]), Some(1));
        assert_eq!(memory_cliff(&pts[..2]), None);
    }

    #[test]
    fn noise_within_tolerance_is_one_plateau() {
        let pts: Vec<CurvePoint> = [1.0, 1.1, 0.95, 1.05, 1.2]
            .iter()
            .enumerate()
            .map(|(i, &ns)| CurvePoint {
                bytes: 1024 << i,
                ns,
                thp: false,
            })
            .collect();
        let levels = detect_levels(&pts, &[]);
        assert_eq!(levels.len(), 1);
        assert_eq!(levels[0].name, "memory");
    }

    #[test]
    fn slow_drift_splits_plateaus() {
        // +20% per step never trips RISE but trips DRIFT after three steps.
        let pts: Vec<CurvePoint> = (0..8)
            .map(|i| CurvePoint {
                bytes: 1024 << i,
                ns: 1.2f64.powi(i),
                thp: false,
            })
            .collect();
        assert!(detect_levels(&pts, &[]).len() >= 2);
    }
}
