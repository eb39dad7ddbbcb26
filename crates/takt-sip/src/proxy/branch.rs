//! Branch parameters (RFC 3261 §8.1.1.7, §16.6 step 8, §16.11).
//!
//! The proxy's branch is `z9hG4bK` + `tk` + 16 hex digits of a *key* + `.`
//! + 8 hex digits of a *loop hash*:
//! - the key is a hash of the incoming transaction's identity (its top Via
//!   branch and sent-by, or for RFC 2543 requests the fields §16.11 names)
//!   and its method class, so it is deterministic: a stateless proxy
//!   gives a retransmission, its ACK (non-2xx) and its CANCEL the same
//!   branch as the INVITE, and a stateful proxy finds its transaction from
//!   a response's branch without a second index;
//! - the loop hash covers what decides where the request goes (Request-URI,
//!   Route, Proxy-Require); a request arriving with one of our Vias whose
//!   loop hash equals the request's own has looped (482), a different one is
//!   a legitimate spiral (§16.3 step 4).

use crate::wire::{HeaderName, Message, Method};

/// Prefix of every branch this proxy creates.
pub const PREFIX: &[u8] = b"z9hG4bKtk";
/// Length of a branch this proxy creates.
pub const BRANCH_LEN: usize = PREFIX.len() + 16 + 1 + 8;

const SEED: u64 = 0xcbf2_9ce4_8422_2325;
const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// A 64-bit hash of a sequence of fields, eight bytes at a step, with
/// each field's length mixed in so that ("ab","c") != ("a","bc").
///
/// Each step, `(h ^ word) * K` (K odd) then an xor-shift, is a bijection
/// of `h` for a given word and of the word for a given `h`: two fields
/// that differ in one word never collide at that step. Not keyed: the
/// keys it makes are transaction identities, not a defence against
/// chosen collisions (neither was the byte-wise FNV-1a it replaces, at a
/// quarter of the cost).
#[derive(Debug, Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(SEED)
    }
}

#[inline(always)]
fn mix(h: u64, w: u64) -> u64 {
    let x = (h ^ w).wrapping_mul(K);
    x ^ (x >> 29)
}

