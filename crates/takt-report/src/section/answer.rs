//! The answer, first: how a multi-threaded SIP server's capacity depends
//! on its thread count m and on the scheduler's settings on this machine
//! — the question of Krishnamurthy & Rouskas, "On the Impact of Scheduler
//! Settings on the Performance of Multi-Threaded SIP Servers" — written
//! from the scheduler study's document (suite `sip_sweep`) with the
//! searches' intervals, beside the paper's own figures.
//!
//! Per server (target, worker model, mode) it says:
//! 1. how the 1%-drop capacity moves from the smallest to the largest m
//!    under `default` (the capacity lies between a search's last passing
//!    and first failing grid rate; the change's interval is the range of
//!    ratios the two brackets allow; a bound stays a bound: "≥ 4,000");
//! 2. where another profile's capacity lies wholly below or above
//!    default's at the same m (lowered, raised);
//! 3. whether any profile beats `default` (and `server`, the paper's
//!    baseline) by Table III's paired t-test at 5%: the drop rate at the
//!    baseline's first failing rate, in pairs of trials run back to back
//!    (rows `drop_rate_lower`, `detail.paired`).
//!
//! Without a sweep document it says what would answer the question, and
//! what the capacity stage's document can say instead.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::Value;
use takt_measure::result::{BoundKind, Document, ResultRow};

use crate::html::{esc, Cell, CellTable};
use crate::input::{Outcome, ReportInput, Stage};
use crate::provenance::{disturbance, param, param_f64};

/// The paper's figures, quoted from it (OpenSIPS on Linux 2.6.32 with
/// CFS, all threads on one core, means of 30 experiments per column; the
/// paper reports no significance test). The same numbers as takt-siplab's
/// `sweep::paper` tables.
pub mod paper {
    /// The 1%-drop capacity, calls/s — the last rate below 1% drop in
    /// Table I (baseline "server" mode) and Table II (enhanced mode) — at
    /// the paper's smallest and largest thread count: (m, baseline,
    /// enhanced).
    pub const CAPACITY: [(usize, f64, f64); 2] = [(2, 2_200.0, 2_400.0), (16, 1_200.0, 1_400.0)];
    /// Table III: how much lower the enhanced mode's drop rate was than
    /// the baseline's at the baseline's first failing rate, percent, over
    /// m = 2, 4, 6, 8, 16 (lowest, highest).
    pub const TABLE_III_DROP_LOWER: (f64, f64) = (26.31, 40.87);
    /// Table III: the same for K_rcv, percent (lowest, highest).
    pub const TABLE_III_K_RCV_LOWER: (f64, f64) = (7.3, 34.1);
    /// The thread counts at which the enhanced mode's capacity was higher
    /// than the baseline's (by one 200-calls/s step; equal at 4, 6 and 8).
    pub const ENHANCED_HIGHER_AT: [usize; 2] = [2, 16];
}

/// What `takt sip sweep` runs when the report has no sweep document.
const SWEEP_COMMAND: &str =
    "takt sip sweep --quick --target takt --target kamailio --target opensips --json";

/// Significance level of Table III's paired t-test.
const ALPHA: f64 = 0.05;

/// A capacity as an interval: the true capacity lies in `[lo, hi)`; `hi`
/// is infinite above a lower bound, `lo` is 0 under an upper bound.
#[derive(Clone, Debug, PartialEq)]
struct Capacity {
    lo: f64,
    hi: f64,
    /// The last passing rate, when the search measured one between two
    /// grid rates (not a bound).
    point: Option<f64>,
    /// "29,000–29,600", "≥ 4,000 (generator)".
    text: String,
}

impl Capacity {
    fn of(r: &ResultRow) -> Option<Capacity> {
        // a document written before rows had a `bound` spelled it out
        let old_bound = r
            .detail
            .get("capacity")
            .and_then(Value::as_str)
            .filter(|t| t.starts_with('≥') || t.starts_with('<'));
        if let (Some(s), Some(t)) = (&r.summary, old_bound) {
            let (lo, hi) = if t.starts_with('≥') {
                (s.median, f64::INFINITY)
            } else {
                (0.0, s.median)
            };
            return Some(Capacity {
                lo,
                hi,
                point: None,
                text: t.to_string(),
            });
        }
        if let Some(s) = &r.summary {
            let hi = if s.max > s.median { s.max } else { s.median };
            let text = if hi > s.median {
                format!("{}–{}", grouped(s.median), grouped(hi))
            } else {
                grouped(s.median)
            };
            return Some(Capacity {
                lo: s.median,
                hi,
                point: Some(s.median),
                text,
            });
        }
        let b = r.bound.as_ref()?;
        let (lo, hi) = match b.kind {
            BoundKind::Lower => (b.value, f64::INFINITY),
            BoundKind::Upper => (0.0, b.value),
        };
        Some(Capacity {
            lo,
            hi,
            point: None,
            text: b.to_string(),
        })
    }

