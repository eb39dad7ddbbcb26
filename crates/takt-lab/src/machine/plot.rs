//! SVG plots (in progress).
use std::path::PathBuf;

use super::Ctx;

pub(crate) fn write_all(_ctx: &Ctx) -> Vec<Result<PathBuf, String>> {
    Vec::new()
}
