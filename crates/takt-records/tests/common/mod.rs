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