    /// Wholly below `other` (its first failing rate at or under the
    /// other's last passing one).
    fn below(&self, other: &Capacity) -> bool {
        self.hi <= other.lo && self.hi.is_finite()
    }
}

/// How `to` relates to `from`: the change of the last passing rates and
/// the range the two intervals allow, in percent.
#[derive(Clone, Debug, PartialEq)]
struct Change {
    point: Option<f64>,
    lo: f64,
    hi: f64,
}

impl Change {
    fn between(from: &Capacity, to: &Capacity) -> Change {
        let pct = |r: f64| (r - 1.0) * 100.0;
        Change {
            point: match (from.point, to.point) {
                (Some(a), Some(b)) if a > 0.0 => Some(pct(b / a)),
                _ => None,
            },
            lo: if from.hi.is_finite() {
                pct(to.lo / from.hi)
            } else {
                -100.0
            },
            hi: if from.lo > 0.0 {
                pct(to.hi / from.lo)
            } else {
                f64::INFINITY
            },
        }
    }

    /// `−3% (−5% to −1%)`, `at least −40%`, `not resolved (a bound)`.
    fn text(&self) -> String {
        let range = if self.hi.is_finite() {
            if (self.hi - self.lo).abs() < 0.5 {
                String::new()
            } else {
                format!(" ({} to {})", signed_pct(self.lo), signed_pct(self.hi))
            }
        } else {
            String::new()
        };
        match self.point {
            Some(p) => format!("{}{range}", signed_pct(p)),
            None if self.hi < 0.0 => format!("a fall of more than {}%", magnitude(-self.hi)),
            None if self.lo > 0.0 => format!("a rise of more than {}%", magnitude(self.lo)),
            None => "not resolved (a bound on one side)".into(),
        }
    }

    /// "fell", "rose", or "did not move beyond the searches' resolution".
    fn verb(&self) -> &'static str {
        if self.hi < 0.0 {
            "fell"
        } else if self.lo > 0.0 {
            "rose"
        } else if self.point.is_some() {
            "did not move beyond the searches' resolution"
        } else {
            "cannot be compared (a bound on one side)"
        }
    }
}

/// `+3%`, `−29%` (a true minus sign); under 1%, one decimal (`+0.5%`).
fn signed_pct(v: f64) -> String {
    let s = if v.abs() < 1.0 {
        format!("{v:+.1}%")
    } else {
        format!("{v:+.0}%")
    };
    s.replace('-', "−")
}

/// A positive percentage that a "more than" claim states: rounded down
/// (the claim stays true), whole, or under 1% to one decimal.
fn magnitude(v: f64) -> String {
    if v < 1.0 {
        format!("{:.1}", (v * 10.0).floor() / 10.0)
    } else {
        format!("{:.0}", v.floor())
    }
}

/// `v` whole, thousands separated by commas: `29,000`.
fn grouped(v: f64) -> String {
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 && digits != "0" {
        out.insert(0, '−');
    }
    out
}

/// The thread count of a row: `workers`, or `m`.
fn threads(r: &ResultRow) -> Option<u64> {
    param_f64(r, "workers")
        .or_else(|| param_f64(r, "m"))
        .map(|m| m as u64)
}

fn profile(r: &ResultRow) -> String {
    let p = param(r, "profile");
    if p.is_empty() {
        "default".into()
    } else {
        p
    }
}

/// Which server a row is of: target, worker model (with its wake order),
/// mode.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct ServerKey {
    target: String,
    model: String,
    mode: String,
}

impl ServerKey {
    fn of(r: &ResultRow) -> ServerKey {
        let mut model = param(r, "model");
        let wake = param(r, "wake");
        if !wake.is_empty() {
            model = format!("{model} wake={wake}");
        }
        ServerKey {
            target: r.implementation.clone(),
            model,
            mode: param(r, "mode"),
        }
    }
}

/// One Table III comparison: a profile against a baseline at one m.
#[derive(Clone, Debug)]
struct Paired {
    profile: String,
    against: String,
    m: u64,
    /// How much lower the profile's drop rate was, percent of the
    /// baseline's, and its 95% interval.
    lower_pct: f64,
    ci: [f64; 2],
    p: Option<f64>,
    pairs: usize,
    /// The paper's Table III figure for this m, where the row carries it.
    published: Option<f64>,
}

