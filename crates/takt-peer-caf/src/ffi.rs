//! The C ABI of `cpp/peer.hpp` and the calls through it.

use std::ffi::{c_char, c_int, CStr};
use std::time::Duration;

use crate::{CafError, Outcome};

/// `takt_caf_result`: every field written by every call.
#[repr(C)]
#[derive(Default)]
struct RawResult {
    elapsed_ns: u64,
    registration_ns: u64,
    value: u64,
    completed: u64,
    handled: u64,
    crossed: u64,
    started: u64,
    stopped: u64,
}

const OK: c_int = 0;
const SETUP: c_int = 1;
const FAILED: c_int = 2;
const TIMEOUT: c_int = 3;

extern "C" {
    fn takt_caf_version() -> u32;
    fn takt_caf_ping_pong(
        messages: u64,
        threads: u32,
        detached: c_int,
        deadline_ns: u64,
        out: *mut RawResult,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn takt_caf_customer_ring(
        agents: u64,
        tokens: u64,
        threads: u32,
        deadline_ns: u64,
        out: *mut RawResult,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn takt_caf_skynet(
        leaves: u64,
        threads: u32,
        deadline_ns: u64,
        out: *mut RawResult,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
}

pub(crate) fn version() -> u32 {
    // SAFETY: takes no arguments and returns a constant.
    unsafe { takt_caf_version() }
}

pub(crate) fn ping_pong(
    messages: u64,
    threads: u32,
    detached: bool,
    deadline: Duration,
) -> Result<Outcome, CafError> {
    call(|out, err, len| {
        // SAFETY: `out` and `err` point to live, writable buffers of the
        // stated sizes for the duration of the call (see `call`); the C++
        // side catches every exception before returning.
        unsafe {
            takt_caf_ping_pong(
                messages,
                threads,
                c_int::from(detached),
                nanos(deadline),
                out,
                err,
                len,
            )
        }
    })
}

pub(crate) fn customer_ring(
    agents: u64,
    tokens: u64,
    threads: u32,
    deadline: Duration,
) -> Result<Outcome, CafError> {
    call(|out, err, len| {
        // SAFETY: as in `ping_pong`.
        unsafe { takt_caf_customer_ring(agents, tokens, threads, nanos(deadline), out, err, len) }
    })
}

pub(crate) fn skynet(leaves: u64, threads: u32, deadline: Duration) -> Result<Outcome, CafError> {
    call(|out, err, len| {
        // SAFETY: as in `ping_pong`.
        unsafe { takt_caf_skynet(leaves, threads, nanos(deadline), out, err, len) }
    })
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Runs one C call with a result and an error buffer, and turns its status
/// into an [`Outcome`] or a [`CafError`].
fn call(f: impl FnOnce(*mut RawResult, *mut c_char, usize) -> c_int) -> Result<Outcome, CafError> {
    let mut raw = RawResult::default();
    let mut err = [0u8; 1024];
    let status = f(&mut raw, err.as_mut_ptr().cast(), err.len());
    // The C side always NUL-terminates within `err`; an empty message if not.
    let msg = CStr::from_bytes_until_nul(&err)
        .map(|m| m.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ns = Duration::from_nanos;
    match status {
        OK => Ok(Outcome {
            elapsed: ns(raw.elapsed_ns),
            registration: ns(raw.registration_ns),
            value: raw.value,
            completed: raw.completed,
            handled: raw.handled,
            crossed: raw.crossed,
            started: raw.started,
            stopped: raw.stopped,
        }),
        SETUP => Err(CafError::Setup(msg)),
        FAILED => Err(CafError::Failed(msg)),
        TIMEOUT => Err(CafError::Timeout {
            waiting_for: msg,
            after: ns(raw.elapsed_ns),
        }),
        other => Err(CafError::Failed(format!(
            "unknown status {other} from the C++ side: {msg}"
        ))),
    }
}
