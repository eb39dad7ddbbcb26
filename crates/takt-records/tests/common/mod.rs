//! Documents and databases for the integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("takt-records-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn db(&self) -> PathBuf {
        self.0.join("takt-results.db")
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Two-sided 97.5% Student-t quantiles for 1..=9 degrees of freedom.
const T975: [f64; 9] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
];

/// A row in the conventions' shape with statistics computed from
/// `samples` (2..=10 of them).
pub fn row(name: &str, imp: &str, params: Value, better: &str, samples: &[f64]) -> Value {
    let n = samples.len();
    let mean = samples.iter().sum::<f64>() / n as f64;
    let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = T975[n - 2] * var.sqrt() / (n as f64).sqrt();
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    json!({
        "name": name, "impl": imp, "params": params, "unit": "ns/msg", "better": better,
        "median": median, "min": sorted[0], "max": sorted[n - 1], "mean": mean,
        "stddev": var.sqrt(), "ci95": [mean - half, mean + half], "runs": n,
        "cpu_s": 0.25, "samples": samples,
    })
}

/// A document of `suite` with `rows`.
pub fn document(suite: &str, rows: Vec<Value>) -> Value {
    json!({
        "takt": "0.1.0", "suite": suite, "started": "2026-11-24T12:00:00Z",
        "machine": {
            "cpu": "AMD EPYC test", "cpus": 2, "kernel": "6.18.44", "virtualized": true,
            "commit": "a3d4636", "rustc": "rustc 1.95.0", "profile": "release",
            "command": format!("takt bench {suite} --quick"), "steal_pct": 0.7,
            "load": [2.5, 2.0, 1.5]
        },
        "results": rows,
        "notes": ["a note the store keeps verbatim"]
    })
}

/// A document of `rows` rows of `samples` samples each (to make writes
/// take a while).
pub fn big_document(suite: &str, rows: usize, samples: usize) -> Value {
    let rows = (0..rows)
        .map(|i| {
            let s: Vec<f64> = (0..samples)
                .map(|j| 100.0 + i as f64 + j as f64 * 0.01)
                .collect();
            let mut r = row("bulk", "takt", json!({"i": i}), "lower", &s[..2]);
            r["samples"] = json!(s);
            r["min"] = json!(s[0]);
            r["max"] = json!(s[samples - 1]);
            r["median"] = json!(s[samples / 2]);
            r["mean"] = json!(s.iter().sum::<f64>() / samples as f64);
            r
        })
        .collect();
    document(suite, rows)
}

/// Two runs whose diff has every verdict: A, then B.
pub fn diff_runs() -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let p = |t: u32| json!({"threads": t});
    // Crafted: the intervals say "disjoint", the samples interleave.
    let mut crafted_a = row(
        "crafted",
        "takt",
        p(1),
        "lower",
        &[10.0, 10.2, 10.4, 10.6, 10.8],
    );
    crafted_a["ci95"] = json!([10.3, 10.5]);
    let mut crafted_b = row(
        "crafted",
        "takt",
        p(1),
        "lower",
        &[10.1, 10.3, 10.5, 10.7, 10.9],
    );
    crafted_b["ci95"] = json!([10.55, 10.6]);
    let mut bare_a = row("bare", "takt", p(1), "lower", &[5.0, 5.1, 5.0, 5.1, 5.05]);
    bare_a.as_object_mut().unwrap().remove("samples");
    let mut bare_b = row("bare", "takt", p(1), "lower", &[6.0, 6.1, 6.0, 6.1, 6.05]);
    bare_b.as_object_mut().unwrap().remove("samples");
    let mut single_a = row("single", "takt", p(1), "lower", &[7.0, 7.0]);
    single_a["runs"] = json!(1);
    let single_b = row("single", "takt", p(1), "lower", &[9.0, 9.1, 9.2]);
    let a = vec![document(
        "agents",
        vec![
            row(
                "steady",
                "takt",
                p(1),
                "lower",
                &[12.1, 12.5, 12.3, 12.8, 12.2],
            ),
            row(
                "slower",
                "takt",
                p(1),
                "lower",
                &[10.0, 10.1, 9.9, 10.05, 9.95],
            ),
            row(
                "slower",
                "takt",
                p(2),
                "lower",
                &[20.0, 20.1, 19.9, 20.05, 19.95],
            ),
            row(
                "throughput",
                "takt",
                p(1),
                "higher",
                &[100.0, 101.0, 99.0, 100.5, 99.5],
            ),
            crafted_a,
            bare_a,
            single_a,
            row("retired", "takt", p(1), "lower", &[1.0, 1.1, 1.2, 1.0, 1.1]),
            row(
                "slight",
                "takt",
                p(1),
                "lower",
                &[50.0, 50.1, 49.9, 50.05, 49.95],
            ),
        ],
    )];
    let b = vec![document(
        "agents",
        vec![
            row(
                "steady",
                "takt",
                p(1),
                "lower",
                &[12.4, 12.0, 12.6, 12.3, 12.7],
            ),
            row(
                "slower",
                "takt",
                p(1),
                "lower",
                &[12.0, 12.1, 11.9, 12.05, 11.95],
            ),
            row(
                "slower",
                "takt",
                p(2),
                "lower",
                &[20.1, 19.9, 20.0, 20.05, 19.95],
            ),
            row(
                "throughput",
                "takt",
                p(1),
                "higher",
                &[120.0, 121.0, 119.0, 120.5, 119.5],
            ),
            crafted_b,
            bare_b,
            single_b,
            row(
                "slight",
                "takt",
                p(1),
                "lower",
                &[51.0, 51.1, 50.9, 51.05, 50.95],
            ),
            row(
                "newcomer",
                "takt",
                p(1),
                "lower",
                &[1.0, 1.1, 1.2, 1.0, 1.1],
            ),
        ],
    )];
    (a, b)
}

pub mod pg;
