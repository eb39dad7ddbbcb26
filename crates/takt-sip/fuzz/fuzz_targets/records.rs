//! The input format of the `proxy` and `ua` targets: a sequence of
//! records, each `HEAD` control bytes, a little-endian `u16` length, then
//! that many bytes of payload (fewer if the input ends first). Seeds in
//! this format are written by `cargo run -p takt-sip --example fuzz_seeds`.

/// Splits `data` into records of `HEAD` control bytes and a payload.
pub fn records<const HEAD: usize>(mut data: &[u8]) -> impl Iterator<Item = ([u8; HEAD], &[u8])> {
    std::iter::from_fn(move || {
        if data.len() < HEAD + 2 {
            return None;
        }
        let mut head = [0u8; HEAD];
        head.copy_from_slice(&data[..HEAD]);
        let len = usize::from(u16::from_le_bytes([data[HEAD], data[HEAD + 1]]));
        let rest = &data[HEAD + 2..];
        let (payload, tail) = rest.split_at(len.min(rest.len()));
        data = tail;
        Some((head, payload))
    })
}