impl Paired {
    fn of(r: &ResultRow) -> Option<Paired> {
        let (lower_pct, ci, p, pairs) = match r.detail.get("paired") {
            Some(v) if v.is_object() => {
                let f = |k: &str| v.get(k).and_then(Value::as_f64);
                let mean_a = f("mean_a").filter(|a| *a != 0.0)?;
                let s = 100.0 / mean_a;
                let ci = v.get("diff_ci95").and_then(Value::as_array)?;
                let (lo, hi) = (ci.first()?.as_f64()?, ci.get(1)?.as_f64()?);
                (
                    f("diff")? * s,
                    [lo * s, hi * s],
                    f("p"),
                    f("n").map_or(0, |n| n as usize),
                )
            }
            _ => {
                let s = r.summary.as_ref()?;
                (s.mean, s.ci95, None, s.runs)
            }
        };
        Some(Paired {
            profile: profile(r),
            against: param(r, "against"),
            m: threads(r)?,
            lower_pct,
            ci,
            p,
            pairs,
            published: r.published,
        })
    }

    /// Significant at 5%: the p-value, or (a row without one) an interval
    /// that excludes 0 — the same test.
    fn significant(&self) -> bool {
        match self.p {
            Some(p) => p < ALPHA,
            None => self.ci[0] > 0.0 || self.ci[1] < 0.0,
        }
    }

    /// "drop rate 35% lower [12, 58], p = 0.010, 3 pairs".
    fn text(&self) -> String {
        let (amount, dir) = if self.lower_pct >= 0.0 {
            (self.lower_pct, "lower")
        } else {
            (-self.lower_pct, "higher")
        };
        let mut s = format!(
            "drop rate {amount:.0}% {dir} [{}, {}]",
            signed_num(self.ci[0]),
            signed_num(self.ci[1])
        );
        if let Some(p) = self.p {
            let _ = write!(s, ", p = {p:.3}");
        }
        let _ = write!(s, ", {} pairs", self.pairs);
        s
    }

    /// "m = 2: 12% lower [−20, 44], p = 0.31 (paper 26%)" for the table.
    fn cell(&self) -> String {
        let mut s = format!(
            "m = {}: {:.0}% [{}, {}]",
            self.m,
            self.lower_pct,
            signed_num(self.ci[0]),
            signed_num(self.ci[1])
        )
        .replace('-', "−");
        if let Some(p) = self.p {
            let _ = write!(s, " p = {p:.2}");
        }
        if self.significant() {
            s.push_str(if self.lower_pct > 0.0 {
                " (better)"
            } else {
                " (worse)"
            });
        }
        if let Some(v) = self.published {
            let _ = write!(s, "; paper {v:.0}%");
        }
        s
    }
}

/// A percentage bound of an interval: `−20`, `44`.
fn signed_num(v: f64) -> String {
    format!("{v:.0}").replace('-', "−")
}

/// One server's rows: capacity per profile and m, and its Table III.
#[derive(Debug, Default)]
struct Server<'a> {
    capacity: BTreeMap<String, BTreeMap<u64, &'a ResultRow>>,
    table_iii: Vec<Paired>,
}

fn servers(doc: &Document) -> BTreeMap<ServerKey, Server<'_>> {
    let mut out: BTreeMap<ServerKey, Server<'_>> = BTreeMap::new();
    for r in &doc.results {
        let Some(m) = threads(r) else { continue };
        match r.name.as_str() {
            "capacity" => {
                out.entry(ServerKey::of(r))
                    .or_default()
                    .capacity
                    .entry(profile(r))
                    .or_default()
                    .insert(m, r);
            }
            "drop_rate_lower" => {
                if let Some(p) = Paired::of(r) {
                    out.entry(ServerKey::of(r)).or_default().table_iii.push(p);
                }
            }
            _ => {}
        }
    }
    out.retain(|_, s| !s.capacity.is_empty());
    out
}

/// Server names: the target, with its model and mode where the document
/// has more than one of them.
fn labels(keys: &[&ServerKey]) -> Vec<String> {
    let models: BTreeSet<(&str, &str)> = keys
        .iter()
        .map(|k| (k.target.as_str(), k.model.as_str()))
        .collect();
    keys.iter()
        .map(|k| {
            let several = models.iter().filter(|(t, _)| *t == k.target).count() > 1;
            let mut s = k.target.clone();
            if several {
                let _ = write!(s, " ({})", k.model);
            }
            if !k.mode.is_empty() {
                let _ = write!(s, " {}", k.mode);
            }
            s
        })
        .collect()
}

/// The profile a server's changes are read against: `default`, or the
/// first the sweep has.
fn base_profile(s: &Server<'_>) -> Option<String> {
    if s.capacity.contains_key("default") {
        Some("default".into())
    } else {
        s.capacity.keys().next().cloned()
    }
}

/// The base profile's capacity at the server's smallest and largest m.
struct Span {
    base: String,
    m_lo: u64,
    m_hi: u64,
    from: Capacity,
    to: Option<Capacity>,
}

impl Span {
    fn change(&self) -> Option<Change> {
        self.to.as_ref().map(|to| Change::between(&self.from, to))
    }
}

