//! The SVG plots of a sweep (and a tune), written beside its document in
//! the output directory: capacity versus m with the paper's published
//! capacities and the generator's ceilings, and per profile drop rate,
//! K_rcv and T_sip versus the offered load — on takt-measure's one chart
//! model.

use std::path::Path;

use takt_measure::chart::{Axis, Chart};

use super::{paper, CaseOutcome, PointExtra, SweepOutcome};
use crate::error::{io, Result};

/// One curve before it becomes a chart series: its label, its points,
/// whether it is drawn dashed (published figures, ceilings).
#[derive(Debug, Clone)]
struct Series {
    label: String,
    points: Vec<(f64, f64)>,
    dashed: bool,
}

/// An axis's scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scale {
    Linear,
    Log,
}

/// A chart of `series` against the offered load or m.
fn chart(x_desc: &str, y_desc: &str, y_scale: Scale, series: Vec<Series>) -> Chart {
    let y = match y_scale {
        Scale::Linear => Axis::linear(y_desc),
        Scale::Log => Axis::log(y_desc),
    };
    let mut c = Chart::new(Axis::linear(x_desc), y);
    for s in series {
        let mut se = takt_measure::chart::Series::new(s.label, s.points);
        if s.dashed {
            se = se.dashed();
        }
        c = c.series(se);
    }
    c
}

/// The paper's published capacities versus m, dashed.
fn paper_series() -> Vec<Series> {
    [
        ("paper baseline (OpenSIPS, CFS)", 0usize),
        ("paper enhanced", 1),
    ]
    .into_iter()
    .map(|(label, pick)| Series {
        label: label.into(),
        points: paper::ENHANCED_GRANULARITY_US
            .iter()
            .filter_map(|(m, _)| {
                let (b, e) = paper::capacity(*m)?;
                Some((*m as f64, if pick == 0 { b } else { e }))
            })
            .collect(),
        dashed: true,
    })
    .collect()
}

/// Capacity versus m for every server and profile in one chart (see
/// [`write_plots`]).
fn capacity_chart(s: &SweepOutcome) -> Chart {
    let servers: Vec<_> = s.cases.iter().filter(|c| !c.key.is_ceiling()).collect();
    let mut series: Vec<(Series, usize)> = Vec::new();
    for c in &servers {
        let label = if servers.iter().any(|o| {
            o.key.target == c.key.target && (o.key.mode, o.key.model) != (c.key.mode, c.key.model)
        }) {
            format!(
                "{} {} {} {}",
                c.key.target, c.key.mode, c.key.model, c.key.profile
            )
        } else {
            format!("{} {}", c.key.target, c.key.profile)
        };
        // a bound ("≥ L", "< L") is not a point of the curve: the series
        // says how many it left out
        let point = measured_cps(c).map(|cps| (c.key.workers as f64, cps));
        let bounded = usize::from(c.result.capacity.is_some() && point.is_none());
        match series.iter_mut().find(|se| se.0.label == label) {
            Some(se) => {
                se.0.points.extend(point);
                se.1 += bounded;
            }
            None => series.push((
                Series {
                    label,
                    points: point.into_iter().collect(),
                    dashed: false,
                },
                bounded,
            )),
        }
    }
    let mut series: Vec<Series> = series
        .into_iter()
        .map(|(mut se, bounded)| {
            if bounded > 0 {
                se.label = format!("{} ({bounded} bound(s) not drawn)", se.label);
            }
            se
        })
        .collect();
    let ms: Vec<f64> = servers.iter().map(|c| c.key.workers as f64).collect();
    let (lo, hi) = ms.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), m| {
        (lo.min(*m), hi.max(*m))
    });
    for c in s.cases.iter().filter(|c| c.key.is_ceiling()) {
        if let (Some(cap), true) = (c.result.capacity, lo <= hi) {
            series.push(Series {
                label: format!("generator ceiling, {}", c.key.profile),
                points: vec![(lo, cap.cps()), (hi, cap.cps())],
                dashed: true,
            });
        }
    }
    capacity_vs_m_chart(series)
}

/// A case's measured capacity; `None` for a bound ("≥ L", "< L"), which a
/// chart never draws as a value, or an unfinished search.
fn measured_cps(c: &CaseOutcome) -> Option<f64> {
    match c.result.capacity? {
        crate::search::Capacity::Measured { cps, .. } => Some(cps),
        _ => None,
    }
}

