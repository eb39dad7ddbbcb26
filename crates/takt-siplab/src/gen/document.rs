//! A run as a result document (`takt sip gen --json`) and as a summary
//! for people.

use std::fmt::Write as _;

use serde_json::{json, Map, Value};
use takt_measure::result::{Better, Document, DocumentBuilder, ResultRow};
use takt_measure::table::Table;

use super::report::{ByKind, GenReport, Percentiles};

impl GenReport {
    /// The parameters every row of its document carries.
    fn params(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("role".into(), json!(self.role.name()));
        m.insert("cps".into(), json!(self.cps));
        m.insert("arrivals".into(), json!(self.arrivals.name()));
        m.insert("transport".into(), json!(self.transport));
        if self.transport == "tcp" {
            m.insert("connections".into(), json!(self.connections));
        } else {
            m.insert("ports".into(), json!(self.ports));
        }
        m.insert("hold_ms".into(), json!(self.hold_ms));
        m.insert("retransmit".into(), json!(self.retransmit));
        m
    }

    /// The run as a result document (suite `sip_gen`): rows
    /// `achieved_cps`, `calls_completed`, `calls_failed`,
    /// `invite_to_180`/`invite_to_200` (ms, median; percentiles in
    /// `detail`), `send_lag_p99` (µs) and `cpu_per_call` (µs) as the run
    /// has them; the whole report in the first row's `detail.report`.
    pub fn to_document(&self) -> Document {
        let mut b = DocumentBuilder::start("sip_gen");
        let cpu_s: f64 = self.uac.iter().map(|u| u.thread.cpu_s).sum::<f64>()
            + self.uas.iter().map(|u| u.thread.cpu_s).sum::<f64>();
        let row = |name: &str, unit: &str, better: Better, v: f64| {
            ResultRow::new(name, "takt", self.params(), unit, better, vec![v], cpu_s)
        };
        let pct = |p: &Percentiles| -> Map<String, Value> {
            match serde_json::to_value(p) {
                Ok(Value::Object(m)) => m,
                _ => Map::new(),
            }
        };
        let mut first = Map::new();
        first.insert(
            "report".into(),
            serde_json::to_value(self).unwrap_or(Value::Null),
        );
        if let Some(u) = &self.uac {
            b.push(
                row("achieved_cps", "cps", Better::Higher, self.achieved_cps).with_detail(first),
            );
            b.push(row(
                "calls_completed",
                "calls",
                Better::Higher,
                u.completed as f64,
            ));
            let mut d = Map::new();
            d.insert("by_class".into(), json!(u.failures));
            d.insert("unfinished".into(), json!(u.unfinished));
            b.push(row("calls_failed", "calls", Better::Lower, u.failed as f64).with_detail(d));
            if u.invite_to_180_ms.count > 0 {
                b.push(
                    row("invite_to_180", "ms", Better::Lower, u.invite_to_180_ms.p50)
                        .with_detail(pct(&u.invite_to_180_ms)),
                );
            }
            if u.invite_to_200_ms.count > 0 {
                b.push(
                    row("invite_to_200", "ms", Better::Lower, u.invite_to_200_ms.p50)
                        .with_detail(pct(&u.invite_to_200_ms)),
                );
            }
            b.push(
                row("send_lag_p99", "us", Better::Lower, u.send_lag_us.p99)
                    .with_detail(pct(&u.send_lag_us)),
            );
        } else if let Some(s) = &self.uas {
            b.push(
                row("calls_answered", "calls", Better::Higher, s.answered as f64)
                    .with_detail(first),
            );
        }
        if let Some(c) = self.cpu_us_per_call {
            b.push(row("cpu_per_call", "us", Better::Lower, c));
        }
        if self.saturation.generator_bound {
            b.note(format!(
                "generator-bound: {}",
                self.saturation.reasons.join("; ")
            ));
        }
        b.finish()
    }

    /// A report of a run in `role` over `transport` (`udp`, `tcp`) with
    /// every figure set: a synthetic input of the document-shape snapshot
    /// test (here and in the torture scenarios' rows).
    pub(crate) fn synthetic(role: super::Role, transport: &'static str) -> GenReport {
        use super::report::{Saturation, UacReport, UasReport};
        let p = Percentiles {
            count: 10,
            mean: 1.0,
            p50: 1.0,
            p90: 2.0,
            p99: 3.0,
            p999: 3.5,
            max: 4.0,
        };
        let uac = UacReport {
            attempted: 100,
            completed: 99,
            failed: 1,
            unfinished: 0,
            failures: Default::default(),
            failure_codes: Default::default(),
            sent: ByKind::new(),
            received: ByKind::new(),
            retransmitted: ByKind::new(),
            invite_to_180_ms: p,
            invite_to_200_ms: p,
            send_lag_us: p,
            late_calls: 0,
            stray: 0,
            malformed: 0,
            unexpected: 0,
            sockets: Default::default(),
            thread: Default::default(),
            histograms: Default::default(),
        };
        let uas = UasReport {
            answered: 100,
            sent: ByKind::new(),
            received: ByKind::new(),
            retransmitted: ByKind::new(),
            full: 0,
            ack_timeouts: 0,
            bye_before_ack: 0,
            awaiting_ack: 0,
            stray: 0,
            malformed: 0,
            unexpected: 0,
            sockets: Default::default(),
            thread: Default::default(),
            by_run: Default::default(),
        };
        GenReport {
            role,
            cps: 100.0,
            arrivals: super::Arrivals::Poisson,
            seed: 1,
            hold_ms: 0.0,
            transport,
            ports: 1,
            connections: 1,
            retransmit: true,
            proxy: "127.0.0.1:5060".into(),
            uas_addr: "127.0.0.1:5070".into(),
            request_uri: Some("sip:service@127.0.0.1:5070".into()),
            route: None,
            send_s: 1.0,
            window_s: 1.0,
            achieved_cps: 100.0,
            wall_s: 1.0,
            cancelled: false,
            uac: role.has_uac().then_some(uac),
            uas: (role != super::Role::Uac).then_some(uas),
            saturation: Saturation::default(),
            cpu_us_per_call: Some(10.0),
            busy_us_per_call: Some(5.0),
        }
    }

