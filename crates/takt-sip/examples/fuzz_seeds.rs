//! Writes the seed corpora of the cargo-fuzz targets in `fuzz/`:
//! `DIR/parse`, `DIR/proxy` and `DIR/ua`.
//!
//! `cargo run -p takt-sip --example fuzz_seeds -- DIR`
//!
//! - `parse`: the RFC 4475 torture messages (`tests/fixtures/rfc4475`) and
//!   every message of a call synthesized by [`takt_sip::ua::synth`].
//! - `proxy`: each torture message alone, from the UAC and from the next
//!   hop; and whole calls as the proxy receives them (stateless and
//!   stateful flows, one call, three interleaved calls, a call whose next
//!   hop answers late so Timer B runs), in the target's record format.
//! - `ua`: the relayed call flow (the UAC's INVITE to the UAS, its answers
//!   back, the ACK, the hold, the BYE and its 200), with a retransmission
//!   and a timeout variant, plus each torture message sent to each side.
//!
//! The record format (see `fuzz/fuzz_targets/records.rs`): `HEAD` control
//! bytes (2 for `proxy`, 1 for `ua`), a little-endian `u16` length, the
//! payload.

use std::path::Path;

use takt_sip::proxy::Mode;
use takt_sip::ua::synth::{self, SynthMessage};

/// `proxy` control byte 0: source 0 = the UAC, 1 = the next hop; the
/// clock step in its high nibble.
fn proxy_record(out: &mut Vec<u8>, from_uas: bool, step: u8, msg: &[u8]) {
    out.push(u8::from(from_uas) | (step << 4));
    out.push(0);
    out.extend_from_slice(&(msg.len().min(usize::from(u16::MAX)) as u16).to_le_bytes());
    out.extend_from_slice(msg);
}

/// `ua` record: action (0–3), new call, clock step (×128 ms), payload.
fn ua_record(out: &mut Vec<u8>, action: u8, new_call: bool, step: u8, payload: &[u8]) {
    out.push(action | (u8::from(new_call) << 2) | (step << 3));
    out.extend_from_slice(&(payload.len() as u16).to_le_bytes());
    out.extend_from_slice(payload);
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(dir.join(name), bytes)
}

fn is_uas(m: &SynthMessage) -> bool {
    m.from.addr.port() == 5070
}

fn main() -> std::process::ExitCode {
    let Some(root) = std::env::args_os().nth(1) else {
        eprintln!("usage: fuzz_seeds DIR");
        return std::process::ExitCode::from(2);
    };
    match write_corpora(Path::new(&root)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fuzz_seeds: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn write_corpora(root: &Path) -> std::io::Result<()> {
    let dirs = ["parse", "proxy", "ua"].map(|d| root.join(d));
    for d in &dirs {
        std::fs::create_dir_all(d)?;
    }
    let [parse, proxy, ua] = &dirs;

    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rfc4475");
    let mut torture = Vec::new();
    for e in std::fs::read_dir(&fixtures)? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "dat") {
            let name = p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            torture.push((name, std::fs::read(&p)?));
        }
    }
    torture.sort();
    let mut n = [0usize; 3];
    for (name, bytes) in &torture {
        write(parse, &format!("rfc4475-{name}"), bytes)?;
        for from_uas in [false, true] {
            let mut r = Vec::new();
            proxy_record(&mut r, from_uas, 0, bytes);
            write(proxy, &format!("rfc4475-{name}-{}", u8::from(from_uas)), &r)?;
        }
        for action in [0, 1] {
            let mut r = Vec::new();
            ua_record(&mut r, action, false, 0, bytes);
            write(ua, &format!("rfc4475-{name}-{action}"), &r)?;
        }
        n[0] += 1;
        n[1] += 2;
        n[2] += 2;
    }

    for mode in [Mode::Stateless, Mode::Stateful] {
        let m = match mode {
            Mode::Stateless => "stateless",
            Mode::Stateful => "stateful",
        };
        let calls = synth::sipp_calls(mode, 3);
        for msg in &calls[..7] {
            write(parse, &format!("call-{m}-{}", msg.kind), &msg.bytes)?;
            n[0] += 1;
        }
        // one call in order
        let mut r = Vec::new();
        for msg in &calls[..7] {
            proxy_record(&mut r, is_uas(msg), 0, &msg.bytes);
        }
        write(proxy, &format!("call-{m}"), &r)?;
        // three calls interleaved message by message
        let mut r = Vec::new();
        for k in 0..7 {
            for c in 0..3 {
                let msg = &calls[c * 7 + k];
                proxy_record(&mut r, is_uas(msg), 0, &msg.bytes);
            }
        }
        write(proxy, &format!("calls3-{m}"), &r)?;
        // the INVITE, then silence past Timer B (32 s: 9 records of 3.75 s)
        let mut r = Vec::new();
        proxy_record(&mut r, false, 0, &calls[0].bytes);
        for _ in 0..9 {
            proxy_record(&mut r, false, 15, b"");
        }
        proxy_record(&mut r, true, 0, &calls[3].bytes);
        write(proxy, &format!("timeout-{m}"), &r)?;
        n[1] += 3;
    }

    // the ua target's call flow, relayed: INVITE ->, 180 <-, 200 <-,
    // ACK ->, (hold 256 ms) BYE ->, 200 <-
    let flow = |r: &mut Vec<u8>, hold_step: u8| {
        ua_record(r, 2, false, 0, b"");
        ua_record(r, 3, false, 0, b"");
        ua_record(r, 3, false, 0, b"");
        ua_record(r, 2, false, 0, b"");
        ua_record(r, 2, false, hold_step, b"");
        ua_record(r, 3, false, 0, b"");
    };
    let mut r = Vec::new();
    flow(&mut r, 2);
    write(ua, "call", &r)?;
    let mut r2 = r.clone();
    ua_record(&mut r2, 2, true, 0, b"");
    flow(&mut r2, 2);
    write(ua, "two-calls", &r2)?;
    // the INVITE is retransmitted after T1 (4 steps of 128 ms) and relayed twice
    let mut r = Vec::new();
    ua_record(&mut r, 2, false, 4, b"");
    ua_record(&mut r, 2, false, 0, b"");
    ua_record(&mut r, 3, false, 0, b"");
    ua_record(&mut r, 3, false, 0, b"");
    write(ua, "retransmit", &r)?;
    // nothing answers: Timer B (64·T1 = 32 s, 8 records of ~4 s)
    let mut r = Vec::new();
    for _ in 0..9 {
        ua_record(&mut r, 0, false, 31, b"");
    }
    write(ua, "timeout", &r)?;
    n[2] += 4;
    eprintln!(
        "fuzz seeds in {}: parse {}, proxy {}, ua {}",
        root.display(),
        n[0],
        n[1],
        n[2]
    );
    Ok(())
}
