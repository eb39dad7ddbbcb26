//! Helpers shared by the crate's unit tests.

/// Every value one edit away from each seed: each byte replaced by, or
/// preceded by, each of `alphabet`, and each byte deleted (the seeds
/// themselves included).
pub(crate) fn one_edit_away(seeds: &[&[u8]], alphabet: &[u8]) -> Vec<Vec<u8>> {
    let mut all = Vec::new();
    for seed in seeds {
        all.push(seed.to_vec());
        for k in 0..=seed.len() {
            for &c in alphabet {
                let mut ins = seed.to_vec();
                ins.insert(k, c);
                all.push(ins);
                if k < seed.len() {
                    let mut rep = seed.to_vec();
                    rep[k] = c;
                    all.push(rep);
                }
            }
            if k < seed.len() {
                let mut del = seed.to_vec();
                del.remove(k);
                all.push(del);
            }
        }
    }
    all
}

/// Checks a fast path against the full grammar behind it: for every value
/// one edit away from `seeds` on which `fast` answers, `full` must give
/// the same answer, and `fast` must answer for more than 100 of them (a
/// fast path that never fires would prove nothing).
pub(crate) fn fast_path_agrees<T: PartialEq + std::fmt::Debug>(
    seeds: &[&[u8]],
    alphabet: &[u8],
    mut fast: impl FnMut(&[u8]) -> Option<T>,
    mut full: impl FnMut(&[u8]) -> T,
) {
    let mut answered = 0;
    for v in one_edit_away(seeds, alphabet) {
        if let Some(got) = fast(&v) {
            answered += 1;
            assert_eq!(got, full(&v), "{}", v.escape_ascii());
        }
    }
    assert!(answered > 100, "the fast path answered {answered} values");
}