impl Fnv {
    /// Hashes one field. Not inlined: one copy of its loops serves the
    /// key, the loop hash and the local tag (code lines, on a cold core,
    /// cost more than a call).
    #[inline(never)]
    pub fn field(mut self, bytes: &[u8]) -> Fnv {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.0 = mix(self.0, u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        let mut tail = 0u64;
        for (i, &b) in words.remainder().iter().enumerate() {
            tail |= u64::from(b) << (8 * i);
        }
        // the tail holds at most 7 bytes: the length goes in the top one
        self.0 = mix(self.0, tail ^ ((bytes.len() as u64 & 0xff) << 56) ^ 0xff);
        self
    }

    /// Hashes an integer field.
    #[inline]
    pub fn num(mut self, n: u64) -> Fnv {
        self.0 = mix(mix(self.0, n), 0xff);
        self
    }

    /// The hash, with a final avalanche so low bits (used for sharding) mix.
    pub fn finish(self) -> u64 {
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x
    }
}

/// Method class for transaction identity: ACK and CANCEL belong with the INVITE.
fn class(m: Method, token: &[u8]) -> &[u8] {
    match m {
        Method::Invite | Method::Ack | Method::Cancel => b"INVITE",
        _ => token,
    }
}

/// The key of the incoming request's transaction (see the module docs).
pub fn request_key(m: &Message<'_>) -> u64 {
    let b = m.buf();
    let via = m.top_via();
    let token = match m.start_line() {
        crate::wire::StartLine::Request { method_span, .. } => method_span.of(b),
        crate::wire::StartLine::Response { .. } => b"",
    };
    let cls = class(m.method().unwrap_or(Method::Other), token);
    match via.branch.map(|s| s.of(b)) {
        Some(br) if br.starts_with(b"z9hG4bK") && br.len() > 7 => Fnv::default()
            .field(br)
            .field(via.host.of(b))
            .num(u64::from(via.port.unwrap_or(0)))
            .field(cls)
            .finish(),
        _ => {
            // RFC 2543 peer: §16.11's field list (the To tag is left out so
            // the ACK to a non-2xx response maps to its INVITE)
            let ruri = m.request_uri().map(|u| u.span.of(b)).unwrap_or(b"");
            Fnv::default()
                .field(m.from_tag().unwrap_or(b""))
                .field(m.call_id())
                .field(ruri)
                .field(via.span.of(b))
                .num(u64::from(m.cseq_num()))
                .field(cls)
                .finish()
        }
    }
}

/// The loop hash of a request as received.
pub fn loop_hash(m: &Message<'_>) -> u32 {
    let b = m.buf();
    let mut h = Fnv::default().field(m.request_uri().map(|u| u.span.of(b)).unwrap_or(b""));
    if !m.may_have(HeaderName::Route) && !m.may_have(HeaderName::ProxyRequire) {
        return h.finish() as u32;
    }
    for hd in m.headers() {
        if matches!(hd.name, HeaderName::Route | HeaderName::ProxyRequire) {
            h = h.field(hd.value.of(b));
        }
    }
    h.finish() as u32
}

/// Writes our branch for `key` and `loop_hash`.
pub fn write_branch(out: &mut Vec<u8>, key: u64, loop_hash: u32) {
    // written on the stack, appended in one copy
    let mut t = [0u8; BRANCH_LEN];
    t[..PREFIX.len()].copy_from_slice(PREFIX);
    hex(&mut t[PREFIX.len()..PREFIX.len() + 16], key);
    t[PREFIX.len() + 16] = b'.';
    hex(&mut t[PREFIX.len() + 17..], u64::from(loop_hash));
    out.extend_from_slice(&t);
}

/// Writes the low `out.len()` hex digits of `v`, most significant first.
///
/// A loop, not inlined: unrolled for its two constant lengths it would be
/// 180 distinct instructions (12 code lines) on every forwarded request,
/// and on a core that comes back from idle each code line is a fetch
/// from L2 (the `proxy` module docs, "Cost of a message").
#[inline(never)]
fn hex(out: &mut [u8], mut v: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for o in out.iter_mut().rev() {
        *o = HEX[(v & 0xf) as usize];
        v >>= 4;
    }
}

/// The value of the hex digits `s` (at most 16). A loop, not inlined
/// (see [`hex`]).
#[inline(never)]
fn parse_hex(s: &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for &c in s {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        v = (v << 4) | u64::from(d);
    }
    Some(v)
}

/// Takes one of our branches apart: `(key, loop_hash)`.
pub fn parse_branch(br: &[u8]) -> Option<(u64, u32)> {
    if br.len() != BRANCH_LEN || !br.starts_with(PREFIX) || br[PREFIX.len() + 16] != b'.' {
        return None;
    }
    let key = parse_hex(&br[PREFIX.len()..PREFIX.len() + 16])?;
    let lh = parse_hex(&br[PREFIX.len() + 17..])?;
    Some((key, lh as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_round_trips() {
        let mut v = Vec::new();
        write_branch(&mut v, 0xdead_beef_0123_4567, 0x89ab_cdef);
        assert_eq!(v.len(), BRANCH_LEN);
        assert_eq!(parse_branch(&v), Some((0xdead_beef_0123_4567, 0x89ab_cdef)));
        assert_eq!(parse_branch(b"z9hG4bKother"), None);
    }

    #[test]
    fn fields_are_separated() {
        let a = Fnv::default().field(b"ab").field(b"c").finish();
        let b = Fnv::default().field(b"a").field(b"bc").finish();
        assert_ne!(a, b);
        let a = Fnv::default().field(b"abcdefgh").field(b"").finish();
        let b = Fnv::default().field(b"").field(b"abcdefgh").finish();
        assert_ne!(a, b);
        let a = Fnv::default().field(b"abcdefg\x00").finish();
        let b = Fnv::default().field(b"abcdefg").finish();
        assert_ne!(a, b);
    }

    #[test]
    fn sipp_like_keys_do_not_collide() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..50_000u64 {
            for br in 0..3 {
                let branch = format!("z9hG4bK-{i}-1-{br}");
                let k = Fnv::default()
                    .field(branch.as_bytes())
                    .field(b"127.0.0.1")
                    .num(5061)
                    .field(b"INVITE")
                    .finish();
                assert!(seen.insert(k), "{branch}");
            }
        }
        // the low bits (the shard) spread evenly
        let mut per = [0usize; 8];
        for k in &seen {
            per[(k & 7) as usize] += 1;
        }
        let mean = seen.len() / 8;
        assert!(per.iter().all(|&n| n.abs_diff(mean) < mean / 50), "{per:?}");
    }
}
