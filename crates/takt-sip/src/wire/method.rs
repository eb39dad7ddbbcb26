//! Request methods.

use std::fmt;

/// A request method. Methods are case-sensitive (RFC 3261 §7.1): `invite`
/// is an unknown method, not INVITE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// INVITE
    Invite,
    /// ACK
    Ack,
    /// BYE
    Bye,
    /// CANCEL
    Cancel,
    /// OPTIONS
    Options,
    /// REGISTER
    Register,
    /// PRACK
    Prack,
    /// SUBSCRIBE
    Subscribe,
    /// NOTIFY
    Notify,
    /// PUBLISH
    Publish,
    /// INFO
    Info,
    /// REFER
    Refer,
    /// MESSAGE
    Message,
    /// UPDATE
    Update,
    /// Any other token.
    Other,
}

impl Method {
    /// Classifies a method token.
    ///
    /// One table look-up, not a comparison per method: the token's
    /// first and last bytes (two overlapping words, which together cover
    /// it) pick the one method it can be, and are compared with it. Out
    /// of line: one copy for the request line and CSeq.
    #[inline(never)]
    pub fn from_bytes(m: &[u8]) -> Method {
        let Some((first, last)) = ends(m) else {
            return Method::Other;
        };
        let (f, l, len, method) = METHOD_SLOTS[method_slot(first, last, m.len())];
        if f == first && l == last && len == m.len() {
            method
        } else {
            Method::Other
        }
    }

    /// The method's name (`"OTHER"` for unknown methods).
    pub fn as_str(&self) -> &'static str {
        match self {
            Method::Invite => "INVITE",
            Method::Ack => "ACK",
            Method::Bye => "BYE",
            Method::Cancel => "CANCEL",
            Method::Options => "OPTIONS",
            Method::Register => "REGISTER",
            Method::Prack => "PRACK",
            Method::Subscribe => "SUBSCRIBE",
            Method::Notify => "NOTIFY",
            Method::Publish => "PUBLISH",
            Method::Info => "INFO",
            Method::Refer => "REFER",
            Method::Message => "MESSAGE",
            Method::Update => "UPDATE",
            Method::Other => "OTHER",
        }
    }
}

/// Every method but `Other`, as spelled on the wire.
const METHODS: [(&[u8], Method); 14] = [
    (b"INVITE", Method::Invite),
    (b"ACK", Method::Ack),
    (b"BYE", Method::Bye),
    (b"CANCEL", Method::Cancel),
    (b"OPTIONS", Method::Options),
    (b"REGISTER", Method::Register),
    (b"PRACK", Method::Prack),
    (b"SUBSCRIBE", Method::Subscribe),
    (b"NOTIFY", Method::Notify),
    (b"PUBLISH", Method::Publish),
    (b"INFO", Method::Info),
    (b"REFER", Method::Refer),
    (b"MESSAGE", Method::Message),
    (b"UPDATE", Method::Update),
];

/// [`METHODS`] by [`method_slot`]: the ends of each name (as [`ends`]
/// reads them), its length and the method; free slots never match (a
/// length of 0).
const METHOD_SLOTS: [(u64, u64, usize, Method); 16] = {
    let mut t = [(0, 0, 0, Method::Other); 16];
    let mut k = 0;
    while k < METHODS.len() {
        let (name, method) = METHODS[k];
        let w = word_len(name.len());
        let (first, last) = (le_word(name, 0, w), le_word(name, name.len() - w, w));
        let slot = method_slot(first, last, name.len());
        // a perfect hash: a collision fails the build
        assert!(t[slot].2 == 0);
        t[slot] = (first, last, name.len(), method);
        k += 1;
    }
    t
};

/// The width of the two words [`ends`] reads from a token of `len`
/// bytes (they overlap or meet, covering it), 0 when it reads none.
const fn word_len(len: usize) -> usize {
    match len {
        2..=3 => 2,
        4..=8 => 4,
        9..=16 => 8,
        _ => 0,
    }
}

/// The `w` bytes of `s` from `at`, little-endian (the table's side of
/// [`ends`]).
const fn le_word(s: &[u8], at: usize, w: usize) -> u64 {
    let mut x = 0;
    let mut j = 0;
    while j < w {
        x |= (s[at + j] as u64) << (8 * j);
        j += 1;
    }
    x
}

/// The first and the last [`word_len`] bytes of `m` as little-endian
/// words; `None` for a token no method can be (empty, one byte, or more
/// than 16).
#[inline(always)]
fn ends(m: &[u8]) -> Option<(u64, u64)> {
    let n = m.len();
    Some(match word_len(n) {
        2 => (
            u64::from(u16::from_le_bytes(m[..2].try_into().ok()?)),
            u64::from(u16::from_le_bytes(m[n - 2..].try_into().ok()?)),
        ),
        4 => (
            u64::from(u32::from_le_bytes(m[..4].try_into().ok()?)),
            u64::from(u32::from_le_bytes(m[n - 4..].try_into().ok()?)),
        ),
        8 => (
            u64::from_le_bytes(m[..8].try_into().ok()?),
            u64::from_le_bytes(m[n - 8..].try_into().ok()?),
        ),
        _ => return None,
    })
}

/// The slot of a token in [`METHOD_SLOTS`] (a multiplicative hash,
/// distinct for the fourteen methods).
#[inline(always)]
const fn method_slot(first: u64, last: u64, len: usize) -> usize {
    ((first ^ (last << 1) ^ len as u64).wrapping_mul(0xc3bb_a111_c034_5ffb) >> 60) as usize
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain way to read a method, a comparison per method: the
    /// reference `from_bytes`'s table is checked against.
    fn by_comparison(m: &[u8]) -> Method {
        METHODS
            .iter()
            .find(|(name, _)| *name == m)
            .map_or(Method::Other, |&(_, method)| method)
    }

    #[test]
    fn the_table_agrees_with_comparing() {
        let mut tokens: Vec<Vec<u8>> = vec![Vec::new(), b"I".to_vec(), b"XY".to_vec()];
        for (name, method) in METHODS {
            assert_eq!(Method::from_bytes(name), method);
            assert_eq!(method.as_str().as_bytes(), name);
            for k in 0..=name.len() {
                for c in [b'A', b'E', b'X', b'-', 0, 0xff] {
                    let mut ins = name.to_vec();
                    ins.insert(k, c);
                    tokens.push(ins);
                    if k < name.len() {
                        let mut rep = name.to_vec();
                        rep[k] = c;
                        tokens.push(rep);
                        let mut low = name.to_vec();
                        low[k] = low[k].to_ascii_lowercase();
                        tokens.push(low);
                    }
                }
                tokens.push([&name[..k], &name[..k]].concat());
                tokens.push([&name[..k], &name[k..], &name[k..]].concat());
                if k < name.len() {
                    let mut del = name.to_vec();
                    del.remove(k);
                    tokens.push(del);
                }
            }
        }
        tokens.push(b"SUBSCRIBESUBSCRIB".to_vec());
        for t in tokens {
            assert_eq!(
                Method::from_bytes(&t),
                by_comparison(&t),
                "{}",
                t.escape_ascii()
            );
        }
    }
}
