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