/// Where a profile's capacity lies against the base profile's at one m.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Against {
    Lower,
    Higher,
    Within,
}

impl Server<'_> {
    fn capacity_at(&self, profile: &str, m: u64) -> Option<Capacity> {
        Capacity::of(self.capacity.get(profile)?.get(&m)?)
    }

    fn span(&self) -> Option<Span> {
        let base = base_profile(self)?;
        let caps = &self.capacity[&base];
        let (m_lo, m_hi) = (*caps.keys().next()?, *caps.keys().next_back()?);
        Some(Span {
            from: self.capacity_at(&base, m_lo)?,
            to: (m_hi != m_lo)
                .then(|| self.capacity_at(&base, m_hi))
                .flatten(),
            base,
            m_lo,
            m_hi,
        })
    }

    /// Every other profile against the base at each m both have:
    /// (profile, m, its capacity, the base's, where it lies).
    fn against_base(&self, base: &str) -> Vec<(String, u64, Capacity, Capacity, Against)> {
        let mut out = Vec::new();
        for (p, by_m) in self.capacity.iter().filter(|(p, _)| *p != base) {
            for &m in by_m.keys() {
                let (Some(c), Some(b)) = (self.capacity_at(p, m), self.capacity_at(base, m)) else {
                    continue;
                };
                let at = if c.below(&b) {
                    Against::Lower
                } else if b.below(&c) {
                    Against::Higher
                } else {
                    Against::Within
                };
                out.push((p.clone(), m, c, b, at));
            }
        }
        out
    }
}

/// The sentences about one server (an `<li>`'s content, HTML).
fn server_sentences(label: &str, s: &Server<'_>) -> String {
    let Some(span) = s.span() else {
        return String::new();
    };
    let base = &span.base;
    let mut out = format!("<strong>{}</strong>: ", esc(label));
    match (&span.to, span.change()) {
        (Some(to), Some(c)) => {
            let resolved = c.point.is_some() || c.hi < 0.0 || c.lo > 0.0;
            let _ = if resolved {
                write!(
                    out,
                    "under <code>{}</code>, capacity {} from m = {} to m = {}: {} → {} calls/s, {}.",
                    esc(base),
                    c.verb(),
                    span.m_lo,
                    span.m_hi,
                    esc(&span.from.text),
                    esc(&to.text),
                    esc(&c.text())
                )
            } else {
                write!(
                    out,
                    "under <code>{}</code>, capacity from m = {} to m = {}: {} → {} calls/s; the change is not \
                     resolved (a bound on one side).",
                    esc(base),
                    span.m_lo,
                    span.m_hi,
                    esc(&span.from.text),
                    esc(&to.text)
                )
            };
        }
        _ => {
            let _ = write!(
                out,
                "under <code>{}</code>, {} calls/s at m = {}; only one thread count was measured.",
                esc(base),
                esc(&span.from.text),
                span.m_lo
            );
        }
    }
    // other profiles' capacity against the base's, per m
    let against = s.against_base(base);
    let profiles: BTreeSet<&str> = against.iter().map(|a| a.0.as_str()).collect();
    for p in profiles {
        let of = |want: Against| -> Vec<String> {
            against
                .iter()
                .filter(|a| a.0 == p && a.4 == want)
                .map(|(_, m, c, b, _)| {
                    let pct = Change::between(b, c)
                        .point
                        .map_or(String::new(), |x| format!(", {}", signed_pct(x)));
                    format!("m = {m}: {} against {}{pct}", esc(&c.text), esc(&b.text))
                })
                .collect()
        };
        let (lowered, raised) = (of(Against::Lower), of(Against::Higher));
        let same: Vec<String> = against
            .iter()
            .filter(|a| a.0 == p && a.4 == Against::Within)
            .map(|a| a.1.to_string())
            .collect();
        let mut parts = Vec::new();
        if !lowered.is_empty() {
            parts.push(format!("lowered capacity ({})", lowered.join("; ")));
        }
        if !raised.is_empty() {
            parts.push(format!("raised capacity ({})", raised.join("; ")));
        }
        if !same.is_empty() {
            parts.push(format!(
                "was within the searches' resolution of it at m = {}",
                same.join(", ")
            ));
        }
        let _ = write!(
            out,
            " <code>{}</code> against <code>{}</code> {}.",
            esc(p),
            esc(base),
            parts.join("; ")
        );
    }
    out.push_str(&table_iii_sentences(s));
    out
}

