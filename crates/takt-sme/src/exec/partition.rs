//! Chunks and partitions: how the processes of a cycle are cut up.
//!
//! Processes are numbered in execution order (by kind, then insertion), so a
//! contiguous range of execution indices is at most a few contiguous runs of
//! same-typed states. A [`Chunk`] is one such run: the unit a thread steps
//! with one monomorphized loop and then settles.

use std::ops::Range;

/// A run of processes of one kind, stepped and settled as a unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    pub(crate) kind: u32,
    /// Range within the kind.
    pub(crate) start: u32,
    pub(crate) end: u32,
    /// First execution index (`kind_base[kind] + start`).
    pub(crate) exec_lo: u32,
}

impl Chunk {
    pub(crate) fn exec_hi(&self) -> u32 {
        self.exec_lo + (self.end - self.start)
    }
}

/// Cuts execution range `r` into chunks at kind boundaries and at most
/// `max_len` processes each.
pub(crate) fn chunks_of(kind_base: &[u32], r: Range<u32>, max_len: u32) -> Vec<Chunk> {
    let max_len = max_len.max(1);
    let mut out = Vec::new();
    let mut at = r.start;
    while at < r.end {
        // The kind containing `at`: the last base <= at.
        let kind = kind_base.partition_point(|&b| b <= at) - 1;
        let kind_end = kind_base[kind + 1].min(r.end);
        let end = kind_end.min(at.saturating_add(max_len));
        out.push(Chunk {
            kind: kind as u32,
            start: at - kind_base[kind],
            end: end - kind_base[kind],
            exec_lo: at,
        });
        at = end;
    }
    out
}

/// `n` processes in `parts` contiguous ranges differing by at most one.
///
/// (The thesis gave `⌊n/t⌋` to the first `t - 1` threads and the rest to the
/// last, up to `t - 1` extra processes on one thread; this spreads them.)
pub(crate) fn even_ranges(n: u32, parts: usize) -> Vec<Range<u32>> {
    let parts = parts.max(1) as u32;
    let (q, r) = (n / parts, n % parts);
    let mut at = 0;
    (0..parts)
        .map(|i| {
            let len = q + (i < r) as u32;
            let range = at..at + len;
            at += len;
            range
        })
        .collect()
}

/// `n` processes in `parts` contiguous ranges the thesis's way: `⌊n/parts⌋`
/// to each of the first `parts - 1`, the rest (up to `parts - 1` more) to
/// the last.
pub(crate) fn floor_ranges(n: u32, parts: usize) -> Vec<Range<u32>> {
    let parts = parts.max(1) as u32;
    let q = n / parts;
    (0..parts)
        .map(|i| {
            let end = if i + 1 == parts { n } else { (i + 1) * q };
            i * q..end
        })
        .collect()
}

/// Contiguous ranges over `costs` for `parts` threads minimizing the largest
/// sum (the linear partition problem), by binary search on the bound with a
/// greedy feasibility check: O(n log Σ).
pub(crate) fn balanced_ranges(costs: &[u64], parts: usize) -> Vec<Range<u32>> {
    let parts = parts.max(1);
    let n = costs.len() as u32;
    if costs.is_empty() {
        return even_ranges(0, parts);
    }
    // Zero costs (a clock too coarse) would make every cut equal: give each
    // process at least 1 so ties spread by count.
    let cost = |i: usize| costs[i].max(1);
    let total: u64 = (0..costs.len()).map(cost).sum();
    let max = (0..costs.len()).map(cost).max().unwrap_or(1);
    let fits = |bound: u64| {
        let (mut used, mut sum) = (1, 0u64);
        for i in 0..costs.len() {
            if sum + cost(i) > bound {
                used += 1;
                sum = 0;
                if used > parts {
                    return false;
                }
            }
            sum += cost(i);
        }
        true
    };
    let (mut lo, mut hi) = (max, total);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    // Cut greedily at the optimal bound, then pad with empty ranges.
    let mut ranges = Vec::with_capacity(parts);
    let (mut start, mut sum) = (0u32, 0u64);
    for i in 0..costs.len() {
        if sum + cost(i) > lo && ranges.len() + 1 < parts {
            ranges.push(start..i as u32);
            start = i as u32;
            sum = 0;
        }
        sum += cost(i);
    }
    ranges.push(start..n);
    while ranges.len() < parts {
        ranges.push(n..n);
    }
    ranges
}

/// The largest per-range sum of `costs` under `ranges`.
pub(crate) fn max_load(costs: &[u64], ranges: &[Range<u32>]) -> u64 {
    ranges
        .iter()
        .map(|r| costs[r.start as usize..r.end as usize].iter().sum::<u64>())
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_split_at_kinds_and_length() {
        let base = [0, 3, 10];
        let c = chunks_of(&base, 1..10, 4);
        let spans: Vec<_> = c
            .iter()
            .map(|c| (c.kind, c.start, c.end, c.exec_lo))
            .collect();
        assert_eq!(spans, [(0, 1, 3, 1), (1, 0, 4, 3), (1, 4, 7, 7)]);
        assert!(chunks_of(&base, 5..5, 4).is_empty());
    }

    #[test]
    fn even_ranges_cover_and_differ_by_one() {
        let r = even_ranges(7, 4);
        assert_eq!(r, [0..2, 2..4, 4..6, 6..7]);
        assert_eq!(even_ranges(1, 3), [0..1, 1..1, 1..1]);
    }

    #[test]
    fn floor_ranges_put_the_rest_on_the_last() {
        assert_eq!(floor_ranges(7, 4), [0..1, 1..2, 2..3, 3..7]);
        assert_eq!(floor_ranges(8, 2), [0..4, 4..8]);
        assert_eq!(floor_ranges(2, 3), [0..0, 0..0, 0..2]);
        assert_eq!(floor_ranges(5, 1), vec![0..5]);
    }

    #[test]
    fn balanced_ranges_are_optimal_on_halves() {
        // 4 light then 4 heavy (1:4) on 2 threads: total 20, best max 10.
        let costs = [1, 1, 1, 1, 4, 4, 4, 4];
        let r = balanced_ranges(&costs, 2);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].start, 0);
        assert_eq!(r[1].end, 8);
        assert_eq!(r[0].end, r[1].start);
        // Best contiguous cut: 1+1+1+1+4 | 4+4+4 (or 1+1+1+1+4+4 | 4+4): 12.
        assert_eq!(max_load(&costs, &r), 12);
        assert_eq!(balanced_ranges(&[5, 5, 5], 5).len(), 5);
        assert_eq!(max_load(&[5, 5, 5], &balanced_ranges(&[5, 5, 5], 5)), 5);
    }
}
