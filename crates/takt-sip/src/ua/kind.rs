//! Message kinds of the call flow, and counters indexed by them.

use crate::wire::{Message, Method};

/// A message of the call flow, as counted on either side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// INVITE.
    Invite,
    /// ACK (to a 2xx or a failure).
    Ack,
    /// BYE.
    Bye,
    /// 100 Trying (from a stateful proxy).
    Trying,
    /// 180 Ringing.
    Ringing,
    /// 200 to the INVITE.
    OkInvite,
    /// 200 to the BYE.
    OkBye,
    /// A final response 300–699 to an INVITE or a BYE.
    Failure,
    /// Anything else (other methods, other provisional responses).
    Other,
}

impl Kind {
    /// How many kinds there are.
    pub const COUNT: usize = 9;

    /// All kinds, in report order.
    pub const ALL: [Kind; Kind::COUNT] = [
        Kind::Invite,
        Kind::Ack,
        Kind::Bye,
        Kind::Trying,
        Kind::Ringing,
        Kind::OkInvite,
        Kind::OkBye,
        Kind::Failure,
        Kind::Other,
    ];

    /// Its stable name (`invite`, `ack`, `bye`, `100`, `180`, `200`,
    /// `200bye`, `failure`, `other`), as `takt sip load` names kinds.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Invite => "invite",
            Kind::Ack => "ack",
            Kind::Bye => "bye",
            Kind::Trying => "100",
            Kind::Ringing => "180",
            Kind::OkInvite => "200",
            Kind::OkBye => "200bye",
            Kind::Failure => "failure",
            Kind::Other => "other",
        }
    }

    /// The kind of a parsed message.
    pub fn of(m: &Message<'_>) -> Kind {
        match m.status() {
            None => match m.method() {
                Some(Method::Invite) => Kind::Invite,
                Some(Method::Ack) => Kind::Ack,
                Some(Method::Bye) => Kind::Bye,
                _ => Kind::Other,
            },
            Some(code) => {
                let method = m.cseq_method();
                match code {
                    100 => Kind::Trying,
                    180 => Kind::Ringing,
                    200..=299 if method == Method::Invite => Kind::OkInvite,
                    200..=299 if method == Method::Bye => Kind::OkBye,
                    300..=699 if matches!(method, Method::Invite | Method::Bye) => Kind::Failure,
                    _ => Kind::Other,
                }
            }
        }
    }
}

/// A counter per [`Kind`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KindCounts([u64; Kind::COUNT]);

impl KindCounts {
    /// Adds one to `k`.
    #[inline]
    pub fn bump(&mut self, k: Kind) {
        self.0[k as usize] += 1;
    }

    /// The count of `k`.
    pub fn get(&self, k: Kind) -> u64 {
        self.0[k as usize]
    }

    /// The sum over all kinds.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Adds `other` kind by kind.
    pub fn merge(&mut self, other: &KindCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }

    /// `(name, count)` of the non-zero kinds, in [`Kind::ALL`] order.
    pub fn nonzero(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        Kind::ALL
            .into_iter()
            .map(|k| (k.name(), self.get(k)))
            .filter(|&(_, n)| n > 0)
    }
}