    /// Every kind of row a `sip_gen` document can hold (UAC or both, UAS
    /// only; UDP and TCP), built by [`GenReport::to_document`] from
    /// synthetic reports: the input of the document-shape snapshot test.
    /// Runs nothing.
    #[doc(hidden)]
    pub fn synthetic_rows() -> Vec<ResultRow> {
        [
            (super::Role::Both, "udp"),
            (super::Role::Uac, "tcp"),
            (super::Role::Uas, "udp"),
        ]
        .into_iter()
        .flat_map(|(role, transport)| GenReport::synthetic(role, transport).to_document().results)
        .collect()
    }

    /// A summary for people: calls and outcomes, messages per kind on
    /// each side, times, the generator's own health.
    pub fn summary(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{} arrivals at {} cps ({}), hold {} ms, {} {}, retransmissions {}",
            self.arrivals.name(),
            self.cps,
            self.role.name(),
            self.hold_ms,
            if self.transport == "tcp" {
                self.connections
            } else {
                self.ports
            },
            if self.transport == "tcp" {
                "TCP connections"
            } else {
                "UDP ports"
            },
            if self.retransmit { "on" } else { "off" }
        );
        if let Some(u) = &self.uac {
            let _ = writeln!(
                o,
                "calls: {} placed over {:.2} s ({:.0}/s), {} completed, {} failed, {} unfinished",
                u.attempted, self.window_s, self.achieved_cps, u.completed, u.failed, u.unfinished
            );
            if !u.failures.is_empty() {
                let f: Vec<String> = u.failures.iter().map(|(k, v)| format!("{k} {v}")).collect();
                let _ = writeln!(o, "failures: {}", f.join(", "));
            }
            let mut times = Table::new()
                .text("")
                .number("p50")
                .number("p90")
                .number("p99")
                .number("max")
                .text("unit");
            for (name, unit, p) in [
                ("INVITE→180", "ms", &u.invite_to_180_ms),
                ("INVITE→200", "ms", &u.invite_to_200_ms),
                ("send lag", "µs", &u.send_lag_us),
            ] {
                let f = |v: f64| format!("{v:.3}");
                times.push(vec![
                    name.into(),
                    f(p.p50),
                    f(p.p90),
                    f(p.p99),
                    f(p.max),
                    unit.into(),
                ]);
            }
            o.push_str(&times.render());
            let _ = writeln!(o, "late calls: {}", u.late_calls);
        }
        if let Some(s) = &self.uas {
            let _ = writeln!(
                o,
                "UAS: {} answered, {} refused (table full), {} ACK timeouts, {} BYEs before their ACK",
                s.answered, s.full, s.ack_timeouts, s.bye_before_ack
            );
        }
        // messages per kind, both sides
        let kinds = [
            "invite", "100", "180", "200", "ack", "bye", "200bye", "failure", "other",
        ];
        let empty = ByKind::new();
        let (cs, cr, cx) = self.uac.as_ref().map_or((&empty, &empty, &empty), |u| {
            (&u.sent, &u.received, &u.retransmitted)
        });
        let (ss, sr, sx) = self.uas.as_ref().map_or((&empty, &empty, &empty), |u| {
            (&u.sent, &u.received, &u.retransmitted)
        });
        let mut messages = Table::new()
            .text("kind")
            .number("uac sent")
            .number("uac recv")
            .number("uac rtx")
            .number("uas sent")
            .number("uas recv")
            .number("uas rtx");
        for k in kinds {
            let g = |m: &ByKind| m.get(k).copied().unwrap_or(0);
            let row = [g(cs), g(cr), g(cx), g(ss), g(sr), g(sx)];
            if row.iter().all(|&v| v == 0) {
                continue;
            }
            let mut cells = vec![k.to_string()];
            cells.extend(row.iter().map(u64::to_string));
            messages.push(cells);
        }
        o.push('\n');
        o.push_str(&messages.render());
        o.push('\n');
        let threads = self
            .uac
            .iter()
            .map(|u| (&u.thread, &u.sockets))
            .chain(self.uas.iter().map(|u| (&u.thread, &u.sockets)));
        for (t, s) in threads {
            let drops = s
                .drops
                .map_or_else(|| "n/a (TCP)".to_string(), |d| d.to_string());
            let _ = write!(
                o,
                "{:<8} cpus [{}]  cpu {:.3} s  idle {:.1}%  socket drops {}  send failures {}",
                t.name,
                t.cpus,
                t.cpu_s,
                t.idle_fraction * 100.0,
                drops,
                s.send_full + s.send_errors
            );
            if s.connections > 0 {
                let _ = write!(
                    o,
                    "  connections {} ({} closed during the run, {} unframable)",
                    s.connections, s.closed, s.unframed
                );
            }
            o.push('\n');
        }
        if let (Some(c), Some(b)) = (self.cpu_us_per_call, self.busy_us_per_call) {
            let _ = writeln!(
                o,
                "generator per call: CPU {c:.1} µs (spinning included), busy {b:.1} µs"
            );
        }
        if self.saturation.generator_bound {
            let _ = writeln!(o, "GENERATOR-BOUND: {}", self.saturation.reasons.join("; "));
        } else {
            let _ = writeln!(o, "the generator kept up (not generator-bound)");
        }
        o
    }
}