/// The answer in a few sentences: every server's change from the smallest
/// to the largest m, Table III's verdicts over all servers, the profiles
/// that lowered capacity, and the paper's loss.
fn in_short(
    keys: &[&ServerKey],
    names: &[String],
    all: &BTreeMap<ServerKey, Server<'_>>,
) -> String {
    let mut moves = Vec::new();
    // per profile: where its capacity lay wholly below, above the base's
    let mut apart: BTreeMap<String, (Vec<String>, Vec<String>)> = BTreeMap::new();
    let (mut compared, mut better, mut worse) = (0, Vec::new(), Vec::new());
    let mut baselines = BTreeSet::new();
    for (k, name) in keys.iter().zip(names) {
        let s = &all[*k];
        let Some(span) = s.span() else { continue };
        let text = match span.change() {
            Some(c) if c.point.is_some() || c.hi < 0.0 || c.lo > 0.0 => c.text(),
            Some(_) => "not resolved (a bound on one side)".into(),
            None => format!("one thread count only (m = {})", span.m_lo),
        };
        moves.push(format!("{} {}", esc(name), esc(&text)));
        for (p, m, c, b, at) in s.against_base(&span.base) {
            let pct = Change::between(&b, &c)
                .point
                .map_or(String::new(), |x| format!(" ({})", signed_pct(x)));
            let entry: &mut (Vec<String>, Vec<String>) = apart.entry(p).or_default();
            let what = format!("{} at m = {m}{pct}", esc(name));
            match at {
                Against::Lower => entry.0.push(what),
                Against::Higher => entry.1.push(what),
                Against::Within => {}
            }
        }
        for t in &s.table_iii {
            compared += 1;
            baselines.insert(t.against.clone());
            let what = format!(
                "<code>{}</code> against <code>{}</code> for {} at m = {} ({:.0}% {} drop rate)",
                esc(&t.profile),
                esc(&t.against),
                esc(name),
                t.m,
                t.lower_pct.abs(),
                if t.lower_pct > 0.0 { "lower" } else { "higher" }
            );
            if t.significant() && t.lower_pct > 0.0 {
                better.push(what);
            } else if t.significant() && t.lower_pct < 0.0 {
                worse.push(what);
            }
        }
    }
    let mut out = String::from("<p><b>In short:</b> ");
    if let Some(span) = keys.first().and_then(|k| all[*k].span()) {
        let _ = write!(
            out,
            "capacity from the smallest to the largest m under <code>{}</code>: {}.",
            esc(&span.base),
            moves.join("; ")
        );
    }
    let [(_, base_lo, enh_lo), (_, base_hi, enh_hi)] = paper::CAPACITY;
    let _ = write!(
        out,
        " The paper's OpenSIPS lost {:.0}% (baseline) and {:.0}% (enhanced) from m = 2 to 16.",
        (1.0 - base_hi / base_lo) * 100.0,
        (1.0 - enh_hi / enh_lo) * 100.0
    );
    let bases = baselines
        .iter()
        .map(|b| format!("<code>{}</code>", esc(b)))
        .collect::<Vec<_>>()
        .join(" or ");
    if compared == 0 {
        out.push_str(" No Table III comparison is in the document.");
    } else if better.is_empty() {
        let _ = write!(
            out,
            " No profile beat {bases} significantly by Table III's paired t-test at 5% ({compared} comparison{}).",
            if compared == 1 { "" } else { "s" }
        );
    } else {
        let _ = write!(
            out,
            " Significantly better by Table III's paired t-test at 5% ({compared} comparisons): {}.",
            better.join("; ")
        );
    }
    if !worse.is_empty() {
        let _ = write!(out, " Significantly worse: {}.", worse.join("; "));
    }
    for (p, (lower, higher)) in apart
        .iter()
        .filter(|(_, (l, h))| !l.is_empty() || !h.is_empty())
    {
        let mut parts = Vec::new();
        if !lower.is_empty() {
            parts.push(format!("lowered capacity for {}", lower.join(", ")));
        }
        if !higher.is_empty() {
            parts.push(format!("raised it for {}", higher.join(", ")));
        }
        let _ = write!(
            out,
            " <code>{}</code> {} (the searches' brackets apart; one search each, not a significance test).",
            esc(p),
            parts.join(" and ")
        );
    }
    out.push_str("</p>\n");
    out
}

