//! Why nothing reached the UAS: the diagnosis that ends a capacity run
//! against a server that does not forward the generator's calls.
//!
//! A trial in which the UAC sent INVITEs and the UAS received no request
//! at all says nothing about the server's capacity — it says the server
//! does not forward to the generator's UAS (it routes the Request-URI
//! elsewhere, forwards to a fixed address that is not the UAS, refuses
//! the calls, or is not there). Read as a drop rate of 1.0 it would end
//! the search at its lowest rate as a capacity "< 50"; instead the run
//! ends with a [`UasDiagnosis`]: where the UAS listened, what the calls
//! named, and what came back to the UAC. A 503 among the answers is a
//! server shedding load it cannot take, not one that forwards nowhere: a
//! trial refused that way stays a measurement (the search ramps down).

use std::collections::BTreeMap;
use std::fmt;

use crate::gen::GenReport;

/// What one trial in which nothing reached the UAS saw (see the module
/// docs); its `Display` is the diagnosis.
#[derive(Debug, Clone, PartialEq)]
pub struct UasDiagnosis {
    /// Where the UAC sent (the server under test).
    pub proxy: String,
    /// Where the UAS listened.
    pub uas: String,
    /// The calls' Request-URI.
    pub request_uri: String,
    /// The preloaded Route, if any.
    pub route: Option<String>,
    /// The trial's rate, calls/s.
    pub rate_cps: f64,
    /// INVITEs the UAC sent.
    pub invites: u64,
    /// What came back to the UAC: responses by status (`100`, `180`,
    /// `200`, and each failure code) and anything else by kind.
    pub came_back: BTreeMap<String, u64>,
}

impl UasDiagnosis {
    /// The diagnosis of a trial at `rate_cps` whose report `r` shows the
    /// UAC's INVITEs and no request at the UAS; `None` when a request
    /// reached the UAS, no INVITE left, a 503 came back (overload, see
    /// the module docs), or a side did not run.
    pub fn of(r: &GenReport, rate_cps: f64) -> Option<UasDiagnosis> {
        let (uac, uas) = (r.uac.as_ref()?, r.uas.as_ref()?);
        let invites = uac.sent.get("invite").copied().unwrap_or(0);
        let reached: u64 = ["invite", "ack", "bye", "other"]
            .iter()
            .filter_map(|k| uas.received.get(*k))
            .sum();
        if invites == 0 || reached > 0 || uac.failure_codes.contains_key(&503) {
            return None;
        }
        let mut came_back: BTreeMap<String, u64> = uac
            .received
            .iter()
            .filter(|(k, _)| **k != "failure")
            .map(|(k, &n)| (k.to_string(), n))
            .collect();
        for (code, &n) in &uac.failure_codes {
            came_back.insert(code.to_string(), n);
        }
        came_back.retain(|_, n| *n > 0);
        Some(UasDiagnosis {
            proxy: r.proxy.clone(),
            uas: r.uas_addr.clone(),
            request_uri: r.request_uri.clone().unwrap_or_default(),
            route: r.route.clone(),
            rate_cps,
            invites,
            came_back,
        })
    }
}

impl fmt::Display for UasDiagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "nothing reached the UAS: {} INVITE(s) went to {} at {:.0} calls/s with Request-URI {}",
            self.invites, self.proxy, self.rate_cps, self.request_uri
        )?;
        if let Some(r) = &self.route {
            write!(f, " and Route {r}")?;
        }
        write!(
            f,
            ", and the UAS listening on {} received no request; ",
            self.uas
        )?;
        if self.came_back.is_empty() {
            write!(
                f,
                "nothing came back to the UAC (is a SIP server listening at {}, and does it forward?)",
                self.proxy
            )?;
        } else {
            let got: Vec<String> = self
                .came_back
                .iter()
                .map(|(k, n)| format!("{n} × {k}"))
                .collect();
            write!(f, "the UAC got back {}", got.join(", "))?;
            let failures = self
                .came_back
                .keys()
                .any(|k| k.parse::<u16>().is_ok_and(|c| c >= 300));
            if failures {
                write!(f, " (the server refused or could not route the calls)")?;
            }
        }
        write!(
            f,
            ". The server must forward to {}: a proxy routing on the Request-URI reaches it as it is; one with a fixed next hop needs --uas set to that address; one that forwards only routed requests needs --route-preload",
            self.uas
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::ByKind;

    fn report(sent: &[(&'static str, u64)], back: &[(&'static str, u64)]) -> GenReport {
        let mut r = GenReport::synthetic(crate::gen::Role::Both, "udp");
        r.proxy = "127.0.0.1:29070".into();
        r.uas_addr = "127.0.0.1:17342".into();
        r.request_uri = Some("sip:service@127.0.0.1:17342".into());
        let uac = r.uac.as_mut().unwrap();
        uac.sent = sent.iter().copied().collect::<ByKind>();
        uac.received = back.iter().copied().collect::<ByKind>();
        r.uas.as_mut().unwrap().received = ByKind::new();
        r
    }

    #[test]
    fn silence_names_the_uas_the_request_uri_and_that_nothing_came_back() {
        let r = report(&[("invite", 300), ("ack", 0)], &[]);
        let d = UasDiagnosis::of(&r, 300.0).unwrap();
        assert_eq!(
            d.to_string(),
            "nothing reached the UAS: 300 INVITE(s) went to 127.0.0.1:29070 at 300 calls/s with \
             Request-URI sip:service@127.0.0.1:17342, and the UAS listening on 127.0.0.1:17342 \
             received no request; nothing came back to the UAC (is a SIP server listening at \
             127.0.0.1:29070, and does it forward?). The server must forward to 127.0.0.1:17342: \
             a proxy routing on the Request-URI reaches it as it is; one with a fixed next hop \
             needs --uas set to that address; one that forwards only routed requests needs \
             --route-preload"
        );
    }

    #[test]
    fn responses_are_counted_by_status_code() {
        let mut r = report(&[("invite", 120)], &[("100", 120), ("failure", 120)]);
        let uac = r.uac.as_mut().unwrap();
        uac.failure_codes = [(404, 100), (483, 20)].into_iter().collect();
        r.route = Some("<sip:127.0.0.1:29070;lr>".into());
        let text = UasDiagnosis::of(&r, 50.0).unwrap().to_string();
        assert!(
            text.contains(
                "with Request-URI sip:service@127.0.0.1:17342 and Route <sip:127.0.0.1:29070;lr>,"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "the UAC got back 120 × 100, 100 × 404, 20 × 483 (the server refused or could not route the calls)"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_trial_whose_requests_reached_the_uas_has_no_diagnosis() {
        let mut r = report(&[("invite", 10)], &[]);
        r.uas.as_mut().unwrap().received = [("invite", 1)].into_iter().collect();
        assert_eq!(UasDiagnosis::of(&r, 10.0), None);
        // no INVITE left: nothing to diagnose
        let r = report(&[], &[]);
        assert_eq!(UasDiagnosis::of(&r, 10.0), None);
        // refused as overload: a measurement, not a misrouting
        let mut r = report(&[("invite", 10)], &[("failure", 10)]);
        r.uac.as_mut().unwrap().failure_codes = [(503, 10)].into_iter().collect();
        assert_eq!(UasDiagnosis::of(&r, 10.0), None);
    }
}
