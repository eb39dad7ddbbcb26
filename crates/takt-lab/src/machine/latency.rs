//! Memory latency (in progress).
use serde::{Deserialize, Serialize};

use super::Ctx;

/// A detected cache level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheLevel {
    /// Name.
    pub name: String,
}

impl CacheLevel {
    /// One line.
    pub fn describe(&self) -> String {
        self.name.clone()
    }
}

/// A point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Bytes.
    pub bytes: u64,
    /// ns.
    pub ns: f64,
}

/// Detects.
pub fn detect_levels(_p: &[CurvePoint]) -> Vec<CacheLevel> {
    Vec::new()
}

pub(crate) fn run(ctx: &mut Ctx) {
    ctx.skip("latency", "not implemented in this build");
}