/// Table III's verdicts for one server, per baseline.
fn table_iii_sentences(s: &Server<'_>) -> String {
    let mut out = String::new();
    let baselines: BTreeSet<&str> = s.table_iii.iter().map(|p| p.against.as_str()).collect();
    if baselines.is_empty() {
        out.push_str(
            " No Table III comparison (paired trials at the baseline's first failing rate) is in the document.",
        );
        return out;
    }
    // the paper's baseline first, then default
    let mut order: Vec<&str> = ["server", "default"]
        .into_iter()
        .filter(|b| baselines.contains(b))
        .collect();
    order.extend(
        baselines
            .iter()
            .copied()
            .filter(|b| *b != "server" && *b != "default"),
    );
    for b in order {
        let rows: Vec<&Paired> = s.table_iii.iter().filter(|p| p.against == b).collect();
        let better: Vec<&&Paired> = rows
            .iter()
            .filter(|p| p.significant() && p.lower_pct > 0.0)
            .collect();
        let worse: Vec<&&Paired> = rows
            .iter()
            .filter(|p| p.significant() && p.lower_pct < 0.0)
            .collect();
        let _ = write!(
            out,
            " By Table III's paired t-test at 5% against <code>{}</code> ({} comparison{}):",
            esc(b),
            rows.len(),
            if rows.len() == 1 { "" } else { "s" }
        );
        if better.is_empty() {
            let ps: Vec<f64> = rows.iter().filter_map(|p| p.p).collect();
            let range = match (
                ps.iter().copied().reduce(f64::min),
                ps.iter().copied().reduce(f64::max),
            ) {
                (Some(lo), Some(hi)) if ps.len() > 1 => format!(" (p from {lo:.2} to {hi:.2})"),
                (Some(p), _) => format!(" (p = {p:.2})"),
                _ => String::new(),
            };
            let _ = write!(
                out,
                " no profile beat <code>{}</code> significantly{range}.",
                esc(b)
            );
        } else {
            let list: Vec<String> = better
                .iter()
                .map(|p| {
                    format!(
                        "<code>{}</code> at m = {} ({})",
                        esc(&p.profile),
                        p.m,
                        esc(&p.text())
                    )
                })
                .collect();
            let _ = write!(out, " better: {}.", list.join("; "));
        }
        if !worse.is_empty() {
            let list: Vec<String> = worse
                .iter()
                .map(|p| {
                    format!(
                        "<code>{}</code> at m = {} ({})",
                        esc(&p.profile),
                        p.m,
                        esc(&p.text())
                    )
                })
                .collect();
            let _ = write!(out, " Significantly worse: {}.", list.join("; "));
        }
    }
    out
}

/// The paper's figures, as the paper's.
fn paper_paragraph() -> String {
    let [(m_lo, base_lo, enh_lo), (m_hi, base_hi, enh_hi)] = paper::CAPACITY;
    let pct = |a: f64, b: f64| signed_pct((b / a - 1.0) * 100.0);
    let (d_lo, d_hi) = paper::TABLE_III_DROP_LOWER;
    let (k_lo, k_hi) = paper::TABLE_III_K_RCV_LOWER;
    let gains: Vec<String> = paper::CAPACITY
        .iter()
        .map(|(m, b, e)| format!("{} at m = {m}", pct(*b, *e)))
        .collect();
    format!(
        "<p><b>The paper</b> (OpenSIPS on Linux 2.6.32 with CFS, one core; its figures, not measured here): the \
         1%-drop capacity fell from {} to {} calls/s between m = {m_lo} and m = {m_hi} in the baseline \
         <code>server</code> mode ({}) and from {} to {} in its enhanced mode ({}: the paper's 42% loss). Its tuning \
         raised capacity by one 200-calls/s step at m = {} ({}; equal at 4, 6 and 8) and lowered the drop rate at the \
         baseline's first failing rate by {d_lo:.0}–{d_hi:.0}% and K_rcv by {k_lo:.0}–{k_hi:.0}% (Table III, means of 30 \
         experiments; no significance test reported).</p>\n",
        grouped(base_lo),
        grouped(base_hi),
        pct(base_lo, base_hi),
        grouped(enh_lo),
        grouped(enh_hi),
        pct(enh_lo, enh_hi),
        paper::ENHANCED_HIGHER_AT
            .iter()
            .map(|m| m.to_string())
            .collect::<Vec<_>>()
            .join(" and "),
        gains.join(", "),
    )
}

