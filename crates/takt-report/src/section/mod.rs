//! The report's sections, one module each; each renders from its stage's
//! result document only, except the two that lead the page: the answer
//! (from the scheduler study, or the capacity stage without one) and what
//! changed since the last run on this machine (from the run records).

pub(crate) mod agents;
pub(crate) mod answer;
pub(crate) mod beyond;
pub(crate) mod capacity;
pub(crate) mod changes;
pub(crate) mod machine;
pub(crate) mod remote;
pub(crate) mod robustness;
pub(crate) mod sip;
pub(crate) mod sme;
pub(crate) mod sweep;

use takt_measure::chart::Chart;

use crate::html::figure;

/// The tail a section's plots share: draws `chart` and appends it to `out`
/// as a figure captioned `caption` (escaped); nothing when no series has a
/// point to draw (the table beside it says what was measured).
pub(crate) fn push_figure(out: &mut String, chart: &Chart, caption: &str) {
    if let Ok(svg) = chart.to_svg() {
        out.push_str(&figure(&svg, caption));
    }
}