/// The capacity-versus-m chart of `series`, with the paper's series beside
/// them, every series in order of m.
fn capacity_vs_m_chart(mut series: Vec<Series>) -> Chart {
    series.extend(paper_series());
    for se in &mut series {
        se.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    chart(
        "worker threads m",
        "1%-drop capacity (calls/s)",
        Scale::Linear,
        series,
    )
}

fn file_name(parts: &[&str]) -> String {
    let s: Vec<String> = parts
        .iter()
        .map(|p| {
            p.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect()
        })
        .collect();
    format!("{}.svg", s.join("-"))
}

/// Writes `chart` as `dir/name`; a chart without a drawable point is left
/// out. Returns how many files were written.
fn save(dir: &Path, name: String, chart: &Chart) -> Result<usize> {
    let Ok(svg) = chart.to_svg() else {
        return Ok(0);
    };
    let path = dir.join(name);
    std::fs::write(&path, svg).map_err(io(format!("writing {}", path.display())))?;
    Ok(1)
}

/// `capacity_vs_m.svg`: capacity versus m, one curve per (target,
/// profile) of every server, the paper's published capacities dashed and
/// each generator ceiling as a dashed level; then per (target, mode,
/// model) the same with its profiles only, and per profile drop rate,
/// K_rcv and T_sip versus cps over every counted trial, one curve per m
/// (for a ceiling, the null relay, the drop rate only). Returns how many
/// files were written.
pub fn write_plots(s: &SweepOutcome, dir: &Path) -> Result<usize> {
    let mut n = save(dir, "capacity_vs_m.svg".into(), &capacity_chart(s))?;
    let mut groups: Vec<(&str, &str, &str)> = Vec::new();
    for c in &s.cases {
        let g = (c.key.target, c.key.mode, c.key.model);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    for g in groups {
        let cases: Vec<_> = s
            .cases
            .iter()
            .filter(|c| (c.key.target, c.key.mode, c.key.model) == g)
            .collect();
        let mut profiles: Vec<&str> = Vec::new();
        for c in &cases {
            if !profiles.contains(&c.key.profile.as_str()) {
                profiles.push(&c.key.profile);
            }
        }
        let series: Vec<Series> = profiles
            .iter()
            .map(|p| Series {
                label: format!("{} {p}", g.0),
                points: cases
                    .iter()
                    .filter(|c| c.key.profile == *p)
                    .filter_map(|c| Some((c.key.workers as f64, measured_cps(c)?)))
                    .collect(),
                dashed: false,
            })
            .collect();
        let ceiling = cases.iter().any(|c| c.key.is_ceiling());
        n += if ceiling {
            0
        } else {
            save(
                dir,
                file_name(&["capacity-vs-m", g.0, g.1, g.2]),
                &capacity_vs_m_chart(series),
            )?
        };
        for p in &profiles {
            let of_p: Vec<_> = cases.iter().filter(|c| c.key.profile == *p).collect();
            let per_m = |f: &dyn Fn(&CaseOutcome) -> Vec<(f64, f64)>| {
                of_p.iter()
                    .map(|c| Series {
                        label: format!("m = {}", c.key.workers),
                        points: f(c),
                        dashed: false,
                    })
                    .collect::<Vec<_>>()
            };
            // per trial (all phases): the curves over the whole range
            let trials = |c: &CaseOutcome, f: &dyn Fn(&PointExtra) -> Option<f64>| {
                let mut v: Vec<(f64, f64)> = c
                    .result
                    .trials
                    .iter()
                    .zip(&c.extras)
                    .filter(|(t, _)| !t.rerun)
                    .filter_map(|(t, e)| Some((t.rate_cps, f(e)?)))
                    .collect();
                v.sort_by(|a, b| a.0.total_cmp(&b.0));
                v
            };
            let drop = per_m(&|c| {
                let mut v: Vec<(f64, f64)> = c
                    .result
                    .trials
                    .iter()
                    .filter(|t| !t.rerun && t.outcome.sent > 0)
                    .map(|t| (t.rate_cps, t.outcome.drop_rate()))
                    .collect();
                v.sort_by(|a, b| a.0.total_cmp(&b.0));
                v
            });
            let k = per_m(&|c| trials(c, &|e| e.k_rcv_us.or(e.k_rcv_est_us)));
            let t = per_m(&|c| trials(c, &|e| e.t_sip_us));
            let est = g.0 != "takt";
            for (what, y, series, scale) in [
                ("drop", "drop rate (lost / sent)", drop, Scale::Linear),
                (
                    "k_rcv",
                    if est {
                        "K_rcv (µs, Little's-law estimate)"
                    } else {
                        "K_rcv (µs)"
                    },
                    k,
                    Scale::Log,
                ),
                ("t_sip", "T_sip (µs)", t, Scale::Linear),
            ] {
                if ceiling && what != "drop" {
                    continue;
                }
                n += save(
                    dir,
                    file_name(&[what, g.0, g.1, g.2, p]),
                    &chart("offered load (calls/s)", y, scale, series),
                )?;
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_file_names_are_plain() {
        assert_eq!(
            file_name(&["drop", "takt", "stateful", "shared", "other:slice=1ms"]),
            "drop-takt-stateful-shared-other-slice-1ms.svg"
        );
    }

    /// A bound is left out of the capacity curve and counted in its label.
    #[test]
    fn bounds_are_not_drawn_as_capacities() {
        use crate::search::{Capacity, Limit};
        use crate::sweep::fixture::case;
        let with = |m: usize, cap| {
            let mut c = case("default", "other", 1.0);
            c.key.target = "takt";
            c.key.workers = m;
            c.result.capacity = cap;
            c
        };
        let mut s = crate::sweep::fixture::outcome(&[(0.02, 0.01)], 2_000.0);
        s.cases = vec![
            with(
                2,
                Some(Capacity::AtLeast {
                    cps: 24_100.0,
                    limit: Limit::Generator,
                }),
            ),
            with(
                16,
                Some(Capacity::Measured {
                    cps: 18_000.0,
                    first_failing_cps: 18_540.0,
                }),
            ),
        ];
        assert_eq!(measured_cps(&s.cases[0]), None);
        assert_eq!(measured_cps(&s.cases[1]), Some(18_000.0));
        let svg = capacity_chart(&s).to_svg().unwrap();
        assert!(svg.contains("takt default (1 bound(s) not drawn)"), "{svg}");
    }
}
