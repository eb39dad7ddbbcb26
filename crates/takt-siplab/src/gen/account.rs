//! What the server under test lost of a trial's messages: the per-kind
//! account the capacity search's drop rate is made of.
//!
//! Retransmissions off, every message is sent once, so the counts per
//! kind compare one to one: requests (INVITE, ACK, BYE) the UAC sent
//! against those the UAS received, responses the UAS sent (180, 200, the
//! BYE's 200, failures) against those the UAC received. What one side
//! sent and the other never received is lost at the server — with one
//! exception RFC 3261 makes.
//!
//! # A provisional response after the final one
//! The UAS sends each call's 180 and 200 back to back. A server whose
//! workers take messages from one socket in parallel (OpenSIPS's and
//! Kamailio's processes) can finish the 200 before the 180. A stateless
//! proxy forwards the 180 anyway, and the UAC counts it, late. A
//! transaction-stateful proxy must not: once a final response has been
//! sent on the server transaction, only further 2xx to the INVITE are
//! forwarded (§16.7 step 5; §17.2.1: the transaction has left the states
//! a provisional response can be sent in). OpenSIPS's and Kamailio's tm
//! discard it ("too late messages will be discarded") and count it in
//! their `drop_replies` statistic. Such a 180 is owed to nobody: counting
//! it lost made the two servers lose a steady 1–30% of calls' 180s at any
//! rate, 50 calls/s included, and read as capacities "< 50".
//!
//! The UAC sees which calls' 200 came before any 180 (its INVITE→180
//! and INVITE→200 counts) and how many 180s came after their 200. So for
//! a stateful server, of the 180s the UAC never received, at most
//! `answered − rang_first − late_180` — calls whose 200 came first and
//! whose 180 never came at all — are *absorbed*, not lost. That bound is
//! conservative: a call whose 180 came but whose 200 was lost lowers it
//! (the 200 counts as lost). What it cannot tell apart is a 180 the
//! server dropped on a call whose 200 it then forwarded; a server that
//! drops on overload drops the other five kinds too, and those stay
//! losses.
//!
//! # Answers to the server's own retransmissions
//! A stateful server whose UAS side waits past T1 (500 ms) — on CPUs it
//! shares with a real-time generator, a worker can — retransmits the
//! INVITE or BYE itself (Timers A and E), and the UAS answers each copy.
//! The client transaction absorbs a repeated final response to a BYE
//! (§17.1.2.2) and the copy's 180 comes after the 200. So the UAS's
//! answers are excused up to the requests it received beyond those the
//! UAC sent: 180s and 200s per extra INVITE, BYE 200s per extra BYE.
//! Every other kind, and every kind of a stateless server, counts as
//! before.

use super::{ByKind, GenReport};

/// Request kinds the UAC sends and the UAS receives.
const REQUESTS: [&str; 3] = ["invite", "ack", "bye"];

/// The counts an [`Account`] compares: one UAC's and one UAS's (or the
/// sums of a fleet's).
#[derive(Debug, Clone, Copy)]
pub struct Counts<'a> {
    /// Messages the UAC sent, by kind.
    pub uac_sent: &'a ByKind,
    /// Messages the UAC received, by kind.
    pub uac_received: &'a ByKind,
    /// Messages the UAS sent, by kind.
    pub uas_sent: &'a ByKind,
    /// Messages the UAS received, by kind.
    pub uas_received: &'a ByKind,
    /// Calls whose first 180 reached the UAC before their 200 (the
    /// count of its INVITE→180 times).
    pub rang_first: u64,
    /// Calls whose 200 reached the UAC (the count of its INVITE→200
    /// times).
    pub answered: u64,
}

