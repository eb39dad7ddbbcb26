//! Sets of CPUs, written as on the command line: `1`, `0-1`, `0,2-3`.

use std::fmt;
use std::str::FromStr;

use crate::SchedError;

/// The largest CPU number a [`CpuSet`] can hold, plus one (the size of the
/// kernel's default `cpu_set_t`).
pub const MAX_CPUS: usize = 1024;

const WORDS: usize = MAX_CPUS / 64;

/// A set of CPU numbers below [`MAX_CPUS`].
///
/// Parsed from and displayed as a comma-separated list of numbers and
/// inclusive ranges; display always uses the canonical shortest form
/// (`0-3,6`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CpuSet {
    /// Bit `c % 64` of word `c / 64` is set when CPU `c` is in the set.
    bits: [u64; WORDS],
}

impl CpuSet {
    /// The empty set.
    pub const fn empty() -> Self {
        CpuSet { bits: [0; WORDS] }
    }

    /// A set holding one CPU.
    ///
    /// # Panics
    /// If `cpu >= MAX_CPUS`.
    pub fn single(cpu: usize) -> Self {
        let mut s = Self::empty();
        s.insert(cpu);
        s
    }

    /// CPUs `first..=last`.
    ///
    /// # Panics
    /// If `last >= MAX_CPUS`.
    pub fn range(first: usize, last: usize) -> Self {
        let mut s = Self::empty();
        for c in first..=last {
            s.insert(c);
        }
        s
    }

    /// Adds a CPU.
    ///
    /// # Panics
    /// If `cpu >= MAX_CPUS`.
    pub fn insert(&mut self, cpu: usize) {
        assert!(cpu < MAX_CPUS, "CPU {cpu} is beyond MAX_CPUS");
        self.bits[cpu / 64] |= 1 << (cpu % 64);
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        cpu < MAX_CPUS && self.bits[cpu / 64] & (1 << (cpu % 64)) != 0
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|&w| w == 0)
    }

    /// The CPUs in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..MAX_CPUS).filter(move |&c| self.contains(c))
    }

    /// The `i`-th CPU of the set in increasing order, wrapping around: the
    /// usual way to spread `n` workers over a set.
    ///
    /// Returns `None` for an empty set.
    pub fn nth_wrapping(&self, i: usize) -> Option<usize> {
        let n = self.len();
        if n == 0 {
            None
        } else {
            self.iter().nth(i % n)
        }
    }

    /// The CPUs the calling thread may run on now.
    pub fn current_affinity() -> Result<CpuSet, SchedError> {
        crate::sys::get_affinity()
    }

    /// The CPUs this machine has online (`/sys/devices/system/cpu/online`),
    /// or `0..available_parallelism` when that file is absent.
    pub fn online() -> CpuSet {
        std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| {
                let n = std::thread::available_parallelism().map_or(1, |n| n.get());
                CpuSet::range(0, n - 1)
            })
    }

    pub(crate) fn words(&self) -> &[u64; WORDS] {
        &self.bits
    }

    pub(crate) fn from_words(bits: [u64; WORDS]) -> Self {
        CpuSet { bits }
    }
}

impl Default for CpuSet {
    fn default() -> Self {
        Self::empty()
    }
}

impl FromStr for CpuSet {
    type Err = SchedError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let err = |reason: String| SchedError::CpuSet {
            input: input.to_string(),
            reason,
        };
        let num = |t: &str| -> Result<usize, SchedError> {
            let c: usize = t
                .trim()
                .parse()
                .map_err(|_| err(format!("{t:?} is not a CPU number")))?;
            if c >= MAX_CPUS {
                return Err(err(format!("CPU {c} is beyond the limit of {MAX_CPUS}")));
            }
            Ok(c)
        };
        let mut set = CpuSet::empty();
        if input.trim().is_empty() {
            return Err(err("empty CPU list".into()));
        }
        for part in input.split(',') {
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (num(a)?, num(b)?);
                    if a > b {
                        return Err(err(format!("range {a}-{b} is descending")));
                    }
                    for c in a..=b {
                        set.insert(c);
                    }
                }
                None => set.insert(num(part)?),
            }
        }
        Ok(set)
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut cpus = self.iter().peekable();
        while let Some(start) = cpus.next() {
            let mut end = start;
            while cpus.peek() == Some(&(end + 1)) {
                end = cpus.next().unwrap_or(end);
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if end == start {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_ranges() {
        let s: CpuSet = "0,2-4,7".parse().unwrap();
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 2, 3, 4, 7]);
        assert_eq!(s.to_string(), "0,2-4,7");
        assert_eq!("1".parse::<CpuSet>().unwrap().to_string(), "1");
        assert_eq!("0-1".parse::<CpuSet>().unwrap().len(), 2);
        assert_eq!("3,2,1".parse::<CpuSet>().unwrap().to_string(), "1-3");
    }

    #[test]
    fn rejects_bad_input_with_reason() {
        for bad in ["", "a", "3-1", "1-", "2000", "0,,1"] {
            let e = bad.parse::<CpuSet>().unwrap_err().to_string();
            assert!(e.contains("invalid CPU set"), "{bad}: {e}");
        }
        assert!("3-1"
            .parse::<CpuSet>()
            .unwrap_err()
            .to_string()
            .contains("descending"));
    }

    #[test]
    fn nth_wrapping_spreads() {
        let s: CpuSet = "2,5".parse().unwrap();
        assert_eq!(s.nth_wrapping(0), Some(2));
        assert_eq!(s.nth_wrapping(1), Some(5));
        assert_eq!(s.nth_wrapping(2), Some(2));
        assert_eq!(CpuSet::empty().nth_wrapping(0), None);
    }
}