/// The compact table: a row per server and profile, then the paper's.
fn table(keys: &[&ServerKey], names: &[String], all: &BTreeMap<ServerKey, Server<'_>>) -> String {
    let mut t = CellTable::new([
        "server",
        "profile",
        "m",
        "capacity at smallest m (calls/s)",
        "at largest m (calls/s)",
        "change",
        "Table III vs default (drop rate % lower, 95% interval)",
        "Table III vs server",
    ]);
    for (k, name) in keys.iter().zip(names) {
        let s = &all[*k];
        for (p, by_m) in &s.capacity {
            let (Some((&m_lo, lo)), Some((&m_hi, hi))) =
                (by_m.iter().next(), by_m.iter().next_back())
            else {
                continue;
            };
            let (a, b) = (Capacity::of(lo), Capacity::of(hi));
            let change = match (&a, &b) {
                (Some(a), Some(b)) if m_lo != m_hi => Change::between(a, b).text(),
                _ => String::new(),
            };
            let against = |base: &str| {
                let cells: Vec<String> = s
                    .table_iii
                    .iter()
                    .filter(|x| x.against == base && x.profile == *p)
                    .map(Paired::cell)
                    .collect();
                Cell::text(cells.join("; "))
            };
            t.row(vec![
                Cell::text(name),
                Cell::text(p),
                Cell::text(if m_lo == m_hi {
                    m_lo.to_string()
                } else {
                    format!("{m_lo} → {m_hi}")
                }),
                Cell::Num(a.map_or(String::new(), |c| c.text)),
                Cell::Num(if m_lo == m_hi {
                    String::new()
                } else {
                    b.map_or(String::new(), |c| c.text)
                }),
                Cell::Num(change),
                against("default"),
                against("server"),
            ]);
        }
    }
    let [(m_lo, base_lo, enh_lo), (m_hi, base_hi, enh_hi)] = paper::CAPACITY;
    let (d_lo, d_hi) = paper::TABLE_III_DROP_LOWER;
    for (p, lo, hi, note) in [
        ("server (baseline)", base_lo, base_hi, String::new()),
        (
            "enhanced",
            enh_lo,
            enh_hi,
            format!("{d_lo:.0}–{d_hi:.0}% lower over m = 2–16 (no test)"),
        ),
    ] {
        t.row_class(
            vec![
                Cell::text("OpenSIPS (the paper's, Linux 2.6.32, one core)"),
                Cell::text(p),
                Cell::text(format!("{m_lo} → {m_hi}")),
                Cell::Num(grouped(lo)),
                Cell::Num(grouped(hi)),
                Cell::Num(signed_pct((hi / lo - 1.0) * 100.0)),
                Cell::Empty,
                Cell::text(note),
            ],
            "model",
        );
    }
    t.render()
}

/// The answer from a sweep document.
fn from_sweep(doc: &Document, command: &str) -> String {
    let all = servers(doc);
    let mut out = String::new();
    if all.is_empty() {
        out.push_str(
            "<p class=\"missing\"><strong>No capacity rows:</strong> the scheduler study's document has no capacity \
             per thread count and profile, so it does not answer the question.</p>\n",
        );
        out.push_str(&paper_paragraph());
        return out;
    }
    let keys: Vec<&ServerKey> = all.keys().collect();
    let names = labels(&keys);
    out.push_str(&in_short(&keys, &names, &all));
    out.push_str("<p>Per server on this machine:</p>\n<ul>\n");
    for (k, name) in keys.iter().zip(&names) {
        let _ = writeln!(out, "<li>{}</li>", server_sentences(name, &all[*k]));
    }
    out.push_str("</ul>\n");
    let profiles: BTreeSet<&str> = all
        .values()
        .flat_map(|s| s.capacity.keys().map(String::as_str))
        .collect();
    if !profiles.contains("server") {
        out.push_str(
            "<p>The paper's baseline, <code>server</code>, was not in this sweep \
             (<code>--profile default,server,enhanced</code> adds it).</p>\n",
        );
    }
    out.push_str(&paper_paragraph());
    out.push_str(&table(&keys, &names, &all));
    let _ = write!(
        out,
        "<div class=\"how\"><b>From:</b> <code>{}</code> (the <a href=\"#sweep\">scheduler study</a> below has \
         every row, the method and the conditions). A capacity reads as the search's last passing – first failing \
         grid rate (the capacity lies between them; ≥ or &lt; where the search found only a bound); a change's \
         interval is the range of ratios the two brackets allow. Table III: each profile against the baseline at the \
         baseline's first failing rate, in pairs of trials run back to back with the order swapped every pair; \
         Student's t on the paired differences of drop rate, significant at p &lt; {ALPHA}.",
        esc(command)
    );
    if let Some(why) = disturbance(doc) {
        let _ = write!(
            out,
            "<br><span class=\"warn\">⚠ Disturbed: {}.</span>",
            esc(&why)
        );
    }
    out.push_str("</div>\n");
    out
}