impl<'a> Counts<'a> {
    /// The counts of a run with both sides (`None` without).
    pub fn of(r: &'a GenReport) -> Option<Counts<'a>> {
        let (uac, uas) = (r.uac.as_ref()?, r.uas.as_ref()?);
        Some(Counts {
            uac_sent: &uac.sent,
            uac_received: &uac.received,
            uas_sent: &uas.sent,
            uas_received: &uas.received,
            rang_first: uac.invite_to_180_ms.count,
            answered: uac.invite_to_200_ms.count,
        })
    }
}

/// A trial's messages at the server (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Account {
    /// Messages both sides sent to the server.
    pub sent_to_server: u64,
    /// Of those, lost at the server.
    pub lost: u64,
    /// The lost ones by kind (kinds with none left out).
    pub lost_by_kind: ByKind,
    /// Responses a transaction-stateful server absorbed (not in
    /// `lost`): 180s its call's 200 had passed, and the UAS's answers to
    /// requests the server itself retransmitted.
    pub absorbed: u64,
}

impl Account {
    /// The account of `c`; `stateful`: the server is transaction-stateful
    /// (may absorb a 180 its 200 overtook).
    pub fn of(c: &Counts<'_>, stateful: bool) -> Account {
        let get = |m: &ByKind, k: &str| m.get(k).copied().unwrap_or(0);
        let mut a = Account {
            sent_to_server: c.uac_sent.values().sum::<u64>() + c.uas_sent.values().sum::<u64>(),
            ..Account::default()
        };
        let mut missing = Vec::new();
        for k in REQUESTS {
            missing.push((k, get(c.uac_sent, k).saturating_sub(get(c.uas_received, k))));
        }
        // requests the UAS got beyond those the UAC sent: the server's
        // own retransmissions (Timers A and E)
        let extra = |k: &str| get(c.uas_received, k).saturating_sub(get(c.uac_sent, k));
        for (&k, &n) in c.uas_sent {
            let mut m = n.saturating_sub(get(c.uac_received, k));
            if stateful {
                let excusable = match k {
                    "180" => {
                        let late = get(c.uac_received, k).saturating_sub(c.rang_first);
                        c.answered.saturating_sub(c.rang_first).saturating_sub(late)
                            + extra("invite")
                    }
                    "200" => extra("invite"),
                    "200bye" => extra("bye"),
                    _ => 0,
                };
                let absorbed = m.min(excusable);
                a.absorbed += absorbed;
                m -= absorbed;
            }
            missing.push((k, m));
        }
        for (k, m) in missing {
            if m > 0 {
                a.lost += m;
                *a.lost_by_kind.entry(k).or_insert(0) += m;
            }
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(v: &[(&'static str, u64)]) -> ByKind {
        v.iter().copied().filter(|&(_, n)| n > 0).collect()
    }

    /// `calls` calls through a server: `overtaken` of them had their 200
    /// pass their 180 at the server, `late` of those 180s still forwarded
    /// (after the 200), and `dropped` messages of each kind listed lost.
    /// Returns the account, stateful and stateless.
    fn trial(
        calls: u64,
        overtaken: u64,
        late: u64,
        dropped: &[(&'static str, u64)],
    ) -> [Account; 2] {
        let drop = |k: &str| dropped.iter().find(|d| d.0 == k).map_or(0, |d| d.1);
        let uac_sent = kinds(&[("invite", calls), ("ack", calls), ("bye", calls)]);
        let uas_sent = kinds(&[("180", calls), ("200", calls), ("200bye", calls)]);
        let uas_received = kinds(&[
            ("invite", calls - drop("invite")),
            ("ack", calls - drop("ack")),
            ("bye", calls - drop("bye")),
        ]);
        // the dropped 180s and 200s belong to calls not overtaken
        let on_time_180 = calls - overtaken - drop("180");
        let uac_received = kinds(&[
            ("100", calls),
            ("180", on_time_180 + late),
            ("200", calls - drop("200")),
            ("200bye", calls - drop("200bye")),
        ]);
        // a call whose 180 came before its lost 200 still rang first
        let counts = Counts {
            uac_sent: &uac_sent,
            uac_received: &uac_received,
            uas_sent: &uas_sent,
            uas_received: &uas_received,
            rang_first: on_time_180,
            answered: calls - drop("200"),
        };
        [Account::of(&counts, true), Account::of(&counts, false)]
    }

    #[test]
    fn a_180_its_200_overtook_is_absorbed_by_a_stateful_proxy_only() {
        // 100 calls, 30 answered before their 180, none forwarded late
        let [stateful, stateless] = trial(100, 30, 0, &[]);
        assert_eq!(
            (stateful.lost, stateful.absorbed, stateful.sent_to_server),
            (0, 30, 600)
        );
        assert!(stateful.lost_by_kind.is_empty());
        // a stateless proxy forwards every 180: a missing one is lost
        assert_eq!((stateless.lost, stateless.absorbed), (30, 0));
        assert_eq!(stateless.lost_by_kind, kinds(&[("180", 30)]));
    }

    #[test]
    fn a_late_180_that_came_is_received_not_absorbed() {
        // 30 overtaken, 10 of their 180s forwarded after the 200
        let [stateful, stateless] = trial(100, 30, 10, &[]);
        assert_eq!((stateful.lost, stateful.absorbed), (0, 20));
        // stateless: the 20 never forwarded are lost
        assert_eq!((stateless.lost, stateless.absorbed), (20, 0));
    }

    #[test]
    fn answers_to_the_servers_own_retransmissions_are_not_owed() {
        // measured: OpenSIPS m=8 on both CPUs beside the generator, 3,000
        // calls: the UAS got 2 INVITEs and 3 BYEs more than the UAC sent,
        // answered each, and tm relayed only the INVITEs' 200s
        let uac_sent = kinds(&[("invite", 3000), ("ack", 3000), ("bye", 3000)]);
        let uas_received = kinds(&[("invite", 3002), ("ack", 3000), ("bye", 3003)]);
        let uas_sent = kinds(&[("180", 3002), ("200", 3002), ("200bye", 3003)]);
        let uac_received = kinds(&[
            ("100", 3000),
            ("180", 2616),
            ("200", 3002),
            ("200bye", 3000),
        ]);
        let c = Counts {
            uac_sent: &uac_sent,
            uac_received: &uac_received,
            uas_sent: &uas_sent,
            uas_received: &uas_received,
            rang_first: 2587,
            answered: 3000,
        };
        let a = Account::of(&c, true);
        assert_eq!((a.lost, a.absorbed), (0, 386 + 3));
        // a stateless proxy retransmits nothing: all of it is lost
        let a = Account::of(&c, false);
        assert_eq!(a.lost, 386 + 3);
        assert_eq!(a.lost_by_kind, kinds(&[("180", 386), ("200bye", 3)]));
        // without the extra BYEs, the BYE 200s missing are lost
        let uas_received = kinds(&[("invite", 3002), ("ack", 3000), ("bye", 3000)]);
        let a = Account::of(
            &Counts {
                uas_received: &uas_received,
                ..c
            },
            true,
        );
        assert_eq!(a.lost_by_kind, kinds(&[("200bye", 3)]));
    }

    #[test]
    fn every_other_kind_lost_stays_lost() {
        for k in ["invite", "ack", "bye", "200bye"] {
            let [a, _] = trial(100, 10, 0, &[(k, 4)]);
            assert_eq!((a.lost, a.absorbed), (4, 10), "{k}");
            assert_eq!(a.lost_by_kind, kinds(&[(k, 4)]), "{k}");
        }
        // 200s lost on calls that rang first: the UAC cannot tell which
        // calls those were, so as many absorbed 180s count as lost too
        // (the bound errs towards loss)
        let [a, _] = trial(100, 10, 0, &[("200", 4)]);
        assert_eq!((a.lost, a.absorbed), (8, 6));
        assert_eq!(a.lost_by_kind, kinds(&[("180", 4), ("200", 4)]));
        // a call that lost both its 180 and its 200 was never answered:
        // its 180 is lost, not absorbed
        let [a, _] = trial(100, 0, 0, &[("180", 10), ("200", 10)]);
        assert_eq!((a.lost, a.absorbed), (20, 0));
        assert_eq!(a.lost_by_kind, kinds(&[("180", 10), ("200", 10)]));
    }
}
