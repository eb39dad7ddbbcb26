//! The UAC's call token: which call a message belongs to, written into
//! its Call-ID, From tag and branches so a response finds its call
//! without a lookup structure.
//!
//! A token is 26 bytes, `SSSSSSSS.QQQQQQQQ.RRRRRRRR` in lower-case hex:
//! the slot of the call table, the incarnation of that slot (a slot is
//! reused by later calls; a response to an earlier one does not match),
//! and the run (so two generators sharing a UAS, or a restarted one,
//! never mistake each other's calls). The Call-ID starts with the token.

/// Length of a token in bytes.
pub const LEN: usize = 26;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Writes `v` as 8 lower-case hex digits.
#[inline]
fn put_hex32(out: &mut [u8], v: u32) {
    for (i, b) in out[..8].iter_mut().enumerate() {
        *b = HEX[((v >> (28 - 4 * i)) & 0xf) as usize];
    }
}

#[inline]
fn get_hex32(b: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for &c in b.get(..8)? {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        v = (v << 4) | u32::from(d);
    }
    Some(v)
}

/// The token of call `(slot, seq)` of run `run`.
pub fn encode(slot: u32, seq: u32, run: u32) -> [u8; LEN] {
    let mut t = [b'.'; LEN];
    put_hex32(&mut t[0..8], slot);
    put_hex32(&mut t[9..17], seq);
    put_hex32(&mut t[18..26], run);
    t
}

/// `(slot, seq, run)` from bytes that start with a token (a Call-ID);
/// `None` if they do not.
pub fn decode(b: &[u8]) -> Option<(u32, u32, u32)> {
    if b.len() < LEN || b[8] != b'.' || b[17] != b'.' {
        return None;
    }
    Some((
        get_hex32(&b[0..8])?,
        get_hex32(&b[9..17])?,
        get_hex32(&b[18..26])?,
    ))
}

/// Appends `v` as 16 lower-case hex digits (a UAS tag).
pub fn push_hex64(out: &mut Vec<u8>, v: u64) {
    let mut b = [0u8; 16];
    put_hex32(&mut b[0..8], (v >> 32) as u32);
    put_hex32(&mut b[8..16], v as u32);
    out.extend_from_slice(&b);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_other_call_ids() {
        for (s, q, r) in [(0, 0, 0), (7, 1, 0xdead_beef), (u32::MAX, u32::MAX, 1)] {
            let t = encode(s, q, r);
            assert_eq!(decode(&t), Some((s, q, r)));
            let mut cid = t.to_vec();
            cid.extend_from_slice(b"@takt");
            assert_eq!(decode(&cid), Some((s, q, r)));
        }
        assert_eq!(decode(b"1-1@127.0.0.1"), None);
        assert_eq!(decode(b"0000000g.00000000.00000000"), None);
        assert_eq!(decode(b"00000000-00000000-00000000"), None);
        let mut v = Vec::new();
        push_hex64(&mut v, 0x0123_4567_89ab_cdef);
        assert_eq!(v, b"0123456789abcdef");
    }
}