/// What the capacity stage's document can say when there is no sweep:
/// capacity per server at the thread counts it measured.
fn from_capacity(doc: &Document) -> String {
    let mut by: BTreeMap<ServerKey, BTreeMap<u64, &ResultRow>> = BTreeMap::new();
    for r in doc
        .results
        .iter()
        .filter(|r| r.name == "capacity" && r.implementation != "null-relay")
    {
        if let Some(m) = threads(r) {
            by.entry(ServerKey::of(r)).or_default().insert(m, r);
        }
    }
    if by.is_empty() {
        return String::new();
    }
    let keys: Vec<&ServerKey> = by.keys().collect();
    let names = labels(&keys);
    let mut parts = Vec::new();
    let mut several = false;
    for (k, name) in keys.iter().zip(&names) {
        let caps = &by[*k];
        let (Some((&m_lo, lo)), Some((&m_hi, hi))) = (caps.iter().next(), caps.iter().next_back())
        else {
            continue;
        };
        match (Capacity::of(lo), Capacity::of(hi)) {
            (Some(a), Some(b)) if m_lo != m_hi => {
                several = true;
                let c = Change::between(&a, &b);
                parts.push(format!(
                    "{} {} → {} calls/s from m = {m_lo} to {m_hi} ({})",
                    esc(name),
                    esc(&a.text),
                    esc(&b.text),
                    esc(&c.text())
                ));
            }
            (Some(a), _) => parts.push(format!(
                "{} {} calls/s at m = {m_lo}",
                esc(name),
                esc(&a.text)
            )),
            _ => {}
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "<p>The <a href=\"#capacity\">capacity stage</a> of this run, under the default scheduler settings: {}.{}</p>\n",
        parts.join("; "),
        if several {
            ""
        } else {
            " One thread count per server: capacity on this machine, not how it moves with m or the scheduler's settings."
        }
    )
}

/// The answer section's content.
pub(crate) fn render(input: &ReportInput) -> String {
    match input.outcome(Stage::Sweep) {
        Some(Outcome::Measured {
            command, document, ..
        }) => match serde_json::from_value::<Document>(document.clone()) {
            Ok(doc) => from_sweep(&doc, command),
            Err(e) => format!(
                "<p class=\"missing\"><strong>Not readable:</strong> the scheduler study's document is not a takt \
                 result document ({}).</p>\n{}",
                esc(&e.to_string()),
                paper_paragraph()
            ),
        },
        other => {
            let (reason, command) = match other {
                Some(Outcome::NotMeasured { reason, command }) => {
                    (reason.as_str(), command.as_deref())
                }
                _ => ("not in this run's plan", None),
            };
            let mut out = format!(
                "<p class=\"missing\"><strong>Not answered by this run:</strong> it has no scheduler study ({}). \
                 Capacity against the thread count m and the scheduler's profiles is what answers it: \
                 <code>{}</code></p>\n",
                esc(reason),
                esc(command.unwrap_or(SWEEP_COMMAND))
            );
            if let Some(doc) = input
                .document(Stage::Capacity)
                .and_then(|d| serde_json::from_value::<Document>(d.clone()).ok())
            {
                out.push_str(&from_capacity(&doc));
            }
            out.push_str(&paper_paragraph());
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use takt_measure::result::{Better, Bound};

    fn cap(median: f64, first_failing: f64) -> ResultRow {
        let mut r = ResultRow::new(
            "capacity",
            "takt",
            takt_measure::params![("workers", 2)],
            "cps",
            Better::Higher,
            vec![median],
            0.0,
        );
        r.summary.as_mut().unwrap().max = first_failing;
        r
    }

    #[test]
    fn a_change_carries_the_brackets_interval() {
        let a = Capacity::of(&cap(29_000.0, 29_500.0)).unwrap();
        let b = Capacity::of(&cap(28_000.0, 28_400.0)).unwrap();
        assert_eq!(a.text, "29,000–29,500");
        let c = Change::between(&a, &b);
        assert_eq!(c.verb(), "fell");
        // 28,000/29,500 − 1 = −5.1%, 28,400/29,000 − 1 = −2.1%
        assert_eq!(c.text(), "−3% (−5% to −2%)");
        let same = Change::between(&a, &Capacity::of(&cap(29_200.0, 29_700.0)).unwrap());
        assert_eq!(same.verb(), "did not move beyond the searches' resolution");
    }

    #[test]
    fn a_bound_stays_a_bound() {
        let mut r = cap(0.0, 0.0);
        r.summary = None;
        r.bound = Some(Bound::new(BoundKind::Lower, 4_000.0, "generator"));
        let lower = Capacity::of(&r).unwrap();
        assert_eq!(lower.text, "≥ 4,000 (generator)");
        let measured = Capacity::of(&cap(2_000.0, 2_100.0)).unwrap();
        // from ≥ 4,000 to 2,000–2,100: a fall of more than 47%
        let c = Change::between(&lower, &measured);
        assert_eq!(c.point, None);
        assert_eq!(c.verb(), "fell");
        assert_eq!(c.text(), "a fall of more than 47%");
        // from 2,000–2,100 to ≥ 1,000: not resolved
        r.bound = Some(Bound::new(BoundKind::Lower, 1_000.0, "generator"));
        let c = Change::between(&measured, &Capacity::of(&r).unwrap());
        assert_eq!(c.text(), "not resolved (a bound on one side)");
    }

    #[test]
    fn the_papers_figures_read_as_the_paper_has_them() {
        let p = paper_paragraph();
        assert!(p.contains("from 2,200 to 1,200 calls/s"), "{p}");
        assert!(p.contains("(−45%)"), "{p}");
        assert!(
            p.contains("from 2,400 to 1,400 in its enhanced mode (−42%"),
            "{p}"
        );
        assert!(p.contains("+9% at m = 2, +17% at m = 16"), "{p}");
        assert!(p.contains("by 26–41%"), "{p}");
    }
}
